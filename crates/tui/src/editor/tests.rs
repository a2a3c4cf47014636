use super::*;
use crate::text;
use anstyle::Style;

fn shown(e: &Editor, width: usize) -> (String, (usize, usize)) {
    let (rows, caret) = e.render(width, Style::new(), Style::new());
    (text::plain(&rows), caret)
}

#[test]
fn cursor_moves_by_grapheme() {
    let mut e = Editor::new();
    e.insert("ae\u{301}漢👨\u{200d}👩\u{200d}👧");
    e.left();
    assert_eq!(shown(&e, 40).1, (0, 2 + 1 + 1 + 2));
    e.left();
    e.backspace();
    assert_eq!(e.text(), "a漢👨\u{200d}👩\u{200d}👧");
}

#[test]
fn wraps_by_width_and_keeps_the_caret() {
    let mut e = Editor::new();
    e.insert("漢字漢字");
    // 6 columns: the gutter and two wide glyphs per row.
    assert_eq!(shown(&e, 6), ("> 漢字\n  漢字\n  ".to_string(), (2, 2)));
    e.newline();
    e.insert("x");
    assert_eq!(shown(&e, 40).1, (1, 3));
}

#[test]
fn big_paste_is_one_marker() {
    let mut e = Editor::new();
    e.insert("see ");
    e.paste(&"line\r\n".repeat(20));
    assert_eq!(e.text(), "see [paste #1 +21 lines]");
    e.backspace();
    assert_eq!(e.text(), "see ");
    e.paste(&format!("{}\x1b[2J", "x\n".repeat(11)));
    e.insert("!");
    let sent = e.submit().unwrap_or_default();
    assert_eq!(sent, format!("see {}[2J!", "x\n".repeat(11)));
}

#[test]
fn history_walks_back_and_restores_the_draft() {
    let mut e = Editor::new();
    for t in ["one", "two"] {
        e.insert(t);
        e.submit();
    }
    e.insert("draft");
    // The first Up keeps the draft: the caret goes to its start.
    assert!(e.up());
    assert_eq!((e.text(), e.cursor()), ("draft", 0));
    assert!(e.up());
    assert_eq!(e.text(), "two");
    assert!(e.up());
    assert_eq!(e.text(), "one");
    assert!(!e.up());
    assert!(e.down());
    assert!(e.down());
    assert_eq!(e.text(), "draft");
}

#[test]
fn a_typed_word_is_one_undo_step_and_each_blank_its_own() {
    let mut e = Editor::new();
    for c in "hello world".chars() {
        e.insert(&c.to_string());
    }
    assert!(e.undo());
    assert_eq!(e.text(), "hello ");
    assert!(e.undo());
    assert_eq!(e.text(), "hello");
    assert!(e.undo());
    assert_eq!(e.text(), "");
    assert!(!e.undo());
}

#[test]
fn kills_join_and_yank_pop_cycles() {
    let mut e = Editor::new();
    e.insert("one two three");
    e.delete_word_back();
    e.delete_word_back();
    // Two kills in a row are one entry, in reading order.
    assert_eq!(e.kill_ring().peek(), Some("two three"));
    assert_eq!(e.text(), "one ");
    e.home();
    e.delete_to_line_end();
    assert_eq!(e.kill_ring().len(), 2);
    assert_eq!(e.text(), "");
    e.yank();
    assert_eq!(e.text(), "one ");
    e.yank_pop();
    assert_eq!(e.text(), "two three");
    e.yank_pop();
    assert_eq!(e.text(), "one ");
    // Alt+Y only right after a yank.
    e.left();
    e.yank_pop();
    assert_eq!(e.text(), "one ");
}

#[test]
fn alt_d_and_ctrl_u_kill_across_lines() {
    let mut e = Editor::new();
    e.insert(
        "ab cd
ef",
    );
    e.home();
    e.delete_to_line_start();
    assert_eq!(e.text(), "ab cdef");
    assert_eq!(e.kill_ring().peek(), Some("\n"));
    e.home();
    e.delete_word_forward();
    assert_eq!(e.text(), " cdef");
    e.yank();
    assert_eq!(e.text(), "ab cdef");
}

#[test]
fn reverse_search_finds_older_entries_and_esc_restores() {
    let mut e = Editor::new();
    e.set_history(["cargo build", "git status", "cargo test -p x"]);
    e.insert("draft");
    e.search_older();
    for c in "cargo".chars() {
        e.search_edit(Some(c));
    }
    assert_eq!(e.text(), "cargo test -p x");
    e.search_older();
    assert_eq!(e.text(), "cargo build");
    e.search_older();
    assert!(e.search().is_some_and(|s| s.failed));
    assert_eq!(e.text(), "cargo build");
    e.search_cancel();
    assert_eq!(e.text(), "draft");
    e.search_older();
    for c in "GIT".chars() {
        e.search_edit(Some(c));
    }
    e.search_accept();
    assert_eq!((e.text(), e.cursor()), ("git status", 0));
    assert!(e.search().is_none());
    assert!(e.undo());
    assert_eq!(e.text(), "draft");
}

#[test]
fn jump_moves_to_the_next_or_previous_character() {
    let mut e = Editor::new();
    e.insert("a,b,c");
    e.home();
    e.start_jump(true);
    e.jump_to(',');
    assert_eq!(e.cursor(), 1);
    e.start_jump(true);
    e.jump_to(',');
    assert_eq!(e.cursor(), 3);
    e.start_jump(false);
    e.jump_to('a');
    assert_eq!(e.cursor(), 0);
}
