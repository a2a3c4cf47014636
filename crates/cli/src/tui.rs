//! The terminal UI mode (`agent-tui`): interactive runs on a terminal,
//! unless `--no-tui`, a stdin or stdout that is not a terminal, or
//! `TERM=dumb` keep the line prompt.

use std::io::IsTerminal;
use std::sync::Arc;

use agent_tui::{PermissionQuestions, TuiExit, TuiOptions, UiTheme};
use coding_agent::AgentSession;

use crate::args::{Mode, RunArgs};

/// Whether an interactive run gets the terminal UI.
pub fn wanted(args: &RunArgs) -> bool {
    !args.no_tui
        && !args.print
        && args.mode == Mode::Text
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// Runs the UI until the user leaves; the process's exit code.
pub async fn run(
    session: AgentSession,
    questions: PermissionQuestions,
    mut commands: agent_commands::Commands,
) -> i32 {
    // Read the way Pi reads it: `<agent dir>/keybindings.json`.
    let keybindings = coding_agent::agent_dir()
        .map(|dir| agent_tui::keybindings::Keybindings::load(&dir.join("keybindings.json")))
        .unwrap_or_default();
    let table = keybindings.table();
    commands.hotkeys = Some(Arc::new(move || table.clone()));
    let options = TuiOptions {
        theme: UiTheme::from_env(),
        commands: Some(Arc::new(crate::slash::TuiCommands(commands))),
        questions: Some(questions),
        keybindings,
        ..TuiOptions::default()
    };
    match agent_tui::run(session, options).await {
        Ok(TuiExit::Quit | TuiExit::TerminalGone) => 0,
        Ok(TuiExit::Signal(n)) => 128 + n,
        Err(e) => {
            eprintln!("coding-agent: {e}");
            1
        }
    }
}
