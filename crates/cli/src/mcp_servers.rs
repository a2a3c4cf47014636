//! MCP servers from the settings' `mcpServers` and `--mcp-config` files,
//! connected as tools of the session.

use std::sync::Arc;

use coding_agent::{Settings, ToolDefinition};

/// The servers' tools, and their later tool-list changes.
pub type Connected = (
    Vec<Arc<dyn ToolDefinition>>,
    Option<agent_mcp::McpToolUpdates>,
);

/// Connects every configured server; a server that cannot be used is a
/// one-line warning, a configuration that cannot be read is an error.
pub async fn connect(
    files: &[std::path::PathBuf],
    settings: &Settings,
) -> Result<Connected, String> {
    let mut configs = Vec::new();
    if let Some(value) = settings.get("mcpServers") {
        configs.extend(agent_mcp::parse_mcp_servers(value).map_err(|e| e.to_string())?);
    }
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: invalid JSON: {e}", file.display()))?;
        let servers = value.get("mcpServers").unwrap_or(&value);
        let parsed = agent_mcp::parse_mcp_servers(servers)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        // A later file's server of the same name replaces an earlier one.
        for config in parsed {
            configs.retain(|c: &agent_mcp::McpServerConfig| c.name != config.name);
            configs.push(config);
        }
    }
    if configs.is_empty() {
        return Ok((Vec::new(), None));
    }
    let connected = agent_mcp::connect_mcp_servers(&configs).await;
    for warning in &connected.warnings {
        eprintln!("coding-agent: warning: {warning}");
    }
    Ok((connected.tools, Some(connected.updates)))
}
