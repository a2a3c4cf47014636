//! Running the agent: text, print and JSON modes, and a line-by-line prompt
//! loop on a terminal (the terminal UI is `tui.rs`).

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_ai::providers::scripted::ScriptedClient;
use agent_ai::{Message, Model, StopReason};
use agent_core::AgentEvent;
use coding_agent::permissions::{PermissionGate, PermissionRules};
use coding_agent::{AgentSession, AgentSessionBuilder, Settings, ToolSelection};
use serde_json::json;

use crate::args::{Mode, RunArgs};
use crate::render::TextRenderer;

/// Absolute working directory from `--cwd` or the process's.
pub fn working_dir(cwd: Option<&std::path::Path>) -> Result<PathBuf, String> {
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

/// The tools of a session and the rules that gate them.
pub struct SessionTools {
    /// Skills and prompt templates.
    pub resources: coding_agent::agent_skills::Resources,
    /// The seven built-ins (confined or not).
    pub builtins: Vec<coding_agent::ToolDefinition>,
    /// MCP servers' tools.
    pub extra: Vec<coding_agent::ToolDefinition>,
    /// Permission rules and who answers their questions.
    pub permissions: PermissionGate,
    /// Where the conversation is recorded.
    pub session: Option<agent_sessions::SessionManager>,
    /// The mutation queue of the tools' file system, when it is not this
    /// machine's (a remote keys files by its own paths).
    pub queue: Option<coding_agent::FileMutationQueue>,
    /// The file operations of the machine the tools run on, when it is not
    /// this one (the project's context files are read there).
    pub remote_files: Option<Arc<dyn agent_tool::FileOps>>,
    /// Extensions (`-e`, the extension directories).
    pub extensions: Vec<Arc<dyn coding_agent::Extension>>,
    /// Ties the codemode tool's stored values to the built session.
    pub codemode: Option<crate::codemode::Binding>,
}

/// Assembles the session from flags, like any program using the crates would.
pub fn build_session(
    args: &RunArgs,
    cwd: &std::path::Path,
    settings: Settings,
    client: Arc<dyn agent_ai::ModelClient>,
    model: Model,
    tools: SessionTools,
) -> AgentSession {
    let SessionTools {
        resources,
        builtins,
        extra: extra_tools,
        permissions,
        session,
        queue,
        remote_files,
        extensions,
        codemode,
    } = tools;
    let mut builder = AgentSessionBuilder::new(model, client).resources(resources);
    if let Some(queue) = queue {
        builder = builder.tool_extension(queue);
    }
    if let Some(files) = remote_files {
        builder = builder.context_files_from(files);
    }
    for extension in extensions {
        builder = builder.extension(extension);
    }
    if let Some(session) = session {
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
        .cwd(cwd)
        .builtin_tools(builtins)
        .settings(settings)
        .selection(selection(args));
    for tool in extra_tools {
        builder = builder.tool(tool);
    }
    if let Some(p) = &args.system_prompt {
        builder = builder.system_prompt(p.clone());
    }
    for a in &args.append_system_prompt {
        builder = builder.append_system_prompt(a.clone());
    }
    // Settings are given, so building cannot fail on them.
    let session = builder.build().expect("settings were loaded by the caller");
    if let Some(codemode) = codemode {
        codemode.bind(&session);
    }
    session
}

fn list_tools(session: &AgentSession) -> serde_json::Value {
    let registry = session.registry();
    let active = registry.active_names();
    serde_json::Value::Array(
        registry
            .definitions()
            .iter()
            .map(|d| {
                json!({
                    "name": d.name(),
                    "label": d.label(),
                    "description": d.description(),
                    "promptSnippet": d.prompt_snippet(),
                    "promptGuidelines": d.prompt_guidelines(),
                    "parameters": d.parameters(),
                    "active": active.iter().any(|n| n == d.name()),
                    "source": match registry.source(d.name()) {
                        Some(coding_agent::ToolSource::Builtin) => json!("builtin"),
                        Some(coding_agent::ToolSource::Extension(path)) => json!({"extension": path}),
                        _ => json!("program"),
                    },
                })
            })
            .collect(),
    )
}

/// Exit code of a finished run: 1 when its last assistant message failed.
fn exit_code(session: &AgentSession) -> i32 {
    let messages = session.agent().messages();
    match messages.iter().rev().find_map(Message::as_assistant) {
        Some(a) if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) => 1,
        _ => 0,
    }
}

/// Ctrl-C: the first cancels the run (tools and their processes included),
/// the second exits.
fn install_ctrl_c(session: &AgentSession) {
    let agent = session.agent().clone();
    tokio::spawn(async move {
        let mut presses = 0;
        while tokio::signal::ctrl_c().await.is_ok() {
            presses += 1;
            if presses >= 2 || !agent.is_running() {
                agent_sandbox::shut_down();
                std::process::exit(130);
            }
            eprintln!("\ncancelling... (press Ctrl-C again to exit)");
            agent.abort();
        }
    });
}

/// Attaches the output for `mode`.
pub fn attach_output(session: &AgentSession, mode: Mode, print: bool, cwd: PathBuf) {
    if mode == Mode::Json {
        session.agent().subscribe(|event: &AgentEvent| {
            if let Ok(line) = serde_json::to_string(event) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
        });
    } else if !print {
        let renderer = Mutex::new(TextRenderer::new(session.registry(), cwd));
        session.agent().subscribe(move |event| {
            if let Ok(mut r) = renderer.lock() {
                r.handle(event);
            }
        });
    }
}

/// The remote a continued session names in its header, when the file is
/// one of ours (in the agent directory's `sessions`): a session file from
/// elsewhere (`--session PATH` into a repository, a `--session-dir` in a
/// workspace) could name `exec:ANY COMMAND`, so its remote is only shown.
fn header_remote(session: &agent_sessions::SessionManager, args: &RunArgs) -> Option<String> {
    let remote = session.header().remote.clone()?;
    let file = session.session_file()?;
    let file = agent_tool::path::canonical(file);
    // Only the agent's own folder: a --session-dir may sit in a workspace
    // where a command could have planted a file.
    let _ = args;
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

/// `coding-agent [OPTIONS] [PROMPT]...`.
pub async fn run(args: RunArgs) -> i32 {
    if let Some(search) = &args.list_models {
        return match crate::provider::registry() {
            Ok(registry) => {
                crate::print_line(&crate::provider::list_models(&registry, search));
                0
            }
            Err(e) => {
                eprintln!("{e}");
                2
            }
        };
    }
    let cwd = match working_dir(args.cwd.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("coding-agent: {e}");
            return 2;
        }
    };
    let mut settings = match Settings::load(&cwd) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("coding-agent: cannot use the settings file {e}");
            return 2;
        }
    };
    // Only the terminal text mode asks; print, JSON and RPC modes never do.
    let may_ask = !args.print && args.mode == Mode::Text && !args.list_tools;
    let trusted = crate::trust_cmd::apply(&mut settings, &cwd, may_ask);
    let resources = crate::resources::load(&args, &settings, &cwd, trusted);
    let listing = args.list_tools || args.print_system_prompt;
    // The session is opened first: a continued one names its remote.
    let mut recorded = if listing {
        None
    } else {
        match crate::session_cmd::open(&args, &cwd).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("coding-agent: {e}");
                return 2;
            }
        }
    };
    let remote_uri = match &args.remote.remote {
        Some(uri) => Some(uri.clone()),
        None => recorded.as_ref().and_then(|s| header_remote(s, &args)),
    };
    // The sandbox this machine's settings and flags decide travels there.
    let remote = match &remote_uri {
        Some(uri) => {
            match crate::remote::connect(uri, &args.remote, &settings, args.sandbox, false).await {
                Ok(r) => Some(r),
                Err(e) => {
                    eprintln!("coding-agent: {e}");
                    return 2;
                }
            }
        }
        None => None,
    };
    if let (Some(session), Some(uri)) = (recorded.as_mut(), &remote_uri) {
        session.set_remote(uri.clone());
    }
    // Where the tools run: here, or the remote's directory.
    let tools_cwd = remote
        .as_ref()
        .map(|r| r.cwd().to_path_buf())
        .unwrap_or_else(|| cwd.clone());
    let queue = remote.as_ref().map(|r| r.mutation_queue());
    let remote_files = remote.as_ref().map(|r| r.operations().files);
    let (local_tools, policy) = match crate::sandbox::tools(&cwd, &settings, args.sandbox, false) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("coding-agent: {e}");
            return 2;
        }
    };
    let mut builtins = match &remote {
        Some(r) => match crate::remote::tools(r, &tools_cwd, &settings) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("coding-agent: {e}");
                return 2;
            }
        },
        None => local_tools.all(),
    };
    // Registered inactive: `--tools +codemode` or `defaultTools` turns it on.
    let codemode = crate::codemode::definition(&settings).map(|(definition, binding)| {
        builtins.push(definition);
        binding
    });
    let local_cwd = cwd.clone();
    let cwd = tools_cwd;
    let rules = match PermissionRules::from_settings(&settings, &cwd) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("coding-agent: cannot use the settings: {e}");
            return 2;
        }
    };
    let (mcp_tools, mcp_updates) =
        match crate::mcp_servers::connect(&args.mcp_config, &settings, &local_cwd, &policy).await {
            Ok(t) => t,
            Err(e) => {
                eprintln!("coding-agent: {e}");
                return 2;
            }
        };
    // Extensions run on this machine: beside tools that act on a remote
    // they would read and write the wrong files. Asked for by name, that
    // is an error; found in a directory, they are left out with a word.
    let loaded = if remote.is_some() {
        if !args.extensions.is_empty() {
            eprintln!(
                "coding-agent: -e cannot be used with --remote: extensions run on this machine, while the tools act on the remote's files; serve the tool from the remote as an MCP server instead"
            );
            return 2;
        }
        if !crate::extensions::specs(&args, &settings, &local_cwd).is_empty() {
            eprintln!(
                "coding-agent: warning: extensions are not loaded with --remote (they would run on this machine, not on the remote)"
            );
        }
        agent_mcp::LoadedExtensions::default()
    } else {
        crate::extensions::load(&args, &settings, &local_cwd, &policy).await
    };
    let extension_updates = loaded.updates;
    let extensions: Vec<Arc<dyn coding_agent::Extension>> = loaded
        .extensions
        .into_iter()
        .map(|e| e as Arc<dyn coding_agent::Extension>)
        .collect();
    if args.list_tools || args.print_system_prompt {
        let session = build_session(
            &args,
            &cwd,
            settings,
            Arc::new(ScriptedClient::new(Vec::new())),
            Model::new("none", "none"),
            SessionTools {
                resources,
                builtins,
                extra: mcp_tools,
                permissions: PermissionGate::new(rules, None, &cwd, "this mode"),
                session: None,
                queue,
                remote_files,
                extensions,
                codemode: None,
            },
        );
        if args.list_tools {
            crate::print_line(
                &serde_json::to_string_pretty(&list_tools(&session)).unwrap_or_default(),
            );
        } else {
            crate::print_line(&session.system_prompt());
        }
        return 0;
    }

    if args.mode == Mode::Rpc {
        let tools = SessionTools {
            resources,
            builtins,
            extra: mcp_tools,
            permissions: PermissionGate::new(rules, None, &cwd, "RPC mode"),
            session: recorded,
            queue,
            remote_files,
            extensions,
            codemode,
        };
        return rpc(args, cwd, settings, tools, mcp_updates, extension_updates).await;
    }
    let mut prompt = args.prompt.join(" ");
    let stdin_tty = std::io::stdin().is_terminal();
    if prompt.trim().is_empty() && !stdin_tty {
        let mut input = String::new();
        if std::io::stdin().read_to_string(&mut input).is_ok() {
            prompt = input;
        }
    }
    let interactive = prompt.trim().is_empty();
    if interactive && (!stdin_tty || args.print || args.mode == Mode::Json) {
        eprintln!("coding-agent: no prompt given (pass it as arguments or on stdin)");
        return 2;
    }
    let (client, model) = match crate::provider::select(&args, &settings) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    // The terminal UI asks in its own dialog.
    let tui = interactive && crate::tui::wanted(&args);
    let mut questions = None;
    // Approval is asked on a terminal in text mode; print and JSON modes refuse.
    let permissions = if tui {
        let (prompt, q) = agent_tui::permission_channel();
        questions = Some(q);
        PermissionGate::new(rules, Some(Arc::new(prompt)), &cwd, "text mode")
    } else if args.mode == Mode::Json {
        PermissionGate::new(rules, None, &cwd, "JSON mode")
    } else if args.print {
        PermissionGate::new(rules, None, &cwd, "print mode")
    } else if stdin_tty && std::io::stderr().is_terminal() {
        PermissionGate::new(
            rules,
            Some(Arc::new(crate::prompt::SharedTerminalPrompt)),
            &cwd,
            "text mode",
        )
    } else {
        PermissionGate::new(rules, None, &cwd, "text mode without a terminal")
    };
    let tools = SessionTools {
        resources,
        builtins,
        extra: mcp_tools,
        permissions,
        session: recorded,
        queue,
        remote_files,
        extensions,
        codemode,
    };
    let commands = crate::slash::commands(&args, &settings, &model, &cwd, trusted, &policy);
    let session = build_session(&args, &cwd, settings, client, model, tools);
    if let Some(updates) = mcp_updates {
        updates.keep_session_updated(&session);
    }
    for updates in &extension_updates {
        updates.keep_session_updated(&session);
    }
    if let Some(questions) = questions {
        // The UI draws the events, reads Ctrl+C as a key and ends on
        // SIGTERM and SIGHUP itself (restoring the terminal first).
        return crate::tui::run(session, questions, commands, &args).await;
    }
    attach_output(&session, args.mode, args.print, cwd.clone());
    install_ctrl_c(&session);
    let (agent, idle) = (session.agent().clone(), session.agent().clone());
    crate::signals::exit_on_terminate(
        move || agent.abort(),
        move || {
            let idle = idle.clone();
            async move { idle.wait_for_idle().await }
        },
    );

    if interactive {
        return repl(&session, &commands).await;
    }
    // A run that fails is reported by the output below (and the renderers);
    // only a refusal to run needs words here.
    let prompt = match session.expand_input(&prompt) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("coding-agent: {e}");
            return 1;
        }
    };
    if let Err(e) = session.prompt(prompt).await
        && e.outcome().is_none()
    {
        eprintln!("coding-agent: {e}");
        return 1;
    }
    report_usage(&session, &args);
    if args.print && args.mode == Mode::Text {
        let messages = session.agent().messages();
        if let Some(a) = messages.iter().rev().find_map(Message::as_assistant) {
            match a.stop_reason {
                StopReason::Error | StopReason::Aborted => {
                    // A provider's words, possibly a server's: shown, not obeyed.
                    eprintln!(
                        "coding-agent: {}",
                        coding_agent::sanitize_terminal_text(
                            a.error_message.as_deref().unwrap_or("the run failed")
                        )
                    );
                }
                _ => {
                    let text = a.text();
                    // On a terminal, what a repository made the model repeat
                    // must not drive it (clipboard writes, titles, cursor
                    // moves); a pipe gets the exact text.
                    if std::io::stdout().is_terminal() {
                        crate::print_line(&coding_agent::sanitize_terminal_text(&text));
                    } else {
                        crate::print_line(&text);
                    }
                }
            }
        }
    }
    exit_code(&session)
}

/// The session's tokens and cost at the end of a run: the last JSON line
/// in JSON mode (`{"type": "session_usage", "usage": {...}}`), a line on
/// stderr in text mode with `--verbose`.
fn report_usage(session: &AgentSession, args: &RunArgs) {
    let usage = session.usage();
    if args.mode == Mode::Json {
        let model = session.agent().model();
        let line = json!({
            "type": "session_usage",
            "model": format!("{}/{}", model.provider, model.id),
            "usage": usage,
        });
        crate::print_line(&line.to_string());
    } else if args.verbose {
        eprintln!(
            "usage: {} input, {} output, {} cache read, {} cache write tokens; cost ${:.6}",
            usage.input, usage.output, usage.cache_read, usage.cache_write, usage.cost.total
        );
    }
}

/// `--mode rpc`: the session driven over stdin and stdout.
async fn rpc(
    args: RunArgs,
    cwd: PathBuf,
    settings: Settings,
    tools: SessionTools,
    mcp_updates: Option<agent_mcp::McpToolUpdates>,
    extension_updates: Vec<agent_mcp::McpToolUpdates>,
) -> i32 {
    use coding_agent::rpc::{RpcOptions, RpcPermissionPrompt, run_rpc};
    let (client, model) = match crate::provider::select(&args, &settings) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let prompt = RpcPermissionPrompt::new();
    let mut tools = tools;
    tools.permissions = tools.permissions.with_prompt(Arc::new(prompt.clone()));
    let settings_for_rpc = settings.clone();
    let session = build_session(&args, &cwd, settings, client, model, tools);
    if let Some(updates) = mcp_updates {
        updates.keep_session_updated(&session);
    }
    for updates in &extension_updates {
        updates.keep_session_updated(&session);
    }
    let agent = session.agent().clone();
    crate::signals::exit_on_terminate(move || agent.abort(), || async {});
    let current = session.agent().model();
    let (models, resolve_model) = crate::provider::switchable(&args, &settings_for_rpc, &current);
    let options = RpcOptions {
        session_dir: args.session_dir.clone(),
        models,
        resolve_model,
        export_html: Some(crate::export_cmd::rpc_exporter(session.registry())),
        builtin_commands: agent_commands::BUILTIN
            .iter()
            .map(|c| (c.name.to_string(), c.description.to_string()))
            .collect(),
    };
    match run_rpc(
        session,
        prompt,
        options,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )
    .await
    {
        Ok(()) => 0,
        Err(e) => {
            tracing::debug!(error = %e, "the RPC client went away");
            0
        }
    }
}

/// Reads prompts line by line until end of input.
async fn repl(session: &AgentSession, commands: &agent_commands::Commands) -> i32 {
    loop {
        eprint!("> ");
        let Some(line) = crate::prompt::stdin_lines().next().await else {
            break;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if matches!(line, "/exit" | "/quit") {
            break;
        }
        if line.starts_with('/') && crate::slash::handle(commands, session, line).await {
            continue;
        }
        let line = match session.expand_input(line) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("coding-agent: {e}");
                continue;
            }
        };
        if let Err(e) = session.prompt(line).await
            && e.outcome().is_none()
        {
            eprintln!("coding-agent: {e}");
        }
    }
    0
}
