//! The built-in slash commands (`agent_commands`) wired to this binary's
//! model registry and session directory, for the line prompt and the
//! terminal UI.

use std::path::Path;
use std::sync::Arc;

use agent_commands::{CommandHandler, CommandSpec, Commands, Reloader};
use coding_agent::agent_ai::Model;
use coding_agent::{AgentSession, Settings};

use crate::args::RunArgs;

/// The commands of an interactive run: `/model` goes through the same
/// registry and flags as `--model`, `/new` and `/import` into
/// `--session-dir`.
pub fn commands(
    args: &RunArgs,
    settings: &Settings,
    current: &Model,
    cwd: &Path,
    trusted: bool,
    policy: &agent_sandbox::SandboxPolicy,
) -> Commands {
    let (models, resolve_model) = crate::provider::switchable(args, settings, current);
    let (args_for_reload, reload_cwd) = (args.clone(), cwd.to_path_buf());
    let reload: Reloader = Arc::new(move |session: &AgentSession| {
        // Trust is as it was at start: trusting happens outside the session.
        let settings =
            Settings::load(&reload_cwd).map_err(|e| format!("cannot use the settings file {e}"))?;
        let (resources, diagnostics) =
            crate::resources::load_quietly(&args_for_reload, &settings, &reload_cwd, trusted);
        let text = format!(
            "reloaded: {} skills, {} prompt templates (settings other than these apply to new sessions)",
            resources.skills.len(),
            resources.templates.len()
        );
        session.set_resources(resources);
        Ok(std::iter::once(text)
            .chain(diagnostics)
            .collect::<Vec<_>>()
            .join("\n"))
    });
    Commands {
        session_dir: args.session_dir.clone(),
        models,
        resolve_model,
        reload: Some(reload),
        custom: vec![mcp_command(args, settings, cwd, policy)],
        ..Commands::default()
    }
}

/// `/mcp`: the MCP servers of the settings and `--mcp-config` with their
/// state and tools; `/mcp disable NAME` takes a server's tools away for
/// this session, `/mcp enable NAME` or `/mcp reconnect NAME` connects it
/// again, `/mcp login NAME` signs in to an HTTP server (as `coding-agent mcp
/// login`) and connects it again.
fn mcp_command(
    args: &RunArgs,
    settings: &Settings,
    cwd: &Path,
    policy: &agent_sandbox::SandboxPolicy,
) -> (CommandSpec, CommandHandler) {
    let spec = CommandSpec {
        name: "mcp",
        arguments: "[enable|disable|reconnect|login NAME]",
        description: "The MCP servers: their state and tools; turn one off or on, connect it again, sign in",
    };
    let place = Arc::new(McpPlace {
        files: args.mcp_config.clone(),
        settings: settings.clone(),
        cwd: cwd.to_path_buf(),
        policy: policy.clone(),
        disabled: Default::default(),
    });
    let handler: CommandHandler = Arc::new(move |session: &AgentSession, rest: &str| {
        let (place, session) = (place.clone(), session.clone());
        let words: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
        Box::pin(async move {
            match words.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                [] => place.list(&session),
                ["disable", name] => place.disable(&session, name),
                ["enable", name] | ["reconnect", name] => place.reconnect(&session, name).await,
                ["login", name] => place.login(&session, name).await,
                _ => Err("usage: /mcp, or /mcp enable|disable|reconnect|login NAME".into()),
            }
        })
    });
    (spec, handler)
}

/// What `/mcp` works with: where servers are configured and how they start.
struct McpPlace {
    files: Vec<std::path::PathBuf>,
    settings: Settings,
    cwd: std::path::PathBuf,
    policy: agent_sandbox::SandboxPolicy,
    /// Servers turned off for this session.
    disabled: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl McpPlace {
    fn names(&self) -> Result<Vec<String>, String> {
        crate::mcp_servers::configured(&self.files, &self.settings, &self.cwd)
            .map(|configs| configs.into_iter().map(|c| c.name).collect())
    }

    fn known(&self, name: &str) -> Result<(), String> {
        let names = self.names()?;
        if names.iter().any(|n| n == name) {
            Ok(())
        } else if names.is_empty() {
            Err(
                "no MCP servers are configured (settings `mcpServers`, or --mcp-config FILE)"
                    .into(),
            )
        } else {
            Err(format!(
                "no MCP server named {} (configured: {})",
                coding_agent::sanitize_terminal_text(name),
                coding_agent::sanitize_terminal_text(&names.join(", "))
            ))
        }
    }

    /// The session's tools of server `name`.
    fn tools_of(session: &AgentSession, name: &str) -> Vec<String> {
        let prefix = format!("mcp__{name}__");
        session
            .registry()
            .names()
            .into_iter()
            .filter(|n| n.starts_with(&prefix))
            .collect()
    }

    fn list(&self, session: &AgentSession) -> Result<String, String> {
        let servers = self.names()?;
        if servers.is_empty() {
            return Ok(
                "no MCP servers are configured (settings `mcpServers`, or --mcp-config FILE)"
                    .into(),
            );
        }
        let active = session.registry().active_names();
        let disabled = self.disabled.lock().map(|d| d.clone()).unwrap_or_default();
        let lines: Vec<String> = servers
            .iter()
            .map(|server| {
                let tools = Self::tools_of(session, server);
                let on = tools.iter().filter(|n| active.contains(n)).count();
                let prefix = format!("mcp__{server}__");
                let short: Vec<&str> = tools.iter().filter_map(|n| n.strip_prefix(&prefix)).collect();
                let shown = coding_agent::sanitize_terminal_text(server);
                if disabled.contains(server) {
                    format!("{shown}: disabled for this session (/mcp enable {shown})")
                } else if tools.is_empty() {
                    format!("{shown}: not connected (/mcp reconnect {shown}; an HTTP server that needs sign-in: /mcp login {shown})")
                } else {
                    format!(
                        "{shown}: connected, {} tools ({on} active): {}",
                        tools.len(),
                        coding_agent::sanitize_terminal_text(&short.join(", "))
                    )
                }
            })
            .collect();
        Ok(lines.join("\n"))
    }

    fn disable(&self, session: &AgentSession, name: &str) -> Result<String, String> {
        self.known(name)?;
        let tools = Self::tools_of(session, name);
        session.replace_tools(&tools, Vec::new());
        if let Ok(mut disabled) = self.disabled.lock() {
            disabled.insert(name.to_string());
        }
        Ok(format!(
            "{}: disabled for this session, {} tools taken away (/mcp enable {} brings them back)",
            coding_agent::sanitize_terminal_text(name),
            tools.len(),
            coding_agent::sanitize_terminal_text(name)
        ))
    }

    async fn reconnect(&self, session: &AgentSession, name: &str) -> Result<String, String> {
        self.known(name)?;
        let (tools, updates) = crate::mcp_servers::connect_one(
            name,
            &self.files,
            &self.settings,
            &self.cwd,
            &self.policy,
        )
        .await?;
        let count = tools.len();
        let old = Self::tools_of(session, name);
        session.replace_tools(&old, tools);
        updates.keep_session_updated(session);
        if let Ok(mut disabled) = self.disabled.lock() {
            disabled.remove(name);
        }
        Ok(format!(
            "{}: connected, {count} tools",
            coding_agent::sanitize_terminal_text(name)
        ))
    }

    async fn login(&self, session: &AgentSession, name: &str) -> Result<String, String> {
        self.known(name)?;
        let configs = crate::mcp_servers::configured(&self.files, &self.settings, &self.cwd)?;
        let Some(config) = configs.into_iter().find(|c| c.name == name) else {
            return Err(format!("no MCP server named {name}"));
        };
        if !matches!(config.transport, agent_mcp::McpTransport::Http { .. }) {
            return Err(format!(
                "MCP server {} is started as a command (stdio); only HTTP servers sign in",
                coding_agent::sanitize_terminal_text(name)
            ));
        }
        agent_mcp::oauth::login(&config, &NoticePrompt, None)
            .await
            .map_err(|e| {
                format!(
                    "sign-in to {} failed: {e}",
                    coding_agent::sanitize_terminal_text(name)
                )
            })?;
        let connected = self.reconnect(session, name).await?;
        Ok(format!("signed in; {connected}"))
    }
}

/// Shows the sign-in address as a notice (the terminal UI owns the
/// screen, so nothing is printed past it) and opens the browser.
struct NoticePrompt;

impl agent_mcp::oauth::AuthorizationPrompt for NoticePrompt {
    fn open<'a>(
        &'a self,
        server: &'a str,
        url: &'a str,
    ) -> agent_core::BoxFuture<'a, Result<(), agent_mcp::oauth::PromptError>> {
        Box::pin(async move {
            let opened = agent_mcp::oauth::open_in_browser(url).unwrap_or(false);
            tracing::warn!(
                "to sign in to MCP server {server}, {} {url} (waiting for the browser to come back)",
                if opened {
                    "a browser opened"
                } else {
                    "open this address in a browser:"
                }
            );
            Ok(())
        })
    }
}

/// Runs `line` if it is a command, printing its output on stderr; `false`
/// when it is a prompt.
pub async fn handle(commands: &Commands, session: &AgentSession, line: &str) -> bool {
    match commands.run(session, line).await {
        None => false,
        Some(Ok(text)) => {
            eprintln!("{}", text.trim_end());
            true
        }
        Some(Err(e)) => {
            eprintln!("coding-agent: {e}");
            true
        }
    }
}

/// The commands for the terminal UI: the output becomes a transcript cell.
/// The second field is what the model selector lists besides
/// [`Commands::models`] (a scripted run's choices, see
/// [`crate::provider::scripted_choices`]).
pub struct TuiCommands(pub Commands, pub Vec<coding_agent::agent_ai::Model>);

impl agent_tui::SlashCommands for TuiCommands {
    fn run(
        &self,
        session: &AgentSession,
        line: &str,
    ) -> coding_agent::prelude::BoxFuture<'static, Option<Result<String, String>>> {
        let (commands, session, line) = (self.0.clone(), session.clone(), line.to_string());
        Box::pin(async move { commands.run(&session, &line).await })
    }

    fn models(&self) -> Vec<coding_agent::agent_ai::Model> {
        if self.0.models.is_empty() {
            self.1.clone()
        } else {
            self.0.models.clone()
        }
    }

    fn sessions(
        &self,
        session: &AgentSession,
    ) -> coding_agent::prelude::BoxFuture<'static, Vec<agent_sessions::SessionInfo>> {
        let (commands, session) = (self.0.clone(), session.clone());
        // Every session file's head is read: off the UI task.
        Box::pin(async move {
            tokio::task::spawn_blocking(move || commands.sessions(&session))
                .await
                .unwrap_or_default()
        })
    }

    fn session_dir(&self, session: &AgentSession) -> Option<std::path::PathBuf> {
        self.0.sessions_dir(session)
    }

    fn commands(&self) -> Vec<agent_tui::completion::CommandHint> {
        self.0
            .specs()
            .iter()
            .map(|c| agent_tui::completion::CommandHint {
                name: c.name.to_string(),
                description: if c.arguments.is_empty() {
                    c.description.to_string()
                } else {
                    format!("{} - {}", c.arguments, c.description)
                },
            })
            .collect()
    }
}
