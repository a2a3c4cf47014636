//! The terminal's title and attention signals.
//!
//! The title (OSC 0) names the app, the session (its name, else the
//! directory) and carries a mark while a run goes (`* `) or a permission
//! question waits (`? `); the title the terminal had is pushed on the
//! terminal's title stack first and popped on exit (`CSI 22;0 t` /
//! `CSI 23;0 t`, which terminals without a stack ignore).
//!
//! A permission question, or the end of a run, while the terminal is not
//! focused (focus reports, `CSI ?1004`) rings: a desktop notification
//! (OSC 9) where the terminal shows one, else the bell. A question also
//! rings when the terminal never said whether it is focused: a run blocked
//! on an answer should not go unseen.

use crate::footer::Status;

/// How to get the user's attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NotifyMethod {
    /// OSC 9 in terminals known to show it (iTerm2, WezTerm, Ghostty,
    /// kitty) outside tmux, else the bell.
    #[default]
    Auto,
    /// A desktop notification, `ESC ] 9 ; text BEL`.
    Osc9,
    /// The bell (`BEL`): tmux and most terminals flag the window.
    Bell,
    /// Nothing.
    Off,
}

impl NotifyMethod {
    /// What [`NotifyMethod::Auto`] means with these environment values
    /// (`env(name)`): OSC 9 or the bell; any other method is itself.
    pub fn resolve(self, env: impl Fn(&str) -> Option<String>) -> NotifyMethod {
        if self != NotifyMethod::Auto {
            return self;
        }
        // tmux swallows OSC 9 unless passthrough is on; its bell works.
        if env("TMUX").is_some_and(|v| !v.is_empty()) {
            return NotifyMethod::Bell;
        }
        let program = env("TERM_PROGRAM").unwrap_or_default();
        let term = env("TERM").unwrap_or_default();
        let shows_osc9 = matches!(program.as_str(), "iTerm.app" | "WezTerm" | "ghostty")
            || matches!(term.as_str(), "xterm-kitty" | "xterm-ghostty");
        if shows_osc9 {
            NotifyMethod::Osc9
        } else {
            NotifyMethod::Bell
        }
    }
}

/// Why the user is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attention {
    /// A permission question waits.
    Question,
    /// A run ended.
    RunEnded,
}

/// Saves the terminal's title on its title stack.
pub const PUSH_TITLE: &str = "\x1b[22;0t";
/// Restores the title saved by [`PUSH_TITLE`].
pub const POP_TITLE: &str = "\x1b[23;0t";
/// Longest title sent (in characters).
const MAX_TITLE_CHARS: usize = 120;

/// Text for an OSC string: no control characters (an ESC or BEL would end
/// the sequence early and let the rest act), no bidi overrides, at most
/// `max` characters.
fn osc_text(text: &str, max: usize) -> String {
    text.chars()
        .filter(|c| {
            !c.is_control() && !matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        })
        .take(max)
        .collect()
}

/// The title for `status`: `coding-agent - name - dir`, with `* ` while
/// running and `? ` while a question waits.
///
/// ```
/// use agent_tui::footer::Status;
/// let status = Status { cwd: "~/src/app".into(), ..Status::default() };
/// assert_eq!(agent_tui::notify::title("coding-agent", &status, true, false), "* coding-agent - app");
/// ```
pub fn title(app: &str, status: &Status, running: bool, asking: bool) -> String {
    let dir = status
        .cwd
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|d| !d.is_empty())
        .unwrap_or(status.cwd.as_str());
    let mark = if asking {
        "? "
    } else if running {
        "* "
    } else {
        ""
    };
    match &status.session_name {
        Some(name) if !name.trim().is_empty() => format!("{mark}{app} - {name} - {dir}"),
        _ => format!("{mark}{app} - {dir}"),
    }
}

/// The bytes that set the title to `text` (OSC 0, sanitized).
///
/// ```
/// assert_eq!(agent_tui::notify::title_bytes("a\x07b"), "\x1b]0;ab\x07");
/// ```
pub fn title_bytes(text: &str) -> String {
    format!("\x1b]0;{}\x07", osc_text(text, MAX_TITLE_CHARS))
}

/// The title and attention state of one UI.
#[derive(Debug, Clone)]
pub struct Notifier {
    method: NotifyMethod,
    /// The app's name in the title; `None` leaves the title alone.
    app: Option<String>,
    /// Focus as last reported; `None` until the terminal reports it.
    focused: Option<bool>,
    /// The title last sent, to send only changes.
    shown_title: Option<String>,
}

impl Notifier {
    /// A notifier ringing with `method` (already resolved, see
    /// [`NotifyMethod::resolve`]) and titling with `app`, if any.
    pub fn new(method: NotifyMethod, app: Option<String>) -> Self {
        Notifier {
            method,
            app,
            focused: None,
            shown_title: None,
        }
    }

    /// The terminal reported a focus change.
    pub fn set_focus(&mut self, focused: bool) {
        self.focused = Some(focused);
    }

    /// The bytes that call the user for `why`, or nothing when the
    /// terminal is focused (or, for a run's end, may be).
    pub fn attention(&self, why: Attention, session: &str) -> String {
        let call = matches!(
            (why, self.focused),
            (_, Some(false)) | (Attention::Question, None)
        );
        if !call {
            return String::new();
        }
        let message = match why {
            Attention::Question => format!("{session}: a permission question waits"),
            Attention::RunEnded => format!("{session}: done"),
        };
        match self.method {
            NotifyMethod::Osc9 => format!("\x1b]9;{}\x07", osc_text(&message, 200)),
            NotifyMethod::Bell | NotifyMethod::Auto => "\x07".to_string(),
            NotifyMethod::Off => String::new(),
        }
    }

    /// [`Notifier::attention`] naming the session as the title does.
    pub fn call(&self, why: Attention, status: &Status) -> String {
        let app = self.app.as_deref().unwrap_or("coding-agent");
        self.attention(why, &title(app, status, false, false))
    }

    /// The bytes that bring the title up to date (the first time, the
    /// terminal's own title is saved first); nothing when it is unchanged
    /// or titles are off.
    pub fn title(&mut self, status: &Status, running: bool, asking: bool) -> String {
        let Some(app) = &self.app else {
            return String::new();
        };
        let next = title(app, status, running, asking);
        if self.shown_title.as_deref() == Some(next.as_str()) {
            return String::new();
        }
        let push = if self.shown_title.is_none() {
            PUSH_TITLE
        } else {
            ""
        };
        let bytes = format!("{push}{}", title_bytes(&next));
        self.shown_title = Some(next);
        bytes
    }

    /// The bytes that give the terminal its own title back (if we set one).
    pub fn restore_title(&mut self) -> &'static str {
        match self.shown_title.take() {
            Some(_) => POP_TITLE,
            None => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn auto_picks_osc9_only_where_it_is_shown() {
        let auto = NotifyMethod::Auto;
        assert_eq!(
            auto.resolve(env(&[("TERM_PROGRAM", "WezTerm")])),
            NotifyMethod::Osc9
        );
        assert_eq!(
            auto.resolve(env(&[("TERM", "xterm-kitty")])),
            NotifyMethod::Osc9
        );
        assert_eq!(
            auto.resolve(env(&[
                ("TERM_PROGRAM", "iTerm.app"),
                ("TMUX", "/tmp/t,1,0")
            ])),
            NotifyMethod::Bell
        );
        assert_eq!(
            auto.resolve(env(&[("TERM", "xterm-256color")])),
            NotifyMethod::Bell
        );
        assert_eq!(NotifyMethod::Off.resolve(env(&[])), NotifyMethod::Off);
    }

    #[test]
    fn calls_only_when_unfocused_and_questions_when_unknown() {
        let mut n = Notifier::new(NotifyMethod::Osc9, None);
        assert_eq!(
            n.attention(Attention::Question, "s"),
            "\x1b]9;s: a permission question waits\x07"
        );
        assert_eq!(n.attention(Attention::RunEnded, "s"), "");
        n.set_focus(true);
        assert_eq!(n.attention(Attention::Question, "s"), "");
        n.set_focus(false);
        assert_eq!(
            n.attention(Attention::RunEnded, "s\x1b]0;x"),
            "\x1b]9;s]0;x: done\x07"
        );
        let mut bell = Notifier::new(NotifyMethod::Bell, None);
        bell.set_focus(false);
        assert_eq!(bell.attention(Attention::RunEnded, "s"), "\x07");
        let mut off = Notifier::new(NotifyMethod::Off, None);
        off.set_focus(false);
        assert_eq!(off.attention(Attention::Question, "s"), "");
    }

    #[test]
    fn the_title_is_sent_on_change_and_given_back() {
        let mut n = Notifier::new(NotifyMethod::Bell, Some("coding-agent".into()));
        let mut status = Status {
            cwd: "~/src/app/".into(),
            ..Status::default()
        };
        assert_eq!(
            n.title(&status, false, false),
            "\x1b[22;0t\x1b]0;coding-agent - app\x07"
        );
        assert_eq!(n.title(&status, false, false), "");
        status.session_name = Some("fix\x07 the bug".into());
        assert_eq!(
            n.title(&status, true, true),
            "\x1b]0;? coding-agent - fix the bug - app\x07"
        );
        assert_eq!(n.restore_title(), POP_TITLE);
        assert_eq!(n.restore_title(), "");
        let mut none = Notifier::new(NotifyMethod::Bell, None);
        assert_eq!(none.title(&status, true, false), "");
        assert_eq!(none.restore_title(), "");
    }
}
