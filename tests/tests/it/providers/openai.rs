//! Chat Completions streams: text, tool calls, stops, disconnects, retries
//! and cancellation.

use std::time::Duration;

use agent_ai::providers::openai::OpenAiClient;
use agent_ai::{Model, StopReason, StreamOptions, complete};
use serde_json::json;
use test_support::http_server::{Reply, serve};

use super::{chunk, ctx, openai};

#[tokio::test]
async fn openai_text_only() {
    let usage = json!({"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":2}}}).to_string();
    let (msg, server) = openai(vec![Reply::sse(&[
        &chunk(json!({"role":"assistant","content":""}), None),
        &chunk(json!({"content":"Hel"}), None),
        &chunk(json!({"content":"lo!"}), None),
        &chunk(json!({}), Some("stop")),
        &usage,
        "[DONE]",
    ])])
    .await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "Hello!");
    assert_eq!(msg.content.len(), 1);
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.output,
            msg.usage.cache_read,
            msg.usage.total_tokens
        ),
        (10, 3, 2, 15)
    );
    assert_eq!(msg.api.as_deref(), Some("openai-completions"));
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer sk-test")
    );
    assert_eq!(req.body["model"], "gpt-test");
    assert_eq!(req.body["stream"], true);
    assert_eq!(
        req.body["messages"],
        json!([{"role":"system","content":"be brief"},{"role":"user","content":"hi"}])
    );
    assert_eq!(req.body["tools"][0]["function"]["name"], "read");
}

#[tokio::test]
async fn openai_one_tool_call() {
    let (msg, _) = openai(vec![Reply::sse(&[
        &chunk(json!({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":""}}]}), None),
        &chunk(json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}), None),
        &chunk(json!({"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a.txt\"}"}}]}), None),
        &chunk(json!({}), Some("tool_calls")),
        "[DONE]",
    ])])
    .await;
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "call_1");
    assert_eq!(calls[0].name, "read");
    assert_eq!(calls[0].arguments, json!({"path":"a.txt"}));
}

#[tokio::test]
async fn openai_two_parallel_calls_with_interleaved_deltas() {
    let (msg, _) = openai(vec![Reply::sse(&[
        &chunk(json!({"content":"Reading both."}), None),
        &chunk(json!({"tool_calls":[{"index":0,"id":"a","function":{"name":"read","arguments":"{\"path\":"}}]}), None),
        &chunk(json!({"tool_calls":[{"index":1,"id":"b","function":{"name":"read","arguments":"{\"path\":"}}]}), None),
        &chunk(json!({"tool_calls":[{"index":0,"function":{"arguments":"\"x.txt\"}"}}]}), None),
        &chunk(json!({"tool_calls":[{"index":1,"function":{"arguments":"\"y.txt\"}"}}]}), None),
        &chunk(json!({}), Some("tool_calls")),
        "[DONE]",
    ])])
    .await;
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    assert_eq!(msg.text(), "Reading both.");
    let calls: Vec<_> = msg
        .tool_calls()
        .map(|c| (c.id.clone(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("a".into(), json!({"path":"x.txt"})),
            ("b".into(), json!({"path":"y.txt"}))
        ]
    );
}

#[tokio::test]
async fn openai_length_stop() {
    let (msg, _) = openai(vec![Reply::sse(&[
        &chunk(json!({"content":"partial"}), None),
        &chunk(json!({}), Some("length")),
        "[DONE]",
    ])])
    .await;
    assert_eq!(msg.stop_reason, StopReason::Length);
    assert_eq!(msg.text(), "partial");
}

#[tokio::test]
async fn openai_disconnect_mid_stream_keeps_partial_and_errors() {
    let (msg, _) = openai(vec![Reply::sse(&[&chunk(
        json!({"content":"I was say"}),
        None,
    )])])
    .await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.text(), "I was say");
    assert!(msg.error_message.unwrap().starts_with("Connection lost"));
}

#[tokio::test]
async fn openai_retries_429_then_succeeds() {
    let (msg, server) = openai(vec![
        Reply::status(429, r#"{"error":{"message":"Rate limit"}}"#).header("retry-after", "0"),
        Reply::sse(&[&chunk(json!({"content":"ok"}), Some("stop")), "[DONE]"]),
    ])
    .await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "ok");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn openai_http_error_and_exhausted_retries() {
    let (msg, server) = openai(vec![Reply::status(
        401,
        r#"{"error":{"message":"Incorrect API key provided"}}"#,
    )])
    .await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("HTTP 401: Incorrect API key provided")
    );
    assert_eq!(server.requests().len(), 1, "401 is not retried");

    let (msg, server) = openai(vec![
        Reply::status(503, "overloaded"),
        Reply::status(503, "overloaded"),
        Reply::status(503, "overloaded"),
    ])
    .await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some("HTTP 503: overloaded (tried 3 times)")
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn openai_cancellation_aborts() {
    let server = serve(vec![
        Reply::sse(&[
            &chunk(json!({"content":"a"}), None),
            &chunk(json!({"content":"b"}), Some("stop")),
            "[DONE]",
        ])
        .delay_each(Duration::from_secs(5)),
    ])
    .await;
    let client = OpenAiClient::new(format!("{}/v1", server.base), None);
    let options = StreamOptions::default();
    let cancel = options.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let msg = complete(&client, &Model::new("openai", "m"), &ctx(), options).await;
    assert_eq!(msg.stop_reason, StopReason::Aborted);
    assert!(started.elapsed() < Duration::from_secs(3)); // hang guard
}
