//! The completion menu's part of key handling: when it opens, refreshes
//! and closes, and what its keys do.

use crossterm::event::KeyEvent;

use super::{Action, App};
use crate::completion::files::FileIndex;
use crate::completion::{self, Context, Kind};
use crate::keybindings::KeyAction;

impl App {
    /// What the text before the caret completes to, as a menu (`tab`: the
    /// user asked, so paths too).
    fn menu_for(&mut self, tab: bool) -> Option<completion::Menu> {
        let cursor = self.editor.cursor();
        match completion::context(self.editor.text(), cursor) {
            Context::Command { start, query } => {
                let menu = completion::command_menu(&self.commands, start, &query);
                if menu.is_none() && tab && query.contains('/') {
                    return completion::path_menu(&self.cx.cwd, start, &format!("/{query}"));
                }
                menu
            }
            Context::File { start, query } => {
                let cwd = self.cx.cwd.clone();
                let index = self.files.get_or_insert_with(|| FileIndex::spawn(&cwd));
                index.request(&query);
                let menu = completion::file_menu(index, start, &query);
                // Not answered yet, or the walk goes on: wait for the next
                // answer, keeping what is shown meanwhile.
                self.awaiting_files = menu.is_none();
                if menu.is_none()
                    && let Some(shown) = &self.completion
                    && shown.kind == Kind::File
                    && shown.start == start
                {
                    return Some(shown.clone());
                }
                menu
            }
            Context::Path { start, token } => {
                let keep_open = self
                    .completion
                    .as_ref()
                    .is_some_and(|m| m.kind == Kind::Path);
                (tab || keep_open)
                    .then(|| completion::path_menu(&self.cx.cwd, start, &token))
                    .flatten()
            }
        }
    }

    /// A character was typed: open, narrow or close the menu.
    pub(super) fn completion_typed(&mut self, _c: char) {
        self.completion = self.menu_for(false);
    }

    /// The text changed under an open menu (Backspace): match again.
    pub(super) fn completion_refresh(&mut self) {
        if self.completion.is_some() {
            self.completion = self.menu_for(false);
        }
    }

    /// The file walk found more: an open `@` menu matches again.
    pub fn files_updated(&mut self) {
        let open = self
            .completion
            .as_ref()
            .is_some_and(|m| m.kind == Kind::File);
        if open || self.awaiting_files {
            let selected = self.completion.as_ref().map_or(0, |m| m.selected);
            self.completion = self.menu_for(false);
            if let Some(m) = &mut self.completion {
                m.selected = selected.min(m.items.len().saturating_sub(1));
            }
        }
    }

    /// Whether the `@` menu shown is an earlier query's, the answer for the
    /// text as typed now being on its way.
    pub fn awaiting_files(&self) -> bool {
        self.awaiting_files
    }

    /// Where the `@` walk reports progress, once one started.
    pub fn file_updates(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.files.as_ref().map(FileIndex::updates)
    }

    /// Tab with no menu open: a single match is taken at once, more open
    /// the menu.
    pub(super) fn complete_on_tab(&mut self) {
        let Some(menu) = self.menu_for(true) else {
            return;
        };
        if menu.items.len() == 1 && menu.kind != Kind::Command {
            menu.apply(&mut self.editor);
            self.completion = None;
            // A directory taken: show what is in it.
            if menu.current().is_some_and(|i| i.value.ends_with('/')) {
                self.completion = self.menu_for(true);
            }
        } else {
            self.completion = Some(menu);
        }
    }

    /// A key while the menu is open: `Some` when the menu used it.
    pub(super) fn completion_key(&mut self, key: &KeyEvent) -> Option<Option<Action>> {
        let menu = self.completion.as_mut()?;
        let k = &self.keys;
        let step = if k.matches(KeyAction::SelectUp, key) {
            -1
        } else if k.matches(KeyAction::SelectDown, key) {
            1
        } else if k.matches(KeyAction::SelectPageUp, key) {
            -(completion::MAX_VISIBLE as isize)
        } else if k.matches(KeyAction::SelectPageDown, key) {
            completion::MAX_VISIBLE as isize
        } else {
            0
        };
        if step != 0 {
            menu.step(step);
            return Some(None);
        }
        if k.matches(KeyAction::SelectCancel, key) {
            self.completion = None;
            self.awaiting_files = false;
            return Some(None);
        }
        let tab = k.matches(KeyAction::Tab, key);
        if !tab && !k.matches(KeyAction::SelectConfirm, key) {
            return None;
        }
        let menu = self.completion.take()?;
        menu.apply(&mut self.editor);
        if menu.kind == Kind::Command && !tab {
            // Enter on a command name sends it, as Pi does.
            return Some(self.submit());
        }
        if menu.current().is_some_and(|i| i.value.ends_with('/')) {
            self.completion = self.menu_for(true);
        }
        Some(None)
    }
}
