//! `coding-agent mcp` driven by rmcp's own client over stdio, as any MCP
//! client would drive it.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};

use test_support::mcp::{args, assert_cancel_kills_the_tree, assert_parallel_calls_overlap, text};

async fn connect(
    cwd: &std::path::Path,
    extra: &[&str],
    agent_dir: &std::path::Path,
) -> RunningService<RoleClient, ()> {
    let command = tokio::process::Command::new(crate::bin()).configure(|c| {
        c.arg("mcp").arg("--cwd").arg(cwd).args(extra);
        c.env("CODING_AGENT_DIR", agent_dir);
    });
    ().serve(TokioChildProcess::new(command).expect("spawn"))
        .await
        .expect("initialise")
}

#[tokio::test]
async fn lists_calls_and_reports_failures_like_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\nbeta\n").unwrap();
    let client = connect(dir.path(), &[], agent.path()).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["read", "bash", "edit", "write", "grep", "find", "ls"]
    );
    let read = &tools[0];
    let ann = read.annotations.as_ref().unwrap();
    assert_eq!(ann.read_only_hint, Some(true));
    assert_eq!(ann.open_world_hint, Some(false));
    assert_eq!(read.title.as_deref(), Some("Read"));
    let bash = tools.iter().find(|t| t.name == "bash").unwrap();
    let ann = bash.annotations.as_ref().unwrap();
    assert_eq!(
        (ann.destructive_hint, ann.open_world_hint),
        (Some(true), Some(true))
    );
    assert_eq!(read.input_schema["required"], json!(["path"]));

    let out = client
        .call_tool(
            CallToolRequestParams::new("read").with_arguments(args(json!({"path": "a.txt"}))),
        )
        .await
        .unwrap();
    assert_eq!(out.is_error, Some(false));
    assert_eq!(text(&out), "alpha\nbeta\n");

    // Coercion as in the loop: "1" becomes 1.
    let out = client
        .call_tool(
            CallToolRequestParams::new("read")
                .with_arguments(args(json!({"path": "a.txt", "limit": "1"}))),
        )
        .await
        .unwrap();
    assert!(
        text(&out).starts_with("alpha\n\n[1 more lines in file."),
        "{}",
        text(&out)
    );

    // Invalid arguments: an error result with the loop's text, not a protocol error.
    let out = client
        .call_tool(CallToolRequestParams::new("read").with_arguments(args(json!({}))))
        .await
        .unwrap();
    assert_eq!(out.is_error, Some(true));
    assert!(text(&out).contains("path"), "{}", text(&out));

    // A tool failure is an error result too.
    let out = client
        .call_tool(
            CallToolRequestParams::new("bash")
                .with_arguments(args(json!({"command": "echo oops; exit 3"}))),
        )
        .await
        .unwrap();
    assert_eq!(out.is_error, Some(true));
    assert!(
        text(&out).ends_with("Command exited with code 3"),
        "{}",
        text(&out)
    );

    // An unknown tool is a JSON-RPC error.
    let err = client
        .call_tool(CallToolRequestParams::new("nope").with_arguments(args(json!({}))))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");

    // Parallel calls run concurrently.
    assert_parallel_calls_overlap(client.peer()).await;

    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_cancelled_call_kills_its_processes() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    let client = connect(dir.path(), &[], agent.path()).await;
    let marker = format!("mcp-cancel-marker-{}", std::process::id());
    assert_cancel_kills_the_tree(client.peer(), &marker).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn flags_and_allowed_tools_narrow_what_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    let client = connect(dir.path(), &["--tools", "read,grep,bash"], agent.path()).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["read", "bash", "grep"]);
    client.cancel().await.unwrap();

    std::fs::write(
        agent.path().join("settings.json"),
        r#"{"allowedTools": ["read", "ls"]}"#,
    )
    .unwrap();
    let client = connect(dir.path(), &[], agent.path()).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["read", "ls"]);
    // Not served means not callable.
    let err = client
        .call_tool(
            CallToolRequestParams::new("bash").with_arguments(args(json!({"command": "true"}))),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("bash"), "{err}");
    client.cancel().await.unwrap();
}

/// A client that keeps every progress message it is sent.
#[derive(Clone, Default)]
struct ProgressLog(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl rmcp::ClientHandler for ProgressLog {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(params.message.unwrap_or_default());
    }
}

#[tokio::test]
async fn a_long_call_reports_progress() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    let log = ProgressLog::default();
    let command = tokio::process::Command::new(crate::bin()).configure(|c| {
        c.arg("mcp").arg("--cwd").arg(dir.path());
        c.env("CODING_AGENT_DIR", agent.path());
    });
    let client = log
        .clone()
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap();
    let out = client
        .call_tool(
            CallToolRequestParams::new("bash").with_arguments(args(json!({
                "command": "for i in 1 2 3 4 5; do echo step $i; sleep 0.15; done"
            }))),
        )
        .await
        .unwrap();
    assert_eq!(out.is_error, Some(false));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let messages = log.0.lock().unwrap().clone();
    assert!(
        messages.iter().any(|m| m.starts_with("step ")),
        "no progress with output: {messages:?}"
    );
    client.cancel().await.unwrap();
}

/// A client that keeps every log message it is sent.
#[derive(Clone, Default)]
struct LogMessages(std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>>);

#[allow(deprecated)]
impl rmcp::ClientHandler for LogMessages {
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push((
            serde_json::to_value(params.level)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            params.data,
        ));
    }
}

#[tokio::test]
#[allow(deprecated)]
async fn log_messages_follow_the_level_the_client_sets() {
    use rmcp::model::{LoggingLevel, SetLevelRequestParams};
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x\n").unwrap();
    let log = LogMessages::default();
    let command = tokio::process::Command::new(crate::bin()).configure(|c| {
        c.arg("mcp").arg("--cwd").arg(dir.path());
        c.env("CODING_AGENT_DIR", agent.path());
    });
    let client = log
        .clone()
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap();
    let caps = client.peer_info().unwrap().capabilities.clone();
    assert!(caps.logging.is_some(), "logging capability offered");
    let read = || {
        client.call_tool(
            CallToolRequestParams::new("read").with_arguments(args(json!({"path": "a.txt"}))),
        )
    };
    let settle = || tokio::time::sleep(Duration::from_millis(300));

    // Nothing before the client asks.
    read().await.unwrap();
    settle().await;
    assert!(log.0.lock().unwrap().is_empty());

    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap();
    read().await.unwrap();
    settle().await;
    let messages = log.0.lock().unwrap().clone();
    assert!(
        messages
            .iter()
            .any(|(level, data)| level == "info" && data.to_string().contains("tools/call")),
        "{messages:?}"
    );
    // Info does not include debug.
    assert!(
        messages.iter().all(|(level, _)| level != "debug"),
        "{messages:?}"
    );

    // Error and above: a read logs nothing at that level.
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .unwrap();
    settle().await;
    let before = log.0.lock().unwrap().len();
    read().await.unwrap();
    settle().await;
    assert_eq!(log.0.lock().unwrap().len(), before);
    client.cancel().await.unwrap();
}
