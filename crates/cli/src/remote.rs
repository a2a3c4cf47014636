//! `--remote` and `coding-agent helper`: the built-in tools on another
//! machine, through `agent_remote`.

use std::path::{Path, PathBuf};

use agent_remote::helper::{HelperConfig, HelperRefusal};
use agent_remote::protocol::Start;
use agent_remote::{Remote, RemoteOptions, RemoteTarget};
use agent_sandbox::{SandboxLayer, SandboxMode};
use agent_tool::{ToolDefinition, decorate};
use coding_agent::Settings;
use tools_builtin::ToolSet;

/// Connects to `uri`, offering this binary as the helper to upload. The
/// helper applies the sandbox of this machine's `settings` and `flag` (see
/// [`crate::sandbox::spec`]; `confine_if_possible` for the MCP server),
/// tightened by the remote's settings, or refuses; only a default mode
/// nobody chose may give way to none there, with a warning.
pub async fn connect(
    uri: &str,
    args: &crate::args::RemoteArgs,
    settings: &Settings,
    flag: Option<SandboxMode>,
    confine_if_possible: bool,
) -> Result<Remote, String> {
    let sandbox = crate::sandbox::spec(settings, flag, confine_if_possible)?;
    let target = RemoteTarget::parse(uri).map_err(|e| e.to_string())?;
    let mut options = RemoteOptions::default().ssh_options(args.ssh_options.clone());
    if let Ok(exe) = std::env::current_exe() {
        options = options.helper_binary(exe);
    }
    let best_effort = !sandbox.is_chosen() && sandbox.mode() != SandboxMode::Off;
    let remote = Remote::connect(target, options.sandbox(sandbox))
        .await
        .map_err(|e| e.to_string())?;
    if best_effort && remote.hello().sandbox.is_none() {
        eprintln!(
            "coding-agent: warning: the tools on {} run without the sandbox (it cannot be enforced there)",
            remote.target()
        );
    }
    Ok(remote)
}

/// A directory on the remote: absolute, or relative to the remote's
/// working directory.
pub fn remote_dir(remote: &Remote, dir: Option<&Path>) -> PathBuf {
    match dir {
        Some(d) if d.is_absolute() => d.to_path_buf(),
        Some(d) => remote.cwd().join(d),
        None => remote.cwd().to_path_buf(),
    }
}

/// The built-in tools for `cwd` on `remote`, with the permission rules'
/// Read paths of `settings` (judged on the remote's paths) and `~` meaning
/// the remote user's home.
pub fn tools(
    remote: &Remote,
    cwd: &Path,
    settings: &Settings,
) -> Result<Vec<coding_agent::ToolDefinition>, String> {
    let rules = settings
        .permission_rules(cwd)
        .map_err(|e| format!("cannot use the settings: {e}"))?;
    Ok(ToolSet::new(cwd)
        .operations(remote.operations())
        .queue(remote.mutation_queue())
        .read_rules(rules.read_filter())
        .all()
        .into_iter()
        .map(|d| with_remote_home(remote, d))
        .collect())
}

/// `definition` with `~` in its declared path arguments meaning the
/// remote user's home: the rewrite happens before validation and every
/// hook, so permission rules judge the remote path, and `~/x` never
/// names this machine's home on the remote.
fn with_remote_home(remote: &Remote, definition: ToolDefinition) -> ToolDefinition {
    let Some(home) = remote.hello().home.clone() else {
        return definition;
    };
    let names: Vec<String> = definition
        .path_arguments()
        .iter()
        .map(|a| a.name.clone())
        .collect();
    if names.is_empty() {
        return definition;
    }
    decorate(definition)
        .prepare(move |mut args| {
            for name in &names {
                let Some(raw) = args.get(name).and_then(|v| v.as_str()) else {
                    continue;
                };
                // As the path resolver reads it: an optional leading `@`.
                let bare = raw.strip_prefix('@').unwrap_or(raw);
                let rewritten = if bare == "~" {
                    Some(home.display().to_string())
                } else {
                    bare.strip_prefix("~/")
                        .map(|rest| home.join(rest).display().to_string())
                };
                if let Some(path) = rewritten {
                    args[name.as_str()] = serde_json::Value::from(path);
                }
            }
            Ok(args)
        })
        .build()
}

/// `coding-agent helper`: serves the operations of this machine on stdin
/// and stdout, confined as the client's start frame says (this machine's
/// settings may only tighten it).
pub async fn helper(args: &crate::args::HelperArgs) -> i32 {
    if let Some(version) = args.accepts {
        return i32::from(version != agent_remote::protocol::PROTOCOL_VERSION);
    }
    let cwd = match std::env::current_dir() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("coding-agent helper: cannot read the current directory: {e}");
            return 2;
        }
    };
    let setup = |start: &Start| -> Result<HelperConfig, HelperRefusal> {
        let policy = helper_policy(start, &cwd).map_err(HelperRefusal)?;
        let operations = agent_sandbox::operations(&policy)
            .map_err(|e| HelperRefusal(format!("sandbox: {e}")))?;
        // The sandbox's roots are canonical: name the directory the same way.
        let cwd = if policy.is_on() {
            agent_tool::path::canonical(&cwd)
        } else {
            cwd.clone()
        };
        let mut config = HelperConfig::new(operations, cwd);
        config.version = env!("CARGO_PKG_VERSION").to_string();
        config.sandbox_mode = policy.mode;
        Ok(config)
    };
    match agent_remote::helper::serve(tokio::io::stdin(), tokio::io::stdout(), setup).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("coding-agent helper: {e}");
            1
        }
    }
}

/// The policy the helper applies: the client's spec, tightened by this
/// machine's settings (the user's and the project's, both only tighten),
/// resolved for `cwd`; a chosen mode this machine cannot enforce is an
/// error, never no sandbox.
fn helper_policy(start: &Start, cwd: &Path) -> Result<agent_sandbox::SandboxPolicy, String> {
    let mut settings =
        Settings::load(cwd).map_err(|e| format!("cannot use the settings file {e}"))?;
    crate::trust_cmd::apply(&mut settings, cwd, false);
    let mut spec = start.sandbox.clone();
    for (value, source) in [
        (settings.get("sandbox"), "remote settings"),
        (settings.project_value("sandbox"), "remote project"),
    ] {
        if value.is_some() {
            let layer = SandboxLayer::from_value(value, source)
                .map_err(|e| format!("cannot use the settings: {e}"))?;
            spec.tighten(layer);
        }
    }
    crate::sandbox::resolve(&spec, cwd, true)
}
