//! Aborts at each stage of a batch: every call is answered, none runs
//! after the abort.

use std::sync::Arc;
use std::time::Duration;

use agent_ai::Message;
use agent_core::{Agent, AgentEvent, AgentOptions};
use futures::FutureExt;
use serde_json::json;
use test_support::agent_loop::*;

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
