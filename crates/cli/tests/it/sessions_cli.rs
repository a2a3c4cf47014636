//! Sessions, compaction and RPC mode through the binary: real processes,
//! real files, a killed run resumed.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Dirs {
    _root: tempfile::TempDir,
    agent: PathBuf,
    ws: PathBuf,
    root: PathBuf,
}

fn dirs(settings: Value) -> Dirs {
    let root = tempfile::tempdir().unwrap();
    let agent = root.path().join("agent");
    let ws = root.path().join("ws");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(agent.join("settings.json"), settings.to_string()).unwrap();
    Dirs {
        root: root.path().to_path_buf(),
        _root: root,
        agent,
        ws,
    }
}

fn script(d: &Dirs, name: &str, turns: &[Value]) -> PathBuf {
    let path = d.root.join(name);
    std::fs::write(
        &path,
        turns.iter().map(|t| format!("{t}\n")).collect::<String>(),
    )
    .unwrap();
    path
}

fn agent(d: &Dirs) -> Command {
    let mut c = Command::new(crate::bin());
    c.env("CODING_AGENT_DIR", &d.agent).arg("--cwd").arg(&d.ws);
    c
}

fn session_files(d: &Dirs) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(d.agent.join("sessions"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for f in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            out.push(f.path());
        }
    }
    out
}

fn requests(log: &Path) -> Vec<Vec<Value>> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Vec<Value>>(l).unwrap())
        .collect()
}

fn roles(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

/// Every tool call has a result right after it, and no result is alone.
fn assert_valid_for_providers(messages: &[Value]) {
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        match m["role"].as_str().unwrap() {
            "assistant" => {
                assert!(open.is_empty(), "calls without results: {open:?}");
                open = m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|b| b["type"] == "toolCall")
                    .map(|b| b["id"].as_str().unwrap().to_string())
                    .collect();
            }
            "toolResult" => {
                let id = m["toolCallId"].as_str().unwrap();
                assert!(
                    open.iter().any(|o| o == id),
                    "a result without its call: {id}"
                );
                open.retain(|o| o != id);
            }
            _ => assert!(open.is_empty(), "calls without results: {open:?}"),
        }
    }
}

#[test]
fn a_run_killed_mid_tool_is_resumed_with_a_valid_conversation() {
    let d = dirs(json!({}));
    let marker = d.root.join("started");
    let first = script(
        &d,
        "first.jsonl",
        &[
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash",
            "arguments": {"command": format!("touch {}; sleep 60", marker.display())}}]}),
        ],
    );
    let mut child = agent(&d)
        .arg("--script")
        .arg(&first)
        .args(["-p", "start the long job"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the tool never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL, mid-tool
    child.wait().unwrap();
    let files = session_files(&d);
    assert_eq!(files.len(), 1);

    let log = d.root.join("requests.jsonl");
    let second = script(
        &d,
        "second.jsonl",
        &[json!({"content": [{"type": "text", "text": "picked up"}]})],
    );
    let out = agent(&d)
        .arg("--script")
        .arg(&second)
        .arg("--script-log")
        .arg(&log)
        .args(["-c", "-p", "what happened?"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "picked up");
    let sent = &requests(&log)[0];
    assert_eq!(roles(sent), ["user", "assistant", "toolResult", "user"]);
    assert_eq!(sent[2]["isError"], true);
    assert_valid_for_providers(sent);
    // The same file went on growing.
    assert_eq!(session_files(&d), files);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains("picked up"));
}

#[test]
fn resume_by_id_and_no_session() {
    let d = dirs(json!({}));
    let one = script(
        &d,
        "one.jsonl",
        &[json!({"content": [{"type": "text", "text": "one"}]})],
    );
    let run = |extra: &[&str]| {
        agent(&d)
            .arg("--script")
            .arg(&one)
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    assert!(run(&["-p", "hello"]).status.success());
    assert!(run(&["--no-session", "-p", "unrecorded"]).status.success());
    let files = session_files(&d);
    assert_eq!(files.len(), 1);
    let id = files[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .split('_')
        .nth(1)
        .unwrap()[..8]
        .to_string();
    let log = d.root.join("resume.jsonl");
    let out = agent(&d)
        .arg("--script")
        .arg(&one)
        .arg("--script-log")
        .arg(&log)
        .args(["--resume", &id, "-p", "again"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(roles(&requests(&log)[0]), ["user", "assistant", "user"]);
    let out = agent(&d)
        .arg("--script")
        .arg(&one)
        .args(["--resume", "ffffffffff", "-p", "x"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session matches"));
}

fn json_events(out: &std::process::Output) -> Vec<Value> {
    test_support::cli::json_lines(&out.stdout)
}

#[test]
fn compaction_by_reported_usage_keeps_calls_with_their_results() {
    let d = dirs(json!({"compaction": {"keepRecentTokens": 50}}));
    std::fs::write(d.ws.join("notes.txt"), "note ".repeat(200)).unwrap();
    let s = script(
        &d,
        "s.jsonl",
        &[
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "notes.txt"}}],
                   "usage": {"input": 1000, "output": 10}}),
            json!({"content": [{"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "yes recent | head -c 600"}}],
                   "usage": {"input": 95000, "output": 10}}),
            // The summariser's answer.
            json!({"content": [{"type": "text", "text": "## Goal\nRead the notes."}]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let log = d.root.join("log.jsonl");
    let out = agent(&d)
        .arg("--script")
        .arg(&s)
        .arg("--script-log")
        .arg(&log)
        .args([
            "--context-window",
            "100000",
            "--mode",
            "json",
            &"please ".repeat(100),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_events(&out);
    let start = events
        .iter()
        .find(|e| e["type"] == "auto_compaction_start")
        .expect("compaction started");
    assert_eq!(start["reason"], "threshold");
    let end = events
        .iter()
        .find(|e| e["type"] == "auto_compaction_end")
        .unwrap();
    assert_eq!(
        end["result"]["tokensBefore"].as_u64().map(|t| t > 90000),
        Some(true),
        "{end}"
    );
    assert_eq!(end["result"]["details"]["readFiles"], json!(["notes.txt"]));
    let sent = requests(&log);
    // Requests: 1, 2, the summary, then the compacted one.
    assert_eq!(sent.len(), 4);
    let before = serde_json::to_string(&sent[1]).unwrap().len();
    let after = &sent[3];
    assert!(
        serde_json::to_string(after).unwrap().len() < before,
        "the request shrank"
    );
    assert!(
        after[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Read the notes.")
    );
    assert_valid_for_providers(after);
    assert_eq!(roles(after), ["user", "assistant", "toolResult"]);
    // Recorded, and a resume sees the compacted conversation.
    let file = &session_files(&d)[0];
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains("\"type\":\"compaction\""));
    let resumed = agent_sessions::SessionManager::open(file)
        .unwrap()
        .context();
    assert!(
        matches!(&resumed.messages[0], agent_ai::Message::User(u) if u.text().contains("Read the notes."))
    );
}

#[test]
fn an_overflow_error_compacts_and_retries_once() {
    let d = dirs(json!({"compaction": {"keepRecentTokens": 20}}));
    let s = script(
        &d,
        "s.jsonl",
        &[
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "yes one | head -c 300"}}]}),
            json!({"content": [], "stopReason": "error",
                   "errorMessage": "400 context_length_exceeded: This model's maximum context length is 8192 tokens"}),
            json!({"content": [{"type": "text", "text": "## Goal\nEcho things."}]}),
            json!({"content": [{"type": "text", "text": "recovered"}]}),
        ],
    );
    let log = d.root.join("log.jsonl");
    let out = agent(&d)
        .arg("--script")
        .arg(&s)
        .arg("--script-log")
        .arg(&log)
        .args(["--mode", "json", &"a long prompt ".repeat(50)])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_events(&out);
    let start = events
        .iter()
        .find(|e| e["type"] == "auto_compaction_start")
        .expect("compaction");
    assert_eq!(start["reason"], "overflow");
    let end = events
        .iter()
        .find(|e| e["type"] == "auto_compaction_end")
        .unwrap();
    assert_eq!(end["willRetry"], true);
    let last = events
        .iter()
        .rev()
        .find(|e| e["type"] == "agent_end")
        .unwrap();
    let final_text =
        last["messages"].as_array().unwrap().last().unwrap()["content"][0]["text"].clone();
    assert_eq!(final_text, "recovered");
    let sent = requests(&log);
    assert_eq!(sent.len(), 4);
    let retried = &sent[3];
    assert!(
        serde_json::to_string(retried).unwrap().len()
            < serde_json::to_string(&sent[1]).unwrap().len()
    );
    assert!(
        retried[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Echo things.")
    );
    assert_valid_for_providers(retried);
}

/// A `coding-agent --mode rpc` child and a reader of its output lines.
struct Rpc {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<Value>,
    seen: Vec<Value>,
}

impl Rpc {
    fn start(d: &Dirs, script: &Path) -> Rpc {
        Self::start_with(d, script, &[])
    }

    fn start_with(d: &Dirs, script: &Path, extra: &[&std::ffi::OsStr]) -> Rpc {
        let mut args: Vec<&std::ffi::OsStr> = vec!["--script".as_ref(), script.as_os_str()];
        args.extend_from_slice(extra);
        Self::spawn(d, &args)
    }

    /// `--mode rpc` with `args`.
    fn spawn(d: &Dirs, args: &[&std::ffi::OsStr]) -> Rpc {
        let mut child = agent(d)
            .args(["--mode", "rpc"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        Rpc {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for the first line (from now on or already seen) matching `f`.
    fn wait(&mut self, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        if let Some(v) = self.seen.iter().find(|v| f(v)) {
            return v.clone();
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "no {what}; saw {:?}",
                    self.seen
                        .iter()
                        .map(|v| v["type"].clone())
                        .collect::<Vec<_>>()
                )
            });
            self.seen.push(v.clone());
            if f(&v) {
                return v;
            }
        }
    }

    fn response(&mut self, id: u64) -> Value {
        self.wait(&format!("response {id}"), |v| {
            v["type"] == "response" && v["id"] == id
        })
    }
}

#[test]
fn an_rpc_client_drives_a_whole_conversation() {
    let d = dirs(json!({"compaction": {"keepRecentTokens": 10}}));
    let s = script(
        &d,
        "s.jsonl",
        &[
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "sleep 1; echo slow"}}]}),
            json!({"content": [{"type": "text", "text": "steered"}]}),
            json!({"content": [{"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "sleep 30"}}]}),
            // Summary for compact.
            json!({"content": [{"type": "text", "text": "## Goal\nTalk."}]}),
        ],
    );
    let mut rpc = Rpc::start(&d, &s);
    rpc.send(r#"{"id":1,"type":"get_state"}"#);
    let state = rpc.response(1);
    assert_eq!(state["data"]["isStreaming"], false);
    assert!(
        state["data"]["sessionFile"]
            .as_str()
            .unwrap()
            .ends_with(".jsonl")
    );

    rpc.send(r#"{"id":2,"type":"prompt","message":"first"}"#);
    assert_eq!(rpc.response(2)["success"], true);
    rpc.wait("tool start", |v| {
        v["type"] == "tool_execution_start" && v["toolCallId"] == "c1"
    });
    // Mid-run: a plain prompt is refused, a steer is queued.
    rpc.send(r#"{"id":3,"type":"prompt","message":"plain"}"#);
    assert_eq!(rpc.response(3)["success"], false);
    rpc.send(
        r#"{"id":4,"type":"prompt","message":"go the other way","streamingBehavior":"steer"}"#,
    );
    assert_eq!(rpc.response(4)["success"], true);
    rpc.wait("end of run", |v| v["type"] == "agent_end");
    rpc.send(r#"{"id":5,"type":"get_last_assistant_text"}"#);
    assert_eq!(rpc.response(5)["data"]["text"], "steered");
    let steer_seen = rpc.seen.iter().any(|v| {
        v["type"] == "message_end" && v["message"]["content"][0]["text"] == "go the other way"
    });
    assert!(steer_seen, "the steering message was delivered");

    // A long tool, aborted.
    rpc.send(r#"{"id":6,"type":"prompt","message":"second"}"#);
    rpc.wait("second tool", |v| {
        v["type"] == "tool_execution_start" && v["toolCallId"] == "c2"
    });
    rpc.send(r#"{"id":7,"type":"abort"}"#);
    assert_eq!(rpc.response(7)["success"], true);
    let end = rpc.wait("aborted tool", |v| {
        v["type"] == "tool_execution_end" && v["toolCallId"] == "c2"
    });
    assert_eq!(end["isError"], true);
    rpc.wait("second run end", |v| {
        v["type"] == "agent_end" && v["messages"].as_array().is_some_and(|m| m.len() > 2)
    });

    rpc.send(r#"{"id":8,"type":"compact"}"#);
    let compacted = rpc.response(8);
    assert_eq!(compacted["success"], true, "{compacted}");
    assert!(
        compacted["data"]["summary"]
            .as_str()
            .unwrap()
            .contains("Talk.")
    );
    rpc.send(r#"{"id":9,"type":"get_state"}"#);
    let state = rpc.response(9);
    assert_eq!(state["data"]["isStreaming"], false);
    assert!(state["data"]["messageCount"].as_u64().unwrap() >= 1);

    // Closing stdin ends the process cleanly.
    drop(rpc.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = rpc.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still running after stdin closed"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
}

#[test]
fn a_thousand_malformed_lines_get_parse_errors() {
    let d = dirs(json!({}));
    let s = script(&d, "s.jsonl", &[]);
    let mut rpc = Rpc::start(&d, &s);
    let garbage = [
        "not json",
        "{",
        "[]",
        "42",
        "\"text\"",
        "{\"type\":5}",
        "{\"no_type\":1}",
        "\u{2028}{}",
        "{\"type\":\"prompt\"}",
        "{\"type\":\"prompt\",\"message\":7}",
    ];
    for i in 0..1000 {
        rpc.send(garbage[i % garbage.len()]);
    }
    rpc.send(r#"{"id":"last","type":"get_state"}"#);
    let last = rpc.wait("the final answer", |v| v["id"] == "last");
    assert_eq!(last["success"], true);
    let failures = rpc
        .seen
        .iter()
        .filter(|v| v["type"] == "response" && v["success"] == false)
        .count();
    assert_eq!(failures, 1000);
    let parse = rpc.seen.iter().filter(|v| v["command"] == "parse").count();
    assert!(parse >= 600, "{parse}");
    drop(rpc.stdin.take());
    assert!(rpc.child.wait().unwrap().success());
}

#[test]
fn rpc_asks_the_client_for_permission() {
    let d = dirs(json!({"permissions": {"ask": ["Bash(touch:*)"]}}));
    let s = script(
        &d,
        "s.jsonl",
        &[
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "touch allowed"}}]}),
            json!({"content": [{"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "touch denied"}}]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let mut rpc = Rpc::start(&d, &s);
    rpc.send(r#"{"id":1,"type":"prompt","message":"make files"}"#);
    let ask = rpc.wait("first question", |v| v["type"] == "extension_ui_request");
    assert!(
        ask["title"].as_str().unwrap().contains("touch allowed"),
        "{ask}"
    );
    rpc.send(
        &json!({"type": "extension_ui_response", "id": ask["id"], "value": "Allow"}).to_string(),
    );
    let ask2 = rpc.wait("second question", |v| {
        v["type"] == "extension_ui_request" && v["id"] != ask["id"]
    });
    rpc.send(
        &json!({"type": "extension_ui_response", "id": ask2["id"], "value": "Deny"}).to_string(),
    );
    let end = rpc.wait("the refusal", |v| {
        v["type"] == "tool_execution_end" && v["toolCallId"] == "c2"
    });
    assert!(
        end["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("refused by the user"),
        "{end}"
    );
    rpc.wait("end of run", |v| v["type"] == "agent_end");
    assert!(d.ws.join("allowed").exists());
    assert!(!d.ws.join("denied").exists());
    drop(rpc.stdin.take());
    assert!(rpc.child.wait().unwrap().success());
}

/// Every user text of every request in `log`.
fn user_texts(log: &Path) -> Vec<String> {
    requests(log)
        .iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            other => other.to_string(),
        })
        .collect()
}

fn set_mtime(path: &Path, secs_from_now: i64) {
    let now = std::time::SystemTime::now();
    let when = if secs_from_now >= 0 {
        now + Duration::from_secs(secs_from_now as u64)
    } else {
        now - Duration::from_secs(secs_from_now.unsigned_abs())
    };
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

fn hand_session(path: &Path, id: &str, cwd: &Path, entries: &[Value]) {
    let mut text = json!({"type": "session", "version": 3, "id": id,
        "timestamp": "2026-01-01T00:00:00.000Z", "cwd": cwd.display().to_string()})
    .to_string();
    text.push('\n');
    for e in entries {
        text.push_str(&e.to_string());
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

fn hand_user(id: &str, parent: Option<&str>, text: &str) -> Value {
    json!({"type": "message", "id": id, "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1}})
}

#[test]
fn continue_takes_the_newest_session_even_torn_inside_a_utf8_character() {
    let d = dirs(json!({}));
    let sessions = d.root.join("sessions");
    let ok = script(
        &d,
        "ok.jsonl",
        &[json!({"content": [{"type": "text", "text": "ok"}]})],
    );
    for (prompt, age) in [("older one", -60), ("newest one", -1)] {
        let out = agent(&d)
            .arg("--session-dir")
            .arg(&sessions)
            .arg("--script")
            .arg(&ok)
            .args(["-p", prompt])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success());
        let newest = std::fs::read_dir(&sessions)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(prompt)))
            .unwrap();
        if prompt == "newest one" {
            // Killed while writing "café": the file ends inside "é".
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&newest)
                .unwrap();
            f.write_all(b"{\"type\":\"message\",\"id\":\"ffff0001\",\"message\":{\"role\":\"user\",\"content\":\"caf\xC3")
                .unwrap();
        }
        set_mtime(&newest, age);
    }
    let log = d.root.join("log.jsonl");
    let out = agent(&d)
        .arg("--session-dir")
        .arg(&sessions)
        .arg("--script")
        .arg(&ok)
        .arg("--script-log")
        .arg(&log)
        .args(["-c", "-p", "go on"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let texts = user_texts(&log);
    assert_eq!(texts, ["newest one", "go on"], "{texts:?}");
}

#[test]
fn a_self_parented_entry_reaches_the_model_once() {
    let d = dirs(json!({}));
    let sessions = d.root.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    hand_session(
        &sessions.join("cycle.jsonl"),
        "cycle-session",
        &d.ws,
        &[
            hand_user("a0000001", None, "first"),
            hand_user("a0000002", Some("a0000002"), "looped"),
        ],
    );
    let ok = script(
        &d,
        "ok.jsonl",
        &[json!({"content": [{"type": "text", "text": "ok"}]})],
    );
    let log = d.root.join("log.jsonl");
    let out = agent(&d)
        .arg("--session-dir")
        .arg(&sessions)
        .arg("--script")
        .arg(&ok)
        .arg("--script-log")
        .arg(&log)
        .args(["-c", "-p", "next"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(user_texts(&log), ["looped", "next"]);
    assert_eq!(stderr.matches("parent links").count(), 1, "{stderr}");
}

const VICTIM: u32 = 41101;
const INTRUDER: u32 = 41102;

/// `coding-agent` as `uid` (no supplementary groups), or as ourselves.
fn as_user(bin: &Path, uid: Option<u32>) -> Command {
    match uid {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={uid}"))
                .arg("--clear-groups")
                .arg(bin);
            c
        }
        None => Command::new(bin),
    }
}

#[test]
fn continue_never_resumes_a_session_another_user_planted() {
    use std::os::unix::fs::PermissionsExt;
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping: this case needs root to act as two users");
        return;
    }
    let chmod = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    // As the victim (an unprivileged uid) and as root (CI's own user).
    for victim in [Some(VICTIM), None] {
        let root = tempfile::tempdir().unwrap();
        let base = root.path();
        chmod(base, 0o755);
        let bin = base.join("coding-agent");
        std::fs::copy(crate::bin(), &bin).unwrap();
        chmod(&bin, 0o755);
        let home = base.join("home");
        let ws = base.join("ws");
        let shared = base.join("shared");
        for dir in [&home, &ws, &shared] {
            std::fs::create_dir(dir).unwrap();
        }
        chmod(&shared, 0o777); // both users can write here
        let victim_uid = victim.unwrap_or(0);
        std::os::unix::fs::chown(&home, Some(victim_uid), Some(victim_uid)).unwrap();
        let ok = base.join("ok.jsonl");
        std::fs::write(&ok, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}\n").unwrap();
        chmod(&ok, 0o644);
        let run = |args: &[&str], log: Option<&Path>| {
            let mut c = as_user(&bin, victim);
            c.env("CODING_AGENT_DIR", &home)
                .env("HOME", &home)
                .arg("--cwd")
                .arg(&ws)
                .arg("--session-dir")
                .arg(&shared)
                .arg("--script")
                .arg(&ok);
            if let Some(log) = log {
                c.arg("--script-log").arg(log);
            }
            let out = c.args(args).stdin(Stdio::null()).output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        run(&["-p", "mine"], None);
        let own: Vec<PathBuf> = std::fs::read_dir(&shared)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(own.len(), 1);
        set_mtime(&own[0], -60);

        // Another user's file, newer than ours.
        let planted = shared.join("2026-01-01T00-00-00-000Z_planted.jsonl");
        hand_session(
            &planted,
            "planted",
            &ws,
            &[hand_user("b0000001", None, "PLANTED instructions")],
        );
        std::os::unix::fs::chown(&planted, Some(INTRUDER), Some(INTRUDER)).unwrap();
        chmod(&planted, 0o666);
        set_mtime(&planted, 3600);
        // And a file of ours that anyone may have written to.
        let open_to_all = shared.join("2026-01-01T00-00-01-000Z_open.jsonl");
        hand_session(
            &open_to_all,
            "open-to-all",
            &ws,
            &[hand_user("c0000001", None, "TAMPERED text")],
        );
        std::os::unix::fs::chown(&open_to_all, Some(victim_uid), Some(victim_uid)).unwrap();
        chmod(&open_to_all, 0o666);
        set_mtime(&open_to_all, 1800);
        let planted_before = std::fs::read(&planted).unwrap();
        let open_before = std::fs::read(&open_to_all).unwrap();

        let log = home.join("log.jsonl");
        run(&["-c", "-p", "again"], Some(&log));
        let texts = user_texts(&log);
        assert_eq!(texts, ["mine", "again"], "victim {victim:?}: {texts:?}");
        assert_eq!(std::fs::read(&planted).unwrap(), planted_before);
        assert_eq!(std::fs::read(&open_to_all).unwrap(), open_before);
        assert!(std::fs::read_to_string(&own[0]).unwrap().contains("again"));

        // Named explicitly, another user's file is read but never appended to.
        if victim.is_some() {
            run(
                &["--session", planted.to_str().unwrap(), "-p", "more"],
                None,
            );
            assert_eq!(std::fs::read(&planted).unwrap(), planted_before);
        }
    }
}

#[test]
fn rpc_abort_answers_when_idle_and_answers_every_call() {
    // Two calls; the first waits on a permission question when the client
    // aborts. Every call must still get a result, and a prompt sent right
    // after the abort's answer must be accepted.
    let d = dirs(json!({"permissions": {"ask": ["Bash(touch:*)"]}}));
    let s = script(
        &d,
        "s.jsonl",
        &[
            json!({"content": [
                {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "touch one"}},
                {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "touch two"}}]}),
            json!({"content": [{"type": "text", "text": "after the abort"}]}),
        ],
    );
    let log = d.root.join("log.jsonl");
    let mut rpc = Rpc::start_with(&d, &s, &["--script-log".as_ref(), log.as_os_str()]);
    rpc.send(r#"{"id":1,"type":"prompt","message":"make files"}"#);
    assert_eq!(rpc.response(1)["success"], true);
    rpc.wait("the question", |v| v["type"] == "extension_ui_request");
    rpc.send(r#"{"id":2,"type":"abort"}"#);
    assert_eq!(rpc.response(2)["success"], true);
    // Idle when answered: the run's end came first, and a prompt is taken.
    let end_at = rpc
        .seen
        .iter()
        .position(|v| v["type"] == "agent_end")
        .expect("agent_end before the abort's answer");
    let answer_at = rpc
        .seen
        .iter()
        .position(|v| v["type"] == "response" && v["id"] == 2)
        .unwrap();
    assert!(end_at < answer_at);
    rpc.send(r#"{"id":3,"type":"prompt","message":"again"}"#);
    let accepted = rpc.response(3);
    assert_eq!(accepted["success"], true, "{accepted}");
    rpc.wait("the second run's end", |v| {
        v["type"] == "agent_end" && v["messages"][1]["content"][0]["text"] == "after the abort"
    });
    for id in ["c1", "c2"] {
        let started = rpc
            .seen
            .iter()
            .any(|v| v["type"] == "tool_execution_start" && v["toolCallId"] == id);
        assert!(started, "no start for {id}");
        let end = rpc.wait(id, |v| {
            v["type"] == "tool_execution_end" && v["toolCallId"] == id
        });
        assert_eq!(end["isError"], true);
        assert_eq!(
            end["result"]["content"][0]["text"], "Operation aborted",
            "{end}"
        );
    }
    assert!(!d.ws.join("one").exists() && !d.ws.join("two").exists());
    let sent = requests(&log);
    let last = sent.last().expect("the second request");
    assert_valid_for_providers(last);
    assert_eq!(
        last.iter().filter(|m| m["role"] == "toolResult").count(),
        2,
        "{last:?}"
    );
    drop(rpc.stdin.take());
    assert!(rpc.child.wait().unwrap().success());
}

/// The largest resident set of a process so far, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn rpc_output_stays_bounded_when_the_client_stops_reading() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    const REQUESTS: usize = 1000;
    let d = dirs(json!({}));
    // A conversation of about 300 KB: each get_messages answer carries it.
    let session = d.root.join("big.jsonl");
    let big = "x".repeat(300 * 1024);
    hand_session(&session, "big", &d.ws, &[hand_user("a0000001", None, &big)]);
    let s = script(&d, "s.jsonl", &[]);
    let mut child = agent(&d)
        .args(["--mode", "rpc", "--script"])
        .arg(&s)
        .arg("--session")
        .arg(&session)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    // The client writes its commands (padded, so they do not all fit in the
    // pipe) and reads nothing until the agent stops taking them or all are
    // sent.
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let writer = std::thread::spawn(move || {
        let pad = "p".repeat(4096);
        for i in 0..REQUESTS {
            let line = format!("{{\"id\":{i},\"type\":\"get_messages\",\"pad\":\"{pad}\"}}\n");
            if stdin.write_all(line.as_bytes()).is_err() {
                break;
            }
            counter.fetch_add(1, Ordering::SeqCst);
        }
        stdin
    });
    let mut last = (0, Instant::now());
    let give_up = Instant::now() + Duration::from_secs(120);
    while !writer.is_finished() && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(100));
        let now = sent.load(Ordering::SeqCst);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(2) {
            break; // the agent stopped reading: back-pressure reached the client
        }
    }
    // Now read everything; every command gets its answer.
    let reader = std::thread::spawn(move || {
        let mut answers = 0;
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("{\"id\":") || line.contains("\"type\":\"response\"") {
                answers += 1;
            }
            if answers == REQUESTS {
                break;
            }
        }
        answers
    });
    let stdin = writer.join().unwrap();
    assert_eq!(reader.join().unwrap(), REQUESTS);
    let peak_mib = peak_rss_kib(pid) / 1024;
    eprintln!("peak resident set of the agent: {peak_mib} MiB");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert!(
        peak_mib < 200,
        "the agent's peak resident set grew to {peak_mib} MiB"
    );
}

/// 20 scripted turns priced as anthropic/claude-sonnet-4-5 ($3 in, $15 out,
/// $0.30 cache read, $3.75 cache write per million tokens): turn i uses
/// 1000·i input, 100·i output, 10 000 cache-read and 500 cache-write
/// tokens. By hand: 210 000 input = $0.63, 21 000 output = $0.315,
/// 200 000 cache read = $0.06, 10 000 cache write = $0.0375; $1.0425 in all.
#[test]
fn a_twenty_turn_session_costs_what_the_prices_say_and_thinking_is_driven_over_rpc() {
    let d = dirs(json!({"defaultThinkingLevel": "low"}));
    let turns: Vec<Value> = (1..=20u64)
        .map(|i| {
            json!({"content": [{"type": "text", "text": format!("turn {i}")}],
                   "usage": {"input": 1000 * i, "output": 100 * i, "cacheRead": 10000, "cacheWrite": 500}})
        })
        .collect();
    let s = script(&d, "twenty.jsonl", &turns);
    let model: &std::ffi::OsStr = "anthropic/claude-sonnet-4-5".as_ref();
    let mut rpc = Rpc::start_with(&d, &s, &["--model".as_ref(), model]);
    rpc.send(r#"{"id":1,"type":"get_state"}"#);
    let state = rpc.response(1);
    assert_eq!(state["data"]["thinkingLevel"], "low", "{state}");
    assert_eq!(state["data"]["model"]["contextWindow"], 200_000);
    for i in 1..=20u64 {
        rpc.send(&format!(
            r#"{{"id":{},"type":"prompt","message":"go {i}"}}"#,
            100 + i
        ));
        let text = format!("turn {i}");
        rpc.wait(&text, |v| {
            v["type"] == "agent_end" && v.to_string().contains(&text)
        });
    }
    rpc.send(r#"{"id":2,"type":"get_session_stats"}"#);
    let stats = rpc.response(2)["data"].clone();
    assert_eq!(stats["tokens"]["input"], 210_000, "{stats}");
    assert_eq!(stats["tokens"]["output"], 21_000);
    let cost = stats["cost"].as_f64().unwrap();
    assert!((cost - 1.0425).abs() < 1e-9, "{cost}");
    let parts = &stats["costBreakdown"];
    assert!(
        (parts["cacheWrite"].as_f64().unwrap() - 0.0375).abs() < 1e-9,
        "{parts}"
    );

    // xhigh is beyond Sonnet 4.5: clamped to high, and get_state says so.
    rpc.send(r#"{"id":3,"type":"set_thinking_level","level":"xhigh"}"#);
    let set = rpc.response(3);
    assert_eq!(
        set["data"],
        json!({"level": "high", "requested": "xhigh", "clamped": true})
    );
    rpc.send(r#"{"id":4,"type":"get_state"}"#);
    assert_eq!(rpc.response(4)["data"]["thinkingLevel"], "high");
    // After the highest level comes off, then minimal.
    rpc.send(r#"{"id":5,"type":"cycle_thinking_level"}"#);
    assert_eq!(rpc.response(5)["data"]["level"], "off");
    rpc.send(r#"{"id":6,"type":"cycle_thinking_level"}"#);
    assert_eq!(rpc.response(6)["data"]["level"], "minimal");
    rpc.send(r#"{"id":7,"type":"get_state"}"#);
    assert_eq!(rpc.response(7)["data"]["thinkingLevel"], "minimal");
    rpc.send(r#"{"id":8,"type":"set_thinking_level","level":"loud"}"#);
    assert_eq!(rpc.response(8)["success"], false);
}

#[test]
fn json_mode_ends_with_the_session_usage_and_models_json_prices_apply() {
    let d = dirs(json!({}));
    std::fs::write(
        d.agent.join("models.json"),
        json!({"providers": {"local": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
            "models": [{"id": "tiny", "cost": {"input": 1, "output": 2}}]}}})
        .to_string(),
    )
    .unwrap();
    let s = script(
        &d,
        "one.jsonl",
        &[
            json!({"content": [{"type": "text", "text": "ok"}], "usage": {"input": 500000, "output": 250000}}),
        ],
    );
    let out = agent(&d)
        .args([
            "--mode",
            "json",
            "--no-session",
            "--model",
            "local/tiny",
            "--script",
        ])
        .arg(&s)
        .arg("hi")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "session_usage", "{last}");
    assert_eq!(last["usage"]["cost"]["total"], 1.0, "{last}");

    // A wrong value in models.json names the file and the key.
    std::fs::write(
        d.agent.join("models.json"),
        r#"{"providers": {"local": {"api": "openai-completions"}}}"#,
    )
    .unwrap();
    let out = agent(&d)
        .args(["--model", "local/tiny", "--script"])
        .arg(&s)
        .arg("hi")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("models.json") && err.contains("providers.local.baseUrl"),
        "{err}"
    );
}

/// The thinking level a session ran at is recorded, and a continued
/// session goes on at it; `--thinking` on the continuing run wins.
#[test]
fn a_continued_session_keeps_its_thinking_level() {
    let d = dirs(json!({}));
    let s = script(
        &d,
        "ok.jsonl",
        &[json!({"content": [{"type": "text", "text": "ok"}]})],
    );
    let model = ["--model", "anthropic/claude-sonnet-4-5"];
    let out = agent(&d)
        .arg("--script")
        .arg(&s)
        .args(model)
        .args(["--thinking", "high", "-p", "hello"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = session_files(&d);
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|e| e["type"] == "thinking_level_change" && e["thinkingLevel"] == "high"),
        "{text}"
    );
    let state_of = |extra: &[&str]| {
        let args: Vec<&std::ffi::OsStr> = ["-c"]
            .iter()
            .chain(&model)
            .chain(extra)
            .map(std::ffi::OsStr::new)
            .collect();
        let mut rpc = Rpc::start_with(&d, &s, &args);
        rpc.send(r#"{"id":1,"type":"get_state"}"#);
        rpc.response(1)["data"]["thinkingLevel"].clone()
    };
    assert_eq!(state_of(&[]), "high");
    assert_eq!(state_of(&["--thinking", "low"]), "low");
}

/// RPC `set_model` crosses providers and APIs through the registry: a
/// `models.json` with a Chat Completions provider and an Anthropic one,
/// each a fake on loopback. The conversation goes on at the other model
/// (with the first model's answer fitted to it), `get_available_models`
/// lists both, `cycle_model` goes back, and the switches are recorded.
#[test]
fn rpc_switches_models_across_providers_and_apis() {
    use test_support::anthropic::AnthropicScript;
    use test_support::chat_completions::ChatScript;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (alpha, beta) = rt.block_on(async {
        (
            test_support::http_server::serve(vec![
                ChatScript::new().content("from alpha").finish("stop"),
                ChatScript::new().content("alpha again").finish("stop"),
            ])
            .await,
            test_support::http_server::serve(vec![
                AnthropicScript::new().text("from beta").stop("end_turn"),
            ])
            .await,
        )
    });
    let d = dirs(json!({}));
    std::fs::write(
        d.agent.join("models.json"),
        json!({"providers": {
            "alpha": {"baseUrl": format!("{}/v1", alpha.base), "api": "openai-completions",
                      "apiKey": "alpha-key", "models": [{"id": "a1"}]},
            "beta": {"baseUrl": beta.base, "api": "anthropic-messages",
                     "apiKey": "beta-key", "models": [{"id": "b1", "contextWindow": 1000000}]}
        }})
        .to_string(),
    )
    .unwrap();
    let mut rpc = Rpc::spawn(&d, &["--model".as_ref(), "alpha/a1".as_ref()]);
    rpc.send(r#"{"id":1,"type":"prompt","message":"one"}"#);
    rpc.wait("alpha's answer", |v| {
        v["type"] == "agent_end" && v.to_string().contains("from alpha")
    });
    rpc.send(r#"{"id":2,"type":"get_available_models"}"#);
    let listed: Vec<String> = rpc.response(2)["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["provider"].as_str().unwrap(),
                m["id"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        listed.contains(&"alpha/a1".to_string()) && listed.contains(&"beta/b1".to_string()),
        "{listed:?}"
    );
    rpc.send(r#"{"id":3,"type":"set_model","provider":"beta","modelId":"b1"}"#);
    let set = rpc.response(3);
    assert_eq!(set["success"], true, "{set}");
    assert_eq!(set["data"]["api"], "anthropic-messages");
    assert_eq!(set["data"]["contextWindow"], 1_000_000);
    rpc.send(r#"{"id":4,"type":"prompt","message":"two"}"#);
    rpc.wait("beta's answer", |v| {
        v["type"] == "agent_end" && v.to_string().contains("from beta")
    });
    let to_beta = &beta.requests()[0];
    assert_eq!(to_beta.path, "/v1/messages");
    assert!(
        to_beta
            .headers
            .iter()
            .any(|(k, v)| k == "x-api-key" && v == "beta-key")
    );
    test_support::anthropic::check_request(&to_beta.body, &[]).unwrap();
    assert!(to_beta.body.to_string().contains("from alpha"));
    rpc.send(r#"{"id":5,"type":"cycle_model"}"#);
    let cycled = rpc.response(5);
    assert_eq!(cycled["data"]["model"]["provider"], "alpha", "{cycled}");
    rpc.send(r#"{"id":6,"type":"prompt","message":"three"}"#);
    rpc.wait("alpha's second answer", |v| {
        v["type"] == "agent_end" && v.to_string().contains("alpha again")
    });
    assert_eq!(alpha.requests().len(), 2);
    rpc.send(r#"{"id":7,"type":"set_model","provider":"gamma","modelId":"x"}"#);
    let unknown = rpc.response(7);
    assert_eq!(unknown["success"], false);
    assert!(
        unknown["error"].as_str().unwrap().contains("gamma"),
        "{unknown}"
    );
    drop(rpc);
    let files = session_files(&d);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let changes: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "model_change")
        .map(|e| {
            format!(
                "{}/{}",
                e["provider"].as_str().unwrap(),
                e["modelId"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(changes, ["beta/b1", "alpha/a1"]);
}

#[test]
fn rpc_export_html_and_clone() {
    let d = dirs(json!({}));
    let s = script(
        &d,
        "s.jsonl",
        &[json!({"content": [{"type": "text", "text": "an <b>answer</b>"}]})],
    );
    let mut rpc = Rpc::start(&d, &s);
    rpc.send(r#"{"id":1,"type":"prompt","message":"question"}"#);
    rpc.wait("the run's end", |v| v["type"] == "agent_end");
    let page = d.root.join("page.html");
    rpc.send(&json!({"id": 2, "type": "export_html", "outputPath": page}).to_string());
    let answer = rpc.response(2);
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["data"]["path"], json!(page));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("an &lt;b&gt;answer&lt;/b&gt;")
            || html.contains("an <span class=\"raw-html\">"),
        "escaped"
    );
    assert!(html.contains("Content-Security-Policy"));

    rpc.send(r#"{"id":3,"type":"get_state"}"#);
    let before = rpc.response(3)["data"]["sessionFile"].clone();
    rpc.send(r#"{"id":4,"type":"clone"}"#);
    assert_eq!(rpc.response(4)["data"], json!({"cancelled": false}));
    rpc.send(r#"{"id":5,"type":"get_state"}"#);
    let state = rpc.response(5);
    assert_ne!(state["data"]["sessionFile"], before, "{state}");
    assert_eq!(state["data"]["messageCount"], 2, "{state}");
    assert_eq!(session_files(&d).len(), 2);
}
