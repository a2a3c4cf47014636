//! The before and after hooks: what they see, rewritten arguments,
//! overrides, and hook or tool failures as error results.

use std::sync::{Arc, Mutex};

use agent_ai::ContentBlock;
use agent_core::{AfterToolCallResult, AgentToolResult, BeforeToolCallResult, ToolError};
use futures::FutureExt;
use serde_json::json;
use test_support::agent_loop::*;

/// Hooks see the run as the batch began, as Pi's hooks do: the system
/// prompt, the transcript up to the assistant message, the active tools.
#[tokio::test]
async fn hooks_see_the_transcript_tools_and_system_prompt() {
    let (tool, _) = sleeper("sleep").arc();
    let client = scripted(vec![
        calls(&[("c1", "sleep", json!({"ms": 1}))]),
        text("ok"),
    ]);
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (before_seen, after_seen) = (seen.clone(), seen.clone());
    run(client, vec![tool], move |c| {
        c.before_tool_call = Some(Arc::new(move |ctx, _| {
            let cx = &ctx.context;
            before_seen.lock().unwrap().push(format!(
                "before: {} | {} messages, last from {} | tools {:?}",
                cx.system_prompt,
                cx.messages.len(),
                cx.messages.last().map(|m| m.role()).unwrap_or("-"),
                cx.tools
                    .iter()
                    .map(|t| t.name().to_string())
                    .collect::<Vec<_>>()
            ));
            async { Ok(None) }.boxed()
        }));
        c.after_tool_call = Some(Arc::new(move |ctx, _| {
            after_seen
                .lock()
                .unwrap()
                .push(format!("after: {} messages", ctx.context.messages.len()));
            async { Ok(None) }.boxed()
        }));
    })
    .await;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "before: test | 2 messages, last from assistant | tools [\"sleep\"]",
            "after: 2 messages"
        ]
    );
}

#[tokio::test]
async fn rewritten_args_reach_execute_without_revalidation() {
    let (tool, log) = FnTool::new("t", |_, _, _| async { Ok(AgentToolResult::text("ok")) })
        .schema(json!({"type":"object","properties":{"n":{"type":"number"}}}))
        .arc();
    let client = scripted(vec![calls(&[("c1", "t", json!({"n": 1}))]), text("ok")]);
    run(client, vec![tool], |c| {
        c.before_tool_call = Some(Arc::new(|ctx, _| {
            async move {
                assert_eq!(ctx.args, json!({"n": 1}));
                Ok(Some(BeforeToolCallResult::rewrite(
                    json!({"n": "not a number"}),
                )))
            }
            .boxed()
        }));
    })
    .await;
    assert_eq!(log.lock().unwrap()[0].0, json!({"n": "not a number"}));
}

#[tokio::test]
async fn after_hook_override_keeps_untouched_fields() {
    let (tool, _) = FnTool::new("t", |_, _, _| async {
        Ok(AgentToolResult::text("original").with_details(json!({"kept": true})))
    })
    .arc();
    let client = scripted(vec![calls(&[("c1", "t", json!({}))]), text("ok")]);
    let (rec, ctx) = run(client, vec![tool], |c| {
        c.after_tool_call = Some(Arc::new(|ctx, _| {
            async move {
                assert_eq!(ctx.result.text_content(), "original");
                Ok(Some(AfterToolCallResult {
                    content: Some(vec![ContentBlock::text("patched")]),
                    is_error: Some(true),
                    ..Default::default()
                }))
            }
            .boxed()
        }));
    })
    .await;
    let (_, result, is_error) = &rec.ends()[0];
    assert_eq!(result.text_content(), "patched");
    assert_eq!(result.details, json!({"kept": true}));
    assert!(is_error);
    let msg = ctx.messages[2].as_tool_result().unwrap();
    assert!(msg.is_error);
    assert_eq!(msg.details, json!({"kept": true}));
}

#[tokio::test]
async fn hook_errors_become_error_results() {
    let (tool, log) = sleeper("sleep").arc();
    let client = scripted(vec![
        calls(&[("c1", "sleep", json!({"ms": 1}))]),
        text("ok"),
    ]);
    let (rec, _) = run(client, vec![tool.clone()], |c| {
        c.before_tool_call = Some(Arc::new(|_, _| {
            async { Err(agent_core::HookError::new("hook broke")) }.boxed()
        }));
    })
    .await;
    assert_eq!(rec.ends()[0].1.text_content(), "hook broke");
    assert!(log.lock().unwrap().is_empty());

    let client = scripted(vec![
        calls(&[("c1", "sleep", json!({"ms": 1}))]),
        text("ok"),
    ]);
    let (rec, _) = run(client, vec![tool], |c| {
        c.after_tool_call = Some(Arc::new(|_, _| {
            async { Err(agent_core::HookError::new("after broke")) }.boxed()
        }));
    })
    .await;
    let (_, result, is_error) = &rec.ends()[0];
    assert!(is_error);
    assert_eq!(result.text_content(), "after broke");
    assert_eq!(result.details, json!({}));
}

#[tokio::test]
async fn tool_error_and_panic_become_error_results() {
    let (failing, _) = FnTool::new("fail", |_, _, _| async {
        Err(ToolError::new("disk on fire"))
    })
    .arc();
    let (panicking, _) = FnTool::new("boom", |_, _, _| async {
        if true {
            panic!("kaboom");
        }
        Ok(AgentToolResult::text("unreachable"))
    })
    .arc();
    let client = scripted(vec![
        calls(&[("c1", "fail", json!({})), ("c2", "boom", json!({}))]),
        text("still alive"),
    ]);
    let (rec, ctx) = run(client, vec![failing, panicking], |_| {}).await;
    let ends = rec.ends();
    let fail = ends.iter().find(|(id, _, _)| id == "c1").unwrap();
    assert!(fail.2);
    assert_eq!(
        serde_json::to_value(&fail.1).unwrap(),
        json!({"content":[{"type":"text","text":"disk on fire"}],"details":{}})
    );
    let boom = ends.iter().find(|(id, _, _)| id == "c2").unwrap();
    assert!(boom.2);
    assert!(boom.1.text_content().contains("kaboom"));
    let last = ctx.messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.text(), "still alive");
}
