//! MCP servers from the settings' `mcpServers` and `--mcp-config` files,
//! connected as tools of the session.
//!
//! A server the project's settings define (the project is trusted) runs in
//! the command sandbox when there is one: the sandbox may have changed the
//! files it runs, so it must not start outside it.
//!
//! Every stdio server starts in the session's working directory (`--cwd`),
//! not in the directory the agent was started from: a server's relative
//! `cwd` is relative to it too. Trust pinned the project's files, so the
//! project's `sh srv.sh` must run the project's `srv.sh`, never a file of
//! the same name wherever the agent happened to be started.

use std::path::Path;
use std::sync::Arc;

use agent_sandbox::SandboxPolicy;
use agent_sandbox::SandboxedPrograms;
use coding_agent::{Settings, ToolDefinition};

/// The servers of the settings' `mcpServers` and of the `--mcp-config`
/// files (a later file's server replaces an earlier one of the same name),
/// each with the agent directory's sign-in tokens, and each stdio server
/// starting in `project` (see the module docs).
pub fn configured(
    files: &[std::path::PathBuf],
    settings: &Settings,
    project: &Path,
) -> Result<Vec<agent_mcp::McpServerConfig>, String> {
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
    let tokens = agent_mcp::oauth::TokenStore::in_agent_dir();
    for config in &mut configs {
        config.tokens = tokens.clone();
        if let agent_mcp::McpTransport::Stdio { cwd, .. } = &mut config.transport {
            // `join` keeps an absolute `cwd` as it is.
            *cwd = Some(match cwd.take() {
                Some(dir) => project.join(dir),
                None => project.to_path_buf(),
            });
        }
    }
    Ok(configs)
}

/// The servers' tools, and their later tool-list changes.
pub type Connected = (Vec<ToolDefinition>, Option<agent_mcp::McpToolUpdates>);

/// Connects every configured server; a server that cannot be used is a
/// one-line warning, a configuration that cannot be read is an error.
pub async fn connect(
    files: &[std::path::PathBuf],
    settings: &Settings,
    project: &Path,
    policy: &SandboxPolicy,
) -> Result<Connected, String> {
    let mut configs = configured(files, settings, project)?;
    let from_project: Vec<String> = settings
        .applied_project_value("mcpServers")
        .and_then(|v| v.as_object())
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    if policy.is_on() && configs.iter().any(|c| from_project.contains(&c.name)) {
        match SandboxedPrograms::new(policy.clone()) {
            Ok(programs) => {
                let programs = Arc::new(programs);
                let launcher =
                    agent_mcp::McpLauncher::new(move |program, cwd| programs.command(cwd, program));
                for config in configs
                    .iter_mut()
                    .filter(|c| from_project.contains(&c.name))
                {
                    config.launcher = Some(launcher.clone());
                }
            }
            Err(e) => {
                // Never unconfined in silence: the project's servers stay off.
                eprintln!("coding-agent: warning: the project's MCP servers are not started: {e}");
                configs.retain(|c| !from_project.contains(&c.name));
            }
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
