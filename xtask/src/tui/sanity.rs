//! Whether the terminal is usable after the program left it: no raw
//! mode, no alternate screen, a visible cursor, no bracketed paste or
//! focus reports still asked for.
//!
//! The pane's launcher runs [`REPORT`] after the program ends: it prints
//! the exit status and the terminal's line settings, then echoes one line
//! it reads, so a paste shows whether tmux still brackets it.

use anyhow::{Result, bail};

use super::Tmux;

/// Shell run after the program: its exit status, `stty -a`'s flags that
/// raw mode turns off, then one line read back, control bytes shown.
pub const REPORT: &str = "status=$?; echo \"EXITED $status\"; \
    echo \"STTY $(stty -a | tr -s ' ;' '\\n\\n' | grep -E '^-?(icanon|echo|isig|icrnl|opost)$' | tr '\\n' ' ')\"; \
    echo STTY-END; IFS= read -r probe; printf 'PROBE<%s>\\n' \"$probe\" | cat -v; sleep 3600";

/// The line settings a cooked terminal has (raw mode clears them).
const COOKED: [&str; 5] = ["icanon", "echo", "isig", "icrnl", "opost"];

/// Private modes a program may turn on that must be off again when it
/// has gone: the alternate screen, mouse reports, bracketed paste, focus
/// reports, synchronized output.
const MODES: [&str; 7] = ["1049", "1000", "1002", "1006", "2004", "1004", "2026"];

/// The exit status the launcher reported, once the program has ended.
pub fn exit_status(tmux: &Tmux) -> Result<String> {
    tmux.wait_for("the program to end and the terminal report", |h| {
        h.contains("STTY-END").then(|| {
            h.lines()
                .rev()
                .find_map(|l| l.strip_prefix("EXITED "))
                .unwrap_or("?")
                .trim()
                .to_string()
        })
    })
}

/// Checks that the program exited with `status` and left the terminal
/// sane; `what` names the way it ended, for the error.
pub fn check(tmux: &Tmux, what: &str, status: &str) -> Result<()> {
    let got = exit_status(tmux)?;
    if got != status {
        bail!("{what}: exit status {got}, expected {status}");
    }
    let history = tmux.history()?;
    let stty = history
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("STTY "))
        .unwrap_or_default();
    let flags: Vec<&str> = stty.split_whitespace().collect();
    let lost: Vec<&&str> = COOKED.iter().filter(|f| !flags.contains(f)).collect();
    if !lost.is_empty() {
        bail!("{what}: the terminal stays in raw mode (stty: {stty}; missing {lost:?})");
    }
    if tmux.format("#{alternate_on}")? != "0" {
        bail!("{what}: the alternate screen is still on");
    }
    if tmux.format("#{cursor_flag}")? != "1" {
        bail!("{what}: the cursor is still hidden");
    }
    let raw = tmux.raw()?;
    for mode in MODES {
        let on = rfind(&raw, format!("\x1b[?{mode}h").as_bytes());
        let off = rfind(&raw, format!("\x1b[?{mode}l").as_bytes());
        if on.is_some() && off < on {
            bail!("{what}: private mode ?{mode} was turned on and never off");
        }
    }
    // A bracketed paste would arrive as ^[[200~probe-line^[[201~.
    tmux.paste("probe-line\n")?;
    let probe = tmux.wait_for("the probe line to be read back", |h| {
        h.lines()
            .find_map(|l| l.strip_prefix("PROBE<"))
            .map(str::to_string)
    })?;
    if probe != "probe-line>" {
        bail!("{what}: a paste after exit reads back as {probe:?} (bracketed paste still on?)");
    }
    Ok(())
}

/// Where `needle` last occurs in `hay`.
pub fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// How many times `needle` occurs in `hay`.
pub fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}
