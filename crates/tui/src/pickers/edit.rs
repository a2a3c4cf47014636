//! The pickers' one-line editor: a setting's value, an entry's label in
//! the session tree, a session's name in the resume picker.

use std::path::PathBuf;

use agent_tool::StyledLine;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use unicode_segmentation::UnicodeSegmentation;

use super::MAX_VALUE_CHARS;
use crate::keybindings::{KeyAction, Keybindings};
use crate::text;
use crate::theme::UiTheme;

/// What the line being typed is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum EditFor {
    /// The value of this settings key (JSON, else text).
    Setting(String),
    /// The label of this tree entry (empty clears it).
    Label(String),
    /// The name of the session with this id, in this file.
    Rename {
        /// The session id.
        id: String,
        /// Its file.
        path: PathBuf,
    },
}

/// The editor's state.
#[derive(Debug, Clone)]
pub(super) struct LineEdit {
    pub(super) target: EditFor,
    pub(super) text: String,
}

/// What a key did in the editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum EditKey {
    /// Still typing.
    Stay,
    /// Esc: back to the list.
    Back,
    /// Enter with this text (trimmed).
    Done(String),
}

impl LineEdit {
    /// The editor holding `text` as it is: a setting's JSON is written
    /// back whole, and what a file held that cannot be written (a control
    /// character in a name) is refused with a message on Enter.
    pub(super) fn new(target: EditFor, text: impl Into<String>) -> Self {
        LineEdit {
            target,
            text: text.into(),
        }
    }

    /// What is edited: the settings key, the entry id or the session id.
    pub(super) fn subject(&self) -> &str {
        match &self.target {
            EditFor::Setting(key) => key,
            EditFor::Label(entry) => entry,
            EditFor::Rename { id, .. } => id,
        }
    }

    /// A key: Enter gives the text (a setting or a name must not be
    /// empty; an empty label clears it), Esc goes back, Backspace and
    /// Ctrl+U edit, other characters type.
    pub(super) fn key(&mut self, key: &KeyEvent, keys: &Keybindings) -> EditKey {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if keys.matches(KeyAction::SelectCancel, key) {
            return EditKey::Back;
        }
        if keys.matches(KeyAction::SelectConfirm, key) {
            let value = self.text.trim();
            let may_be_empty = matches!(self.target, EditFor::Label(_));
            if value.is_empty() && !may_be_empty {
                // `/settings KEY` alone shows the value, and a session
                // keeps its name: nothing to write.
                return EditKey::Stay;
            }
            return EditKey::Done(value.to_string());
        }
        if keys.matches(KeyAction::DeleteCharBackward, key) {
            let keep = self
                .text
                .grapheme_indices(true)
                .next_back()
                .map_or(0, |(i, _)| i);
            self.text.truncate(keep);
        } else if keys.matches(KeyAction::DeleteToLineStart, key) {
            self.text.clear();
        } else if let KeyCode::Char(c) = key.code
            && !ctrl
            && !alt
        {
            push_value(&mut self.text, c.encode_utf8(&mut [0; 4]));
        }
        EditKey::Stay
    }

    /// A bracketed paste.
    pub(super) fn paste(&mut self, pasted: &str) {
        push_value(&mut self.text, pasted);
    }

    /// The editor at `width`, at most `max_rows` high: a title, the line
    /// and its keys; and the caret.
    pub(super) fn view(
        &self,
        width: usize,
        max_rows: usize,
        theme: &UiTheme,
    ) -> (Vec<StyledLine>, Option<(usize, usize)>) {
        let width = width.max(1);
        let (title, label, help) = match &self.target {
            EditFor::Setting(key) => (
                format!("Set {} (JSON, else text)", text::clean(key)),
                "value: ",
                "enter: write it to your settings.json  esc: back",
            ),
            EditFor::Label(entry) => (
                format!("Label entry {} (empty removes it)", text::clean(entry)),
                "label: ",
                "enter: save  esc: back",
            ),
            EditFor::Rename { .. } => (
                "Rename the session".to_string(),
                "name: ",
                "enter: save  esc: back",
            ),
        };
        let title = StyledLine::styled(title, theme.tools.accent.bold());
        let row = tail_row(label, &self.text, width, theme);
        let caret = text::line_width(&row).min(width - 1);
        let help = StyledLine::styled(help, theme.dim);
        let mut rows = vec![text::clip(&title, width), row];
        rows.extend(
            text::wrap(&help, width)
                .iter()
                .map(|r| text::clip(r, width)),
        );
        // A small screen keeps the line being typed.
        let cut = if max_rows >= 2 { 0 } else { 1 };
        let rows: Vec<StyledLine> = rows.into_iter().skip(cut).take(max_rows.max(1)).collect();
        (rows, Some((1 - cut, caret)))
    }
}

/// Appends to a value being typed: one line, no control characters, at
/// most [`MAX_VALUE_CHARS`].
pub(super) fn push_value(value: &mut String, typed: &str) {
    let room = MAX_VALUE_CHARS.saturating_sub(value.chars().count());
    value.extend(
        typed
            .chars()
            .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
            .filter(|c| !c.is_control())
            .take(room),
    );
}

/// `label` and as much of the end of `typed` as fits `width`.
fn tail_row(label: &str, typed: &str, width: usize, theme: &UiTheme) -> StyledLine {
    let room = width.saturating_sub(text::str_width(label) + 1);
    let mut tail = String::new();
    let mut used = 0;
    for g in typed.graphemes(true).rev() {
        let w = text::grapheme_width(g);
        if used + w > room {
            break;
        }
        used += w;
        tail.insert_str(0, g);
    }
    text::clip(
        &StyledLine::styled(label, theme.dim).push(text::clean(&tail), theme.user),
        width,
    )
}
