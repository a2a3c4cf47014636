//! The prompt editor: multi-line text with a grapheme-aware cursor,
//! wrapping by cell width, history, and big pastes as atomic markers.

use agent_tool::StyledLine;
use anstyle::Style;
use unicode_segmentation::UnicodeSegmentation;

use crate::paste;
use crate::text::{self, grapheme_width};

/// The editor's state.
#[derive(Debug, Clone, Default)]
pub struct Editor {
    text: String,
    /// Byte offset of the caret, always on a grapheme boundary.
    cursor: usize,
    /// Big pastes: the marker shown and the text it stands for.
    pastes: Vec<(String, String)>,
    paste_count: usize,
    history: Vec<String>,
    /// Position while browsing history, and the draft it replaced.
    browsing: Option<(usize, String)>,
}

impl Editor {
    /// An empty editor.
    pub fn new() -> Self {
        Self::default()
    }

    /// The text as shown (markers unexpanded).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The caret's byte offset.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Whether nothing is typed.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the text, caret at the end.
    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
        self.browsing = None;
    }

    /// Empties the editor (pastes forgotten).
    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.pastes.clear();
        self.browsing = None;
    }

    /// Takes the text to send: markers expanded, added to history, editor
    /// emptied. `None` when there is only whitespace.
    pub fn submit(&mut self) -> Option<String> {
        if self.text.trim().is_empty() {
            return None;
        }
        let shown = std::mem::take(&mut self.text);
        if self.history.last() != Some(&shown) {
            self.history.push(shown.clone());
        }
        let mut out = shown;
        for (marker, content) in self.pastes.drain(..) {
            if let Some(at) = out.find(&marker) {
                out.replace_range(at..at + marker.len(), &content);
            }
        }
        self.cursor = 0;
        self.browsing = None;
        Some(out)
    }

    /// Types text at the caret (control characters dropped).
    pub fn insert(&mut self, s: &str) {
        let clean: String = s
            .chars()
            .filter(|c| *c == '\n' || !c.is_control())
            .collect();
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
    }

    /// A new line at the caret.
    pub fn newline(&mut self) {
        self.insert("\n");
    }

    /// A bracketed paste: normalised, and a marker when big.
    pub fn paste(&mut self, raw: &str) {
        let text = paste::normalize(raw);
        if paste::needs_marker(&text) {
            self.paste_count += 1;
            let marker = paste::marker(self.paste_count, &text);
            self.insert(&marker);
            self.pastes.push((marker, text));
        } else {
            self.insert(&text);
        }
    }

    /// The marker ending at the caret, if any.
    fn marker_before(&self) -> Option<usize> {
        let before = &self.text[..self.cursor];
        self.pastes
            .iter()
            .find(|(m, _)| before.ends_with(m.as_str()))
            .map(|(m, _)| m.len())
    }

    /// The marker starting at the caret, if any.
    fn marker_after(&self) -> Option<usize> {
        let after = &self.text[self.cursor..];
        self.pastes
            .iter()
            .find(|(m, _)| after.starts_with(m.as_str()))
            .map(|(m, _)| m.len())
    }

    fn prev_boundary(&self) -> usize {
        if let Some(len) = self.marker_before() {
            return self.cursor - len;
        }
        self.text[..self.cursor]
            .grapheme_indices(true)
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    fn next_boundary(&self) -> usize {
        if let Some(len) = self.marker_after() {
            return self.cursor + len;
        }
        self.text[self.cursor..]
            .graphemes(true)
            .next()
            .map_or(self.cursor, |g| self.cursor + g.len())
    }

    fn forget_dangling_pastes(&mut self) {
        let text = &self.text;
        self.pastes.retain(|(m, _)| text.contains(m.as_str()));
    }

    /// Deletes the grapheme (or paste marker) before the caret.
    pub fn backspace(&mut self) {
        let start = self.prev_boundary();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
        self.forget_dangling_pastes();
    }

    /// Deletes the grapheme (or paste marker) after the caret.
    pub fn delete(&mut self) {
        let end = self.next_boundary();
        self.text.replace_range(self.cursor..end, "");
        self.forget_dangling_pastes();
    }

    /// Caret one grapheme left.
    pub fn left(&mut self) {
        self.cursor = self.prev_boundary();
    }

    /// Caret one grapheme right.
    pub fn right(&mut self) {
        self.cursor = self.next_boundary();
    }

    /// Caret to the start of its line.
    pub fn home(&mut self) {
        self.cursor = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
    }

    /// Caret to the end of its line.
    pub fn end(&mut self) {
        self.cursor = self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i);
    }

    /// Caret to the start of the previous word.
    pub fn word_left(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        self.cursor = trimmed
            .unicode_word_indices()
            .next_back()
            .map_or(0, |(i, _)| i);
    }

    /// Caret past the end of the next word.
    pub fn word_right(&mut self) {
        let after = &self.text[self.cursor..];
        self.cursor += after
            .unicode_word_indices()
            .next()
            .map_or(after.len(), |(i, w)| i + w.len());
    }

    /// Deletes the word before the caret (Ctrl+W).
    pub fn delete_word_back(&mut self) {
        let end = self.cursor;
        self.word_left();
        self.text.replace_range(self.cursor..end, "");
        self.forget_dangling_pastes();
    }

    /// Deletes to the start of the line (Ctrl+U).
    pub fn delete_to_line_start(&mut self) {
        let end = self.cursor;
        self.home();
        self.text.replace_range(self.cursor..end, "");
        self.forget_dangling_pastes();
    }

    /// Deletes to the end of the line (Ctrl+K).
    pub fn delete_to_line_end(&mut self) {
        let start = self.cursor;
        self.end();
        if self.cursor == start && start < self.text.len() {
            self.cursor += 1; // the newline itself
        }
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
        self.forget_dangling_pastes();
    }

    /// Up: the line above, or at the first line the previous history
    /// entry. Returns whether anything moved.
    pub fn up(&mut self) -> bool {
        if let Some(start) = self.text[..self.cursor].rfind('\n') {
            let col = self.cursor - start - 1;
            let prev_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
            self.cursor = self.column_in_line(prev_start, col);
            return true;
        }
        let next = match &self.browsing {
            Some((0, _)) => return false,
            Some((i, _)) => i - 1,
            None if self.history.is_empty() => return false,
            None => self.history.len() - 1,
        };
        let draft = match self.browsing.take() {
            Some((_, d)) => d,
            None => self.text.clone(),
        };
        self.text = self.history[next].clone();
        self.cursor = self.text.len();
        self.browsing = Some((next, draft));
        true
    }

    /// Down: the line below, or at the last line the next history entry
    /// (past the newest, the draft again).
    pub fn down(&mut self) -> bool {
        if let Some(off) = self.text[self.cursor..].find('\n') {
            let start = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
            let col = self.cursor - start;
            let next_start = self.cursor + off + 1;
            self.cursor = self.column_in_line(next_start, col);
            return true;
        }
        let Some((i, draft)) = self.browsing.take() else {
            return false;
        };
        if i + 1 < self.history.len() {
            self.text = self.history[i + 1].clone();
            self.browsing = Some((i + 1, draft));
        } else {
            self.text = draft;
        }
        self.cursor = self.text.len();
        true
    }

    /// The byte offset `col` bytes into the line at `start`, clamped to
    /// the line and snapped back to a grapheme boundary.
    fn column_in_line(&self, start: usize, col: usize) -> usize {
        let line_end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        let at = (start + col).min(line_end);
        // Snap to the start of the grapheme containing `at`.
        let mut snapped = start;
        for (i, g) in self.text[start..line_end].grapheme_indices(true) {
            if start + i + g.len() > at {
                break;
            }
            snapped = start + i + g.len();
        }
        snapped
    }

    /// The editor's rows at `width` (a `> ` gutter, wrapped by grapheme
    /// width) and the caret's (row, column).
    pub fn render(
        &self,
        width: usize,
        style: Style,
        gutter: Style,
    ) -> (Vec<StyledLine>, (usize, usize)) {
        let width = width.max(3);
        let inner = width - 2;
        let mut rows: Vec<StyledLine> = Vec::new();
        let mut caret = (0, 2);
        let mut offset = 0;
        for (li, line) in self.text.split('\n').enumerate() {
            let mut row = String::new();
            let mut used = 0;
            let mut first_row_of_line = true;
            let push_row = |rows: &mut Vec<StyledLine>, row: &mut String, first: bool| {
                let lead = if rows.is_empty() && first { "> " } else { "  " };
                rows.push(StyledLine::styled(lead, gutter).push(text::clean(row), style));
                row.clear();
            };
            for (gi, g) in line.grapheme_indices(true) {
                let w = grapheme_width(g);
                if used + w > inner && used > 0 {
                    push_row(&mut rows, &mut row, first_row_of_line && li == 0);
                    first_row_of_line = false;
                    used = 0;
                }
                if offset + gi == self.cursor {
                    caret = (rows.len(), 2 + used);
                }
                row.push_str(g);
                used += w;
            }
            if offset + line.len() == self.cursor {
                if used >= inner {
                    push_row(&mut rows, &mut row, first_row_of_line && li == 0);
                    used = 0;
                }
                caret = (rows.len(), 2 + used);
            }
            push_row(&mut rows, &mut row, first_row_of_line && li == 0);
            offset += line.len() + 1;
        }
        (rows, caret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(e: &Editor, width: usize) -> (String, (usize, usize)) {
        let (rows, caret) = e.render(width, Style::new(), Style::new());
        (text::plain(&rows), caret)
    }

    #[test]
    fn cursor_moves_by_grapheme() {
        let mut e = Editor::new();
        e.insert("ae\u{301}漢👨\u{200d}👩\u{200d}👧");
        e.left();
        assert_eq!(shown(&e, 40).1, (0, 2 + 1 + 1 + 2));
        e.left();
        e.backspace();
        assert_eq!(e.text(), "a漢👨\u{200d}👩\u{200d}👧");
    }

    #[test]
    fn wraps_by_width_and_keeps_the_caret() {
        let mut e = Editor::new();
        e.insert("漢字漢字");
        // 6 columns: the gutter and two wide glyphs per row.
        assert_eq!(shown(&e, 6), ("> 漢字\n  漢字\n  ".to_string(), (2, 2)));
        e.newline();
        e.insert("x");
        assert_eq!(shown(&e, 40).1, (1, 3));
    }

    #[test]
    fn big_paste_is_one_marker() {
        let mut e = Editor::new();
        e.insert("see ");
        e.paste(&"line\r\n".repeat(20));
        assert_eq!(e.text(), "see [paste #1 +21 lines]");
        e.backspace();
        assert_eq!(e.text(), "see ");
        e.paste(&format!("{}\x1b[2J", "x\n".repeat(11)));
        e.insert("!");
        let sent = e.submit().unwrap_or_default();
        assert_eq!(sent, format!("see {}[2J!", "x\n".repeat(11)));
    }

    #[test]
    fn history_walks_back_and_restores_the_draft() {
        let mut e = Editor::new();
        for t in ["one", "two"] {
            e.insert(t);
            e.submit();
        }
        e.insert("draft");
        assert!(e.up());
        assert_eq!(e.text(), "two");
        assert!(e.up());
        assert_eq!(e.text(), "one");
        assert!(!e.up());
        assert!(e.down());
        assert!(e.down());
        assert_eq!(e.text(), "draft");
    }
}
