//! Start-up as one step: [`assemble`] turns the flags into a built
//! [`AgentSession`], in one order that lives only here:
//!
//! 1. the working directory and the settings (global, then project);
//! 2. project trust (the project's code-running values applied or held
//!    back), then skills and prompt templates;
//! 3. the session file (a continued one may name its remote), then the
//!    remote, if any;
//! 4. the tools: the sandbox policy and the seven built-ins (here or on the
//!    remote), codemode, the permission rules, MCP servers, extensions;
//! 5. the mode's [`SessionPlan`] (model, client, who answers permission
//!    questions), then the session itself, kept up to date with the MCP
//!    servers' and extensions' tool lists.
//!
//! Each mode (`crate::modes`) only says what it needs in step 5 and then
//! drives the session it gets back.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_permissions::{PermissionGate, PermissionPrompt};
use agent_sandbox::SandboxPolicy;
use coding_agent::{AgentSession, AgentSessionBuilder, Settings, ToolSelection};

use crate::args::RunArgs;

/// The process's exit code when start-up stops; the reason is already on
/// stderr.
pub type ExitCode = i32;

/// Absolute working directory from `--cwd` or the process's.
pub fn working_dir(cwd: Option<&Path>) -> Result<PathBuf, String> {
    let dir = match cwd {
        Some(c) => c.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let dir =
        std::path::absolute(&dir).map_err(|e| format!("invalid --cwd {}: {e}", dir.display()))?;
    if !dir.is_dir() {
        return Err(format!("--cwd {} is not a directory", dir.display()));
    }
    Ok(dir)
}

/// Whether the session will run prompts or is built only to be described
/// (`--list-tools`, `--print-system-prompt`): a described one opens no
/// session file and starts no codemode worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// Built to be listed or printed, never run.
    Describe,
    /// Built to run prompts.
    Run,
}

/// What start-up has decided when the mode plans its session.
pub struct Prepared<'a> {
    /// The settings, trust applied.
    pub settings: &'a Settings,
    /// Where the tools run: the working directory, or the remote's.
    pub cwd: &'a Path,
    /// Whether the project is trusted.
    pub trusted: bool,
    /// The sandbox of this machine's tools, MCP servers and extensions.
    pub policy: &'a SandboxPolicy,
}

/// What a mode gives start-up for its session.
pub struct SessionPlan {
    /// The model's client.
    pub client: Arc<dyn agent_ai::ModelClient>,
    /// The model.
    pub model: agent_ai::Model,
    /// Who answers a rule's question; `None`: nobody, the call is refused.
    pub asker: Option<Arc<dyn PermissionPrompt>>,
    /// The mode's name in a refusal ("no one can approve it in ...").
    pub label: &'static str,
}

/// The assembled session and what its mode planned besides it.
pub struct Startup<T> {
    /// The session, built and bound.
    pub session: AgentSession,
    /// Where the tools run: the working directory, or the remote's.
    pub cwd: PathBuf,
    /// What the mode's plan returned beside the [`SessionPlan`].
    pub planned: T,
}

/// Assembles the session for `args` (see the module docs for the order).
/// `may_ask` lets trust ask its question on a terminal; `plan` runs once
/// the tools are ready, and may stop start-up with an exit code (its
/// reason printed).
pub async fn assemble<T>(
    args: &RunArgs,
    purpose: Purpose,
    may_ask: bool,
    plan: impl FnOnce(&Prepared<'_>) -> Result<(SessionPlan, T), ExitCode>,
) -> Result<Startup<T>, ExitCode> {
    let fail = |e: String| {
        eprintln!("coding-agent: {e}");
        2
    };
    let local_cwd = working_dir(args.cwd.as_deref()).map_err(fail)?;
    let mut settings = Settings::load(&local_cwd)
        .map_err(|e| fail(format!("cannot use the settings file {e}")))?;
    let trusted = crate::trust_cmd::apply(&mut settings, &local_cwd, may_ask);
    let resources = crate::resources::load(args, &settings, &local_cwd, trusted);
    // The session is opened first: a continued one names its remote.
    let mut recorded = match purpose {
        Purpose::Describe => None,
        Purpose::Run => crate::session_cmd::open(args, &local_cwd)
            .await
            .map_err(fail)?,
    };
    let remote_uri = match &args.remote.remote {
        Some(uri) => Some(uri.clone()),
        None => recorded.as_ref().and_then(header_remote),
    };
    // The sandbox this machine's settings and flags decide travels there.
    let remote = match &remote_uri {
        Some(uri) => Some(
            crate::remote::connect(uri, &args.remote, &settings, args.sandbox, false)
                .await
                .map_err(fail)?,
        ),
        None => None,
    };
    if let (Some(session), Some(uri)) = (recorded.as_mut(), &remote_uri) {
        session.set_remote(uri.clone());
    }
    // Where the tools run: here, or the remote's directory.
    let cwd = remote
        .as_ref()
        .map(|r| r.cwd().to_path_buf())
        .unwrap_or_else(|| local_cwd.clone());
    let (local_tools, policy) =
        crate::sandbox::tools(&local_cwd, &settings, args.sandbox, false).map_err(fail)?;
    let mut builtins = match &remote {
        Some(r) => crate::remote::tools(r, &cwd, &settings).map_err(fail)?,
        None => local_tools.all(),
    };
    // Registered inactive: `--tools +codemode` or `defaultTools` turns it on.
    let codemode = crate::codemode::definition(&settings).map(|(definition, binding)| {
        builtins.push(definition);
        binding
    });
    let rules = settings
        .permission_rules(&cwd)
        .map_err(|e| fail(format!("cannot use the settings: {e}")))?;
    let (mcp_tools, mcp_updates) =
        crate::mcp_servers::connect(&args.mcp_config, &settings, &local_cwd, &policy)
            .await
            .map_err(fail)?;
    let loaded = extensions(args, &settings, &local_cwd, &policy, remote.is_some()).await?;

    let prepared = Prepared {
        settings: &settings,
        cwd: &cwd,
        trusted,
        policy: &policy,
    };
    let (session_plan, planned) = plan(&prepared)?;
    let permissions = PermissionGate::new(rules, session_plan.asker, &cwd, session_plan.label);
    let mut builder =
        AgentSessionBuilder::new(session_plan.model, session_plan.client).resources(resources);
    if let Some(remote) = &remote {
        // A remote keys files by its own paths, and the project's context
        // files are read there.
        builder = builder
            .tool_extension(remote.mutation_queue())
            .context_files_from(remote.operations().files);
    }
    for extension in &loaded.extensions {
        builder = builder.extension(extension.clone() as Arc<dyn coding_agent::Extension>);
    }
    if let Some(session) = recorded {
        builder = builder.session_manager(session);
    }
    if let Some(window) = args.context_window {
        builder = builder.context_window(window);
    }
    if let Some(level) = args.thinking {
        builder = builder.thinking_level(level);
    }
    let mut builder = builder
        .permissions(permissions)
        .cwd(&cwd)
        .builtin_tools(builtins)
        .settings(settings)
        .selection(selection(args));
    for tool in mcp_tools {
        builder = builder.tool(tool);
    }
    if let Some(p) = &args.system_prompt {
        builder = builder.system_prompt(p.clone());
    }
    for a in &args.append_system_prompt {
        builder = builder.append_system_prompt(a.clone());
    }
    // Settings are given, so building cannot fail on them.
    let session = builder.build().expect("settings were loaded above");
    if purpose == Purpose::Run {
        if let Some(codemode) = codemode {
            codemode.bind(&session);
        }
        if let Some(updates) = mcp_updates {
            updates.keep_session_updated(&session);
        }
        for updates in &loaded.updates {
            updates.keep_session_updated(&session);
        }
    }
    Ok(Startup {
        session,
        cwd,
        planned,
    })
}

/// The extensions of the run. They run on this machine: beside tools that
/// act on a remote they would read and write the wrong files. Asked for by
/// name, that is an error; found in a directory, they are left out with a
/// word.
async fn extensions(
    args: &RunArgs,
    settings: &Settings,
    local_cwd: &Path,
    policy: &SandboxPolicy,
    remote: bool,
) -> Result<agent_mcp::LoadedExtensions, ExitCode> {
    if !remote {
        return Ok(crate::extensions::load(args, settings, local_cwd, policy).await);
    }
    if !args.extensions.is_empty() {
        eprintln!(
            "coding-agent: -e cannot be used with --remote: extensions run on this machine, while the tools act on the remote's files; serve the tool from the remote as an MCP server instead"
        );
        return Err(2);
    }
    if !crate::extensions::specs(args, settings, local_cwd).is_empty() {
        eprintln!(
            "coding-agent: warning: extensions are not loaded with --remote (they would run on this machine, not on the remote)"
        );
    }
    Ok(agent_mcp::LoadedExtensions::default())
}

fn selection(args: &RunArgs) -> ToolSelection {
    ToolSelection {
        tools: args.tools.as_deref().map(ToolSelection::parse_list),
        exclude_tools: args
            .exclude_tools
            .as_deref()
            .map(ToolSelection::parse_list)
            .unwrap_or_default(),
        no_tools: args.no_tools,
        no_builtin_tools: args.no_builtin_tools,
    }
}

/// The remote a continued session names in its header, when the file is
/// one of ours (in the agent directory's `sessions`): a session file from
/// elsewhere (`--session PATH` into a repository, a `--session-dir` in a
/// workspace, where a command could have planted it) could name
/// `exec:ANY COMMAND`, so its remote is only shown.
fn header_remote(session: &agent_sessions::SessionManager) -> Option<String> {
    let remote = session.header().remote.clone()?;
    let file = agent_tool::path::canonical(session.session_file()?);
    let ours = coding_agent::agent_dir()
        .map(|d| d.join("sessions"))
        .is_some_and(|dir| file.starts_with(agent_tool::path::canonical(&dir)));
    if ours {
        Some(remote)
    } else {
        eprintln!(
            "coding-agent: warning: the session file names the remote {remote:?}; it is not one of your session files, so pass --remote to use it"
        );
        None
    }
}
