//! Keys as named actions: Pi's action ids and default keys, remapped by a
//! `keybindings.json` read the way Pi reads it.
//!
//! The file maps an action id to one key or a list of keys; a listed
//! action's keys replace its defaults (an empty list unbinds it), `$schema`
//! and ids this UI does not know are ignored, and Pi's older bare names
//! (`cursorUp`, `followUp`, ...) are read as their new ids. A file that is
//! not a JSON object, or a value that is not a key, is a warning naming
//! the file; the defaults stay for whatever it did not set.
//!
//! ```
//! use agent_tui::keybindings::{KeyAction, Keybindings};
//! use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
//!
//! let keys = Keybindings::from_json(r#"{"tui.editor.undo": "alt+u"}"#, "keybindings.json");
//! let alt_u = KeyEvent::new(KeyCode::Char('u'), KeyModifiers::ALT);
//! assert!(keys.matches(KeyAction::Undo, &alt_u));
//! assert!(keys.warnings().is_empty());
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use crossterm::event::KeyEvent;
use serde_json::Value;

mod actions;
mod combo;
pub use actions::KeyAction;
pub use combo::KeyCombo;

/// The keys of every action: Pi's defaults with a user's file on top.
#[derive(Debug, Clone)]
pub struct Keybindings {
    keys: BTreeMap<KeyAction, Vec<KeyCombo>>,
    /// The key text as configured, for the key table.
    names: BTreeMap<KeyAction, Vec<String>>,
    warnings: Vec<String>,
}

impl Default for Keybindings {
    fn default() -> Self {
        let mut kb = Keybindings {
            keys: BTreeMap::new(),
            names: BTreeMap::new(),
            warnings: Vec::new(),
        };
        for action in KeyAction::all() {
            let names: Vec<String> = action
                .default_keys()
                .iter()
                .map(|k| k.to_string())
                .collect();
            kb.set(action, names);
        }
        kb
    }
}

impl Keybindings {
    /// Pi's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// The defaults with `path` on top. A missing file is no warning; an
    /// unreadable or malformed one is (see [`Keybindings::warnings`]).
    pub fn load(path: &Path) -> Self {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_json(&text, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Self::default(),
            Err(e) => {
                let mut kb = Self::default();
                kb.warn(format!(
                    "{}: cannot read it ({e}); default keys kept",
                    path.display()
                ));
                kb
            }
        }
    }

    /// The defaults with the JSON `text` (from the file `origin`) on top.
    pub fn from_json(text: &str, origin: &str) -> Self {
        let mut kb = Self::default();
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let object = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(o)) => o,
            Ok(_) => {
                kb.warn(format!("{origin}: not a JSON object; default keys kept"));
                return kb;
            }
            Err(e) => {
                kb.warn(format!("{origin}: {e}; default keys kept"));
                return kb;
            }
        };
        // A new id wins over its legacy name when both are given.
        let mut settings: BTreeMap<KeyAction, (bool, &Value)> = BTreeMap::new();
        for (id, value) in &object {
            if id == "$schema" {
                continue;
            }
            let Some(action) = KeyAction::from_id(id) else {
                tracing::debug!(id, "keybindings: an action this UI does not have");
                continue;
            };
            let is_new = action.id() == id;
            if settings
                .get(&action)
                .is_some_and(|(new, _)| *new && !is_new)
            {
                continue;
            }
            settings.insert(action, (is_new, value));
        }
        for (action, (_, value)) in settings {
            let names: Option<Vec<String>> = match value {
                Value::String(s) => Some(vec![s.clone()]),
                Value::Array(items) => items.iter().map(|v| v.as_str().map(String::from)).collect(),
                _ => None,
            };
            let valid = names
                .as_ref()
                .is_some_and(|n| n.iter().all(|k| KeyCombo::parse(k).is_some()));
            match names {
                Some(names) if valid => kb.set(action, names),
                _ => kb.warn(format!(
                    "{origin}: {}: {value} is not a key or a list of keys; its default kept",
                    action.id()
                )),
            }
        }
        kb
    }

    fn set(&mut self, action: KeyAction, names: Vec<String>) {
        let mut combos: Vec<KeyCombo> = Vec::new();
        for c in names.iter().filter_map(|n| KeyCombo::parse(n)) {
            if !combos.contains(&c) {
                combos.push(c);
            }
        }
        self.keys.insert(action, combos);
        self.names.insert(action, names);
    }

    fn warn(&mut self, text: String) {
        tracing::warn!("{text}");
        self.warnings.push(text);
    }

    /// What was wrong with the file, one line each (the UI shows them).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Whether `key` is one of `action`'s keys.
    pub fn matches(&self, action: KeyAction, key: &KeyEvent) -> bool {
        self.keys
            .get(&action)
            .is_some_and(|keys| keys.iter().any(|k| k.matches(key)))
    }

    /// The first of `actions` that `key` is bound to.
    pub fn first_match(&self, key: &KeyEvent, actions: &[KeyAction]) -> Option<KeyAction> {
        actions.iter().copied().find(|a| self.matches(*a, key))
    }

    /// Every action with its keys and what it does, one a line (what
    /// `/hotkeys` shows).
    pub fn table(&self) -> String {
        let rows: Vec<(String, &str, &str)> = KeyAction::all()
            .map(|a| {
                let keys = match self.keys_of(a) {
                    [] => "(none)".to_string(),
                    k => k.join(", "),
                };
                (keys, a.id(), a.description())
            })
            .collect();
        let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let id_width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
        rows.iter()
            .map(|(keys, id, what)| format!("{keys:<width$}  {id:<id_width$}  {what}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `action`'s keys as configured (`["ctrl+c"]`).
    pub fn keys_of(&self, action: KeyAction) -> &[String] {
        self.names.get(&action).map_or(&[], Vec::as_slice)
    }
}
