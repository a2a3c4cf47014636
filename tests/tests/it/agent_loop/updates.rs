//! Message updates: each shows the message so far, whether sinks keep
//! events or not.

use std::sync::{Arc, Mutex};

use agent_ai::{ContentBlock, Message};
use agent_core::{AgentEvent, ExecutionMode};
use serde_json::json;
use test_support::agent_loop::*;

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
