//! The Responses API client against the fake Responses server
//! (`test_support::openai_responses`) on 127.0.0.1: real HTTP, SSE as
//! OpenAI streams it, the request bodies checked the way the service
//! checks a `store: false` request.

use std::time::Duration;

use agent_ai::providers::RetryPolicy;
use agent_ai::providers::openai::OpenAiClient;
use agent_ai::providers::openai_responses::OpenAiResponsesClient;
use agent_ai::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, Context, Message, Model, ModelClient,
    StopReason, StreamOptions, Tool, ToolResultMessage, complete,
};
use futures::StreamExt;
use serde_json::json;
use test_support::http_server::{Reply, TestServer, serve};
use test_support::openai_responses::{Call, ResponseScript, Usage, check_request, rate_limited};

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
    let mut m = Model::new("openai", "gpt-fake");
    m.api = "openai-responses".into();
    m.reasoning = true;
    m
}

fn client(server: &TestServer) -> OpenAiResponsesClient {
    OpenAiResponsesClient::new(format!("{}/v1", server.base), Some("sk-test".into()))
        .with_retry(fast_retry())
}

fn read_tool() -> Tool {
    Tool::new(
        "read",
        "Read a file",
        json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
    )
}

fn ctx(messages: Vec<Message>) -> Context {
    Context {
        system_prompt: Some("be brief".into()),
        messages,
        tools: vec![read_tool()],
    }
}

fn tool_result(id: &str, text: &str) -> Message {
    Message::ToolResult(ToolResultMessage::new(
        id,
        "read",
        vec![ContentBlock::text(text)],
    ))
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
        input: 100,
        cached: 60,
        cache_write: 10,
        output: 30,
        reasoning: 20,
    }
}

#[tokio::test]
async fn text_answer_usage_and_request() {
    let server = serve(vec![
        ResponseScript::new("resp_1")
            .text("msg_1", &["Hel", "lo", "!"])
            .completed(usage()),
    ])
    .await;
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "Hello!");
    assert_eq!(msg.api.as_deref(), Some("openai-responses"));
    // input excludes the cached and cache-write tokens; output includes
    // reasoning once.
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.cache_read,
            msg.usage.cache_write,
            msg.usage.output,
            msg.usage.total_tokens
        ),
        (30, 60, 10, 30, 130)
    );
    let ContentBlock::Text(text) = &msg.content[0] else {
        panic!("{:?}", msg.content)
    };
    assert_eq!(
        text.text_signature.as_deref(),
        Some(r#"{"v":1,"id":"msg_1"}"#)
    );
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/responses");
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer sk-test")
    );
    check_request(&req.body).unwrap();
    assert_eq!(req.body["model"], "gpt-fake");
    assert_eq!(req.body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        req.body["input"],
        json!([
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be brief"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        ])
    );
    assert_eq!(
        req.body["tools"][0],
        json!({"type": "function", "name": "read", "description": "Read a file",
            "parameters": {"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}, "strict": false})
    );
}

fn two_calls() -> Reply {
    ResponseScript::new("resp_2")
        .parallel_calls(&[
            Call {
                id: "fc_a",
                call_id: "call_a",
                name: "read",
                pieces: &["{\"pa", "th\":", "\"x.txt\"}"],
            },
            Call {
                id: "fc_b",
                call_id: "call_b",
                name: "read",
                pieces: &["{\"path\"", ":\"y.txt\"}"],
            },
        ])
        .completed(usage())
}

#[tokio::test]
async fn two_parallel_calls_with_arguments_in_pieces() {
    let server = serve(vec![two_calls()]).await;
    let mut stream = client(&server).stream(
        &model(),
        &ctx(vec![Message::user("read both")]),
        StreamOptions::default(),
    );
    let mut ends = Vec::new();
    let mut deltas = 0;
    let mut last = None;
    while let Some(event) = stream.next().await {
        match &event {
            AssistantMessageEvent::ToolCallDelta { .. } => deltas += 1,
            AssistantMessageEvent::ToolCallEnd {
                content_index,
                tool_call,
                ..
            } => ends.push((*content_index, tool_call.id.clone())),
            _ => {}
        }
        last = Some(event);
    }
    let msg = last.unwrap().message().clone();
    assert_eq!(
        msg.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        msg.error_message
    );
    assert!(deltas >= 1);
    assert_eq!(
        ends,
        vec![
            (0, "call_a|fc_a".to_string()),
            (1, "call_b|fc_b".to_string())
        ]
    );
    let calls: Vec<_> = msg
        .tool_calls()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_a|fc_a", "read", json!({"path": "x.txt"})),
            ("call_b|fc_b", "read", json!({"path": "y.txt"})),
        ]
    );
}

/// The reasoning item and the call ids of turn one come back on turn two
/// as the server sent them, after the transcript went through a session
/// file (JSON out and back).
#[tokio::test]
async fn reasoning_and_call_ids_survive_a_session_file_and_are_replayed() {
    let first = ResponseScript::new("resp_3")
        .reasoning("rs_1", &["Need ", "the file."], "ENCRYPTED-1")
        .parallel_calls(&[Call {
            id: "fc_1",
            call_id: "call_1",
            name: "read",
            pieces: &["{\"path\":\"a.txt\"}"],
        }]);
    let sent_reasoning = first
        .events()
        .iter()
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "reasoning")
        .map(|e| e["item"].clone())
        .unwrap();
    let server = serve(vec![
        first.completed(usage()),
        ResponseScript::new("resp_4")
            .text("msg_2", &["It says hi."])
            .completed(usage()),
    ])
    .await;
    let answer = ask(&server, vec![Message::user("read a.txt")]).await;
    assert_eq!(answer.stop_reason, StopReason::ToolUse);
    let ContentBlock::Thinking(thinking) = &answer.content[0] else {
        panic!("{:?}", answer.content)
    };
    assert_eq!(thinking.thinking, "Need the file.");

    let transcript = vec![
        Message::user("read a.txt"),
        Message::Assistant(answer),
        tool_result("call_1|fc_1", "hi"),
    ];
    // Through a session file and back.
    let saved = serde_json::to_string(&transcript).unwrap();
    let restored: Vec<Message> = serde_json::from_str(&saved).unwrap();
    assert_eq!(restored, transcript);

    let second = ask(&server, restored).await;
    assert_eq!(second.text(), "It says hi.");
    let body = &server.requests()[1].body;
    check_request(body).unwrap();
    let items = body["input"].as_array().unwrap();
    assert_eq!(
        items[2], sent_reasoning,
        "the reasoning item replayed whole"
    );
    assert_eq!(
        items[3],
        json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read",
            "arguments": "{\"path\":\"a.txt\"}"})
    );
    assert_eq!(
        items[4],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "hi"})
    );
}

/// Another model's reasoning is not replayed (its encrypted content is
/// meaningless elsewhere) and its call item ids are left out.
#[tokio::test]
async fn another_models_transcript_is_sent_without_its_reasoning_items() {
    let first = ResponseScript::new("resp_5")
        .reasoning("rs_1", &["Plan."], "ENC")
        .parallel_calls(&[Call {
            id: "fc_1",
            call_id: "call_1",
            name: "read",
            pieces: &["{\"path\":\"a\"}"],
        }])
        .completed(usage());
    let server = serve(vec![
        first,
        ResponseScript::new("resp_6")
            .text("m", &["ok"])
            .completed(usage()),
    ])
    .await;
    let answer = ask(&server, vec![Message::user("go")]).await;
    let mut other = model();
    other.id = "gpt-other".into();
    let msg = complete(
        &client(&server),
        &other,
        &ctx(vec![
            Message::user("go"),
            Message::Assistant(answer),
            tool_result("call_1|fc_1", "done"),
        ]),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(msg.text(), "ok");
    let body = &server.requests()[1].body;
    check_request(body).unwrap();
    let items = body["input"].as_array().unwrap();
    assert!(items.iter().all(|i| i["type"] != "reasoning"), "{items:?}");
    assert_eq!(items[2]["content"][0]["text"], "Plan.");
    assert!(items[3].get("id").is_none(), "{}", items[3]);
}

#[tokio::test]
async fn error_event_failed_response_and_length() {
    let server = serve(vec![
        ResponseScript::new("r").text("m", &["par"]).error(
            "server_error",
            "The server had an error processing your request.",
        ),
        ResponseScript::new("r").failed(
            "context_length_exceeded",
            "Your input exceeds the context window of this model.",
        ),
        ResponseScript::new("r")
            .text("m", &["cut"])
            .incomplete("max_output_tokens"),
    ])
    .await;
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.text(), "par");
    assert_eq!(
        msg.error_message.as_deref(),
        Some("server_error: The server had an error processing your request.")
    );
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some("context_length_exceeded: Your input exceeds the context window of this model.")
    );
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(msg.stop_reason, StopReason::Length);
    assert_eq!(msg.text(), "cut");
}

#[tokio::test]
async fn a_disconnect_mid_stream_keeps_the_partial_text_and_errors() {
    let server = serve(vec![ResponseScript::new("r").text("m", &["half"]).cut()]).await;
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.text(), "half");
    assert!(
        msg.error_message
            .as_deref()
            .unwrap()
            .starts_with("Connection lost"),
        "{:?}",
        msg.error_message
    );
}

#[tokio::test]
async fn abort_mid_stream() {
    // Each event 100 ms apart; cancelled at the first text delta.
    let reply = ResponseScript::new("r")
        .text("m", &["a", "b", "c", "d", "e", "f"])
        .completed(usage())
        .delay_each(Duration::from_millis(100));
    let server = serve(vec![reply]).await;
    let options = StreamOptions::default();
    let cancel = options.cancel.clone();
    let mut stream = client(&server).stream(&model(), &ctx(vec![Message::user("hi")]), options);
    let mut last = None;
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::TextDelta { .. }) {
            cancel.cancel();
        }
        last = Some(event);
    }
    let msg = last.unwrap().message().clone();
    assert_eq!(msg.stop_reason, StopReason::Aborted);
    assert!(msg.text().starts_with('a'), "{}", msg.text());
    assert_ne!(msg.text(), "abcdef");
    assert_eq!(server.requests().len(), 1);
}

/// A 429 asking for two days fails at once, saying so; one within the
/// cap is waited for and retried.
#[tokio::test]
async fn retry_after_beyond_the_cap_fails_at_once() {
    let server = serve(vec![rate_limited("172800"), two_calls()]).await;
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    let error = msg.error_message.unwrap();
    assert!(error.starts_with("HTTP 429: Rate limit reached"), "{error}");
    assert!(
        error.contains("the server asked to retry after 172800 s, more than the 60 s cap"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1, "not retried");

    // An HTTP date two days ahead is the same.
    let later = httpdate_in(Duration::from_secs(2 * 86_400));
    let server = serve(vec![rate_limited(&later)]).await;
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert!(
        msg.error_message
            .as_deref()
            .unwrap()
            .contains("more than the 60 s cap"),
        "{:?}",
        msg.error_message
    );
    assert_eq!(server.requests().len(), 1);

    // Within the cap: honoured, then the retry succeeds.
    let server = serve(vec![
        rate_limited("0").header("retry-after-ms", "20"),
        ResponseScript::new("r")
            .text("m", &["ok"])
            .completed(usage()),
    ])
    .await;
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(msg.text(), "ok", "{:?}", msg.error_message);
    assert_eq!(server.requests().len(), 2);
}

/// The cap is the client's to set, and Chat Completions shares it.
#[tokio::test]
async fn the_cap_is_configurable_and_shared_by_chat_completions() {
    let server = serve(vec![rate_limited("5")]).await;
    let client = OpenAiClient::new(format!("{}/v1", server.base), None).with_retry(RetryPolicy {
        max_retry_after: Duration::from_secs(1),
        ..fast_retry()
    });
    let msg = complete(
        &client,
        &Model::new("openai", "gpt-test"),
        &ctx(vec![Message::user("hi")]),
        StreamOptions::default(),
    )
    .await;
    let error = msg.error_message.unwrap();
    assert!(
        error.contains("the server asked to retry after 5 s, more than the 1 s cap"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1);
}

fn httpdate_in(d: Duration) -> String {
    httpdate::fmt_http_date(std::time::SystemTime::now() + d)
}

#[tokio::test]
async fn azure_sends_the_key_header_and_api_version() {
    let server = serve(vec![
        ResponseScript::new("r")
            .text("m", &["ok"])
            .completed(usage()),
    ])
    .await;
    let client =
        OpenAiResponsesClient::azure(format!("{}/openai/v1", server.base), Some("az-key".into()))
            .with_api_version(Some("2025-04-01-preview".into()))
            .with_retry(fast_retry());
    let mut m = model();
    m.provider = "azure-openai-responses".into();
    let msg = complete(
        &client,
        &m,
        &ctx(vec![Message::user("hi")]),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(msg.text(), "ok", "{:?}", msg.error_message);
    assert_eq!(msg.api.as_deref(), Some("azure-openai-responses"));
    let req = &server.requests()[0];
    assert_eq!(
        req.path,
        "/openai/v1/responses?api-version=2025-04-01-preview"
    );
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| k == "api-key" && v == "az-key")
    );
    assert!(!req.headers.iter().any(|(k, _)| k == "authorization"));
    check_request(&req.body).unwrap();
}

#[tokio::test]
async fn a_server_answering_with_one_json_response_still_works() {
    let body = json!({"id": "r", "object": "response", "status": "completed", "output": [
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "whole", "annotations": []}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"}
    ], "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}});
    let server = serve(vec![Reply::status(200, &body.to_string())]).await;
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(
        msg.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        msg.error_message
    );
    assert_eq!(msg.text(), "whole");
    assert_eq!(msg.tool_calls().next().unwrap().id, "call_1|fc_1");
    assert_eq!(msg.usage.total_tokens, 7);
}
