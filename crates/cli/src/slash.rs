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
        custom: vec![mcp_command(args, settings, cwd)],
        ..Commands::default()
    }
}

/// `/mcp`: the MCP servers of the settings and `--mcp-config`, each with
/// the tools it gave this session (a server that failed at start has
/// none; its warning was printed then).
fn mcp_command(args: &RunArgs, settings: &Settings, cwd: &Path) -> (CommandSpec, CommandHandler) {
    let servers: Result<Vec<String>, String> =
        crate::mcp_servers::configured(&args.mcp_config, settings, cwd)
            .map(|configs| configs.into_iter().map(|c| c.name).collect());
    let spec = CommandSpec {
        name: "mcp",
        arguments: "",
        description: "List the MCP servers and the tools each gave this session",
    };
    let handler: CommandHandler = Arc::new(move |session: &AgentSession, _rest: &str| {
        let servers = servers.clone()?;
        if servers.is_empty() {
            return Ok(
                "no MCP servers are configured (settings `mcpServers`, or --mcp-config FILE)"
                    .into(),
            );
        }
        let registry = session.registry();
        let names = registry.names();
        let active = registry.active_names();
        let lines: Vec<String> = servers
            .iter()
            .map(|server| {
                let prefix = format!("mcp__{server}__");
                let tools: Vec<&str> = names
                    .iter()
                    .filter_map(|n| n.strip_prefix(&prefix))
                    .collect();
                let on = names
                    .iter()
                    .filter(|n| n.starts_with(&prefix) && active.contains(n))
                    .count();
                let server = coding_agent::sanitize_terminal_text(server);
                if tools.is_empty() {
                    format!("{server}: no tools (not connected; its warning was shown at start)")
                } else {
                    format!(
                        "{server}: connected, {} tools ({on} active): {}",
                        tools.len(),
                        coding_agent::sanitize_terminal_text(&tools.join(", "))
                    )
                }
            })
            .collect();
        Ok(lines.join("\n"))
    });
    (spec, handler)
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
    ) -> coding_agent::prelude::BoxFuture<'static, Vec<coding_agent::sessions::SessionInfo>> {
        let (commands, session) = (self.0.clone(), session.clone());
        // Every session file's head is read: off the UI task.
        Box::pin(async move {
            tokio::task::spawn_blocking(move || commands.sessions(&session))
                .await
                .unwrap_or_default()
        })
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
