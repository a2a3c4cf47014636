//! The session tree's part of the pickers: the entries in the order
//! drawn, indented where the conversation branches, what kind each is, and
//! Pi's filters over them.

use std::collections::{HashMap, HashSet};

use coding_agent::sessions::{EntryKind, SessionEntry};
use serde_json::Value;

use crate::selector::SelectorItem;

/// Which of the session's entries the tree shows (Pi's filters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TreeFilter {
    /// Everything but bookkeeping (labels, model and thinking changes,
    /// extension state, the name) and answers that only call tools.
    #[default]
    Default,
    /// The default without tool results.
    NoTools,
    /// User messages only.
    UserOnly,
}

impl TreeFilter {
    pub(super) fn name(self) -> &'static str {
        match self {
            TreeFilter::Default => "default",
            TreeFilter::NoTools => "no tools",
            TreeFilter::UserOnly => "user only",
        }
    }
}

/// What kind of entry a tree node is, for the filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeClass {
    User,
    /// An answer with text (or one that failed or was stopped).
    Answer,
    /// An answer that only calls tools.
    ToolCalls,
    ToolResult,
    /// Labels, model and thinking changes, extension state, the name.
    Bookkeeping,
    /// Compactions, branch summaries, extension messages, `!commands`.
    Other,
}

/// One entry of the tree, in the order drawn.
#[derive(Debug, Clone)]
pub(super) struct TreeNode {
    pub(super) id: String,
    pub(super) depth: usize,
    pub(super) class: NodeClass,
    pub(super) text: String,
    pub(super) time: String,
    pub(super) on_path: bool,
    pub(super) leaf: bool,
}

/// The tree picker's own state: every node, and the filter.
#[derive(Debug, Clone)]
pub(super) struct TreeView {
    pub(super) nodes: Vec<TreeNode>,
    pub(super) filter: TreeFilter,
}

impl TreeView {
    pub(super) fn shows(&self, node: &TreeNode) -> bool {
        let default = match node.class {
            NodeClass::Bookkeeping => false,
            // The leaf is always shown, so where one is stays visible.
            NodeClass::ToolCalls => node.leaf,
            _ => true,
        };
        match self.filter {
            TreeFilter::Default => default,
            TreeFilter::NoTools => default && node.class != NodeClass::ToolResult,
            TreeFilter::UserOnly => node.class == NodeClass::User,
        }
    }

    /// The nodes shown and their items.
    pub(super) fn items(&self) -> (Vec<String>, Vec<SelectorItem>) {
        self.nodes
            .iter()
            .filter(|n| self.shows(n))
            .map(|n| {
                let item = SelectorItem::new(&n.text)
                    .detail(&n.id)
                    .hint(if n.leaf {
                        format!("leaf {}", n.time)
                    } else {
                        n.time.clone()
                    })
                    .marked(n.on_path)
                    .indent(n.depth);
                (n.id.clone(), item)
            })
            .unzip()
    }
}

/// The entries in the order drawn (depth first, children in file order),
/// each indented one level more than its parent only where the parent
/// has several children: a straight conversation stays at one level.
/// Explicit stacks: a file may nest as deep as it likes; an entry whose
/// parent is missing is a root, and a loop of parents is drawn once.
pub(super) fn tree_nodes(entries: &[SessionEntry], leaf: Option<&str>) -> Vec<TreeNode> {
    let known: HashSet<&str> = entries.iter().map(|e| e.id.as_str()).collect();
    let mut children: HashMap<Option<&str>, Vec<usize>> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        let parent = e.parent_id.as_deref().filter(|p| known.contains(p));
        children.entry(parent).or_default().push(i);
    }
    let by_id: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    let mut on_path: HashSet<&str> = HashSet::new();
    let mut at = leaf.and_then(|l| by_id.get(l).copied());
    while let Some(i) = at {
        if !on_path.insert(entries[i].id.as_str()) {
            break;
        }
        at = entries[i]
            .parent_id
            .as_deref()
            .and_then(|p| by_id.get(p).copied());
    }
    let mut out = Vec::with_capacity(entries.len());
    let mut seen: HashSet<usize> = HashSet::new();
    let roots = children.get(&None).cloned().unwrap_or_default();
    let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&i| (i, 0)).collect();
    // Entries in a loop of parents have no root: each starts a walk.
    let mut rest = (0..entries.len()).rev().collect::<Vec<_>>();
    let next_root = |rest: &mut Vec<usize>, seen: &HashSet<usize>| {
        std::iter::from_fn(|| rest.pop()).find(|i| !seen.contains(i))
    };
    while let Some((i, depth)) = stack
        .pop()
        .or_else(|| next_root(&mut rest, &seen).map(|i| (i, 0)))
    {
        if !seen.insert(i) {
            continue;
        }
        let e = &entries[i];
        out.push(TreeNode {
            id: e.id.clone(),
            depth,
            class: classify(e),
            text: describe(e),
            time: e.timestamp.get(11..16).unwrap_or("").to_string(),
            on_path: on_path.contains(e.id.as_str()),
            leaf: leaf == Some(e.id.as_str()),
        });
        let kids = children
            .get(&Some(e.id.as_str()))
            .cloned()
            .unwrap_or_default();
        let child_depth = if kids.len() > 1 { depth + 1 } else { depth };
        for &k in kids.iter().rev() {
            stack.push((k, child_depth));
        }
    }
    out
}

fn classify(e: &SessionEntry) -> NodeClass {
    match &e.kind {
        EntryKind::Message { message } => {
            match message.get("role").and_then(Value::as_str).unwrap_or("") {
                "user" => NodeClass::User,
                "toolResult" => NodeClass::ToolResult,
                "assistant" => {
                    let has_text = message
                        .get("content")
                        .and_then(Value::as_array)
                        .is_some_and(|blocks| {
                            blocks.iter().any(|b| {
                                b.get("type").and_then(Value::as_str) == Some("text")
                                    && b.get("text")
                                        .and_then(Value::as_str)
                                        .is_some_and(|t| !t.trim().is_empty())
                            })
                        });
                    let stop = message.get("stopReason").and_then(Value::as_str);
                    let failed = stop.is_some_and(|s| s != "stop" && s != "toolUse");
                    if has_text || failed {
                        NodeClass::Answer
                    } else {
                        NodeClass::ToolCalls
                    }
                }
                _ => NodeClass::Other,
            }
        }
        EntryKind::Label { .. }
        | EntryKind::ModelChange { .. }
        | EntryKind::ThinkingLevelChange { .. }
        | EntryKind::Custom { .. }
        | EntryKind::SessionInfo { .. } => NodeClass::Bookkeeping,
        _ => NodeClass::Other,
    }
}

/// One line about an entry (as `/tree` writes it, wider).
fn describe(e: &SessionEntry) -> String {
    coding_agent::sessions::describe_entry(e, 120)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, parent: Option<&str>, role: &str, text: &str) -> SessionEntry {
        let content = if role == "assistant" {
            serde_json::json!([{"type": "text", "text": text}])
        } else {
            serde_json::json!(text)
        };
        SessionEntry {
            id: id.into(),
            parent_id: parent.map(str::to_string),
            timestamp: "2025-01-02T03:04:05.678Z".into(),
            kind: EntryKind::Message {
                message: serde_json::json!({"role": role, "content": content}),
            },
        }
    }

    #[test]
    fn a_straight_conversation_stays_at_one_level_and_branches_indent() {
        let entries = [
            entry("a", None, "user", "one"),
            entry("b", Some("a"), "assistant", "two"),
            entry("c", Some("b"), "user", "three"),
            entry("d", Some("b"), "user", "other branch"),
        ];
        let nodes = tree_nodes(&entries, Some("d"));
        let shape: Vec<(&str, usize, bool)> = nodes
            .iter()
            .map(|n| (n.id.as_str(), n.depth, n.on_path))
            .collect();
        assert_eq!(
            shape,
            [
                ("a", 0, true),
                ("b", 0, true),
                ("c", 1, false),
                ("d", 1, true)
            ]
        );
    }

    #[test]
    fn a_loop_of_parents_is_drawn_once() {
        let entries = [
            entry("a", Some("b"), "user", "one"),
            entry("b", Some("a"), "user", "two"),
        ];
        assert_eq!(tree_nodes(&entries, Some("a")).len(), 2);
    }
}
