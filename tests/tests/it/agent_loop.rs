//! The loop's observable behaviour: event order, scheduling, preparation
//! failures, hooks, termination, steering and cancellation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_ai::{ContentBlock, Message, StopReason};
use agent_core::{
    AfterToolCallResult, Agent, AgentEvent, AgentOptions, AgentToolResult, BeforeToolCallResult,
    CancellationToken, ExecutionMode, ToolError,
};
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

fn terminating(name: &str, terminate: bool) -> std::sync::Arc<dyn agent_core::AgentTool> {
    FnTool::new(name, move |_, _, _| async move {
        let mut r = AgentToolResult::text("t");
        r.terminate = terminate;
        Ok(r)
    })
    .arc()
    .0
}

#[tokio::test]
async fn terminate_only_when_every_result_asks() {
    let client = scripted(vec![
        calls(&[("c1", "yes", json!({})), ("c2", "yes", json!({}))]),
        text("should not be requested"),
    ]);
    let (_, ctx) = run(client.clone(), vec![terminating("yes", true)], |_| {}).await;
    assert_eq!(client.remaining(), 1, "loop stopped after the batch");
    assert_eq!(ctx.messages.last().unwrap().role(), "toolResult");

    let client = scripted(vec![
        calls(&[("c1", "yes", json!({})), ("c2", "no", json!({}))]),
        text("continued"),
    ]);
    let (_, ctx) = run(
        client.clone(),
        vec![terminating("yes", true), terminating("no", false)],
        |_| {},
    )
    .await;
    assert_eq!(client.remaining(), 0);
    assert_eq!(
        ctx.messages.last().unwrap().as_assistant().unwrap().text(),
        "continued"
    );
}

#[tokio::test]
async fn length_stop_runs_no_tool_and_continues() {
    let (tool, log) = sleeper("sleep").arc();
    let mut turn = calls(&[("c1", "sleep", json!({"ms": 1}))]);
    turn["stopReason"] = json!("length");
    let client = scripted(vec![turn, text("retrying")]);
    let (rec, ctx) = run(client, vec![tool], |_| {}).await;
    assert!(log.lock().unwrap().is_empty());
    let (_, result, is_error) = &rec.ends()[0];
    assert!(is_error);
    assert_eq!(
        result.text_content(),
        "Tool call \"sleep\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments."
    );
    assert_eq!(
        ctx.messages.last().unwrap().as_assistant().unwrap().text(),
        "retrying"
    );
}

#[tokio::test]
async fn updates_are_forwarded_and_late_ones_dropped() {
    let late = Arc::new(Mutex::new(None));
    let late2 = late.clone();
    let (tool, _) = FnTool::new("t", move |_, _, updates| {
        let late = late2.clone();
        async move {
            updates.send(AgentToolResult::text("half"));
            *late.lock().unwrap() = Some(updates);
            Ok(AgentToolResult::text("done"))
        }
    })
    .arc();
    let client = scripted(vec![calls(&[("c1", "t", json!({}))]), text("ok")]);
    let (rec, _) = run(client, vec![tool], |_| {}).await;
    late.lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .send(AgentToolResult::text("too late"));
    let updates: Vec<String> = rec
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionUpdate { partial_result, .. } => {
                Some(partial_result.text_content())
            }
            _ => None,
        })
        .collect();
    assert_eq!(updates, ["half"]);
    let kinds = rec.kinds();
    let update = kinds
        .iter()
        .position(|k| k == "tool_execution_update")
        .unwrap();
    let end = kinds
        .iter()
        .position(|k| k == "tool_execution_end")
        .unwrap();
    assert!(update < end);
}

#[tokio::test]
async fn added_tool_names_reach_the_message() {
    let (tool, _) = FnTool::new("t", |_, _, _| async {
        let mut r = AgentToolResult::text("ok");
        r.added_tool_names = vec!["new_tool".into()];
        Ok(r)
    })
    .arc();
    let client = scripted(vec![calls(&[("c1", "t", json!({}))]), text("ok")]);
    let (_, ctx) = run(client, vec![tool], |_| {}).await;
    let json = serde_json::to_value(&ctx.messages[2]).unwrap();
    assert_eq!(json["addedToolNames"], json!(["new_tool"]));
    let json = serde_json::to_value(&ctx.messages[0]).unwrap();
    assert!(json.get("addedToolNames").is_none());
}

#[tokio::test]
async fn steering_message_lands_after_the_batch() {
    let (tool, _) = sleeper("sleep").arc();
    let client = scripted(vec![
        calls(&[
            ("c1", "sleep", json!({"ms": 200})),
            ("c2", "sleep", json!({"ms": 10})),
        ]),
        text("saw steering"),
    ]);
    let mut opts = AgentOptions::new(model(), client.clone());
    opts.tools = vec![tool];
    let agent = Agent::new(opts);
    let steered = Arc::new(AtomicUsize::new(0));
    let (a, s) = (agent.clone(), steered.clone());
    agent.subscribe(move |e| {
        if e.kind() == "tool_execution_start" && s.fetch_add(1, Ordering::SeqCst) == 0 {
            a.steer("change of plan");
        }
    });
    agent.prompt("start").await.unwrap();
    let roles: Vec<String> = agent
        .messages()
        .iter()
        .map(|m| match m {
            Message::User(u) => format!("user:{}", u.content.to_blocks()[0].as_text().unwrap()),
            other => other.role().to_string(),
        })
        .collect();
    assert_eq!(
        roles,
        [
            "user:start",
            "assistant",
            "toolResult",
            "toolResult",
            "user:change of plan",
            "assistant"
        ]
    );
    // The second request saw both results and the steering message.
    let second = &client.requests()[1];
    assert_eq!(second.messages.len(), 5);
}

#[tokio::test]
async fn follow_up_starts_a_new_turn_when_the_agent_would_stop() {
    let client = scripted(vec![text("first"), text("second")]);
    let agent = Agent::new(AgentOptions::new(model(), client.clone()));
    agent.follow_up("and then?");
    agent.prompt("hi").await.unwrap();
    let texts: Vec<String> = agent
        .messages()
        .iter()
        .map(|m| match m {
            Message::User(u) => u.content.to_blocks()[0].as_text().unwrap().to_string(),
            Message::Assistant(a) => a.text(),
            Message::ToolResult(r) => r.text(),
        })
        .collect();
    assert_eq!(texts, ["hi", "first", "and then?", "second"]);
}

#[tokio::test]
async fn abort_mid_tool_stops_the_run_with_an_aborted_message() {
    let (tool, _) = sleeper("sleep").arc();
    let client = scripted(vec![
        calls(&[("c1", "sleep", json!({"ms": 30_000}))]),
        text("never"),
    ]);
    let mut opts = AgentOptions::new(model(), client.clone());
    opts.tools = vec![tool];
    let agent = Agent::new(opts);
    let a = agent.clone();
    agent.subscribe(move |e| {
        if e.kind() == "tool_execution_start" {
            let a = a.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                a.abort();
            });
        }
    });
    let started = std::time::Instant::now();
    let err = agent.prompt("go").await.unwrap_err();
    assert!(matches!(err, agent_core::AgentError::Aborted(_)), "{err}");
    assert_eq!(err.outcome().unwrap().stop_reason, StopReason::Aborted);
    assert!(started.elapsed() < Duration::from_secs(5)); // hang guard
    let messages = agent.messages();
    let result = messages[2].as_tool_result().unwrap();
    assert!(result.is_error);
    assert_eq!(result.text(), "Operation aborted");
    let last = messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert!(!agent.is_running());
    // The scripted "never" turn was not consumed by a real request.
    assert_eq!(client.remaining(), 1);
}

#[tokio::test]
async fn prompt_while_running_is_refused() {
    let client = scripted(vec![
        json!({"content":[{"type":"text","text":"slow"}],"delayMs":300}),
    ]);
    let agent = Agent::new(AgentOptions::new(model(), client));
    let a = agent.clone();
    let run = tokio::spawn(async move { a.prompt("one").await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        agent.prompt("two").await,
        Err(agent_core::AgentError::AlreadyRunning)
    );
    run.await.unwrap().unwrap();
    agent.wait_for_idle().await;
    assert!(!agent.is_running());
}

#[tokio::test]
async fn model_error_ends_the_run() {
    let client = scripted(vec![
        json!({"content":[],"stopReason":"error","errorMessage":"upstream 500"}),
    ]);
    let (rec, ctx) = run(client, vec![], |_| {}).await;
    let kinds = rec.kinds();
    assert_eq!(kinds[kinds.len() - 2], "turn_end");
    assert_eq!(kinds[kinds.len() - 1], "agent_end");
    let last = ctx.messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(last.error_message.as_deref(), Some("upstream 500"));
}

/// Every tool call of `message` has exactly one toolResult right after it.
fn every_call_answered(messages: &[Message]) {
    for (i, m) in messages.iter().enumerate() {
        let Some(a) = m.as_assistant() else { continue };
        let ids: Vec<String> = a.tool_calls().map(|c| c.id.clone()).collect();
        let answered: Vec<String> = messages[i + 1..]
            .iter()
            .map_while(|m| m.as_tool_result())
            .map(|r| r.tool_call_id.clone())
            .collect();
        assert_eq!(answered, ids, "calls of message {i} without results");
    }
}

/// Runs `calls` c1..c3 with `configure`, aborting once `abort_when` sees its
/// event; then a second prompt. Returns the events, the agent's messages and
/// the requests the model got.
async fn abort_batch(
    tool: Arc<dyn agent_core::AgentTool>,
    configure: impl FnOnce(&mut AgentOptions),
    abort_when: &'static str,
) -> (Recorder, Vec<Message>, Vec<agent_ai::Context>) {
    let client = scripted(vec![
        calls(&[
            ("c1", "t", json!({"ms": 30_000})),
            ("c2", "t", json!({"ms": 1})),
            ("c3", "t", json!({"ms": 1})),
        ]),
        text("after the abort"),
    ]);
    let mut opts = AgentOptions::new(model(), client.clone());
    opts.tools = vec![tool];
    configure(&mut opts);
    let agent = Agent::new(opts);
    let rec = Recorder::default();
    let sink = rec.sink();
    agent.subscribe(move |e| sink(e));
    let a = agent.clone();
    agent.subscribe(move |e| {
        if e.kind() == abort_when {
            let a = a.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                a.abort();
            });
        }
    });
    let err = agent.prompt("go").await.unwrap_err();
    assert!(matches!(err, agent_core::AgentError::Aborted(_)), "{err}");
    agent.prompt("again").await.unwrap();
    (rec, agent.messages(), client.requests())
}

fn assert_all_aborted(rec: &Recorder, messages: &[Message], requests: &[agent_ai::Context]) {
    // Start and end events for every call, in source order for the starts.
    assert_eq!(rec.starts(), ["c1", "c2", "c3"]);
    let ends = rec.ends();
    let mut ended: Vec<&str> = ends.iter().map(|(id, _, _)| id.as_str()).collect();
    ended.sort();
    assert_eq!(ended, ["c1", "c2", "c3"]);
    for (id, result, is_error) in &ends {
        assert!(*is_error, "{id}");
        assert_eq!(result.text_content(), "Operation aborted", "{id}");
    }
    // A toolResult message for each, and the next request carries them all.
    let results: Vec<_> = messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| (r.tool_call_id.clone(), r.text(), r.is_error))
        .collect();
    assert_eq!(
        results,
        ["c1", "c2", "c3"].map(|id| (id.to_string(), "Operation aborted".to_string(), true))
    );
    every_call_answered(messages);
    let last = requests.last().expect("a second request");
    every_call_answered(&last.messages);
    assert_eq!(
        last.messages
            .iter()
            .filter(|m| m.as_tool_result().is_some())
            .count(),
        3
    );
}

#[tokio::test]
async fn abort_during_preparation_answers_every_call_of_the_batch() {
    // The hook of c1 waits (as a permission question does) until the abort.
    let (tool, log) = sleeper("t").arc();
    let (rec, messages, requests) = abort_batch(
        tool,
        |o| {
            o.before_tool_call = Some(Arc::new(|ctx, cancel| {
                async move {
                    if ctx.tool_call.id == "c1" {
                        cancel.cancelled().await;
                    }
                    Ok(None)
                }
                .boxed()
            }));
        },
        "tool_execution_start",
    )
    .await;
    assert!(
        log.lock().unwrap().is_empty(),
        "no call may run after the abort"
    );
    assert_all_aborted(&rec, &messages, &requests);
}

#[tokio::test]
async fn abort_during_a_sequential_batch_answers_the_later_calls() {
    let (tool, log) = sleeper("t").sequential().arc();
    let (rec, messages, requests) = abort_batch(tool, |_| {}, "tool_execution_start").await;
    // Only c1 ran; c2 and c3 never started but are answered.
    assert_eq!(log.lock().unwrap().len(), 1);
    assert_all_aborted(&rec, &messages, &requests);
}

#[tokio::test]
async fn abort_while_parallel_calls_wait_for_a_slot_runs_none_of_them() {
    let (tool, log) = sleeper("t").arc();
    let (rec, messages, requests) =
        abort_batch(tool, |o| o.max_parallel_tools = 1, "tool_execution_start").await;
    assert_eq!(log.lock().unwrap().len(), 1);
    assert_all_aborted(&rec, &messages, &requests);
}

#[tokio::test]
async fn calls_of_a_cut_off_response_are_answered_not_run() {
    for (stop, expected) in [
        ("aborted", "Operation aborted"),
        (
            "error",
            "Tool call \"t\" was not executed: the response failed before it was complete.",
        ),
    ] {
        let (tool, log) = sleeper("t").arc();
        let client = scripted(vec![
            json!({"content": [
                {"type": "toolCall", "id": "c1", "name": "t", "arguments": {"ms": 1}},
                {"type": "toolCall", "id": "c2", "name": "t", "arguments": {"ms": 1}}],
                "stopReason": stop, "errorMessage": "cut off"}),
            text("next"),
        ]);
        let mut opts = AgentOptions::new(model(), client.clone());
        opts.tools = vec![tool];
        let agent = Agent::new(opts);
        let rec = Recorder::default();
        let sink = rec.sink();
        agent.subscribe(move |e| sink(e));
        let err = agent.prompt("go").await.unwrap_err();
        assert_eq!(json!(err.outcome().unwrap().stop_reason), json!(stop));
        assert!(log.lock().unwrap().is_empty(), "{stop}: nothing runs");
        assert_eq!(rec.starts(), ["c1", "c2"]);
        for (_, result, is_error) in rec.ends() {
            assert!(is_error);
            assert_eq!(result.text_content(), expected);
        }
        let turn_end = rec
            .events()
            .into_iter()
            .find_map(|e| match e {
                AgentEvent::TurnEnd { tool_results, .. } => Some(tool_results.len()),
                _ => None,
            })
            .unwrap();
        assert_eq!(turn_end, 2);
        agent.prompt("again").await.unwrap();
        every_call_answered(&client.requests().last().unwrap().messages);
    }
}

/// The message each `message_update` shows, rebuilt from the deltas alone.
fn replay_updates(updates: &[(usize, Option<String>, Vec<String>)]) {
    let mut rebuilt: Vec<String> = Vec::new();
    for (index, delta, shown) in updates {
        if *index == 0 && delta.is_none() && shown.iter().all(String::is_empty) {
            rebuilt.clear(); // the next turn's message
        }
        if rebuilt.len() <= *index {
            rebuilt.resize(index + 1, String::new());
        }
        if let Some(delta) = delta {
            rebuilt[*index].push_str(delta);
        }
        assert_eq!(shown.len(), index + 1, "blocks shown at block {index}");
        for (i, text) in rebuilt.iter().enumerate() {
            // A finished tool call shows its id; text blocks show their text.
            if !text.is_empty() {
                assert_eq!(&shown[i], text, "block {i} at an update of block {index}");
            }
        }
    }
}

#[tokio::test]
async fn every_update_shows_the_message_so_far_whether_sinks_keep_events_or_not() {
    use agent_ai::AssistantMessageEvent as E;
    let long = "a long answer streamed in many deltas; ".repeat(20);
    let turn = json!({"content": [
        {"type": "text", "text": long},
        {"type": "thinking", "thinking": "why: ".repeat(30)},
        tool_call("c1", "sleep", json!({"ms": 1, "label": "a"})),
        {"type": "text", "text": "and more text after the call ".repeat(10)},
    ]});
    let (tool, _) = sleeper("sleep").arc();
    // This sink keeps nothing (as the CLI's printer): the provider reuses
    // buffers. The recorder inside `run` keeps every event: it copies.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    let config_sink: agent_core::EventSink = Arc::new(move |event: &AgentEvent| {
        if let AgentEvent::MessageUpdate {
            message,
            assistant_message_event,
        } = event
        {
            let (index, delta) = match assistant_message_event {
                E::TextDelta {
                    content_index,
                    delta,
                    ..
                }
                | E::ThinkingDelta {
                    content_index,
                    delta,
                    ..
                } => (*content_index, Some(delta.clone())),
                E::TextStart { content_index, .. }
                | E::ThinkingStart { content_index, .. }
                | E::TextEnd { content_index, .. }
                | E::ThinkingEnd { content_index, .. }
                | E::ToolCallStart { content_index, .. }
                | E::ToolCallDelta { content_index, .. }
                | E::ToolCallEnd { content_index, .. } => (*content_index, None),
                _ => return,
            };
            assert!(std::ptr::eq(
                message.as_ref(),
                assistant_message_event.message()
            ));
            let shown = message
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text(t) => t.text.clone(),
                    ContentBlock::Thinking(t) => t.thinking.clone(),
                    _ => String::new(),
                })
                .collect();
            sink_seen.lock().unwrap().push((index, delta, shown));
        }
    });
    let client = scripted(vec![turn, text("done")]);
    let mut config = agent_core::AgentLoopConfig::new(model(), client);
    config.tool_execution = ExecutionMode::Sequential;
    let mut context = agent_core::AgentContext {
        system_prompt: String::new(),
        messages: Vec::new(),
        tools: vec![tool.clone()],
    };
    agent_core::run_agent_loop(
        vec![Message::user("go")],
        &mut context,
        &config,
        agent_core::CancellationToken::new(),
        &config_sink,
    )
    .await;
    let lean = std::mem::take(&mut *seen.lock().unwrap());
    assert!(lean.len() > 20, "only {} updates", lean.len());
    replay_updates(&lean);
    let final_text = context.messages[1].as_assistant().unwrap().text();
    assert!(final_text.starts_with(&long));

    // The same stream to a sink that keeps every event.
    let (rec, _) = run(
        scripted(vec![
            json!({"content": [
                {"type": "text", "text": long},
                tool_call("c1", "sleep", json!({"ms": 1, "label": "a"})),
            ]}),
            text("done"),
        ]),
        vec![tool],
        |_| {},
    )
    .await;
    let kept: Vec<(usize, String)> = rec
        .events()
        .iter()
        .take_while(|e| e.kind() != "turn_end")
        .filter_map(|e| match e {
            AgentEvent::MessageUpdate {
                message,
                assistant_message_event: E::TextDelta { content_index, .. },
            } => Some((*content_index, message.text())),
            _ => None,
        })
        .collect();
    assert!(kept.len() > 5);
    // Kept snapshots never changed afterwards: each is a prefix of the next.
    for pair in kept.windows(2) {
        assert!(pair[1].1.starts_with(&pair[0].1) && pair[1].1.len() > pair[0].1.len());
    }
    assert_eq!(kept.last().unwrap().1, long);
}

// ---- Nested tool calls (a tool running the run's tools: codemode) ----

/// A tool whose closure gets the call's context, so it can find its
/// [`NestedToolCalls`](agent_core::NestedToolCalls) handle.
fn cx_tool<F, Fut>(name: &str, schema: serde_json::Value, f: F) -> Arc<dyn agent_core::AgentTool>
where
    F: Fn(serde_json::Value, agent_core::ToolCallContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
{
    Arc::new(agent_core::FnTool::new(
        agent_core::ToolMeta::new(name, "test tool").with_parameters(schema),
        f,
    ))
}

/// A tool that runs `script` with the handle of its call; the outcomes it
/// returns are kept in the returned list, and its result text is their
/// texts joined by `|`.
fn script_tool<F, Fut>(
    script: F,
) -> (
    Arc<dyn agent_core::AgentTool>,
    Arc<Mutex<Vec<agent_core::NestedOutcome>>>,
)
where
    F: Fn(agent_core::NestedToolCalls, CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Vec<agent_core::NestedOutcome>> + Send + 'static,
{
    let kept = Arc::new(Mutex::new(Vec::new()));
    let keep = kept.clone();
    let script = Arc::new(script);
    let tool = cx_tool("script", json!({"type": "object"}), move |_, cx| {
        let keep = keep.clone();
        let script = script.clone();
        async move {
            let nested = agent_core::NestedToolCalls::of(&cx)
                .ok_or("the loop gave no handle")?
                .clone();
            let outcomes = (*script)(nested, cx.cancel.clone()).await;
            let text = outcomes
                .iter()
                .map(|o| o.result.text_content())
                .collect::<Vec<_>>()
                .join("|");
            keep.lock().unwrap().extend(outcomes);
            Ok::<_, ToolError>(AgentToolResult::text(text).with_details(json!({"script": true})))
        }
    });
    (tool, kept)
}

/// `echo`: answers `echo <text>` after one progress update.
fn echo_tool() -> Arc<dyn agent_core::AgentTool> {
    cx_tool(
        "echo",
        json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
        |args, cx| async move {
            cx.updates.send(AgentToolResult::text("echoing"));
            Ok(AgentToolResult::text(format!(
                "echo {}",
                args["text"].as_str().unwrap_or_default()
            )))
        },
    )
}

/// Each tool event: kind, call id, parent call id.
fn tool_events(rec: &Recorder) -> Vec<(String, String, Option<String>)> {
    rec.events()
        .into_iter()
        .filter_map(|e| {
            let parent = e.parent_tool_call_id().map(str::to_string);
            let id = match &e {
                AgentEvent::ToolExecutionStart { tool_call_id, .. }
                | AgentEvent::ToolExecutionUpdate { tool_call_id, .. }
                | AgentEvent::ToolExecutionEnd { tool_call_id, .. }
                | AgentEvent::ToolCallDecision { tool_call_id, .. } => tool_call_id.clone(),
                AgentEvent::MessageStart {
                    message: Message::ToolResult(r),
                }
                | AgentEvent::MessageEnd {
                    message: Message::ToolResult(r),
                } => r.tool_call_id.clone(),
                _ => return None,
            };
            Some((e.kind().to_string(), id, parent))
        })
        .collect()
}

#[tokio::test]
async fn nested_calls_get_ids_events_and_hooks_but_no_messages() {
    let (script, outcomes) = script_tool(|nested, cancel| async move {
        let a = nested.call("echo", json!({"text": "a"}), &cancel).await;
        let b = nested.call("echo", json!({"text": "b"}), &cancel).await;
        vec![a, b]
    });
    let client = scripted(vec![calls(&[("p1", "script", json!({}))]), text("done")]);
    let hooked = Arc::new(Mutex::new(Vec::new()));
    let (before_seen, after_seen) = (hooked.clone(), hooked.clone());
    let (rec, ctx) = run(client, vec![echo_tool(), script], |c| {
        c.before_tool_call = Some(Arc::new(move |ctx, _| {
            // The nested calls' hooks see the parent's assistant message
            // and the run as its batch began.
            let parent_asked = ctx.assistant_message.tool_calls().any(|c| c.id == "p1");
            before_seen.lock().unwrap().push(format!(
                "before {} {} {parent_asked} {}",
                ctx.tool_call.id,
                ctx.args,
                ctx.context.messages.len()
            ));
            async { Ok(None) }.boxed()
        }));
        c.after_tool_call = Some(Arc::new(move |ctx, _| {
            after_seen
                .lock()
                .unwrap()
                .push(format!("after {}", ctx.tool_call.id));
            let nested = ctx.tool_call.id.contains('/');
            async move {
                // The script sees what the hook made of its calls' results.
                Ok(nested.then(|| AfterToolCallResult {
                    content: Some(vec![ContentBlock::text(format!(
                        "{} (checked)",
                        ctx.result.text_content()
                    ))]),
                    ..Default::default()
                }))
            }
            .boxed()
        }));
    })
    .await;
    let p1 = || Some("p1".to_string());
    let ev =
        |kind: &str, id: &str, parent: Option<String>| (kind.to_string(), id.to_string(), parent);
    assert_eq!(
        tool_events(&rec),
        [
            ev("tool_execution_start", "p1", None),
            ev("tool_execution_start", "p1/1", p1()),
            ev("tool_execution_update", "p1/1", p1()),
            ev("tool_execution_end", "p1/1", p1()),
            ev("tool_execution_start", "p1/2", p1()),
            ev("tool_execution_update", "p1/2", p1()),
            ev("tool_execution_end", "p1/2", p1()),
            ev("tool_execution_end", "p1", None),
            ev("message_start", "p1", None),
            ev("message_end", "p1", None),
        ]
    );
    let outcomes = outcomes.lock().unwrap().clone();
    let got: Vec<_> = outcomes
        .iter()
        .map(|o| (o.call_id.as_str(), o.result.text_content(), o.is_error))
        .collect();
    assert_eq!(
        got,
        [
            ("p1/1", "echo a (checked)".to_string(), false),
            ("p1/2", "echo b (checked)".to_string(), false),
        ]
    );
    // user, assistant: the snapshot every hook of the batch sees.
    assert_eq!(
        *hooked.lock().unwrap(),
        [
            "before p1 {} true 2",
            "before p1/1 {\"text\":\"a\"} true 2",
            "after p1/1",
            "before p1/2 {\"text\":\"b\"} true 2",
            "after p1/2",
            "after p1",
        ]
    );
    // Only the parent's result is a message, as the tool returned it.
    let results: Vec<_> = ctx
        .messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].tool_call_id, "p1");
    assert_eq!(results[0].text(), "echo a (checked)|echo b (checked)");
    assert_eq!(results[0].details, json!({"script": true}));
    assert!(!results[0].is_error);
}

#[tokio::test]
async fn a_hook_that_blocks_a_tool_blocks_it_called_nested_too() {
    let (danger, ran) = FnTool::new("danger", |_, _, _| async {
        Ok(AgentToolResult::text("boom"))
    })
    .arc();
    let (script, outcomes) = script_tool(|nested, cancel| async move {
        vec![nested.call("danger", json!({}), &cancel).await]
    });
    let client = scripted(vec![
        calls(&[("d", "danger", json!({})), ("p1", "script", json!({}))]),
        text("done"),
    ]);
    let (rec, _) = run(client, vec![danger, script], |c| {
        c.before_tool_call = Some(Arc::new(|ctx, _| {
            async move {
                Ok(
                    (ctx.tool_call.name == "danger").then(|| BeforeToolCallResult {
                        decision: Some(json!({"permission": "deny"})),
                        ..BeforeToolCallResult::block("danger is denied by rule danger")
                    }),
                )
            }
            .boxed()
        }))
    })
    .await;
    assert!(ran.lock().unwrap().is_empty(), "danger never ran");
    let outcomes = outcomes.lock().unwrap().clone();
    assert_eq!(outcomes.len(), 1);
    assert!(outcomes[0].is_error);
    assert_eq!(
        outcomes[0].result.text_content(),
        "danger is denied by rule danger"
    );
    // The same text as the direct call's, and a decision naming the parent.
    let ends = rec.ends();
    let direct = ends.iter().find(|(id, _, _)| id == "d").unwrap();
    assert_eq!(direct.1.text_content(), outcomes[0].result.text_content());
    let decisions: Vec<_> = tool_events(&rec)
        .into_iter()
        .filter(|(kind, _, _)| kind == "tool_call_decision")
        .collect();
    assert_eq!(
        decisions,
        [
            ("tool_call_decision".to_string(), "d".to_string(), None),
            (
                "tool_call_decision".to_string(),
                "p1/1".to_string(),
                Some("p1".to_string())
            ),
        ]
    );
}

#[tokio::test]
async fn nested_failures_come_back_as_error_outcomes() {
    let (count, counted) = FnTool::new("count", |_, _, _| async {
        Ok(AgentToolResult::text("counted"))
    })
    .schema(json!({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}))
    .arc();
    let (boom, _) = FnTool::new("boom", |_, _, _| async {
        if true {
            panic!("kaboom");
        }
        Ok(AgentToolResult::text("unreachable"))
    })
    .arc();
    let (script, outcomes) = script_tool(|nested, cancel| async move {
        // A tool may not call itself: it is not among the tools it may name.
        assert!(nested.tools().iter().all(|t| t.name() != "script"));
        let mut out = Vec::new();
        for (name, args) in [
            ("count", json!({"n": "many"})),
            ("count", json!({"n": "3"})),
            ("nope", json!({})),
            ("inactive", json!({})),
            ("script", json!({})),
            ("boom", json!({})),
        ] {
            out.push(nested.call(name, args, &cancel).await);
        }
        out
    });
    let client = scripted(vec![calls(&[("p1", "script", json!({}))]), text("done")]);
    let (_, ctx) = run(client, vec![count, boom, script], |c| {
        c.unknown_tool_message = Some(Arc::new(|name| {
            (name == "inactive").then(|| format!("Tool {name} is registered but not active"))
        }));
    })
    .await;
    let outcomes = outcomes.lock().unwrap().clone();
    let texts: Vec<_> = outcomes
        .iter()
        .map(|o| (o.is_error, o.result.text_content()))
        .collect();
    assert!(texts[0].0, "{texts:?}");
    assert!(
        texts[0]
            .1
            .starts_with("Validation failed for tool \"count\":"),
        "{texts:?}"
    );
    // A numeric string is coerced, as for the model's calls.
    assert_eq!(texts[1], (false, "counted".to_string()));
    assert_eq!(counted.lock().unwrap()[0].0, json!({"n": 3}));
    assert_eq!(texts[2], (true, "Tool nope not found".to_string()));
    assert_eq!(
        texts[3],
        (
            true,
            "Tool inactive is registered but not active".to_string()
        )
    );
    assert_eq!(texts[4], (true, "Tool script not found".to_string()));
    assert!(texts[5].0);
    assert!(texts[5].1.contains("kaboom"), "{texts:?}");
    assert_eq!(outcomes[5].result.details, json!({}));
    // The panic did not take the parent down.
    let parent = ctx.messages[2].as_tool_result().unwrap();
    assert!(!parent.is_error);
    assert_eq!(counted.lock().unwrap().len(), 1);
}

/// How many probes run at once, the most seen, and how many started.
#[derive(Default, Clone, Copy)]
struct Flight {
    in_flight: usize,
    max: usize,
    started: usize,
}

/// A probe counting itself in `flight`. With `wait_for_full`, each waits
/// until `full` probes were in flight together (or `total` started), so
/// the bound is reached, not just respected; without, it yields a few
/// times, so an overlapping call would start meanwhile.
fn probe(
    name: &str,
    flight: tokio::sync::watch::Sender<Flight>,
    order: Arc<Mutex<Vec<u64>>>,
    full: usize,
    total: usize,
) -> FnTool {
    FnTool::new(name, move |args, _, _| {
        let flight = flight.clone();
        let order = order.clone();
        async move {
            order
                .lock()
                .unwrap()
                .push(args["i"].as_u64().unwrap_or(u64::MAX));
            flight.send_modify(|f| {
                f.in_flight += 1;
                f.started += 1;
                f.max = f.max.max(f.in_flight);
            });
            if full > 1 {
                let mut rx = flight.subscribe();
                let _ = rx.wait_for(|f| f.max >= full || f.started == total).await;
            } else {
                for _ in 0..5 {
                    tokio::task::yield_now().await;
                }
            }
            flight.send_modify(|f| f.in_flight -= 1);
            Ok(AgentToolResult::text("probed"))
        }
    })
    .schema(json!({"type":"object","properties":{"i":{"type":"integer"}}}))
}

#[tokio::test]
async fn nested_calls_run_at_most_max_parallel_at_once_in_call_order() {
    let (flight, _) = tokio::sync::watch::channel(Flight::default());
    let (seq_flight, _) = tokio::sync::watch::channel(Flight::default());
    let order = Arc::new(Mutex::new(Vec::new()));
    let seq_order = Arc::new(Mutex::new(Vec::new()));
    let (probe_tool, _) = probe("probe", flight.clone(), order.clone(), 3, 50).arc();
    let (seq_tool, _) = probe("seq", seq_flight.clone(), seq_order.clone(), 1, 6)
        .sequential()
        .arc();
    let (script, outcomes) = script_tool(|nested, cancel| async move {
        assert_eq!(nested.max_parallel(), 3);
        let calls = (0..50).map(|i| nested.call("probe", json!({"i": i}), &cancel));
        let mut out = futures::future::join_all(calls).await;
        let calls = (0..6).map(|i| nested.call("seq", json!({"i": i}), &cancel));
        out.extend(futures::future::join_all(calls).await);
        out
    });
    let client = scripted(vec![calls(&[("p1", "script", json!({}))]), text("done")]);
    let run = run(client, vec![probe_tool, seq_tool, script], |c| {
        c.max_parallel_tools = 3;
    });
    let (rec, _) = tokio::time::timeout(Duration::from_secs(60), run) // hang guard
        .await
        .expect("the probes never filled three slots");
    assert_eq!(flight.borrow().max, 3, "exactly max_parallel_tools at once");
    assert_eq!(flight.borrow().started, 50);
    assert_eq!(*order.lock().unwrap(), (0..50).collect::<Vec<u64>>());
    // A sequential tool's calls run one at a time.
    assert_eq!(seq_flight.borrow().max, 1);
    assert_eq!(*seq_order.lock().unwrap(), (0..6).collect::<Vec<u64>>());
    let outcomes = outcomes.lock().unwrap().clone();
    assert_eq!(outcomes.len(), 56);
    assert!(outcomes.iter().all(|o| !o.is_error));
    let ids: Vec<_> = outcomes.iter().map(|o| o.call_id.clone()).collect();
    assert_eq!(ids, (1..=56).map(|n| format!("p1/{n}")).collect::<Vec<_>>());
    // Every nested call started and ended once, under its parent.
    let nested: Vec<_> = tool_events(&rec)
        .into_iter()
        .filter(|(_, _, parent)| parent.is_some())
        .collect();
    assert_eq!(nested.len(), 112);
}

#[tokio::test]
async fn cancelling_aborts_nested_calls_that_wait_or_run() {
    let started = Arc::new(tokio::sync::Notify::new());
    let signal = started.clone();
    let (hold, held) = FnTool::new("hold", move |_, cancel, _| {
        let signal = signal.clone();
        async move {
            signal.notify_one();
            cancel.cancelled().await;
            Err(ToolError::aborted())
        }
    })
    .arc();
    let (script, outcomes) = script_tool(|nested, cancel| async move {
        // The caller's own token, cancelled: that call alone is aborted.
        let mine = cancel.child_token();
        mine.cancel();
        let mut out = vec![nested.call("hold", json!({}), &mine).await];
        // Then the run is cancelled while the first call runs and the
        // others wait for its slot.
        let calls = (0..3).map(|_| nested.call("hold", json!({}), &cancel));
        out.extend(futures::future::join_all(calls).await);
        out
    });
    let client = scripted(vec![calls(&[("p1", "script", json!({}))]), text("never")]);
    let mut config = agent_core::AgentLoopConfig::new(model(), client);
    config.max_parallel_tools = 1;
    let mut context = agent_core::AgentContext {
        tools: vec![hold, script],
        ..Default::default()
    };
    let rec = Recorder::default();
    let sink = rec.sink();
    let cancel = CancellationToken::new();
    let run = agent_core::run_agent_loop(
        vec![Message::user("go")],
        &mut context,
        &config,
        cancel.clone(),
        &sink,
    );
    let abort = async {
        started.notified().await;
        cancel.cancel();
    };
    tokio::time::timeout(Duration::from_secs(60), futures::future::join(run, abort)) // hang guard
        .await
        .expect("the nested calls ignored the cancellation");
    assert_eq!(held.lock().unwrap().len(), 1, "only the first call ran");
    let outcomes = outcomes.lock().unwrap().clone();
    assert_eq!(outcomes.len(), 4);
    for o in &outcomes {
        assert!(o.is_error, "{}", o.call_id);
        assert_eq!(
            o.result.text_content(),
            "Operation aborted",
            "{}",
            o.call_id
        );
    }
    // Each got its start and end, under its parent.
    let nested: Vec<_> = tool_events(&rec)
        .into_iter()
        .filter(|(_, _, parent)| parent.as_deref() == Some("p1"))
        .map(|(kind, _, _)| kind)
        .collect();
    assert_eq!(
        nested
            .iter()
            .filter(|k| *k == "tool_execution_start")
            .count(),
        4
    );
    assert_eq!(
        nested.iter().filter(|k| *k == "tool_execution_end").count(),
        4
    );
}

#[tokio::test]
async fn a_call_run_outside_the_loop_gets_a_handle_too() {
    let (script, outcomes) = script_tool(|nested, cancel| async move {
        vec![
            nested.call("echo", json!({"text": "x"}), &cancel).await,
            nested.call("echo", json!({}), &cancel).await,
        ]
    });
    let tools = vec![echo_tool(), script];
    let call = agent_ai::ToolCall {
        id: "t1".into(),
        name: "script".into(),
        arguments: json!({}),
        thought_signature: None,
    };
    let updates = Arc::new(Mutex::new(Vec::new()));
    let seen = updates.clone();
    let (result, is_error) = agent_core::execute_tool_call_with(
        &tools,
        &call,
        &CancellationToken::new(),
        None,
        &agent_core::Extensions::new(),
        move |partial| seen.lock().unwrap().push(partial.text_content()),
    )
    .await;
    assert!(!is_error);
    assert!(
        result
            .text_content()
            .starts_with("echo x|Validation failed")
    );
    let outcomes = outcomes.lock().unwrap().clone();
    let ids: Vec<_> = outcomes.iter().map(|o| o.call_id.as_str()).collect();
    assert_eq!(ids, ["t1/1", "t1/2"]);
    // The nested call's progress is not the call's own.
    assert!(updates.lock().unwrap().is_empty());
}
