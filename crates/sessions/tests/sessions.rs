//! Session files on disk: Pi's format, append-only writes, torn lines,
//! branches and forks, repairs for killed runs.

use std::path::Path;

use agent_ai::{AssistantMessage, ContentBlock, Message, ToolCall};
use agent_sessions::{ABORTED_TOOL_RESULT, EntryKind, SessionManager};
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
    // Pi's user, assistant and tool result lines are typed; its command
    // line (a role agent-ai has none for) is kept as JSON.
    let kinds: Vec<(&str, bool)> = session
        .entries()
        .iter()
        .filter_map(|e| match &e.kind {
            EntryKind::Message { .. } => Some((e.id.as_str(), true)),
            EntryKind::OtherMessage { .. } => Some((e.id.as_str(), false)),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("a0000003", true),
            ("a0000004", true),
            ("a0000005", true),
            ("a0000006", true),
            ("a0000007", false),
            ("a000000d", true)
        ]
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
    let mut session = SessionManager::create(dir.path(), dir.path().join("s")).unwrap();
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
    let mut session = SessionManager::create(dir.path(), sessions.clone()).unwrap();
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
    assert_eq!(SessionManager::list(dir.path(), &sessions).len(), 2);
    let prefix = &fork.session_id()[..8];
    assert_eq!(
        SessionManager::find(dir.path(), &sessions, prefix).unwrap(),
        fork_file
    );
    // Pi's directory naming.
    assert_eq!(
        agent_sessions::session_dir_name(Path::new("/home/u/my proj")),
        "--home-u-my proj--"
    );
    assert!(matches!(fork.entries()[0].kind, EntryKind::Message { .. }));
}

/// A session file written by hand: a header and the given entries.
fn write_session(path: &Path, id: &str, entries: &[Value]) {
    let mut text = json!({"type": "session", "version": 3, "id": id,
        "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"})
    .to_string();
    text.push('\n');
    for e in entries {
        text.push_str(&e.to_string());
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

fn user_entry(id: &str, parent: Option<&str>, text: &str) -> Value {
    json!({"type": "message", "id": id, "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1}})
}

fn set_mtime(path: &Path, secs_ago: u64) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(secs_ago);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

#[test]
fn a_torn_last_line_inside_a_utf8_character_keeps_the_session_newest() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.jsonl");
    let new = dir.path().join("new.jsonl");
    write_session(
        &old,
        "old-session",
        &[user_entry("a0000001", None, "older")],
    );
    write_session(
        &new,
        "new-session",
        &[user_entry("b0000001", None, "newer")],
    );
    // The run was killed while writing "é" (0xC3 0xA9): only 0xC3 reached the file.
    let mut torn = std::fs::OpenOptions::new().append(true).open(&new).unwrap();
    std::io::Write::write_all(
        &mut torn,
        b"{\"type\":\"message\",\"id\":\"b0000002\",\"parentId\":\"b0000001\",\"message\":{\"role\":\"user\",\"content\":\"caf\xC3",
    )
    .unwrap();
    drop(torn);
    set_mtime(&old, 60);
    set_mtime(&new, 1);

    let list = SessionManager::list(Path::new("/w"), dir.path());
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["new-session", "old-session"]);
    assert_eq!(list[0].first_message, "newer");
    assert_eq!(list[0].message_count, 1);

    let resumed = SessionManager::continue_recent(Path::new("/w"), dir.path()).unwrap();
    assert_eq!(resumed.session_id(), "new-session");
    assert_eq!(resumed.context().messages.len(), 1);
    assert_eq!(
        resumed.load_warnings().len(),
        1,
        "{:?}",
        resumed.load_warnings()
    );
    let found = SessionManager::find(Path::new("/w"), dir.path(), "new").unwrap();
    assert_eq!(found, new);
}

fn user_texts(session: &SessionManager) -> Vec<String> {
    session
        .context()
        .messages
        .iter()
        .map(|m| match m {
            Message::User(u) => u.text(),
            _ => String::new(),
        })
        .collect()
}

#[test]
fn a_self_parented_entry_is_sent_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut loop_entry = user_entry("c0000002", Some("c0000002"), "looped");
    loop_entry["parentId"] = json!("c0000002");
    write_session(
        &path,
        "cycle",
        &[user_entry("c0000001", None, "first"), loop_entry],
    );
    let session = SessionManager::open(&path).unwrap();
    assert_eq!(user_texts(&session), ["looped"]);
    assert_eq!(session.path_to(session.leaf_id()).len(), 1);
    let warnings: Vec<_> = session
        .load_warnings()
        .iter()
        .filter(|w| w.contains("cycle"))
        .collect();
    assert_eq!(warnings.len(), 1, "{:?}", session.load_warnings());
    // The tree view terminates and shows each entry once.
    assert_eq!(session.tree_text().lines().count(), 2);
}

#[test]
fn a_ring_of_parents_is_cut_at_the_first_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    // d1 -> d2 -> d3 -> d2 (a ring); d1, the last line, is the leaf.
    write_session(
        &path,
        "ring",
        &[
            user_entry("d0000002", Some("d0000003"), "two"),
            user_entry("d0000003", Some("d0000002"), "three"),
            user_entry("d0000001", Some("d0000002"), "one"),
        ],
    );
    let mut session = SessionManager::open(&path).unwrap();
    assert_eq!(session.leaf_id(), Some("d0000001"));
    // Walking up from the leaf: one, two, three, then two again: cut there.
    assert_eq!(user_texts(&session), ["three", "two", "one"]);
    // New entries continue the conversation normally.
    session.append_message(&Message::user("four")).unwrap();
    assert_eq!(user_texts(&session), ["three", "two", "one", "four"]);
    assert_eq!(session.tree_text().lines().count(), 4);
}

#[test]
fn duplicate_ids_that_loop_do_not_hang_the_tree_view() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    write_session(
        &path,
        "dups",
        &[
            user_entry("e000000a", Some("e000000b"), "x"),
            user_entry("e000000b", Some("e000000a"), "y"),
            user_entry("e000000a", None, "z"),
        ],
    );
    let session = SessionManager::open(&path).unwrap();
    let tree = session.tree_text();
    assert!(tree.lines().count() <= 3, "{tree}");
    assert!(user_texts(&session).len() <= 3);
}

/// `/a/b-c` and `/a-b/c` share a session folder name; continuing in one
/// never picks up the other's transcript.
#[test]
fn continuing_never_takes_another_directorys_session() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (one, two) = (base.join("a/b-c"), base.join("a-b/c"));
    std::fs::create_dir_all(&one).unwrap();
    std::fs::create_dir_all(&two).unwrap();
    assert_eq!(
        agent_sessions::session_dir_name(&one),
        agent_sessions::session_dir_name(&two)
    );
    let shared = base.join("sessions");
    let mut first = SessionManager::create(&one, shared.clone()).unwrap();
    first
        .append_message(&Message::user("project one's secret"))
        .unwrap();
    let mut other = SessionManager::continue_recent(&two, &shared).unwrap();
    other.append_message(&Message::user("hello")).unwrap();
    let text = std::fs::read_to_string(other.session_file().unwrap()).unwrap();
    assert!(!text.contains("project one's secret"), "{text}");
    assert!(
        SessionManager::list(&two, &shared)
            .iter()
            .all(|s| s.cwd == two.display().to_string())
    );
    // Each directory still continues its own.
    let again = SessionManager::continue_recent(&one, &shared).unwrap();
    assert_eq!(again.session_file(), first.session_file());
}

/// Transcripts hold what the tools read: files 0600, new directories 0700.
#[test]
fn session_files_are_the_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("deep/sessions");
    let mut session = SessionManager::create(dir.path(), sessions.clone()).unwrap();
    session.append_message(&Message::user("private")).unwrap();
    let file = session.session_file().unwrap().to_path_buf();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&sessions), 0o700);
}

/// Numbers by value (Pi writes a zero cost as `0`, agent-ai as `0.0`);
/// everything else exactly.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, x)| y.get(k).is_some_and(|y| same_json(x, y)))
        }
        _ => a == b,
    }
}

#[test]
fn a_fork_of_pis_file_keeps_every_message() {
    let dir = tempfile::tempdir().unwrap();
    // A copy: the fork is written beside the file it comes from.
    let copy = dir.path().join("pi.jsonl");
    std::fs::copy(fixture(), &copy).unwrap();
    let mut session = SessionManager::open(&copy).unwrap();
    // The branch with the command the user ran (a message agent-ai has no
    // role for), and a line of a newer writer's role after it.
    session.branch("a000000b").unwrap();
    let odd = json!({"role": "reviewNote", "text": "later", "score": 0.5});
    let odd_id = session
        .append(EntryKind::message_from_value(odd.clone()))
        .unwrap();
    assert!(matches!(
        session.entry(&odd_id).unwrap().kind,
        EntryKind::OtherMessage { .. }
    ));
    let fork = session.fork(None).unwrap();
    let written = lines(fork.session_file().unwrap());
    let original: std::collections::HashMap<String, String> = std::fs::read_to_string(fixture())
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["id"].as_str().unwrap_or("").to_string(), l.to_string())
        })
        .collect();
    let text = std::fs::read_to_string(fork.session_file().unwrap()).unwrap();
    let mut bash_seen = false;
    for (value, line) in written.iter().skip(1).zip(text.lines().skip(1)) {
        let id = value["id"].as_str().unwrap();
        if id == odd_id {
            assert_eq!(value["message"], odd);
            continue;
        }
        let before = &original[id];
        if value["message"]["role"] == "bashExecution" {
            // Kept as JSON: written back byte for byte.
            assert_eq!(line, before);
            bash_seen = true;
        } else {
            let before: Value = serde_json::from_str(before).unwrap();
            assert!(same_json(value, &before), "{line}\n{before}");
        }
    }
    assert!(bash_seen);
    // The header, the eleven entries of the branch and the odd one.
    assert_eq!(written.len(), 1 + 11 + 1);
}
