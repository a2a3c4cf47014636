//! The UI's selectors, each a [`Selector`] over one list: models (Ctrl+L,
//! `/model`), this directory's sessions (`/resume`), the session's tree
//! (`/tree`), the settings (`/settings`) and the themes (`/theme`).
//!
//! A choice becomes the command line a user would type (`/model p/id`,
//! `/resume ID`, `/fork ENTRY`, `/settings KEY VALUE`), run by the UI's
//! commands like any other, so the terminal UI, the line prompt and RPC
//! do one thing one way. A theme is applied by the UI itself. What the
//! pickers change in place (a label in the tree, a session's name, a
//! deleted session) is a [`SessionEdit`] the UI carries out with
//! [`write_label`], [`rename_session`] and [`delete_session`], the picker
//! staying open.

use std::collections::HashSet;
use std::path::PathBuf;

use agent_ai::Model;
use agent_sessions::{SessionEntry, SessionInfo};
use agent_tool::StyledLine;
use crossterm::event::KeyEvent;
use serde_json::{Map, Value};

use crate::keybindings::Keybindings;
use crate::selector::{Selector, SelectorItem, SelectorKey};
use crate::theme::UiTheme;

mod edit;
mod files;
mod resume;
mod tree;
use edit::{EditFor, EditKey, LineEdit};
pub use files::{MAX_NAME_CHARS, clean_name, delete_session, rename_session, write_label};
use resume::ResumeView;
pub use resume::SessionSort;
pub use tree::TreeFilter;
use tree::{TreeView, tree_nodes};

/// Longest value typed in the settings editor (a paste beyond it is cut).
pub const MAX_VALUE_CHARS: usize = 10_000;

/// Which list a picker shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickerKind {
    /// The models the session can switch to.
    Model,
    /// This directory's sessions.
    Resume,
    /// The session's entries as a tree.
    Tree,
    /// The effective settings.
    Settings,
    /// The colour themes.
    Theme,
}

impl PickerKind {
    /// What the user calls it, for notices (`model selector`).
    pub fn name(self) -> &'static str {
        match self {
            PickerKind::Model => "model selector",
            PickerKind::Resume => "resume picker",
            PickerKind::Tree => "session tree",
            PickerKind::Settings => "settings",
            PickerKind::Theme => "theme selector",
        }
    }
}

/// The picker a command typed alone opens in the terminal UI (`/model`,
/// `/resume`, `/tree`, `/settings`, `/theme`); with arguments they are
/// commands as everywhere else.
///
/// ```
/// use agent_tui::pickers::{PickerKind, picker_command};
/// assert_eq!(picker_command(" /model "), Some(PickerKind::Model));
/// assert_eq!(picker_command("/model openai/gpt-5"), None);
/// ```
pub fn picker_command(line: &str) -> Option<PickerKind> {
    Some(match line.trim() {
        "/model" => PickerKind::Model,
        "/resume" => PickerKind::Resume,
        "/tree" => PickerKind::Tree,
        "/settings" => PickerKind::Settings,
        "/theme" => PickerKind::Theme,
        _ => return None,
    })
}

/// What the UI does after a key in a picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerOutcome {
    /// Nothing: the picker stays open.
    Stay,
    /// Close it, doing nothing.
    Close,
    /// Close it and run this command line (`/model openai/gpt-5`).
    Command(String),
    /// Close it and apply (and save) this theme.
    Theme(String),
    /// Keep it open and make this change (the UI then updates the picker).
    Edit(SessionEdit),
}

/// A change a picker asks for and stays open for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEdit {
    /// Set (`Some`) or clear the label of an entry of the open session.
    Label {
        /// The entry's id.
        entry: String,
        /// The label, trimmed and not empty; `None` clears it.
        label: Option<String>,
    },
    /// Name the session in this file.
    Rename {
        /// The session file (as listed).
        path: PathBuf,
        /// The name typed, trimmed and not empty.
        name: String,
    },
    /// Delete this session file (the user said yes).
    Delete {
        /// The session file (as listed).
        path: PathBuf,
    },
}

/// A list that arrives after the picker opened (it is read from disk off
/// the UI task).
#[derive(Debug, Clone, PartialEq)]
pub enum PickerData {
    /// This directory's sessions, newest first.
    Sessions(Vec<SessionInfo>),
    /// The sessions again after a rename or delete, and how it went (the
    /// line the picker shows).
    SessionsEdited(Result<String, String>, Vec<SessionInfo>),
    /// Theme files: each one's name and appearance (`light`, `dark`, or
    /// empty), and warnings about files that could not be read.
    Themes(Vec<(String, String)>, Vec<String>),
}

/// An open picker: its list, what each item stands for, and the state of
/// the tree's filters or the settings editor.
#[derive(Debug, Clone)]
pub struct Picker {
    kind: PickerKind,
    selector: Selector,
    /// What each item stands for: a model's `provider/id`, a session id,
    /// an entry id, a settings key, a theme name.
    values: Vec<String>,
    /// The current session's id or theme name, marked when the list comes.
    current: Option<String>,
    /// The settings shown, for the editor's first value.
    effective: Map<String, Value>,
    /// The one-line editor, when open (a value, a label, a name).
    edit: Option<LineEdit>,
    tree: Option<TreeView>,
    resume: Option<ResumeView>,
}

impl Picker {
    fn with(kind: PickerKind, title: &str, values: Vec<String>, items: Vec<SelectorItem>) -> Self {
        Picker {
            kind,
            selector: Selector::new(title, items),
            values,
            current: None,
            effective: Map::new(),
            edit: None,
            tree: None,
            resume: None,
        }
    }

    /// The model selector over `models` (the current one added first when
    /// missing), the current one marked and highlighted.
    pub fn models(models: &[Model], current: &Model) -> Self {
        let same = |m: &Model| m.provider == current.provider && m.id == current.id;
        let mut all: Vec<&Model> = Vec::with_capacity(models.len() + 1);
        if !models.iter().any(same) {
            all.push(current);
        }
        all.extend(models);
        let (values, items): (Vec<String>, Vec<SelectorItem>) = all
            .iter()
            .map(|m| {
                let value = format!("{}/{}", m.provider, m.id);
                let name = if m.name.is_empty() || m.name == m.id {
                    String::new()
                } else {
                    m.name.clone()
                };
                let hint = if m.context_window > 0 {
                    format!("{} ctx", crate::footer::tokens(m.context_window))
                } else {
                    String::new()
                };
                let item = SelectorItem::new(&value)
                    .detail(name)
                    .hint(hint)
                    .marked(same(m));
                (value, item)
            })
            .unzip();
        let mut picker = Self::with(PickerKind::Model, "Select a model", values, items);
        picker.selector.set_empty_text("no models");
        if let Some(i) = all.iter().position(|m| same(m)) {
            picker.selector.select_item(i);
        }
        picker
    }

    /// A picker whose list is still being read (`Resume`, `Theme`):
    /// "loading" until [`Picker::load`]. `current` is the session id or the
    /// theme name to mark.
    pub fn loading(kind: PickerKind, current: Option<String>) -> Self {
        let title = match kind {
            PickerKind::Resume => "Resume a session",
            PickerKind::Theme => "Select a theme",
            _ => "Select",
        };
        let mut picker = Self::with(kind, title, Vec::new(), Vec::new());
        picker.current = current;
        if kind == PickerKind::Resume {
            picker.resume = Some(ResumeView::default());
            picker.selector.set_flat_when_filtering(true);
        }
        picker.selector.set_loading(true);
        if kind == PickerKind::Theme {
            // The built-in themes need no reading.
            picker.load(PickerData::Themes(Vec::new(), Vec::new()));
            picker.selector.set_loading(true);
        }
        picker
    }

    /// The list arrived; warnings about it (theme files that could not be
    /// read) are returned for the UI to show.
    pub fn load(&mut self, data: PickerData) -> Vec<String> {
        self.selector.set_loading(false);
        let current = self.current.clone();
        let (values, items, warnings): (Vec<String>, Vec<SelectorItem>, Vec<String>) = match data {
            PickerData::Sessions(list) => {
                self.load_sessions(list);
                return Vec::new();
            }
            PickerData::SessionsEdited(result, list) => {
                self.load_sessions(list);
                match &result {
                    Ok(done) => self.set_status(done, false),
                    Err(why) => self.set_status(why, true),
                }
                return Vec::new();
            }
            PickerData::Themes(files, warnings) => {
                let current = current.as_deref().unwrap_or("system");
                let builtin = [
                    (
                        "system",
                        "built-in: dark or light by the terminal's background",
                    ),
                    ("dark", "built-in"),
                    ("light", "built-in"),
                ]
                .map(|(n, d)| (n.to_string(), d.to_string()));
                let files = files.into_iter().map(|(name, appearance)| {
                    let detail = if appearance.is_empty() {
                        "theme file".to_string()
                    } else {
                        format!("theme file, {appearance}")
                    };
                    (name, detail)
                });
                let mut seen = HashSet::new();
                let (v, i) = builtin
                    .into_iter()
                    .chain(files)
                    .filter(|(name, _)| seen.insert(name.clone()))
                    .map(|(name, detail)| {
                        let item = SelectorItem::new(&name)
                            .detail(detail)
                            .marked(name == current);
                        (name, item)
                    })
                    .unzip();
                (v, i, warnings)
            }
        };
        let marked = items.iter().position(|i: &SelectorItem| i.marked);
        self.values = values;
        self.selector.set_items(items);
        if let Some(i) = marked
            && self.kind == PickerKind::Theme
        {
            self.selector.select_item(i);
        }
        warnings
    }

    /// The resume picker over `list` (newest first), `current` marked.
    pub fn sessions(list: Vec<SessionInfo>, current: Option<&str>) -> Self {
        let mut picker = Self::loading(PickerKind::Resume, current.map(str::to_string));
        picker.load(PickerData::Sessions(list));
        picker
    }

    /// The theme selector: the built-in themes and `files` (name and
    /// appearance), `current` (the `theme` setting) marked.
    pub fn themes(files: Vec<(String, String)>, current: Option<&str>) -> Self {
        let mut picker = Self::loading(PickerKind::Theme, current.map(str::to_string));
        picker.load(PickerData::Themes(files, Vec::new()));
        picker
    }

    /// The session tree: `entries` indented where the conversation
    /// branches, the path to `leaf` marked, the leaf highlighted.
    pub fn tree(entries: &[SessionEntry], leaf: Option<&str>) -> Self {
        let view = TreeView {
            nodes: tree_nodes(entries, leaf),
            ..TreeView::default()
        };
        let mut picker = Self::with(PickerKind::Tree, "Session tree", Vec::new(), Vec::new());
        picker.selector.set_confirm_text("fork here");
        picker.tree = Some(view);
        picker.refresh_tree(leaf.map(str::to_string));
        picker
    }

    /// The settings: every key of `effective` (and `theme` and `tuiMode`,
    /// which this UI reads, when unset) with its value.
    pub fn settings(effective: &Map<String, Value>) -> Self {
        let mut keys: Vec<&str> = effective.keys().map(String::as_str).collect();
        for known in ["theme", "tuiMode"] {
            if !effective.contains_key(known) {
                keys.push(known);
            }
        }
        keys.sort_unstable();
        let (values, items): (Vec<String>, Vec<SelectorItem>) = keys
            .iter()
            .map(|k| {
                let shown = match effective.get(*k) {
                    Some(v) => one_line(v, 200),
                    None => "(not set)".to_string(),
                };
                (k.to_string(), SelectorItem::new(k).detail(shown))
            })
            .unzip();
        let mut picker = Self::with(PickerKind::Settings, "Settings", values, items);
        picker.selector.set_confirm_text("change it");
        picker.effective = effective.clone();
        picker
    }

    /// Which list it shows.
    pub fn kind(&self) -> PickerKind {
        self.kind
    }

    /// The list.
    pub fn selector(&self) -> &Selector {
        &self.selector
    }

    /// The list, to change.
    pub fn selector_mut(&mut self) -> &mut Selector {
        &mut self.selector
    }

    /// What the highlighted item stands for (a model's `provider/id`, a
    /// session or entry id, a settings key, a theme name).
    pub fn selected_value(&self) -> Option<&str> {
        self.values
            .get(self.selector.selected_item()?)
            .map(String::as_str)
    }

    /// The tree's filter (`None` for other pickers).
    pub fn tree_filter(&self) -> Option<TreeFilter> {
        self.tree.as_ref().map(|t| t.filter)
    }

    /// What the one-line editor edits (a settings key, a tree entry's id,
    /// a session's id) and the text typed.
    pub fn editing(&self) -> Option<(&str, &str)> {
        self.edit.as_ref().map(|e| (e.subject(), e.text.as_str()))
    }

    /// The resume picker's order (`None` for other pickers).
    pub fn session_sort(&self) -> Option<SessionSort> {
        self.resume.as_ref().map(|r| r.sort)
    }

    /// The session a delete waits for Enter on (its file).
    pub fn confirming_delete(&self) -> Option<&std::path::Path> {
        let r = self.resume.as_ref()?;
        Some(r.sessions.get(r.confirm_delete?)?.path.as_path())
    }

    /// Shows `text` above the keys (in the error colour when `error`):
    /// what the last change did, or why it did nothing.
    pub fn set_status(&mut self, text: &str, error: bool) {
        self.selector.set_status(Some((text, error)));
    }

    /// A key; what the UI is to do.
    pub fn key(&mut self, key: &KeyEvent, keys: &Keybindings) -> PickerOutcome {
        if self.edit.is_some() {
            return self.edit_key(key, keys);
        }
        if self
            .resume
            .as_ref()
            .is_some_and(|r| r.confirm_delete.is_some())
        {
            return self.confirm_key(key, keys);
        }
        // The last change's line goes with the next key.
        if self.selector.status().is_some() {
            self.selector.set_status(None);
        }
        if self.tree.is_some()
            && let Some(outcome) = self.tree_key(key, keys)
        {
            return outcome;
        }
        if self.resume.is_some()
            && let Some(outcome) = self.resume_key(key, keys)
        {
            return outcome;
        }
        let query = self.selector.query().to_string();
        let handled = self.selector.key(key, keys);
        if self.selector.query() != query {
            self.query_changed();
        }
        match handled {
            SelectorKey::Cancel => PickerOutcome::Close,
            SelectorKey::Confirm(i) => {
                let Some(value) = self.values.get(i).cloned() else {
                    return PickerOutcome::Stay;
                };
                match self.kind {
                    PickerKind::Model => PickerOutcome::Command(format!("/model {value}")),
                    PickerKind::Resume => PickerOutcome::Command(format!("/resume {value}")),
                    PickerKind::Tree => PickerOutcome::Command(format!("/fork {value}")),
                    PickerKind::Theme => PickerOutcome::Theme(value),
                    // `/settings KEY VALUE` cannot name a key with a
                    // blank in it: such a key is only shown.
                    PickerKind::Settings if value.contains(char::is_whitespace) => {
                        PickerOutcome::Stay
                    }
                    PickerKind::Settings => {
                        // The value as JSON, so Enter writes back what was there.
                        let text = self
                            .effective
                            .get(&value)
                            .map(Value::to_string)
                            .unwrap_or_default();
                        self.edit = Some(LineEdit::new(EditFor::Setting(value), text));
                        PickerOutcome::Stay
                    }
                }
            }
            SelectorKey::Handled | SelectorKey::Unhandled => PickerOutcome::Stay,
        }
    }

    /// A key in the one-line editor: Enter writes (a setting through
    /// `/settings KEY VALUE`; a label or a name as a [`SessionEdit`]), Esc
    /// goes back to the list.
    fn edit_key(&mut self, key: &KeyEvent, keys: &Keybindings) -> PickerOutcome {
        let Some(edit) = &mut self.edit else {
            return PickerOutcome::Stay;
        };
        let text = match edit.key(key, keys) {
            EditKey::Stay => return PickerOutcome::Stay,
            EditKey::Back => {
                self.edit = None;
                return PickerOutcome::Stay;
            }
            EditKey::Done(text) => text,
        };
        let Some(edit) = self.edit.take() else {
            return PickerOutcome::Stay;
        };
        match edit.target {
            // The setting is written by a command, which closes the picker.
            EditFor::Setting(key) => PickerOutcome::Command(format!("/settings {key} {text}")),
            EditFor::Label(entry) => PickerOutcome::Edit(SessionEdit::Label {
                entry,
                label: Some(text).filter(|t| !t.is_empty()),
            }),
            EditFor::Rename { path, .. } => {
                self.selector.set_loading(true);
                PickerOutcome::Edit(SessionEdit::Rename { path, name: text })
            }
        }
    }

    /// A bracketed paste: into the value being edited, else the query.
    pub fn paste(&mut self, pasted: &str) {
        match &mut self.edit {
            Some(edit) => edit.paste(pasted),
            None => {
                self.selector.push_query(pasted);
                self.query_changed();
            }
        }
    }

    /// The query changed: folds are undone (as in Pi, a search shows the
    /// whole tree).
    fn query_changed(&mut self) {
        if let Some(view) = &mut self.tree
            && !view.folded.is_empty()
        {
            view.folded.clear();
            let keep = self.selected_value().map(str::to_string);
            self.refresh_tree(keep);
        }
    }

    /// The picker at `width`, at most `max_rows` high, and its caret.
    pub fn view(
        &mut self,
        width: usize,
        max_rows: usize,
        theme: &UiTheme,
    ) -> (Vec<StyledLine>, Option<(usize, usize)>) {
        match &self.edit {
            Some(edit) => edit.view(width, max_rows, theme),
            None => self.selector.view(width, max_rows, theme),
        }
    }
}

/// The first line of `s`, at most `max` characters.
fn first_line(s: &str, max: usize) -> String {
    let line = s.trim().lines().next().unwrap_or("");
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}...", &line[..at]),
        None => line.to_string(),
    }
}

/// A JSON value on one line, at most `max` characters.
fn one_line(value: &Value, max: usize) -> String {
    first_line(&value.to_string(), max)
}

/// The next model of the current provider after (or before) `current` in
/// `models`, for Ctrl+P and Shift+Ctrl+P; `None` when there is no other.
///
/// ```
/// use agent_ai::Model;
/// use agent_tui::pickers::next_model;
/// let models = [Model::new("p", "a"), Model::new("q", "x"), Model::new("p", "b")];
/// let next = next_model(&models, &Model::new("p", "a"), true).unwrap();
/// assert_eq!(next.id, "b");
/// let back = next_model(&models, &Model::new("p", "a"), false).unwrap();
/// assert_eq!(back.id, "b");
/// assert!(next_model(&models, &Model::new("q", "x"), true).is_none());
/// ```
pub fn next_model(models: &[Model], current: &Model, forward: bool) -> Option<Model> {
    let same = |m: &Model| m.provider == current.provider && m.id == current.id;
    let mut ring: Vec<&Model> = models
        .iter()
        .filter(|m| m.provider == current.provider)
        .collect();
    if !ring.iter().any(|m| same(m)) {
        ring.insert(0, current);
    }
    if ring.len() < 2 {
        return None;
    }
    let n = ring.len();
    let at = ring.iter().position(|m| same(m)).unwrap_or(0);
    let next = if forward {
        (at + 1) % n
    } else {
        (at + n - 1) % n
    };
    Some(ring[next].clone())
}
