//! Checks shared by the MCP server tests over stdio and over HTTP.

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RoleClient};
use serde_json::{Value, json};

/// A JSON object as call arguments.
pub fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// The text blocks of a result, joined.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// Two bash calls from one client run at once: each marks that it started
/// and waits (up to a minute) for the other's mark, so calls run one after
/// the other would print "alone" instead of "together". The marks go in
/// the server's working directory, the one place a sandboxed command
/// surely shares with another.
pub async fn assert_parallel_calls_overlap(peer: &Peer<RoleClient>) {
    let tag = format!(
        "overlap-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    );
    let call = |me: &str, other: &str| {
        let command = format!(
            "touch '{tag}-{me}'; for i in $(seq 1200); do [ -e '{tag}-{other}' ] && {{ echo together; exit 0; }}; sleep 0.05; done; echo alone"
        );
        peer.call_tool(
            CallToolRequestParams::new("bash").with_arguments(args(json!({"command": command}))),
        )
    };
    let (a, b) = tokio::join!(call("a", "b"), call("b", "a"));
    assert_eq!(text(&a.unwrap()), "together\n");
    assert_eq!(text(&b.unwrap()), "together\n");
}

/// A bash call dropped after a moment (the client sends
/// notifications/cancelled) leaves no process behind, a setsid'd one included.
pub async fn assert_cancel_kills_the_tree(peer: &Peer<RoleClient>, marker: &str) {
    let call = peer.call_tool(CallToolRequestParams::new("bash").with_arguments(args(json!({
        "command": format!("setsid bash -c 'exec -a {marker} sleep 300' & exec -a {marker} sleep 301")
    }))));
    let _ = tokio::time::timeout(Duration::from_millis(800), call).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = std::process::Command::new("pgrep")
            .args(["-f", marker])
            .output()
            .unwrap();
        if out.stdout.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "survivors: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
