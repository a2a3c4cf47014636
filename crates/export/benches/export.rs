//! Issue 36's export target: a session of 5,000 messages and about 50 MB
//! exports in under 2 s. Figures only, no assertions:
//! `cargo bench -p agent-export`. With `EXPORT_BENCH_PAGE=FILE` the page
//! is also written there (to time a browser's first paint on it).

use std::time::{Duration, Instant};

use agent_export::{ExportOptions, export_html};
use agent_sessions::{EntryKind, SessionManager};
use coding_agent::agent_ai::Message;
use coding_agent::serde_json::json;

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

/// 1,000 turns of five messages: a question, an answer with Markdown, a
/// fenced block and two tool calls, their two results (about 26 KB of
/// output each), and a closing answer.
fn session() -> SessionManager {
    let mut session = SessionManager::in_memory(std::path::Path::new("/work/project"));
    let output: String = (0..400)
        .map(|i| format!("src/module_{i}.rs:{i}: let value = compute(input, {i}); // output\n"))
        .collect();
    for turn in 0..1000 {
        let user = Message::user(format!(
            "Question {turn}: why does `parse` fail on empty input?"
        ));
        session.append_message(&user).expect("append");
        let text = format!(
            "Let me look. **Turn {turn}**:\n\n```rust\nfn parse(s: &str) -> Result<u32, Error> {{\n    s.trim().parse().map_err(Error::from)\n}}\n```\n"
        );
        let calls = json!({"role": "assistant", "model": "claude-sonnet-4-5", "content": [
            {"type": "text", "text": text},
            {"type": "toolCall", "id": format!("r{turn}"), "name": "read", "arguments": {"path": "src/lib.rs"}},
            {"type": "toolCall", "id": format!("g{turn}"), "name": "grep", "arguments": {"pattern": "compute", "path": "src"}}],
            "usage": {"input": 12000, "output": 300, "cacheRead": 10000, "cacheWrite": 0, "totalTokens": 22300,
                      "cost": {"input": 0.036, "output": 0.0045, "cacheRead": 0.003, "cacheWrite": 0.0, "total": 0.0435}},
            "stopReason": "toolUse", "timestamp": 0});
        session
            .append(EntryKind::message_from_value(calls))
            .expect("append");
        for id in [format!("r{turn}"), format!("g{turn}")] {
            let result = json!({"role": "toolResult", "toolCallId": id, "toolName": "read",
                "content": [{"type": "text", "text": output}], "isError": false, "timestamp": 0});
            session
                .append(EntryKind::message_from_value(result))
                .expect("append");
        }
        let answer = json!({"role": "assistant", "model": "claude-sonnet-4-5", "content": [
            {"type": "text", "text": "It fails because `\"\".parse::<u32>()` is an error; handle the empty case first.\n\n- check `s.is_empty()`\n- return a clear error"}],
            "usage": {"input": 30000, "output": 120, "cost": {"total": 0.09}}, "stopReason": "stop", "timestamp": 0});
        session
            .append(EntryKind::message_from_value(answer))
            .expect("append");
    }
    session
}

fn main() {
    let session = session();
    let bytes: usize = session
        .entries()
        .iter()
        .map(|e| e.to_json().to_string().len() + 1)
        .sum();
    let options = ExportOptions::default();
    let mut page = String::new();
    let runs: Vec<Duration> = (0..5)
        .map(|_| {
            let start = Instant::now();
            page = export_html(&session, &options);
            start.elapsed()
        })
        .collect();
    println!(
        "export_html: {} messages, session {:.1} MB -> page {:.1} MB: median {:?} (target < 2 s)",
        session.entries().len(),
        bytes as f64 / 1e6,
        page.len() as f64 / 1e6,
        median(runs)
    );
    if let Some(path) = std::env::var_os("EXPORT_BENCH_PAGE") {
        std::fs::write(&path, &page).expect("write the page");
        println!("page written to {}", std::path::Path::new(&path).display());
    }
}
