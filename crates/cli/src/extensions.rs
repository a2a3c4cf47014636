//! `-e/--extension`, `<agent dir>/extensions/` and the trusted project's
//! extensions, started as MCP extensions of the session.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_mcp::{ExtensionOptions, ExtensionSource, ExtensionSpec, LoadedExtensions};
use agent_sandbox::{SandboxPolicy, SandboxedPrograms};
use coding_agent::Settings;

use crate::args::RunArgs;

/// The extensions to start, in order: `-e` ones, then (unless
/// `--no-extensions`) the user's directory, then the trusted project's
/// (its `.pi/extensions/` and its settings' `extensions` list). A path named
/// twice starts once.
pub fn specs(args: &RunArgs, settings: &Settings, cwd: &Path) -> Vec<ExtensionSpec> {
    let mut specs: Vec<ExtensionSpec> = args
        .extensions
        .iter()
        .map(|p| {
            ExtensionSpec::new(
                std::path::absolute(p).unwrap_or_else(|_| p.clone()),
                ExtensionSource::Flag,
            )
        })
        .collect();
    if !args.no_extensions {
        if let Some(dir) = coding_agent::agent_dir() {
            for file in coding_agent::non_executable_extension_files(&dir.join("extensions")) {
                eprintln!(
                    "coding-agent: warning: {} is skipped: an extension is an executable (chmod +x, with a #! line) that speaks MCP on its stdin and stdout; Pi's TypeScript extensions do not run here (see docs/extensions.md)",
                    file.display()
                );
            }
            specs.extend(
                agent_mcp::discover_extensions(&dir.join("extensions"))
                    .into_iter()
                    .map(|p| ExtensionSpec::new(p, ExtensionSource::User)),
            );
        }
        // Only once trusted: held back otherwise, so not applied.
        if let Some(list) = settings
            .applied_project_value("extensions")
            .and_then(|v| v.as_array())
        {
            specs.extend(
                list.iter()
                    .filter_map(|v| v.as_str())
                    .map(|s| ExtensionSpec::new(cwd.join(s), ExtensionSource::Project)),
            );
        }
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    specs.retain(|s| {
        let key = agent_tool::path::canonical(&s.path);
        let first = !seen.contains(&key);
        seen.push(key);
        first
    });
    specs
}

fn seconds(setting: Option<f64>, default: Duration) -> Duration {
    match setting {
        Some(s) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s.min(86_400.0)),
        _ => default,
    }
}

/// Starts the extensions; each one that cannot be used is a warning on
/// stderr, never fatal.
pub async fn load(
    args: &RunArgs,
    settings: &Settings,
    cwd: &Path,
    policy: &SandboxPolicy,
) -> LoadedExtensions {
    let mut specs = specs(args, settings, cwd);
    if specs.is_empty() {
        return LoadedExtensions::default();
    }
    let mut options = ExtensionOptions::default();
    // A project's extensions start in the project (whatever the agent's own
    // directory), the user's in the home directory: much runs what it finds
    // in its working directory, and the project is written by someone else.
    options.working_dir = Some(cwd.to_path_buf());
    options.user_working_dir = Some(crate::mcp_servers::user_start_dir());
    let known = settings.known();
    options.startup_timeout = seconds(known.extension_startup_timeout_sec, options.startup_timeout);
    options.tool_timeout = seconds(known.extension_tool_timeout_sec, options.tool_timeout);
    // The project's extensions may have been written by a sandboxed command:
    // with the sandbox on they run inside it, or not at all.
    if policy.is_on() && specs.iter().any(|s| s.source == ExtensionSource::Project) {
        match SandboxedPrograms::new(policy.clone()) {
            Ok(programs) => {
                let programs = Arc::new(programs);
                options.project_launcher =
                    Some(agent_mcp::McpLauncher::new(move |program, dir| {
                        programs.command(dir, program)
                    }));
            }
            Err(e) => {
                eprintln!("coding-agent: warning: the project's extensions are not started: {e}");
                specs.retain(|s| s.source != ExtensionSource::Project);
            }
        }
    }
    let loaded = agent_mcp::load_extensions(&specs, &options).await;
    for warning in &loaded.warnings {
        eprintln!("coding-agent: warning: {warning}");
    }
    loaded
}
