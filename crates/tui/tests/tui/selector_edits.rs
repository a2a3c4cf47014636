//! What the session tree and the resume picker change in place: folds,
//! labels written to a real session file and read back, the tree's other
//! filters; a session renamed in its file, deleted only after a yes and
//! only inside the sessions directory, the three orders, the path and
//! named toggles. Files live in temporary directories.

use std::path::{Path, PathBuf};
use std::time::Instant;

use agent_ai::{AssistantMessage, ContentBlock, Message};
use agent_sessions::{EntryKind, SessionEntry, SessionInfo, SessionManager};
use agent_tui::UiTheme;
use agent_tui::app::{Action, App};
use agent_tui::pickers::{
    Picker, PickerData, SessionEdit, SessionSort, TreeFilter, delete_session, rename_session,
    write_label,
};
use agent_tui::text::plain;
use agent_tui::transcript::Transcript;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::{cx, status};

fn k(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn ctrl_code(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::CONTROL)
}

/// An upper-case letter as a terminal reports Shift with it.
fn shifted(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::SHIFT)
}

fn app() -> App {
    App::new(Transcript::new(UiTheme::plain()), cx(), status())
}

fn typed(a: &mut App, text: &str) {
    for c in text.chars() {
        a.key(k(KeyCode::Char(c)));
    }
}

fn view(a: &mut App) -> String {
    plain(&a.compose(100, 40, Instant::now(), None).0)
}

fn selected(a: &App) -> Option<String> {
    a.picker
        .as_ref()
        .and_then(|p| p.selected_value().map(str::to_string))
}

fn message(id: &str, parent: Option<&str>, role: &str, text: &str) -> SessionEntry {
    let message = if role == "user" {
        serde_json::json!({"role": "user", "content": text, "timestamp": 0})
    } else {
        serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": text}],
            "stopReason": "stop", "timestamp": 0})
    };
    SessionEntry {
        id: id.into(),
        parent_id: parent.map(str::to_string),
        timestamp: "2025-01-02T03:04:05.678Z".into(),
        kind: EntryKind::message_from_value(message),
    }
}

/// u1 > a1 > { u2 > a2, u3 > a3 }, the leaf a3.
fn branched() -> Vec<SessionEntry> {
    vec![
        message("u1", None, "user", "start"),
        message("a1", Some("u1"), "assistant", "two ways"),
        message("u2", Some("a1"), "user", "first branch"),
        message("a2", Some("u2"), "assistant", "answer one"),
        message("u3", Some("a1"), "user", "second branch"),
        message("a3", Some("u3"), "assistant", "answer two"),
    ]
}

#[test]
fn the_tree_folds_a_branch_and_moves_between_branches() {
    let mut a = app();
    a.picker = Some(Picker::tree(&branched(), Some("a3")));
    assert_eq!(selected(&a).as_deref(), Some("a3"));
    let fold = ctrl_code(KeyCode::Left);
    let unfold = ctrl_code(KeyCode::Right);
    // On the leaf (nothing below it): up to the start of its branch.
    assert_eq!(a.key(fold), None);
    assert_eq!(selected(&a).as_deref(), Some("u3"));
    // Up two rows to the first branch's start, and fold it.
    a.key(k(KeyCode::Up));
    a.key(k(KeyCode::Up));
    assert_eq!(selected(&a).as_deref(), Some("u2"));
    a.key(fold);
    let shown = view(&mut a);
    assert!(shown.contains("(+1) user: first branch"), "{shown}");
    assert!(!shown.contains("answer one"), "{shown}");
    assert!(
        shown.contains("answer two"),
        "the other branch stays: {shown}"
    );
    // Folded, it cannot fold again: up goes to the root.
    a.key(fold);
    assert_eq!(selected(&a).as_deref(), Some("u1"));
    // Down from the root follows the line to the first branch.
    a.key(unfold);
    assert_eq!(selected(&a).as_deref(), Some("u2"));
    a.key(unfold);
    let shown = view(&mut a);
    assert!(shown.contains("answer one"), "unfolded: {shown}");
    assert!(!shown.contains("(+"), "{shown}");
    // Alt+Left is Pi's other key for it; a root folds all below it.
    a.key(k(KeyCode::Up));
    a.key(k(KeyCode::Up));
    assert_eq!(selected(&a).as_deref(), Some("u1"));
    a.key(KeyEvent::new(KeyCode::Left, KeyModifiers::ALT));
    let shown = view(&mut a);
    assert!(shown.contains("(+5) user: start"), "{shown}");
    assert!(shown.contains("(1/1)"), "{shown}");
    // A query shows the whole tree again, as in Pi.
    typed(&mut a, "answer");
    let shown = view(&mut a);
    assert!(
        shown.contains("answer one") && shown.contains("answer two"),
        "{shown}"
    );
    // So does another filter.
    a.key(k(KeyCode::Backspace));
    for _ in 0..5 {
        a.key(k(KeyCode::Backspace));
    }
    a.key(fold);
    assert!(view(&mut a).contains("(+5)"));
    a.key(ctrl('t'));
    assert!(!view(&mut a).contains("(+"));
}

#[test]
fn the_filters_cycle_and_the_all_filter_shows_bookkeeping() {
    let mut a = app();
    let mut entries = branched();
    entries.push(SessionEntry {
        id: "m1".into(),
        parent_id: Some("a3".into()),
        timestamp: "2025-01-02T03:06:00.000Z".into(),
        kind: EntryKind::ModelChange {
            provider: "p".into(),
            model_id: "other".into(),
        },
    });
    a.picker = Some(Picker::tree(&entries, Some("m1")));
    let filter = |a: &App| a.picker.as_ref().and_then(Picker::tree_filter);
    let shown = view(&mut a);
    assert!(!shown.contains("model p/other"), "{shown}");
    // The leaf is a model change (hidden): the entry before it is the
    // leaf shown and highlighted.
    assert!(shown.contains(">*   assistant: answer two"), "{shown}");
    assert!(shown.contains("leaf 03:04"), "{shown}");
    a.key(ctrl('a'));
    assert_eq!(filter(&a), Some(TreeFilter::All));
    assert!(view(&mut a).contains("model p/other"));
    a.key(ctrl('a'));
    assert_eq!(filter(&a), Some(TreeFilter::Default));
    let order = [
        TreeFilter::NoTools,
        TreeFilter::UserOnly,
        TreeFilter::LabeledOnly,
        TreeFilter::All,
        TreeFilter::Default,
    ];
    for want in order {
        a.key(ctrl('o'));
        assert_eq!(filter(&a), Some(want));
    }
    a.key(KeyEvent::new(
        KeyCode::Char('o'),
        KeyModifiers::CONTROL | KeyModifiers::SHIFT,
    ));
    assert_eq!(filter(&a), Some(TreeFilter::All));
    a.key(ctrl('l'));
    assert_eq!(filter(&a), Some(TreeFilter::LabeledOnly));
    assert!(view(&mut a).contains("no entries with this filter"));
}

fn answer(text: &str) -> Message {
    let mut m = AssistantMessage::empty("p", "m");
    m.content.push(ContentBlock::text(text));
    Message::Assistant(m)
}

/// A session file in `dir` with a question and an answer; its manager.
fn session(cwd: &Path, dir: &Path, question: &str) -> SessionManager {
    let mut m = SessionManager::create(cwd, dir.to_path_buf()).expect("a session");
    m.append_message(&Message::user(question)).expect("written");
    m.append_message(&answer("an answer")).expect("written");
    m
}

#[test]
fn a_label_is_written_to_the_session_file_and_survives_reopening() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path().join("sessions");
    let mut manager = session(tmp.path(), &dir, "the question");
    let file = manager.session_file().expect("a file").to_path_buf();
    let question = manager.entries()[0].id.clone();
    let mut a = app();
    a.picker = Some(Picker::tree(manager.entries(), manager.leaf_id()));
    a.key(k(KeyCode::Up));
    assert_eq!(selected(&a), Some(question.clone()));
    // Shift+L opens the label editor; typing and Enter ask for the write.
    a.key(shifted('L'));
    assert_eq!(
        a.picker.as_ref().and_then(Picker::editing),
        Some((question.as_str(), ""))
    );
    assert!(view(&mut a).contains("label: "));
    typed(&mut a, "  milestone ");
    let edit = a.key(k(KeyCode::Enter));
    let Some(Action::SessionEdit(SessionEdit::Label { entry, label })) = edit else {
        panic!("a label edit, not {edit:?}");
    };
    assert_eq!(
        (entry.as_str(), label.as_deref()),
        (question.as_str(), Some("milestone"))
    );
    assert!(
        a.picker.as_ref().is_some_and(|p| p.editing().is_none()),
        "back to the list"
    );
    // What the UI does with it: the entry appended, the tree drawn again.
    let done = write_label(&mut manager, &entry, label.as_deref()).expect("written");
    if let Some(p) = a.picker.as_mut() {
        p.reload_tree(manager.entries(), manager.leaf_id());
        p.set_status(&done, false);
    }
    let shown = view(&mut a);
    assert!(shown.contains("[milestone] user: the question"), "{shown}");
    assert!(
        shown.contains("labelled \"milestone\""),
        "the status line: {shown}"
    );
    assert_eq!(selected(&a), Some(question.clone()), "the highlight stays");
    // The next key takes the status line away.
    a.key(k(KeyCode::Down));
    assert!(!view(&mut a).contains("labelled \"milestone\""));

    // Pi's line in the file, and the label read back from it.
    let text = std::fs::read_to_string(&file).expect("the file");
    let last: serde_json::Value =
        serde_json::from_str(text.lines().last().unwrap_or("")).expect("JSON");
    assert_eq!(last["type"], "label");
    assert_eq!(last["targetId"], question.as_str());
    assert_eq!(last["label"], "milestone");
    let reopened = SessionManager::open(&file).expect("reopened");
    let mut again = Picker::tree(reopened.entries(), reopened.leaf_id());
    let rows = plain(&again.view(100, 30, &UiTheme::plain()).0);
    assert!(rows.contains("[milestone] user: the question"), "{rows}");
    // The labelled-only filter, and the label's time on Shift+T.
    let mut a = app();
    a.picker = Some(again);
    a.key(ctrl('l'));
    let shown = view(&mut a);
    assert!(
        shown.contains("(1/1)") && shown.contains("[milestone]"),
        "{shown}"
    );
    a.key(shifted('T'));
    let set = reopened
        .entries()
        .iter()
        .rev()
        .find(|e| matches!(e.kind, EntryKind::Label { .. }))
        .map(|e| e.timestamp.clone())
        .unwrap_or_default();
    let when = set.get(5..16).unwrap_or("").replace('T', " ");
    let shown = view(&mut a);
    assert!(
        shown.contains(&format!("[milestone] {when} user:")),
        "{shown}"
    );
    assert!(shown.contains("[+label time]"), "{shown}");

    // An empty label clears it, in the file too.
    a.key(shifted('L'));
    assert_eq!(
        a.picker.as_ref().and_then(Picker::editing),
        Some((question.as_str(), "milestone"))
    );
    a.key(ctrl('u'));
    let edit = a.key(k(KeyCode::Enter));
    assert_eq!(
        edit,
        Some(Action::SessionEdit(SessionEdit::Label {
            entry: question.clone(),
            label: None
        }))
    );
    let mut manager = SessionManager::open(&file).expect("reopened");
    write_label(&mut manager, &question, None).expect("cleared");
    let reopened = SessionManager::open(&file).expect("reopened");
    let mut cleared = Picker::tree(reopened.entries(), reopened.leaf_id());
    assert!(!plain(&cleared.view(100, 30, &UiTheme::plain()).0).contains("[milestone]"));

    // Bad input is a message, and nothing is written.
    let lines = std::fs::read_to_string(&file).map_or(0, |t| t.lines().count());
    let bad = write_label(&mut manager, &question, Some("a\u{1b}[2Jb"));
    assert!(bad.is_err_and(|e| e.contains("control characters")));
    let unknown = write_label(&mut manager, "nope1234", Some("x"));
    assert!(unknown.is_err_and(|e| e.contains("no entry nope1234")));
    let long = write_label(&mut manager, &question, Some(&"x".repeat(501)));
    assert!(long.is_err_and(|e| e.contains("longer than 500")));
    assert_eq!(
        std::fs::read_to_string(&file).map_or(0, |t| t.lines().count()),
        lines
    );
}

/// Two sessions of one directory: the list, the older one's manager.
fn two_sessions(tmp: &Path) -> (PathBuf, Vec<SessionInfo>, SessionManager, SessionManager) {
    let dir = tmp.join("sessions");
    let older = session(tmp, &dir, "older work");
    let newer = session(tmp, &dir, "newer work");
    // Written in one millisecond, perhaps: their times are set apart.
    for (m, secs) in [(&older, 1_000_000), (&newer, 2_000_000)] {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        let file = std::fs::File::options()
            .write(true)
            .open(m.session_file().expect("a file"))
            .expect("opened");
        file.set_modified(at).expect("set");
    }
    let list = SessionManager::list(tmp, &dir);
    assert_eq!(list.len(), 2);
    (dir, list, older, newer)
}

#[test]
fn the_resume_picker_renames_a_session_in_its_file() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let (dir, list, older, newer) = two_sessions(tmp.path());
    let mut a = app();
    a.picker = Some(Picker::sessions(list, Some(newer.session_id())));
    let target = older.session_file().expect("a file").to_path_buf();
    typed(&mut a, "older");
    a.key(ctrl('r'));
    assert_eq!(
        a.picker.as_ref().and_then(Picker::editing),
        Some((older.session_id(), ""))
    );
    assert!(view(&mut a).contains("Rename the session"));
    // An empty name is not written: Enter stays in the editor.
    assert_eq!(a.key(k(KeyCode::Enter)), None);
    typed(&mut a, "Parser rewrite");
    a.paste("\u{7} 漢字\n");
    let edit = a.key(k(KeyCode::Enter));
    let Some(Action::SessionEdit(SessionEdit::Rename { path, name })) = edit else {
        panic!("a rename, not {edit:?}");
    };
    assert_eq!(path, target);
    assert_eq!(
        name, "Parser rewrite 漢字",
        "control characters never get in"
    );
    // While it is written the list is "loading"; then it comes again.
    assert!(view(&mut a).contains("(loading...)"));
    a.key(ctrl('w'));
    let done = rename_session(&dir, &path, &name);
    let relisted = SessionManager::list(tmp.path(), &dir);
    if let Some(p) = a.picker.as_mut() {
        p.load(PickerData::SessionsEdited(done, relisted));
    }
    let shown = view(&mut a);
    assert!(shown.contains("Parser rewrite 漢字"), "{shown}");
    assert!(shown.contains("named \"Parser rewrite 漢字\""), "{shown}");
    // Pi's `session_info` line, appended to that file.
    let reopened = SessionManager::open(&target).expect("reopened");
    assert_eq!(reopened.name().as_deref(), Some("Parser rewrite 漢字"));
    let last = std::fs::read_to_string(&target).unwrap_or_default();
    assert!(
        last.lines()
            .last()
            .unwrap_or("")
            .contains("\"type\":\"session_info\"")
    );

    // Bad names and files are messages; nothing is written.
    let before = std::fs::read(&target).unwrap_or_default();
    let bell = rename_session(&dir, &target, "ring\u{7}");
    assert!(
        bell.is_err_and(|e| e.contains("control characters")),
        "bell"
    );
    assert!(rename_session(&dir, &target, "   ").is_err_and(|e| e.contains("empty")));
    assert_eq!(std::fs::read(&target).unwrap_or_default(), before);
    let outside = tmp.path().join("elsewhere.jsonl");
    std::fs::copy(&target, &outside).expect("copied");
    let refused = rename_session(&dir, &outside, "x");
    assert!(refused.is_err_and(|e| e.contains("not in the sessions directory")));
    let junk = dir.join("junk.jsonl");
    std::fs::write(&junk, "not json\n").expect("written");
    let refused = rename_session(&dir, &junk, "x");
    assert!(refused.is_err_and(|e| e.contains("not renamed")), "junk");
    std::fs::create_dir(dir.join("a-directory.jsonl")).expect("made");
    let refused = rename_session(&dir, &dir.join("a-directory.jsonl"), "x");
    assert!(refused.is_err_and(|e| e.contains("not a regular file; left alone")));
    // A link in the directory is not followed to the file it names.
    let link = dir.join("link.jsonl");
    std::os::unix::fs::symlink(&outside, &link).expect("linked");
    let outside_before = std::fs::read(&outside).unwrap_or_default();
    let refused = rename_session(&dir, &link, "x");
    assert!(refused.is_err_and(|e| e.contains("is a link or not a regular file")));
    assert_eq!(std::fs::read(&outside).unwrap_or_default(), outside_before);
    // A failed write shows in the picker, in the error colour.
    if let Some(p) = a.picker.as_mut() {
        p.load(PickerData::SessionsEdited(
            Err("not renamed: disk full".into()),
            Vec::new(),
        ));
        assert_eq!(
            p.selector().status(),
            Some(("not renamed: disk full", true))
        );
    }
    drop(newer);
}

#[test]
fn a_session_is_deleted_after_a_yes_and_only_inside_the_directory() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let (dir, list, older, newer) = two_sessions(tmp.path());
    let current = newer.session_file().expect("a file").to_path_buf();
    let target = older.session_file().expect("a file").to_path_buf();
    let mut a = app();
    a.picker = Some(Picker::sessions(list.clone(), Some(newer.session_id())));
    // The open session cannot be deleted.
    assert_eq!(selected(&a).as_deref(), Some(newer.session_id()));
    a.key(ctrl('d'));
    assert!(
        a.picker
            .as_ref()
            .is_some_and(|p| p.confirming_delete().is_none())
    );
    assert!(view(&mut a).contains("the session open now cannot be deleted"));
    // Another one asks first; other keys do nothing; Esc keeps it.
    a.key(k(KeyCode::Down));
    a.key(ctrl('d'));
    assert_eq!(
        a.picker.as_ref().and_then(Picker::confirming_delete),
        Some(target.as_path())
    );
    let shown = view(&mut a);
    assert!(
        shown.contains("delete \"older work\"? enter: delete"),
        "{shown}"
    );
    typed(&mut a, "x");
    assert_eq!(a.picker.as_ref().map(|p| p.selector().query()), Some(""));
    assert_eq!(a.key(k(KeyCode::Esc)), None);
    assert!(a.picker.is_some(), "Esc ends the question, not the picker");
    assert!(!view(&mut a).contains("enter: delete"));
    // Ctrl+Backspace does it too when the query is empty; Enter is yes.
    a.key(ctrl_code(KeyCode::Backspace));
    assert_eq!(
        a.key(k(KeyCode::Enter)),
        Some(Action::SessionEdit(SessionEdit::Delete {
            path: target.clone()
        }))
    );
    let done = delete_session(&dir, &target, Some(&current));
    assert!(
        done.as_ref().is_ok_and(|d| d.starts_with("deleted ")),
        "{done:?}"
    );
    assert!(!target.exists());
    let relisted = SessionManager::list(tmp.path(), &dir);
    if let Some(p) = a.picker.as_mut() {
        p.load(PickerData::SessionsEdited(done, relisted));
    }
    let shown = view(&mut a);
    assert!(
        shown.contains("(1/1)") && !shown.contains("older work"),
        "{shown}"
    );

    // What is refused, each left in place.
    let refused = delete_session(&dir, &current, Some(&current));
    assert!(refused.is_err_and(|e| e.contains("open now")));
    assert!(current.exists());
    let outside = tmp.path().join("outside.jsonl");
    std::fs::copy(&current, &outside).expect("copied");
    let refused = delete_session(&dir, &outside, None);
    assert!(refused.is_err_and(|e| e.contains("not in the sessions directory")));
    let link = dir.join("link.jsonl");
    std::os::unix::fs::symlink(&outside, &link).expect("linked");
    let refused = delete_session(&dir, &link, None);
    assert!(refused.is_err_and(|e| e.contains("is a link or not a regular file; left alone")));
    assert!(outside.exists() && link.exists());
    // A link to the directory elsewhere does not take the file out of it.
    let alias = tmp.path().join("alias");
    std::os::unix::fs::symlink(tmp.path(), &alias).expect("linked");
    let refused = delete_session(&dir, &alias.join("outside.jsonl"), None);
    assert!(refused.is_err_and(|e| e.contains("not in the sessions directory")));
    let notes = dir.join("notes.jsonl");
    std::fs::write(&notes, "{\"type\":\"message\"}\n").expect("written");
    let refused = delete_session(&dir, &notes, None);
    assert!(refused.is_err_and(|e| e.contains("not a session file")));
    let other = dir.join("notes.txt");
    std::fs::write(&other, "x").expect("written");
    let refused = delete_session(&dir, &other, None);
    assert!(refused.is_err_and(|e| e.contains("not a session file name")));
    assert!(notes.exists() && other.exists() && outside.exists());
}

#[test]
fn the_resume_picker_sorts_threaded_recent_and_by_relevance() {
    let info = |id: &str, name: Option<&str>, first: &str, modified: i64, parent: Option<&str>| {
        SessionInfo {
            path: PathBuf::from(format!("/s/{id}.jsonl")),
            id: id.into(),
            cwd: "/work".into(),
            created: 0,
            modified,
            name: name.map(str::to_string),
            first_message: first.into(),
            message_count: 2,
            parent_session: parent.map(|p| format!("/s/{p}.jsonl")),
        }
    };
    // Newest first, as listed; the fork is newer than its parent.
    let list = vec![
        info("fork", None, "fork of the parser work", 300, Some("base")),
        info("other", Some("docs"), "write the docs", 200, None),
        info("base", None, "parser work", 100, None),
    ];
    let mut a = app();
    a.picker = Some(Picker::sessions(list, None));
    let sort = |a: &App| a.picker.as_ref().and_then(Picker::session_sort);
    assert_eq!(sort(&a), Some(SessionSort::Threaded));
    let order = |a: &App| -> Vec<String> {
        let Some(p) = a.picker.as_ref() else {
            return Vec::new();
        };
        let s = p.selector();
        s.shown()
            .iter()
            .map(|&i| s.items()[i].label.clone())
            .collect()
    };
    // Threaded: the fork under its parent, that tree first (newest below).
    assert_eq!(
        order(&a),
        ["parser work", "fork of the parser work", "docs"]
    );
    let shown = view(&mut a);
    assert!(shown.contains("[threaded]"), "{shown}");
    assert!(
        shown.contains("     fork of the parser work"),
        "indented: {shown}"
    );
    // A query lists matches flat, best first.
    typed(&mut a, "parser");
    assert!(!view(&mut a).contains("     fork of"));
    a.key(ctrl('w'));
    // Recent: as listed; a query only filters.
    a.key(ctrl('s'));
    assert_eq!(sort(&a), Some(SessionSort::Recent));
    assert_eq!(
        order(&a),
        ["fork of the parser work", "docs", "parser work"]
    );
    typed(&mut a, "parser work");
    assert_eq!(order(&a), ["fork of the parser work", "parser work"]);
    // Relevance: best match first.
    a.key(ctrl('s'));
    assert_eq!(sort(&a), Some(SessionSort::Relevance));
    assert_eq!(order(&a), ["parser work", "fork of the parser work"]);
    a.key(ctrl('s'));
    assert_eq!(sort(&a), Some(SessionSort::Threaded));
    for _ in 0..11 {
        a.key(k(KeyCode::Backspace));
    }
    // Named only, and the files shown.
    a.key(ctrl('n'));
    assert_eq!(order(&a), ["docs"]);
    a.key(ctrl('p'));
    let shown = view(&mut a);
    assert!(shown.contains("/s/other.jsonl"), "{shown}");
    assert!(shown.contains("[named] [path]"), "{shown}");
    // Enter still resumes by id.
    assert_eq!(
        a.key(k(KeyCode::Enter)),
        Some(Action::Command("/resume other".into()))
    );
}

#[test]
fn enabled_models_are_read_typed_and_resolve_to_the_cycle() {
    use agent_ai::Model;
    use agent_tui::model_scope::{next_in_scope, resolve_scope};
    let settings =
        coding_agent::Settings::from_value(serde_json::json!({"enabledModels": ["q/*", "alpha"]}));
    let patterns = settings.known().enabled_models.clone().unwrap_or_default();
    let models = [
        Model::new("p", "alpha"),
        Model::new("p", "beta"),
        Model::new("q", "gamma"),
        Model::new("q", "delta"),
    ];
    let scope = resolve_scope(&patterns, &models);
    let ids: Vec<&str> = scope.models.iter().map(|s| s.model.id.as_str()).collect();
    assert_eq!(ids, ["gamma", "delta", "alpha"]);
    // Across providers, in the order of the patterns; beta is left out.
    let mut at = Model::new("p", "alpha");
    let mut seen = Vec::new();
    for _ in 0..4 {
        let next = next_in_scope(&scope.models, &at, true).map(|s| s.model);
        at = next.unwrap_or_else(|| Model::new("", ""));
        seen.push(at.id.clone());
    }
    assert_eq!(seen, ["gamma", "delta", "alpha", "gamma"]);
}

#[test]
fn the_edited_pickers_draw_within_any_size() {
    let mut entries = branched();
    entries.push(SessionEntry {
        id: "l1".into(),
        parent_id: Some("a3".into()),
        timestamp: "2025-01-02T03:07:00.000Z".into(),
        kind: EntryKind::Label {
            target_id: "u2".into(),
            label: Some("漢字 milestone 👨\u{200d}👩\u{200d}👧".into()),
        },
    });
    let mut tree = Picker::tree(&entries, Some("l1"));
    let keys = agent_tui::keybindings::Keybindings::default();
    tree.key(&shifted('T'), &keys);
    tree.key(&k(KeyCode::Up), &keys);
    tree.key(&ctrl_code(KeyCode::Left), &keys);
    tree.set_status(&"a long status line ".repeat(20), true);
    let mut label = Picker::tree(&entries, Some("l1"));
    label.key(&shifted('L'), &keys);
    let mut resume = Picker::sessions(Vec::new(), None);
    resume.set_status("nothing here", false);
    for picker in [&mut tree, &mut label, &mut resume] {
        for width in [1, 2, 5, 20, 40, 80, 120] {
            for height in [1, 2, 3, 6, 12] {
                let (rows, caret) = picker.view(width, height, &UiTheme::default());
                assert!(rows.len() <= height, "{width}x{height}");
                assert!(rows.iter().all(|r| agent_tui::text::line_width(r) <= width));
                assert!(caret.is_some_and(|(r, c)| r < rows.len() && c < width));
            }
        }
    }
    let rows = plain(&tree.view(80, 20, &UiTheme::plain()).0);
    assert!(rows.contains("[漢字 milestone"), "{rows}");
}
