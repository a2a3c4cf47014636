//! The Gemini client against the fake Gemini server
//! (`test_support::gemini`) on 127.0.0.1: real HTTP, SSE chunks as Google
//! streams them, request bodies checked the way the service checks them.

use std::time::Duration;

use agent_ai::providers::RetryPolicy;
use agent_ai::providers::google::GoogleClient;
use agent_ai::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, Context, Message, Model, ModelClient,
    ReasoningEffort, StopReason, StreamOptions, Tool, ToolResultMessage, complete,
};
use futures::StreamExt;
use serde_json::json;
use test_support::gemini::{
    GeminiScript, Usage, check_request, error, prompt_blocked, rate_limited,
};
use test_support::http_server::{TestServer, serve};

/// Quick retries; the server-asked delay keeps its default cap (60 s).
fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        ..RetryPolicy::default()
    }
}

fn model() -> Model {
    let mut m = Model::new("google", "gemini-2.5-pro");
    m.api = "google-generative-ai".into();
    m.reasoning = true;
    m
}

fn client(server: &TestServer) -> GoogleClient {
    GoogleClient::new(format!("{}/v1beta", server.base), Some("key-1".into()))
        .with_retry(fast_retry())
}

fn read_tool() -> Tool {
    Tool::new(
        "read",
        "Read a file",
        json!({"type":"object","properties":{"path":{"type":"string"},"limit":{"type":["integer","null"]}},"required":["path"],"additionalProperties":false}),
    )
}

fn ctx(messages: Vec<Message>) -> Context {
    Context {
        system_prompt: Some("be brief".into()),
        messages,
        tools: vec![read_tool()],
    }
}

async fn ask(server: &TestServer, messages: Vec<Message>) -> AssistantMessage {
    complete(
        &client(server),
        &model(),
        &ctx(messages),
        StreamOptions::default(),
    )
    .await
}

fn usage() -> Usage {
    Usage {
        prompt: 100,
        cached: 60,
        candidates: 30,
        thoughts: 20,
    }
}

#[tokio::test]
async fn text_answer_usage_and_request() {
    let server = serve(vec![
        GeminiScript::new().text(&["Hel", "lo", "!"]).stop(usage()),
    ])
    .await;
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "Hello!");
    assert_eq!(msg.api.as_deref(), Some("google-generative-ai"));
    // input excludes the cached tokens; output is candidates + thoughts.
    let u = &msg.usage;
    assert_eq!(
        (
            u.input,
            u.cache_read,
            u.cache_write,
            u.output,
            u.total_tokens
        ),
        (40, 60, 0, 50, 150)
    );
    let req = &server.requests()[0];
    assert_eq!(
        req.path,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| k == "x-goog-api-key" && v == "key-1")
    );
    check_request(&req.body).unwrap();
    assert_eq!(
        req.body,
        json!({
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "systemInstruction": {"parts": [{"text": "be brief"}]},
            "tools": [{"functionDeclarations": [{"name": "read", "description": "Read a file",
                "parametersJsonSchema": read_tool().parameters}]}],
        })
    );
}

#[tokio::test]
async fn parallel_calls_then_results_matched_by_name_and_id() {
    let server = serve(vec![
        GeminiScript::new()
            .calls(&[
                ("read", json!({"path": "a"}), None, None),
                ("read", json!({"path": "b"}), Some("srv-2"), None),
            ])
            .stop(usage()),
        GeminiScript::new().text(&["done"]).stop(usage()),
    ])
    .await;
    let first = ask(&server, vec![Message::user("read a and b")]).await;
    assert_eq!(
        first.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        first.error_message
    );
    let calls: Vec<_> = first.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].arguments, json!({"path": "a"}));
    assert_eq!(calls[1].id, "srv-2");
    // A made-up id in Pi's shape, name_millis_counter.
    assert!(calls[0].id.starts_with("read_"), "{}", calls[0].id);
    let results: Vec<Message> = calls
        .iter()
        .map(|c| {
            Message::ToolResult(ToolResultMessage::new(
                &c.id,
                "read",
                vec![ContentBlock::text(format!("file {}", c.arguments["path"]))],
            ))
        })
        .collect();
    let mut messages = vec![
        Message::user("read a and b"),
        Message::Assistant(first.clone()),
    ];
    messages.extend(results);
    let second = ask(&server, messages).await;
    assert_eq!(second.text(), "done", "{:?}", second.error_message);
    let body = &server.requests()[1].body;
    check_request(body).unwrap();
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "read", "args": {"path": "a"}}},
            {"functionCall": {"name": "read", "args": {"path": "b"}, "id": "srv-2"}},
        ]})
    );
    assert_eq!(
        body["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "read", "response": {"output": "file \"a\""}}},
            {"functionResponse": {"name": "read", "response": {"output": "file \"b\""}, "id": "srv-2"}},
        ]})
    );
}

#[tokio::test]
async fn thinking_signatures_survive_a_session_file_and_are_echoed() {
    let server = serve(vec![
        GeminiScript::new()
            .thinking(&["Let me ", "look."], "U0lHLTE=")
            .text(&["Reading."])
            .calls(&[("read", json!({"path": "x"}), None, Some("U0lHLTI="))])
            .stop(usage()),
        GeminiScript::new().text(&["ok"]).stop(usage()),
        GeminiScript::new().text(&["ok"]).stop(usage()),
    ])
    .await;
    let options = StreamOptions {
        reasoning: Some(ReasoningEffort::High),
        max_tokens: Some(4096),
        ..Default::default()
    };
    let first = complete(
        &client(&server),
        &model(),
        &ctx(vec![Message::user("go")]),
        options.clone(),
    )
    .await;
    assert_eq!(
        first.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        first.error_message
    );
    let ContentBlock::Thinking(t) = &first.content[0] else {
        panic!("{:?}", first.content)
    };
    assert_eq!(
        (t.thinking.as_str(), t.thinking_signature.as_deref()),
        ("Let me look.", Some("U0lHLTE="))
    );
    let call = first.tool_calls().next().unwrap().clone();
    assert_eq!(call.thought_signature.as_deref(), Some("U0lHLTI="));
    // Through a session file and back.
    let mut transcript = vec![
        Message::user("go"),
        Message::Assistant(first),
        Message::ToolResult(ToolResultMessage::new(
            &call.id,
            "read",
            vec![ContentBlock::text("x!")],
        )),
    ];
    let saved = serde_json::to_string(&transcript).unwrap();
    assert!(
        saved.contains("\"thinkingSignature\":\"U0lHLTE=\"")
            && saved.contains("\"thoughtSignature\":\"U0lHLTI=\""),
        "{saved}"
    );
    transcript = serde_json::from_str(&saved).unwrap();
    let second = complete(
        &client(&server),
        &model(),
        &ctx(transcript.clone()),
        options,
    )
    .await;
    assert_eq!(second.text(), "ok", "{:?}", second.error_message);
    // Another model gets neither signatures nor thinking as thinking.
    let mut other = model();
    other.id = "gemini-2.5-flash".into();
    let third = complete(
        &client(&server),
        &other,
        &ctx(transcript),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(third.text(), "ok", "{:?}", third.error_message);

    let requests = server.requests();
    assert_eq!(
        requests[0].body["generationConfig"],
        json!({"maxOutputTokens": 4096, "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 32768}})
    );
    let body = &requests[1].body;
    check_request(body).unwrap();
    assert_eq!(
        body["contents"][1]["parts"],
        json!([
            {"text": "Let me look.", "thought": true, "thoughtSignature": "U0lHLTE="},
            {"text": "Reading."},
            {"functionCall": {"name": "read", "args": {"path": "x"}}, "thoughtSignature": "U0lHLTI="},
        ])
    );
    let body = &requests[2].body;
    check_request(body).unwrap();
    assert_eq!(
        body["contents"][1]["parts"],
        json!([
            {"text": "Let me look."},
            {"text": "Reading."},
            {"functionCall": {"name": "read", "args": {"path": "x"}}},
        ])
    );
    assert!(!body.to_string().contains("U0lH"));
}

#[tokio::test]
async fn safety_prompt_block_malformed_call_and_length() {
    let server = serve(vec![
        GeminiScript::new()
            .text(&["Sure, here"])
            .finish("SAFETY", usage()),
        prompt_blocked("PROHIBITED_CONTENT"),
        GeminiScript::new().finish("MALFORMED_FUNCTION_CALL", usage()),
        GeminiScript::new()
            .text(&["long"])
            .finish("MAX_TOKENS", usage()),
        GeminiScript::new().finish("RECITATION", usage()),
    ])
    .await;
    let safety = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(safety.stop_reason, StopReason::Error);
    assert!(
        safety.error_message.as_deref().unwrap().contains("SAFETY"),
        "{:?}",
        safety.error_message
    );
    assert_eq!(safety.text(), "Sure, here");
    assert_eq!(safety.usage.output, 50);
    let blocked = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(blocked.stop_reason, StopReason::Error);
    assert_eq!(
        blocked.error_message.as_deref(),
        Some("Gemini blocked the prompt (PROHIBITED_CONTENT)")
    );
    let malformed = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(malformed.stop_reason, StopReason::Error);
    let m = malformed.error_message.unwrap();
    assert!(
        m.contains("MALFORMED_FUNCTION_CALL") && m.contains("print(default_api"),
        "{m}"
    );
    let length = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(
        length.stop_reason,
        StopReason::Length,
        "{:?}",
        length.error_message
    );
    let recitation = ask(&server, vec![Message::user("hi")]).await;
    assert!(recitation.error_message.unwrap().contains("RECITATION"));
}

#[tokio::test]
async fn a_disconnect_mid_stream_keeps_the_partial_text_and_errors() {
    let server = serve(vec![GeminiScript::new().text(&["Hal", "f"]).cut()]).await;
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.text(), "Half");
    assert!(msg.error_message.unwrap().contains("stream ended"));
}

#[tokio::test]
async fn abort_mid_stream() {
    let slow = GeminiScript::new()
        .text(&["a", "b", "c", "d", "e", "f"])
        .stop(usage())
        .delay_each(Duration::from_secs(5));
    let server = serve(vec![slow]).await;
    let options = StreamOptions::default();
    let cancel = options.cancel.clone();
    let mut events = client(&server).stream(&model(), &ctx(vec![Message::user("hi")]), options);
    // The request is on the wire before the cancel: wait for the fake to record it.
    while server.requests().is_empty() {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cancel.cancel();
    let mut last = None;
    while let Some(e) = events.next().await {
        last = Some(e);
    }
    let Some(AssistantMessageEvent::Error { reason, error }) = last else {
        panic!("{last:?}")
    };
    assert_eq!(reason, StopReason::Aborted);
    assert_eq!(error.stop_reason, StopReason::Aborted);
}

#[tokio::test]
async fn retry_delay_within_the_cap_is_waited_and_beyond_it_fails_at_once() {
    let server = serve(vec![
        rate_limited("0.02s"),
        GeminiScript::new().text(&["after"]).stop(usage()),
        rate_limited("3600s"),
    ])
    .await;
    let ok = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(ok.text(), "after", "{:?}", ok.error_message);
    assert_eq!(server.requests().len(), 2);
    let refused = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(refused.stop_reason, StopReason::Error);
    let m = refused.error_message.unwrap();
    assert!(
        m.starts_with("HTTP 429: You exceeded your current quota"),
        "{m}"
    );
    assert!(
        m.contains("retry after 3600 s, more than the 60 s cap"),
        "{m}"
    );
    // Not retried.
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn an_unknown_schema_field_gets_one_resend_with_legacy_parameters() {
    let server = serve(vec![
        error(400, "INVALID_ARGUMENT", "Invalid JSON payload received. Unknown name \"parametersJsonSchema\" at 'tools[0].function_declarations[0]': Cannot find field."),
        GeminiScript::new().text(&["ok"]).stop(usage()),
        error(400, "INVALID_ARGUMENT", "Invalid JSON payload received. Unknown name \"x\""),
        error(400, "INVALID_ARGUMENT", "still no"),
    ])
    .await;
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(msg.text(), "ok", "{:?}", msg.error_message);
    let requests = server.requests();
    let decl = &requests[1].body["tools"][0]["functionDeclarations"][0];
    assert!(decl.get("parametersJsonSchema").is_none());
    assert_eq!(
        decl["parameters"],
        json!({"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer","nullable":true}},"required":["path"]})
    );
    // Only one resend.
    let failed = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(failed.error_message.as_deref(), Some("HTTP 400: still no"));
    assert_eq!(server.requests().len(), 4);
}
