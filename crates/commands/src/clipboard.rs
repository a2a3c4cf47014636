//! `/copy`: the last answer to the clipboard, through a system clipboard
//! program when one runs here, else through the terminal (OSC 52, which
//! also works over SSH and in tmux with `set-clipboard on`).

use std::io::Write;
use std::process::{Command, Stdio};

use base64::Engine;
use coding_agent::AgentSession;

/// Text over this size is not sent through OSC 52: terminals drop or
/// truncate long sequences.
const OSC52_MAX_BYTES: usize = 512 * 1024;

/// Where `/copy` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Clipboard {
    /// A system clipboard program (`wl-copy`, `xclip`, `xsel`, `pbcopy`)
    /// when one works, else OSC 52 on the controlling terminal.
    #[default]
    Auto,
    /// Only OSC 52 on the controlling terminal (`/dev/tty`).
    Terminal,
    /// Only a system clipboard program.
    System,
    /// Copying is off.
    Off,
}

/// Why nothing was copied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClipboardError(pub String);

impl Clipboard {
    /// Copies `text`; answers how it was copied.
    ///
    /// # Errors
    /// When no way works here (no clipboard program, no terminal), naming
    /// what was tried.
    pub fn copy(self, text: &str) -> Result<&'static str, ClipboardError> {
        let system = || {
            SYSTEM_PROGRAMS
                .iter()
                .find(|(program, args)| run_with_input(program, args, text))
                .map(|(program, _)| *program)
        };
        match self {
            Clipboard::Off => Err(ClipboardError("copying is turned off".into())),
            Clipboard::System => system().ok_or_else(|| {
                ClipboardError(
                    "no clipboard program works here (wl-copy, xclip, xsel, pbcopy)".into(),
                )
            }),
            Clipboard::Terminal => osc52(text).map(|()| "the terminal (OSC 52)"),
            Clipboard::Auto => match system() {
                Some(program) => Ok(program),
                None => osc52(text).map(|()| "the terminal (OSC 52)").map_err(|e| {
                    ClipboardError(format!(
                        "no clipboard program works here (wl-copy, xclip, xsel, pbcopy), and {e}"
                    ))
                }),
            },
        }
    }
}

const SYSTEM_PROGRAMS: &[(&str, &[&str])] = &[
    ("wl-copy", &[]),
    ("xclip", &["-selection", "clipboard"]),
    ("xsel", &["--clipboard", "--input"]),
    ("pbcopy", &[]),
];

fn run_with_input(program: &str, args: &[&str], text: &str) -> bool {
    // A clipboard program without a display fails at once; one with a
    // display forks to serve the selection and returns.
    let Ok(mut child) = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let written = child
        .stdin
        .take()
        .is_some_and(|mut stdin| stdin.write_all(text.as_bytes()).is_ok());
    written && child.wait().is_ok_and(|s| s.success())
}

/// The OSC 52 sequence for `text` (inside tmux, wrapped so tmux passes it
/// on).
fn osc52_sequence(text: &str, in_tmux: bool) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    let sequence = format!("\x1b]52;c;{encoded}\x07");
    if in_tmux {
        format!("\x1bPtmux;{}\x1b\\", sequence.replace('\x1b', "\x1b\x1b"))
    } else {
        sequence
    }
}

fn osc52(text: &str) -> Result<(), ClipboardError> {
    if text.len() > OSC52_MAX_BYTES {
        return Err(ClipboardError(format!(
            "the text is {} bytes, over what a terminal takes through OSC 52 ({OSC52_MAX_BYTES})",
            text.len()
        )));
    }
    let mut tty = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/tty")
        .map_err(|e| ClipboardError(format!("there is no terminal to copy through ({e})")))?;
    let sequence = osc52_sequence(text, std::env::var_os("TMUX").is_some());
    tty.write_all(sequence.as_bytes())
        .and_then(|()| tty.flush())
        .map_err(|e| ClipboardError(format!("the terminal did not take the text ({e})")))
}

/// `/copy`.
pub(crate) fn copy_last_answer(
    clipboard: &Clipboard,
    session: &AgentSession,
) -> Result<String, String> {
    let text = session.last_assistant_text();
    if text.is_empty() {
        return Err("no answer to copy yet".into());
    }
    let how = clipboard
        .copy(&text)
        .map_err(|e| format!("nothing copied: {e}"))?;
    Ok(format!(
        "copied the last answer ({} characters) through {how}",
        text.chars().count()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_carries_base64_and_is_wrapped_for_tmux() {
        assert_eq!(osc52_sequence("hi", false), "\x1b]52;c;aGk=\x07");
        assert_eq!(
            osc52_sequence("hi", true),
            "\x1bPtmux;\x1b\x1b]52;c;aGk=\x07\x1b\\"
        );
    }

    #[test]
    fn off_copies_nothing_and_says_so() {
        assert_eq!(
            Clipboard::Off.copy("x").unwrap_err().to_string(),
            "copying is turned off"
        );
    }
}
