//! Which keyboard protocol the UI asks the terminal for, so keys a legacy
//! terminal sends alike (Enter and Shift+Enter, Ctrl+I and Tab, Esc and
//! the start of a sequence) arrive apart.
//!
//! - **Kitty keyboard protocol** where the terminal answers its query
//!   (`CSI ? u`, asked with the background at start): flag 1,
//!   "disambiguate escape codes", pushed on entry and popped on exit. The
//!   main and alternate screens keep separate flag stacks, so fullscreen
//!   pushes and pops its own.
//! - **`modifyOtherKeys` mode 2** inside tmux, whose extended keys then
//!   arrive as `CSI code ; modifiers u` (tmux's `extended-keys` option must
//!   be `on`; from tmux 3.5 its `extended-keys-format` must be `csi-u`,
//!   because the xterm form, `CSI 27 ; m ; code ~`, is not one the input
//!   parser reads: asking for it would lose every modified key).
//! - **Legacy** anywhere else: nothing is asked.
//!
//! Environment lookups go through a function, so the choice is testable
//! without touching the process's environment.

use std::str::FromStr;
use std::time::{Duration, Instant};

/// The keyboard protocol the UI asks the terminal for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyboardProtocol {
    /// Whatever the terminal sends by default.
    #[default]
    Legacy,
    /// The Kitty keyboard protocol, flag 1 (disambiguate escape codes).
    Kitty,
    /// xterm's `modifyOtherKeys` mode 2 (through tmux).
    ModifyOtherKeys,
}

/// How long `tmux show-options` may take before tmux is taken to lack
/// the setting.
const TMUX_QUERY_TIMEOUT: Duration = Duration::from_millis(300);

impl KeyboardProtocol {
    /// The protocol for this terminal: Kitty when it answered the Kitty
    /// query, `modifyOtherKeys` inside a tmux that sends extended keys in
    /// the `CSI u` form, else legacy. `tmux_format` reports tmux's
    /// `extended-keys-format` (asked only for tmux 3.5 and later).
    ///
    /// ```
    /// use agent_tui::keyboard::KeyboardProtocol;
    /// let tmux = |k: &str| match k {
    ///     "TMUX" => Some("/tmp/tmux-0/default,1,0".to_string()),
    ///     "TERM_PROGRAM" => Some("tmux".to_string()),
    ///     "TERM_PROGRAM_VERSION" => Some("3.3a".to_string()),
    ///     _ => None,
    /// };
    /// assert_eq!(KeyboardProtocol::choose(None, &tmux, &|| None), KeyboardProtocol::ModifyOtherKeys);
    /// assert_eq!(KeyboardProtocol::choose(Some(0), &|_| None, &|| None), KeyboardProtocol::Kitty);
    /// assert_eq!(KeyboardProtocol::choose(None, &|_| None, &|| None), KeyboardProtocol::Legacy);
    /// ```
    pub fn choose(
        kitty_flags: Option<u16>,
        env: &dyn Fn(&str) -> Option<String>,
        tmux_format: &dyn Fn() -> Option<String>,
    ) -> KeyboardProtocol {
        if kitty_flags.is_some() {
            return KeyboardProtocol::Kitty;
        }
        if env("TMUX").is_none_or(|v| v.is_empty()) {
            return KeyboardProtocol::Legacy;
        }
        let version = (env("TERM_PROGRAM").as_deref() == Some("tmux"))
            .then(|| env("TERM_PROGRAM_VERSION"))
            .flatten()
            .and_then(|v| tmux_version(&v));
        // Before 3.5 tmux has only the `CSI u` form (3.3a checked).
        let csi_u = match version {
            Some(v) if v < (3, 5) => true,
            _ => tmux_format().is_some_and(|f| f.trim() == "csi-u"),
        };
        if csi_u {
            KeyboardProtocol::ModifyOtherKeys
        } else {
            KeyboardProtocol::Legacy
        }
    }

    /// The protocol for the terminal on stdin/stdout: its answers to the
    /// start-up query (asked now unless already asked, see
    /// [`crate::palette::query_terminal`]), the process's environment and,
    /// inside tmux 3.5 or later, `tmux show-options -sv
    /// extended-keys-format`.
    pub fn detect() -> KeyboardProtocol {
        let answers = crate::palette::query_terminal(crate::palette::BACKGROUND_QUERY_TIMEOUT);
        let env = |k: &str| std::env::var(k).ok();
        let chosen = KeyboardProtocol::choose(answers.kitty_keyboard, &env, &ask_tmux_format);
        tracing::debug!(protocol = ?chosen, "keyboard protocol");
        chosen
    }

    /// What turns the protocol on (written after raw mode, and again on
    /// the alternate screen, which has a Kitty flag stack of its own).
    pub fn enable(self) -> &'static str {
        match self {
            KeyboardProtocol::Legacy => "",
            KeyboardProtocol::Kitty => "\x1b[>1u",
            KeyboardProtocol::ModifyOtherKeys => "\x1b[>4;2m",
        }
    }

    /// What turns it off again (Kitty: pops what [`Self::enable`] pushed).
    pub fn disable(self) -> &'static str {
        match self {
            KeyboardProtocol::Legacy => "",
            KeyboardProtocol::Kitty => "\x1b[<u",
            KeyboardProtocol::ModifyOtherKeys => "\x1b[>4;0m",
        }
    }

    /// Whether each screen (main, alternate) keeps its own state, so
    /// fullscreen must enable it on entry and disable it before leaving.
    pub fn per_screen(self) -> bool {
        self == KeyboardProtocol::Kitty
    }
}

impl FromStr for KeyboardProtocol {
    type Err = String;

    /// `legacy`, `kitty` or `modify-other-keys`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "legacy" => Ok(KeyboardProtocol::Legacy),
            "kitty" => Ok(KeyboardProtocol::Kitty),
            "modify-other-keys" | "modifyotherkeys" => Ok(KeyboardProtocol::ModifyOtherKeys),
            other => Err(format!(
                "unknown keyboard protocol `{other}` (legacy, kitty or modify-other-keys)"
            )),
        }
    }
}

/// The Kitty keyboard flags in a terminal's answer to `CSI ? u`
/// (`CSI ? flags u`), if the answer is there.
///
/// ```
/// use agent_tui::keyboard::parse_kitty_flags;
/// assert_eq!(parse_kitty_flags(b"\x1b]11;rgb:0/0/0\x07\x1b[?1u\x1b[?62c"), Some(1));
/// assert_eq!(parse_kitty_flags(b"\x1b[?62;22c"), None);
/// ```
pub fn parse_kitty_flags(reply: &[u8]) -> Option<u16> {
    let mut rest = reply;
    while let Some(at) = rest.windows(3).position(|w| w == b"\x1b[?") {
        let body = &rest[at + 3..];
        let digits = body.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && body.get(digits) == Some(&b'u') {
            return std::str::from_utf8(&body[..digits]).ok()?.parse().ok();
        }
        rest = body;
    }
    None
}

/// `3.3a` → (3, 3); `next-3.6` → (3, 6).
fn tmux_version(text: &str) -> Option<(u32, u32)> {
    let text = text.trim_start_matches(|c: char| !c.is_ascii_digit());
    let (major, rest) = text.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// tmux's `extended-keys-format`, from the tmux this process runs in
/// (`$TMUX` names its socket). No shell; given up on after
/// [`TMUX_QUERY_TIMEOUT`].
fn ask_tmux_format() -> Option<String> {
    let mut child = std::process::Command::new("tmux")
        .args(["show-options", "-sv", "extended-keys-format"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + TMUX_QUERY_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn tmux_gets_modify_other_keys_only_when_it_sends_csi_u() {
        let tmux = |version: &str| {
            env(&[
                ("TMUX", "/tmp/tmux-0/default,1,0"),
                ("TERM_PROGRAM", "tmux"),
                ("TERM_PROGRAM_VERSION", version),
            ])
        };
        let never = || -> Option<String> { panic!("tmux asked for a version that has one form") };
        assert_eq!(
            KeyboardProtocol::choose(None, &tmux("3.3a"), &never),
            KeyboardProtocol::ModifyOtherKeys
        );
        let xterm = || Some("xterm\n".to_string());
        let csi_u = || Some("csi-u\n".to_string());
        assert_eq!(
            KeyboardProtocol::choose(None, &tmux("3.5a"), &xterm),
            KeyboardProtocol::Legacy
        );
        assert_eq!(
            KeyboardProtocol::choose(None, &tmux("3.5a"), &csi_u),
            KeyboardProtocol::ModifyOtherKeys
        );
        assert_eq!(
            KeyboardProtocol::choose(None, &tmux("next-3.6"), &|| None),
            KeyboardProtocol::Legacy
        );
        // A Kitty answer wins, in tmux too.
        assert_eq!(
            KeyboardProtocol::choose(Some(0), &tmux("3.3a"), &never),
            KeyboardProtocol::Kitty
        );
        // Not in tmux (an empty TMUX is no tmux).
        assert_eq!(
            KeyboardProtocol::choose(None, &env(&[("TMUX", "")]), &never),
            KeyboardProtocol::Legacy
        );
    }

    #[test]
    fn versions_flags_and_names_parse() {
        assert_eq!(tmux_version("3.3a"), Some((3, 3)));
        assert_eq!(tmux_version("3.10"), Some((3, 10)));
        assert_eq!(tmux_version("next-3.6"), Some((3, 6)));
        assert_eq!(tmux_version("master"), None);
        assert_eq!(parse_kitty_flags(b"\x1b[?15u"), Some(15));
        assert_eq!(parse_kitty_flags(b"\x1b[?u"), None);
        assert_eq!(parse_kitty_flags(b"\x1b[?99999999u"), None);
        assert_eq!("kitty".parse(), Ok(KeyboardProtocol::Kitty));
        assert!("vt52".parse::<KeyboardProtocol>().is_err());
        for p in [
            KeyboardProtocol::Legacy,
            KeyboardProtocol::Kitty,
            KeyboardProtocol::ModifyOtherKeys,
        ] {
            assert_eq!(p.enable().is_empty(), p.disable().is_empty());
        }
    }
}
