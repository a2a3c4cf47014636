//! MCP servers from the settings' `mcpServers` and `--mcp-config` files,
//! connected as tools of the session.
//!
//! A server the project's settings define (the project is trusted) runs in
//! the command sandbox when there is one: the sandbox may have changed the
//! files it runs, so it must not start outside it.
//!
//! Where a stdio server starts depends on whose it is. A project's server
//! starts in the session's working directory (`--cwd`), and its relative
//! `cwd` is relative to it: trust pinned the project's files, so the
//! project's `sh srv.sh` must run the project's `srv.sh`, never a file of
//! the same name wherever the agent happened to be started. The user's own
//! servers (user settings, `--mcp-config`) start in the user's home
//! directory, and a relative `cwd` is relative to it: the project is
//! written by someone else, and much runs what it finds in its working
//! directory (`python -m`, `npx`, `uv run`, `cargo run`). Every server
//! learns the session's directory from `CODING_AGENT_CWD`.

use std::path::Path;
use std::sync::Arc;

use agent_sandbox::SandboxPolicy;
use agent_sandbox::SandboxedPrograms;
use coding_agent::{Settings, ToolDefinition};

/// The servers of the settings' `mcpServers` and of the `--mcp-config`
/// files (a later file's server replaces an earlier one of the same name),
/// each with the agent directory's sign-in tokens, and each stdio server
/// starting in `project` or the user's home (see the module docs).
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
    let from_project = project_server_names(settings);
    let home = user_start_dir();
    for config in &mut configs {
        config.tokens = tokens.clone();
        let base = if from_project.contains(&config.name) {
            project
        } else {
            home.as_path()
        };
        if let agent_mcp::McpTransport::Stdio { cwd, env, .. } = &mut config.transport {
            // `join` keeps an absolute `cwd` as it is.
            *cwd = Some(match cwd.take() {
                Some(dir) => base.join(dir),
                None => base.to_path_buf(),
            });
            env.entry("CODING_AGENT_CWD".into())
                .or_insert_with(|| project.display().to_string());
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
    let from_project = project_server_names(settings);
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

/// Connects the one server `name` again (its tools, and its later
/// tool-list changes), as [`connect`] does at start.
pub async fn connect_one(
    name: &str,
    files: &[std::path::PathBuf],
    settings: &Settings,
    project: &Path,
    policy: &SandboxPolicy,
) -> Result<(Vec<ToolDefinition>, agent_mcp::McpToolUpdates), String> {
    let mut configs = configured(files, settings, project)?;
    configs.retain(|c| c.name == name);
    if configs.is_empty() {
        return Err(format!("no MCP server named {name}"));
    }
    if policy.is_on() && project_server_names(settings).iter().any(|n| n == name) {
        let programs = SandboxedPrograms::new(policy.clone())
            .map_err(|e| format!("the project's MCP server {name} is not started: {e}"))?;
        let programs = Arc::new(programs);
        configs[0].launcher = Some(agent_mcp::McpLauncher::new(move |program, cwd| {
            programs.command(cwd, program)
        }));
    }
    let connected = agent_mcp::connect_mcp_servers(&configs).await;
    if connected.tools.is_empty()
        && let Some(warning) = connected.warnings.first()
    {
        return Err(warning.clone());
    }
    Ok((connected.tools, connected.updates))
}

/// The names of the servers the project's own settings define.
fn project_server_names(settings: &Settings) -> Vec<String> {
    settings
        .applied_project_value("mcpServers")
        .and_then(|v| v.as_object())
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Where the user's own programs (MCP servers, extensions) start: the home
/// directory, a place the project does not write (`/` without one).
pub fn user_start_dir() -> std::path::PathBuf {
    std::env::home_dir()
        .filter(|h| h.is_absolute())
        .unwrap_or_else(|| std::path::PathBuf::from("/"))
}
