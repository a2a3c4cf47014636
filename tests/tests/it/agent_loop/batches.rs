//! Event order and scheduling of a batch of tool calls, and the calls that
//! fail before they run (unknown, invalid, blocked).

use std::sync::Arc;

use agent_ai::Message;
use agent_core::{AgentEvent, AgentToolResult, BeforeToolCallResult, ExecutionMode};
use futures::FutureExt;
use serde_json::json;
use test_support::agent_loop::*;

#[tokio::test]
async fn one_tool_turn_emits_pis_event_sequence() {
    let (tool, _) = sleeper("sleep").arc();
    let client = scripted(vec![
        calls(&[("c1", "sleep", json!({"ms": 1, "label": "a"}))]),
        text("done"),
    ]);
    let (rec, ctx) = run(client, vec![tool], |_| {}).await;
    assert_eq!(
        rec.kinds(),
        [
            "agent_start",
            "turn_start",
            "message_start(user)",
            "message_end(user)",
            "message_start(assistant)",
            "message_end(assistant)",
            "tool_execution_start",
            "tool_execution_end",
            "message_start(toolResult)",
            "message_end(toolResult)",
            "turn_end",
            "turn_start",
            "message_start(assistant)",
            "message_end(assistant)",
            "turn_end",
            "agent_end",
        ]
    );
    assert!(rec.events().iter().any(|e| e.kind() == "message_update"));
    // user, assistant, toolResult, assistant
    let roles: Vec<_> = ctx.messages.iter().map(Message::role).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    let result = ctx.messages[2].as_tool_result().unwrap();
    assert_eq!(result.text(), "slept a");
    assert!(!result.is_error);
    assert_eq!(result.tool_call_id, "c1");
}

#[tokio::test]
async fn parallel_batch_ends_in_completion_order_but_results_in_source_order() {
    let (tool, _) = sleeper("sleep").arc();
    let client = scripted(vec![
        calls(&[
            ("slow", "sleep", json!({"ms": 300, "label": "slow"})),
            ("fast", "sleep", json!({"ms": 10, "label": "fast"})),
        ]),
        text("done"),
    ]);
    let (rec, ctx) = run(client, vec![tool], |_| {}).await;
    assert_eq!(rec.starts(), ["slow", "fast"]);
    // The slow call started first and ended last: the two overlapped (run
    // one after the other, "slow" would have ended first).
    let ends: Vec<_> = rec.ends().into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(ends, ["fast", "slow"]);
    let turn_end = rec
        .events()
        .into_iter()
        .find_map(|e| match e {
            AgentEvent::TurnEnd { tool_results, .. } if !tool_results.is_empty() => {
                Some(tool_results)
            }
            _ => None,
        })
        .unwrap();
    let ids: Vec<_> = turn_end.iter().map(|r| r.tool_call_id.as_str()).collect();
    assert_eq!(ids, ["slow", "fast"]);
    let ctx_ids: Vec<_> = ctx
        .messages
        .iter()
        .filter_map(|m| m.as_tool_result().map(|r| r.tool_call_id.clone()))
        .collect();
    assert_eq!(ctx_ids, ["slow", "fast"]);
    // toolResult message events come after both ends, in source order.
    let kinds = rec.kinds();
    let last_end = kinds
        .iter()
        .rposition(|k| k == "tool_execution_end")
        .unwrap();
    let first_result = kinds
        .iter()
        .position(|k| k == "message_start(toolResult)")
        .unwrap();
    assert!(first_result > last_end);
}

#[tokio::test]
async fn a_sequential_tool_makes_the_whole_batch_serial() {
    let (slow, slow_calls) = sleeper("slow").arc();
    let (seq, seq_calls) = sleeper("seq").sequential().arc();
    let client = scripted(vec![
        calls(&[
            ("a", "slow", json!({"ms": 150})),
            ("b", "seq", json!({"ms": 10})),
            ("c", "slow", json!({"ms": 10})),
        ]),
        text("done"),
    ]);
    let (rec, _) = run(client, vec![slow, seq], |_| {}).await;
    let ends: Vec<_> = rec.ends().into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(ends, ["a", "b", "c"]);
    let slow_calls = slow_calls.lock().unwrap();
    let seq_calls = seq_calls.lock().unwrap();
    // a ends before b starts; b ends before c starts.
    assert!(slow_calls[0].2 <= seq_calls[0].1);
    assert!(seq_calls[0].2 <= slow_calls[1].1);
    // Sequential mode interleaves start/end per call.
    let kinds: Vec<_> = rec
        .kinds()
        .into_iter()
        .filter(|k| k.starts_with("tool_execution") || k.contains("toolResult"))
        .collect();
    assert_eq!(
        &kinds[..4],
        [
            "tool_execution_start",
            "tool_execution_end",
            "message_start(toolResult)",
            "message_end(toolResult)"
        ]
    );
}

#[tokio::test]
async fn config_sequential_serialises_plain_tools() {
    let (tool, calls_log) = sleeper("sleep").arc();
    let client = scripted(vec![
        calls(&[
            ("a", "sleep", json!({"ms": 80})),
            ("b", "sleep", json!({"ms": 5})),
        ]),
        text("done"),
    ]);
    let (rec, _) = run(client, vec![tool], |c| {
        c.tool_execution = ExecutionMode::Sequential
    })
    .await;
    let ends: Vec<_> = rec.ends().into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(ends, ["a", "b"]);
    let log = calls_log.lock().unwrap();
    assert!(log[0].2 <= log[1].1);
}

#[tokio::test]
async fn unknown_tool_is_an_error_result() {
    let client = scripted(vec![calls(&[("c1", "nope", json!({}))]), text("ok")]);
    let (rec, _) = run(client, vec![], |_| {}).await;
    let (_, result, is_error) = &rec.ends()[0];
    assert!(is_error);
    assert_eq!(result.text_content(), "Tool nope not found");
    assert_eq!(result.details, json!({}));
}

#[tokio::test]
async fn validation_failure_has_pis_message_shape_and_never_executes() {
    let (tool, log) = FnTool::new("read", |_, _, _| async { Ok(AgentToolResult::text("ran")) })
        .schema(json!({
            "type":"object",
            "properties":{"path":{"type":"string"},"limit":{"type":"number"}},
            "required":["path"]
        }))
        .arc();
    let client = scripted(vec![
        calls(&[("c1", "read", json!({"limit": "many"}))]),
        text("ok"),
    ]);
    let (rec, _) = run(client, vec![tool], |_| {}).await;
    let (_, result, is_error) = &rec.ends()[0];
    assert!(is_error);
    let text = result.text_content();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("Validation failed for tool \"read\":"));
    let problems: Vec<&str> = text.lines().filter(|l| l.starts_with("  - ")).collect();
    assert_eq!(problems.len(), 2, "{text}");
    assert!(
        problems.iter().any(|l| l.starts_with("  - path: ")),
        "{text}"
    );
    assert!(
        problems.iter().any(|l| l.starts_with("  - limit: ")),
        "{text}"
    );
    assert!(
        text.ends_with("\n\nReceived arguments:\n{\n  \"limit\": \"many\"\n}"),
        "{text}"
    );
    assert!(log.lock().unwrap().is_empty());
}

#[tokio::test]
async fn numeric_strings_are_coerced_before_execute() {
    let (tool, log) = FnTool::new("t", |_, _, _| async { Ok(AgentToolResult::text("ok")) })
        .schema(json!({"type":"object","properties":{"n":{"type":"integer"},"flag":{"type":"boolean"}}}))
        .arc();
    let client = scripted(vec![
        calls(&[("c1", "t", json!({"n": "5", "flag": "true"}))]),
        text("ok"),
    ]);
    let (rec, _) = run(client, vec![tool], |_| {}).await;
    assert_eq!(log.lock().unwrap()[0].0, json!({"n": 5, "flag": true}));
    // Events keep the raw arguments.
    let raw = rec
        .events()
        .into_iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionStart { args, .. } => Some(args),
            _ => None,
        })
        .unwrap();
    assert_eq!(raw, json!({"n": "5", "flag": "true"}));
}

#[tokio::test]
async fn blocked_call_never_executes() {
    let (tool, log) = sleeper("sleep").arc();
    let client = scripted(vec![
        calls(&[
            ("c1", "sleep", json!({"ms": 1})),
            ("c2", "sleep", json!({"ms": 1})),
        ]),
        text("ok"),
    ]);
    let (rec, _) = run(client, vec![tool], |c| {
        c.before_tool_call = Some(Arc::new(|ctx, _| {
            async move {
                Ok(match ctx.tool_call.id.as_str() {
                    "c1" => Some(BeforeToolCallResult::block("not allowed here")),
                    _ => Some(BeforeToolCallResult {
                        block: true,
                        ..Default::default()
                    }),
                })
            }
            .boxed()
        }));
    })
    .await;
    assert!(log.lock().unwrap().is_empty());
    let ends = rec.ends();
    assert_eq!(ends[0].1.text_content(), "not allowed here");
    assert_eq!(ends[1].1.text_content(), "Tool execution was blocked");
    assert!(ends.iter().all(|(_, _, e)| *e));
}
