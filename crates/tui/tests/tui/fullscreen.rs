//! Fullscreen mode: the view at four widths, scrolling and follow-tail,
//! search, selection to logical text, click to expand, and a vt100
//! replay of entering and leaving the alternate screen.

use std::time::Instant;

use agent_core::AgentToolResult;
use agent_tool::StyledLine;
use agent_tui::UiTheme;
use agent_tui::app::App;
use agent_tui::cell::{CellKind, ToolCell, ToolStatus};
use agent_tui::fullscreen::FullscreenView;
use agent_tui::terminal::{ENTER_FULLSCREEN, LEAVE_FULLSCREEN};
use agent_tui::text::plain;
use agent_tui::transcript::Transcript;
use base64::Engine as _;
use crossterm::event::{KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use crate::support::{CJK, FAMILY, Term, cx, framed, key, sample_app, snapshot, status};

#[path = "fullscreen_lazy.rs"]
mod lazy;

const PARAGRAPH: &str =
    "The quick brown fox jumps over the lazy dog while the needle hides in a haystack of words.";

/// A transcript long enough to scroll: numbered user messages, a long
/// paragraph, a tool call with a long result.
fn long_app() -> App {
    let mut t = Transcript::new(UiTheme::plain());
    for i in 0..12 {
        t.push(CellKind::User(format!("message {i:02} {CJK}")), true);
    }
    t.notice(PARAGRAPH, false);
    let result: String = (0..30).map(|i| format!("output line {i}\n")).collect();
    t.push(
        CellKind::Tool(Box::new(ToolCell {
            id: "t1".into(),
            name: "probe".into(),
            args: serde_json::json!({"n": 1}),
            status: ToolStatus::Ok,
            partial: None,
            result: Some(AgentToolResult::text(result)),
            expanded: false,
            nested: Vec::new(),
        })),
        true,
    );
    for i in 12..20 {
        t.push(
            CellKind::User(format!("message {i:02} needle {FAMILY}")),
            true,
        );
    }
    App::new(t, cx(), status())
}

fn screen(view: &mut FullscreenView, app: &mut App) -> Vec<StyledLine> {
    view.compose(app, Instant::now()).0
}

fn text_of(rows: &[StyledLine]) -> String {
    plain(rows)
}

fn mouse(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
    MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

#[test]
fn the_fullscreen_view_at_four_widths() {
    for width in [20u16, 40, 80, 120] {
        let mut app = sample_app();
        let mut view = FullscreenView::new(width, 24);
        let (rows, caret) = view.compose(&mut app, Instant::now());
        assert_eq!(rows.len(), 24, "the whole screen is drawn");
        let caret = caret.expect("the editor has the caret");
        assert!(caret.0 < 24 && caret.1 < usize::from(width));
        assert!(view.follows());
        let text = format!(
            "fullscreen ({width} columns, caret at {caret:?}):\n{}\n",
            framed(&rows, usize::from(width))
        );
        snapshot(&format!("fullscreen_{width}"), &text);
    }
}

#[test]
fn scrolling_stops_following_and_the_bottom_resumes_it() {
    let mut app = long_app();
    let mut view = FullscreenView::new(40, 16);
    let first = text_of(&screen(&mut view, &mut app));
    assert!(first.contains("message 19"), "{first}");
    let bottom_top = view.top();

    assert!(view.key(key(KeyCode::PageUp, KeyModifiers::NONE), &mut app));
    let up = text_of(&screen(&mut view, &mut app));
    assert!(!view.follows());
    assert!(view.top() < bottom_top);
    assert!(up.contains("rows below"), "{up}");
    assert!(!up.contains("message 19"), "{up}");

    // New output below does not move what the user reads.
    let top = view.top();
    let first_row = screen(&mut view, &mut app)[0].to_plain();
    app.transcript.notice("arrived while scrolled up", false);
    let rows = screen(&mut view, &mut app);
    assert_eq!(view.top(), top);
    assert_eq!(rows[0].to_plain(), first_row);

    // Shift+Up and the wheel move a row and three.
    view.key(key(KeyCode::Up, KeyModifiers::SHIFT), &mut app);
    screen(&mut view, &mut app);
    assert_eq!(view.top(), top - 1);
    view.mouse(mouse(MouseEventKind::ScrollDown, 0, 0), &mut app);
    screen(&mut view, &mut app);
    assert_eq!(view.top(), top + 2);

    // Back at the bottom it follows again, and shows the new output.
    for _ in 0..20 {
        view.key(key(KeyCode::PageDown, KeyModifiers::NONE), &mut app);
        screen(&mut view, &mut app);
    }
    assert!(view.follows());
    let last = text_of(&screen(&mut view, &mut app));
    assert!(last.contains("arrived while scrolled up"), "{last}");
    assert!(!last.contains("rows below"));
}

#[test]
fn search_highlights_and_steps_through_matches() {
    let mut app = long_app();
    let mut view = FullscreenView::new(40, 16);
    screen(&mut view, &mut app);
    assert!(view.key(key(KeyCode::Char('s'), KeyModifiers::CONTROL), &mut app));
    for c in "NEEDLE".chars() {
        assert!(view.key(key(KeyCode::Char(c), KeyModifiers::SHIFT), &mut app));
    }
    assert_eq!(view.search().map(|s| s.query()), Some("NEEDLE"));
    view.key(key(KeyCode::Enter, KeyModifiers::NONE), &mut app);
    let rows = screen(&mut view, &mut app);
    // Nine matches: the paragraph and eight messages; the newest first.
    assert_eq!(view.search().map(|s| s.counts()), Some((9, 9)));
    assert!(
        text_of(&rows).contains("search: NEEDLE  9/9"),
        "{}",
        text_of(&rows)
    );
    // Matches are underlined in the plain theme (no colours).
    let lit = rows
        .iter()
        .flat_map(|r| r.spans.iter())
        .filter(|s| s.style == UiTheme::plain().search_match)
        .count();
    assert!(lit >= 1);
    assert!(
        rows.iter()
            .flat_map(|r| &r.spans)
            .any(|s| s.text == "needle" && s.style == UiTheme::plain().search_match)
    );

    // `n` steps to older matches, `N` to newer ones, wrapping around; the
    // view follows the match up the transcript.
    view.key(key(KeyCode::Char('n'), KeyModifiers::NONE), &mut app);
    screen(&mut view, &mut app);
    assert_eq!(view.search().map(|s| s.counts()), Some((8, 9)));
    view.key(key(KeyCode::Char('N'), KeyModifiers::SHIFT), &mut app);
    screen(&mut view, &mut app);
    assert_eq!(view.search().map(|s| s.counts()), Some((9, 9)));
    view.key(key(KeyCode::Char('N'), KeyModifiers::SHIFT), &mut app);
    let rows = screen(&mut view, &mut app);
    assert_eq!(view.search().map(|s| s.counts()), Some((1, 9)));
    assert!(text_of(&rows).contains("haystack"), "{}", text_of(&rows));
    assert!(!view.follows());
    // Esc closes it; keys go to the editor again.
    view.key(key(KeyCode::Esc, KeyModifiers::NONE), &mut app);
    assert!(view.search().is_none());
    assert!(!view.key(key(KeyCode::Char('n'), KeyModifiers::NONE), &mut app));
}

#[test]
fn a_drag_copies_the_logical_text_not_the_wrapped_rows() {
    let mut app = long_app();
    let mut view = FullscreenView::new(20, 60);
    screen(&mut view, &mut app);
    view.key(key(KeyCode::Home, KeyModifiers::CONTROL), &mut app);
    let rows = screen(&mut view, &mut app);
    let start = rows
        .iter()
        .position(|r| r.to_plain().starts_with("The quick"))
        .expect("the paragraph is in view");
    // From "quick" on the paragraph's first row to the end of "lazy".
    let lazy_row = rows
        .iter()
        .position(|r| r.to_plain().contains("lazy"))
        .expect("lazy is in view");
    let lazy_col = rows[lazy_row].to_plain().find("lazy").unwrap() + 3;
    let at = |r: usize| u16::try_from(r).unwrap();
    view.mouse(
        mouse(MouseEventKind::Down(MouseButton::Left), 4, at(start)),
        &mut app,
    );
    view.mouse(
        mouse(
            MouseEventKind::Drag(MouseButton::Left),
            at(lazy_col),
            at(lazy_row),
        ),
        &mut app,
    );
    view.mouse(
        mouse(
            MouseEventKind::Up(MouseButton::Left),
            at(lazy_col),
            at(lazy_row),
        ),
        &mut app,
    );
    let copied = view.selected_text(&mut app);
    assert_eq!(copied, "quick brown fox jumps over the lazy");
    let bytes = view.frame(&mut app, Instant::now());
    let encoded = base64::engine::general_purpose::STANDARD.encode(copied.as_bytes());
    assert!(
        bytes.contains(&format!("\x1b]52;c;{encoded}\x07")),
        "{bytes:?}"
    );

    // Across cells: whole logical lines, cells apart by a blank line.
    let second = rows
        .iter()
        .position(|r| r.to_plain().starts_with("> message 01"))
        .expect("the second message is in view");
    let second = at(second);
    view.mouse(
        mouse(MouseEventKind::Down(MouseButton::Left), 0, 0),
        &mut app,
    );
    view.mouse(
        mouse(MouseEventKind::Drag(MouseButton::Left), 19, second),
        &mut app,
    );
    view.mouse(
        mouse(MouseEventKind::Up(MouseButton::Left), 19, second),
        &mut app,
    );
    let copied = view.selected_text(&mut app);
    assert!(
        copied.starts_with(&format!("> message 00 {CJK}\n\n> message 01")),
        "{copied:?}"
    );
}

#[test]
fn a_click_on_a_tool_call_expands_and_collapses_it() {
    let mut app = long_app();
    let mut view = FullscreenView::new(40, 30);
    screen(&mut view, &mut app);
    view.key(key(KeyCode::Home, KeyModifiers::CONTROL), &mut app);
    let find_probe = |rows: &[StyledLine]| {
        rows.iter()
            .position(|r| r.to_plain().starts_with("* probe"))
    };
    let mut probe = None;
    for _ in 0..10 {
        let rows = screen(&mut view, &mut app);
        probe = find_probe(&rows);
        if probe.is_some() {
            break;
        }
        view.key(key(KeyCode::PageDown, KeyModifiers::NONE), &mut app);
    }
    let row = u16::try_from(probe.expect("the tool call comes into view")).unwrap();
    let collapsed = text_of(&screen(&mut view, &mut app));
    assert!(!collapsed.contains("output line 29"), "{collapsed}");
    view.mouse(
        mouse(MouseEventKind::Down(MouseButton::Left), 2, row),
        &mut app,
    );
    view.mouse(
        mouse(MouseEventKind::Up(MouseButton::Left), 2, row),
        &mut app,
    );
    let expanded = app
        .transcript
        .cells()
        .iter()
        .any(|c| matches!(c.kind(), CellKind::Tool(t) if t.expanded));
    assert!(expanded);
    let mut seen = String::new();
    for _ in 0..10 {
        seen += &text_of(&screen(&mut view, &mut app));
        view.key(key(KeyCode::PageDown, KeyModifiers::NONE), &mut app);
    }
    assert!(seen.contains("output line 29"), "{seen}");
}

#[test]
fn vt100_replay_enters_and_leaves_the_alternate_screen() {
    let mut term = Term::new(12, 40);
    term.parser
        .process(b"$ coding-agent\r\nearlier shell output\r\n");
    let mut app = long_app();
    let mut view = FullscreenView::new(40, 12);
    term.parser.process(ENTER_FULLSCREEN.as_bytes());
    assert!(term.parser.screen().alternate_screen());
    assert_ne!(
        term.parser.screen().mouse_protocol_mode(),
        vt100::MouseProtocolMode::None
    );
    term.parser
        .process(view.frame(&mut app, Instant::now()).as_bytes());
    let shown: Vec<String> = term.parser.screen().rows(0, 40).collect();
    assert!(shown.iter().any(|r| r.contains("message 19")), "{shown:#?}");
    assert!(!shown.iter().any(|r| r.contains("earlier shell output")));
    // A quiet frame writes nothing; a scroll rewrites rows in place.
    assert!(view.frame(&mut app, Instant::now()).is_empty());
    view.key(key(KeyCode::PageUp, KeyModifiers::NONE), &mut app);
    let bytes = view.frame(&mut app, Instant::now());
    assert!(bytes.starts_with("\x1b[?2026h") && bytes.ends_with("\x1b[?2026l"));
    assert!(!bytes.contains("\x1b[2J") && !bytes.contains("\x1b[3J"));
    term.parser.process(bytes.as_bytes());
    let scrolled: Vec<String> = term.parser.screen().rows(0, 40).collect();
    assert!(
        scrolled.iter().any(|r| r.contains("rows below")),
        "{scrolled:#?}"
    );

    term.parser.process(LEAVE_FULLSCREEN.as_bytes());
    assert!(!term.parser.screen().alternate_screen());
    assert_eq!(
        term.parser.screen().mouse_protocol_mode(),
        vt100::MouseProtocolMode::None
    );
    let main: Vec<String> = term.parser.screen().rows(0, 40).collect();
    assert!(
        main.iter().any(|r| r.contains("earlier shell output")),
        "{main:#?}"
    );
    assert!(!main.iter().any(|r| r.contains("message 19")), "{main:#?}");
}

#[test]
fn the_chrome_has_no_ambiguous_width_glyphs() {
    use unicode_width::UnicodeWidthChar;
    let mut app = long_app();
    app.run_started(Instant::now());
    let mut view = FullscreenView::new(80, 24);
    let mut chrome = Vec::new();
    // The dock with the spinner, the scrolled bar, the search bar.
    chrome.extend(screen(&mut view, &mut app));
    view.key(key(KeyCode::PageUp, KeyModifiers::NONE), &mut app);
    chrome.extend(screen(&mut view, &mut app));
    view.key(key(KeyCode::Char('s'), KeyModifiers::CONTROL), &mut app);
    view.key(key(KeyCode::Char('x'), KeyModifiers::NONE), &mut app);
    view.key(key(KeyCode::Enter, KeyModifiers::NONE), &mut app);
    chrome.extend(screen(&mut view, &mut app));
    let text = text_of(&chrome);
    assert!(
        text.contains("esc to interrupt") && text.contains("search: x"),
        "{text}"
    );
    for c in text.chars() {
        assert_eq!(
            c.width(),
            c.width_cjk(),
            "{c:?} (U+{:04X}) is ambiguous",
            u32::from(c)
        );
    }
}

#[test]
fn tiny_and_huge_screens_keep_the_caret_and_fit() {
    for (w, h) in [(1u16, 1u16), (2, 2), (5, 3), (20, 4), (500, 200)] {
        let mut app = long_app();
        let mut view = FullscreenView::new(w, h);
        view.key(key(KeyCode::Char('s'), KeyModifiers::CONTROL), &mut app);
        let (rows, caret) = view.compose(&mut app, Instant::now());
        assert!(rows.len() <= usize::from(h), "{w}x{h}");
        for r in &rows {
            assert!(agent_tui::text::line_width(r) <= usize::from(w), "{w}x{h}");
        }
        // The search row gives way to the editor first.
        let (r, c) = caret.unwrap_or_else(|| panic!("{w}x{h}: no caret"));
        assert!(r < rows.len() && c < usize::from(w), "{w}x{h}");
        view.mouse(
            mouse(MouseEventKind::Down(MouseButton::Left), w - 1, h - 1),
            &mut app,
        );
        view.mouse(
            mouse(MouseEventKind::Up(MouseButton::Left), w - 1, h - 1),
            &mut app,
        );
        assert!(!view.frame(&mut app, Instant::now()).is_empty());
    }
}
