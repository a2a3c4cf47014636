//! How a run goes on or ends: termination, length stops, updates, added
//! tools, steering, follow-ups, an abort mid-tool, refused prompts and
//! model errors.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_ai::{Message, StopReason};
use agent_core::{Agent, AgentEvent, AgentOptions, AgentToolResult};
use serde_json::json;
use test_support::agent_loop::*;

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
