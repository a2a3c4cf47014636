//! The client side of the MCP conformance suite, on agent-mcp's public API
//! only: `cargo xtask conformance` runs the suite with this program.
//!
//! The suite starts a scenario's server and runs `conformance_client URL`
//! with `MCP_CONFORMANCE_SCENARIO` (the scenario's name) and, for some,
//! `MCP_CONFORMANCE_CONTEXT` (a JSON object, e.g. a pre-registered
//! client's `client_id` and `client_secret`). Whatever the scenario, the
//! client does what an agent does with a configured server: connect (and
//! sign in when the server asks, through [`HeadlessPrompt`], since the
//! suite's authorization server consents without a person), list the
//! tools, and call each one with arguments made from its schema.

use std::process::ExitCode;

use agent_core::ToolCallContext;
use agent_mcp::McpServerConfig;
use agent_mcp::oauth::{AuthPrompt, HeadlessPrompt, TokenStore};
use serde_json::{Map, Value, json};

/// The client ID metadata document the suite's scenarios expect a client
/// to name (it serves the document itself).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance_client SERVER_URL");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let Ok(tokens) = tempfile::tempdir() else {
        eprintln!("cannot make a folder for the tokens");
        return ExitCode::FAILURE;
    };
    let mut config = McpServerConfig::http("conformance", url);
    config.startup_timeout = std::time::Duration::from_secs(20);
    config.tool_timeout = std::time::Duration::from_secs(20);
    config.tokens = Some(TokenStore::new(tokens.path().join("mcp-auth")));
    config.auth_prompt = Some(AuthPrompt::new(HeadlessPrompt::default()));
    config.oauth.client_metadata_url = Some(CLIENT_METADATA_URL.to_string());
    if let Some(id) = context.get("client_id").and_then(Value::as_str) {
        config.oauth.client_id = Some(id.to_string());
        config.oauth.client_secret = context
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    eprintln!("scenario {scenario:?}");
    let connected = agent_mcp::connect_mcp_servers(std::slice::from_ref(&config)).await;
    if !connected.warnings.is_empty() {
        for warning in &connected.warnings {
            eprintln!("{warning}");
        }
        return ExitCode::FAILURE;
    }
    for tool in &connected.tools {
        // Plain text, then text a header cannot carry as it is (non-ASCII,
        // blanks at the edges), for the servers that mirror arguments into
        // `Mcp-Param-*` headers.
        let plain = arguments_for(&tool.meta().parameters, "test");
        let unsafe_text = arguments_for(&tool.meta().parameters, " caf\u{e9} \u{2615} ");
        let mut calls = vec![plain.clone()];
        if unsafe_text != plain {
            calls.push(unsafe_text);
        }
        for args in calls {
            let outcome = tool
                .execute(args, ToolCallContext::new("conformance"))
                .await;
            match outcome {
                Ok(result) => {
                    eprintln!(
                        "{}: ok, {} content blocks",
                        tool.name(),
                        result.content.len()
                    )
                }
                // A tool's error is the server's answer, not the client's failure.
                Err(e) => eprintln!("{}: error result: {e}", tool.name()),
            }
        }
    }
    ExitCode::SUCCESS
}

/// Arguments that satisfy a simple object schema: each required property
/// gets a value of its type (`text` for strings).
fn arguments_for(schema: &Value, text: &str) -> Value {
    let mut args = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    if let (Some(properties), Some(required)) = (properties, required) {
        for name in required.iter().filter_map(Value::as_str) {
            let kind = properties
                .get(name)
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("string");
            let value = match kind {
                "number" | "integer" => json!(1),
                "boolean" => json!(true),
                "array" => json!([]),
                "object" => json!({}),
                _ => json!(text),
            };
            args.insert(name.to_string(), value);
        }
    }
    Value::Object(args)
}
