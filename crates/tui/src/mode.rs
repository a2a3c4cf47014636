//! The two ways the UI draws, and the `/tui` command that switches
//! between them while it runs.
//!
//! Switching never loses or doubles a line: inline mode's scrollback holds
//! what was committed before fullscreen began; fullscreen does not commit,
//! so on the way back the cells that settled meanwhile are written once
//! (and after a width change the screen is drawn again from the session).

use std::fmt;
use std::str::FromStr;

use agent_tool::StyledLine;

/// Inline (the terminal's own scrollback) or fullscreen (the alternate
/// screen with a scrollable view).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TuiMode {
    /// Settled cells go into the scrollback above a live region.
    #[default]
    Inline,
    /// The alternate screen: a scrollable transcript above the dock.
    Fullscreen,
}

impl FromStr for TuiMode {
    type Err = String;

    /// `inline` (Pi's `regular` too) or `fullscreen`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "inline" | "regular" => Ok(TuiMode::Inline),
            "fullscreen" => Ok(TuiMode::Fullscreen),
            other => Err(format!("unknown UI mode {other:?} (inline or fullscreen)")),
        }
    }
}

impl fmt::Display for TuiMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TuiMode::Inline => "inline",
            TuiMode::Fullscreen => "fullscreen",
        })
    }
}

/// `/tui [inline|fullscreen]`: `None` when `line` is another command, else
/// the mode asked for (the other one when none is named) or why not.
///
/// ```
/// use agent_tui::mode::{TuiMode, tui_command};
/// assert_eq!(tui_command("/tui", TuiMode::Inline), Some(Ok(TuiMode::Fullscreen)));
/// assert_eq!(tui_command("/tui inline", TuiMode::Inline), Some(Ok(TuiMode::Inline)));
/// assert!(tui_command("/tui big", TuiMode::Inline).unwrap().is_err());
/// assert_eq!(tui_command("/tuition", TuiMode::Inline), None);
/// ```
pub fn tui_command(line: &str, current: TuiMode) -> Option<Result<TuiMode, String>> {
    let rest = line.trim().strip_prefix("/tui")?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim();
    if rest.is_empty() {
        return Some(Ok(match current {
            TuiMode::Inline => TuiMode::Fullscreen,
            TuiMode::Fullscreen => TuiMode::Inline,
        }));
    }
    Some(rest.parse().map_err(|e| format!("/tui: {e}")))
}

/// What is printed on the main screen when fullscreen ends: how to resume
/// the session when it is recorded, else the conversation itself.
pub fn exit_text(session_file: Option<&std::path::Path>, transcript: &[StyledLine]) -> String {
    let mut out = String::new();
    match session_file {
        Some(file) => {
            out.push_str("Resume this session with: coding-agent --session ");
            out.push_str(&crate::text::clean(&coding_agent::shell_quote(
                &file.display().to_string(),
            )));
            out.push_str("\r\n");
        }
        None => {
            for line in transcript {
                crate::text::write_ansi(&mut out, line);
                out.push_str("\r\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_text_is_a_hint_or_the_transcript() {
        let hint = exit_text(Some(std::path::Path::new("/s/a b.jsonl")), &[]);
        assert_eq!(
            hint,
            "Resume this session with: coding-agent --session '/s/a b.jsonl'\r\n"
        );
        let lines = [StyledLine::plain("> hi"), StyledLine::plain("hello")];
        assert_eq!(exit_text(None, &lines), "> hi\r\nhello\r\n");
    }
}
