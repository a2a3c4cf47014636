//! agent-tui's integration tests: component snapshots at several widths,
//! a vt100 replay of the inline renderer's bytes, property tests of the
//! streaming Markdown and of sizes, all without a real terminal.

use std::sync::Arc;
use std::time::Instant;

use agent_ai::{AssistantMessage, AssistantMessageEvent, ContentBlock, Message};
use agent_core::{AgentEvent, AgentToolResult};
use agent_tui::UiTheme;
use agent_tui::app::App;
use agent_tui::cell::{CellKind, ToolCell, ToolStatus};
use agent_tui::inline::InlineRenderer;
use agent_tui::markdown::{MarkdownStream, render};
use agent_tui::text::{line_width, plain};
use agent_tui::transcript::Transcript;
use proptest::prelude::*;

#[path = "tui/cells.rs"]
mod cells;
#[path = "tui/completion.rs"]
mod completion;
#[path = "tui/dialog.rs"]
mod dialog;
#[path = "tui/editor_keys.rs"]
mod editor_keys;
#[path = "tui/fullscreen.rs"]
mod fullscreen;
#[path = "tui/selector.rs"]
mod selector;
#[path = "tui/support.rs"]
mod support;

use support::{
    CJK, COMBINING, FAMILY, Term, assistant, cx, delta_event, framed, sample_app, snapshot, status,
    tool_call_block,
};

#[test]
fn components_at_four_widths() {
    for width in [20, 40, 80, 120] {
        let mut app = sample_app();
        let history = app.transcript.take_history(&app.cx, width);
        let (live, caret) = app.compose(width, 60, Instant::now(), None);
        let caret = caret.expect("the editor has the caret");
        assert!(caret.1 < width && caret.0 < live.len());
        let text = format!(
            "history (logical lines):\n{}\n\nlive region ({width} columns, caret at {caret:?}):\n{}\n",
            plain(&history),
            framed(&live, width),
        );
        snapshot(&format!("components_{width}"), &text);
    }
}

#[test]
fn the_footer_and_editor_fit_a_tiny_screen() {
    let mut app = sample_app();
    let (live, caret) = app.compose(20, 3, Instant::now(), None);
    assert_eq!(live.len(), 3);
    // The editor keeps its rows before anything else, the caret's in view.
    let shown = plain(&live);
    assert!(!shown.contains("scripted/model"), "{shown:?}");
    let (row, _) = caret.expect("the caret is shown");
    assert!(
        live[row].to_plain().contains("Z\u{335}a\u{334}"),
        "{shown:?}"
    );
}

#[test]
fn vt100_replay_of_a_streamed_answer_and_a_resize() {
    let mut app = App::new(Transcript::new(UiTheme::plain()), cx(), status());
    // vt100 does not rewrap lines on a resize (as xterm): the screen is
    // cleared and drawn again.
    let mut renderer = InlineRenderer::new(60, 12).reflowing(false);
    let mut term = Term::new(12, 60);
    let mut bytes = Vec::new();
    let mut draw =
        |app: &mut App, renderer: &mut InlineRenderer, term: &mut Term, rebuild: bool| {
            let out = app.frame(renderer, rebuild, Instant::now());
            term.parser.process(out.as_bytes());
            bytes.extend_from_slice(out.as_bytes());
        };
    draw(&mut app, &mut renderer, &mut term, false);
    app.run_started(Instant::now());
    app.agent_event(&AgentEvent::MessageStart {
        message: Message::user("tell me forty lines"),
    });
    app.agent_event(&AgentEvent::MessageStart {
        message: Message::Assistant((*assistant("")).clone()),
    });
    let answer: String = (0..40)
        .map(|i| format!("line {i:02} alpha beta gamma\n\n"))
        .collect();
    let mut so_far = String::new();
    for (n, chunk) in answer.as_bytes().chunks(7).enumerate() {
        let delta = std::str::from_utf8(chunk).unwrap();
        so_far.push_str(delta);
        app.agent_event(&delta_event(&so_far, delta));
        draw(&mut app, &mut renderer, &mut term, false);
        if n == 60 {
            // Finished paragraphs are in the scrollback while the answer
            // still streams.
            let rows = term.all_rows();
            assert!(
                rows.iter().any(|r| r.contains("line 05 alpha")),
                "{rows:#?}"
            );
        }
        if n == 80 {
            // Narrower, mid-stream: the screen is drawn again.
            renderer.resize(44, 12);
            term.resize(12, 44);
            draw(&mut app, &mut renderer, &mut term, true);
        }
    }
    app.agent_event(&AgentEvent::MessageEnd {
        message: Message::Assistant((*assistant(&so_far)).clone()),
    });
    app.run_ended();
    draw(&mut app, &mut renderer, &mut term, false);

    let rows = term.all_rows();
    for i in 0..40 {
        let needle = format!("line {i:02} alpha");
        let count = rows.iter().filter(|r| r.contains(&needle)).count();
        assert_eq!(
            count,
            1,
            "{needle:?} appears {count} times:\n{}",
            rows.join("\n")
        );
    }
    let asked = rows.iter().filter(|r| r.contains("tell me forty")).count();
    assert_eq!(asked, 1);
    let text = String::from_utf8_lossy(&bytes);
    assert!(!text.contains("\x1b[3J"), "the scrollback is never cleared");
    assert_eq!(
        text.matches("\x1b[2J").count(),
        1,
        "one clear, for the width change"
    );
    assert_eq!(renderer.stats().clears, 1);
    // The live region sits at the bottom: the editor, then the footer.
    let screen: Vec<String> = term.parser.screen().rows(0, 44).collect();
    assert!(screen.iter().any(|r| r.starts_with("> ")), "{screen:#?}");
    let last = screen.iter().rev().find(|r| !r.trim().is_empty());
    assert!(
        last.is_some_and(|r| r.contains("scripted/model")),
        "{screen:#?}"
    );
    assert!(screen.iter().any(|r| r.contains("75%")), "{screen:#?}");
    let (row, col) = term.parser.screen().cursor_position();
    assert_eq!(screen[usize::from(row)].get(..2), Some("> "));
    assert_eq!(col, 2);
    // Every frame is one synchronized update.
    assert_eq!(
        text.matches("\x1b[?2026h").count(),
        text.matches("\x1b[?2026l").count()
    );
}

#[test]
fn a_quiet_frame_writes_nothing() {
    let mut app = sample_app();
    let mut renderer = InlineRenderer::new(80, 24);
    assert!(!app.frame(&mut renderer, false, Instant::now()).is_empty());
    assert!(app.frame(&mut renderer, false, Instant::now()).is_empty());
}

/// Markdown fragments a model writes.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("# Title\n\n".to_string()),
        Just("Some *emphasis* and **strong** text.\n".to_string()),
        Just("a [link](http://x.y) and `code`\n\n".to_string()),
        Just("- one\n- two\n  - nested\n\n".to_string()),
        Just("1. first\n2. second\n\n".to_string()),
        Just("```rust\nfn f() {}\n\nlet x = 1;\n```\n\n".to_string()),
        Just("> quoted\n> text\n\n".to_string()),
        Just("---\n\n".to_string()),
        Just("    indented code\n\n".to_string()),
        Just("Setext\n===\n\n".to_string()),
        Just("<div>\nhtml\n</div>\n\n".to_string()),
        Just(format!("{CJK} {FAMILY} {COMBINING}\n")),
        Just("| a | b |\n|---|---|\n| 1 | 2 |\n\n".to_string()),
        "[a-z ]{0,20}\n{0,2}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_chunking_renders_like_the_whole_text(
        parts in prop::collection::vec(fragment(), 1..12),
        cuts in prop::collection::vec(1usize..40, 1..40),
    ) {
        let text: String = parts.concat();
        let theme = UiTheme::plain();
        let mut stream = MarkdownStream::new();
        let mut at = 0;
        let mut cuts = cuts.into_iter().cycle();
        while at < text.len() {
            let mut end = (at + cuts.next().unwrap_or(1)).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            stream.push(&text[at..end], &theme);
            at = end;
        }
        prop_assert_eq!(plain(&stream.lines()), plain(&render(&text, &theme)));
    }

    #[test]
    fn no_size_panics_and_no_row_is_wider_than_the_screen(
        sizes in prop::collection::vec((1u16..=500, 1u16..=200), 1..8),
    ) {
        let mut app = sample_app();
        let (w, h) = sizes[0];
        let mut renderer = InlineRenderer::new(w, h).reflowing(w % 2 == 0);
        for (w, h) in sizes {
            let rebuild = renderer.resize(w, h) == agent_tui::inline::Resize::Width;
            let _ = app.frame(&mut renderer, rebuild, Instant::now());
            let (live, caret) = app.compose(usize::from(w), usize::from(h), Instant::now(), None);
            prop_assert!(live.len() <= usize::from(h));
            for row in &live {
                prop_assert!(line_width(row) <= usize::from(w));
            }
            if let Some((r, c)) = caret {
                prop_assert!(r < live.len() && c <= usize::from(w));
            }
        }
    }
}

#[test]
fn extreme_sizes() {
    for (w, h) in [(1, 1), (1, 200), (500, 1), (500, 200), (2, 2), (3, 1)] {
        let mut app = sample_app();
        let mut renderer = InlineRenderer::new(w, h);
        let _ = app.frame(&mut renderer, false, Instant::now());
        let (live, _) = app.compose(usize::from(w), usize::from(h), Instant::now(), None);
        assert!(live.len() <= usize::from(h));
        assert!(live.iter().all(|r| line_width(r) <= usize::from(w)));
    }
}

#[test]
fn a_huge_line_is_cut_to_what_a_screen_can_show() {
    let mut app = App::new(Transcript::new(UiTheme::plain()), cx(), status());
    app.transcript.notice("x".repeat(1_000_000), false);
    let mut renderer = InlineRenderer::new(80, 24);
    let out = app.frame(&mut renderer, false, Instant::now());
    assert!(out.len() < 80 * agent_tui::inline::MAX_HISTORY_LINE_ROWS + 4096);
}

#[test]
fn tool_output_cannot_drive_the_terminal() {
    let mut app = App::new(Transcript::new(UiTheme::default()), cx(), status());
    app.agent_event(&AgentEvent::ToolExecutionEnd {
        tool_call_id: "c".into(),
        tool_name: "probe".into(),
        result: AgentToolResult::text("a\x00b\x1b]52;c;aGk=\x07c\rd\x1b[2Je\u{202e}f"),
        is_error: false,
        parent_tool_call_id: None,
    });
    let mut renderer = InlineRenderer::new(80, 24);
    let out = app.frame(&mut renderer, false, Instant::now());
    for bad in ["\x00", "\x1b]", "\x07", "\x1b[2J", "\u{202e}"] {
        assert!(!out.contains(bad), "{bad:?} reached the terminal: {out:?}");
    }
    // The lone CR is shown, not obeyed.
    assert!(out.contains("c\u{240d}d"), "{out:?}");
}

#[test]
fn a_panicking_renderer_falls_back_to_the_default_view() {
    use coding_agent::{AgentTool, ToolDefinition, ToolRegistry};
    #[derive(Debug)]
    struct Probe;
    impl AgentTool for Probe {
        fn meta(&self) -> &agent_core::ToolMeta {
            static META: std::sync::OnceLock<agent_core::ToolMeta> = std::sync::OnceLock::new();
            META.get_or_init(|| agent_core::ToolMeta::new("probe", "probes"))
        }
        fn execute(
            &self,
            _params: serde_json::Value,
            _cx: agent_core::ToolCallContext,
        ) -> coding_agent::prelude::BoxFuture<'_, Result<AgentToolResult, agent_core::ToolError>>
        {
            Box::pin(async { Ok(AgentToolResult::text("ok")) })
        }
    }
    let def = ToolDefinition::new(Arc::new(Probe))
        .with_render_call(|_, _, _| panic!("renderer bug"))
        .with_render_result(|_, _, _, _| panic!("renderer bug"));
    let registry = ToolRegistry::new(vec![def]);
    let mut cx = cx();
    cx.registry = Some(registry);
    let mut t = Transcript::new(UiTheme::plain());
    t.push(
        CellKind::Tool(Box::new(ToolCell {
            id: "1".into(),
            name: "probe".into(),
            args: serde_json::json!({"a": 1}),
            status: ToolStatus::Ok,
            partial: None,
            result: Some(AgentToolResult::text("the result")),
            expanded: false,
            nested: Vec::new(),
        })),
        true,
    );
    let lines = t.take_history(&cx, 80);
    assert_eq!(plain(&lines), "* probe {\"a\":1}\n  the result");
}

#[test]
fn tool_calls_are_drawn_while_streaming_and_committed_in_call_order() {
    let mut t = Transcript::new(UiTheme::plain());
    let cx = cx();
    let message = |blocks: Vec<ContentBlock>| {
        Arc::new(AssistantMessage {
            content: blocks,
            ..AssistantMessage::empty("scripted", "model")
        })
    };
    let update = |m: Arc<AssistantMessage>| AgentEvent::MessageUpdate {
        message: m.clone(),
        assistant_message_event: AssistantMessageEvent::ToolCallDelta {
            content_index: 0,
            delta: String::new(),
            partial: m,
        },
    };
    // Arguments still streaming: the call is drawn, pending.
    t.apply(&update(message(vec![tool_call_block(
        "a",
        serde_json::json!({"n": 1}),
    )])));
    assert_eq!(plain(&t.live_rows(&cx, 80)), "* probe {\"n\":1}");
    let both = message(vec![
        tool_call_block("a", serde_json::json!({"n": 1})),
        tool_call_block("b", serde_json::json!({"n": 2})),
    ]);
    t.apply(&update(both.clone()));
    t.apply(&AgentEvent::MessageEnd {
        message: Message::Assistant((*both).clone()),
    });
    for (id, n) in [("a", 1), ("b", 2)] {
        t.apply(&AgentEvent::ToolExecutionStart {
            tool_call_id: id.into(),
            tool_name: "probe".into(),
            args: serde_json::json!({ "n": n }),
            parent_tool_call_id: None,
        });
    }
    t.apply(&AgentEvent::ToolExecutionUpdate {
        tool_call_id: "a".into(),
        tool_name: "probe".into(),
        args: serde_json::json!({}),
        partial_result: AgentToolResult::text("a is working"),
        parent_tool_call_id: None,
    });
    // The second call finishes first: it waits below the first.
    t.apply(&AgentEvent::ToolExecutionEnd {
        tool_call_id: "b".into(),
        tool_name: "probe".into(),
        result: AgentToolResult::text("b done"),
        is_error: false,
        parent_tool_call_id: None,
    });
    assert!(
        t.take_history(&cx, 80).is_empty(),
        "nothing passes the running call"
    );
    let live = plain(&t.live_rows(&cx, 80));
    assert!(
        live.contains("a is working") && live.contains("b done"),
        "{live}"
    );
    t.apply(&AgentEvent::ToolExecutionEnd {
        tool_call_id: "a".into(),
        tool_name: "probe".into(),
        result: AgentToolResult::text("a failed"),
        is_error: true,
        parent_tool_call_id: None,
    });
    let history = plain(&t.take_history(&cx, 80));
    assert_eq!(
        history,
        "x probe {\"n\":1}\n  a failed\n\n* probe {\"n\":2}\n  b done"
    );
    assert!(t.live_rows(&cx, 80).is_empty());
}

#[test]
fn nested_calls_are_drawn_inside_their_parent_cell() {
    let mut t = Transcript::new(UiTheme::plain());
    let cx = cx();
    let start = |id: &str, name: &str, args: serde_json::Value, parent: Option<&str>| {
        AgentEvent::ToolExecutionStart {
            tool_call_id: id.into(),
            tool_name: name.into(),
            args,
            parent_tool_call_id: parent.map(str::to_string),
        }
    };
    let end =
        |id: &str, name: &str, result: AgentToolResult, is_error: bool, parent: Option<&str>| {
            AgentEvent::ToolExecutionEnd {
                tool_call_id: id.into(),
                tool_name: name.into(),
                result,
                is_error,
                parent_tool_call_id: parent.map(str::to_string),
            }
        };
    t.apply(&start(
        "c1",
        "script",
        serde_json::json!({"code": "x"}),
        None,
    ));
    t.apply(&start(
        "c1/1",
        "read",
        serde_json::json!({"path": "a"}),
        Some("c1"),
    ));
    t.apply(&start(
        "c1/2",
        "bash",
        serde_json::json!({"command": "ls"}),
        Some("c1"),
    ));
    // A nested call's progress is no cell and no line of its own.
    t.apply(&AgentEvent::ToolExecutionUpdate {
        tool_call_id: "c1/2".into(),
        tool_name: "bash".into(),
        args: serde_json::json!({}),
        partial_result: AgentToolResult::text("listing"),
        parent_tool_call_id: Some("c1".into()),
    });
    t.apply(&end(
        "c1/2",
        "bash",
        AgentToolResult::error("denied by rule bash(ls)\nsecond line"),
        true,
        Some("c1"),
    ));
    assert_eq!(t.cells().len(), 1, "nested calls are not cells");
    let CellKind::Tool(call) = &t.cells()[0].kind() else {
        panic!("a tool cell");
    };
    let statuses: Vec<_> = call
        .nested
        .iter()
        .map(|n| (n.id.as_str(), n.status))
        .collect();
    assert_eq!(
        statuses,
        [("c1/1", ToolStatus::Running), ("c1/2", ToolStatus::Error)]
    );
    assert_eq!(
        plain(&t.live_rows(&cx, 80)),
        "* script {\"code\":\"x\"}\n  ↳ read {\"path\":\"a\"}\n  ↳ bash {\"command\":\"ls\"}\n    denied by rule bash(ls)"
    );
    assert!(t.take_history(&cx, 80).is_empty(), "the parent still runs");
    t.apply(&end(
        "c1/1",
        "read",
        AgentToolResult::text("aaa"),
        false,
        Some("c1"),
    ));
    t.apply(&end(
        "c1",
        "script",
        AgentToolResult::text("2 calls"),
        false,
        None,
    ));
    let history = plain(&t.take_history(&cx, 80));
    assert_eq!(
        history,
        "* script {\"code\":\"x\"}\n  ↳ read {\"path\":\"a\"}\n  ↳ bash {\"command\":\"ls\"}\n    denied by rule bash(ls)\n  2 calls"
    );
    // A late nested event (a handle kept past the call) changes nothing
    // in a cell the scrollback already holds.
    t.apply(&start(
        "c1/3",
        "read",
        serde_json::json!({"path": "b"}),
        Some("c1"),
    ));
    assert_eq!(t.cells().len(), 1);
    let CellKind::Tool(call) = &t.cells()[0].kind() else {
        panic!("a tool cell");
    };
    assert_eq!(call.nested.len(), 2);
    assert!(t.take_history(&cx, 80).is_empty());
    // A collapsed cell with many nested calls shows the latest ones.
    t.apply(&start("c2", "script", serde_json::json!({}), None));
    for i in 1..=10 {
        let id = format!("c2/{i}");
        t.apply(&start(
            &id,
            "read",
            serde_json::json!({ "n": i }),
            Some("c2"),
        ));
        t.apply(&end(
            &id,
            "read",
            AgentToolResult::text("ok"),
            false,
            Some("c2"),
        ));
    }
    let live = plain(&t.live_rows(&cx, 80));
    assert!(
        live.contains("  ↳ … 2 earlier calls\n  ↳ read {\"n\":3}\n"),
        "{live}"
    );
    assert!(live.ends_with("  ↳ read {\"n\":10}"), "{live}");
}
