//! Compaction through the binary: by reported usage, and after an overflow error.

use super::*;

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
