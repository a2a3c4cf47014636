//! The completion menu: `/commands`, `@files` from the background walk
//! (fuzzy, ignore rules kept), paths on Tab, and its keys.

use std::path::Path;
use std::time::{Duration, Instant};

use agent_tui::UiTheme;
use agent_tui::app::{Action, App};
use agent_tui::cell::CellContext;
use agent_tui::completion::{CommandHint, Kind};
use agent_tui::text::plain;
use agent_tui::transcript::Transcript;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::status;

fn app_in(dir: &Path) -> App {
    let cx = CellContext {
        theme: UiTheme::plain(),
        registry: None,
        cwd: dir.to_path_buf(),
    };
    let mut a = App::new(Transcript::new(UiTheme::plain()), cx, status());
    a.commands = ["tree", "compact", "new", "skill:review"]
        .iter()
        .map(|n| CommandHint {
            name: (*n).into(),
            description: format!("about {n}"),
        })
        .collect();
    a
}

fn press(a: &mut App, code: KeyCode) -> Option<Action> {
    a.key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn typed(a: &mut App, text: &str) {
    for c in text.chars() {
        press(a, KeyCode::Char(c));
    }
}

fn shown(a: &mut App) -> String {
    plain(&a.compose(80, 30, Instant::now(), None).0)
}

#[test]
fn slash_opens_the_command_menu_and_enter_sends_the_choice() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = app_in(dir.path());
    typed(&mut a, "/");
    let menu = shown(&mut a);
    assert!(
        menu.contains("/tree") && menu.contains("/skill:review"),
        "{menu}"
    );
    typed(&mut a, "cmp");
    let menu = shown(&mut a);
    assert!(
        menu.contains("> /compact") && !menu.contains("/tree"),
        "{menu}"
    );
    // A skill is found by its bare name.
    for _ in 0..3 {
        press(&mut a, KeyCode::Backspace);
    }
    typed(&mut a, "rev");
    assert!(shown(&mut a).contains("> /skill:review"));
    // Esc closes the menu and keeps the text; Tab opens it again.
    press(&mut a, KeyCode::Esc);
    assert!(a.completion.is_none());
    assert_eq!(a.editor.text(), "/rev");
    press(&mut a, KeyCode::Tab);
    assert!(a.completion.is_some());
    a.editor.clear();
    a.completion = None;
    typed(&mut a, "/tr");
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        Some(Action::Command("/tree".into()))
    );
    // A blank ends the command name: the menu closes, Enter sends the line.
    typed(&mut a, "/new now");
    assert!(a.completion.is_none());
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        Some(Action::Command("/new now".into()))
    );
}

#[test]
fn up_down_and_tab_choose_in_the_menu() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = app_in(dir.path());
    typed(&mut a, "/");
    press(&mut a, KeyCode::Down);
    press(&mut a, KeyCode::Down);
    press(&mut a, KeyCode::Up);
    let chosen = a
        .completion
        .as_ref()
        .and_then(|m| m.current().cloned())
        .unwrap();
    press(&mut a, KeyCode::Tab);
    assert_eq!(a.editor.text(), chosen.value);
    assert!(a.completion.is_none());
    // Up wraps to the last item.
    a.editor.clear();
    typed(&mut a, "/");
    press(&mut a, KeyCode::Up);
    assert_eq!(a.completion.as_ref().map(|m| m.selected), Some(3));
}

/// Waits (for the background walk and matcher) until an `@` menu holds
/// `path`, matched for the query as typed now (while an answer is on its
/// way the menu of an earlier query stays shown).
fn wait_for_file(a: &mut App, path: &str) {
    let start = Instant::now();
    loop {
        a.files_updated();
        let found = !a.awaiting_files()
            && a.completion.as_ref().is_some_and(|m| {
                m.kind == Kind::File && m.items.iter().any(|i| i.description == path)
            });
        if found {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60), // hang guard
            "no menu with {path}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn at_completes_files_fuzzily_without_ignored_ones() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/editor")).unwrap();
    std::fs::create_dir_all(root.join("target/debug")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(root.join("src/editor/mod.rs"), "").unwrap();
    std::fs::write(root.join("src/main.rs"), "").unwrap();
    std::fs::write(root.join("target/debug/editor.rs"), "").unwrap();
    std::fs::write(root.join(".git/editor_config"), "").unwrap();
    std::fs::write(root.join("my notes.md"), "").unwrap();
    // `ignore` reads .gitignore only inside a repository.
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let mut a = app_in(root);
    typed(&mut a, "look at @edmod");
    wait_for_file(&mut a, "src/editor/mod.rs");
    let menu = a.completion.clone().expect("a file menu");
    assert_eq!(menu.kind, Kind::File);
    let values: Vec<&str> = menu.items.iter().map(|i| i.value.as_str()).collect();
    assert_eq!(values.first(), Some(&"@src/editor/mod.rs"), "{values:?}");
    assert!(
        !values
            .iter()
            .any(|v| v.contains("target") || v.contains(".git")),
        "{values:?}"
    );
    press(&mut a, KeyCode::Enter);
    assert_eq!(a.editor.text(), "look at @src/editor/mod.rs ");
    // A path with a blank is quoted.
    typed(&mut a, "@notes");
    wait_for_file(&mut a, "my notes.md");
    press(&mut a, KeyCode::Tab);
    assert_eq!(
        a.editor.text(),
        "look at @src/editor/mod.rs @\"my notes.md\" "
    );
}

#[test]
fn tab_completes_paths_one_match_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("crates/tui")).unwrap();
    std::fs::write(root.join("crates/tui/Cargo.toml"), "").unwrap();
    std::fs::write(root.join("Cargo.toml"), "").unwrap();
    std::fs::write(root.join("Cargo.lock"), "").unwrap();
    let mut a = app_in(root);
    typed(&mut a, "cat cr");
    press(&mut a, KeyCode::Tab);
    // The one match is taken, and the directory's entries offered.
    assert_eq!(a.editor.text(), "cat crates/");
    let menu = shown(&mut a);
    assert!(menu.contains("> tui/"), "{menu}");
    press(&mut a, KeyCode::Tab);
    assert_eq!(a.editor.text(), "cat crates/tui/");
    press(&mut a, KeyCode::Esc);
    a.editor.clear();
    typed(&mut a, "./Cargo.");
    press(&mut a, KeyCode::Tab);
    let menu = a.completion.clone().expect("two matches: a menu");
    assert_eq!(menu.items.len(), 2);
    // Typing narrows it.
    typed(&mut a, "l");
    let menu = a.completion.clone().expect("still open");
    assert_eq!(menu.items.len(), 1);
    press(&mut a, KeyCode::Enter);
    assert_eq!(a.editor.text(), "./Cargo.lock");
}
