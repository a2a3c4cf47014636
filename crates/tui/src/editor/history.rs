//! Prompt history: what was sent (and, on start or resume, the session's
//! own user messages, as Pi fills it), browsed with Up/Down and searched
//! backwards incrementally with Ctrl+R.

/// At most this many prompts are kept (Pi keeps 100).
pub const HISTORY_SIZE: usize = 100;

/// Sent prompts, oldest first; no two neighbours alike.
#[derive(Debug, Clone, Default)]
pub struct History {
    entries: Vec<String>,
}

impl History {
    /// Adds a sent prompt (trimmed; blank text and a repeat of the newest
    /// are not added).
    pub fn push(&mut self, text: &str) {
        let text = text.trim();
        if text.is_empty() || self.entries.last().is_some_and(|l| l == text) {
            return;
        }
        self.entries.push(text.to_string());
        if self.entries.len() > HISTORY_SIZE {
            self.entries.remove(0);
        }
    }

    /// Entry `i` (0 is the oldest).
    pub fn get(&self, i: usize) -> Option<&str> {
        self.entries.get(i).map(String::as_str)
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was sent.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The newest entry older than `before` (all when `None`) that holds
    /// `query`, ignoring case.
    pub fn search(&self, query: &str, before: Option<usize>) -> Option<usize> {
        let end = before.unwrap_or(self.entries.len()).min(self.entries.len());
        let query = query.to_lowercase();
        self.entries[..end]
            .iter()
            .rposition(|e| e.to_lowercase().contains(&query))
    }
}

/// A Ctrl+R search in progress.
#[derive(Debug, Clone, Default)]
pub struct HistorySearch {
    /// What was typed.
    pub query: String,
    /// The entry shown, if any holds the query.
    pub found: Option<usize>,
    /// The query matched nothing (older).
    pub failed: bool,
    /// The editor's text and caret before the search, for Esc.
    pub(crate) saved: (String, usize),
}
