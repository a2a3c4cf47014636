//! Text selected with the mouse in fullscreen: which columns of a row it
//! covers, how it is drawn, and the *logical* text it stands for (the
//! lines as the cell wrote them, not the wrapped rows), sent to the
//! clipboard with OSC 52.

use agent_tool::{Span, StyledLine};
use anstyle::Style;
use base64::Engine as _;
use unicode_segmentation::UnicodeSegmentation;

use crate::cell::{Cell, CellContext};
use crate::text;

/// A point of the document: a row of the whole transcript and a column.
pub type Point = (usize, usize);

/// A selection from where the button went down to where it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    /// Where the drag began.
    pub anchor: Point,
    /// Where it is now.
    pub head: Point,
}

impl Selection {
    /// The covered range, in document order: from `start` (inclusive) to
    /// `end` (the column after the last one selected).
    pub fn range(&self) -> (Point, Point) {
        let (a, b) = if self.anchor <= self.head {
            (self.anchor, self.head)
        } else {
            (self.head, self.anchor)
        };
        (a, (b.0, b.1 + 1))
    }

    /// The columns of document row `row` that are selected, if any.
    pub fn columns(&self, row: usize) -> Option<(usize, usize)> {
        let ((r0, c0), (r1, c1)) = self.range();
        if row < r0 || row > r1 {
            return None;
        }
        let start = if row == r0 { c0 } else { 0 };
        let end = if row == r1 { c1 } else { usize::MAX };
        Some((start, end))
    }
}

/// The part of `line` in columns `start..end` (a wide glyph counts as in
/// when its first column is).
pub fn slice_columns(line: &StyledLine, start: usize, end: usize) -> StyledLine {
    restyle(line, start, end, None).1
}

/// `line` with columns `start..end` drawn with `style` on top of their own.
pub fn highlight(line: &StyledLine, start: usize, end: usize, style: Style) -> StyledLine {
    restyle(line, start, end, Some(style)).0
}

/// Walks the graphemes once: the line with the range restyled, and the
/// range alone.
fn restyle(
    line: &StyledLine,
    start: usize,
    end: usize,
    style: Option<Style>,
) -> (StyledLine, StyledLine) {
    let mut whole = StyledLine::new();
    let mut part = StyledLine::new();
    let mut col = 0;
    for span in &line.spans {
        for g in span.text.graphemes(true) {
            let inside = col >= start && col < end;
            let styled = match (inside, style) {
                (true, Some(s)) => overlay(span.style, s),
                _ => span.style,
            };
            push(&mut whole, g, styled);
            if inside {
                push(&mut part, g, span.style);
            }
            col += text::grapheme_width(g);
        }
    }
    (whole, part)
}

/// `top`'s colours and effects over `base`'s.
fn overlay(base: Style, top: Style) -> Style {
    let mut s = base.effects(base.get_effects() | top.get_effects());
    if top.get_fg_color().is_some() {
        s = s.fg_color(top.get_fg_color());
    }
    if top.get_bg_color().is_some() {
        s = s.bg_color(top.get_bg_color());
    }
    s
}

fn push(line: &mut StyledLine, g: &str, style: Style) {
    match line.spans.last_mut() {
        Some(last) if last.style == style => last.text.push_str(g),
        _ => line.spans.push(Span {
            text: g.to_string(),
            style,
        }),
    }
}

/// The logical text of the rows `first..=last` of `cell` (its rows start at
/// document row `top`), cut to `sel`: whole lines as the cell wrote them,
/// and for a line only partly selected, the stretch of its text from the
/// first selected character to the last (the spaces a wrap removed are
/// back). One string per logical line touched.
pub fn cell_text(
    cell: &mut Cell,
    cx: &CellContext,
    width: usize,
    top: usize,
    sel: &Selection,
) -> Vec<String> {
    let lines = cell.lines(cx, width).to_vec();
    let mut out = Vec::new();
    let mut row = top;
    for line in &lines {
        let rows: Vec<StyledLine> = text::wrap(line, width)
            .iter()
            .map(|r| text::clip(r, width))
            .collect();
        let logical = line.to_plain();
        let mut from = 0;
        let mut picked: Option<(usize, usize)> = None;
        for r in &rows {
            let plain = r.to_plain();
            // Where this row's text sits in the logical line (rows are in
            // order and only lose the spaces a wrap broke at).
            let at = logical
                .get(from..)
                .and_then(|rest| rest.find(&plain))
                .map(|i| from + i);
            if let (Some(at), Some((c0, c1))) = (at, sel.columns(row)) {
                let before = slice_columns(r, 0, c0).to_plain().len();
                let chosen = slice_columns(r, c0, c1).to_plain().len();
                if chosen > 0 {
                    let (s, e) = (at + before, at + before + chosen);
                    picked = Some(match picked {
                        Some((s0, _)) => (s0, e),
                        None => (s, e),
                    });
                }
            }
            if let Some(at) = at {
                from = at + plain.len();
            }
            row += 1;
        }
        if let Some((s, e)) = picked {
            out.push(logical.get(s..e).unwrap_or_default().to_string());
        }
    }
    out
}

/// The escape that puts `text` on the clipboard (OSC 52; terminals that
/// do not know it ignore it).
///
/// ```
/// assert_eq!(agent_tui::selection::osc52("hi"), "\x1b]52;c;aGk=\x07");
/// ```
pub fn osc52(text: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{encoded}\x07")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellKind;
    use crate::theme::UiTheme;

    #[test]
    fn columns_cut_and_highlight_keep_wide_glyphs_whole() {
        let line = StyledLine::plain("ab漢字cd");
        assert_eq!(slice_columns(&line, 2, 6).to_plain(), "漢字");
        let lit = highlight(&line, 2, 4, Style::new().invert());
        assert_eq!(lit.spans.len(), 3);
        assert_eq!(lit.spans[1].text, "漢");
    }

    #[test]
    fn a_selection_across_wrapped_rows_gives_the_logical_line() {
        let cx = CellContext {
            theme: UiTheme::plain(),
            registry: None,
            cwd: "/".into(),
        };
        let mut cell = Cell::new(CellKind::User("one two three four".into()), true);
        // "> one two" / "three four" at 10 columns, from row 5.
        let sel = Selection {
            anchor: (5, 6),
            head: (6, 4),
        };
        assert_eq!(cell_text(&mut cell, &cx, 10, 5, &sel), ["two three"]);
    }
}
