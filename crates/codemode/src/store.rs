//! Where `store(key, value)` keeps values between scripts.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Map, Value};

/// The name of the session entry that records one script's store writes
/// (Pi's `codemode-store` custom entry: `{"set": {...}, "delete": [...]}`).
pub const STORE_ENTRY_TYPE: &str = "codemode-store";

/// Keeps the values scripts store. A session keeps them per branch (each
/// successful script's writes are an entry on the branch); a library user
/// may keep them in memory with [`MemoryStore`].
pub trait ScriptStore: Send + Sync {
    /// The values as a script starts.
    fn load(&self) -> BTreeMap<String, Value>;
    /// Records one successful script's writes.
    fn save(&self, set: Map<String, Value>, delete: Vec<String>);
}

/// A store in memory, shared by every script of one tool.
///
/// ```
/// use agent_codemode::{MemoryStore, ScriptStore};
/// let store = MemoryStore::default();
/// let mut set = serde_json::Map::new();
/// set.insert("cursor".into(), serde_json::json!(3));
/// store.save(set, vec![]);
/// assert_eq!(store.load()["cursor"], 3);
/// store.save(Default::default(), vec!["cursor".into()]);
/// assert!(store.load().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore(Mutex<BTreeMap<String, Value>>);

impl ScriptStore for MemoryStore {
    fn load(&self) -> BTreeMap<String, Value> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }

    fn save(&self, set: Map<String, Value>, delete: Vec<String>) {
        if let Ok(mut values) = self.0.lock() {
            for key in delete {
                values.remove(&key);
            }
            values.extend(set);
        }
    }
}

/// Replays `codemode-store` entries (their `data`, root first) into the
/// values a script on that branch sees. Entries of another shape are
/// skipped.
///
/// ```
/// use serde_json::json;
/// let values = agent_codemode::replay_store([
///     &json!({"set": {"a": 1, "b": 2}, "delete": []}),
///     &json!({"set": {}, "delete": ["a"]}),
///     &json!("not an entry"),
/// ]);
/// assert_eq!(values.len(), 1);
/// assert_eq!(values["b"], 2);
/// ```
pub fn replay_store<'a>(entries: impl IntoIterator<Item = &'a Value>) -> BTreeMap<String, Value> {
    let mut values = BTreeMap::new();
    for data in entries {
        let (Some(set), Some(delete)) = (
            data.get("set").and_then(Value::as_object),
            data.get("delete").and_then(Value::as_array),
        ) else {
            continue;
        };
        for key in delete.iter().filter_map(Value::as_str) {
            values.remove(key);
        }
        for (key, value) in set {
            values.insert(key.clone(), value.clone());
        }
    }
    values
}
