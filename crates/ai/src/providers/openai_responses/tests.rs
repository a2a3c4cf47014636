use futures::StreamExt;
use serde_json::json;

use super::*;
use crate::content::{TextContent, ThinkingContent, ToolCall};
use crate::message::ToolResultMessage;
use crate::stream::AssistantMessageEvent;

fn gpt5() -> Model {
    let mut m = Model::new("openai", "gpt-5");
    m.reasoning = true;
    m.input = vec!["text".into(), "image".into()];
    m
}

fn assistant(model: &str, content: Vec<ContentBlock>) -> Message {
    let mut a = AssistantMessage::empty("openai", model);
    a.api = Some(API.into());
    a.content = content;
    a.stop_reason = StopReason::ToolUse;
    Message::Assistant(a)
}

fn reasoning_block(encrypted: Option<&str>) -> ContentBlock {
    let mut item = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}]});
    if let Some(e) = encrypted {
        item["encrypted_content"] = json!(e);
    }
    ContentBlock::Thinking(ThinkingContent {
        thinking: "plan".into(),
        thinking_signature: Some(item.to_string()),
    })
}

fn call(id: &str) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall::new(id, "read", json!({"path": "a"})))
}

fn result(id: &str, content: Vec<ContentBlock>) -> Message {
    Message::ToolResult(ToolResultMessage::new(id, "read", content))
}

fn input(model: &Model, messages: Vec<Message>) -> Value {
    let context = Context {
        system_prompt: Some("sys".into()),
        messages,
        tools: Vec::new(),
    };
    serde_json::to_value(convert_input(model, API, &context)).unwrap()
}

#[test]
fn same_model_replays_reasoning_item_ids_and_calls() {
    let text = ContentBlock::Text(TextContent {
        text: "Reading.".into(),
        text_signature: Some(r#"{"v":1,"id":"msg_7"}"#.into()),
    });
    let items = input(
        &gpt5(),
        vec![
            Message::user("hi"),
            assistant(
                "gpt-5",
                vec![reasoning_block(Some("ENC")), text, call("call_1|fc_1")],
            ),
            result("call_1|fc_1", vec![ContentBlock::text("file")]),
        ],
    );
    assert_eq!(
        items,
        json!([
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sys"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "ENC"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading.", "annotations": []}], "id": "msg_7", "status": "completed"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "file"},
        ])
    );
}

#[test]
fn another_models_thinking_becomes_text_and_its_item_ids_are_dropped() {
    let items = input(
        &gpt5(),
        vec![
            Message::user("hi"),
            assistant(
                "gpt-4.1",
                vec![
                    reasoning_block(Some("ENC")),
                    ContentBlock::Thinking(ThinkingContent {
                        thinking: " ".into(),
                        thinking_signature: None,
                    }),
                    call("call 1|fc_1"),
                ],
            ),
            result("call 1|fc_1", vec![ContentBlock::text("ok")]),
        ],
    );
    let items = items.as_array().unwrap();
    assert_eq!(items.len(), 5, "{items:?}");
    assert_eq!(items[2]["type"], "message");
    assert_eq!(items[2]["content"][0]["text"], "plan");
    assert_eq!(items[2]["id"], "msg_1");
    // The id is cleaned the same way in the call and in its result.
    assert_eq!(
        items[3],
        json!({"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"})
    );
    assert_eq!(items[4]["call_id"], "call_1");
}

#[test]
fn reasoning_without_encrypted_content_is_not_replayed_nor_its_call_ids() {
    let items = input(
        &gpt5(),
        vec![
            Message::user("hi"),
            assistant("gpt-5", vec![reasoning_block(None), call("call_1|fc_1")]),
            result("call_1|fc_1", vec![ContentBlock::text("ok")]),
        ],
    );
    let items = items.as_array().unwrap();
    assert!(items.iter().all(|i| i["type"] != "reasoning"), "{items:?}");
    assert_eq!(items[2]["type"], "function_call");
    assert!(items[2].get("id").is_none());
}

#[test]
fn images_foreign_ids_failed_answers_and_unanswered_calls() {
    let mut failed = AssistantMessage::empty("openai", "gpt-5");
    failed.api = Some(API.into());
    failed.stop_reason = StopReason::Error;
    failed.content = vec![ContentBlock::text("half an answer")];
    let mut text_only = gpt5();
    text_only.input = vec!["text".into()];
    let messages = vec![
        Message::user("hi"),
        Message::Assistant(failed),
        // An Anthropic call id, and a second call never answered.
        assistant("gpt-5", vec![call("toolu_01"), call("call_2|fc_2")]),
        result("toolu_01", vec![ContentBlock::image("AAAA", "image/png")]),
        Message::user("next"),
    ];
    let items = input(&gpt5(), messages.clone());
    let items = items.as_array().unwrap();
    let kinds: Vec<&str> = items.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "message",
            "function_call_output",
            "message"
        ]
    );
    assert_eq!(items[2]["call_id"], "toolu_01");
    assert!(items[2].get("id").is_none());
    assert_eq!(items[4]["output"], "(see attached image)");
    assert_eq!(
        items[5]["content"][1],
        json!({"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"})
    );
    assert_eq!(
        items[6],
        json!({"type": "function_call_output", "call_id": "call_2", "output": "No result provided"})
    );
    // A text-only model gets no images at all.
    let items = input(&text_only, messages);
    assert!(!items.to_string().contains("input_image"));
}

#[test]
fn request_body_fields() {
    let client = OpenAiResponsesClient::new("http://x/v1", None);
    let context = Context {
        system_prompt: None,
        messages: vec![Message::user("hi")],
        tools: vec![crate::Tool::new(
            "read",
            "Read a file",
            json!({"type": "object", "properties": {"path": {"type": "string", "format": "path"}}}),
        )],
    };
    let options = StreamOptions {
        max_tokens: Some(1000),
        reasoning: Some(crate::ReasoningEffort::High),
        session_id: Some("session-1".into()),
        ..Default::default()
    };
    let body = client.request_body(&gpt5(), &context, &options);
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["max_output_tokens"], 1000);
    assert_eq!(body["prompt_cache_key"], "session-1");
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "read", "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}, "strict": false}])
    );
    // A model that does not reason gets neither `reasoning` nor `include`.
    let body = client.request_body(&Model::new("openai", "gpt-4.1"), &context, &options);
    assert!(body.get("reasoning").is_none());
    assert!(body.get("include").is_none());
}

#[test]
fn the_prompt_cache_follows_the_retention() {
    let client = OpenAiResponsesClient::new("http://x/v1", None);
    let context = Context {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    let body_with = |cache_retention| {
        let options = StreamOptions {
            session_id: Some("session-1".into()),
            cache_retention,
            ..Default::default()
        };
        client.request_body(&gpt5(), &context, &options)
    };
    let short = body_with(crate::CacheRetention::Short);
    assert_eq!(short["prompt_cache_key"], "session-1");
    assert!(short.get("prompt_cache_retention").is_none());
    let long = body_with(crate::CacheRetention::Long);
    assert_eq!(long["prompt_cache_retention"], "24h");
    let none = body_with(crate::CacheRetention::None);
    assert!(none.get("prompt_cache_key").is_none());
    assert!(none.get("prompt_cache_retention").is_none());
}

#[test]
fn azure_url_and_headers() {
    let client =
        OpenAiResponsesClient::azure("https://r.openai.azure.com/openai/v1/", Some("k".into()))
            .with_api_version(Some("2025-04-01-preview".into()));
    assert_eq!(
        client.url(),
        "https://r.openai.azure.com/openai/v1/responses?api-version=2025-04-01-preview"
    );
    assert_eq!(
        client.headers(),
        vec![("api-key".to_string(), "k".to_string())]
    );
    let openai = OpenAiResponsesClient::new("http://x/v1", Some("sk".into()));
    assert_eq!(openai.url(), "http://x/v1/responses");
    assert_eq!(
        openai.headers(),
        vec![("authorization".to_string(), "Bearer sk".to_string())]
    );
}

/// Runs events through the stream state and returns every event the
/// consumer sees.
async fn run(events: &[Value]) -> Vec<AssistantMessageEvent> {
    let (builder, stream) = message_stream(AssistantMessage::empty("openai", "gpt-5"));
    let mut state = Stream::new(builder);
    let mut failed = None;
    for e in events {
        match state.event(None, &e.to_string()) {
            Ok(true) => {}
            Ok(false) => break,
            Err(err) => {
                failed = Some(err);
                break;
            }
        }
    }
    state.end_blocks();
    match failed.map_or_else(|| state.outcome(), Err) {
        Ok(reason) => state.b.finish(reason),
        Err(e) => state.b.fail(StopReason::Error, e),
    }
    drop(state);
    stream.collect().await
}

fn final_message(events: &[AssistantMessageEvent]) -> &AssistantMessage {
    events.last().unwrap().message()
}

#[tokio::test]
async fn events_map_onto_blocks_usage_and_stop_reason() {
    let events = run(&[
        json!({"type": "response.created", "response": {"status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "item_id": "rs_1"}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "item_id": "rs_1", "delta": "one"}),
        json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "item_id": "rs_1"}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "item_id": "rs_1", "delta": "two"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "one"}, {"type": "summary_text", "text": "two"}], "encrypted_content": "ENC"}}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_1", "delta": "Hi"}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]}}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2, "item_id": "fc_1", "delta": "{\"path\":"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2, "item_id": "fc_1", "delta": "\"a\"}"}),
        json!({"type": "response.function_call_arguments.done", "output_index": 2, "item_id": "fc_1", "arguments": "{\"path\":\"a\"}"}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"}}),
        json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 60}, "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 20}, "total_tokens": 130}}}),
    ])
    .await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            AssistantMessageEvent::Start { .. } => "start",
            AssistantMessageEvent::ThinkingStart { .. } => "thinking_start",
            AssistantMessageEvent::ThinkingDelta { .. } => "thinking_delta",
            AssistantMessageEvent::ThinkingEnd { .. } => "thinking_end",
            AssistantMessageEvent::TextStart { .. } => "text_start",
            AssistantMessageEvent::TextDelta { .. } => "text_delta",
            AssistantMessageEvent::TextEnd { .. } => "text_end",
            AssistantMessageEvent::ToolCallStart { .. } => "toolcall_start",
            AssistantMessageEvent::ToolCallDelta { .. } => "toolcall_delta",
            AssistantMessageEvent::ToolCallEnd { .. } => "toolcall_end",
            AssistantMessageEvent::Done { .. } => "done",
            AssistantMessageEvent::Error { .. } => "error",
        })
        .collect();
    assert_eq!(kinds.first(), Some(&"start"));
    assert_eq!(kinds.last(), Some(&"done"));
    for k in ["thinking_end", "text_end", "toolcall_end"] {
        assert!(kinds.contains(&k), "{kinds:?}");
    }
    let msg = final_message(&events);
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    let ContentBlock::Thinking(t) = &msg.content[0] else {
        panic!("{:?}", msg.content)
    };
    assert_eq!(t.thinking, "one\n\ntwo");
    let stored: Value = serde_json::from_str(t.thinking_signature.as_deref().unwrap()).unwrap();
    assert_eq!(stored["encrypted_content"], "ENC");
    let ContentBlock::Text(text) = &msg.content[1] else {
        panic!()
    };
    assert_eq!(text.text, "Hi");
    assert_eq!(
        text.text_signature.as_deref(),
        Some(r#"{"v":1,"id":"msg_1"}"#)
    );
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(call.id, "call_1|fc_1");
    assert_eq!(call.arguments, json!({"path": "a"}));
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.output,
            msg.usage.cache_read,
            msg.usage.total_tokens
        ),
        (40, 30, 60, 130)
    );
}

#[tokio::test]
async fn whole_items_without_deltas_are_used() {
    let events = run(&[
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1", "content": []}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": "whole"}]}}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "read"}}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "read", "arguments": "{\"path\":\"b\"}"}}),
        json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}}),
    ])
    .await;
    let msg = final_message(&events);
    assert_eq!(msg.text(), "whole");
    assert_eq!(
        msg.tool_calls().next().unwrap().arguments,
        json!({"path": "b"})
    );
    assert_eq!(msg.stop_reason, StopReason::Length);
}

#[tokio::test]
async fn error_events_failed_responses_and_early_ends_are_errors() {
    let events = run(&[
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "m", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "delta": "par"}),
        json!({"type": "error", "code": "server_error", "message": "The server had an error"}),
    ])
    .await;
    let msg = final_message(&events);
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("server_error: The server had an error")
    );
    assert_eq!(msg.text(), "par");

    let events = run(&[json!({"type": "response.failed", "response": {"status": "failed",
        "error": {"code": "context_length_exceeded", "message": "Your input exceeds the context window"}}})])
    .await;
    assert_eq!(
        final_message(&events).error_message.as_deref(),
        Some("context_length_exceeded: Your input exceeds the context window")
    );

    let events = run(&[json!({"type": "response.created"})]).await;
    assert!(
        final_message(&events)
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Connection lost")
    );
}
