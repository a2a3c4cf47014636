//! `--sandbox`: the policy from flags and settings, and the seven tools
//! built on operations that enforce it (and the permission rules' Read
//! paths).

use std::path::Path;

use agent_sandbox::{SandboxMode, SandboxPolicy, SandboxSpec};
use coding_agent::Settings;
use tools_builtin::ToolSet;

/// Parses `--sandbox off|read-only|workspace-write`.
pub fn parse_mode(text: &str) -> Result<SandboxMode, String> {
    SandboxMode::parse(text)
        .ok_or_else(|| format!("expected off, read-only or workspace-write, not {text:?}"))
}

/// The sandbox the flag and the settings decide, before it is resolved
/// for a workspace: here, or sent to a remote helper, which resolves it
/// there. With `confine_if_possible` (the MCP server) the mode, when the
/// flag and the settings name none, is workspace-write.
pub fn spec(
    settings: &Settings,
    flag: Option<SandboxMode>,
    confine_if_possible: bool,
) -> Result<SandboxSpec, String> {
    let default = if confine_if_possible {
        SandboxMode::WorkspaceWrite
    } else {
        SandboxMode::Off
    };
    SandboxSpec::from_settings(
        agent_sandbox::SandboxSettings {
            user: settings.get("sandbox"),
            project: settings.project_value("sandbox"),
        },
        flag,
        default,
    )
    .map_err(|e| format!("cannot use the settings: {e}"))
}

/// The policy `spec` gives for `cwd` on this machine. A default mode
/// (nobody chose it) gives way to none, with a warning, where commands
/// cannot be confined here; for a chosen one `Err` says why, and
/// `refuse_unconfinable` decides whether that is a refusal (a remote
/// helper) or the policy stands and each command is refused (here).
pub fn resolve(
    spec: &SandboxSpec,
    cwd: &Path,
    refuse_unconfinable: bool,
) -> Result<SandboxPolicy, String> {
    let policy = spec
        .resolve(cwd)
        .map_err(|e| format!("cannot use the settings: {e}"))?;
    // Here, a chosen mode needs no probe: each command checks.
    if !policy.is_on() || (spec.is_chosen() && !refuse_unconfinable) {
        return Ok(policy);
    }
    match agent_sandbox::commands_can_be_confined(&policy) {
        Ok(()) => Ok(policy),
        Err(why) if spec.is_chosen() => Err(format!(
            "the {} sandbox cannot be enforced on this machine: {why}",
            policy.mode
        )),
        Err(why) => {
            eprintln!("coding-agent: warning: serving without the sandbox: {why}");
            Ok(SandboxPolicy::off())
        }
    }
}

/// The policy for `cwd` and the built-in tools confined by it.
///
/// With `confine_if_possible` (the MCP server) and no mode from the flag or
/// the settings, the default is workspace-write where the kernel can
/// enforce it, and off (with a warning) where it cannot.
pub fn tools(
    cwd: &Path,
    settings: &Settings,
    flag: Option<SandboxMode>,
    confine_if_possible: bool,
) -> Result<(ToolSet, SandboxPolicy), String> {
    let policy = resolve(&spec(settings, flag, confine_if_possible)?, cwd, false)?;
    let operations = agent_sandbox::operations(&policy).map_err(|e| format!("sandbox: {e}"))?;
    tracing::info!(mode = %policy.mode, roots = ?policy.roots, "sandbox");
    // The Read rules also judge the files grep, find and ls open.
    let rules = settings
        .permission_rules(cwd)
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
