//! Keys through the keybindings: each editor and application action, a
//! user's `keybindings.json`, history search, and property tests of undo
//! and of arbitrary key sequences.

use std::time::Instant;

use agent_ai::Message;
use agent_core::AgentEvent;
use agent_tui::UiTheme;
use agent_tui::app::{Action, App};
use agent_tui::keybindings::{KeyAction, Keybindings};
use agent_tui::text::plain;
use agent_tui::transcript::Transcript;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use proptest::prelude::*;

use crate::support::{cx, status};

fn app() -> App {
    App::new(Transcript::new(UiTheme::plain()), cx(), status())
}

fn k(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, mods)
}

fn ctrl(c: char) -> KeyEvent {
    k(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn alt(c: char) -> KeyEvent {
    k(KeyCode::Char(c), KeyModifiers::ALT)
}

fn plain_key(code: KeyCode) -> KeyEvent {
    k(code, KeyModifiers::NONE)
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        app.key(plain_key(KeyCode::Char(c)));
    }
}

#[test]
fn the_default_keys_are_pis() {
    let kb = Keybindings::default();
    let cases = [
        (KeyAction::Undo, ctrl('-')),
        // A legacy terminal sends Ctrl+- as Ctrl+_ (0x1f, read as Ctrl+7).
        (KeyAction::Undo, ctrl('7')),
        (KeyAction::Yank, ctrl('y')),
        (KeyAction::YankPop, alt('y')),
        (KeyAction::DeleteWordForward, alt('d')),
        (KeyAction::DeleteWordBackward, ctrl('w')),
        (KeyAction::DeleteToLineStart, ctrl('u')),
        (KeyAction::DeleteToLineEnd, ctrl('k')),
        (KeyAction::CursorWordLeft, alt('b')),
        (
            KeyAction::CursorWordRight,
            k(KeyCode::Right, KeyModifiers::CONTROL),
        ),
        (KeyAction::JumpForward, ctrl(']')),
        (KeyAction::JumpForward, ctrl('5')),
        (KeyAction::HistorySearch, ctrl('r')),
        (KeyAction::FollowUp, k(KeyCode::Enter, KeyModifiers::ALT)),
        (KeyAction::Dequeue, k(KeyCode::Up, KeyModifiers::ALT)),
        (KeyAction::Interrupt, plain_key(KeyCode::Esc)),
        (KeyAction::Clear, ctrl('c')),
        (KeyAction::Exit, ctrl('d')),
        (KeyAction::NewLine, k(KeyCode::Enter, KeyModifiers::SHIFT)),
        (KeyAction::ToolsExpand, ctrl('o')),
    ];
    for (action, key) in cases {
        assert!(kb.matches(action, &key), "{} {key:?}", action.id());
    }
    assert!(!kb.matches(KeyAction::Undo, &ctrl('z')));
    assert_eq!(
        KeyAction::from_id("tui.editor.yankPop"),
        Some(KeyAction::YankPop)
    );
    assert_eq!(KeyAction::from_id("yankPop"), Some(KeyAction::YankPop));
    assert!(KeyAction::all().all(|a| KeyAction::from_id(a.id()) == Some(a)));
}

#[test]
fn a_keybindings_file_replaces_defaults_the_way_pi_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keybindings.json");
    std::fs::write(
        &path,
        r#"{
          "$schema": "https://pi.dev/schemas/keybindings.schema.json",
          "tui.editor.undo": ["ctrl+z", "alt+u"],
          "app.tools.expand": [],
          "cursorLineStart": "ctrl+shift+a",
          "app.session.new": "ctrl+shift+n",
          "tui.editor.yank": 42,
          "tui.editor.yankPop": "hyper+y"
        }"#,
    )
    .unwrap();
    let kb = Keybindings::load(&path);
    // Replaced, not added to.
    assert!(kb.matches(KeyAction::Undo, &ctrl('z')));
    assert!(kb.matches(KeyAction::Undo, &alt('u')));
    assert!(!kb.matches(KeyAction::Undo, &ctrl('-')));
    // An empty list unbinds.
    assert!(!kb.matches(KeyAction::ToolsExpand, &ctrl('o')));
    // A legacy name, and Shift+letter as the capital a terminal sends.
    assert!(kb.matches(
        KeyAction::CursorLineStart,
        &k(
            KeyCode::Char('A'),
            KeyModifiers::CONTROL | KeyModifiers::SHIFT
        )
    ));
    // Bad values warn, naming the file, and keep the default.
    assert!(kb.matches(KeyAction::Yank, &ctrl('y')));
    assert!(kb.matches(KeyAction::YankPop, &alt('y')));
    let warnings = kb.warnings().join("\n");
    assert_eq!(kb.warnings().len(), 2, "{warnings}");
    assert!(warnings.contains("keybindings.json") && warnings.contains("tui.editor.yank"));
    // An unknown id (a Pi action this UI lacks) is no warning.
    assert!(!warnings.contains("app.session.new"));

    // Undo through the app with the remapped key (Ctrl+Z stays
    // app.suspend, which the app tries first, as Pi does).
    let mut a = app();
    a.keys = kb;
    typed(&mut a, "hello");
    assert_eq!(a.key(ctrl('z')), Some(Action::Suspend));
    a.key(alt('u'));
    assert_eq!(a.editor.text(), "");
}

#[test]
fn the_key_table_lists_every_action_with_its_keys() {
    let kb = Keybindings::from_json(r#"{"app.tools.expand": []}"#, "keybindings.json");
    let table = kb.table();
    assert_eq!(table.lines().count(), KeyAction::all().count());
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("ctrl+-") && l.contains("tui.editor.undo")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("(none)") && l.contains("app.tools.expand")),
        "{table}"
    );
}

#[test]
fn a_broken_or_missing_file_keeps_every_default() {
    let dir = tempfile::tempdir().unwrap();
    let missing = Keybindings::load(&dir.path().join("keybindings.json"));
    assert!(missing.warnings().is_empty());
    for text in ["{ not json", "[1, 2]"] {
        let path = dir.path().join("keybindings.json");
        std::fs::write(&path, text).unwrap();
        let kb = Keybindings::load(&path);
        assert_eq!(kb.warnings().len(), 1, "{text}");
        assert!(kb.warnings()[0].contains(&path.display().to_string()));
        assert!(kb.matches(KeyAction::Undo, &ctrl('-')));
    }
}

#[test]
fn kill_yank_undo_and_word_keys_edit_the_text() {
    let mut a = app();
    typed(&mut a, "alpha beta gamma");
    a.key(ctrl('w'));
    assert_eq!(a.editor.text(), "alpha beta ");
    a.key(alt('b'));
    a.key(alt('d'));
    assert_eq!(a.editor.text(), "alpha  ");
    a.key(ctrl('a'));
    a.key(ctrl('k'));
    assert_eq!(a.editor.text(), "");
    a.key(ctrl('y'));
    assert_eq!(a.editor.text(), "alpha  ");
    // Alt+D after a motion was a kill of its own: the ring holds three.
    a.key(alt('y'));
    assert_eq!(a.editor.text(), "beta");
    a.key(alt('y'));
    assert_eq!(a.editor.text(), "gamma");
    a.key(ctrl('-'));
    assert_eq!(a.editor.text(), "beta");
    a.key(ctrl('-'));
    assert_eq!(a.editor.text(), "alpha  ");
    a.key(ctrl('u'));
    assert_eq!(a.editor.text(), "");
    a.key(ctrl('y'));
    assert_eq!(a.editor.text(), "alpha  ");
    // Ctrl+] then a character jumps to it.
    a.key(ctrl('a'));
    a.key(ctrl(']'));
    typed(&mut a, "h");
    assert_eq!(a.editor.cursor(), 3);
    // Ctrl+D deletes forward when there is text.
    a.key(ctrl('d'));
    assert_eq!(a.editor.text(), "alpa  ");
}

#[test]
fn up_keeps_a_draft_and_ctrl_r_searches_history_in_the_live_region() {
    let mut a = app();
    for p in ["cargo build", "git status", "cargo test"] {
        typed(&mut a, p);
        assert!(matches!(
            a.key(plain_key(KeyCode::Enter)),
            Some(Action::Prompt(_))
        ));
    }
    a.key(plain_key(KeyCode::Up));
    assert_eq!(a.editor.text(), "cargo test");
    a.key(plain_key(KeyCode::Up));
    assert_eq!(a.editor.text(), "git status");
    a.key(plain_key(KeyCode::Down));
    a.key(plain_key(KeyCode::Down));
    assert_eq!(a.editor.text(), "");
    a.key(ctrl('r'));
    typed(&mut a, "carg");
    let (rows, caret) = a.compose(60, 20, Instant::now(), None);
    let shown = plain(&rows);
    assert!(shown.contains("(reverse-i-search) carg"), "{shown}");
    assert!(shown.contains("> cargo test"), "{shown}");
    // The caret sits on the editor row, at the match.
    let editor_row = shown.lines().position(|l| l.starts_with("> cargo test"));
    assert_eq!(caret.map(|c| c.0), editor_row);
    a.key(ctrl('r'));
    assert_eq!(a.editor.text(), "cargo build");
    // Enter takes the entry into the editor; the next Enter sends it.
    assert_eq!(a.key(plain_key(KeyCode::Enter)), None);
    assert_eq!(
        a.key(plain_key(KeyCode::Enter)),
        Some(Action::Prompt("cargo build".into()))
    );
    // Esc leaves the editor as it was.
    typed(&mut a, "draft");
    a.key(ctrl('r'));
    typed(&mut a, "git");
    assert_eq!(a.editor.text(), "git status");
    a.key(plain_key(KeyCode::Esc));
    assert_eq!(a.editor.text(), "draft");
    assert!(!plain(&a.compose(60, 20, Instant::now(), None).0).contains("reverse-i-search"));
}

#[test]
fn enter_steers_alt_enter_queues_and_esc_gives_them_back() {
    use crossterm::event::{KeyCode, KeyModifiers};
    let mut app = app();
    crate::support::typed(&mut app, "first prompt");
    assert_eq!(
        crate::support::press(&mut app, KeyCode::Enter),
        Some(Action::Prompt("first prompt".into()))
    );
    app.run_started(Instant::now());
    crate::support::typed(&mut app, "steer me");
    assert_eq!(
        crate::support::press(&mut app, KeyCode::Enter),
        Some(Action::Steer("steer me".into()))
    );
    crate::support::typed(&mut app, "later");
    assert_eq!(
        app.key(crate::support::key(KeyCode::Enter, KeyModifiers::ALT)),
        Some(Action::FollowUp("later".into()))
    );
    let shown = plain(&app.compose(60, 30, Instant::now(), None).0);
    assert!(
        shown.contains("Steering: steer me") && shown.contains("Follow-up: later"),
        "{shown}"
    );
    assert!(shown.contains("esc to interrupt"), "{shown}");
    // Alt+Up takes the queue back into the editor; queue it again.
    assert_eq!(
        app.key(crate::support::key(KeyCode::Up, KeyModifiers::ALT)),
        Some(Action::TakeBackQueued)
    );
    assert_eq!(app.editor.text(), "steer me\nlater");
    assert!(app.queued.is_empty());
    app.editor.clear();
    crate::support::typed(&mut app, "steer me");
    assert_eq!(
        crate::support::press(&mut app, KeyCode::Enter),
        Some(Action::Steer("steer me".into()))
    );
    crate::support::typed(&mut app, "later");
    app.key(crate::support::key(KeyCode::Enter, KeyModifiers::ALT));
    // The steering message was delivered: no longer queued.
    app.agent_event(&AgentEvent::MessageStart {
        message: Message::user("steer me"),
    });
    assert_eq!(
        crate::support::press(&mut app, KeyCode::Esc),
        Some(Action::Interrupt)
    );
    app.run_ended();
    assert_eq!(app.editor.text(), "later");
    let shown = plain(&app.compose(60, 30, Instant::now(), None).0);
    assert!(
        !shown.contains("Follow-up") && !shown.contains("esc to interrupt"),
        "{shown}"
    );
}

#[test]
fn ctrl_c_clears_then_interrupts_then_exits_twice() {
    use crossterm::event::{KeyCode, KeyModifiers};
    let ctrl_c = crate::support::key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let mut app = app();
    crate::support::typed(&mut app, "some text");
    assert_eq!(app.key(ctrl_c), None);
    assert!(app.editor.is_empty());
    app.run_started(Instant::now());
    assert_eq!(app.key(ctrl_c), Some(Action::Interrupt));
    app.run_ended();
    assert_eq!(
        app.key(ctrl_c),
        None,
        "the first one on an idle, empty editor arms"
    );
    crate::support::typed(&mut app, "a");
    crate::support::press(&mut app, KeyCode::Backspace);
    assert_eq!(app.key(ctrl_c), None, "another key disarms");
    assert_eq!(app.key(ctrl_c), Some(Action::Exit));
    // Shift+Enter and Alt+Enter (idle) are new lines; /commands go out whole.
    crate::support::typed(&mut app, "a");
    app.key(crate::support::key(KeyCode::Enter, KeyModifiers::SHIFT));
    app.key(crate::support::key(KeyCode::Enter, KeyModifiers::ALT));
    crate::support::typed(&mut app, "b");
    assert_eq!(app.editor.text(), "a\n\nb");
    app.editor.clear();
    crate::support::typed(&mut app, "/tree");
    assert_eq!(
        crate::support::press(&mut app, KeyCode::Enter),
        Some(Action::Command("/tree".into()))
    );
    crate::support::typed(&mut app, "/exit");
    assert_eq!(
        crate::support::press(&mut app, KeyCode::Enter),
        Some(Action::Exit)
    );
}

/// Keys a person might press, printable or not.
fn any_key() -> impl Strategy<Value = KeyEvent> {
    let codes = prop_oneof![
        any::<char>().prop_map(KeyCode::Char),
        proptest::sample::select(vec![
            'a', ' ', '/', '@', '.', '漢', '\u{301}', 'y', 'w', 'r', '-', ']'
        ])
        .prop_map(KeyCode::Char),
        proptest::sample::select(vec![
            KeyCode::Enter,
            KeyCode::Tab,
            KeyCode::BackTab,
            KeyCode::Backspace,
            KeyCode::Delete,
            KeyCode::Left,
            KeyCode::Right,
            KeyCode::Up,
            KeyCode::Down,
            KeyCode::Home,
            KeyCode::End,
            KeyCode::PageUp,
            KeyCode::PageDown,
        ]),
    ];
    let mods = proptest::sample::select(vec![
        KeyModifiers::NONE,
        KeyModifiers::CONTROL,
        KeyModifiers::ALT,
        KeyModifiers::SHIFT,
        KeyModifiers::CONTROL | KeyModifiers::ALT,
    ]);
    (codes, mods).prop_map(|(c, m)| KeyEvent::new(c, m))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn any_key_sequence_never_panics_and_keeps_the_caret_valid(
        keys in proptest::collection::vec(any_key(), 0..80),
        width in 1usize..50,
    ) {
        let mut a = app();
        a.editor.set_history(["first prompt", "second"]);
        for key in keys {
            let _ = a.key(key);
            let text = a.editor.text();
            prop_assert!(text.is_char_boundary(a.editor.cursor()));
            prop_assert!(a.editor.cursor() <= text.len());
        }
        let (rows, caret) = a.compose(width, 12, Instant::now(), None);
        prop_assert!(rows.len() <= 12);
        if let Some((r, c)) = caret {
            prop_assert!(r < rows.len() && c < width.max(1));
        }
    }

    #[test]
    fn undo_walks_back_through_every_state(
        edits in proptest::collection::vec(0u8..6, 1..30),
        words in proptest::collection::vec("[a-z漢 ]{1,6}", 1..30),
    ) {
        let mut e = agent_tui::editor::Editor::new();
        let mut seen = vec![String::new()];
        for (op, word) in edits.iter().zip(words.iter().cycle()) {
            match op {
                0 => e.paste(word),
                1 => e.delete_word_back(),
                2 => e.delete_to_line_start(),
                3 => e.yank(),
                4 => { e.word_left(); e.delete_word_forward(); }
                _ => e.set_text(word),
            }
            seen.push(e.text().to_string());
        }
        // Undo only ever gives back texts the editor held, newest first,
        // and ends at the empty start.
        let mut last_index = seen.len();
        while e.undo() {
            let at = seen[..last_index].iter().rposition(|t| t == e.text());
            prop_assert!(at.is_some(), "undo gave {:?}, never held", e.text());
            last_index = at.unwrap_or(0);
        }
        prop_assert_eq!(e.text(), "");
    }
}

#[test]
fn bang_lines_become_shell_commands_only_when_idle() {
    let mut a = app();
    typed(&mut a, "!ls -l");
    assert_eq!(
        a.key(plain_key(KeyCode::Enter)),
        Some(Action::Bash {
            command: "ls -l".into(),
            exclude: false
        })
    );
    typed(&mut a, "!!git status");
    assert_eq!(
        a.key(plain_key(KeyCode::Enter)),
        Some(Action::Bash {
            command: "git status".into(),
            exclude: true
        })
    );
    // Up brings the command back from history.
    a.key(plain_key(KeyCode::Up));
    assert_eq!(a.editor.text(), "!!git status");
    a.editor.clear();
    a.run_started(Instant::now());
    typed(&mut a, "!make");
    assert_eq!(a.key(plain_key(KeyCode::Enter)), None);
    assert_eq!(a.editor.text(), "!make", "kept for when the run ends");
    // A bare `!` is a prompt like any other text.
    a.run_ended();
    a.editor.clear();
    typed(&mut a, "!");
    assert_eq!(
        a.key(plain_key(KeyCode::Enter)),
        Some(Action::Prompt("!".into()))
    );
}
