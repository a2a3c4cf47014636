//! `--sandbox`: the policy from flags and settings, and the seven tools
//! built on operations that enforce it (and the permission rules' Read
//! paths).

use std::path::Path;

use agent_sandbox::{SandboxMode, SandboxPolicy};
use coding_agent::Settings;
use coding_agent::permissions::PermissionRules;
use tools_builtin::ToolSet;

/// Parses `--sandbox off|read-only|workspace-write`.
pub fn parse_mode(text: &str) -> Result<SandboxMode, String> {
    SandboxMode::parse(text)
        .ok_or_else(|| format!("expected off, read-only or workspace-write, not {text:?}"))
}

/// The policy for `cwd` and the built-in tools confined by it.
///
/// With `confine_if_possible` (the MCP server) and no mode from the flag or
/// the user's settings, the default is workspace-write where the kernel can
/// enforce it, and off (with a warning) where it cannot.
pub fn tools(
    cwd: &Path,
    settings: &Settings,
    flag: Option<SandboxMode>,
    confine_if_possible: bool,
) -> Result<(ToolSet, SandboxPolicy), String> {
    let chosen = flag.is_some() || settings.get_path("sandbox.mode").is_some();
    let default = if confine_if_possible && !chosen {
        SandboxMode::WorkspaceWrite
    } else {
        SandboxMode::Off
    };
    let mut policy = SandboxPolicy::from_settings(
        agent_sandbox::SandboxSettings {
            user: settings.get("sandbox"),
            project: settings.project_value("sandbox"),
        },
        cwd,
        flag,
        default,
    )
    .map_err(|e| format!("cannot use the settings: {e}"))?;
    if confine_if_possible
        && !chosen
        && policy.is_on()
        && let Err(why) = agent_sandbox::commands_can_be_confined(&policy)
    {
        eprintln!("coding-agent: warning: serving without the sandbox: {why}");
        policy = SandboxPolicy::off();
    }
    let operations = agent_sandbox::operations(&policy).map_err(|e| format!("sandbox: {e}"))?;
    tracing::info!(mode = %policy.mode, roots = ?policy.roots, "sandbox");
    // The Read rules also judge the files grep, find and ls open.
    let rules = PermissionRules::from_settings(settings, cwd)
        .map_err(|e| format!("cannot use the settings: {e}"))?;
    // The roots are canonical; a working directory reached through a
    // symlink must be named the same way, or every path in it looks outside.
    let cwd = if policy.is_on() {
        agent_tool::path::canonical(cwd)
    } else {
        cwd.to_path_buf()
    };
    let tools = ToolSet::new(&cwd)
        .operations(operations)
        .read_rules(rules.read_filter());
    Ok((tools, policy))
}
