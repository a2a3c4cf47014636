//! agent-mcp's server and client talking to each other, and to fakes, over
//! loopback HTTP: progress delivered as a call's updates, per-request log
//! levels (SEP-2575), and OAuth client ID metadata documents.
#![cfg(feature = "http")]

mod logging;
mod oauth_cimd;
mod progress;

use agent_mcp::{McpHttpOptions, McpHttpServer, McpToolServer};
use tokio_util::sync::CancellationToken;

/// `server` on a loopback port: its URL, its bearer token, and what stops it.
pub async fn serve_http(server: McpToolServer) -> (String, String, CancellationToken) {
    let http = McpHttpServer::bind("127.0.0.1:0".parse().unwrap(), McpHttpOptions::default())
        .await
        .unwrap();
    let (url, token) = (http.url(), http.auth_token().to_string());
    let stop = CancellationToken::new();
    tokio::spawn(http.serve(server, stop.clone()));
    (url, token, stop)
}
