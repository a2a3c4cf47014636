//! What the cases share: the sample transcript and status, snapshots and
//! framed rows, streamed-answer events, a vt100 terminal, and key presses.

use std::path::PathBuf;
use std::sync::Arc;

use agent_ai::{AssistantMessage, AssistantMessageEvent, ContentBlock, Usage};
use agent_core::{AgentEvent, AgentToolResult};
use agent_tool::StyledLine;
use agent_tui::UiTheme;
use agent_tui::app::App;
use agent_tui::cell::{CellContext, CellKind, ToolCell, ToolStatus};
use agent_tui::footer::Status;
use agent_tui::markdown::MarkdownStream;
use agent_tui::text::line_width;
use agent_tui::transcript::Transcript;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub(crate) const CJK: &str = "漢字かな交じり文と한국어";
pub(crate) const FAMILY: &str = "👨\u{200d}👩\u{200d}👧\u{200d}👦";
pub(crate) const COMBINING: &str = "cafe\u{301} nai\u{308}ve Z\u{335}a\u{334}";

pub(crate) fn cx() -> CellContext {
    CellContext {
        theme: UiTheme::plain(),
        registry: None,
        cwd: PathBuf::from("/work"),
    }
}

pub(crate) fn status() -> Status {
    Status {
        cwd: "~/work/project".into(),
        branch: Some("main".into()),
        session_name: Some("refactor".into()),
        model: "scripted/model".into(),
        thinking: "high".into(),
        usage: Usage {
            input: 12_345,
            output: 678,
            cache_read: 2_000,
            cache_write: 300,
            ..Usage::default()
        },
        context_tokens: 75_000,
        context_window: 100_000,
    }
}

/// A transcript with every kind of cell, the last tool still running.
pub(crate) fn sample_app() -> App {
    let mut t = Transcript::new(UiTheme::plain());
    t.push(CellKind::User(format!("{CJK} {FAMILY} {COMBINING}")), true);
    let mut md = MarkdownStream::new();
    md.set(
        &format!("# Heading {CJK}\n\nSome **bold** and `code` with {FAMILY} and {COMBINING}.\n\n- item one\n- item {CJK}\n\n```rust\nfn main() {{ println!(\"{FAMILY}\"); }}\n```"),
        &UiTheme::plain(),
    );
    t.push(CellKind::Assistant(md), true);
    t.push(CellKind::Thinking("pondering the 漢字".into()), true);
    t.push(
        CellKind::Tool(Box::new(ToolCell {
            id: "c1".into(),
            name: "probe".into(),
            args: serde_json::json!({"path": "src/漢字.rs"}),
            status: ToolStatus::Ok,
            partial: None,
            result: Some(AgentToolResult::text(format!(
                "line one {FAMILY}\nline two {COMBINING}"
            ))),
            expanded: false,
            nested: Vec::new(),
        })),
        true,
    );
    t.push(
        CellKind::Tool(Box::new(ToolCell {
            id: "c2".into(),
            name: "slow".into(),
            args: serde_json::json!({"command": "sleep 10"}),
            status: ToolStatus::Running,
            partial: Some(AgentToolResult::text("tick 1\ntick 2")),
            result: None,
            expanded: false,
            nested: Vec::new(),
        })),
        false,
    );
    let mut app = App::new(t, cx(), status());
    app.editor
        .insert(&format!("ask about {CJK}\nand {FAMILY} {COMBINING}"));
    app
}

/// Compares with `tests/snapshots/<name>.txt`; `UPDATE_SNAPSHOTS=1` writes it.
pub(crate) fn snapshot(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "no snapshot {}; run with UPDATE_SNAPSHOTS=1",
            path.display()
        )
    });
    assert_eq!(actual, expected, "snapshot {name} differs");
}

/// Rows with `|` at the right edge, so trailing spaces show.
pub(crate) fn framed(rows: &[StyledLine], width: usize) -> String {
    rows.iter()
        .map(|r| {
            let w = line_width(r);
            assert!(w <= width, "row {:?} is {w} wide at {width}", r.to_plain());
            format!("{}{}|", r.to_plain(), " ".repeat(width - w))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn assistant(text: &str) -> Arc<AssistantMessage> {
    Arc::new(AssistantMessage {
        content: vec![ContentBlock::text(text)],
        ..AssistantMessage::empty("scripted", "model")
    })
}

pub(crate) fn delta_event(so_far: &str, delta: &str) -> AgentEvent {
    let partial = assistant(so_far);
    AgentEvent::MessageUpdate {
        message: partial.clone(),
        assistant_message_event: AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: delta.to_string(),
            partial,
        },
    }
}

pub(crate) struct Term {
    pub(crate) parser: vt100::Parser,
    rows: u16,
    cols: u16,
}

impl Term {
    pub(crate) fn new(rows: u16, cols: u16) -> Self {
        let nz = |n: u16| std::num::NonZeroU16::new(n).unwrap();
        Term {
            parser: vt100::Parser::new(nz(rows), nz(cols), 100_000),
            rows,
            cols,
        }
    }

    pub(crate) fn resize(&mut self, rows: u16, cols: u16) {
        let nz = |n: u16| std::num::NonZeroU16::new(n).unwrap();
        self.parser.set_size(nz(rows), nz(cols));
        self.rows = rows;
        self.cols = cols;
    }

    /// Every row: the scrollback, then the screen.
    pub(crate) fn all_rows(&mut self) -> Vec<String> {
        let len = self.parser.screen().scrollback_len();
        let height = usize::from(self.rows);
        let mut out = Vec::new();
        let mut off = len;
        while off > 0 {
            self.parser.screen_mut().set_scrollback(off);
            let n = off.min(height);
            out.extend(self.parser.screen().rows(0, self.cols).take(n));
            off -= n;
        }
        self.parser.screen_mut().set_scrollback(0);
        out.extend(self.parser.screen().rows(0, self.cols));
        out
    }
}

pub(crate) fn key(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, mods)
}

pub(crate) fn press(app: &mut App, code: KeyCode) -> Option<agent_tui::app::Action> {
    app.key(key(code, KeyModifiers::NONE))
}

pub(crate) fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

pub(crate) fn tool_call_block(id: &str, args: serde_json::Value) -> ContentBlock {
    ContentBlock::ToolCall(agent_ai::ToolCall {
        id: id.into(),
        name: "probe".into(),
        arguments: args,
        thought_signature: None,
    })
}
