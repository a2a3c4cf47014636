//! Fullscreen on huge sessions: only what is shown is drawn (counted by
//! the cells' render counters, never timed), the lazy layout shows the
//! same rows as the whole document drawn at once, a streaming answer
//! wraps only its open block, Ctrl+O keeps the top cell in place, and a
//! selection reaches a system clipboard program.

use std::time::Instant;

use agent_core::AgentToolResult;
use agent_tool::StyledLine;
use agent_tui::UiTheme;
use agent_tui::app::App;
use agent_tui::cell::Cell;
use agent_tui::cell::{CellKind, ToolCell, ToolStatus};
use agent_tui::clipboard::{ClipboardProgram, SystemClipboard};
use agent_tui::fullscreen::FullscreenView;
use agent_tui::markdown::MarkdownStream;
use agent_tui::text;
use agent_tui::transcript::Transcript;
use crossterm::event::{KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use crate::support::{CJK, cx, key, status};

fn tool(i: usize, lines: usize) -> CellKind {
    let result: String = (0..lines).map(|l| format!("tool {i} line {l}\n")).collect();
    CellKind::Tool(Box::new(ToolCell {
        id: format!("t{i}"),
        name: "probe".into(),
        args: serde_json::json!({ "i": i }),
        status: ToolStatus::Ok,
        partial: None,
        result: Some(AgentToolResult::text(result)),
        expanded: false,
        nested: Vec::new(),
    }))
}

/// `n` cells: numbered messages wrapping over a few rows, tool calls with
/// results longer than their collapsed preview, notices.
fn huge_app(n: usize) -> App {
    let mut t = Transcript::new(UiTheme::plain());
    for i in 0..n {
        match i % 4 {
            1 => t.push(tool(i, 3 + i % 25), true),
            3 => t.notice(format!("notice {i:05}"), false),
            _ => t.push(
                CellKind::User(format!("message {i:05} {CJK} {}", "word ".repeat(i % 40))),
                true,
            ),
        }
    }
    App::new(t, cx(), status())
}

fn renders(app: &App) -> usize {
    app.transcript.cells().iter().map(|c| c.renders()).sum()
}

fn rows_text(rows: &[StyledLine]) -> Vec<String> {
    rows.iter().map(StyledLine::to_plain).collect()
}

fn ctrl(c: char) -> crossterm::event::KeyEvent {
    key(KeyCode::Char(c), KeyModifiers::CONTROL)
}

#[test]
fn a_huge_session_draws_only_the_cells_shown() {
    const N: usize = 50_000;
    const H: u16 = 24;
    // Each cell shown costs two renders (drawn, wrapped); a view of H rows
    // shows at most H cells, and a fill looks one cell past its edge.
    let screenful = 2 * (usize::from(H) + 2);
    let mut app = huge_app(N);
    let mut view = FullscreenView::new(80, H);
    let (rows, _) = view.compose(&mut app, Instant::now());
    let text = rows_text(&rows).join("\n");
    assert!(text.contains(&format!("notice {:05}", N - 1)), "{text}");
    let spent = renders(&app);
    assert!(spent <= screenful, "entering drew {spent} times");
    assert!(view.layout().measured_count() <= usize::from(H) + 2);

    // A quiet frame draws nothing.
    view.compose(&mut app, Instant::now());
    assert_eq!(renders(&app), spent);

    // Three pages up: the cells scrolled over and shown.
    let before = renders(&app);
    for _ in 0..3 {
        view.key(key(KeyCode::PageUp, KeyModifiers::NONE), &mut app);
        view.compose(&mut app, Instant::now());
    }
    assert!(!view.follows());
    assert!(renders(&app) - before <= 4 * screenful);

    // Output arriving below a scrolled view is not drawn.
    app.transcript.notice("arrived below", false);
    let before = renders(&app);
    view.compose(&mut app, Instant::now());
    assert_eq!(renders(&app), before);

    // The top of the transcript, a wheel notch, a resize: a screenful each.
    for step in 0..3 {
        let before = renders(&app);
        match step {
            0 => {
                view.key(key(KeyCode::Home, KeyModifiers::CONTROL), &mut app);
            }
            1 => view.mouse(
                MouseEvent {
                    kind: MouseEventKind::ScrollDown,
                    column: 0,
                    row: 0,
                    modifiers: KeyModifiers::NONE,
                },
                &mut app,
            ),
            _ => view.resize(61, H),
        }
        let (rows, _) = view.compose(&mut app, Instant::now());
        let spent = renders(&app) - before;
        assert!(spent <= screenful, "step {step} drew {spent} times");
        if step == 0 {
            assert!(rows[0].to_plain().starts_with("> message 00000"));
        }
    }
    // Back to the tail: the new cell and its neighbours only.
    let before = renders(&app);
    view.key(key(KeyCode::End, KeyModifiers::CONTROL), &mut app);
    let (rows, _) = view.compose(&mut app, Instant::now());
    assert!(rows_text(&rows).iter().any(|r| r == "arrived below"));
    assert!(renders(&app) - before <= screenful);
    // Of fifty thousand cells, a few screens' worth were ever drawn.
    assert!(view.layout().measured_count() < 200);
}

/// The whole document at `width`, every cell drawn: what the view must
/// show, row for row.
fn whole_document(app: &App, width: usize) -> Vec<String> {
    let mut app = App::new(app.transcript.clone(), cx(), status());
    let cx = app.cx.clone();
    let mut doc = Vec::new();
    for (i, cell) in app.transcript.cells_mut().iter_mut().enumerate() {
        if i > 0 {
            doc.push(String::new());
        }
        doc.extend(cell.rows(&cx, width).iter().map(StyledLine::to_plain));
    }
    doc
}

#[test]
fn the_lazy_view_shows_the_rows_the_whole_document_has() {
    for (width, height) in [(30u16, 12u16), (80, 20)] {
        let mut app = huge_app(400);
        let doc = whole_document(&app, usize::from(width));
        let mut view = FullscreenView::new(width, height);
        let (rows, _) = view.compose(&mut app, Instant::now());
        // The view ends at the bar, the row above the editor's.
        let view_rows = rows
            .iter()
            .position(|r| r.to_plain() == "> ")
            .expect("the editor")
            - 1;
        // Following: the last rows.
        assert_eq!(rows_text(&rows[..view_rows]), doc[doc.len() - view_rows..]);
        // From the top, page by page (a page keeps one row): the same rows
        // at the same places, though nothing below was measured before.
        view.key(key(KeyCode::Home, KeyModifiers::CONTROL), &mut app);
        let page = view_rows - 1;
        let mut top = 0;
        while top + view_rows < doc.len() {
            let (rows, _) = view.compose(&mut app, Instant::now());
            assert_eq!(
                rows_text(&rows[..view_rows]),
                doc[top..top + view_rows],
                "{width}x{height} at row {top}"
            );
            assert_eq!(view.top(), top, "every row above was measured");
            view.key(key(KeyCode::PageDown, KeyModifiers::NONE), &mut app);
            top += page;
        }
        let (rows, _) = view.compose(&mut app, Instant::now());
        assert!(view.follows());
        assert_eq!(rows_text(&rows[..view_rows]), doc[doc.len() - view_rows..]);
    }
}

#[test]
fn a_resize_keeps_the_cell_at_the_top() {
    let mut app = huge_app(2_000);
    let mut view = FullscreenView::new(80, 20);
    view.compose(&mut app, Instant::now());
    for _ in 0..40 {
        view.key(key(KeyCode::PageUp, KeyModifiers::NONE), &mut app);
    }
    // Shift+Up until a message's first row is at the top.
    let top_row = loop {
        let (rows, _) = view.compose(&mut app, Instant::now());
        let first = rows[0].to_plain();
        if first.starts_with("> message") {
            break first;
        }
        view.key(key(KeyCode::Up, KeyModifiers::SHIFT), &mut app);
    };
    let id = &top_row[..15];
    for width in [37u16, 120, 80] {
        view.resize(width, 20);
        let (rows, _) = view.compose(&mut app, Instant::now());
        assert!(
            rows[0].to_plain().starts_with(id),
            "{width}: {:?} at the top, not {id}",
            rows[0].to_plain()
        );
    }
}

#[test]
fn ctrl_o_expands_every_result_and_keeps_the_top_cell_in_place() {
    let mut app = huge_app(3_000);
    let mut view = FullscreenView::new(60, 20);
    view.compose(&mut app, Instant::now());
    for _ in 0..30 {
        view.key(key(KeyCode::PageUp, KeyModifiers::NONE), &mut app);
    }
    // The view's rows (the bar's count of rows below is an estimate).
    let first = |view: &mut FullscreenView, app: &mut App| {
        let (rows, _) = view.compose(app, Instant::now());
        let mut rows = rows_text(&rows);
        rows.retain(|r| !r.contains("rows below"));
        rows
    };
    let before = first(&mut view, &mut app);
    assert!(!view.follows());
    let expanded = |app: &App| {
        app.transcript
            .cells()
            .iter()
            .filter(|c| matches!(c.kind(), CellKind::Tool(t) if t.expanded))
            .count()
    };
    // Ctrl+O is the view's in fullscreen: every result, above the view
    // too (so heights change above the top), and the top row stays.
    assert!(view.key(ctrl('o'), &mut app));
    assert_eq!(expanded(&app), 750);
    let after = first(&mut view, &mut app);
    assert_eq!(after[0], before[0], "{after:#?}");
    assert!(!view.follows());
    // And collapsed again, the same row on top.
    assert!(view.key(ctrl('o'), &mut app));
    assert_eq!(expanded(&app), 0);
    assert_eq!(first(&mut view, &mut app), before);

    // Following, it keeps following and shows the tail.
    view.key(key(KeyCode::End, KeyModifiers::CONTROL), &mut app);
    view.compose(&mut app, Instant::now());
    assert!(view.key(ctrl('o'), &mut app));
    let tail = first(&mut view, &mut app);
    assert!(view.follows());
    assert!(tail.iter().any(|r| r.contains("notice 02999")), "{tail:#?}");
}

#[test]
fn a_top_cell_that_collapses_under_the_view_gives_way_to_its_first_row() {
    let mut t = Transcript::new(UiTheme::plain());
    for i in 0..3 {
        t.push(CellKind::User(format!("before {i}")), true);
    }
    t.push(tool(7, 40), true);
    for i in 0..30 {
        t.push(CellKind::User(format!("after {i}")), true);
    }
    let mut app = App::new(t, cx(), status());
    let mut view = FullscreenView::new(40, 12);
    view.key(ctrl('o'), &mut app);
    view.compose(&mut app, Instant::now());
    view.key(key(KeyCode::Home, KeyModifiers::CONTROL), &mut app);
    // Down into the expanded result, past where the collapsed one ends.
    for _ in 0..25 {
        view.key(key(KeyCode::Down, KeyModifiers::SHIFT), &mut app);
    }
    let (rows, _) = view.compose(&mut app, Instant::now());
    assert!(rows[0].to_plain().contains("tool 7 line"), "{:?}", rows[0]);
    view.key(ctrl('o'), &mut app);
    let (rows, _) = view.compose(&mut app, Instant::now());
    assert!(
        rows[0].to_plain().starts_with("* probe"),
        "{:?}",
        rows_text(&rows)
    );
}

#[test]
fn a_selection_goes_to_the_system_clipboard_as_well_as_osc_52() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("clip.txt");
    let fake = dir.path().join("xclip");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho \"$@\" > '{0}.args'\ncat > '{0}'\n",
            out.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let clipboard = SystemClipboard::Program(ClipboardProgram {
        program: fake,
        args: vec!["-selection".into(), "clipboard".into()],
    });
    let mut t = Transcript::new(UiTheme::plain());
    t.notice("copy this line", false);
    let mut app = App::new(t, cx(), status());
    let mut view = FullscreenView::new(40, 12).with_clipboard(clipboard);
    view.compose(&mut app, Instant::now());
    let mouse = |kind, column| MouseEvent {
        kind,
        column,
        row: 0,
        modifiers: KeyModifiers::NONE,
    };
    view.mouse(mouse(MouseEventKind::Down(MouseButton::Left), 5), &mut app);
    view.mouse(mouse(MouseEventKind::Drag(MouseButton::Left), 13), &mut app);
    view.mouse(mouse(MouseEventKind::Up(MouseButton::Left), 13), &mut app);
    let bytes = view.frame(&mut app, Instant::now());
    assert!(bytes.contains(&agent_tui::selection::osc52("this line")));
    agent_tui::clipboard::wait_for_copies();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "this line");
    let args = std::fs::read_to_string(format!("{}.args", out.display())).unwrap();
    assert_eq!(args.trim(), "-selection clipboard");
}

/// The rows a cell must have: its lines wrapped, whole.
fn expected_rows(cell: &mut Cell, width: usize) -> Vec<String> {
    let lines = cell.lines(&cx(), width).to_vec();
    text::wrap_all(&lines, width)
        .iter()
        .map(|r| text::clip(r, width).to_plain())
        .collect()
}

#[test]
fn a_streaming_answer_keeps_its_settled_rows_and_wraps_the_open_block() {
    let theme = UiTheme::plain();
    let mut cell = Cell::new(CellKind::Assistant(MarkdownStream::new()), false);
    let push = |cell: &mut Cell, delta: &str| {
        if let CellKind::Assistant(md) = cell.kind_mut() {
            md.push(delta, &theme);
        }
    };
    let body: String = (0..2_000)
        .map(|i| format!("Paragraph {i} with **some** words {CJK}.\n\n"))
        .collect();
    push(&mut cell, &body);
    let width = 33;
    cell.rows(&cx(), width);
    // Fifty deltas: each wraps the open block (and what it settled), not
    // the two thousand paragraphs before it.
    let before = cell.wrapped_lines();
    let tail = "- a list item that grows\n- and another one\n\nThen `code` and a last paragraph. ";
    for (i, piece) in tail.as_bytes().chunks(2).enumerate() {
        push(&mut cell, std::str::from_utf8(piece).unwrap());
        let shown: Vec<String> = cell
            .rows(&cx(), width)
            .iter()
            .map(StyledLine::to_plain)
            .collect();
        if i % 7 == 0 {
            let mut fresh = cell.clone();
            assert_eq!(shown, expected_rows(&mut fresh, width), "after delta {i}");
        }
    }
    let deltas = tail.len().div_ceil(2);
    let spent = cell.wrapped_lines() - before;
    assert!(
        spent <= deltas * 8,
        "{spent} lines wrapped for {deltas} deltas"
    );

    // Another width, a text that does not extend the old one, a theme:
    // the rows start over and are right.
    for step in 0..3 {
        match step {
            0 => {}
            1 => {
                if let CellKind::Assistant(md) = cell.kind_mut() {
                    md.set("# Another answer\n\nShort.", &theme);
                }
            }
            _ => {
                if let CellKind::Assistant(md) = cell.kind_mut() {
                    md.push("\n\nMore.", &theme);
                }
            }
        }
        let w = 17 + step * 10;
        let shown: Vec<String> = cell
            .rows(&cx(), w)
            .iter()
            .map(StyledLine::to_plain)
            .collect();
        let mut fresh = cell.clone();
        assert_eq!(shown, expected_rows(&mut fresh, w), "step {step}");
    }
    // Settled, it is drawn whole once more and stays.
    cell.settle();
    let shown: Vec<String> = cell
        .rows(&cx(), 40)
        .iter()
        .map(StyledLine::to_plain)
        .collect();
    assert_eq!(shown, expected_rows(&mut cell.clone(), 40));
}

#[test]
fn a_resumed_session_parses_only_the_answers_shown() {
    use agent_ai::{AssistantMessage, ContentBlock, Message};
    let messages: Vec<Message> = (0..5_000)
        .map(|i| match i % 2 {
            0 => Message::user(format!("question {i}")),
            _ => Message::Assistant(AssistantMessage {
                content: vec![ContentBlock::text(format!("**answer** {i}\n\n- a\n- b"))],
                ..AssistantMessage::empty("p", "m")
            }),
        })
        .collect();
    let parsed = |app: &App| -> usize {
        app.transcript
            .cells()
            .iter()
            .map(|c| match c.kind() {
                CellKind::Assistant(md) => md.parsed_blocks(),
                _ => 0,
            })
            .sum()
    };
    let transcript = Transcript::from_messages(&messages, UiTheme::plain());
    let mut app = App::new(transcript.clone(), cx(), status());
    assert_eq!(parsed(&app), 0, "nothing parsed before it is drawn");
    let mut view = FullscreenView::new(80, 24);
    let (rows, _) = view.compose(&mut app, Instant::now());
    assert!(
        rows_text(&rows).iter().any(|r| r == "answer 4999"),
        "{rows:#?}"
    );
    assert!(parsed(&app) <= 3 * 24, "{} blocks parsed", parsed(&app));
    // Inline mode's history, drawn from the same deferred cells, is the
    // one an eagerly parsed transcript gives.
    let mut eager = Transcript::new(UiTheme::plain());
    for m in &messages {
        match m {
            Message::User(u) => eager.push(CellKind::User(u.text()), true),
            Message::Assistant(a) => {
                let mut md = MarkdownStream::new();
                md.set(&a.text(), &UiTheme::plain());
                eager.push(CellKind::Assistant(md), true);
            }
            Message::ToolResult(_) => {}
        }
    }
    let mut lazy = transcript;
    assert_eq!(
        text::plain(&lazy.all_history(&cx(), 50)),
        text::plain(&eager.all_history(&cx(), 50))
    );
}
