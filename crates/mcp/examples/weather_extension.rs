//! The weather tool as a coding-agent extension in Rust: a tool definition
//! with its prompt snippet, served over MCP on stdio by `agent-mcp`. Load it
//! with `coding-agent -e target/debug/examples/weather_extension`.

use agent_mcp::McpToolServer;
use agent_mcp::rmcp::ServiceExt;
use agent_tool::prelude::*;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "agent_tool::serde")]
#[schemars(crate = "agent_tool::schemars")]
struct Params {
    /// City name, e.g. "Berlin".
    city: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let weather = tool("weather")
        .description("Get the current weather for a city: temperature and wind speed.")
        .prompt_snippet("Get the current weather for a city")
        .guideline("Use weather when the user asks about current conditions in a place; do not guess the weather.")
        .execute(|p: Params, _cx| async move {
            let (celsius, kmh) = match p.city.to_lowercase().as_str() {
                "berlin" => (12.5, 9.0),
                "tokyo" => (21.0, 14.0),
                _ => return Err(ToolError::new(format!("Unknown city: {}", p.city))),
            };
            Ok(AgentToolResult::text(format!("{}: {celsius:.1}°C, wind {kmh:.1} km/h", p.city)))
        });
    let server = McpToolServer::new(vec![weather], Default::default());
    server
        .serve(agent_mcp::rmcp::transport::stdio())
        .await?
        .waiting()
        .await?;
    Ok(())
}
