//! The prompt editor: multi-line text with a grapheme-aware caret, undo,
//! a kill ring, prompt history with reverse search, and big pastes as
//! atomic markers. Drawn by [`Editor::render`], wrapped by cell width.

mod history;
mod kill_ring;
mod render;
mod words;

pub use history::{HISTORY_SIZE, History, HistorySearch};
pub use kill_ring::{KILL_RING_SIZE, KillRing};

use unicode_segmentation::UnicodeSegmentation;

use crate::paste;

/// At most this many undo steps are kept.
pub const UNDO_DEPTH: usize = 200;

/// What the last edit was, for undo coalescing and yank-pop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum LastEdit {
    #[default]
    Other,
    /// Typing inside a word: one undo step for the whole word.
    TypeWord,
    /// A kill: the next kill joins its ring entry.
    Kill,
    /// A yank of the bytes `start..end`: Alt+Y may replace them.
    Yank { start: usize, end: usize },
}

/// The editor's state.
#[derive(Debug, Clone, Default)]
pub struct Editor {
    text: String,
    /// Byte offset of the caret, always on a grapheme boundary.
    cursor: usize,
    /// Big pastes: the marker shown and the text it stands for. Kept until
    /// the text is sent or cleared, so an undone or yanked marker still
    /// expands.
    pastes: Vec<(String, String)>,
    paste_count: usize,
    history: History,
    /// Position while browsing history, and the draft it replaced.
    browsing: Option<(usize, String)>,
    search: Option<HistorySearch>,
    undo: Vec<(String, usize)>,
    kills: KillRing,
    last: LastEdit,
    /// The next typed key is a jump target: forward (true) or backward.
    jump: Option<bool>,
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

    /// The prompt history.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Starts the history over with `prompts` (oldest first), as Pi does
    /// from a session's user messages on start and resume.
    pub fn set_history<'a>(&mut self, prompts: impl IntoIterator<Item = &'a str>) {
        self.history.clear();
        for p in prompts {
            self.history.push(p);
        }
        self.browsing = None;
    }

    /// The kill ring.
    pub fn kill_ring(&self) -> &KillRing {
        &self.kills
    }

    /// Replaces the text, caret at the end (one undo step).
    pub fn set_text(&mut self, text: &str) {
        self.snapshot();
        self.text = text.to_string();
        self.cursor = self.text.len();
        self.browsing = None;
        self.last = LastEdit::Other;
    }

    /// Empties the editor (pastes forgotten; one undo step).
    pub fn clear(&mut self) {
        if !self.text.is_empty() {
            self.snapshot();
        }
        self.text.clear();
        self.cursor = 0;
        self.pastes.clear();
        self.browsing = None;
        self.search = None;
        self.last = LastEdit::Other;
    }

    /// Takes the text to send: markers expanded, added to history, editor
    /// emptied. `None` when there is only whitespace.
    pub fn submit(&mut self) -> Option<String> {
        if self.text.trim().is_empty() {
            return None;
        }
        let shown = std::mem::take(&mut self.text);
        self.history.push(&shown);
        let mut out = shown;
        for (marker, content) in self.pastes.drain(..) {
            if let Some(at) = out.find(&marker) {
                out.replace_range(at..at + marker.len(), &content);
            }
        }
        self.cursor = 0;
        self.browsing = None;
        self.undo.clear();
        self.last = LastEdit::Other;
        Some(out)
    }

    fn snapshot(&mut self) {
        if self.undo.last().is_some_and(|(t, _)| *t == self.text) {
            return;
        }
        self.undo.push((self.text.clone(), self.cursor));
        if self.undo.len() > UNDO_DEPTH {
            self.undo.remove(0);
        }
    }

    /// Back to the text before the last edit (typing a word is one edit).
    /// Returns whether there was one.
    pub fn undo(&mut self) -> bool {
        self.browsing = None;
        self.last = LastEdit::Other;
        match self.undo.pop() {
            Some((text, cursor)) => {
                self.text = text;
                self.cursor = cursor.min(self.text.len());
                true
            }
            None => false,
        }
    }

    /// Types text at the caret (control characters dropped). A word typed
    /// key by key is one undo step; each blank is its own.
    pub fn insert(&mut self, s: &str) {
        let clean: String = s
            .chars()
            .filter(|c| *c == '\n' || !c.is_control())
            .collect();
        if clean.is_empty() {
            return;
        }
        self.browsing = None;
        let blank = clean.chars().all(char::is_whitespace);
        if blank || self.last != LastEdit::TypeWord {
            self.snapshot();
        }
        self.last = if blank {
            LastEdit::Other
        } else {
            LastEdit::TypeWord
        };
        self.put(&clean);
    }

    /// Inserts at the caret with no undo bookkeeping.
    fn put(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
    }

    /// A new line at the caret.
    pub fn newline(&mut self) {
        self.insert("\n");
    }

    /// A bracketed paste: normalised, and a marker when big.
    pub fn paste(&mut self, raw: &str) {
        let text = paste::normalize(raw);
        if text.is_empty() {
            return;
        }
        self.snapshot();
        self.browsing = None;
        self.last = LastEdit::Other;
        if paste::needs_marker(&text) {
            self.paste_count += 1;
            let marker = paste::marker(self.paste_count, &text);
            self.put(&marker);
            self.pastes.push((marker, text));
        } else {
            self.put(&text);
        }
    }

    /// Replaces the bytes `start..end` with `with`, caret after it (one
    /// undo step): how a completion is applied.
    pub fn replace_range(&mut self, start: usize, end: usize, with: &str) {
        let end = end.min(self.text.len());
        let start = start.min(end);
        if !self.text.is_char_boundary(start) || !self.text.is_char_boundary(end) {
            return;
        }
        self.snapshot();
        self.browsing = None;
        self.last = LastEdit::Other;
        self.text.replace_range(start..end, with);
        self.cursor = start + with.len();
    }

    fn markers(&self) -> Vec<&str> {
        self.pastes.iter().map(|(m, _)| m.as_str()).collect()
    }

    fn prev_boundary(&self) -> usize {
        let before = &self.text[..self.cursor];
        if let Some((m, _)) = self
            .pastes
            .iter()
            .find(|(m, _)| before.ends_with(m.as_str()))
        {
            return self.cursor - m.len();
        }
        before
            .grapheme_indices(true)
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    fn next_boundary(&self) -> usize {
        let after = &self.text[self.cursor..];
        if let Some((m, _)) = self
            .pastes
            .iter()
            .find(|(m, _)| after.starts_with(m.as_str()))
        {
            return self.cursor + m.len();
        }
        after
            .graphemes(true)
            .next()
            .map_or(self.cursor, |g| self.cursor + g.len())
    }

    /// Deletes `start..end` (an undo step); with `kill` into the ring,
    /// joining a kill just before.
    fn delete_range(&mut self, start: usize, end: usize, kill: Option<bool>) {
        if start >= end {
            return;
        }
        self.snapshot();
        self.browsing = None;
        if let Some(prepend) = kill {
            let accumulate = self.last == LastEdit::Kill;
            self.kills.push(&self.text[start..end], prepend, accumulate);
            self.last = LastEdit::Kill;
        } else {
            self.last = LastEdit::Other;
        }
        self.text.replace_range(start..end, "");
        self.cursor = start;
    }

    /// Deletes the grapheme (or paste marker) before the caret.
    pub fn backspace(&mut self) {
        let start = self.prev_boundary();
        self.delete_range(start, self.cursor, None);
    }

    /// Deletes the grapheme (or paste marker) after the caret.
    pub fn delete(&mut self) {
        let end = self.next_boundary();
        self.delete_range(self.cursor, end, None);
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    fn moved(&mut self, to: usize) {
        self.cursor = to;
        self.last = LastEdit::Other;
    }

    /// Caret one grapheme left.
    pub fn left(&mut self) {
        self.moved(self.prev_boundary());
    }

    /// Caret one grapheme right.
    pub fn right(&mut self) {
        self.moved(self.next_boundary());
    }

    /// Caret to the start of its line.
    pub fn home(&mut self) {
        self.moved(self.line_start());
    }

    /// Caret to the end of its line.
    pub fn end(&mut self) {
        self.moved(self.line_end());
    }

    /// Caret to the start of the previous word.
    pub fn word_left(&mut self) {
        self.moved(words::left(&self.text, self.cursor, &self.markers()));
    }

    /// Caret past the end of the next word.
    pub fn word_right(&mut self) {
        self.moved(words::right(&self.text, self.cursor, &self.markers()));
    }

    /// Kills the word before the caret (Ctrl+W, Alt+Backspace).
    pub fn delete_word_back(&mut self) {
        let start = words::left(&self.text, self.cursor, &self.markers());
        self.delete_range(start, self.cursor, Some(true));
    }

    /// Kills the word after the caret (Alt+D).
    pub fn delete_word_forward(&mut self) {
        let end = words::right(&self.text, self.cursor, &self.markers());
        self.delete_range(self.cursor, end, Some(false));
    }

    /// Kills to the start of the line; at its start, the newline before
    /// (Ctrl+U).
    pub fn delete_to_line_start(&mut self) {
        let start = match self.line_start() {
            s if s == self.cursor => s.saturating_sub(1),
            s => s,
        };
        self.delete_range(start, self.cursor, Some(true));
    }

    /// Kills to the end of the line; at its end, the newline (Ctrl+K).
    pub fn delete_to_line_end(&mut self) {
        let end = match self.line_end() {
            e if e == self.cursor && e < self.text.len() => e + 1,
            e => e,
        };
        self.delete_range(self.cursor, end, Some(false));
    }

    /// Puts the newest kill at the caret (Ctrl+Y).
    pub fn yank(&mut self) {
        let Some(text) = self.kills.peek().map(str::to_string) else {
            return;
        };
        self.snapshot();
        self.browsing = None;
        let start = self.cursor;
        self.put(&text);
        self.last = LastEdit::Yank {
            start,
            end: self.cursor,
        };
    }

    /// Right after a yank, replaces what it put with the kill before it
    /// (Alt+Y).
    pub fn yank_pop(&mut self) {
        let LastEdit::Yank { start, end } = self.last else {
            return;
        };
        if self.kills.len() < 2 || end > self.text.len() {
            return;
        }
        self.snapshot();
        self.kills.rotate();
        let text = self.kills.peek().unwrap_or_default().to_string();
        self.text.replace_range(start..end, &text);
        self.cursor = start + text.len();
        self.last = LastEdit::Yank {
            start,
            end: self.cursor,
        };
    }

    /// Arms a jump: the next [`Editor::jump_to`] moves the caret to that
    /// character, forward or backward.
    pub fn start_jump(&mut self, forward: bool) {
        self.jump = Some(forward);
    }

    /// Whether a jump is armed.
    pub fn jump_armed(&self) -> bool {
        self.jump.is_some()
    }

    /// Cancels an armed jump.
    pub fn cancel_jump(&mut self) {
        self.jump = None;
    }

    /// Completes an armed jump to the next (or previous) `c`; the caret
    /// stays when there is none.
    pub fn jump_to(&mut self, c: char) {
        let Some(forward) = self.jump.take() else {
            return;
        };
        let found = if forward {
            let from = self.next_boundary();
            self.text[from..].find(c).map(|i| from + i)
        } else {
            self.text[..self.cursor].rfind(c)
        };
        if let Some(at) = found {
            self.moved(at);
        }
    }

    /// Up: the line above. On the first line the previous history entry
    /// when the editor is empty, already browsing, or the caret is at the
    /// line's start; else the caret goes to that start first (a draft is
    /// not replaced by one stray key).
    pub fn up(&mut self) -> bool {
        if let Some(start) = self.text[..self.cursor].rfind('\n') {
            let col = self.cursor - start - 1;
            let prev_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
            self.moved(self.column_in_line(prev_start, col));
            return true;
        }
        if self.text.is_empty() || self.browsing.is_some() || self.cursor == 0 {
            return self.history_previous();
        }
        self.moved(0);
        true
    }

    /// Down: the line below. On the last line, while browsing, the next
    /// history entry (past the newest, the draft again); else the caret
    /// goes to the line's end.
    pub fn down(&mut self) -> bool {
        if let Some(off) = self.text[self.cursor..].find('\n') {
            let col = self.cursor - self.line_start();
            let next_start = self.cursor + off + 1;
            self.moved(self.column_in_line(next_start, col));
            return true;
        }
        if self.browsing.is_some() {
            return self.history_next();
        }
        let end = self.text.len();
        let moved = self.cursor != end;
        self.moved(end);
        moved
    }

    /// The previous (older) history entry, wherever the caret is.
    pub fn history_previous(&mut self) -> bool {
        let next = match &self.browsing {
            Some((0, _)) => return false,
            Some((i, _)) => i - 1,
            None if self.history.is_empty() => return false,
            None => self.history.len() - 1,
        };
        let draft = match self.browsing.take() {
            Some((_, d)) => d,
            None => {
                self.snapshot();
                self.text.clone()
            }
        };
        self.text = self.history.get(next).unwrap_or_default().to_string();
        self.cursor = 0;
        self.browsing = Some((next, draft));
        self.last = LastEdit::Other;
        true
    }

    /// The next (newer) history entry; past the newest, the draft.
    pub fn history_next(&mut self) -> bool {
        let Some((i, draft)) = self.browsing.take() else {
            return false;
        };
        if i + 1 < self.history.len() {
            self.text = self.history.get(i + 1).unwrap_or_default().to_string();
            self.browsing = Some((i + 1, draft));
        } else {
            self.text = draft;
        }
        self.cursor = self.text.len();
        self.last = LastEdit::Other;
        true
    }

    /// The byte offset `col` bytes into the line at `start`, clamped to
    /// the line and snapped back to a grapheme boundary.
    fn column_in_line(&self, start: usize, col: usize) -> usize {
        let line_end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        let at = (start + col).min(line_end);
        let mut snapped = start;
        for (i, g) in self.text[start..line_end].grapheme_indices(true) {
            if start + i + g.len() > at {
                break;
            }
            snapped = start + i + g.len();
        }
        snapped
    }

    /// The Ctrl+R search in progress, if any.
    pub fn search(&self) -> Option<&HistorySearch> {
        self.search.as_ref()
    }

    /// Ctrl+R: starts a reverse history search, or (already searching)
    /// finds the next older entry holding the query.
    pub fn search_older(&mut self) {
        match &mut self.search {
            None => {
                self.search = Some(HistorySearch {
                    saved: (self.text.clone(), self.cursor),
                    ..HistorySearch::default()
                });
            }
            Some(s) => {
                let before = s.found;
                s.failed = false;
                match self.history.search(&s.query, before) {
                    Some(i) => s.found = Some(i),
                    None => s.failed = before.is_some() || !s.query.is_empty(),
                }
                self.show_search();
            }
        }
    }

    /// Adds to the search query (or, with `None`, drops its last
    /// character) and finds the newest entry holding it.
    pub fn search_edit(&mut self, add: Option<char>) {
        let Some(s) = &mut self.search else {
            return;
        };
        match add {
            Some(c) if !c.is_control() => s.query.push(c),
            Some(_) => return,
            None => {
                s.query.pop();
            }
        }
        s.found = self.history.search(&s.query, None);
        s.failed = s.found.is_none() && !s.query.is_empty();
        self.show_search();
    }

    /// Shows the found entry in the editor, the caret at the match.
    fn show_search(&mut self) {
        let Some(s) = &self.search else {
            return;
        };
        let Some(entry) = s.found.and_then(|i| self.history.get(i)) else {
            return;
        };
        let at = entry.to_lowercase().find(&s.query.to_lowercase());
        self.text = entry.to_string();
        // The lowercase form may differ in length: fall back to the end.
        self.cursor = at
            .filter(|a| self.text.is_char_boundary(*a))
            .unwrap_or(self.text.len());
        self.browsing = None;
    }

    /// Ends the search keeping the entry found in the editor.
    pub fn search_accept(&mut self) {
        if let Some(s) = self.search.take()
            && s.found.is_some()
            && s.saved.0 != self.text
        {
            self.undo.push(s.saved);
        }
    }

    /// Ends the search with the editor as it was before.
    pub fn search_cancel(&mut self) {
        if let Some(s) = self.search.take() {
            (self.text, self.cursor) = s.saved;
        }
    }
}

#[cfg(test)]
mod tests;
