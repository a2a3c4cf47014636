//! Nested tool calls (a tool running the run's tools: codemode): ids,
//! events, hooks, failures, the parallel bound and cancellation.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_ai::{ContentBlock, Message};
use agent_core::{
    AfterToolCallResult, AgentEvent, AgentToolResult, BeforeToolCallResult, CancellationToken,
    ToolError,
};
use futures::FutureExt;
use serde_json::json;
use test_support::agent_loop::*;

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
