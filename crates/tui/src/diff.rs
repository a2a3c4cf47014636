//! Diffs in tool results, drawn with old and new line numbers in a gutter.
//!
//! The UI names no tool, so it recognises a diff by its text: a tool that
//! puts a unified diff (`@@ -a,b +c,d @@` hunks, optionally after `---` /
//! `+++` headers) in a top-level string of its result's `details` gets
//! this view in place of its result renderer's ([`find_unified_diff`]).
//! Long lines wrap under their text, the gutter kept blank on the
//! continuation rows.

use agent_tool::{Span, StyledLine};
use anstyle::Style;
use serde_json::Value;
use unicode_segmentation::UnicodeSegmentation;

use crate::text;
use crate::theme::UiTheme;

/// Diff lines a collapsed view shows (Ctrl+O shows all).
pub const PREVIEW_LINES: usize = 24;

/// What a diff line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffKind {
    /// Unchanged.
    Context,
    /// Only in the new text.
    Added,
    /// Only in the old text.
    Removed,
    /// A hunk other than the first begins (lines were skipped).
    Gap,
    /// A file header of a diff over several files.
    File,
    /// `\ No newline at end of file` and the like.
    Note,
}

/// One line of a parsed diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine<'a> {
    /// What it is.
    pub kind: DiffKind,
    /// Its number in the old text (context and removed lines).
    pub old: Option<usize>,
    /// Its number in the new text (context and added lines).
    pub new: Option<usize>,
    /// The line without its `+`/`-`/space marker.
    pub text: &'a str,
}

/// The first top-level string of `details` (or `details` itself) that is
/// a unified diff.
///
/// ```
/// use serde_json::json;
/// let details = json!({"diff": "-1 old\n+1 new", "patch": "--- a\n+++ a\n@@ -1 +1 @@\n-old\n+new\n"});
/// assert!(agent_tui::diff::find_unified_diff(&details).unwrap().starts_with("--- a"));
/// assert!(agent_tui::diff::find_unified_diff(&json!({"text": "@@ not a diff"})).is_none());
/// ```
pub fn find_unified_diff(details: &Value) -> Option<&str> {
    let candidates: Box<dyn Iterator<Item = &Value>> = match details {
        Value::Object(map) => Box::new(map.values()),
        other => Box::new(std::iter::once(other)),
    };
    candidates
        .filter_map(Value::as_str)
        .find(|text| parse(text).is_some())
}

/// A hunk being read: the next numbers and the lines still to come.
#[derive(Debug, Clone, Copy)]
struct Hunk {
    old: usize,
    new: usize,
    old_left: usize,
    new_left: usize,
}

/// `@@ -a[,b] +c[,d] @@ ...` (a missing count is 1).
fn hunk_header(line: &str) -> Option<Hunk> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (old, old_left) = range(old)?;
    let (new, new_left) = range(new)?;
    Some(Hunk {
        old,
        new,
        old_left,
        new_left,
    })
}

fn is_file_header(line: &str) -> bool {
    [
        "--- ",
        "+++ ",
        "diff ",
        "index ",
        "new file",
        "deleted file",
        "old mode",
        "new mode",
        "similarity",
        "rename ",
        "Binary files",
    ]
    .iter()
    .any(|p| line.starts_with(p))
}

/// The lines of a unified diff, numbered; `None` when `text` is not one
/// (no hunk, a hunk whose lines do not add up to its header, or a line
/// that belongs to no part of a diff).
pub fn parse(text: &str) -> Option<Vec<DiffLine<'_>>> {
    let mut out = Vec::new();
    let mut hunk: Option<Hunk> = None;
    let mut hunks = 0;
    let mut files = 0;
    for line in text.lines() {
        let open = hunk.filter(|h| h.old_left > 0 || h.new_left > 0);
        let Some(mut h) = open else {
            if line.starts_with('\\') {
                out.push(DiffLine {
                    kind: DiffKind::Note,
                    old: None,
                    new: None,
                    text: line,
                });
            } else if let Some(next) = hunk_header(line) {
                if hunks > 0
                    && out
                        .last()
                        .is_none_or(|l: &DiffLine<'_>| l.kind != DiffKind::File)
                {
                    out.push(DiffLine {
                        kind: DiffKind::Gap,
                        old: None,
                        new: None,
                        text: "",
                    });
                }
                hunks += 1;
                hunk = Some(next);
            } else if is_file_header(line) {
                if let Some(path) = line.strip_prefix("+++ ") {
                    files += 1;
                    out.push(DiffLine {
                        kind: DiffKind::File,
                        old: None,
                        new: None,
                        text: path.trim_end(),
                    });
                }
            } else {
                return None;
            }
            continue;
        };
        let (kind, rest) = match line.as_bytes().first() {
            Some(b'+') => (DiffKind::Added, &line[1..]),
            Some(b'-') => (DiffKind::Removed, &line[1..]),
            Some(b' ') => (DiffKind::Context, &line[1..]),
            Some(b'\\') => (DiffKind::Note, line),
            // Some tools strip the space of an empty context line.
            None => (DiffKind::Context, line),
            Some(_) => return None,
        };
        let takes_old = matches!(kind, DiffKind::Removed | DiffKind::Context);
        let takes_new = matches!(kind, DiffKind::Added | DiffKind::Context);
        if (takes_old && h.old_left == 0) || (takes_new && h.new_left == 0) {
            return None;
        }
        let old = takes_old.then_some(h.old);
        let new = takes_new.then_some(h.new);
        if takes_old {
            h.old += 1;
            h.old_left -= 1;
        }
        if takes_new {
            h.new += 1;
            h.new_left -= 1;
        }
        hunk = Some(h);
        out.push(DiffLine {
            kind,
            old,
            new,
            text: rest,
        });
    }
    if hunks == 0 {
        return None;
    }
    // One file: its name is in the call's header already.
    if files <= 1 {
        out.retain(|l| l.kind != DiffKind::File);
    }
    Some(out)
}

/// The diff's rows at `width`: `old new ±` in a gutter, the text wrapped
/// under itself; at most [`PREVIEW_LINES`] diff lines unless `expanded`.
pub fn render(
    lines: &[DiffLine<'_>],
    width: usize,
    theme: &UiTheme,
    expanded: bool,
) -> Vec<StyledLine> {
    let width = width.max(1);
    let digits = lines
        .iter()
        .flat_map(|l| [l.old, l.new])
        .flatten()
        .max()
        .unwrap_or(1)
        .to_string()
        .len();
    // `old new ± ` when it leaves room for text, else `± ` only.
    let numbered = width >= 2 * digits + 4 + 12;
    let gutter = if numbered { 2 * digits + 4 } else { 2 };
    let text_width = width.saturating_sub(gutter).max(1);
    let shown = if expanded {
        lines.len()
    } else {
        lines.len().min(PREVIEW_LINES)
    };
    let tools = &theme.tools;
    let mut rows = Vec::new();
    for line in &lines[..shown] {
        let (sign, style) = match line.kind {
            DiffKind::Added => ("+", tools.diff_added),
            DiffKind::Removed => ("-", tools.diff_removed),
            DiffKind::Context => (" ", tools.diff_context),
            DiffKind::Gap => {
                let pad = " ".repeat(gutter.saturating_sub(2));
                rows.push(text::clip(
                    &StyledLine::styled(format!("{pad}..."), theme.dim),
                    width,
                ));
                continue;
            }
            DiffKind::File => {
                rows.push(text::clip(
                    &StyledLine::styled(text::clean(line.text), tools.accent),
                    width,
                ));
                continue;
            }
            DiffKind::Note => (" ", theme.dim),
        };
        let number =
            |n: Option<usize>| n.map_or_else(|| " ".repeat(digits), |n| format!("{n:>digits$}"));
        let head = if numbered {
            format!("{} {} ", number(line.old), number(line.new))
        } else {
            String::new()
        };
        let blank = " ".repeat(gutter);
        for (i, piece) in hard_wrap(&text::clean(line.text), text_width)
            .into_iter()
            .enumerate()
        {
            let row = if i == 0 {
                StyledLine::styled(head.clone(), theme.dim).push(format!("{sign} "), style)
            } else {
                StyledLine::plain(blank.clone())
            };
            rows.push(row.push(piece, style));
        }
    }
    if shown < lines.len() {
        rows.push(text::clip(
            &StyledLine::styled(
                format!(
                    "... ({} more diff lines, ctrl+o to expand)",
                    lines.len() - shown
                ),
                theme.dim,
            ),
            width,
        ));
    }
    rows.into_iter().map(merge_spans).collect()
}

/// `text` cut into pieces of at most `width` columns, every character
/// kept (code is not word-wrapped: its spaces matter). At least one piece.
fn hard_wrap(text: &str, width: usize) -> Vec<String> {
    let mut pieces = vec![String::new()];
    let mut used = 0;
    for g in text.graphemes(true) {
        let w = text::grapheme_width(g);
        if used + w > width && used > 0 {
            pieces.push(String::new());
            used = 0;
        }
        if let Some(last) = pieces.last_mut() {
            last.push_str(g);
        }
        used += w;
    }
    pieces
}

/// Adjacent spans of one style joined (fewer escapes on the wire).
fn merge_spans(line: StyledLine) -> StyledLine {
    let mut out: Vec<Span> = Vec::with_capacity(line.spans.len());
    for span in line.spans {
        match out.last_mut() {
            Some(last) if last.style == span.style => last.text.push_str(&span.text),
            _ if span.text.is_empty() && span.style == Style::new() => {}
            _ => out.push(span),
        }
    }
    StyledLine { spans: out }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "--- f.rs\n+++ f.rs\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -10,2 +10,3 @@\n x\n+y\n z\n\\ No newline at end of file\n";

    #[test]
    fn numbers_follow_the_hunks() {
        let lines = parse(PATCH).expect("a diff");
        let numbered: Vec<(DiffKind, Option<usize>, Option<usize>, &str)> = lines
            .iter()
            .map(|l| (l.kind, l.old, l.new, l.text))
            .collect();
        use DiffKind::*;
        assert_eq!(
            numbered,
            [
                (Context, Some(1), Some(1), "a"),
                (Removed, Some(2), None, "b"),
                (Added, None, Some(2), "B"),
                (Context, Some(3), Some(3), "c"),
                (Gap, None, None, ""),
                (Context, Some(10), Some(10), "x"),
                (Added, None, Some(11), "y"),
                (Context, Some(11), Some(12), "z"),
                (Note, None, None, "\\ No newline at end of file"),
            ]
        );
    }

    #[test]
    fn only_unified_diffs_are_recognised() {
        assert!(parse("-1 old\n+1 new").is_none());
        assert!(parse("plain text\n@@ -1 +1 @@\n-a").is_none());
        assert!(parse("@@ -1 +1 @@\n-a\n+b").is_some());
        assert!(parse("@@ -x +1 @@\n-a").is_none());
        assert!(parse("@@ -1 +1 @@\nstray").is_none());
        // A hunk reads as many lines as its header says: `--- x` inside
        // it is a removed line, after it a header.
        let lines = parse("@@ -1,2 +1 @@\n--- x\n-y\n+z\n").expect("a diff");
        assert_eq!(lines[0].text, "-- x");
        assert!(parse("@@ -1 +1 @@\n-a\n+b\n-c").is_none());
    }

    #[test]
    fn long_lines_wrap_under_their_text() {
        let lines = parse("@@ -1 +1 @@\n-abcdefghijklmnop\n+漢字漢字漢字漢字漢字").expect("a diff");
        let rows = render(&lines, 20, &UiTheme::plain(), true);
        let text: Vec<String> = rows.iter().map(StyledLine::to_plain).collect();
        assert_eq!(
            text,
            [
                "1   - abcdefghijklmn",
                "      op",
                "  1 + 漢字漢字漢字漢",
                "      字漢字",
            ]
        );
        for r in &rows {
            assert!(text::line_width(r) <= 20);
        }
    }
}
