//! Cell widths, wrapping and clipping of styled lines, and their ANSI form.
//!
//! Widths are measured per grapheme cluster (`unicode-segmentation`) with
//! `unicode-width`, each cluster at most two cells, so CJK, emoji ZWJ
//! sequences and combining marks take the columns a terminal gives them.
//! Text from models and tools is made safe first
//! ([`agent_tool::sanitize_terminal_text`]), so the only escapes a line
//! writes are its styles'.

use std::fmt::Write as _;

use agent_tool::{Span, StyledLine, sanitize_terminal_text};
use anstyle::Style;
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Columns a tab stands for (tabs are expanded, never sent).
const TAB: &str = "    ";

/// The columns one grapheme cluster takes (0, 1 or 2).
///
/// ```
/// assert_eq!(agent_tui::text::grapheme_width("a"), 1);
/// assert_eq!(agent_tui::text::grapheme_width("漢"), 2);
/// assert_eq!(agent_tui::text::grapheme_width("e\u{301}"), 1);
/// ```
pub fn grapheme_width(g: &str) -> usize {
    if g == "\t" {
        return TAB.len();
    }
    g.width().min(2)
}

/// The columns `text` takes on one row.
///
/// ```
/// assert_eq!(agent_tui::text::str_width("ab漢"), 4);
/// assert_eq!(agent_tui::text::str_width("👨\u{200d}👩\u{200d}👧"), 2);
/// ```
pub fn str_width(text: &str) -> usize {
    text.graphemes(true).map(grapheme_width).sum()
}

/// The columns a styled line takes.
pub fn line_width(line: &StyledLine) -> usize {
    line.spans.iter().map(|s| str_width(&s.text)).sum()
}

/// Text made safe for the terminal and free of tabs and newlines: what a
/// span may hold.
///
/// ```
/// assert_eq!(agent_tui::text::clean("a\tb\x1b[2J"), "a    b␛[2J");
/// ```
pub fn clean(text: &str) -> String {
    let safe = sanitize_terminal_text(text);
    if !safe.contains(['\t', '\n']) {
        return safe.into_owned();
    }
    safe.replace('\t', TAB).replace('\n', " ")
}

/// A line whose spans hold only [`clean`] text.
pub fn clean_line(line: &StyledLine) -> StyledLine {
    StyledLine {
        spans: line
            .spans
            .iter()
            .map(|s| Span {
                text: clean(&s.text),
                style: s.style,
            })
            .collect(),
    }
}

/// The first `width` columns of a line (a wide glyph that would straddle
/// the edge is left out).
///
/// ```
/// use agent_tool::StyledLine;
/// let line = StyledLine::plain("漢字abc");
/// assert_eq!(agent_tui::text::clip(&line, 3).to_plain(), "漢");
/// ```
pub fn clip(line: &StyledLine, width: usize) -> StyledLine {
    let mut out = StyledLine::new();
    let mut used = 0;
    for span in &line.spans {
        let mut text = String::new();
        for g in span.text.graphemes(true) {
            let w = grapheme_width(g);
            if used + w > width {
                if !text.is_empty() {
                    out.spans.push(Span {
                        text,
                        style: span.style,
                    });
                }
                return out;
            }
            used += w;
            text.push_str(g);
        }
        if !text.is_empty() {
            out.spans.push(Span {
                text,
                style: span.style,
            });
        }
    }
    out
}

/// Breaks a line into rows of at most `width` columns: at spaces where it
/// can, inside a word only when the word is wider than a row. Leading
/// spaces of a continuation row are dropped. Always at least one row.
///
/// ```
/// use agent_tool::StyledLine;
/// let rows = agent_tui::text::wrap(&StyledLine::plain("one two three"), 7);
/// let rows: Vec<String> = rows.iter().map(|r| r.to_plain()).collect();
/// assert_eq!(rows, ["one two", "three"]);
/// ```
pub fn wrap(line: &StyledLine, width: usize) -> Vec<StyledLine> {
    let width = width.max(1);
    // Pieces: (text, style, is_space), each a word bound.
    let mut pieces: Vec<(&str, Style, bool)> = Vec::new();
    for span in &line.spans {
        for w in whitespace_runs(&span.text) {
            let space = w.chars().all(char::is_whitespace);
            pieces.push((w, span.style, space));
        }
    }
    let mut rows = vec![StyledLine::new()];
    let mut used = 0;
    for (piece, style, space) in pieces {
        let w = str_width(piece);
        if used + w <= width {
            push_text(rows.last_mut(), piece, style);
            used += w;
            continue;
        }
        if space {
            // A break: the space is not carried to the next row.
            rows.push(StyledLine::new());
            used = 0;
            continue;
        }
        if w <= width && used > 0 {
            rows.push(StyledLine::new());
            push_text(rows.last_mut(), piece, style);
            used = w;
            continue;
        }
        // A word wider than what is left: by grapheme.
        for g in piece.graphemes(true) {
            let gw = grapheme_width(g);
            if used + gw > width && used > 0 {
                rows.push(StyledLine::new());
                used = 0;
            }
            push_text(rows.last_mut(), g, style);
            used += gw;
        }
    }
    for row in &mut rows {
        trim_end(row);
    }
    rows
}

/// `text` cut into alternating runs of whitespace and of everything else.
fn whitespace_runs(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let space = first.is_whitespace();
        let end = rest
            .char_indices()
            .find(|(_, c)| c.is_whitespace() != space)
            .map_or(rest.len(), |(i, _)| i);
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some(run)
    })
}

fn push_text(row: Option<&mut StyledLine>, text: &str, style: Style) {
    let Some(row) = row else { return };
    match row.spans.last_mut() {
        Some(last) if last.style == style => last.text.push_str(text),
        _ => row.spans.push(Span {
            text: text.to_string(),
            style,
        }),
    }
}

fn trim_end(row: &mut StyledLine) {
    while let Some(last) = row.spans.last_mut() {
        let trimmed = last.text.trim_end().len();
        last.text.truncate(trimmed);
        if last.text.is_empty() && last.style == Style::new() {
            row.spans.pop();
        } else {
            break;
        }
    }
}

/// Wraps every line, see [`wrap`].
pub fn wrap_all(lines: &[StyledLine], width: usize) -> Vec<StyledLine> {
    lines.iter().flat_map(|l| wrap(l, width)).collect()
}

/// Appends the line's ANSI form (styles around spans, text sanitized) to
/// `out`; no newline. Ends with the default style.
pub fn write_ansi(out: &mut String, line: &StyledLine) {
    let mut styled = false;
    for span in &line.spans {
        let text = sanitize_terminal_text(&span.text);
        if span.style == Style::new() {
            if styled {
                out.push_str("\x1b[0m");
                styled = false;
            }
            out.push_str(&text);
        } else {
            if styled {
                out.push_str("\x1b[0m");
            }
            let _ = write!(out, "{}", span.style.render());
            out.push_str(&text);
            styled = true;
        }
    }
    if styled {
        out.push_str("\x1b[0m");
    }
}

/// Lines as plain text joined with `\n` (tests and logs).
pub fn plain(lines: &[StyledLine]) -> String {
    lines
        .iter()
        .map(StyledLine::to_plain)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str, width: usize) -> Vec<String> {
        wrap(&StyledLine::plain(text), width)
            .iter()
            .map(StyledLine::to_plain)
            .collect()
    }

    #[test]
    fn wraps_words_and_breaks_long_ones() {
        assert_eq!(rows("abcdefgh ij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(rows("", 4), [""]);
        assert_eq!(rows("a  b", 1), ["a", "b"]);
    }

    #[test]
    fn wide_and_combining_graphemes_keep_their_columns() {
        assert_eq!(rows("漢字漢字", 5), ["漢字", "漢字"]);
        assert_eq!(
            rows("e\u{301}e\u{301}e\u{301}", 2),
            ["e\u{301}e\u{301}", "e\u{301}"]
        );
        let family = "👨\u{200d}👩\u{200d}👧";
        assert_eq!(rows(&format!("{family}{family}"), 3), [family, family]);
        for r in wrap(&StyledLine::plain("漢字 abc 👍🏽 x"), 3) {
            assert!(line_width(&r) <= 3);
        }
    }

    #[test]
    fn width_one_never_loops_on_wide_glyphs() {
        // A two-column glyph on a one-column row: alone on its row.
        assert_eq!(rows("漢字", 1), ["漢", "字"]);
    }

    #[test]
    fn ansi_keeps_text_inert() {
        let mut out = String::new();
        write_ansi(&mut out, &StyledLine::plain("x\x1b]52;c;aGk=\x07"));
        assert!(!out.contains('\x1b'));
        let mut out = String::new();
        write_ansi(&mut out, &StyledLine::styled("b", Style::new().bold()));
        assert_eq!(out, "\x1b[1mb\x1b[0m");
    }
}
