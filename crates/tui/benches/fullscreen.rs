//! Fullscreen on long sessions (issue 32): what entering the view, a
//! quiet frame, a page up, Ctrl+Home and a resize cost at 5,000 and
//! 50,000 messages, and how many cells were drawn for it; then a frame of
//! a 10,000-line answer streaming in view. Figures only,
//! no assertions (the tests count renders instead):
//! `cargo bench -p agent-tui --bench fullscreen`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_core::AgentToolResult;
use agent_tui::UiTheme;
use agent_tui::app::App;
use agent_tui::cell::{CellContext, CellKind, ToolCell, ToolStatus};
use agent_tui::fullscreen::FullscreenView;
use agent_tui::markdown::MarkdownStream;
use agent_tui::transcript::Transcript;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// `n` messages: a question, a Markdown answer, a tool call with a
/// 20-line result, in turn.
fn session(n: usize) -> App {
    let theme = UiTheme::plain();
    let mut t = Transcript::new(theme);
    for i in 0..n {
        match i % 3 {
            0 => t.push(CellKind::User(format!("question {i} ").repeat(12)), true),
            1 => {
                let mut md = MarkdownStream::new();
                let text = format!(
                    "Answer {i} with **bold** and `code`.\n\n- one\n- two\n\n{}",
                    "word ".repeat(60)
                );
                md.set(&text, &theme);
                t.push(CellKind::Assistant(md), true);
            }
            _ => {
                let result: String = (0..20).map(|l| format!("out {l}\n")).collect();
                let call = ToolCell {
                    id: format!("t{i}"),
                    name: "probe".into(),
                    args: serde_json::json!({ "n": i }),
                    status: ToolStatus::Ok,
                    partial: None,
                    result: Some(AgentToolResult::text(result)),
                    expanded: false,
                    nested: Vec::new(),
                };
                t.push(CellKind::Tool(Box::new(call)), true);
            }
        }
    }
    let cx = CellContext {
        theme,
        registry: None,
        cwd: PathBuf::from("/"),
    };
    App::new(t, cx, agent_tui::footer::Status::default())
}

fn renders(app: &App) -> usize {
    app.transcript.cells().iter().map(|c| c.renders()).sum()
}

/// Runs `step` and reports its time and the cells it drew.
fn measure(
    label: &str,
    app: &mut App,
    view: &mut FullscreenView,
    step: impl FnOnce(&mut FullscreenView, &mut App),
) -> Duration {
    let drawn = renders(app);
    let start = Instant::now();
    step(view, app);
    view.compose(app, Instant::now());
    let took = start.elapsed();
    println!(
        "  {label:<12} {:>10.3} ms  {:>5} renders",
        took.as_secs_f64() * 1000.0,
        renders(app) - drawn
    );
    took
}

fn main() {
    let key = |code, mods| KeyEvent::new(code, mods);
    for n in [5_000usize, 50_000] {
        let mut app = session(n);
        let mut view = FullscreenView::new(120, 40);
        println!("fullscreen, {n} messages, 120x40:");
        measure("enter", &mut app, &mut view, |_, _| {});
        measure("quiet frame", &mut app, &mut view, |_, _| {});
        measure("page up", &mut app, &mut view, |v, a| {
            v.key(key(KeyCode::PageUp, KeyModifiers::NONE), a);
        });
        measure("ctrl+home", &mut app, &mut view, |v, a| {
            v.key(key(KeyCode::Home, KeyModifiers::CONTROL), a);
        });
        measure("resize", &mut app, &mut view, |v, _| v.resize(100, 40));
        measure("ctrl+o", &mut app, &mut view, |v, a| {
            v.key(key(KeyCode::Char('o'), KeyModifiers::CONTROL), a);
        });
        measure("ctrl+end", &mut app, &mut view, |v, a| {
            v.key(key(KeyCode::End, KeyModifiers::CONTROL), a);
        });
        println!(
            "  cells measured in all: {}",
            view.layout().measured_count()
        );
    }
    stream();
}

/// A 10,000-line answer streaming at the bottom of the view: a frame per
/// delta, the median of 50.
fn stream() {
    let theme = UiTheme::plain();
    let mut t = Transcript::new(theme);
    let mut md = MarkdownStream::new();
    let text: String = (0..10_000)
        .map(|i| format!("answer line {i}\n\n"))
        .collect();
    md.set(&text, &theme);
    t.push(CellKind::Assistant(md), false);
    let cx = CellContext {
        theme,
        registry: None,
        cwd: PathBuf::from("/"),
    };
    let mut app = App::new(t, cx, agent_tui::footer::Status::default());
    let mut view = FullscreenView::new(120, 40);
    view.compose(&mut app, Instant::now());
    let mut runs: Vec<Duration> = (0..50)
        .map(|i| {
            let start = Instant::now();
            if let CellKind::Assistant(md) = app.transcript.cells_mut()[0].kind_mut() {
                md.push(&format!("more {i} "), &theme);
            }
            view.compose(&mut app, Instant::now());
            start.elapsed()
        })
        .collect();
    runs.sort();
    println!(
        "a 10,000-line answer streaming in fullscreen: {:.3} ms a frame (median)",
        runs[runs.len() / 2].as_secs_f64() * 1000.0
    );
}
