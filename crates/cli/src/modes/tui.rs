//! The terminal UI mode (`agent-tui`): interactive runs on a terminal,
//! unless `--no-tui`, a stdin or stdout that is not a terminal, or
//! `TERM=dumb` keep the line prompt.

use std::io::IsTerminal;
use std::sync::Arc;

use agent_tui::{PermissionQuestions, ThemeChoice, TuiExit, TuiMode, TuiOptions, UiTheme};
use coding_agent::{AgentSession, TuiModeSetting};

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

/// Runs the UI until the user leaves; the process's exit code. The mode
/// comes from `--tui-mode`, else the `tuiMode` setting; the theme from the
/// `theme` setting and the terminal (see [`ThemeChoice::detect`]).
pub async fn run(
    session: AgentSession,
    questions: PermissionQuestions,
    mut commands: agent_commands::Commands,
    args: &RunArgs,
) -> i32 {
    // Read the way Pi reads it: `<agent dir>/keybindings.json`.
    let keybindings = coding_agent::agent_dir()
        .map(|dir| agent_tui::keybindings::Keybindings::load(&dir.join("keybindings.json")))
        .unwrap_or_default();
    let table = keybindings.table();
    commands.hotkeys = Some(Arc::new(move || table.clone()));
    let known = session.settings().known();
    let mode = match args.tui_mode.as_deref().map(str::parse::<TuiMode>) {
        Some(Ok(mode)) => mode,
        Some(Err(e)) => {
            eprintln!("coding-agent: {e}");
            return 2;
        }
        None => match known.tui_mode {
            Some(TuiModeSetting::Fullscreen) => TuiMode::Fullscreen,
            _ => TuiMode::Inline,
        },
    };
    let setting = match known.other.get("theme") {
        Some(serde_json::Value::String(name)) => Some(name.clone()),
        Some(other) => {
            eprintln!("coding-agent: warning: setting `theme` must be a string, not {other}");
            None
        }
        None => None,
    };
    let themes_dir = coding_agent::agent_dir().map(|d| d.join("themes"));
    let scripted = crate::provider::scripted_choices(&session.agent().model());
    // A slow link may need longer than the usual 100 ms for the terminal's
    // answers; asked now, they are what the theme and keyboard use.
    if let Some(ms) = env_number("CODING_AGENT_QUERY_TIMEOUT_MS") {
        agent_tui::palette::query_terminal(std::time::Duration::from_millis(ms));
    }
    let keyboard = match std::env::var("CODING_AGENT_KEYBOARD") {
        Ok(name) => match name.parse::<agent_tui::keyboard::KeyboardProtocol>() {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("coding-agent: CODING_AGENT_KEYBOARD: {e}");
                return 2;
            }
        },
        Err(_) => None,
    };
    let choice = ThemeChoice::detect(setting, themes_dir);
    let (theme, warnings) = UiTheme::choose(&choice);
    for w in warnings {
        // Before the UI owns the terminal: above it, where it stays.
        eprintln!("coding-agent: warning: {w}");
    }
    let options = TuiOptions {
        theme,
        commands: Some(Arc::new(crate::slash::TuiCommands(commands, scripted))),
        questions: Some(questions),
        mode,
        keybindings,
        theme_choice: Some(choice),
        keyboard,
        stats_file: std::env::var_os("CODING_AGENT_TUI_STATS").map(Into::into),
        models: args.models.clone(),
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

/// A whole number from the environment; a bad one is a warning.
fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    match text.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => {
            eprintln!(
                "coding-agent: warning: {name} must be a whole number of milliseconds, not `{text}`"
            );
            None
        }
    }
}
