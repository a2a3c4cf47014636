//! `!command` and `!!command` typed in the editor: run by the session's
//! own shell tool (see `AgentSession::run_user_bash`), shown as a cell;
//! `!` adds the command and its output to what the model sees next, `!!`
//! only shows them (Pi's two forms).

use coding_agent::UserBash;

/// The output lines a cell shows (the last ones); the session keeps all.
pub const SHOWN_LINES: usize = 20;

/// A line that runs a command: the command, and whether it stays out of
/// the model's context (`!!`). `None` for other text and a bare `!`.
///
/// ```
/// use agent_tui::shell::parse;
/// assert_eq!(parse("!ls -l"), Some(("ls -l".into(), false)));
/// assert_eq!(parse("!! git status "), Some(("git status".into(), true)));
/// assert_eq!(parse("!"), None);
/// assert_eq!(parse("not !this"), None);
/// ```
pub fn parse(line: &str) -> Option<(String, bool)> {
    let (rest, exclude) = match line.strip_prefix("!!") {
        Some(rest) => (rest, true),
        None => (line.strip_prefix('!')?, false),
    };
    let command = rest.trim();
    (!command.is_empty()).then(|| (command.to_string(), exclude))
}

/// The cell's text for a finished command, and whether it failed.
pub fn describe(command: &str, exclude: bool, ran: &UserBash) -> (String, bool) {
    let mut text = format!("$ {command}");
    if exclude {
        text.push_str("   (not sent to the model)");
    }
    let lines: Vec<&str> = ran.output.trim_end().lines().collect();
    if lines.len() > SHOWN_LINES {
        text.push_str(&format!(
            "\n... {} earlier lines",
            lines.len() - SHOWN_LINES
        ));
    }
    for line in &lines[lines.len().saturating_sub(SHOWN_LINES)..] {
        text.push('\n');
        text.push_str(line);
    }
    let failed = ran.cancelled || ran.exit_code != Some(0);
    if ran.cancelled {
        text.push_str("\n(cancelled)");
    } else if let Some(code) = ran.exit_code.filter(|c| *c != 0) {
        text.push_str(&format!("\n(exit code {code})"));
    }
    if let Some(path) = &ran.full_output_path {
        text.push_str(&format!("\n(full output: {path})"));
    }
    (text, failed)
}
