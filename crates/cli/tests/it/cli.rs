//! The `coding-agent` binary as a process.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::agent_loop::tool_call;
use test_support::cli::script;
use test_support::http_server;

/// The binary with no credentials, an agent directory that does not
/// exist, and no input.
fn agent() -> std::process::Command {
    test_support::cli::command(
        crate::bin(),
        &std::env::temp_dir().join("coding-agent-cli-test-no-such-dir"),
    )
}

#[test]
fn print_mode_prints_the_final_answer() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let s = script(
        dir.path(),
        &[
            json!({"content":[tool_call("c1","read",json!({"path":"a.txt"}))]}),
            json!({"content":[{"type":"text","text":"The file says alpha."}]}),
        ],
    );
    let out = agent()
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .args(["-p", "what is in a.txt?"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "The file says alpha.\n"
    );
}

/// On a terminal, an answer's escape sequences (an OSC 52 clipboard write
/// a repository made the model repeat) are shown, not obeyed; a pipe gets
/// the exact text.
#[test]
fn print_mode_shows_escapes_on_a_terminal_and_passes_them_to_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        &[
            json!({"content":[{"type":"text","text":"copied\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}[2Jdone"}]}),
        ],
    );
    let piped = agent()
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .args(["-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&piped.stdout),
        "copied\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}[2Jdone\n"
    );
    // `script` gives the binary a pseudo-terminal for its stdout.
    let command = format!(
        "{} --script {} --cwd {} -p hi",
        crate::bin().display(),
        s.display(),
        dir.path().display()
    );
    let tty = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env(
            "CODING_AGENT_DIR",
            std::env::temp_dir().join("coding-agent-cli-test-no-such-dir"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&tty.stdout);
    assert!(
        shown.contains("copied\u{241b}]52;c;cm0gLXJmIH4=\u{2407}\u{241b}[2Jdone"),
        "{shown:?}"
    );
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
}

#[test]
fn json_mode_parallel_batch_order() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        &[
            json!({"content":[
                tool_call("slow","bash",json!({"command":"sleep 0.4; echo slow"})),
                tool_call("fast","bash",json!({"command":"echo fast"}))
            ]}),
            json!({"content":[{"type":"text","text":"done"}]}),
        ],
    );
    let out = agent()
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .args(["--mode", "json", "go"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let of = |kind: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["type"] == kind)
            .filter_map(|e| e["toolCallId"].as_str().map(str::to_string))
            .collect()
    };
    assert_eq!(of("tool_execution_start"), ["slow", "fast"]);
    assert_eq!(of("tool_execution_end"), ["fast", "slow"]);
    let results: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .map(|e| e["message"]["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["slow", "fast"]);
    assert_eq!(events.first().unwrap()["type"], "agent_start");
    // The run's events end with agent_end; the session's usage and cost
    // follow as the last line.
    assert_eq!(events[events.len() - 2]["type"], "agent_end");
    assert_eq!(events.last().unwrap()["type"], "session_usage");
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_flag_limits_what_the_model_is_offered() {
    let server = http_server::serve(vec![http_server::Reply::sse(&[
        &json!({"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]})
            .to_string(),
        "[DONE]",
    ])])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", server.base);
    let cwd = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        agent()
            .args([
                "--provider",
                "openai",
                "--base-url",
                &base,
                "--model",
                "local",
                "--tools",
                "read,grep",
            ])
            .arg("--cwd")
            .arg(&cwd)
            .args(["-p", "hello"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    let body = &server.requests()[0].body;
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "grep"]);
    assert_eq!(body["model"], "local");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("- read: ") && system.contains("- grep: ") && !system.contains("- bash: ")
    );
}

#[test]
fn list_tools_and_print_system_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let out = agent()
        .arg("--cwd")
        .arg(dir.path())
        .arg("--list-tools")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read", "bash", "edit", "write", "grep", "find", "ls", "codemode"
        ]
    );
    assert_eq!(tools[0]["active"], true);
    assert_eq!(tools[4]["active"], false);
    // Codemode is there to choose (`--tools +codemode`), off by default.
    assert_eq!(tools[7]["active"], false);
    assert_eq!(tools[0]["parameters"]["required"], json!(["path"]));

    let out = agent()
        .arg("--cwd")
        .arg(dir.path())
        .args(["--print-system-prompt", "--exclude-tools", "bash"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let prompt = String::from_utf8_lossy(&out.stdout);
    assert!(prompt.contains("Available tools:\n- read: "));
    assert!(!prompt.contains("- bash: "));
    assert!(prompt.contains(&format!(
        "Current working directory: {}",
        dir.path().display()
    )));
}

#[test]
fn usage_errors_exit_2() {
    let out = agent().arg("--no-such-flag").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = agent()
        .args(["tool", "nope", "--args", "{}"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unknown tool name: nope"));
    let out = agent()
        .args(["tool", "read", "--args", "{not json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn missing_key_says_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = agent()
        .arg("--cwd")
        .arg(dir.path())
        .args(["-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("OPENAI_API_KEY") && err.contains("ANTHROPIC_API_KEY"),
        "{err}"
    );
    assert!(err.contains("coding-agent demo"), "{err}");
    let out = agent()
        .arg("--cwd")
        .arg(dir.path())
        .args(["--provider", "anthropic", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ANTHROPIC_API_KEY"));
}

/// `--api openai-responses` with `--base-url` and `--api-key` talks the
/// Responses API to any server: here the fake one on loopback.
#[tokio::test(flavor = "multi_thread")]
async fn api_flag_selects_the_responses_api_for_any_server() {
    use test_support::openai_responses::{ResponseScript, Usage};
    let server = http_server::serve(vec![
        ResponseScript::new("resp_1")
            .text("msg_1", &["from ", "responses"])
            .completed(Usage::default()),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", server.base);
    let cwd = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        agent()
            .args(["--api", "openai-responses", "--base-url", &base])
            .args(["--api-key", "sk-x", "--model", "gpt-fake", "--no-session"])
            .arg("--cwd")
            .arg(&cwd)
            .args(["-p", "hello"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from responses\n");
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/responses");
    assert_eq!(req.body["store"], false);
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer sk-x")
    );
}

/// A session's requests carry its id as the Responses `prompt_cache_key`,
/// so the provider reuses the cached prompt from one request to the next;
/// `PI_CACHE_RETENTION=none` asks for no caching.
#[tokio::test(flavor = "multi_thread")]
async fn a_sessions_requests_carry_its_id_for_the_prompt_cache() {
    use test_support::openai_responses::{ResponseScript, Usage};
    let answer = || {
        ResponseScript::new("resp_1")
            .text("msg_1", &["ok"])
            .completed(Usage::default())
    };
    let server = http_server::serve(vec![answer(), answer()]).await;
    let dir = tempfile::tempdir().unwrap();
    let agent_dir = dir.path().join("agent");
    let base = format!("{}/v1", server.base);
    let run = |retention: Option<&'static str>| {
        let (base, agent_dir, cwd) = (base.clone(), agent_dir.clone(), dir.path().to_path_buf());
        tokio::task::spawn_blocking(move || {
            let mut c = agent();
            c.args(["--api", "openai-responses", "--base-url", &base])
                .args(["--api-key", "sk-x", "--model", "gpt-fake"])
                .env("CODING_AGENT_DIR", &agent_dir)
                .arg("--cwd")
                .arg(&cwd)
                .args(["-p", "hello"]);
            match retention {
                Some(r) => c.env("PI_CACHE_RETENTION", r),
                None => c.env_remove("PI_CACHE_RETENTION"),
            };
            c.output().unwrap()
        })
    };
    let out = run(None).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<std::path::PathBuf> = walk(&agent_dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&files[0])
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let id = header["id"].as_str().expect("the session has an id");
    assert_eq!(server.requests()[0].body["prompt_cache_key"], id);
    let out = run(Some("none")).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(server.requests()[1].body.get("prompt_cache_key").is_none());
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn model_error_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        &[json!({"content":[],"stopReason":"error","errorMessage":"boom"})],
    );
    let out = agent()
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .args(["-p", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("boom"));
}

#[test]
fn tool_command_single_and_batch() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let out = agent()
        .args(["tool", "read", "--cwd"])
        .arg(dir.path())
        .args(["--args", r#"{"path":"a.txt","limit":"1"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v,
        json!({"content":[{"type":"text","text":"one\n\n[1 more lines in file. Use offset=2 to continue.]"}],"details":null,"isError":false})
    );

    let out = agent()
        .args(["tool", "read", "--cwd"])
        .arg(dir.path())
        .args(["--args", r#"{"path":"missing"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "a failing tool still exits 0");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["isError"], true);
    assert_eq!(v["details"], json!({}));

    let cases = [
        json!({"id": 1, "tool": "ls", "args": {}, "cwd": dir.path()}),
        json!({"id": "b", "tool": "bash", "args": {"command": "sleep 10"}, "cwd": dir.path(), "cancelAfterMs": 100}),
        json!({"id": 3, "tool": "nope", "args": {}}),
        json!({"id": 4, "tool": "read"}),
    ];
    let input: String = cases.iter().map(|c| format!("{c}\n")).collect::<String>() + "{broken\n";
    let batch = dir.path().join("cases.jsonl");
    std::fs::write(&batch, input).unwrap();
    let started = Instant::now();
    let out = agent()
        .args(["tool", "--batch"])
        .arg(&batch)
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(8)); // hang guard
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[0]["content"][0]["text"], "a.txt\ncases.jsonl");
    assert_eq!(lines[1]["id"], "b");
    assert_eq!(lines[1]["isError"], true);
    assert_eq!(lines[1]["content"][0]["text"], "Command aborted");
    assert_eq!(lines[2]["content"][0]["text"], "Unknown tool name: nope");
    assert!(
        lines[3]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Validation failed for tool \"read\"")
    );
    assert_eq!(lines[4]["isError"], true);
}

#[test]
fn demo_runs_all_seven_tools() {
    let dir = tempfile::tempdir().unwrap();
    let out = agent()
        .args(["demo", "--mode", "json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut used: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_execution_start")
        .map(|e| e["toolName"].as_str().unwrap().to_string())
        .collect();
    used.sort();
    used.dedup();
    assert_eq!(
        used,
        ["bash", "edit", "find", "grep", "ls", "read", "write"]
    );
    let calc = std::fs::read_to_string(dir.path().join("src/calc.py")).unwrap();
    assert!(calc.contains("return a + b\n") && calc.contains("return a - b\n"));
    assert!(dir.path().join("CHANGELOG.md").exists());
}

/// `demo --dir` on a directory that holds files refuses, changing nothing;
/// with `--allow-non-empty` it adds its files but never overwrites one.
#[test]
fn demo_never_overwrites_an_existing_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "mine\n").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "keep\n").unwrap();
    for extra in [&[][..], &["--allow-non-empty"][..]] {
        let out = agent()
            .args(["demo", "--dir"])
            .arg(dir.path())
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.contains(&dir.path().display().to_string()),
            "{stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("README.md")).unwrap(),
            "mine\n"
        );
        assert!(
            !dir.path().join("src").exists(),
            "{extra:?}: nothing written"
        );
    }
    assert!(
        String::from_utf8_lossy(
            &agent()
                .args(["demo", "--dir"])
                .arg(dir.path())
                .output()
                .unwrap()
                .stderr
        )
        .contains("not empty")
    );
    // Beside other files, when asked.
    std::fs::remove_file(dir.path().join("README.md")).unwrap();
    let out = agent()
        .args(["demo", "--mode", "json", "--allow-non-empty", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "keep\n"
    );
    assert!(dir.path().join("CHANGELOG.md").exists());
}

#[test]
fn sigint_during_a_long_bash_call_leaves_no_child() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("sigint-marker-{}", std::process::id());
    let s = script(
        dir.path(),
        &[
            json!({"content":[tool_call("c1","bash",json!({"command": format!("bash -c 'exec -a {marker} sleep 300' & setsid bash -c 'exec -a {marker} sleep 301' & wait")}))]}),
            json!({"content":[{"type":"text","text":"never"}]}),
        ],
    );
    let mut child = agent()
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .args(["--mode", "json", "go"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pgrep = || {
        std::process::Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap()
            .stdout
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while pgrep()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "the bash call never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
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
    assert_eq!(status.code(), Some(1), "a cancelled run ends in an error");
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        pgrep().is_empty(),
        "survivors: {}",
        String::from_utf8_lossy(&pgrep())
    );
}

#[test]
fn sigterm_and_sighup_cancel_like_ctrl_c() {
    for (signal, code) in [
        (rustix::process::Signal::TERM, 143),
        (rustix::process::Signal::HUP, 129),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("term-marker-{}-{}", std::process::id(), code);
        let s = script(
            dir.path(),
            &[
                json!({"content":[tool_call("c1","bash",json!({"command": format!("setsid bash -c 'exec -a {marker} sleep 300' & exec -a {marker} sleep 301")}))]}),
                json!({"content":[{"type":"text","text":"never"}]}),
            ],
        );
        let mut child = agent()
            .args(["--script"])
            .arg(&s)
            .arg("--cwd")
            .arg(dir.path())
            .args(["--mode", "json", "go"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pgrep = || {
            let out = std::process::Command::new("pgrep")
                .args(["-f", &marker])
                .output()
                .unwrap()
                .stdout;
            String::from_utf8_lossy(&out).trim().to_string()
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while pgrep().lines().count() < 2 {
            assert!(Instant::now() < deadline, "the bash call never started");
            std::thread::sleep(Duration::from_millis(50));
        }
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        rustix::process::kill_process(pid, signal).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "no exit after {signal:?}");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(
            status.code() == Some(code) || status.code() == Some(1),
            "{signal:?}: {status:?}"
        );
        let mut out = String::new();
        use std::io::Read;
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        // The cancelled tool call was reported before the exit.
        assert!(out.contains("tool_execution_end"), "{out}");
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(pgrep(), "", "{signal:?} left the bash command running");
    }
}

#[test]
fn a_batch_line_that_is_not_utf8_gets_an_error_and_the_rest_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let mut cases = Vec::new();
    cases.extend_from_slice(br#"{"id":1,"tool":"read","args":{"path":"a.txt"}}"#);
    cases.push(b'\n');
    cases.extend_from_slice(b"{\"id\":2,\"tool\":\"read\",\"args\":{\"path\":\"\xff\xfe\"}}\n");
    cases.extend_from_slice(br#"{"id":3,"tool":"read","args":{"path":"a.txt"}}"#);
    cases.push(b'\n');
    let batch = dir.path().join("cases.jsonl");
    std::fs::write(&batch, cases).unwrap();
    let out = agent()
        .args(["tool", "--batch"])
        .arg(&batch)
        .arg("--cwd")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["isError"], false);
    assert_eq!(lines[1]["isError"], true);
    assert!(
        lines[1]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("UTF-8")
    );
    assert_eq!(lines[2]["id"], 3);
    assert_eq!(lines[2]["isError"], false);
}

#[test]
fn six_hundred_parallel_bash_calls_fit_in_1024_file_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let calls: Vec<Value> = (0..600)
        .map(|i| {
            tool_call(
                &format!("c{i}"),
                "bash",
                json!({"command": format!("sleep 0.1; echo {i}")}),
            )
        })
        .collect();
    let s = script(
        dir.path(),
        &[
            json!({"content": calls}),
            json!({"content":[{"type":"text","text":"done"}]}),
        ],
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 1024 && exec \"$@\"")
        .arg("sh")
        .arg(crate::bin())
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .args(["--mode", "json", "go"])
        .env(
            "CODING_AGENT_DIR",
            std::env::temp_dir().join("coding-agent-cli-test-no-such-dir"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ends: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 600);
    let failed: Vec<&Value> = ends.iter().filter(|e| e["isError"] == true).collect();
    assert!(
        failed.is_empty(),
        "{} failed, e.g. {}",
        failed.len(),
        failed[0]
    );
}

#[test]
fn text_mode_never_passes_control_sequences_through() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        &[
            json!({"content":[
                {"type":"text","text":"copying \u{1b}]52;c;cm0gLXJmIH4=\u{7} now"},
                tool_call("c1","bash",json!({"command": "printf 'out\\033]0;pwned\\007\\033[2K\\033[1A\\r'; echo \u{1b}[31mred"}))
            ]}),
            json!({"content":[{"type":"text","text":"done \u{1b}[2J"}]}),
        ],
    );
    let out = agent()
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains('\u{1b}'), "raw escape in: {stdout:?}");
    assert!(!stdout.contains('\u{7}'), "raw BEL in: {stdout:?}");
    assert!(stdout.contains("␛]52;c;"), "{stdout}");
    assert!(stdout.contains("done ␛[2J"), "{stdout}");
}
