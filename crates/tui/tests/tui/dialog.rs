//! The permission dialog: `r` sends a reason the model reads (through a
//! real session, gate and scripted model), a long command scrolls, and the
//! reason row edits and cancels.

use std::sync::Arc;
use std::time::Instant;

use agent_ai::providers::scripted::{ScriptedClient, ScriptedTurn};
use agent_ai::{ContentBlock, Message, Model};
use agent_core::AgentToolResult;
use agent_permissions::{
    Permission, PermissionAnswer, PermissionDecision, PermissionGate, PermissionPrompt,
    PermissionRequest, PermissionRules, ToolShape,
};
use agent_tui::UiTheme;
use agent_tui::app::App;
use agent_tui::text::plain;
use agent_tui::transcript::Transcript;
use coding_agent::{AgentSessionBuilder, AgentTool, ToolDefinition};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::support::{cx, press, status, typed};

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
    ) -> coding_agent::prelude::BoxFuture<'_, Result<AgentToolResult, agent_core::ToolError>> {
        Box::pin(async { Ok(AgentToolResult::text("the probe ran")) })
    }
}

fn turn(value: serde_json::Value) -> ScriptedTurn {
    serde_json::from_value(value).expect("a scripted turn")
}

#[tokio::test]
async fn r_refuses_with_a_reason_the_model_reads() {
    let dir = std::env::temp_dir().join(format!("agent-tui-reason-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let client = Arc::new(
        ScriptedClient::new(vec![
            turn(serde_json::json!({"content": [
                {"type": "toolCall", "id": "c1", "name": "probe", "arguments": {}}
            ]})),
            turn(serde_json::json!({"content": [{"type": "text", "text": "understood"}]})),
        ])
        .with_request_log(),
    );
    let (prompt, mut questions) = agent_tui::permission_channel();
    let rules = PermissionRules::from_lists(&[], &["probe"], &[], &dir).expect("rules");
    let session = AgentSessionBuilder::new(Model::new("scripted", "model"), client.clone())
        .settings(coding_agent::Settings::default())
        .cwd(&dir)
        .context_files(false)
        .tool(ToolDefinition::new(Arc::new(Probe)))
        .permissions(PermissionGate::new(
            rules,
            Some(Arc::new(prompt)),
            &dir,
            "tests",
        ))
        .build()
        .expect("a session");
    let run = tokio::spawn({
        let session = session.clone();
        async move { session.prompt("probe it".to_string()).await }
    });
    let question = tokio::time::timeout(std::time::Duration::from_secs(60), questions.recv())
        .await
        .expect("asked in time")
        .expect("a question");
    let mut app = App::new(Transcript::new(UiTheme::plain()), cx(), status());
    app.permissions.push(question);
    press(&mut app, KeyCode::Char('r'));
    typed(&mut app, "use the dry-run flag");
    // Esc goes back to the question, keeping nothing; `r` starts afresh.
    press(&mut app, KeyCode::Esc);
    assert!(
        app.permissions.is_open(),
        "Esc in the reason row is not an answer"
    );
    press(&mut app, KeyCode::Char('r'));
    typed(&mut app, "use the dry-rnu");
    press(&mut app, KeyCode::Backspace);
    press(&mut app, KeyCode::Backspace);
    typed(&mut app, "un flag");
    let (rows, caret) = app.compose(60, 30, Instant::now(), None);
    let shown = plain(&rows);
    let (row, col) = caret.expect("the caret sits in the reason row");
    assert_eq!(
        rows[row].to_plain(),
        "Reason: use the dry-run flag",
        "{shown}"
    );
    assert_eq!(col, "Reason: use the dry-run flag".len());
    press(&mut app, KeyCode::Enter);
    assert!(!app.permissions.is_open());
    tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("the run ends")
        .expect("the task")
        .expect("the run");
    let requests = client.requests();
    let last = requests.last().expect("a second request");
    let refusal = last
        .messages
        .iter()
        .find_map(|m| match m {
            Message::ToolResult(r) => Some(r),
            _ => None,
        })
        .expect("the refused call's result");
    assert!(refusal.is_error);
    let text: String = refusal
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.contains("Permission refused by the user"), "{text}");
    assert!(
        text.contains("The user says: use the dry-run flag"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn long_request(lines: usize) -> PermissionRequest {
    let command: Vec<String> = (1..=lines).map(|i| format!("echo step {i}")).collect();
    PermissionRequest {
        tool: "shell".into(),
        shape: ToolShape {
            command: Some("command".into()),
            ..ToolShape::named("shell")
        },
        args: serde_json::json!({ "command": command.join("\n") }),
        decision: PermissionDecision {
            permission: Permission::Ask,
            rule: None,
            subject: None,
        },
    }
}

#[tokio::test]
async fn a_long_command_scrolls_and_the_keys_stay_in_view() {
    let (prompt, mut questions) = agent_tui::permission_channel();
    let answer = prompt.ask(long_request(40));
    let mut app = App::new(Transcript::new(UiTheme::plain()), cx(), status());
    app.permissions
        .push(questions.recv().await.expect("a question"));
    let (rows, _) = app.compose(60, 16, Instant::now(), None);
    let shown = plain(&rows);
    assert!(rows.len() <= 16);
    assert!(shown.contains("echo step 1\\necho step 2"), "{shown}");
    assert!(!shown.contains("$ echo step 40"), "{shown}");
    assert!(shown.contains("[r] no, with a reason"), "{shown}");
    assert!(shown.contains("(lines 1-"), "{shown}");
    press(&mut app, KeyCode::Down);
    let shown = plain(&app.compose(60, 16, Instant::now(), None).0);
    assert!(shown.contains("(lines 2-"), "{shown}");
    press(&mut app, KeyCode::End);
    let shown = plain(&app.compose(60, 16, Instant::now(), None).0);
    assert!(shown.contains("$ echo step 40"), "{shown}");
    // The window ends at the body's last row.
    let window = shown
        .split("(lines ")
        .nth(1)
        .and_then(|w| w.split(';').next())
        .unwrap_or_default();
    let (range, total) = window.split_once(" of ").unwrap_or_default();
    assert!(range.ends_with(&format!("-{total}")), "{shown}");
    // Ctrl+C refuses and interrupts.
    let action = app.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert_eq!(action, Some(agent_tui::app::Action::Interrupt));
    assert_eq!(answer.await, PermissionAnswer::No);
}

#[tokio::test]
async fn a_reason_row_takes_pastes_on_one_line_and_an_empty_reason_is_a_plain_no() {
    let (prompt, mut questions) = agent_tui::permission_channel();
    let first = prompt.ask(long_request(1));
    let second = prompt.ask(long_request(2));
    let mut app = App::new(Transcript::new(UiTheme::plain()), cx(), status());
    for _ in 0..2 {
        app.permissions
            .push(questions.recv().await.expect("a question"));
    }
    press(&mut app, KeyCode::Char('r'));
    app.paste("line one\nline\x1b[2J two");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        first.await,
        PermissionAnswer::NoBecause("line one line[2J two".into())
    );
    press(&mut app, KeyCode::Char('r'));
    typed(&mut app, "   ");
    press(&mut app, KeyCode::Enter);
    assert_eq!(second.await, PermissionAnswer::No);
}

fn request(command: &str) -> agent_permissions::PermissionRequest {
    use agent_permissions::{Permission, PermissionDecision, PermissionRequest, ToolShape};
    PermissionRequest {
        tool: "probe".into(),
        shape: ToolShape::named("probe"),
        args: serde_json::json!({"command": command}),
        decision: PermissionDecision {
            permission: Permission::Ask,
            rule: None,
            subject: None,
        },
    }
}

#[tokio::test]
async fn a_permission_question_replaces_the_editor_and_parallel_ones_queue() {
    use agent_permissions::{PermissionAnswer, PermissionPrompt};
    use crossterm::event::KeyCode;
    let (prompt, mut questions) = agent_tui::permission_channel();
    let first = prompt.ask(request("rm -rf build"));
    let second = prompt.ask(request("git push"));
    let mut app = App::new(Transcript::new(UiTheme::plain()), cx(), status());
    typed(&mut app, "draft");
    for _ in 0..2 {
        let q = questions.recv().await.expect("a question");
        app.permissions.push(q);
    }
    let (rows, caret) = app.compose(60, 30, Instant::now(), None);
    let shown = plain(&rows);
    assert!(caret.is_none(), "no caret while a question waits");
    assert!(
        shown.contains("Allow probe?") && shown.contains("rm -rf build"),
        "{shown}"
    );
    assert!(
        shown.contains("(1 more waiting)") && !shown.contains("draft"),
        "{shown}"
    );
    // Keys that are not answers do nothing, and do not reach the editor.
    typed(&mut app, "x");
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(first.await, PermissionAnswer::Yes);
    let shown = plain(&app.compose(60, 30, Instant::now(), None).0);
    assert!(
        shown.contains("git push") && !shown.contains("more waiting"),
        "{shown}"
    );
    press(&mut app, KeyCode::Esc);
    assert_eq!(second.await, PermissionAnswer::No);
    let (rows, caret) = app.compose(60, 30, Instant::now(), None);
    assert!(caret.is_some());
    assert!(plain(&rows).contains("> draft"));
    assert_eq!(app.editor.text(), "draft");
}

#[tokio::test]
async fn the_dialog_fits_any_small_screen() {
    let (prompt, mut questions) = agent_tui::permission_channel();
    let _pending = prompt.ask(long_request(30));
    let mut app = App::new(Transcript::new(UiTheme::plain()), cx(), status());
    app.permissions
        .push(questions.recv().await.expect("a question"));
    for reason in [false, true] {
        if reason {
            press(&mut app, KeyCode::Char('r'));
            typed(
                &mut app,
                "漢字 and a reason longer than any of these screens",
            );
        }
        for width in 1..=12 {
            for height in 1..=8 {
                let (rows, caret) = app.compose(width, height, Instant::now(), None);
                assert!(rows.len() <= height, "{width}x{height}");
                for row in &rows {
                    assert!(
                        agent_tui::text::line_width(row) <= width,
                        "{width}x{height}"
                    );
                }
                if let Some((r, c)) = caret {
                    assert!(r < rows.len() && c < width, "{width}x{height}");
                }
                press(&mut app, KeyCode::Down);
            }
        }
    }
}
