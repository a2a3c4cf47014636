//! A server's progress notifications reach the running call as updates,
//! in order and before its result (issue 34, item 12).

use std::sync::{Arc, Mutex};

use agent_mcp::McpToolServer;
use agent_tool::ToolUpdateSink;
use agent_tool::prelude::*;
use serde_json::json;

/// A tool that reports three steps, letting the server send each one.
fn three_steps() -> ToolDefinition {
    tool("steps").description("Reports three steps.").execute(
        |_: Value, cx: ToolCallContext| async move {
            for step in 1..=3 {
                cx.updates
                    .send(AgentToolResult::text(format!("step {step} of 3")));
                tokio::task::yield_now().await;
            }
            Ok(AgentToolResult::text("done"))
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_our_server_reaches_the_call_as_updates_in_order() {
    let server = McpToolServer::new(vec![three_steps()], Extensions::new());
    let (url, token, stop) = crate::serve_http(server).await;
    let configs = agent_mcp::parse_mcp_servers(&json!({
        "local": {"url": url, "headers": {"Authorization": format!("Bearer {token}")}}
    }))
    .unwrap();
    let connected = agent_mcp::connect_mcp_servers(&configs).await;
    assert!(connected.warnings.is_empty(), "{:?}", connected.warnings);
    let steps = &connected.tools[0];
    assert_eq!(steps.name(), "mcp__local__steps");

    let seen: Arc<Mutex<Vec<Value>>> = Default::default();
    let mut cx = ToolCallContext::new("c1");
    let record = seen.clone();
    cx.updates = ToolUpdateSink::new(move |partial: AgentToolResult| {
        record
            .lock()
            .unwrap()
            .push(json!({"text": partial.text_content(), "details": partial.details}));
    });
    let result = steps.execute(json!({}), cx).await.unwrap();
    assert_eq!(result.text_content(), "done");
    // Each step arrived before the result did (a late one would be lost).
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        (1..=3)
            .map(|n| json!({
                "text": format!("step {n} of 3"),
                "details": {"progress": n as f64, "total": null, "message": format!("step {n} of 3")}
            }))
            .collect::<Vec<_>>()
    );
    stop.cancel();
}
