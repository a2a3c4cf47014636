//! Highlighted code blocks and diffs in cells: snapshots at four widths
//! with CJK, emoji ZWJ sequences and combining marks, the roles' colours,
//! and control bytes that stay inert inside highlighted code.

use std::time::Instant;

use agent_core::AgentToolResult;
use agent_tool::StyledLine;
use agent_tui::UiTheme;
use agent_tui::app::App;
use agent_tui::cell::{CellKind, ToolCell, ToolStatus};
use agent_tui::inline::InlineRenderer;
use agent_tui::markdown::{MarkdownStream, render};
use agent_tui::text::plain;
use agent_tui::transcript::Transcript;

use crate::support::{CJK, COMBINING, FAMILY, cx, framed, snapshot, status};

fn code_answer() -> String {
    format!(
        "Code:\n\n```rust\n// {CJK} {COMBINING}\nfn main() {{\n    let s = \"{FAMILY} {CJK}\"; // {FAMILY}\n    println!(\"{{}}\", s.len() + 42);\n}}\n```\n\n```no-such-language\nplain {CJK}\n```"
    )
}

fn patch() -> String {
    format!(
        "--- src/漢字.rs\n+++ src/漢字.rs\n@@ -8,4 +8,5 @@ fn main() {{\n     let a = 1;\n-    let b = \"{CJK}\";\n+    let b = \"{FAMILY} {COMBINING} and a line long enough to wrap at every width under test here\";\n+    let c = 3;\n     let d = 4;\n \n@@ -120,2 +121,2 @@\n-old {COMBINING}\n+new {CJK}\n end\n"
    )
}

fn edit_cell(expanded: bool) -> ToolCell {
    ToolCell {
        id: "e1".into(),
        name: "patcher".into(),
        args: serde_json::json!({"path": "src/漢字.rs"}),
        status: ToolStatus::Ok,
        partial: None,
        result: Some(AgentToolResult {
            details: serde_json::json!({"summary": "@@ not a diff", "patch": patch()}),
            ..AgentToolResult::text("Edited src/漢字.rs")
        }),
        expanded,
        nested: Vec::new(),
    }
}

/// `text` of each span with a mark for its style's role: `[k:fn]`.
fn roles(line: &StyledLine, theme: &UiTheme) -> String {
    let s = &theme.syntax;
    line.spans
        .iter()
        .map(|span| {
            let role = match span.style {
                x if x == s.comment => "c",
                x if x == s.keyword => "k",
                x if x == s.string => "s",
                x if x == s.number => "n",
                x if x == s.function => "f",
                x if x == s.type_name => "t",
                _ => return span.text.clone(),
            };
            format!("[{role}:{}]", span.text)
        })
        .collect()
}

#[test]
fn highlighted_code_and_diffs_at_four_widths() {
    let theme = UiTheme::default();
    for width in [20, 40, 80, 120] {
        let lines = render(&code_answer(), &theme);
        let code_roles: Vec<String> = lines.iter().map(|l| roles(l, &theme)).collect();
        let mut t = Transcript::new(theme);
        t.push(CellKind::Tool(Box::new(edit_cell(true))), true);
        let mut c = cx();
        c.theme = theme;
        let rows = t.live_rows(&c, width);
        let text = format!(
            "code (logical lines, roles marked):\n{}\n\ndiff ({width} columns):\n{}\n",
            code_roles.join("\n"),
            framed(&rows, width),
        );
        snapshot(&format!("cells_code_diff_{width}"), &text);
    }
}

#[test]
fn diff_rows_are_tinted_and_keep_the_gutter_when_wrapped() {
    let theme = UiTheme::default();
    let mut t = Transcript::new(theme);
    t.push(CellKind::Tool(Box::new(edit_cell(true))), true);
    let mut c = cx();
    c.theme = theme;
    let rows = t.live_rows(&c, 40);
    let added: Vec<&StyledLine> = rows
        .iter()
        .filter(|r| r.spans.iter().any(|s| s.text.starts_with("+ ")))
        .collect();
    assert_eq!(added.len(), 3, "{}", plain(&rows));
    for row in added {
        let sign = row.spans.iter().find(|s| s.text.starts_with("+ "));
        assert_eq!(sign.map(|s| s.style), Some(theme.tools.diff_added));
    }
    // Continuation rows of the long added line start with the blank gutter.
    let shown = plain(&rows);
    let long = shown
        .lines()
        .position(|l| l.contains("+ ") && l.contains("let b"))
        .expect("the long line");
    let next = shown.lines().nth(long + 1).unwrap_or_default();
    // Two columns of indent, then `old new ± ` with three-digit numbers.
    assert!(
        next.starts_with(&" ".repeat(12)) && !next.starts_with(&" ".repeat(13)),
        "{shown}"
    );
    // Old and new numbers: line 9 removed, 9 and 10 added, 10 -> 11 kept.
    assert!(shown.contains("  9     - "), "{shown}");
    assert!(shown.contains("     10 + "), "{shown}");
    assert!(shown.contains(" 10  11   "), "{shown}");
}

#[test]
fn a_collapsed_diff_shows_a_preview_and_ctrl_o_expands_it() {
    let body: String = (1..=60).map(|i| format!("+line {i}\n")).collect();
    let mut cell = edit_cell(false);
    if let Some(r) = &mut cell.result {
        r.details = serde_json::json!({ "patch": format!("@@ -0,0 +1,60 @@\n{body}") });
    }
    let mut app = App::new(Transcript::new(UiTheme::plain()), cx(), status());
    app.transcript.push(CellKind::Tool(Box::new(cell)), false);
    let (rows, _) = app.compose(80, 200, Instant::now(), None);
    let shown = plain(&rows);
    assert!(
        shown.contains("line 24") && !shown.contains("line 25"),
        "{shown}"
    );
    assert!(
        shown.contains("(36 more diff lines, ctrl+o to expand)"),
        "{shown}"
    );
    app.key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('o'),
        crossterm::event::KeyModifiers::CONTROL,
    ));
    let shown = plain(&app.compose(80, 200, Instant::now(), None).0);
    assert!(
        shown.contains("line 60") && !shown.contains("more diff lines"),
        "{shown}"
    );
}

#[test]
fn control_bytes_in_highlighted_code_and_diffs_stay_inert() {
    let evil = "\x1b]52;c;aGk=\x07\x1b[2J\x00\u{202e}";
    let mut app = App::new(Transcript::new(UiTheme::default()), cx(), status());
    let mut md = MarkdownStream::new();
    md.set(
        &format!("```rust\nlet s = \"{evil}\"; // {evil}\n```"),
        &UiTheme::default(),
    );
    app.transcript.push(CellKind::Assistant(md), true);
    let mut cell = edit_cell(true);
    if let Some(r) = &mut cell.result {
        r.details = serde_json::json!({ "patch": format!("@@ -1 +1 @@\n-a{evil}\n+b{evil}\n") });
    }
    app.transcript.push(CellKind::Tool(Box::new(cell)), true);
    let mut renderer = InlineRenderer::new(80, 24);
    let out = app.frame(&mut renderer, false, Instant::now());
    for bad in ["\x00", "\x1b]", "\x07", "\x1b[2J", "\u{202e}"] {
        assert!(!out.contains(bad), "{bad:?} reached the terminal: {out:?}");
    }
    assert!(out.contains("let"), "{out:?}");
}

#[test]
fn a_streaming_code_block_draws_like_the_whole_text() {
    let theme = UiTheme::default();
    let text = code_answer();
    let mut s = MarkdownStream::new();
    let mut at = 0;
    for (i, _) in text.char_indices().skip(1).step_by(3) {
        s.push(&text[at..i], &theme);
        at = i;
    }
    s.push(&text[at..], &theme);
    assert_eq!(s.lines(), render(&text, &theme));
}

/// Fenced code a model writes, in several languages, with constructs that
/// span lines (block comments, multi-line strings).
fn code_fragment() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        Just(
            "```rust\n/* a\n   b */ fn f(x: u8) -> u8 {\n    x + 1 // one\n}\n```\n\n".to_string()
        ),
        Just("```py\ns = \"\"\"multi\nline\"\"\"\ndef g(): return 0x1f\n```\n\n".to_string()),
        Just(format!(
            "```js\nconst s = `{CJK}\n{FAMILY}`; // {COMBINING}\n```\n\n"
        )),
        Just("```sh\necho \"$HOME\" | grep -c x # count\n```\n\n".to_string()),
        Just("```nope\nunknown language\n```\n\n".to_string()),
        Just("Text between blocks.\n\n".to_string()),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    #[test]
    fn any_chunking_highlights_like_the_whole_text(
        parts in proptest::collection::vec(code_fragment(), 1..6),
        cuts in proptest::collection::vec(1usize..30, 1..30),
    ) {
        let text: String = parts.concat();
        let theme = UiTheme::default();
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
        // Styles included: a resumed block highlights like a fresh one.
        proptest::prop_assert_eq!(stream.lines(), render(&text, &theme));
    }
}
