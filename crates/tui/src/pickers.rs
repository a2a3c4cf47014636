//! The UI's selectors, each a [`Selector`] over one list: models (Ctrl+L,
//! `/model`), this directory's sessions (`/resume`), the session's tree
//! (`/tree`), the settings (`/settings`) and the themes (`/theme`).
//!
//! A choice becomes the command line a user would type (`/model p/id`,
//! `/resume ID`, `/fork ENTRY`, `/settings KEY VALUE`), run by the UI's
//! commands like any other, so the terminal UI, the line prompt and RPC
//! do one thing one way. A theme is applied by the UI itself.

use std::collections::HashSet;

use agent_ai::Model;
use agent_tool::StyledLine;
use coding_agent::sessions::{SessionEntry, SessionInfo, iso_timestamp};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Map, Value};

use crate::keybindings::{KeyAction, Keybindings};
use crate::selector::{Selector, SelectorItem, SelectorKey};
use crate::text;
use crate::theme::UiTheme;

mod tree;
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
}

/// A list that arrives after the picker opened (it is read from disk off
/// the UI task).
#[derive(Debug, Clone, PartialEq)]
pub enum PickerData {
    /// This directory's sessions, newest first.
    Sessions(Vec<SessionInfo>),
    /// Theme files: each one's name and appearance (`light`, `dark`, or
    /// empty), and warnings about files that could not be read.
    Themes(Vec<(String, String)>, Vec<String>),
}

/// The settings editor's row: the key and the value typed.
#[derive(Debug, Clone)]
struct ValueEdit {
    key: String,
    text: String,
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
    edit: Option<ValueEdit>,
    tree: Option<TreeView>,
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
                let (v, i) = list
                    .iter()
                    .map(|s| (s.id.clone(), session_item(s, current.as_deref())))
                    .unzip();
                self.selector
                    .set_empty_text("no sessions to resume in this directory");
                (v, i, Vec::new())
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
            filter: TreeFilter::Default,
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

    /// The settings key being edited, and the value typed.
    pub fn editing(&self) -> Option<(&str, &str)> {
        self.edit
            .as_ref()
            .map(|e| (e.key.as_str(), e.text.as_str()))
    }

    /// The tree's items again (a filter changed), the highlight kept on
    /// `keep` when it is still shown, else on the nearest entry before it.
    fn refresh_tree(&mut self, keep: Option<String>) {
        let Some(view) = &self.tree else {
            return;
        };
        let (values, items) = view.items();
        let help = format!(
            "[{}] ctrl+t: no tools  ctrl+u: user only  ctrl+d: default",
            view.filter.name()
        );
        let target = keep.and_then(|id| {
            let at = view.nodes.iter().position(|n| n.id == id)?;
            // The entry itself or the closest shown one above it.
            view.nodes[..=at]
                .iter()
                .rev()
                .find(|n| view.shows(n))
                .map(|n| n.id.clone())
        });
        let empty = if view.nodes.is_empty() {
            "the session has no entries yet"
        } else {
            "no entries with this filter (ctrl+d: default)"
        };
        self.selector.set_empty_text(empty);
        self.values = values;
        self.selector.set_items(items);
        self.selector.set_help(help);
        if let Some(i) = target.and_then(|id| self.values.iter().position(|v| *v == id)) {
            self.selector.select_item(i);
        }
    }

    /// A key; what the UI is to do.
    pub fn key(&mut self, key: &KeyEvent, keys: &Keybindings) -> PickerOutcome {
        if self.edit.is_some() {
            return self.edit_key(key, keys);
        }
        if let Some(view) = &mut self.tree {
            let filter = if keys.matches(KeyAction::TreeFilterNoTools, key) {
                Some(toggle(view.filter, TreeFilter::NoTools))
            } else if keys.matches(KeyAction::TreeFilterUserOnly, key) {
                Some(toggle(view.filter, TreeFilter::UserOnly))
            } else if keys.matches(KeyAction::TreeFilterDefault, key) {
                Some(TreeFilter::Default)
            } else {
                None
            };
            if let Some(filter) = filter {
                view.filter = filter;
                let keep = self.selected_value().map(str::to_string);
                self.refresh_tree(keep);
                return PickerOutcome::Stay;
            }
        }
        match self.selector.key(key, keys) {
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
                        self.edit = Some(ValueEdit { key: value, text });
                        PickerOutcome::Stay
                    }
                }
            }
            SelectorKey::Handled | SelectorKey::Unhandled => PickerOutcome::Stay,
        }
    }

    /// A key in the settings editor: Enter writes (through `/settings KEY
    /// VALUE`), Esc goes back to the list.
    fn edit_key(&mut self, key: &KeyEvent, keys: &Keybindings) -> PickerOutcome {
        let Some(edit) = &mut self.edit else {
            return PickerOutcome::Stay;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if keys.matches(KeyAction::SelectCancel, key) {
            self.edit = None;
        } else if keys.matches(KeyAction::SelectConfirm, key) {
            let value = edit.text.trim();
            if value.is_empty() {
                // `/settings KEY` alone shows the value: nothing to write.
                return PickerOutcome::Stay;
            }
            return PickerOutcome::Command(format!("/settings {} {value}", edit.key));
        } else if keys.matches(KeyAction::DeleteCharBackward, key) {
            edit.text.pop();
        } else if keys.matches(KeyAction::DeleteToLineStart, key) {
            edit.text.clear();
        } else if let KeyCode::Char(c) = key.code
            && !ctrl
            && !alt
        {
            push_value(&mut edit.text, &c.to_string());
        }
        PickerOutcome::Stay
    }

    /// A bracketed paste: into the value being edited, else the query.
    pub fn paste(&mut self, pasted: &str) {
        match &mut self.edit {
            Some(edit) => push_value(&mut edit.text, pasted),
            None => self.selector.push_query(pasted),
        }
    }

    /// The picker at `width`, at most `max_rows` high, and its caret.
    pub fn view(
        &mut self,
        width: usize,
        max_rows: usize,
        theme: &UiTheme,
    ) -> (Vec<StyledLine>, Option<(usize, usize)>) {
        let Some(edit) = &self.edit else {
            return self.selector.view(width, max_rows, theme);
        };
        let width = width.max(1);
        let title = StyledLine::styled(
            format!("Set {} (JSON, else text)", text::clean(&edit.key)),
            theme.tools.accent.bold(),
        );
        let label = "value: ";
        let row = tail_row(label, &edit.text, width, theme);
        let caret = text::line_width(&row).min(width - 1);
        let help = StyledLine::styled(
            "enter: write it to your settings.json  esc: back",
            theme.dim,
        );
        let mut rows = vec![text::clip(&title, width), row];
        rows.extend(
            text::wrap(&help, width)
                .iter()
                .map(|r| text::clip(r, width)),
        );
        // A small screen keeps the value row.
        let cut = if max_rows >= 2 { 0 } else { 1 };
        let rows: Vec<StyledLine> = rows.into_iter().skip(cut).take(max_rows.max(1)).collect();
        (rows, Some((1 - cut, caret)))
    }
}

/// `to`, or back to the default when it is already on.
fn toggle(now: TreeFilter, to: TreeFilter) -> TreeFilter {
    if now == to { TreeFilter::Default } else { to }
}

/// One session's item: its name or first message, the date and id, and
/// how many messages it has.
fn session_item(s: &SessionInfo, current: Option<&str>) -> SelectorItem {
    let title = s
        .name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| s.first_message.clone());
    let title = first_line(&title, 100);
    let title = if title.is_empty() {
        "(no messages)".to_string()
    } else {
        title
    };
    let date = iso_timestamp(s.modified);
    // `2025-01-02T03:04:05.678Z` as `2025-01-02 03:04`.
    let date: String = date.chars().take(16).collect::<String>().replace('T', " ");
    let short_id: String = s.id.chars().take(8).collect();
    let count = match s.message_count {
        1 => "1 message".to_string(),
        n => format!("{n} messages"),
    };
    SelectorItem::new(title)
        .detail(format!("{date}  {short_id}"))
        .hint(count)
        .marked(current == Some(s.id.as_str()))
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

/// Appends to a value being typed: one line, no control characters, at
/// most [`MAX_VALUE_CHARS`].
fn push_value(value: &mut String, typed: &str) {
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
    use unicode_segmentation::UnicodeSegmentation;
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
