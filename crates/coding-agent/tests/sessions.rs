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

    let list = SessionManager::list(Path::new("/w"), Some(dir.path().to_path_buf()));
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["new-session", "old-session"]);
    assert_eq!(list[0].first_message, "newer");
    assert_eq!(list[0].message_count, 1);

    let resumed =
        SessionManager::continue_recent(Path::new("/w"), Some(dir.path().to_path_buf())).unwrap();
    assert_eq!(resumed.session_id(), "new-session");
    assert_eq!(resumed.context().messages.len(), 1);
    assert_eq!(
        resumed.load_warnings().len(),
        1,
        "{:?}",
        resumed.load_warnings()
    );
    let found =
        SessionManager::find(Path::new("/w"), Some(dir.path().to_path_buf()), "new").unwrap();
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
        coding_agent::sessions::session_dir_name(&one),
        coding_agent::sessions::session_dir_name(&two)
    );
    let shared = base.join("sessions");
    let mut first = SessionManager::create(&one, Some(shared.clone())).unwrap();
    first
        .append_message(&Message::user("project one's secret"))
        .unwrap();
    let mut other = SessionManager::continue_recent(&two, Some(shared.clone())).unwrap();
    other.append_message(&Message::user("hello")).unwrap();
    let text = std::fs::read_to_string(other.session_file().unwrap()).unwrap();
    assert!(!text.contains("project one's secret"), "{text}");
    assert!(
        SessionManager::list(&two, Some(shared.clone()))
            .iter()
            .all(|s| s.cwd == two.display().to_string())
    );
    // Each directory still continues its own.
    let again = SessionManager::continue_recent(&one, Some(shared)).unwrap();
    assert_eq!(again.session_file(), first.session_file());
}

/// Transcripts hold what the tools read: files 0600, new directories 0700.
#[test]
fn session_files_are_the_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("deep/sessions");
    let mut session = SessionManager::create(dir.path(), Some(sessions.clone())).unwrap();
    session.append_message(&Message::user("private")).unwrap();
    let file = session.session_file().unwrap().to_path_buf();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&sessions), 0o700);
}

mod restore {
    //! A tool that keeps its state in its results' `details` gets that state
    //! back when its session file is reopened, forked or switched.

    use std::sync::{Arc, Mutex};

    use agent_ai::Model;
    use agent_ai::providers::scripted::ScriptedClient;
    use coding_agent::sessions::SessionManager;
    use coding_agent::{AgentSession, AgentSessionBuilder, Settings, ToolDefinition};
    use coding_agent::{AgentToolResult, EarlierResult, tool};
    use serde_json::{Value, json};

    type Todos = Arc<Mutex<Vec<String>>>;

    /// A todo tool: each call adds an item and records the whole list in
    /// `details`; restoring takes the list from the latest result.
    fn todo_tool(todos: Todos, restored: Arc<Mutex<Vec<Vec<String>>>>) -> ToolDefinition {
        let run = todos.clone();
        tool("todo")
            .description("Adds an item to the todo list.")
            .execute(move |args: Value, _cx| {
                let todos = run.clone();
                async move {
                    let mut list = todos.lock().unwrap();
                    list.push(args["item"].as_str().unwrap_or_default().to_string());
                    Ok(AgentToolResult::text(format!("{} open", list.len()))
                        .with_details(json!({ "todos": *list })))
                }
            })
            .with_restore(move |earlier: &[EarlierResult]| {
                let ids: Vec<String> = earlier.iter().map(|r| r.tool_call_id.clone()).collect();
                restored.lock().unwrap().push(ids);
                let latest = earlier.iter().rev().find(|r| !r.is_error);
                *todos.lock().unwrap() = latest
                    .and_then(|r| serde_json::from_value(r.details["todos"].clone()).ok())
                    .unwrap_or_default();
            })
    }

    /// Another tool whose details look like the todo tool's: they must not
    /// reach it.
    fn decoy() -> ToolDefinition {
        tool("decoy")
            .description("Returns todo-shaped details.")
            .execute(|_: Value, _cx| async {
                Ok(AgentToolResult::text("ok").with_details(json!({"todos": ["decoy"]})))
            })
    }

    fn session(
        script: &str,
        manager: SessionManager,
        todos: &Todos,
        restored: &Arc<Mutex<Vec<Vec<String>>>>,
    ) -> AgentSession {
        let client = ScriptedClient::from_jsonl(script).unwrap();
        AgentSessionBuilder::new(Model::new("scripted", "demo"), Arc::new(client))
            .cwd(std::env::temp_dir())
            .settings(Settings::default())
            .context_files(false)
            .tool(todo_tool(todos.clone(), restored.clone()))
            .tool(decoy())
            .session_manager(manager)
            .build()
            .unwrap()
    }

    const RUN: &str = r#"
{"content":[{"type":"toolCall","id":"c1","name":"todo","arguments":{"item":"milk"}}]}
{"content":[{"type":"toolCall","id":"c2","name":"todo","arguments":{"item":"eggs"}},{"type":"toolCall","id":"d1","name":"decoy","arguments":{}}]}
{"content":[{"type":"text","text":"noted"}]}
"#;

    #[tokio::test]
    async fn a_reopened_forked_or_new_session_restores_the_tool_state() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        let first = SessionManager::create(dir.path(), Some(sessions)).unwrap();
        let todos: Todos = Default::default();
        let restored = Arc::new(Mutex::new(Vec::new()));
        let s = session(RUN, first, &todos, &restored);
        // A new session: the tool is told there is nothing earlier.
        assert_eq!(*restored.lock().unwrap(), [Vec::<String>::new()]);
        s.prompt("remember milk and eggs").await.unwrap();
        assert_eq!(*todos.lock().unwrap(), ["milk", "eggs"]);
        let file = s
            .session_manager()
            .unwrap()
            .lock()
            .unwrap()
            .session_file()
            .unwrap()
            .to_path_buf();
        drop(s);

        // Reopened by another process: a fresh tool with empty state.
        let todos: Todos = Default::default();
        let restored = Arc::new(Mutex::new(Vec::new()));
        let reopened = SessionManager::open(&file).unwrap();
        let s = session(r#"{"content":[]}"#, reopened, &todos, &restored);
        assert_eq!(*todos.lock().unwrap(), ["milk", "eggs"]);
        assert_eq!(*restored.lock().unwrap(), [vec!["c1", "c2"]]);

        // A fork at the first result: the branch holds only "milk".
        let manager = s.session_manager().unwrap();
        let first_result = {
            let m = manager.lock().unwrap();
            let entry = m
                .entries()
                .iter()
                .find(|e| {
                    matches!(&e.kind, coding_agent::sessions::EntryKind::Message { message }
                        if message["toolCallId"] == "c1")
                })
                .unwrap();
            m.fork(Some(&entry.id)).unwrap()
        };
        s.switch_session(first_result).unwrap();
        assert_eq!(*todos.lock().unwrap(), ["milk"]);

        // A new, empty session clears the state.
        let mut fresh = SessionManager::in_memory(dir.path());
        fresh.new_session(None).unwrap();
        s.switch_session(fresh).unwrap();
        assert!(todos.lock().unwrap().is_empty());
    }

    #[test]
    fn results_of_the_current_branch_only_with_their_arguments() {
        let mut m = SessionManager::in_memory(std::path::Path::new("/tmp"));
        let call = |id: &str, item: &str| {
            let mut a = agent_ai::AssistantMessage::empty("p", "m");
            a.content
                .push(agent_ai::ContentBlock::ToolCall(agent_ai::ToolCall::new(
                    id,
                    "todo",
                    json!({ "item": item }),
                )));
            agent_ai::Message::Assistant(a)
        };
        let result = |id: &str, details: Value, is_error: bool| {
            agent_ai::Message::ToolResult(agent_ai::ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "todo".into(),
                content: vec![],
                details,
                usage: None,
                added_tool_names: vec![],
                is_error,
                timestamp: 0,
            })
        };
        m.append_message(&agent_ai::Message::user("go")).unwrap();
        m.append_message(&call("c1", "milk")).unwrap();
        let fork_point = m
            .append_message(&result("c1", json!({"n": 1}), false))
            .unwrap();
        m.append_message(&call("c2", "eggs")).unwrap();
        m.append_message(&result("c2", json!({}), true)).unwrap();
        let on_main = &m.tool_results()["todo"];
        assert_eq!(
            on_main
                .iter()
                .map(|r| (
                    r.tool_call_id.as_str(),
                    r.arguments["item"].as_str(),
                    r.is_error
                ))
                .collect::<Vec<_>>(),
            [("c1", Some("milk"), false), ("c2", Some("eggs"), true)]
        );
        // Another branch from the first result: c2 is not on it.
        m.branch(&fork_point).unwrap();
        m.append_message(&call("c3", "tea")).unwrap();
        m.append_message(&result("c3", json!({"n": 2}), false))
            .unwrap();
        let on_branch = &m.tool_results()["todo"];
        assert_eq!(
            on_branch
                .iter()
                .map(|r| (r.tool_call_id.as_str(), r.details.clone()))
                .collect::<Vec<_>>(),
            [("c1", json!({"n": 1})), ("c3", json!({"n": 2}))]
        );
    }
}
