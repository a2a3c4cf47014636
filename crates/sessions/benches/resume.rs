//! Resuming a long session: `SessionManager::open` of a file of 5,000
//! messages (1,250 turns of a question, a tool call, its result and an
//! answer, 3.4 MB), then the branch's context. Figures only, no
//! assertions: `cargo bench -p agent-sessions`.

use std::time::{Duration, Instant};

use agent_sessions::SessionManager;
use serde_json::json;

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

/// The lines of the file, in Pi's layout as Pi writes them (a zero cost
/// as `0`).
fn session_lines(turns: usize) -> Vec<String> {
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": "bench", "timestamp": "2025-11-20T09:00:00.000Z", "cwd": "/work/p"})
            .to_string(),
    ];
    let mut parent: Option<String> = None;
    let mut push = |message: serde_json::Value| {
        let id = format!("{:08x}", lines.len());
        lines.push(
            json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2025-11-20T09:00:01.000Z", "message": message})
                .to_string(),
        );
        parent = Some(id);
    };
    let text = "lorem ipsum dolor sit amet ".repeat(8);
    let usage = json!({"input": 1200, "output": 40, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1240,
        "cost": {"input": 0.0036, "output": 0.0006, "cacheRead": 0, "cacheWrite": 0, "total": 0.0042}});
    for k in 0..turns {
        push(
            json!({"role": "user", "content": [{"type": "text", "text": format!("question {k} {text}")}], "timestamp": k}),
        );
        push(json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": format!("think {text}"), "thinkingSignature": "sig"},
                {"type": "toolCall", "id": format!("call_{k}"), "name": "read", "arguments": {"path": format!("src/file{k}.rs")}}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
            "usage": usage, "stopReason": "toolUse", "timestamp": k}));
        push(
            json!({"role": "toolResult", "toolCallId": format!("call_{k}"), "toolName": "read",
            "content": [{"type": "text", "text": "fn main() {}\n".repeat(40)}], "details": {}, "isError": false, "timestamp": k}),
        );
        push(
            json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {text}")}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
            "usage": usage, "stopReason": "stop", "timestamp": k}),
        );
    }
    lines
}

fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("long.jsonl");
    let lines = session_lines(1_250);
    std::fs::write(&file, lines.join("\n") + "\n").expect("the session file");
    let size = std::fs::metadata(&file).map_or(0, |m| m.len());

    let mut messages = 0;
    let open: Vec<Duration> = (0..15)
        .map(|_| {
            let start = Instant::now();
            let session = SessionManager::open(&file).expect("the session opens");
            let took = start.elapsed();
            messages = session.entries().len();
            took
        })
        .collect();
    let session = SessionManager::open(&file).expect("the session opens");
    let context: Vec<Duration> = (0..15)
        .map(|_| {
            let start = Instant::now();
            let ctx = session.context();
            let took = start.elapsed();
            assert_eq!(ctx.messages.len(), messages);
            took
        })
        .collect();
    println!(
        "resume of {messages} messages ({:.1} MB): open median {:?}, context median {:?}",
        size as f64 / 1e6,
        median(open),
        median(context)
    );
}
