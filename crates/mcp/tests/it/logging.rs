//! SEP-2575: a request of the 2026-07-28 revision names its log level in
//! its `_meta`; the events raised while it is served go on its own
//! response at that level and above, and a request that names none gets no
//! `notifications/message` (issue 34, item 18).

use agent_mcp::{McpLogSink, McpToolServer};
use agent_tool::prelude::*;
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

/// A tool that logs at three levels while it runs.
fn logs() -> ToolDefinition {
    tool("logs")
        .description("Logs while it runs.")
        .execute(|_: Value, _cx| async move {
            tracing::info!("starting");
            tracing::warn!("half done");
            tracing::debug!("a detail");
            Ok(AgentToolResult::text("logged"))
        })
}

/// The JSON-RPC messages of one `tools/call` of the 2026-07-28 revision
/// (no session, everything in `_meta`), as the server sent them.
pub async fn call_2026(url: &str, token: &str, tool: &str, meta_extra: Value) -> Vec<Value> {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let (Some(meta), Some(extra)) = (meta.as_object_mut(), meta_extra.as_object()) {
        meta.extend(extra.clone());
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": tool, "arguments": {}, "_meta": meta}});
    // reqwest is built without a TLS provider of its own.
    agent_ai::providers::install_tls_provider();
    let text = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // An SSE stream's `data:` lines, or one JSON body.
    text.lines()
        .map(|l| l.trim())
        .map(|l| l.strip_prefix("data:").map(str::trim).unwrap_or(l))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

/// The text of each log message among `frames` that carries plain text
/// (the tool's own; the server's carry fields too), and whether the last
/// frame is the result.
fn messages(frames: &[Value]) -> (Vec<String>, bool) {
    let texts = frames
        .iter()
        .filter(|f| f["method"] == "notifications/message")
        .filter_map(|f| f["params"]["data"].as_str().map(str::to_string))
        .collect();
    let last_is_result = frames.last().is_some_and(|f| f["result"].is_object());
    (texts, last_is_result)
}

#[tokio::test]
async fn a_request_gets_log_messages_at_the_level_it_names_and_none_without() {
    let sink = McpLogSink::new();
    // This thread's subscriber: the test's runtime runs every task here.
    let _subscriber =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(sink.layer()));
    let server = McpToolServer::new(vec![logs()], Extensions::new()).with_log_sink(sink);
    let (url, token, stop) = crate::serve_http(server).await;

    let info = call_2026(
        &url,
        &token,
        "logs",
        json!({"io.modelcontextprotocol/logLevel": "info"}),
    )
    .await;
    assert_eq!(
        messages(&info),
        (vec!["starting".into(), "half done".into()], true),
        "{info:#?}"
    );

    let warning = call_2026(
        &url,
        &token,
        "logs",
        json!({"io.modelcontextprotocol/logLevel": "warning"}),
    )
    .await;
    assert_eq!(
        messages(&warning),
        (vec!["half done".into()], true),
        "{warning:#?}"
    );

    let silent = call_2026(&url, &token, "logs", json!({})).await;
    assert!(
        !silent
            .iter()
            .any(|f| f["method"] == "notifications/message"),
        "{silent:#?}"
    );
    assert_eq!(
        silent.last().unwrap()["result"]["content"][0]["text"],
        "logged"
    );
    stop.cancel();
}

/// A call's progress goes out on its own response before its result, and
/// the response carries nothing else: no request of the server's own.
#[tokio::test]
async fn a_response_stream_carries_the_calls_progress_then_its_result_only() {
    let steps = tool("steps").description("Reports three steps.").execute(
        |_: Value, cx: ToolCallContext| async move {
            for step in 1..=3 {
                cx.updates
                    .send(AgentToolResult::text(format!("step {step}")));
                tokio::task::yield_now().await;
            }
            Ok(AgentToolResult::text("done"))
        },
    );
    let server = McpToolServer::new(vec![steps], Extensions::new());
    let (url, token, stop) = crate::serve_http(server).await;
    let frames = call_2026(&url, &token, "steps", json!({"progressToken": "p1"})).await;
    let methods: Vec<&str> = frames
        .iter()
        .map(|f| f["method"].as_str().unwrap_or("(result)"))
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/progress",
            "notifications/progress",
            "notifications/progress",
            "(result)"
        ],
        "{frames:#?}"
    );
    assert_eq!(frames[2]["params"]["message"], "step 3");
    assert_eq!(frames[3]["id"], 7);
    stop.cancel();
}
