//! The session tree as text (`/tree`).

use agent_ai::Message;
use serde_json::Value;

use crate::entry::{EntryKind, SessionEntry};
use crate::manager::SessionManager;

impl SessionManager {
    /// The tree as text, one entry a line, the current path marked `*`.
    pub fn tree_text(&self) -> String {
        let on_path: std::collections::HashSet<&str> = self
            .path_to(self.leaf.as_deref())
            .iter()
            .map(|e| e.id.as_str())
            .collect();
        let mut out = String::new();
        let mut stack: Vec<(&SessionEntry, usize)> = self
            .children(None)
            .into_iter()
            .rev()
            .map(|e| (e, 0))
            .collect();
        // Entries shown once, even when duplicate ids make the links loop.
        let mut shown = std::collections::HashSet::new();
        while let Some((entry, depth)) = stack.pop() {
            if !shown.insert(std::ptr::from_ref(entry)) {
                continue;
            }
            let mark = if on_path.contains(entry.id.as_str()) {
                '*'
            } else {
                ' '
            };
            let leaf = if self.leaf.as_deref() == Some(entry.id.as_str()) {
                "  <- leaf"
            } else {
                ""
            };
            out.push_str(&format!(
                "{mark} {}{} {}{leaf}\n",
                "  ".repeat(depth),
                entry.id,
                describe_entry(entry, 60)
            ));
            for child in self.children(Some(&entry.id)).into_iter().rev() {
                stack.push((child, depth + 1));
            }
        }
        out
    }
}

/// One line about an entry, as `/tree` and the terminal UI's tree
/// picker show it: its text on one line, cut after `width` characters.
pub fn describe_entry(entry: &SessionEntry, width: usize) -> String {
    let clip = |s: &str| {
        let one_line = s.replace('\n', " ");
        match one_line.char_indices().nth(width) {
            Some((at, _)) => format!("{}...", &one_line[..at]),
            None => one_line,
        }
    };
    match &entry.kind {
        EntryKind::Message { message } => {
            format!("{}: {}", message.role(), clip(&message_text(message)))
        }
        EntryKind::OtherMessage { message } => {
            let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
            let text = crate::context::message_from_json(message)
                .map(|m| message_text(&m))
                .unwrap_or_default();
            format!("{role}: {}", clip(&text))
        }
        EntryKind::ModelChange { provider, model_id } => format!("model {provider}/{model_id}"),
        EntryKind::ThinkingLevelChange { thinking_level } => format!("thinking {thinking_level}"),
        EntryKind::Compaction { tokens_before, .. } => {
            format!("compaction ({tokens_before} tokens before)")
        }
        EntryKind::BranchSummary { summary, .. } => format!("branch summary: {}", clip(summary)),
        EntryKind::Custom { custom_type, .. } => format!("custom {custom_type}"),
        EntryKind::CustomMessage { custom_type, .. } => format!("custom message {custom_type}"),
        EntryKind::Label { target_id, label } => format!(
            "label {target_id}: {}",
            label.as_deref().unwrap_or("(cleared)")
        ),
        EntryKind::SessionInfo { name } => format!("name: {}", name.as_deref().unwrap_or("")),
    }
}

/// A message's text as one entry line shows it: an answer's tool calls by
/// name before its text, a result after its tool's name.
fn message_text(message: &Message) -> String {
    match message {
        Message::User(u) => u.text(),
        Message::Assistant(a) => {
            let calls: Vec<&str> = a.tool_calls().map(|c| c.name.as_str()).collect();
            if calls.is_empty() {
                a.text()
            } else {
                format!("[{}] {}", calls.join(", "), a.text())
            }
        }
        Message::ToolResult(r) => format!("{}: {}", r.tool_name, r.text()),
    }
}
