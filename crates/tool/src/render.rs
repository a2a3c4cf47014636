//! Styled terminal text for tool renderers, built on `anstyle`.
//!
//! Renderers return [`StyledText`]: lines of styled spans that can be printed
//! with ANSI escapes on a terminal ([`StyledText::to_ansi`]) or as plain text
//! anywhere else ([`StyledText::to_plain`]).

use std::path::PathBuf;

use anstyle::{AnsiColor, Color, Style};

/// A run of text with one style.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Span {
    /// The text (no newlines).
    pub text: String,
    /// Its style.
    pub style: Style,
}

/// One line of spans.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StyledLine {
    /// The spans, left to right.
    pub spans: Vec<Span>,
}

impl StyledLine {
    /// An empty line.
    pub fn new() -> Self {
        Self::default()
    }

    /// A line with one unstyled span.
    pub fn plain(text: impl Into<String>) -> Self {
        Self::styled(text, Style::new())
    }

    /// A line with one styled span.
    pub fn styled(text: impl Into<String>, style: Style) -> Self {
        StyledLine {
            spans: vec![Span {
                text: text.into(),
                style,
            }],
        }
    }

    /// Appends a span.
    pub fn push(mut self, text: impl Into<String>, style: Style) -> Self {
        self.spans.push(Span {
            text: text.into(),
            style,
        });
        self
    }

    /// The text without styles.
    pub fn to_plain(&self) -> String {
        self.spans.iter().map(|s| s.text.as_str()).collect()
    }
}

/// Styled, multi-line terminal text.
///
/// ```
/// use agent_tool::{StyledText, StyledLine, Theme};
/// let theme = Theme::default();
/// let mut text = StyledText::new();
/// text.push(StyledLine::styled("read", theme.tool_title).push(" src/main.rs", theme.accent));
/// assert_eq!(text.to_plain(), "read src/main.rs");
/// assert!(text.to_ansi().contains("\u{1b}["));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StyledText {
    /// The lines.
    pub lines: Vec<StyledLine>,
}

impl StyledText {
    /// No lines.
    pub fn new() -> Self {
        Self::default()
    }

    /// Each line of `text` as an unstyled line.
    pub fn plain(text: &str) -> Self {
        Self::from_text(text, Style::new())
    }

    /// Each line of `text` with one style.
    pub fn from_text(text: &str, style: Style) -> Self {
        StyledText {
            lines: text
                .split('\n')
                .map(|l| StyledLine::styled(l, style))
                .collect(),
        }
    }

    /// Appends a line.
    pub fn push(&mut self, line: StyledLine) -> &mut Self {
        self.lines.push(line);
        self
    }

    /// Appends every line of another text.
    pub fn extend(&mut self, other: StyledText) -> &mut Self {
        self.lines.extend(other.lines);
        self
    }

    /// Whether there is nothing to show.
    pub fn is_empty(&self) -> bool {
        self.lines
            .iter()
            .all(|l| l.spans.iter().all(|s| s.text.is_empty()))
    }

    /// Lines joined with `\n`, no styles.
    pub fn to_plain(&self) -> String {
        self.lines
            .iter()
            .map(StyledLine::to_plain)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Lines joined with `\n`, each styled span wrapped in ANSI escapes.
    ///
    /// Span texts hold what tools, models and commands produced, so they pass
    /// through [`sanitize_terminal_text`] first: the only escapes in the
    /// result are the styles' own.
    pub fn to_ansi(&self) -> String {
        let mut out = String::new();
        for (i, line) in self.lines.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            for span in &line.spans {
                let text = sanitize_terminal_text(&span.text);
                if span.style == Style::new() {
                    out.push_str(&text);
                } else {
                    out.push_str(&format!(
                        "{}{}{}",
                        span.style.render(),
                        text,
                        span.style.render_reset()
                    ));
                }
            }
        }
        out
    }
}

/// The RGB of the 16 ANSI colours in xterm's default palette: what 24-bit
/// and 256-palette colours are mapped down to where only 16 are drawn.
pub const XTERM_PALETTE: [(u8, u8, u8); 16] = [
    (0, 0, 0),
    (205, 0, 0),
    (0, 205, 0),
    (205, 205, 0),
    (0, 0, 238),
    (205, 0, 205),
    (0, 205, 205),
    (229, 229, 229),
    (127, 127, 127),
    (255, 0, 0),
    (0, 255, 0),
    (255, 255, 0),
    (92, 92, 255),
    (255, 0, 255),
    (0, 255, 255),
    (255, 255, 255),
];

/// Named styles renderers draw with, so a program can restyle every tool at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Tool names in call headers.
    pub tool_title: Style,
    /// Paths, commands and other key arguments.
    pub accent: Style,
    /// Secondary information.
    pub muted: Style,
    /// Success markers.
    pub success: Style,
    /// Error text.
    pub error: Style,
    /// Warnings and notices.
    pub warning: Style,
    /// Added diff lines.
    pub diff_added: Style,
    /// Removed diff lines.
    pub diff_removed: Style,
    /// Diff context lines.
    pub diff_context: Style,
}

impl Default for Theme {
    fn default() -> Self {
        let fg = |c: AnsiColor| Style::new().fg_color(Some(Color::Ansi(c)));
        Theme {
            tool_title: Style::new().bold(),
            accent: fg(AnsiColor::Cyan),
            muted: Style::new().dimmed(),
            success: fg(AnsiColor::Green),
            error: fg(AnsiColor::Red),
            warning: fg(AnsiColor::Yellow),
            diff_added: fg(AnsiColor::Green),
            diff_removed: fg(AnsiColor::Red),
            diff_context: Style::new().dimmed(),
        }
    }
}

impl Theme {
    /// A theme with no styles at all.
    pub fn plain() -> Self {
        let s = Style::new();
        Theme {
            tool_title: s,
            accent: s,
            muted: s,
            success: s,
            error: s,
            warning: s,
            diff_added: s,
            diff_removed: s,
            diff_context: s,
        }
    }
}

/// Where a renderer draws.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderContext {
    /// The working directory (to shorten paths).
    pub cwd: PathBuf,
    /// Terminal width in columns.
    pub width: usize,
}

impl Default for RenderContext {
    fn default() -> Self {
        RenderContext {
            cwd: PathBuf::from("."),
            width: 100,
        }
    }
}

/// How a result should be drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RenderResultOptions {
    /// Show everything instead of a preview.
    pub expanded: bool,
    /// The result is a progress update, not the final one.
    pub is_partial: bool,
    /// The call failed.
    pub is_error: bool,
}

/// Whether the host draws a frame around a tool's output (`Default`) or the
/// tool draws all of it (`SelfDrawn`, Pi's `"self"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum RenderShell {
    /// The host's frame.
    #[default]
    Default,
    /// The tool's own drawing only.
    SelfDrawn,
}

/// The generic call line: tool name and compact JSON arguments.
pub fn default_render_call(name: &str, args: &serde_json::Value, theme: &Theme) -> StyledText {
    let mut text = StyledText::new();
    let args = match args {
        serde_json::Value::Object(m) if m.is_empty() => String::new(),
        other => format!(" {other}"),
    };
    text.push(StyledLine::styled(name, theme.tool_title).push(args, theme.muted));
    text
}

/// The generic result view: the text content, at most `max_lines` lines
/// unless expanded (the first ones, or the latest ones of a partial result).
pub fn default_render_result(
    result: &agent_core::AgentToolResult,
    options: &RenderResultOptions,
    theme: &Theme,
    max_lines: usize,
) -> StyledText {
    let style = if options.is_error {
        theme.error
    } else {
        Style::new()
    };
    let body = result.text_content();
    let lines: Vec<&str> = body.lines().collect();
    let mut text = StyledText::new();
    if options.is_partial && !options.expanded && lines.len() > max_lines {
        // Progress: the latest lines.
        let start = lines.len() - max_lines;
        text.push(StyledLine::styled(
            format!("... ({start} earlier lines)"),
            theme.muted,
        ));
        for line in &lines[start..] {
            text.push(StyledLine::styled(*line, style));
        }
        return text;
    }
    let shown = if options.expanded {
        lines.len()
    } else {
        lines.len().min(max_lines)
    };
    for line in &lines[..shown] {
        text.push(StyledLine::styled(*line, style));
    }
    if shown < lines.len() {
        text.push(StyledLine::styled(
            format!("... ({} more lines)", lines.len() - shown),
            theme.muted,
        ));
    }
    text
}

/// Makes text safe to print on a terminal: escape sequences (clipboard
/// writes through OSC 52, title changes, cursor moves that could erase a
/// displayed command), other control characters and bidirectional overrides
/// become visible placeholders. Newlines and tabs stay; `\r\n` becomes `\n`
/// and a lone `\r` (which would let later text overwrite the line) is shown.
///
/// ```
/// use agent_tool::sanitize_terminal_text;
/// assert_eq!(sanitize_terminal_text("ok\x1b]52;c;aGk=\x07"), "ok␛]52;c;aGk=␇");
/// assert_eq!(sanitize_terminal_text("a\r\nb\tc"), "a\nb\tc");
/// assert_eq!(sanitize_terminal_text("safe\rrm -rf"), "safe␍rm -rf");
/// ```
pub fn sanitize_terminal_text(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            // C0 controls and DEL have visible "control pictures".
            '\u{0}'..='\u{1F}' if c != '\n' && c != '\t' => {
                out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{FFFD}'))
            }
            '\u{7F}' => out.push('\u{2421}'),
            c if unsafe_char(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}
