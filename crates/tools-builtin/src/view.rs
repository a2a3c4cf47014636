//! The small views the tools' renderers share: a header line and previews.

use agent_tool::anstyle::Style;
use agent_tool::{StyledLine, StyledText, Theme};

/// Number of lines the generic previews show.
pub(crate) const PREVIEW_LINES: usize = 10;

/// A header line `name rest` in the theme's title and accent styles.
pub(crate) fn header(name: &str, rest: &str, theme: &Theme) -> StyledText {
    let mut t = StyledText::new();
    t.push(StyledLine::styled(name, theme.tool_title).push(format!(" {rest}"), theme.accent));
    t
}

/// The first (or last) `n` lines of `text`, with a muted "more lines" note.
pub(crate) fn preview(
    text: &str,
    n: usize,
    from_end: bool,
    style: Style,
    theme: &Theme,
) -> StyledText {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = StyledText::new();
    if lines.len() <= n {
        for l in &lines {
            out.push(StyledLine::styled(*l, style));
        }
        return out;
    }
    let hidden = lines.len() - n;
    if from_end {
        out.push(StyledLine::styled(
            format!("... ({hidden} earlier lines)"),
            theme.muted,
        ));
        for l in &lines[hidden..] {
            out.push(StyledLine::styled(*l, style));
        }
    } else {
        for l in &lines[..n] {
            out.push(StyledLine::styled(*l, style));
        }
        out.push(StyledLine::styled(
            format!("... ({hidden} more lines)"),
            theme.muted,
        ));
    }
    out
}
