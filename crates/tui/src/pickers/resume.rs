//! The resume picker's part of the pickers: the sessions in Pi's three
//! orders (forks under the session they came from, most recent first, or
//! best match first), named ones only if asked, files shown if asked.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use agent_sessions::{SessionInfo, iso_timestamp};
use crossterm::event::KeyEvent;

use super::edit::{EditFor, LineEdit};
use super::{Picker, PickerOutcome, SessionEdit, first_line};
use crate::keybindings::{KeyAction, Keybindings};
use crate::selector::SelectorItem;

/// How the resume picker orders the sessions (Pi's sort modes; the
/// `app.session.toggleSort` key goes through them in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SessionSort {
    /// A fork under the session it was forked from, each level most
    /// recent first (by the latest activity below it); a query lists the
    /// matches best first.
    #[default]
    Threaded,
    /// Most recent first; a query only filters.
    Recent,
    /// Most recent first; a query lists the matches best first.
    Relevance,
}

impl SessionSort {
    /// Its name, as the picker shows it.
    pub fn name(self) -> &'static str {
        match self {
            SessionSort::Threaded => "threaded",
            SessionSort::Recent => "recent",
            SessionSort::Relevance => "relevance",
        }
    }

    fn next(self) -> Self {
        match self {
            SessionSort::Threaded => SessionSort::Recent,
            SessionSort::Recent => SessionSort::Relevance,
            SessionSort::Relevance => SessionSort::Threaded,
        }
    }
}

/// The resume picker's own state.
#[derive(Debug, Clone, Default)]
pub(super) struct ResumeView {
    /// As listed: most recently written first.
    pub(super) sessions: Vec<SessionInfo>,
    pub(super) sort: SessionSort,
    pub(super) show_path: bool,
    pub(super) named_only: bool,
    /// The session whose deletion waits for Enter (index in `sessions`).
    pub(super) confirm_delete: Option<usize>,
    /// Item `i` of the selector is `sessions[order[i]]`.
    pub(super) order: Vec<usize>,
}

impl ResumeView {
    /// The next sort mode.
    pub(super) fn toggle_sort(&mut self) {
        self.sort = self.sort.next();
    }

    /// The session of the selector's item `item`.
    pub(super) fn session(&self, item: usize) -> Option<&SessionInfo> {
        self.sessions.get(*self.order.get(item)?)
    }

    /// The help line: the state, then the keys.
    pub(super) fn help(&self) -> String {
        let mut state = format!("[{}]", self.sort.name());
        if self.named_only {
            state.push_str(" [named]");
        }
        if self.show_path {
            state.push_str(" [path]");
        }
        format!("{state} ctrl+s: sort  ctrl+n: named  ctrl+r: rename  ctrl+d: delete  ctrl+p: path")
    }

    /// The items in the order of the sort (and `order` to match), and
    /// each one's id: `/resume ID` takes it.
    pub(super) fn items(&mut self, current: Option<&str>) -> (Vec<String>, Vec<SelectorItem>) {
        let keep: Vec<usize> = (0..self.sessions.len())
            .filter(|&i| {
                !self.named_only
                    || self.sessions[i]
                        .name
                        .as_deref()
                        .is_some_and(|n| !n.trim().is_empty())
            })
            .collect();
        let placed: Vec<(usize, usize)> = match self.sort {
            SessionSort::Threaded => threaded(&self.sessions, &keep),
            SessionSort::Recent | SessionSort::Relevance => keep.iter().map(|&i| (i, 0)).collect(),
        };
        self.order = placed.iter().map(|&(i, _)| i).collect();
        placed
            .iter()
            .map(|&(i, depth)| {
                let s = &self.sessions[i];
                let item = session_item(s, current, self.show_path).indent(depth);
                (s.id.clone(), item)
            })
            .unzip()
    }
}

impl Picker {
    /// The sessions arrived (again): into the resume picker, the
    /// highlight kept on the same session when it is still listed.
    pub(super) fn load_sessions(&mut self, list: Vec<SessionInfo>) {
        let keep = self.selected_value().map(str::to_string);
        let view = self.resume.get_or_insert_with(ResumeView::default);
        view.sessions = list;
        view.confirm_delete = None;
        self.selector.set_loading(false);
        self.selector
            .set_empty_text("no sessions to resume in this directory");
        self.refresh_sessions(keep);
    }

    /// The resume picker's items again (the order or a toggle changed).
    fn refresh_sessions(&mut self, keep: Option<String>) {
        let current = self.current.clone();
        let Some(view) = &mut self.resume else {
            return;
        };
        let (values, items) = view.items(current.as_deref());
        let help = view.help();
        self.selector
            .set_keep_order(view.sort == SessionSort::Recent);
        self.values = values;
        self.selector.set_items(items);
        self.selector.set_help(help);
        if let Some(i) = keep.and_then(|id| self.values.iter().position(|v| *v == id)) {
            self.selector.select_item(i);
        }
    }

    /// The session of the highlighted item.
    fn selected_session(&self) -> Option<&SessionInfo> {
        self.resume
            .as_ref()?
            .session(self.selector.selected_item()?)
    }

    /// The resume picker's own keys (sort, named, path, rename, delete);
    /// `None` for the selector's.
    pub(super) fn resume_key(
        &mut self,
        key: &KeyEvent,
        keys: &Keybindings,
    ) -> Option<PickerOutcome> {
        let action = keys.first_match(key, RESUME_ACTIONS)?;
        // Backspace with a query is the query's (as in Pi).
        if action == KeyAction::SessionDeleteNoninvasive && !self.selector.query().is_empty() {
            return None;
        }
        let keep = self.selected_value().map(str::to_string);
        let view = self.resume.as_mut()?;
        match action {
            KeyAction::SessionToggleSort => view.toggle_sort(),
            KeyAction::SessionToggleNamedFilter => view.named_only = !view.named_only,
            KeyAction::SessionTogglePath => view.show_path = !view.show_path,
            KeyAction::SessionRename | KeyAction::SessionDelete if self.selector.is_loading() => {
                self.set_status("wait: the list is being read", true);
                return Some(PickerOutcome::Stay);
            }
            KeyAction::SessionRename => {
                let session = self.selected_session()?;
                let target = EditFor::Rename {
                    id: session.id.clone(),
                    path: session.path.clone(),
                };
                let name = session.name.clone().unwrap_or_default();
                self.edit = Some(LineEdit::new(target, name));
                return Some(PickerOutcome::Stay);
            }
            KeyAction::SessionDelete | KeyAction::SessionDeleteNoninvasive => {
                let item = self.selector.selected_item()?;
                let session = self.resume.as_ref()?.session(item)?;
                if self.current.as_deref() == Some(session.id.as_str()) {
                    self.set_status("the session open now cannot be deleted", true);
                    return Some(PickerOutcome::Stay);
                }
                let title = self
                    .selector
                    .items()
                    .get(item)
                    .map(|i| i.label.clone())
                    .unwrap_or_default();
                let at = self.resume.as_ref()?.order.get(item).copied();
                if let Some(view) = &mut self.resume {
                    view.confirm_delete = at;
                }
                self.set_status(
                    &format!("delete {title:?}? enter: delete the file  esc: keep it"),
                    true,
                );
                return Some(PickerOutcome::Stay);
            }
            _ => return None,
        }
        self.refresh_sessions(keep);
        Some(PickerOutcome::Stay)
    }

    /// A key while a delete waits for a yes: Enter deletes, Esc keeps
    /// the file, other keys do nothing.
    pub(super) fn confirm_key(&mut self, key: &KeyEvent, keys: &Keybindings) -> PickerOutcome {
        let yes = keys.matches(KeyAction::SelectConfirm, key);
        if !yes && !keys.matches(KeyAction::SelectCancel, key) {
            return PickerOutcome::Stay;
        }
        let at = self.resume.as_mut().and_then(|r| r.confirm_delete.take());
        self.selector.set_status(None);
        let path = at.and_then(|i| Some(self.resume.as_ref()?.sessions.get(i)?.path.clone()));
        match path {
            Some(path) if yes => {
                self.selector.set_loading(true);
                PickerOutcome::Edit(SessionEdit::Delete { path })
            }
            _ => PickerOutcome::Stay,
        }
    }
}

/// The resume picker's own actions, tried before the selector's keys.
const RESUME_ACTIONS: &[KeyAction] = {
    use KeyAction::*;
    &[
        SessionToggleSort,
        SessionToggleNamedFilter,
        SessionTogglePath,
        SessionRename,
        SessionDelete,
        SessionDeleteNoninvasive,
    ]
};

/// The sessions `keep` (indices into `sessions`) as a forest: a fork
/// under the session whose file it names as its parent, each level by the
/// latest activity below it, newest first; each with its depth. A parent
/// left out (or a loop of parents) makes a root.
fn threaded(sessions: &[SessionInfo], keep: &[usize]) -> Vec<(usize, usize)> {
    let by_path: HashMap<&Path, usize> = keep
        .iter()
        .map(|&i| (sessions[i].path.as_path(), i))
        .collect();
    let parent_of = |i: usize| -> Option<usize> {
        let parent = sessions[i].parent_session.as_deref()?;
        by_path.get(Path::new(parent)).copied().filter(|&p| p != i)
    };
    // The latest activity of each subtree: every session raises its
    // ancestors' (a loop is walked once).
    let mut latest: HashMap<usize, i64> = keep.iter().map(|&i| (i, sessions[i].modified)).collect();
    for &i in keep {
        let mut seen = HashSet::from([i]);
        let mut at = parent_of(i);
        while let Some(p) = at {
            if !seen.insert(p) {
                break;
            }
            let l = latest.entry(p).or_default();
            *l = (*l).max(sessions[i].modified);
            at = parent_of(p);
        }
    }
    let mut children: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
    for &i in keep {
        children.entry(parent_of(i)).or_default().push(i);
    }
    let newest_first = |list: &mut Vec<usize>| {
        list.sort_by_key(|i| std::cmp::Reverse(latest.get(i).copied().unwrap_or(0)));
    };
    for list in children.values_mut() {
        newest_first(list);
    }
    let mut out = Vec::with_capacity(keep.len());
    let mut seen = HashSet::new();
    let mut roots = children.get(&None).cloned().unwrap_or_default();
    // Sessions in a loop of parents have no root: the rest become roots.
    let mut rest: Vec<usize> = keep.to_vec();
    newest_first(&mut rest);
    roots.extend(rest);
    let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&i| (i, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        if !seen.insert(i) {
            continue;
        }
        out.push((i, depth));
        if let Some(kids) = children.get(&Some(i)) {
            stack.extend(kids.iter().rev().map(|&k| (k, depth + 1)));
        }
    }
    out
}

/// One session's item: its name or first message, the date and id (and
/// the file, when asked), and how many messages it has.
fn session_item(s: &SessionInfo, current: Option<&str>, show_path: bool) -> SelectorItem {
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
    let mut detail = format!("{date}  {short_id}");
    if show_path {
        detail.push_str(&format!("  {}", home_short(&s.path)));
    }
    SelectorItem::new(title)
        .detail(detail)
        .hint(count)
        .marked(current == Some(s.id.as_str()))
}

/// `path` with the home directory as `~`.
fn home_short(path: &Path) -> String {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    match home.as_deref().and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) if !rest.as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str, modified: i64, parent: Option<&str>) -> SessionInfo {
        SessionInfo {
            path: format!("/s/{id}.jsonl").into(),
            id: id.into(),
            cwd: String::new(),
            created: 0,
            modified,
            name: None,
            first_message: id.into(),
            message_count: 0,
            parent_session: parent.map(|p| format!("/s/{p}.jsonl")),
        }
    }

    #[test]
    fn forks_sit_under_their_parent_and_a_loop_is_drawn_once() {
        let sessions = [
            info("new", 50, None),
            info("fork", 40, Some("old")),
            info("old", 10, None),
            info("a", 5, Some("b")),
            info("b", 4, Some("a")),
        ];
        let keep: Vec<usize> = (0..sessions.len()).collect();
        let shape: Vec<(&str, usize)> = threaded(&sessions, &keep)
            .into_iter()
            .map(|(i, d)| (sessions[i].id.as_str(), d))
            .collect();
        assert_eq!(
            shape,
            [("new", 0), ("old", 0), ("fork", 1), ("a", 0), ("b", 1)]
        );
    }
}
