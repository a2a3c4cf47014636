//! The session's entries as a tree: the active path (root to the current
//! leaf) first, then every other branch from the point it left the part
//! already shown. Walked with explicit stacks: a file may nest branches
//! as deep as its author likes.

use std::collections::HashMap;

use agent_sessions::SessionEntry;

/// The tree over a session's entries (indices into `entries`).
pub(crate) struct Tree<'a> {
    pub entries: &'a [SessionEntry],
    /// Children of each entry, in file order.
    pub children: Vec<Vec<usize>>,
    /// Entries without a (known) parent, in file order.
    pub roots: Vec<usize>,
    /// Each entry's parent (`None`: a root; a parent later in the file
    /// counts as none, which breaks cycles).
    pub parent: Vec<Option<usize>>,
    /// Root to leaf of the current branch.
    pub active: Vec<usize>,
    /// Other branches: each leaf's entries not already on an earlier
    /// branch, and the entry the branch leaves from.
    pub branches: Vec<Branch>,
    on_active: Vec<bool>,
}

/// A branch besides the active one.
pub(crate) struct Branch {
    /// The shown entry this branch continues from (`None`: a second root).
    pub from: Option<usize>,
    /// Its own entries, in order.
    pub entries: Vec<usize>,
}

impl<'a> Tree<'a> {
    /// The tree of `entries`, with `leaf` (an entry id) as the current leaf.
    pub fn new(entries: &'a [SessionEntry], leaf: Option<&str>) -> Self {
        let index: HashMap<&str, usize> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id.as_str(), i))
            .collect();
        let parent: Vec<Option<usize>> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                // A parent later in the file (or itself) would make a cycle.
                e.parent_id
                    .as_deref()
                    .and_then(|p| index.get(p).copied())
                    .filter(|&p| p < i)
            })
            .collect();
        let mut children = vec![Vec::new(); entries.len()];
        let mut roots = Vec::new();
        for (i, p) in parent.iter().enumerate() {
            match p {
                Some(p) => children[*p].push(i),
                None => roots.push(i),
            }
        }
        let path_to = |leaf: usize| {
            let mut path = vec![leaf];
            let mut at = leaf;
            while let Some(p) = parent[at] {
                path.push(p);
                at = p;
            }
            path.reverse();
            path
        };
        let leaf = leaf
            .and_then(|id| index.get(id).copied())
            .or(entries.len().checked_sub(1));
        let active = leaf.map(path_to).unwrap_or_default();
        let mut shown = vec![false; entries.len()];
        for &i in &active {
            shown[i] = true;
        }
        let on_active = shown.clone();
        let mut branches = Vec::new();
        for i in 0..entries.len() {
            if !children[i].is_empty() || shown[i] {
                continue;
            }
            // Up from the leaf only to the first entry already shown: each
            // entry is walked once over all branches.
            let mut own = vec![i];
            let mut at = parent[i];
            while let Some(p) = at {
                if shown[p] {
                    break;
                }
                own.push(p);
                at = parent[p];
            }
            own.reverse();
            for &e in &own {
                shown[e] = true;
            }
            branches.push(Branch {
                from: at,
                entries: own,
            });
        }
        Tree {
            entries,
            children,
            roots,
            parent,
            active,
            branches,
            on_active,
        }
    }

    /// Whether entry `i` is on the active path.
    pub fn is_active(&self, i: usize) -> bool {
        self.on_active.get(i).copied().unwrap_or(false)
    }

    /// The children of `i` with the one on the active path first.
    pub fn ordered_children(&self, i: Option<usize>) -> Vec<usize> {
        let mut kids = match i {
            Some(i) => self.children[i].clone(),
            None => self.roots.clone(),
        };
        kids.sort_by_key(|&k| !self.is_active(k));
        kids
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_sessions::EntryKind;

    fn entry(id: &str, parent: Option<&str>) -> SessionEntry {
        SessionEntry {
            id: id.into(),
            parent_id: parent.map(str::to_string),
            timestamp: String::new(),
            kind: EntryKind::SessionInfo { name: None },
        }
    }

    #[test]
    fn the_active_path_comes_first_and_branches_start_where_they_leave() {
        // a - b - c - d, and a - x - y (the active leaf)
        let entries = vec![
            entry("a", None),
            entry("b", Some("a")),
            entry("c", Some("b")),
            entry("x", Some("a")),
            entry("y", Some("x")),
            entry("d", Some("c")),
        ];
        let tree = Tree::new(&entries, Some("y"));
        assert_eq!(tree.active, vec![0, 3, 4]);
        assert_eq!(tree.branches.len(), 1);
        assert_eq!(tree.branches[0].from, Some(0));
        assert_eq!(tree.branches[0].entries, vec![1, 2, 5]);
        assert_eq!(tree.ordered_children(Some(0)), vec![3, 1]);
    }

    #[test]
    fn cycles_and_unknown_parents_become_roots() {
        let entries = vec![
            entry("a", Some("b")),
            entry("b", Some("a")),
            entry("c", Some("zz")),
        ];
        let tree = Tree::new(&entries, None);
        assert_eq!(tree.roots, vec![0, 2]);
        assert_eq!(tree.active, vec![2]);
        assert_eq!(tree.branches.len(), 1);
        assert_eq!(tree.branches[0].entries, vec![0, 1]);
    }
}
