//! What a key does: every key is resolved through the [`Keybindings`]
//! into an action, in Pi's order of precedence (an open question first,
//! then an open picker, a history search, a pending jump, the completion
//! menu, the application's actions, the editor's).
//!
//! [`Keybindings`]: crate::keybindings::Keybindings

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{Action, App, Queued};
use crate::keybindings::KeyAction;
use crate::pickers::{PickerKind, PickerOutcome};

/// The editor's actions, in the order they are tried.
const EDITOR_ACTIONS: &[KeyAction] = {
    use KeyAction::*;
    &[
        Undo,
        Tab,
        DeleteToLineEnd,
        DeleteToLineStart,
        DeleteWordBackward,
        DeleteWordForward,
        DeleteCharBackward,
        DeleteCharForward,
        Yank,
        YankPop,
        HistoryPrevious,
        HistoryNext,
        HistorySearch,
        CursorLineStart,
        CursorLineEnd,
        CursorWordLeft,
        CursorWordRight,
        NewLine,
        Submit,
        CursorUp,
        CursorDown,
        CursorRight,
        CursorLeft,
        JumpForward,
        JumpBackward,
    ]
};

/// The application's actions, tried before the editor's.
const APP_ACTIONS: &[KeyAction] = {
    use KeyAction::*;
    &[
        Clear,
        Interrupt,
        Exit,
        Suspend,
        ToolsExpand,
        FollowUp,
        Dequeue,
        ModelSelect,
        ModelCycleBackward,
        ModelCycleForward,
        ThinkingCycle,
        SessionResume,
        SessionTree,
    ]
};

/// A key that types its character: no Ctrl or Alt.
fn typed_char(key: &KeyEvent) -> Option<char> {
    match key.code {
        KeyCode::Char(c)
            if !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SUPER) =>
        {
            Some(c)
        }
        _ => None,
    }
}

impl App {
    /// A key; what it asks the runner to do.
    pub fn key(&mut self, key: KeyEvent) -> Option<Action> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let was_armed = std::mem::take(&mut self.exit_armed);
        if self.permissions.is_open() {
            // The dialog has its own keys (y/a/n/r, the reason row,
            // scrolling); Ctrl+C there refuses and interrupts.
            return match self.permissions.key_event(key) {
                crate::dialog::DialogKey::Interrupt => Some(Action::Interrupt),
                crate::dialog::DialogKey::Handled => None,
            };
        }
        if self.picker.is_some() {
            return self.picker_key(&key);
        }
        if self.editor.search().is_some() && self.search_key(&key) {
            return None;
        }
        if self.editor.jump_armed() {
            if let Some(c) = typed_char(&key) {
                self.editor.jump_to(c);
                return None;
            }
            self.editor.cancel_jump();
        }
        if let Some(done) = self.completion_key(&key) {
            return done;
        }
        if let Some(action) = self.keys.first_match(&key, APP_ACTIONS)
            && let Some(done) = self.app_action(action, was_armed)
        {
            return done;
        }
        match self.keys.first_match(&key, EDITOR_ACTIONS) {
            Some(action) => self.editor_action(action),
            None => {
                if let Some(c) = typed_char(&key) {
                    self.editor.insert(c.encode_utf8(&mut [0; 4]));
                    self.completion_typed(c);
                }
                None
            }
        }
    }

    /// A key while Ctrl+R searches; whether it was used up.
    fn search_key(&mut self, key: &KeyEvent) -> bool {
        let e = &mut self.editor;
        let k = &self.keys;
        if k.matches(KeyAction::HistorySearch, key) {
            e.search_older();
        } else if k.matches(KeyAction::DeleteCharBackward, key) {
            e.search_edit(None);
        } else if k.matches(KeyAction::SelectCancel, key) || k.matches(KeyAction::Clear, key) {
            e.search_cancel();
        } else if k.matches(KeyAction::SelectConfirm, key) {
            e.search_accept();
        } else if let Some(c) = typed_char(key) {
            e.search_edit(Some(c));
        } else {
            // Any other key takes the entry found and then does its job.
            e.search_accept();
            return false;
        }
        true
    }

    /// A key while a picker is open: it has them all.
    fn picker_key(&mut self, key: &KeyEvent) -> Option<Action> {
        let picker = self.picker.as_mut()?;
        match picker.key(key, &self.keys) {
            PickerOutcome::Stay => None,
            PickerOutcome::Close => {
                self.picker = None;
                None
            }
            PickerOutcome::Command(line) => {
                self.picker = None;
                Some(Action::Command(line))
            }
            PickerOutcome::Theme(name) => {
                self.picker = None;
                Some(Action::Theme(name))
            }
            PickerOutcome::Edit(edit) => Some(Action::SessionEdit(edit)),
        }
    }

    /// An application action; `None` when it leaves the key to the editor.
    fn app_action(&mut self, action: KeyAction, was_armed: bool) -> Option<Option<Action>> {
        let running = self.is_running();
        Some(match action {
            KeyAction::Clear => {
                if !self.editor.is_empty() {
                    self.editor.clear();
                    self.completion = None;
                    None
                } else if running {
                    Some(Action::Interrupt)
                } else if was_armed {
                    Some(Action::Exit)
                } else {
                    self.exit_armed = true;
                    None
                }
            }
            KeyAction::Interrupt if running || self.command_running => Some(Action::Interrupt),
            KeyAction::Exit if self.editor.is_empty() && !running => Some(Action::Exit),
            KeyAction::Suspend => Some(Action::Suspend),
            KeyAction::ToolsExpand => {
                self.transcript.toggle_expanded();
                None
            }
            // Idle, Alt+Enter is a new line: the one a terminal without
            // Shift+Enter can type.
            KeyAction::FollowUp if !running => {
                self.editor.newline();
                None
            }
            KeyAction::FollowUp => {
                let text = self.editor.submit()?;
                self.queued.push(Queued {
                    steer: false,
                    text: text.clone(),
                });
                Some(Action::FollowUp(text))
            }
            KeyAction::Dequeue if !self.queued.is_empty() => {
                self.restore_queued();
                Some(Action::TakeBackQueued)
            }
            KeyAction::Dequeue => None,
            KeyAction::ModelSelect => Some(Action::OpenPicker(PickerKind::Model)),
            KeyAction::SessionResume => Some(Action::OpenPicker(PickerKind::Resume)),
            KeyAction::SessionTree => Some(Action::OpenPicker(PickerKind::Tree)),
            KeyAction::ModelCycleForward => Some(Action::CycleModel { forward: true }),
            KeyAction::ModelCycleBackward => Some(Action::CycleModel { forward: false }),
            KeyAction::ThinkingCycle => Some(Action::CycleThinking),
            _ => return None,
        })
    }

    fn editor_action(&mut self, action: KeyAction) -> Option<Action> {
        if !matches!(action, KeyAction::Tab | KeyAction::DeleteCharBackward) {
            self.completion = None;
            self.awaiting_files = false;
        }
        let e = &mut self.editor;
        match action {
            KeyAction::Undo => {
                e.undo();
            }
            KeyAction::Tab => self.complete_on_tab(),
            KeyAction::DeleteToLineEnd => e.delete_to_line_end(),
            KeyAction::DeleteToLineStart => e.delete_to_line_start(),
            KeyAction::DeleteWordBackward => e.delete_word_back(),
            KeyAction::DeleteWordForward => e.delete_word_forward(),
            KeyAction::DeleteCharBackward => {
                e.backspace();
                self.completion_refresh();
            }
            KeyAction::DeleteCharForward => e.delete(),
            KeyAction::Yank => e.yank(),
            KeyAction::YankPop => e.yank_pop(),
            KeyAction::HistoryPrevious => {
                e.history_previous();
            }
            KeyAction::HistoryNext => {
                e.history_next();
            }
            KeyAction::HistorySearch => e.search_older(),
            KeyAction::CursorLineStart => e.home(),
            KeyAction::CursorLineEnd => e.end(),
            KeyAction::CursorWordLeft => e.word_left(),
            KeyAction::CursorWordRight => e.word_right(),
            KeyAction::NewLine => e.newline(),
            KeyAction::Submit => return self.submit(),
            KeyAction::CursorUp => {
                e.up();
            }
            KeyAction::CursorDown => {
                e.down();
            }
            KeyAction::CursorRight => e.right(),
            KeyAction::CursorLeft => e.left(),
            KeyAction::JumpForward => e.start_jump(true),
            KeyAction::JumpBackward => e.start_jump(false),
            _ => {}
        }
        None
    }
}
