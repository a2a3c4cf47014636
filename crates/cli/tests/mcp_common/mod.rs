//! Checks shared by the MCP server tests over stdio and over HTTP.

#![allow(dead_code)]

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

/// Two 0.6 s bash calls from one client finish together, in well under 1.2 s.
pub async fn assert_parallel_calls_overlap(peer: &Peer<RoleClient>) {
    let started = Instant::now();
    let sleep = || {
        peer.call_tool(
            CallToolRequestParams::new("bash")
                .with_arguments(args(json!({"command": "sleep 0.6; echo done"}))),
        )
    };
    let (a, b) = tokio::join!(sleep(), sleep());
    assert_eq!(text(&a.unwrap()), "done\n");
    assert_eq!(text(&b.unwrap()), "done\n");
    assert!(
        started.elapsed() < Duration::from_millis(1100),
        "{:?}",
        started.elapsed()
    );
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
