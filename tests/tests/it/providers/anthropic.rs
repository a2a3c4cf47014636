//! Anthropic's Messages streams: thinking, text and tool use; error events
//! and retries.

use agent_ai::{ContentBlock, StopReason};
use serde_json::json;
use test_support::http_server::Reply;

use super::{anthropic, ev};

#[tokio::test]
async fn anthropic_thinking_text_and_tool_use() {
    let (msg, server) = anthropic(vec![Reply::sse(&[
        &ev(json!({"type":"message_start","message":{"id":"m","usage":{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":1}}})),
        &ev(json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})),
        &ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}})),
        &ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig=="}})),
        &ev(json!({"type":"content_block_stop","index":0})),
        &ev(json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})),
        &ev(json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Reading."}})),
        &ev(json!({"type":"content_block_stop","index":1})),
        &ev(json!({"type":"ping"})),
        &ev(json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}})),
        &ev(json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a"}})),
        &ev(json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":".txt\"}"}})),
        &ev(json!({"type":"content_block_stop","index":2})),
        &ev(json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}})),
        &ev(json!({"type":"message_stop"})),
    ])])
    .await;
    assert_eq!(
        msg.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        msg.error_message
    );
    match &msg.content[0] {
        ContentBlock::Thinking(t) => {
            assert_eq!(t.thinking, "Let me think");
            assert_eq!(t.thinking_signature.as_deref(), Some("sig=="));
        }
        other => panic!("expected thinking, got {other:?}"),
    }
    assert_eq!(msg.text(), "Reading.");
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(
        (call.id.as_str(), call.arguments.clone()),
        ("toolu_1", json!({"path":"a.txt"}))
    );
    assert_eq!(
        (msg.usage.input, msg.usage.cache_read, msg.usage.output),
        (20, 5, 42)
    );
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| k == "x-api-key" && v == "ak-test")
    );
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| k == "anthropic-version" && v == "2023-06-01")
    );
    assert_eq!(req.body["system"][0]["text"], "be brief");
    assert_eq!(
        req.body["tools"][0]["input_schema"]["required"],
        json!(["path"])
    );
    assert!(req.body["max_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn anthropic_error_event_and_retry() {
    let (msg, _) = anthropic(vec![Reply::sse(&[
        &ev(json!({"type":"message_start","message":{"usage":{"input_tokens":1}}})),
        &ev(json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})),
    ])])
    .await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("overloaded_error: Overloaded")
    );

    let (msg, server) = anthropic(vec![
        Reply::status(529, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
        Reply::sse(&[
            &ev(json!({"type":"message_start","message":{"usage":{"input_tokens":1}}})),
            &ev(json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})),
            &ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"fine"}})),
            &ev(json!({"type":"content_block_stop","index":0})),
            &ev(json!({"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":1}})),
            &ev(json!({"type":"message_stop"})),
        ]),
    ])
    .await;
    assert_eq!(msg.stop_reason, StopReason::Length);
    assert_eq!(msg.text(), "fine");
    assert_eq!(server.requests().len(), 2);
}
