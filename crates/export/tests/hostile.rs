//! Sessions written to hurt the exporter (found by an adversarial review):
//! one result claimed by a thousand calls, a fake result from another
//! role or branch, a tree of many leaves, a private file overwritten.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agent_export::{ExportFormat, ExportOptions, export_html, write_export};
use agent_sessions::SessionManager;
use serde_json::{Value, json};

fn session_file(dir: &Path, entries: &[Value]) -> PathBuf {
    let header =
        json!({"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/tmp"});
    let text: String = std::iter::once(&header)
        .chain(entries)
        .map(|e| format!("{e}\n"))
        .collect();
    let path = dir.join("s.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

fn message(id: &str, parent: Option<&str>, message: Value) -> Value {
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": "t", "message": message})
}

#[test]
fn a_result_is_drawn_once_however_many_calls_share_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(200_000);
    let calls: Vec<Value> = (0..1000)
        .map(|_| json!({"type": "toolCall", "id": "c", "name": "bash", "arguments": {"command": "x"}}))
        .collect();
    let path = session_file(
        dir.path(),
        &[
            message("a1", None, json!({"role": "assistant", "content": calls})),
            message(
                "r1",
                Some("a1"),
                json!({"role": "toolResult", "toolCallId": "c", "toolName": "bash",
                "content": [{"type": "text", "text": big}], "isError": false}),
            ),
        ],
    );
    let html = export_html(
        &SessionManager::open(&path).unwrap(),
        &ExportOptions::default(),
    );
    assert_eq!(
        html.matches(&"x".repeat(1000)).count(),
        200,
        "the output once"
    );
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
}

#[test]
fn only_a_tool_result_below_the_call_answers_it() {
    let dir = tempfile::tempdir().unwrap();
    let call = json!({"role": "assistant", "content": [
        {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "rm -rf ~"}}]});
    let path = session_file(
        dir.path(),
        &[
            message(
                "f0",
                None,
                json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                "content": [{"type": "text", "text": "FAKE-EARLIER"}]}),
            ),
            message("a1", None, call),
            message(
                "r1",
                Some("a1"),
                json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                "content": [{"type": "text", "text": "REAL-RESULT"}]}),
            ),
            message(
                "f1",
                None,
                json!({"role": "user", "toolCallId": "c1", "content": "FAKE-USER"}),
            ),
            message(
                "f2",
                Some("f0"),
                json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                "content": [{"type": "text", "text": "FAKE-OTHER-BRANCH"}]}),
            ),
        ],
    );
    let mut session = SessionManager::open(&path).unwrap();
    session.branch("r1").unwrap();
    let html = export_html(&session, &ExportOptions::default());
    let card_start = html.find("rm -rf ~").expect("the call's card");
    let card = &html[card_start..html[card_start..].find("</details>").unwrap() + card_start];
    assert!(card.contains("REAL-RESULT"), "{card}");
    assert!(!card.contains("FAKE"), "{card}");
    // The fakes are still shown, as what they are, elsewhere.
    assert!(html.contains("FAKE-USER") && html.contains("FAKE-OTHER-BRANCH"));
}

#[test]
fn many_leaves_on_a_long_chain_are_walked_once() {
    let dir = tempfile::tempdir().unwrap();
    let n = 30_000;
    let mut entries = Vec::with_capacity(2 * n);
    let label = |id: String, parent: Option<String>| json!({"type": "label", "id": id, "parentId": parent, "timestamp": "t", "targetId": "x", "label": null});
    for i in 0..n {
        entries.push(label(
            format!("{i:08x}"),
            i.checked_sub(1).map(|p| format!("{p:08x}")),
        ));
    }
    let tip = format!("{:08x}", n - 1);
    for i in 0..n {
        entries.push(label(format!("{:08x}", n + i), Some(tip.clone())));
    }
    let path = session_file(dir.path(), &entries);
    let html = export_html(
        &SessionManager::open(&path).unwrap(),
        &ExportOptions::default(),
    );
    assert_eq!(html.matches("<details class=\"branch\"").count(), n - 1);
}

#[test]
fn an_overwritten_private_file_stays_private() {
    let dir = tempfile::tempdir().unwrap();
    let path = session_file(dir.path(), &[]);
    let out = dir.path().join("page.html");
    std::fs::write(&out, "old").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o600)).unwrap();
    let session = SessionManager::open(&path).unwrap();
    write_export(
        &session,
        ExportFormat::Html,
        &ExportOptions::default(),
        &out,
    )
    .unwrap();
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .contains("<!DOCTYPE html>")
    );
}
