//! Session files on disk: Pi's format, append-only writes, torn lines,
//! branches and forks, repairs for killed runs.

use std::path::Path;

use agent_ai::{AssistantMessage, ContentBlock, Message, ToolCall};
use coding_agent::sessions::{ABORTED_TOOL_RESULT, EntryKind, SessionManager};
use serde_json::{Value, json};

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi-session-v3.jsonl")
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_session_written_by_pi_loads() {
    let session = SessionManager::open(&fixture()).unwrap();
    assert_eq!(session.session_id(), "0b5a6c1e-7d2f-4f63-9d1e-2c3a4b5c6d7e");
    assert_eq!(session.cwd(), Path::new("/home/dev/project"));
    assert_eq!(session.entries().len(), 13);
    assert!(
        session.load_warnings().is_empty(),
        "{:?}",
        session.load_warnings()
    );
    // The leaf is the last line: the branch that left the bash/todo path.
    assert_eq!(session.leaf_id(), Some("a000000d"));
    assert_eq!(session.name().as_deref(), Some("Explore the repo"));
    let ctx = session.context();
    assert_eq!(
        ctx.model,
        Some(("anthropic".into(), "claude-sonnet-4-5".into()))
    );
    assert_eq!(ctx.thinking_level, "medium");
    let roles: Vec<&str> = ctx
        .messages
        .iter()
        .map(|m| match m {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
        })
        .collect();
    // user, assistant(call), result, assistant, branch summary, user.
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "user"
        ]
    );
    let Message::User(summary) = &ctx.messages[4] else {
        panic!()
    };
    assert!(summary.text().contains("Looked at git status and todos."));
    // The other branch, with a command the user ran and an extension's message.
    let mut other = SessionManager::open(&fixture()).unwrap();
    other.branch("a000000b").unwrap();
    let texts: Vec<String> = other
        .context()
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => Some(u.text()),
            _ => None,
        })
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("git status") && t.contains("On branch main")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t == "Remember: two open todos."),
        "{texts:?}"
    );
}

#[test]
fn appending_never_rewrites_and_survives_a_torn_line() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("pi.jsonl");
    std::fs::copy(fixture(), &copy).unwrap();
    let original = std::fs::read(&copy).unwrap();
    let mut session = SessionManager::open(&copy).unwrap();
    let id = session.append_message(&Message::user("one more")).unwrap();
    let grown = std::fs::read(&copy).unwrap();
    assert_eq!(
        &grown[..original.len()],
        &original[..],
        "earlier bytes unchanged"
    );
    let added: Value = serde_json::from_slice(&grown[original.len()..]).unwrap();
    assert_eq!(added["id"], json!(id));
    assert_eq!(added["parentId"], json!("a000000d"));
    // A crash mid-write leaves half a line.
    let mut torn = grown.clone();
    torn.extend_from_slice(br#"{"type":"message","id":"deadbeef","parentId":"#);
    std::fs::write(&copy, &torn).unwrap();
    let mut session = SessionManager::open(&copy).unwrap();
    assert_eq!(
        session.load_warnings().len(),
        1,
        "{:?}",
        session.load_warnings()
    );
    assert!(session.load_warnings()[0].contains("torn"));
    assert_eq!(session.leaf_id(), Some(id.as_str()));
    // The next entry starts on a line of its own.
    session
        .append_message(&Message::user("after the crash"))
        .unwrap();
    let reopened = SessionManager::open(&copy).unwrap();
    assert_eq!(reopened.load_warnings().len(), 1);
    let last = reopened.context().messages.pop().unwrap();
    let Message::User(u) = last else { panic!() };
    assert_eq!(u.text(), "after the crash");
}

fn assistant_with_call(id: &str) -> Message {
    let mut a = AssistantMessage::empty("openai", "gpt");
    a.content = vec![ContentBlock::ToolCall(ToolCall::new(
        id,
        "bash",
        json!({"command": "sleep 100"}),
    ))];
    Message::Assistant(a)
}

#[test]
fn a_run_killed_mid_tool_resumes_with_a_valid_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = SessionManager::create(dir.path(), Some(dir.path().join("s"))).unwrap();
    session.append_message(&Message::user("run it")).unwrap();
    session
        .append_message(&assistant_with_call("call_1"))
        .unwrap();
    let file = session.session_file().unwrap().to_path_buf();
    drop(session); // killed: no result was ever written
    let mut resumed = SessionManager::open(&file).unwrap();
    let ctx = resumed.context();
    assert_eq!(ctx.messages.len(), 3);
    let Message::ToolResult(r) = &ctx.messages[2] else {
        panic!("{:?}", ctx.messages)
    };
    assert_eq!((r.tool_call_id.as_str(), r.is_error), ("call_1", true));
    assert_eq!(r.text(), ABORTED_TOOL_RESULT);
    assert_eq!(ctx.entry_ids[2], None);
    // Talking on keeps it valid: the repair sits between the call and the new prompt.
    resumed
        .append_message(&Message::user("what happened?"))
        .unwrap();
    let ctx = SessionManager::open(&file).unwrap().context();
    assert!(matches!(ctx.messages[2], Message::ToolResult(_)));
    assert!(matches!(ctx.messages[3], Message::User(_)));
}

#[test]
fn branches_and_forks() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("s");
    let mut session = SessionManager::create(dir.path(), Some(sessions.clone())).unwrap();
    let first = session.append_message(&Message::user("first")).unwrap();
    session.append_message(&Message::user("second")).unwrap();
    session.branch(&first).unwrap();
    let alt = session
        .append_message(&Message::user("alternative"))
        .unwrap();
    assert_eq!(session.children(Some(&first)).len(), 2);
    assert_eq!(session.context().messages.len(), 2);
    assert!(
        session
            .tree_text()
            .contains(&format!("{alt} user: alternative  <- leaf"))
    );
    // The branch point survives a reload (the leaf is the last line).
    let file = session.session_file().unwrap().to_path_buf();
    let reopened = SessionManager::open(&file).unwrap();
    assert_eq!(reopened.leaf_id(), Some(alt.as_str()));
    // A fork is a new file with the path up to the entry.
    let fork = reopened.fork(Some(&first)).unwrap();
    let fork_file = fork.session_file().unwrap().to_path_buf();
    assert_ne!(fork_file, file);
    let fork_lines = lines(&fork_file);
    assert_eq!(
        fork_lines[0]["parentSession"],
        json!(file.display().to_string())
    );
    assert_eq!(fork_lines.len(), 2);
    assert_eq!(
        SessionManager::list(dir.path(), Some(sessions.clone())).len(),
        2
    );
    let prefix = &fork.session_id()[..8];
    assert_eq!(
        SessionManager::find(dir.path(), Some(sessions), prefix).unwrap(),
        fork_file
    );
    // Pi's directory naming.
    assert_eq!(
        coding_agent::sessions::session_dir_name(Path::new("/home/u/my proj")),
        "--home-u-my proj--"
    );
    assert!(matches!(fork.entries()[0].kind, EntryKind::Message { .. }));
}
