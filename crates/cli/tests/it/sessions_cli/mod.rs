//! Sessions, compaction and RPC mode through the binary: real processes,
//! real files, a killed run resumed.

mod compaction;
mod resume;
mod rpc;
mod usage;

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

fn json_events(out: &std::process::Output) -> Vec<Value> {
    test_support::cli::json_lines(&out.stdout)
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

/// The largest resident set of a process so far, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}
