//! `--remote` and `coding-agent helper`: the built-in tools on another
//! machine, through `agent_remote`.

use std::path::{Path, PathBuf};

use agent_remote::{Remote, RemoteOptions, RemoteTarget};
use agent_sandbox::SandboxMode;
use coding_agent::Settings;
use coding_agent::permissions::PermissionRules;
use tools_builtin::ToolSet;

/// Connects to `uri`, offering this binary as the helper to upload.
pub async fn connect(
    uri: &str,
    args: &crate::args::RemoteArgs,
    sandbox: Option<SandboxMode>,
) -> Result<Remote, String> {
    connect_with(uri, args, sandbox, false).await
}

/// [`connect`], asking the helper to confine where it can when no mode is
/// given (the MCP server's default).
pub async fn connect_with(
    uri: &str,
    args: &crate::args::RemoteArgs,
    sandbox: Option<SandboxMode>,
    confine_if_possible: bool,
) -> Result<Remote, String> {
    let target = RemoteTarget::parse(uri).map_err(|e| e.to_string())?;
    let mut options = RemoteOptions::default().ssh_options(args.ssh_options.clone());
    if let Ok(exe) = std::env::current_exe() {
        options = options.helper_binary(exe);
    }
    if let Some(mode) = sandbox {
        options = options.sandbox(mode.to_string());
    }
    let options = options.confine_if_possible(confine_if_possible && sandbox.is_none());
    let remote = Remote::connect(target, options)
        .await
        .map_err(|e| e.to_string())?;
    if (sandbox.is_some_and(|m| m != SandboxMode::Off) || confine_if_possible)
        && remote.hello().sandbox.is_none()
    {
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
    let rules = PermissionRules::from_settings(settings, cwd)
        .map_err(|e| format!("cannot use the settings: {e}"))?;
    Ok(ToolSet::new(cwd)
        .operations(remote.operations())
        .queue(remote.mutation_queue())
        .read_rules(rules.read_filter())
        .all()
        .into_iter()
        .map(|d| remote.with_remote_home(d))
        .collect())
}

/// `coding-agent helper`: serves the operations of this machine on stdin
/// and stdout, confined as `--sandbox` and the settings here say.
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
    let mut settings = match Settings::load(&cwd) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("coding-agent helper: cannot use the settings file {e}");
            return 2;
        }
    };
    crate::trust_cmd::apply(&mut settings, &cwd, false);
    let (_, policy) =
        match crate::sandbox::tools(&cwd, &settings, args.sandbox, args.confine_if_possible) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("coding-agent helper: {e}");
                return 2;
            }
        };
    let operations = match agent_sandbox::operations(&policy) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("coding-agent helper: sandbox: {e}");
            return 2;
        }
    };
    // The sandbox's roots are canonical: name the directory the same way.
    let cwd = if policy.is_on() {
        agent_tool::path::canonical(&cwd)
    } else {
        cwd
    };
    let mut config = agent_remote::helper::HelperConfig::new(operations, cwd);
    config.version = env!("CARGO_PKG_VERSION").to_string();
    match agent_remote::helper::serve(tokio::io::stdin(), tokio::io::stdout(), config).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("coding-agent helper: {e}");
            1
        }
    }
}
