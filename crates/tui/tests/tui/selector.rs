//! The fuzzy selector and the pickers built on it: filtering, highlight,
//! keys, wide labels at three widths, an empty list, a 10,000-item list;
//! the model selector, resume picker, session tree, settings and themes
//! as the app drives them (a choice is the command a user would type).

use std::path::PathBuf;
use std::time::Instant;

use agent_ai::Model;
use agent_sessions::{EntryKind, SessionEntry, SessionInfo};
use agent_tool::StyledLine;
use agent_tui::UiTheme;
use agent_tui::app::{Action, App};
use agent_tui::keybindings::Keybindings;
use agent_tui::pickers::{Picker, PickerData, PickerKind, TreeFilter, picker_command};
use agent_tui::selector::{Selector, SelectorItem, SelectorKey};
use agent_tui::text::{line_width, plain};
use agent_tui::transcript::Transcript;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::support::{CJK, COMBINING, FAMILY, cx, framed, snapshot, status};

#[path = "selector_edits.rs"]
mod edits;

fn k(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn type_into(s: &mut Selector, text: &str) {
    let keys = Keybindings::default();
    for c in text.chars() {
        assert_eq!(s.key(&k(KeyCode::Char(c)), &keys), SelectorKey::Handled);
    }
}

fn models() -> Selector {
    let items = [
        ("openai/gpt-5", "GPT-5"),
        ("openai/gpt-5-mini", "GPT-5 mini"),
        ("anthropic/claude-opus-4-5", "Claude Opus 4.5"),
        ("anthropic/claude-sonnet-4-5", "Claude Sonnet 4.5"),
        ("google/gemini-2.5-pro", "Gemini 2.5 Pro"),
    ]
    .map(|(l, d)| SelectorItem::new(l).detail(d));
    Selector::new("Select a model", items.to_vec())
}

fn labels(s: &Selector) -> Vec<String> {
    s.shown()
        .iter()
        .map(|&i| s.items()[i].label.clone())
        .collect()
}

#[test]
fn typing_filters_fuzzily_and_best_first() {
    let mut s = models();
    assert_eq!(s.matches(), 5);
    type_into(&mut s, "son");
    assert_eq!(labels(&s), ["anthropic/claude-sonnet-4-5"]);
    // Backspace widens again; the best match is highlighted.
    let keys = Keybindings::default();
    s.key(&k(KeyCode::Backspace), &keys);
    s.key(&k(KeyCode::Backspace), &keys);
    assert!(s.matches() >= 2, "{:?}", labels(&s));
    s.set_query("gpt5m");
    assert_eq!(labels(&s)[0], "openai/gpt-5-mini");
    assert_eq!(s.selected_item(), Some(1));
    // The detail is searched when the label does not match, ranked after.
    s.set_query("Sonnet 4.5");
    assert_eq!(labels(&s), ["anthropic/claude-sonnet-4-5"]);
    // Ctrl+W drops the last word of the query.
    s.set_query("claude opus");
    s.key(&ctrl('w'), &keys);
    assert_eq!(s.query(), "claude ");
    s.set_query("zzz");
    assert_eq!(s.matches(), 0);
}

#[test]
fn matched_characters_are_highlighted() {
    let theme = UiTheme::default();
    let mut s = models();
    type_into(&mut s, "gem");
    let (rows, _) = s.view(80, 20, &theme);
    let row = rows
        .iter()
        .find(|r| r.to_plain().contains("google/gemini"))
        .expect("the match is shown");
    let hit = theme.tools.accent.bold().underline();
    let lit: String = row
        .spans
        .iter()
        .filter(|sp| sp.style == hit)
        .map(|sp| sp.text.as_str())
        .collect();
    // `g` of google, then `e` and `m` of gemini: the first place of each.
    assert_eq!(lit, "gem");
    let first = row
        .spans
        .iter()
        .position(|sp| sp.style == hit)
        .expect("a highlighted span");
    assert_eq!(row.spans[first].text, "g");
    // Without a query nothing is lit.
    s.set_query("");
    let (rows, _) = s.view(80, 20, &theme);
    assert!(
        rows.iter()
            .all(|r| r.spans.iter().all(|sp| sp.style != hit))
    );
}

#[test]
fn the_select_keys_move_wrap_page_confirm_and_cancel() {
    let keys = Keybindings::default();
    let items: Vec<SelectorItem> = (0..30)
        .map(|i| SelectorItem::new(format!("item {i:02}")))
        .collect();
    let mut s = Selector::new("Items", items);
    s.set_max_visible(5);
    let _ = s.view(40, 20, &UiTheme::plain());
    assert_eq!(s.selected_item(), Some(0));
    s.key(&k(KeyCode::Up), &keys);
    assert_eq!(s.selected_item(), Some(29), "up from the top wraps");
    s.key(&k(KeyCode::Down), &keys);
    assert_eq!(s.selected_item(), Some(0), "down from the bottom wraps");
    s.key(&k(KeyCode::PageDown), &keys);
    assert_eq!(s.selected_item(), Some(5), "a page is the rows in view");
    s.key(&k(KeyCode::PageUp), &keys);
    s.key(&k(KeyCode::PageUp), &keys);
    assert_eq!(s.selected_item(), Some(0), "pages stop at the ends");
    s.key(&k(KeyCode::Down), &keys);
    assert_eq!(s.key(&k(KeyCode::Enter), &keys), SelectorKey::Confirm(1));
    assert_eq!(s.key(&k(KeyCode::Esc), &keys), SelectorKey::Cancel);
    assert_eq!(s.key(&ctrl('c'), &keys), SelectorKey::Cancel);
    assert_eq!(s.key(&ctrl('t'), &keys), SelectorKey::Unhandled);
    // Remapped keys are read through the bindings.
    let vi = Keybindings::from_json(
        r#"{"tui.select.down": "ctrl+n", "tui.select.up": "ctrl+k"}"#,
        "keybindings.json",
    );
    s.key(&ctrl('n'), &vi);
    assert_eq!(s.selected_item(), Some(2));
    s.key(&ctrl('k'), &vi);
    assert_eq!(s.selected_item(), Some(1));
    // Down is no longer bound to a move: it is not typed either.
    assert_eq!(s.key(&k(KeyCode::Down), &vi), SelectorKey::Unhandled);
}

#[test]
fn wide_labels_at_three_widths() {
    let items = vec![
        SelectorItem::new(format!("{CJK} label"))
            .detail("漢字 detail")
            .hint("1.0M ctx")
            .marked(true),
        SelectorItem::new(format!("{FAMILY} family {FAMILY}"))
            .detail(format!("{COMBINING} detail"))
            .hint("200k ctx"),
        SelectorItem::new(COMBINING).detail("plain").indent(1),
        SelectorItem::new("a very long ascii label that will not fit in a narrow column at all")
            .detail("d")
            .hint("h")
            .indent(2),
    ];
    for width in [20, 40, 80] {
        let mut s = Selector::new("選択 Select", items.clone());
        s.push_query("");
        s.key(&k(KeyCode::Down), &Keybindings::default());
        let (rows, caret) = s.view(width, 12, &UiTheme::plain());
        let caret = caret.expect("the query row has the caret");
        assert!(caret.1 < width);
        let text = format!(
            "selector ({width} columns, caret at {caret:?}):\n{}\n",
            framed(&rows, width)
        );
        snapshot(&format!("selector_{width}"), &text);
        // With a query typed the match is still drawn within the width.
        s.set_query("漢");
        let (rows, _) = s.view(width, 12, &UiTheme::default());
        assert!(rows.iter().all(|r| line_width(r) <= width));
        assert!(plain(&rows).contains('漢'));
    }
}

#[test]
fn an_empty_list_says_so_and_enter_chooses_nothing() {
    let keys = Keybindings::default();
    let mut s = Selector::new("Nothing", Vec::new());
    s.set_empty_text("no sessions to resume in this directory");
    let (rows, _) = s.view(60, 10, &UiTheme::plain());
    let shown = plain(&rows);
    assert!(shown.contains("(0/0)"), "{shown}");
    assert!(shown.contains("no sessions to resume"), "{shown}");
    assert_eq!(s.key(&k(KeyCode::Enter), &keys), SelectorKey::Handled);
    assert_eq!(s.key(&k(KeyCode::Down), &keys), SelectorKey::Handled);
    assert_eq!(s.selected_item(), None);
    // Loading first, then the list.
    s.set_loading(true);
    assert!(plain(&s.view(60, 10, &UiTheme::plain()).0).contains("loading..."));
    s.set_loading(false);
    s.set_items(vec![SelectorItem::new("one")]);
    assert_eq!(s.key(&k(KeyCode::Enter), &keys), SelectorKey::Confirm(0));
    // A query that matches nothing.
    s.set_query("xyz");
    assert!(plain(&s.view(60, 10, &UiTheme::plain()).0).contains("no matches"));
}

#[test]
fn ten_thousand_items_draw_only_the_rows_in_view() {
    let keys = Keybindings::default();
    let items: Vec<SelectorItem> = (0..10_000)
        .map(|i| SelectorItem::new(format!("session {i:05}")).hint(format!("{i} messages")))
        .collect();
    let mut s = Selector::new("Resume", items);
    let (rows, _) = s.view(80, 15, &UiTheme::plain());
    assert!(rows.len() <= 15);
    let item_rows = rows
        .iter()
        .filter(|r| r.to_plain().contains("session "))
        .count();
    assert_eq!(item_rows, agent_tui::selector::DEFAULT_VISIBLE);
    // The last item, by wrapping up: the window follows it.
    s.key(&k(KeyCode::Up), &keys);
    let (rows, _) = s.view(80, 15, &UiTheme::plain());
    let shown = plain(&rows);
    assert!(shown.contains(">  session 09999"), "{shown}");
    assert!(!shown.contains("session 00000"), "{shown}");
    // A query narrows all 10,000.
    s.set_query("09999");
    assert!(s.matches() < 10_000);
    assert_eq!(s.selected_item(), Some(9_999), "the exact match first");
    s.set_query("session 04242");
    assert_eq!(s.selected_item(), Some(4242));
    // Paging through the whole list stops at its end.
    s.set_query("");
    for _ in 0..2_000 {
        s.key(&k(KeyCode::PageDown), &keys);
    }
    assert_eq!(s.selected_item(), Some(9_999));
    let (rows, _) = s.view(80, 6, &UiTheme::plain());
    assert!(rows.len() <= 6);
}

#[test]
fn a_tiny_screen_keeps_the_query_and_an_item() {
    let mut s = models();
    for height in 1..6 {
        let (rows, caret) = s.view(20, height, &UiTheme::plain());
        assert!(rows.len() <= height, "{height}: {}", plain(&rows));
        if height >= 2 {
            let shown = plain(&rows);
            assert!(shown.contains("search:"), "{shown}");
            assert!(shown.contains("openai/gpt"), "{shown}");
            assert!(caret.is_some_and(|(r, _)| r < rows.len()));
        }
    }
}

// The pickers, through the app.

fn app() -> App {
    App::new(Transcript::new(UiTheme::plain()), cx(), status())
}

fn press(a: &mut App, key: KeyEvent) -> Option<Action> {
    a.key(key)
}

fn typed(a: &mut App, text: &str) {
    for c in text.chars() {
        a.key(k(KeyCode::Char(c)));
    }
}

fn model(provider: &str, id: &str, name: &str) -> Model {
    let mut m = Model::new(provider, id);
    m.name = name.into();
    m
}

#[test]
fn the_app_keys_open_and_cycle() {
    let mut a = app();
    assert_eq!(
        press(&mut a, ctrl('l')),
        Some(Action::OpenPicker(PickerKind::Model))
    );
    assert_eq!(
        press(&mut a, ctrl('p')),
        Some(Action::CycleModel { forward: true })
    );
    assert_eq!(
        press(
            &mut a,
            KeyEvent::new(
                KeyCode::Char('p'),
                KeyModifiers::CONTROL | KeyModifiers::SHIFT
            )
        ),
        Some(Action::CycleModel { forward: false })
    );
    assert_eq!(
        press(&mut a, KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT)),
        Some(Action::CycleThinking)
    );
    // Resume and tree have no key by default, as in Pi; a file binds them.
    a.keys = Keybindings::from_json(
        r#"{"app.session.resume": "ctrl+shift+r", "app.session.tree": "alt+t"}"#,
        "keybindings.json",
    );
    assert!(a.keys.warnings().is_empty(), "{:?}", a.keys.warnings());
    assert_eq!(
        press(
            &mut a,
            KeyEvent::new(
                KeyCode::Char('R'),
                KeyModifiers::CONTROL | KeyModifiers::SHIFT
            )
        ),
        Some(Action::OpenPicker(PickerKind::Resume))
    );
    assert_eq!(
        press(&mut a, KeyEvent::new(KeyCode::Char('t'), KeyModifiers::ALT)),
        Some(Action::OpenPicker(PickerKind::Tree))
    );
    assert_eq!(picker_command("/model"), Some(PickerKind::Model));
    assert_eq!(picker_command("/resume"), Some(PickerKind::Resume));
    assert_eq!(picker_command("/tree"), Some(PickerKind::Tree));
    assert_eq!(picker_command("/settings"), Some(PickerKind::Settings));
    assert_eq!(picker_command("/theme"), Some(PickerKind::Theme));
    assert_eq!(picker_command("/resume abc"), None);
    assert_eq!(picker_command("/settings theme"), None);
}

#[test]
fn the_model_selector_replaces_the_editor_and_enter_switches() {
    let mut a = app();
    a.editor.insert("draft kept");
    let models = [
        model("p", "alpha", "Alpha"),
        model("p", "beta-large", "Beta Large"),
        model("q", "gamma", "Gamma"),
    ];
    a.picker = Some(Picker::models(&models, &Model::new("p", "alpha")));
    let (live, caret) = a.compose(60, 24, Instant::now(), None);
    let shown = plain(&live);
    assert!(shown.contains("Select a model  (3/3)"), "{shown}");
    assert!(shown.contains(">* p/alpha"), "the current one: {shown}");
    assert!(
        !shown.contains("draft kept"),
        "the editor is replaced: {shown}"
    );
    assert!(
        shown.contains("scripted/model"),
        "the footer stays: {shown}"
    );
    assert!(caret.is_some());
    // Typing goes to the query, never to the editor.
    typed(&mut a, "blg");
    let (live, _) = a.compose(60, 24, Instant::now(), None);
    let shown = plain(&live);
    assert!(
        shown.contains("(1/3)") && shown.contains("p/beta-large"),
        "{shown}"
    );
    a.paste("x\n");
    assert_eq!(
        a.picker.as_ref().map(|p| p.selector().query()),
        Some("blgx ")
    );
    press(&mut a, k(KeyCode::Backspace));
    press(&mut a, k(KeyCode::Backspace));
    assert_eq!(
        press(&mut a, k(KeyCode::Enter)),
        Some(Action::Command("/model p/beta-large".into()))
    );
    assert!(a.picker.is_none());
    assert_eq!(a.editor.text(), "draft kept");
    // Esc closes without a command.
    a.picker = Some(Picker::models(&models, &Model::new("p", "alpha")));
    assert_eq!(press(&mut a, k(KeyCode::Esc)), None);
    assert!(a.picker.is_none());
    // The current model is listed even when the list lacks it.
    let p = Picker::models(&models, &Model::new("z", "other"));
    assert_eq!(p.selector().items().len(), 4);
    assert_eq!(p.selected_value(), Some("z/other"));
}

#[test]
fn the_model_selector_draws_in_fullscreen_too() {
    let mut a = app();
    let models = [model("p", "alpha", "Alpha"), model("p", "beta", "Beta")];
    a.picker = Some(Picker::models(&models, &Model::new("p", "beta")));
    let mut view = agent_tui::fullscreen::FullscreenView::new(50, 20);
    let (rows, caret) = view.compose(&mut a, Instant::now());
    assert!(rows.len() <= 20);
    let shown = plain(&rows);
    assert!(shown.contains(">* p/beta"), "{shown}");
    assert!(caret.is_some());
}

fn info(id: &str, name: Option<&str>, first: &str, count: usize, modified: i64) -> SessionInfo {
    SessionInfo {
        path: PathBuf::from(format!("/s/{id}.jsonl")),
        id: id.into(),
        cwd: "/work".into(),
        created: modified,
        modified,
        name: name.map(str::to_string),
        first_message: first.into(),
        message_count: count,
        parent_session: None,
    }
}

#[test]
fn the_resume_picker_loads_then_resumes_by_id() {
    let mut a = app();
    a.picker = Some(Picker::loading(PickerKind::Resume, Some("bbbb2222".into())));
    let (live, _) = a.compose(80, 24, Instant::now(), None);
    assert!(plain(&live).contains("loading..."));
    let list = vec![
        info(
            "bbbb2222",
            None,
            "fix the parser\nsecond line",
            12,
            1_700_000_100_000,
        ),
        info(
            "aaaa1111",
            Some("refactor 漢字"),
            "ignored",
            1,
            1_700_000_000_000,
        ),
    ];
    let warnings = a
        .picker
        .as_mut()
        .map(|p| p.load(PickerData::Sessions(list)))
        .unwrap_or_default();
    assert!(warnings.is_empty());
    let (live, _) = a.compose(80, 24, Instant::now(), None);
    let shown = plain(&live);
    assert!(shown.contains(">* fix the parser"), "{shown}");
    assert!(shown.contains("12 messages"), "{shown}");
    assert!(shown.contains("refactor 漢字"), "{shown}");
    assert!(shown.contains("1 message"), "{shown}");
    assert!(shown.contains("2023-11-14 22:15"), "{shown}");
    assert!(!shown.contains("second line"), "{shown}");
    typed(&mut a, "refac");
    assert_eq!(
        press(&mut a, k(KeyCode::Enter)),
        Some(Action::Command("/resume aaaa1111".into()))
    );
}

fn entry(id: &str, parent: Option<&str>, message: serde_json::Value) -> SessionEntry {
    SessionEntry {
        id: id.into(),
        parent_id: parent.map(str::to_string),
        timestamp: "2025-01-02T03:04:05.678Z".into(),
        kind: EntryKind::message_from_value(message),
    }
}

fn user(text: &str) -> serde_json::Value {
    serde_json::json!({"role": "user", "content": text, "timestamp": 0})
}

fn answer(text: &str) -> serde_json::Value {
    serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": text}],
        "api": "x", "provider": "p", "model": "m", "stopReason": "stop", "timestamp": 0,
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}})
}

fn tree_entries() -> Vec<SessionEntry> {
    let calls = serde_json::json!({"role": "assistant", "content": [
        {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "a.rs"}}],
        "stopReason": "toolUse", "timestamp": 0});
    let result = serde_json::json!({"role": "toolResult", "toolCallId": "t1", "toolName": "read",
        "content": [{"type": "text", "text": "fn main() {}"}], "isError": false, "timestamp": 0});
    vec![
        entry("u1", None, user("read a.rs")),
        entry("a1", Some("u1"), calls),
        entry("r1", Some("a1"), result),
        entry("a2", Some("r1"), answer("it is empty")),
        entry("u2", Some("a2"), user("first branch")),
        entry("u3", Some("a2"), user("second branch")),
        SessionEntry {
            id: "m1".into(),
            parent_id: Some("u3".into()),
            timestamp: "2025-01-02T03:05:00.000Z".into(),
            kind: EntryKind::ModelChange {
                provider: "p".into(),
                model_id: "m".into(),
            },
        },
        entry("a3", Some("m1"), answer("on the second")),
    ]
}

#[test]
fn the_session_tree_indents_branches_filters_and_forks() {
    let mut a = app();
    a.picker = Some(Picker::tree(&tree_entries(), Some("a3")));
    let view = |a: &mut App| plain(&a.compose(80, 30, Instant::now(), None).0);
    let shown = view(&mut a);
    // A straight run stays at one level; each branch is indented once;
    // the active path is marked and the leaf highlighted.
    assert!(shown.contains(" * user: read a.rs"), "{shown}");
    assert!(
        shown.contains(" * toolResult: read: fn main() {}"),
        "{shown}"
    );
    assert!(shown.contains(" * assistant: it is empty"), "{shown}");
    assert!(shown.contains("     user: first branch"), "{shown}");
    assert!(shown.contains(" *   user: second branch"), "{shown}");
    assert!(shown.contains(">*   assistant: on the second"), "{shown}");
    assert!(shown.contains("leaf 03:04"), "{shown}");
    // Bookkeeping and answers that only call tools are not shown by default.
    assert!(!shown.contains("model p/m"), "{shown}");
    assert!(!shown.contains("[read]"), "{shown}");
    assert!(shown.contains("[default]"), "{shown}");
    let picker = |a: &App| a.picker.as_ref().map(Picker::tree_filter);

    press(&mut a, ctrl('t'));
    assert_eq!(picker(&a), Some(Some(TreeFilter::NoTools)));
    let shown = view(&mut a);
    assert!(!shown.contains("toolResult"), "{shown}");
    assert!(shown.contains("[no tools]"), "{shown}");
    // The leaf stays highlighted across filters.
    assert!(shown.contains(">*   assistant: on the second"), "{shown}");

    press(&mut a, ctrl('u'));
    assert_eq!(picker(&a), Some(Some(TreeFilter::UserOnly)));
    let shown = view(&mut a);
    assert!(!shown.contains("assistant"), "{shown}");
    assert!(shown.contains("user: first branch"), "{shown}");
    // The nearest shown entry above the leaf is highlighted.
    assert!(shown.contains(">*   user: second branch"), "{shown}");
    press(&mut a, ctrl('u'));
    assert_eq!(picker(&a), Some(Some(TreeFilter::Default)));
    press(&mut a, ctrl('t'));
    press(&mut a, ctrl('d'));
    assert_eq!(picker(&a), Some(Some(TreeFilter::Default)));
    assert!(a.picker.is_some(), "ctrl+d in the tree is no exit");

    // Filtering by text, then Enter forks at that entry as `/fork` does.
    typed(&mut a, "first");
    assert_eq!(
        press(&mut a, k(KeyCode::Enter)),
        Some(Action::Command("/fork u2".into()))
    );
    // The entry id is searchable too.
    a.picker = Some(Picker::tree(&tree_entries(), Some("a3")));
    typed(&mut a, "u1");
    assert_eq!(
        press(&mut a, k(KeyCode::Enter)),
        Some(Action::Command("/fork u1".into()))
    );
    // An empty session.
    let mut empty = Picker::tree(&[], None);
    assert!(plain(&empty.view(60, 10, &UiTheme::plain()).0).contains("no entries yet"));
}

#[test]
fn settings_are_listed_and_a_value_is_written_through_the_command() {
    let mut a = app();
    let effective =
        serde_json::json!({"defaultThinkingLevel": "high", "compaction": {"enabled": true}});
    let effective = effective.as_object().cloned().unwrap_or_default();
    a.picker = Some(Picker::settings(&effective));
    let shown = plain(&a.compose(80, 24, Instant::now(), None).0);
    assert!(shown.contains("defaultThinkingLevel  \"high\""), "{shown}");
    assert!(
        shown.contains("compaction            {\"enabled\":true}"),
        "{shown}"
    );
    assert!(shown.contains("theme                 (not set)"), "{shown}");
    assert!(shown.contains("enter: change it"), "{shown}");
    typed(&mut a, "thinking");
    assert_eq!(press(&mut a, k(KeyCode::Enter)), None);
    assert_eq!(
        a.picker.as_ref().and_then(Picker::editing),
        Some(("defaultThinkingLevel", "\"high\""))
    );
    let (live, caret) = a.compose(80, 24, Instant::now(), None);
    let shown = plain(&live);
    assert!(shown.contains("Set defaultThinkingLevel"), "{shown}");
    assert!(shown.contains("value: \"high\""), "{shown}");
    assert!(caret.is_some());
    // Ctrl+U clears the value; typed text and a paste make the new one.
    press(&mut a, ctrl('u'));
    typed(&mut a, "\"lo");
    a.paste("w\"");
    assert_eq!(
        press(&mut a, k(KeyCode::Enter)),
        Some(Action::Command(
            "/settings defaultThinkingLevel \"low\"".into()
        ))
    );
    assert!(a.picker.is_none());
    // Esc in the editor goes back to the list; Esc there closes it.
    a.picker = Some(Picker::settings(&effective));
    press(&mut a, k(KeyCode::Enter));
    assert!(a.picker.as_ref().and_then(Picker::editing).is_some());
    press(&mut a, k(KeyCode::Esc));
    assert!(a.picker.as_ref().is_some_and(|p| p.editing().is_none()));
    press(&mut a, k(KeyCode::Esc));
    assert!(a.picker.is_none());
    // An empty value writes nothing.
    a.picker = Some(Picker::settings(&effective));
    typed(&mut a, "theme");
    press(&mut a, k(KeyCode::Enter));
    assert_eq!(press(&mut a, k(KeyCode::Enter)), None);
    assert!(a.picker.is_some());
}

#[test]
fn the_theme_selector_lists_builtins_and_files_and_applies_one() {
    let mut a = app();
    a.picker = Some(Picker::loading(PickerKind::Theme, Some("light".into())));
    let files = vec![
        ("sunset".to_string(), "light".to_string()),
        ("dark".to_string(), String::new()),
    ];
    if let Some(p) = a.picker.as_mut() {
        let warnings = p.load(PickerData::Themes(files, vec!["bad.json: broken".into()]));
        assert_eq!(warnings, ["bad.json: broken"], "for the UI to show");
    }
    let shown = plain(&a.compose(80, 24, Instant::now(), None).0);
    assert!(
        shown.contains("(4/4)"),
        "a file named like a built-in once: {shown}"
    );
    assert!(shown.contains(">* light"), "{shown}");
    assert!(shown.contains("sunset  theme file, light"), "{shown}");
    typed(&mut a, "suns");
    assert_eq!(
        press(&mut a, k(KeyCode::Enter)),
        Some(Action::Theme("sunset".into()))
    );
    let p = Picker::themes(Vec::new(), None);
    assert_eq!(p.selected_value(), Some("system"));
}

#[test]
fn a_new_theme_redraws_what_is_not_in_the_scrollback() {
    let mut a = app();
    let mut md = agent_tui::markdown::MarkdownStream::new();
    md.set("# A heading", &UiTheme::plain());
    a.transcript
        .push(agent_tui::cell::CellKind::Assistant(md), true);
    a.transcript.notice("an error notice", true);
    let (before, _) = a.compose(40, 10, Instant::now(), None);
    let styled = |rows: &[StyledLine]| {
        rows.iter()
            .flat_map(|r| r.spans.iter())
            .any(|s| s.text.contains("an error notice") && s.style != anstyle::Style::new())
    };
    assert!(!styled(&before));
    a.set_theme(UiTheme::default());
    let (after, _) = a.compose(40, 10, Instant::now(), None);
    assert!(
        styled(&after),
        "the notice is drawn in the new theme's colours"
    );
    // The answer's Markdown is parsed again, with the new heading style.
    let heading = after
        .iter()
        .flat_map(|r| r.spans.iter())
        .find(|s| s.text.contains("A heading"))
        .map(|s| s.style);
    assert_eq!(heading, Some(UiTheme::default().heading));
    assert_eq!(a.cx.theme, UiTheme::default());
}
