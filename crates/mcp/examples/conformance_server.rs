//! The server side of the MCP conformance suite, on agent-mcp's public API
//! only: `cargo xtask conformance` runs the suite's `server-stateless`
//! scenario against this program.
//!
//! It serves what `coding-agent mcp --http` serves (the built-in tools over
//! [`McpHttpServer`], with a log sink) plus the tools the scenario calls to
//! exercise a server, written as any tool author would write them:
//! - `test_logging_tool` logs through `tracing` while it runs (what a tool
//!   does to say what it is doing);
//! - `test_streaming_elicitation` streams partial results while it runs
//!   (our tools' way to report on a long call; they cannot ask the person).
//!
//! `conformance_server DIR` serves DIR's files on a free loopback port and
//! prints `URL TOKEN` on stdout once it listens; the suite's requests get
//! the token from a preload script (`xtask/src/conformance.rs`).

use agent_mcp::{McpHttpOptions, McpHttpServer, McpLogSink, McpToolServer};
use agent_tool::prelude::*;
use tracing_subscriber::layer::SubscriberExt;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .ok_or("usage: conformance_server DIR")?;
    let sink = McpLogSink::new();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(sink.layer()))?;
    let logging = tool("test_logging_tool")
        .description("Logs three messages while it runs.")
        .execute(|_: serde_json::Value, _cx| async move {
            tracing::info!("starting the work");
            tracing::warn!("the work is half done");
            tracing::info!("the work is done");
            Ok(AgentToolResult::text("logged"))
        });
    let streaming = tool("test_streaming_elicitation")
        .description("Streams three partial results, then answers.")
        .execute(|_: serde_json::Value, cx: ToolCallContext| async move {
            for step in 1..=3 {
                cx.updates
                    .send(AgentToolResult::text(format!("step {step} of 3")));
                tokio::task::yield_now().await;
            }
            Ok(AgentToolResult::text("streamed"))
        });
    let mut tools = tools_builtin::all_tools(&dir);
    tools.extend([logging, streaming]);
    let server = McpToolServer::new(
        tools,
        agent_tool::Extensions::new().with(agent_tool::WorkingDir::new(&dir)),
    )
    .with_log_sink(sink);
    let http = McpHttpServer::bind("127.0.0.1:0".parse()?, McpHttpOptions::default()).await?;
    println!("{} {}", http.url(), http.auth_token());
    http.serve(server, tokio_util::sync::CancellationToken::new())
        .await;
    Ok(())
}
