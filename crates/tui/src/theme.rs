//! The UI's styles: the tools' [`Theme`] plus the roles of the chrome
//! (user messages, Markdown, thinking, tool tints, footer).

use agent_tool::Theme;
use anstyle::{AnsiColor, Color, Style};

use crate::highlight::SyntaxStyles;

/// Every style the UI draws with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UiTheme {
    /// What tool renderers draw with.
    pub tools: Theme,
    /// The user's own messages.
    pub user: Style,
    /// Markdown headings.
    pub heading: Style,
    /// Inline code and code blocks.
    pub code: Style,
    /// Link text and targets.
    pub link: Style,
    /// Block quotes.
    pub quote: Style,
    /// Thinking blocks.
    pub thinking: Style,
    /// The marker of a tool call still running.
    pub pending: Style,
    /// The marker of a tool call that succeeded.
    pub ok: Style,
    /// The marker of a failed tool call, and error notices.
    pub error: Style,
    /// Warnings (context use at 70 %).
    pub warning: Style,
    /// Footer and hints.
    pub dim: Style,
    /// The spinner.
    pub spinner: Style,
    /// Highlighted code, by role (all plain without colour, which also
    /// turns highlighting off).
    pub syntax: SyntaxStyles,
}

impl Default for UiTheme {
    fn default() -> Self {
        let fg = |c: AnsiColor| Style::new().fg_color(Some(Color::Ansi(c)));
        UiTheme {
            tools: Theme::default(),
            user: Style::new().bold(),
            heading: fg(AnsiColor::Cyan).bold(),
            code: fg(AnsiColor::Yellow),
            link: fg(AnsiColor::Blue).underline(),
            quote: Style::new().italic().dimmed(),
            thinking: Style::new().dimmed().italic(),
            pending: fg(AnsiColor::Yellow),
            ok: fg(AnsiColor::Green),
            error: fg(AnsiColor::Red),
            warning: fg(AnsiColor::Yellow),
            dim: Style::new().dimmed(),
            spinner: fg(AnsiColor::Cyan),
            syntax: SyntaxStyles::default(),
        }
    }
}

impl UiTheme {
    /// No styles at all (`NO_COLOR`, tests).
    pub fn plain() -> Self {
        let s = Style::new();
        UiTheme {
            tools: Theme::plain(),
            user: s,
            heading: s,
            code: s,
            link: s,
            quote: s,
            thinking: s,
            pending: s,
            ok: s,
            error: s,
            warning: s,
            dim: s,
            spinner: s,
            syntax: SyntaxStyles::plain(),
        }
    }

    /// Whether the theme draws any colour or attribute (false for
    /// [`UiTheme::plain`], i.e. with `NO_COLOR`): work that only adds
    /// colour, such as highlighting code, is skipped without it.
    pub fn is_colored(&self) -> bool {
        *self != Self::plain()
    }

    /// [`UiTheme::plain`] when `NO_COLOR` is set (to anything but empty),
    /// else the default.
    pub fn from_env() -> Self {
        match std::env::var_os("NO_COLOR") {
            Some(v) if !v.is_empty() => Self::plain(),
            _ => Self::default(),
        }
    }
}
