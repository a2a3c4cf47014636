//! Codemode through the binary: scripts in the confined worker, inner calls
//! as real tool calls (events nested under the script's call, permission
//! rules applied), stored values in the session file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn setup(settings: Value) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(agent.join("settings.json"), settings.to_string()).unwrap();
    (dir, agent, ws)
}

fn codemode_call(id: &str, code: &str) -> Value {
    json!({"type": "toolCall", "id": id, "name": "codemode", "arguments": {"code": code}})
}

fn write_script(dir: &Path, turns: &[Value]) -> PathBuf {
    let path = dir.join("script.jsonl");
    let text: String = turns.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn run_json(agent: &Path, ws: &Path, script: &Path, extra: &[&str]) -> (Vec<Value>, String) {
    let out = Command::new(crate::bin())
        .env("CODING_AGENT_DIR", agent)
        .arg("--script")
        .arg(script)
        .arg("--cwd")
        .arg(ws)
        .args(["--mode", "json"])
        .args(extra)
        .arg("go")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (events, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn tool_result<'a>(events: &'a [Value], id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| {
            e["type"] == "message_end"
                && e["message"]["role"] == "toolResult"
                && e["message"]["toolCallId"] == id
        })
        .map(|e| &e["message"])
        .unwrap_or_else(|| panic!("no result for {id}: {events:#?}"))
}

fn text_of(message: &Value) -> String {
    message["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

/// 50 files read in one script: two model requests in all (the script's
/// call, then the answer), 50 nested calls each under the script's id.
#[test]
fn fifty_parallel_reads_in_one_script_take_two_model_requests() {
    let (dir, agent, ws) = setup(json!({}));
    for i in 0..50 {
        std::fs::write(ws.join(format!("f{i}.txt")), "x".repeat(i)).unwrap();
    }
    let code = "const names = Array.from({length: 50}, (_, i) => `f${i}.txt`);\nconst texts = await Promise.all(names.map(path => tools.read({path})));\nreturn texts.reduce((n, t) => n + t.length, 0);";
    let script = write_script(
        dir.path(),
        &[
            json!({"content": [codemode_call("cm", code)]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let (events, stderr) = run_json(&agent, &ws, &script, &["--tools", "+codemode"]);
    let result = tool_result(&events, "cm");
    assert_eq!(result["isError"], false, "{result:#}\n{stderr}");
    let text = text_of(result);
    assert!(text.starts_with("Script completed\nWall time "), "{text}");
    assert!(text.ends_with("Output:\n1225"), "{text}");
    let nested: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end" && e["parentToolCallId"] == "cm")
        .collect();
    assert_eq!(nested.len(), 50);
    assert!(
        nested
            .iter()
            .all(|e| e["toolName"] == "read" && e["isError"] == false)
    );
    let mut ids: Vec<&str> = nested
        .iter()
        .map(|e| e["toolCallId"].as_str().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 50);
    assert!(ids.iter().all(|id| id.starts_with("cm/")));
    // Nested results are not messages of the conversation.
    let results = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .count();
    assert_eq!(results, 1);
    let requests = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .count();
    assert_eq!(requests, 2);
    assert_eq!(result["details"]["calls"].as_array().unwrap().len(), 50);
}

/// A deny rule refuses an inner bash exactly as a direct one, and the
/// script sees the refusal as a rejected promise.
#[test]
fn a_deny_rule_blocks_an_inner_bash() {
    let (dir, agent, ws) =
        setup(json!({"permissions": {"allow": ["Bash(echo:*)"], "deny": ["Bash(touch:*)"]}}));
    let code = "const r = await Promise.allSettled([tools.bash({command: 'touch planted'}), tools.bash({command: 'echo hi'})]);\nreturn r.map(x => x.status + ':' + (x.status === 'fulfilled' ? x.value.trim() : x.reason.message.slice(0, 60)));";
    let script = write_script(
        dir.path(),
        &[
            json!({"content": [codemode_call("cm", code), {"type": "toolCall", "id": "direct", "name": "bash", "arguments": {"command": "touch planted"}}]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let (events, stderr) = run_json(&agent, &ws, &script, &["--tools", "+codemode"]);
    assert!(!ws.join("planted").exists(), "{stderr}");
    let text = text_of(tool_result(&events, "cm"));
    let direct = text_of(tool_result(&events, "direct"));
    assert!(text.contains("\"rejected:"), "{text}");
    assert!(text.contains("\"fulfilled:hi\""), "{text}");
    // The same words as the direct call's refusal.
    let refusal: String = direct.chars().take(40).collect();
    assert!(text.contains(&refusal), "{text}\n--- direct:\n{direct}");
    let decisions: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_call_decision" && e["parentToolCallId"] == "cm")
        .collect();
    assert_eq!(decisions.len(), 2, "{events:#?}");
}

/// `store()` values survive into the next script through the session
/// file; a failed script's writes are dropped.
#[test]
fn stored_values_live_in_the_session_per_branch() {
    let (dir, agent, ws) = setup(json!({}));
    let sessions = dir.path().join("sessions");
    let script = write_script(
        dir.path(),
        &[
            json!({"content": [codemode_call("a", "store('n', 41); store('list', [1, 2]); return 'ok'")]}),
            json!({"content": [codemode_call("b", "store('n', 1000); throw new Error('no')")]}),
            json!({"content": [codemode_call("c", "return [load('n') + 1, load('list'), load('missing')]")]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let (events, stderr) = run_json(
        &agent,
        &ws,
        &script,
        &[
            "--tools",
            "+codemode",
            "--session-dir",
            sessions.to_str().unwrap(),
        ],
    );
    let b = tool_result(&events, "b");
    assert_eq!(b["isError"], true);
    assert!(
        text_of(b).contains("Script error:\nError: no"),
        "{}",
        text_of(b)
    );
    let c = text_of(tool_result(&events, "c"));
    assert!(c.ends_with("Output:\n[42,[1,2],null]"), "{c}\n{stderr}");
    let file = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .or_else(|| {
            std::fs::read_dir(&sessions)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        })
        .expect("a session file");
    let entries: Vec<Value> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let stored: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "custom" && e["customType"] == "codemode-store")
        .collect();
    assert_eq!(stored.len(), 1, "only the successful script stored");
    assert_eq!(
        stored[0]["data"],
        json!({"set": {"n": 41, "list": [1, 2]}, "delete": []})
    );
}

/// Bad scripts are error results the model reads; the agent lives.
#[test]
fn bad_scripts_are_error_results() {
    let (dir, agent, ws) = setup(json!({}));
    let script = write_script(
        dir.path(),
        &[
            json!({"content": [
                codemode_call("misplaced", "return 1\n// @options: {\"timeout_ms\": 5}"),
                codemode_call("loop", "// @options: {\"timeout_ms\": 300}\nwhile (true) {}"),
                codemode_call("self", "return await tools.codemode({code: 'return 1'})"),
            ]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let (events, stderr) = run_json(&agent, &ws, &script, &["--tools", "+codemode"]);
    let misplaced = text_of(tool_result(&events, "misplaced"));
    assert!(
        misplaced.contains("must be the first line of the input; found one on line 2"),
        "{misplaced}\n{stderr}"
    );
    let looped = text_of(tool_result(&events, "loop"));
    assert!(
        looped.contains("Script timed out: Execution timed out after 300 ms"),
        "{looped}"
    );
    let itself = text_of(tool_result(&events, "self"));
    assert!(itself.contains("tools.codemode does not exist"), "{itself}");
    assert_eq!(events.last().unwrap()["type"], "session_usage");
}

/// Ctrl-C while a script's inner bash runs: the script ends, the worker is
/// killed and the command's whole process group with it.
#[test]
fn sigint_mid_script_leaves_no_process() {
    use std::time::{Duration, Instant};
    let (dir, agent, ws) = setup(json!({}));
    let marker = format!("codemode-marker-{}", std::process::id());
    let code =
        format!("await tools.bash({{command: \"bash -c 'exec -a {marker} sleep 300' & wait\"}})");
    let script = write_script(
        dir.path(),
        &[
            json!({"content": [codemode_call("cm", &code)]}),
            json!({"content": [{"type": "text", "text": "never"}]}),
        ],
    );
    let mut child = Command::new(crate::bin())
        .env("CODING_AGENT_DIR", &agent)
        .arg("--script")
        .arg(&script)
        .arg("--cwd")
        .arg(&ws)
        .args(["--tools", "+codemode", "--mode", "json", "go"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pgrep = |pattern: &str| {
        let out = Command::new("pgrep")
            .args(["-f", pattern])
            .output()
            .unwrap()
            .stdout;
        String::from_utf8_lossy(&out)
            .lines()
            .filter(|l| !l.is_empty())
            .count()
    };
    // hang guard
    let deadline = Instant::now() + Duration::from_secs(20);
    while pgrep(&marker) < 1 {
        assert!(Instant::now() < deadline, "the inner bash never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let me = child.id();
    let workers = || {
        let out = Command::new("pgrep")
            .args(["-P", &me.to_string(), "-f", "__codemode-worker"])
            .output()
            .unwrap()
            .stdout;
        String::from_utf8_lossy(&out)
            .lines()
            .filter(|l| !l.is_empty())
            .count()
    };
    assert!(workers() >= 1, "the script runs in a worker process");
    let pid = rustix::process::Pid::from_raw(me as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    // hang guard
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the agent did not exit after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1));
    let deadline = Instant::now() + Duration::from_secs(5);
    while pgrep(&marker) > 0 {
        assert!(Instant::now() < deadline, "the inner command survived");
        std::thread::sleep(Duration::from_millis(50));
    }
}
