//! The session tree's part of the pickers: the entries in the order
//! drawn, indented where the conversation branches, what kind each is,
//! their labels, Pi's filters over them, and folded branches.

use std::collections::{HashMap, HashSet};

use agent_ai::{Message, StopReason};
use agent_sessions::{EntryKind, SessionEntry};
use crossterm::event::KeyEvent;

use super::edit::{EditFor, LineEdit};
use super::{Picker, PickerOutcome};
use crate::keybindings::{KeyAction, Keybindings};
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
    /// Entries with a label only.
    LabeledOnly,
    /// Every entry, bookkeeping too (answers that only call tools stay
    /// hidden, as in Pi).
    All,
}

impl TreeFilter {
    /// Pi's order of the filters, which the cycle keys follow.
    const CYCLE: [TreeFilter; 5] = [
        TreeFilter::Default,
        TreeFilter::NoTools,
        TreeFilter::UserOnly,
        TreeFilter::LabeledOnly,
        TreeFilter::All,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            TreeFilter::Default => "default",
            TreeFilter::NoTools => "no tools",
            TreeFilter::UserOnly => "user only",
            TreeFilter::LabeledOnly => "labelled only",
            TreeFilter::All => "all",
        }
    }

    /// The next filter of Pi's cycle (the previous one when not `forward`).
    pub(super) fn cycled(self, forward: bool) -> TreeFilter {
        let n = Self::CYCLE.len();
        let at = Self::CYCLE.iter().position(|f| *f == self).unwrap_or(0);
        Self::CYCLE[if forward {
            (at + 1) % n
        } else {
            (at + n - 1) % n
        }]
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
    /// The parent entry, when it is in the session.
    pub(super) parent: Option<String>,
    /// The entry's label and when it was set (ISO).
    pub(super) label: Option<(String, String)>,
    pub(super) depth: usize,
    pub(super) class: NodeClass,
    pub(super) text: String,
    pub(super) time: String,
    pub(super) on_path: bool,
    pub(super) leaf: bool,
}

/// The tree picker's own state: every node, the filter, the folded
/// entries and whether label times are shown.
#[derive(Debug, Clone, Default)]
pub(super) struct TreeView {
    pub(super) nodes: Vec<TreeNode>,
    pub(super) filter: TreeFilter,
    /// Entries whose branch is folded: their descendants are not shown.
    pub(super) folded: HashSet<String>,
    pub(super) label_times: bool,
}

/// What fold-or-up and unfold-or-down did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FoldMove {
    /// The shown entries changed (a branch folded or unfolded).
    Refolded,
    /// The highlight goes to this entry.
    Select(String),
}

/// The tree as shown: each shown entry's nearest shown ancestor and its
/// shown children, in the order drawn.
struct Shown<'a> {
    parent: HashMap<&'a str, Option<&'a str>>,
    children: HashMap<Option<&'a str>, Vec<&'a str>>,
    order: HashMap<&'a str, usize>,
}

impl TreeView {
    /// Whether the filter lets `node` through (folds aside).
    pub(super) fn shows(&self, node: &TreeNode) -> bool {
        // The leaf is always shown, so where one is stays visible.
        if node.class == NodeClass::ToolCalls && !node.leaf {
            return false;
        }
        match self.filter {
            TreeFilter::Default => node.class != NodeClass::Bookkeeping,
            TreeFilter::NoTools => {
                node.class != NodeClass::Bookkeeping && node.class != NodeClass::ToolResult
            }
            TreeFilter::UserOnly => node.class == NodeClass::User,
            TreeFilter::LabeledOnly => node.label.is_some(),
            TreeFilter::All => true,
        }
    }

    /// The nodes shown, in the order drawn: through the filter and not
    /// inside a folded branch; with how many shown entries each folded
    /// one hides.
    fn visible(&self) -> (Vec<usize>, HashMap<&str, usize>) {
        // Nodes come parents first (depth first), so one pass finds every
        // node under a fold: its parent is folded or itself hidden.
        let mut hidden_by: HashMap<&str, &str> = HashMap::new();
        let mut hides: HashMap<&str, usize> = HashMap::new();
        let mut out = Vec::with_capacity(self.nodes.len());
        for (i, n) in self.nodes.iter().enumerate() {
            let fold = n.parent.as_deref().and_then(|p| {
                if self.folded.contains(p) {
                    Some(p)
                } else {
                    hidden_by.get(p).copied()
                }
            });
            let shown = self.shows(n);
            match fold {
                Some(f) => {
                    hidden_by.insert(n.id.as_str(), f);
                    if shown {
                        *hides.entry(f).or_default() += 1;
                    }
                }
                None if shown => out.push(i),
                None => {}
            }
        }
        (out, hides)
    }

    fn shown(&self) -> Shown<'_> {
        let (visible, _) = self.visible();
        let by_id: HashMap<&str, &TreeNode> =
            self.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
        let on: HashSet<&str> = visible.iter().map(|&i| self.nodes[i].id.as_str()).collect();
        let mut shown = Shown {
            parent: HashMap::new(),
            children: HashMap::new(),
            order: HashMap::new(),
        };
        for (k, &i) in visible.iter().enumerate() {
            let id = self.nodes[i].id.as_str();
            // The nearest shown ancestor; a loop of parents ends the walk.
            let mut seen = HashSet::new();
            let mut at = self.nodes[i].parent.as_deref();
            while let Some(p) = at {
                if on.contains(p) || !seen.insert(p) {
                    break;
                }
                at = by_id.get(p).and_then(|n| n.parent.as_deref());
            }
            let parent = at.filter(|p| on.contains(p));
            shown.parent.insert(id, parent);
            shown.children.entry(parent).or_default().push(id);
            shown.order.insert(id, k);
        }
        shown
    }

    /// Pi's fold-or-up on the entry `at`: a branch's first entry (or a
    /// root) with shown children folds; otherwise the highlight goes up to
    /// the start of the branch it is in (the root at the top).
    pub(super) fn fold_or_up(&mut self, at: &str) -> Option<FoldMove> {
        let shown = self.shown();
        let kids = shown.children.get(&Some(at)).map_or(0, Vec::len);
        let parent = *shown.parent.get(at)?;
        let starts_branch =
            parent.is_none_or(|p| shown.children.get(&Some(p)).map_or(0, Vec::len) > 1);
        if kids > 0 && starts_branch && !self.folded.contains(at) {
            self.folded.insert(at.to_string());
            return Some(FoldMove::Refolded);
        }
        let from = *shown.order.get(at)?;
        let mut current = at;
        loop {
            let Some(p) = shown.parent.get(current).copied().flatten() else {
                return Some(FoldMove::Select(current.to_string()));
            };
            let siblings = shown.children.get(&Some(p)).map_or(0, Vec::len);
            if siblings > 1 && shown.order.get(current).is_some_and(|&o| o < from) {
                return Some(FoldMove::Select(current.to_string()));
            }
            current = p;
        }
    }

    /// Pi's unfold-or-down on the entry `at`: a folded entry unfolds;
    /// otherwise the highlight follows the first children down to the
    /// next branch's first entry (or the end of the line).
    pub(super) fn unfold_or_down(&mut self, at: &str) -> Option<FoldMove> {
        if self.folded.remove(at) {
            return Some(FoldMove::Refolded);
        }
        let shown = self.shown();
        shown.order.get(at)?;
        let mut current = at;
        // Each step goes to a later node: it ends.
        loop {
            match shown.children.get(&Some(current)).map(Vec::as_slice) {
                None | Some([]) => return Some(FoldMove::Select(current.to_string())),
                Some([only]) => current = only,
                Some([first, ..]) => return Some(FoldMove::Select((*first).to_string())),
            }
        }
    }

    /// The nodes shown and their items: the label in brackets before the
    /// text (with when it was set, if asked), a folded branch's hidden
    /// count.
    pub(super) fn items(&self) -> (Vec<String>, Vec<SelectorItem>) {
        let (visible, hides) = self.visible();
        visible
            .into_iter()
            .map(|i| {
                let n = &self.nodes[i];
                let mut text = String::new();
                if let Some(hidden) = hides.get(n.id.as_str()) {
                    text.push_str(&format!("(+{hidden}) "));
                } else if self.folded.contains(&n.id) {
                    text.push_str("(+0) ");
                }
                if let Some((label, set)) = &n.label {
                    text.push_str(&format!("[{label}] "));
                    if self.label_times {
                        // `2025-01-02T03:04:05.678Z` as `01-02 03:04`.
                        let when = set.get(5..16).unwrap_or("").replace('T', " ");
                        text.push_str(&format!("{when} "));
                    }
                }
                text.push_str(&n.text);
                let item = SelectorItem::new(text)
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

impl Picker {
    /// The entries again after the session changed (a label was written):
    /// the filter, folds, label times and highlight kept.
    pub fn reload_tree(&mut self, entries: &[SessionEntry], leaf: Option<&str>) {
        let keep = self.selected_value().map(str::to_string);
        let Some(view) = &mut self.tree else {
            return;
        };
        view.nodes = tree_nodes(entries, leaf);
        let known: HashSet<&str> = view.nodes.iter().map(|n| n.id.as_str()).collect();
        view.folded.retain(|id| known.contains(id.as_str()));
        self.refresh_tree(keep);
    }

    /// The tree's items again (a filter or a fold changed), the highlight
    /// kept on `keep` when it is still shown, else on its nearest shown
    /// ancestor (as Pi finds it).
    pub(super) fn refresh_tree(&mut self, keep: Option<String>) {
        let Some(view) = &self.tree else {
            return;
        };
        let (values, items) = view.items();
        let mut state = format!("[{}]", view.filter.name());
        if view.label_times {
            state.push_str(" [+label time]");
        }
        let help = format!(
            "{state} ctrl+t/u/l/a/d: no tools/user/labelled/all/default  ctrl+o: next  \
             ctrl+left/right: fold  shift+l: label  shift+t: label time"
        );
        let parents: HashMap<&str, Option<&str>> = view
            .nodes
            .iter()
            .map(|n| (n.id.as_str(), n.parent.as_deref()))
            .collect();
        let shown: HashSet<&str> = values.iter().map(String::as_str).collect();
        let mut target = keep.as_deref();
        let mut steps = 0;
        while let Some(id) = target
            && !shown.contains(id)
            && steps <= view.nodes.len()
        {
            target = parents.get(id).copied().flatten();
            steps += 1;
        }
        let target = target.filter(|id| shown.contains(id)).map(str::to_string);
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

    /// The tree's own keys (filters, folds, the label editor); `None` for
    /// the selector's.
    pub(super) fn tree_key(&mut self, key: &KeyEvent, keys: &Keybindings) -> Option<PickerOutcome> {
        let selected = self.selected_value().map(str::to_string);
        let view = self.tree.as_mut()?;
        let action = keys.first_match(key, TREE_ACTIONS)?;
        let filter = match action {
            KeyAction::TreeFilterDefault => Some(TreeFilter::Default),
            KeyAction::TreeFilterNoTools => Some(toggle(view.filter, TreeFilter::NoTools)),
            KeyAction::TreeFilterUserOnly => Some(toggle(view.filter, TreeFilter::UserOnly)),
            KeyAction::TreeFilterLabeledOnly => Some(toggle(view.filter, TreeFilter::LabeledOnly)),
            KeyAction::TreeFilterAll => Some(toggle(view.filter, TreeFilter::All)),
            KeyAction::TreeFilterCycleForward => Some(view.filter.cycled(true)),
            KeyAction::TreeFilterCycleBackward => Some(view.filter.cycled(false)),
            _ => None,
        };
        if let Some(filter) = filter {
            view.filter = filter;
            // As in Pi: another filter shows every branch again.
            view.folded.clear();
            self.refresh_tree(selected);
            return Some(PickerOutcome::Stay);
        }
        match action {
            KeyAction::TreeToggleLabelTimestamp => {
                view.label_times = !view.label_times;
                self.refresh_tree(selected);
            }
            KeyAction::TreeEditLabel => {
                let id = selected?;
                let label = view
                    .nodes
                    .iter()
                    .find(|n| n.id == id)
                    .and_then(|n| n.label.as_ref())
                    .map(|(l, _)| l.clone())
                    .unwrap_or_default();
                self.edit = Some(LineEdit::new(EditFor::Label(id), label));
            }
            KeyAction::TreeFoldOrUp | KeyAction::TreeUnfoldOrDown => {
                let at = selected?;
                let moved = if action == KeyAction::TreeFoldOrUp {
                    view.fold_or_up(&at)
                } else {
                    view.unfold_or_down(&at)
                };
                match moved {
                    Some(FoldMove::Refolded) => self.refresh_tree(Some(at)),
                    Some(FoldMove::Select(id)) => {
                        if let Some(i) = self.values.iter().position(|v| *v == id) {
                            self.selector.select_item(i);
                        }
                    }
                    None => {}
                }
            }
            _ => return None,
        }
        Some(PickerOutcome::Stay)
    }
}

/// The tree's own actions, tried before the selector's keys.
const TREE_ACTIONS: &[KeyAction] = {
    use KeyAction::*;
    &[
        TreeFilterDefault,
        TreeFilterNoTools,
        TreeFilterUserOnly,
        TreeFilterLabeledOnly,
        TreeFilterAll,
        TreeFilterCycleForward,
        TreeFilterCycleBackward,
        TreeFoldOrUp,
        TreeUnfoldOrDown,
        TreeEditLabel,
        TreeToggleLabelTimestamp,
    ]
};

/// `to`, or back to the default when it is already on.
fn toggle(now: TreeFilter, to: TreeFilter) -> TreeFilter {
    if now == to { TreeFilter::Default } else { to }
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
    // The leaf as shown: past a label, model change or name appended
    // last (a label moves the leaf), the entry before them.
    let mut shown_leaf = None;
    let mut at = leaf.and_then(|l| by_id.get(l).copied());
    while let Some(i) = at {
        if !on_path.insert(entries[i].id.as_str()) {
            break;
        }
        if shown_leaf.is_none() && classify(&entries[i]) != NodeClass::Bookkeeping {
            shown_leaf = Some(entries[i].id.as_str());
        }
        at = entries[i]
            .parent_id
            .as_deref()
            .and_then(|p| by_id.get(p).copied());
    }
    let shown_leaf = shown_leaf.or(leaf);
    // Labels as Pi resolves them: the last label entry for a target wins,
    // an empty one clears it.
    let mut labels: HashMap<&str, (String, String)> = HashMap::new();
    for e in entries {
        if let EntryKind::Label { target_id, label } = &e.kind {
            match label.as_deref().map(str::trim).filter(|l| !l.is_empty()) {
                Some(l) => labels.insert(target_id.as_str(), (l.to_string(), e.timestamp.clone())),
                None => labels.remove(target_id.as_str()),
            };
        }
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
            parent: e.parent_id.clone().filter(|p| known.contains(p.as_str())),
            label: labels.get(e.id.as_str()).cloned(),
            depth,
            class: classify(e),
            text: describe(e),
            time: e.timestamp.get(11..16).unwrap_or("").to_string(),
            on_path: on_path.contains(e.id.as_str()),
            leaf: shown_leaf == Some(e.id.as_str()),
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
        EntryKind::Message { .. } | EntryKind::OtherMessage { .. } => {
            match e.kind.agent_message().as_deref() {
                Some(Message::User(_)) => NodeClass::User,
                Some(Message::ToolResult(_)) => NodeClass::ToolResult,
                Some(Message::Assistant(a)) => {
                    let has_text = a
                        .content
                        .iter()
                        .any(|b| b.as_text().is_some_and(|t| !t.trim().is_empty()));
                    let failed = !matches!(a.stop_reason, StopReason::Stop | StopReason::ToolUse);
                    if has_text || failed {
                        NodeClass::Answer
                    } else {
                        NodeClass::ToolCalls
                    }
                }
                // Kept as JSON and not readable as agent-ai's: by its role.
                None => match e.kind.role() {
                    Some("user") => NodeClass::User,
                    Some("toolResult") => NodeClass::ToolResult,
                    _ => NodeClass::Other,
                },
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
    agent_sessions::describe_entry(e, 120)
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
            kind: EntryKind::message_from_value(
                serde_json::json!({"role": role, "content": content}),
            ),
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
