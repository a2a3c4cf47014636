//! The built-in slash commands (`agent_commands`) wired to this binary's
//! model registry and session directory, for the line prompt and the
//! terminal UI.

use agent_commands::Commands;
use coding_agent::agent_ai::Model;
use coding_agent::{AgentSession, Settings};

use crate::args::RunArgs;

/// The commands of an interactive run: `/model` goes through the same
/// registry and flags as `--model`, `/new` and `/import` into
/// `--session-dir`.
pub fn commands(args: &RunArgs, settings: &Settings, current: &Model) -> Commands {
    let (models, resolve_model) = crate::provider::switchable(args, settings, current);
    Commands {
        session_dir: args.session_dir.clone(),
        models,
        resolve_model,
        ..Commands::default()
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
pub struct TuiCommands(pub Commands);

impl agent_tui::SlashCommands for TuiCommands {
    fn run(
        &self,
        session: &AgentSession,
        line: &str,
    ) -> coding_agent::prelude::BoxFuture<'static, Option<Result<String, String>>> {
        let (commands, session, line) = (self.0.clone(), session.clone(), line.to_string());
        Box::pin(async move { commands.run(&session, &line).await })
    }

    fn commands(&self) -> Vec<agent_tui::completion::CommandHint> {
        agent_commands::BUILTIN
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
