//! A tool that keeps its state in its results' `details` gets that state
//! back when its session file is reopened, forked or switched.

use std::sync::{Arc, Mutex};

use agent_ai::Model;
use agent_ai::providers::scripted::ScriptedClient;
use agent_sessions::SessionManager;
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
    let first = SessionManager::create(dir.path(), sessions).unwrap();
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
                matches!(&e.kind, agent_sessions::EntryKind::Message { message }
                    if message.as_tool_result().is_some_and(|r| r.tool_call_id == "c1"))
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
