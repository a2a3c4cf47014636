//! The Bedrock client against the fake Bedrock runtime
//! (`test_support::bedrock`) on 127.0.0.1: real HTTP, event-stream frames
//! with their checksums, request bodies checked the way the service checks
//! them.

use std::time::Duration;

use agent_ai::providers::RetryPolicy;
use agent_ai::providers::bedrock::{AwsCredentials, BedrockClient};
use agent_ai::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, Context, Message, Model, ModelClient,
    ModelCost, ReasoningEffort, StopReason, StreamOptions, Tool, ToolResultMessage, complete,
};
use futures::StreamExt;
use serde_json::json;
use test_support::bedrock::{BedrockScript, Usage, check_request, error, rate_limited};
use test_support::http_server::{TestServer, serve};

const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        ..RetryPolicy::default()
    }
}

fn model() -> Model {
    let mut m = Model::new("amazon-bedrock", MODEL);
    m.api = "bedrock-converse-stream".into();
    m.reasoning = true;
    m.max_tokens = 64_000;
    m.cost = ModelCost {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
    };
    m
}

fn client(server: &TestServer) -> BedrockClient {
    BedrockClient::new()
        .with_base_url(Some(server.base.clone()))
        .with_region("us-west-2")
        .with_credentials(AwsCredentials::new("AKIDEXAMPLE", "secret"))
        .with_retry(fast_retry())
}

fn ctx(messages: Vec<Message>) -> Context {
    Context {
        system_prompt: Some("be brief".into()),
        messages,
        tools: vec![Tool::new(
            "read",
            "Read a file",
            json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
        )],
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
        input: 100,
        output: 50,
        cache_read: 1000,
        cache_write: 200,
    }
}

#[tokio::test]
async fn text_usage_cost_and_the_signed_request() {
    let server = serve(vec![
        BedrockScript::new()
            .text(&["Hel", "lo", "!"])
            .stop("end_turn", usage()),
    ])
    .await;
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "Hello!");
    assert_eq!(msg.api.as_deref(), Some("bedrock-converse-stream"));
    let u = &msg.usage;
    assert_eq!(
        (
            u.input,
            u.output,
            u.cache_read,
            u.cache_write,
            u.total_tokens
        ),
        (100, 50, 1000, 200, 1350)
    );
    // 100*3 + 50*15 + 1000*0.3 + 200*3.75 = 2100 per million.
    assert!((u.cost.total - 0.0021).abs() < 1e-12, "{:?}", u.cost);
    let req = &server.requests()[0];
    assert_eq!(
        req.path,
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    let auth = req.header("authorization").unwrap();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
            && auth.contains("/us-west-2/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature="),
        "{auth}"
    );
    assert!(req.header("x-amz-date").is_some());
    check_request(&req.body).unwrap();
    assert_eq!(req.body["system"][0]["text"], "be brief");
}

#[tokio::test]
async fn parallel_calls_thinking_and_the_next_turn() {
    let server = serve(vec![
        BedrockScript::new()
            .thinking(&["Let me ", "look."], "c2lnbmF0dXJl")
            .text(&["Reading both."])
            .calls(&[
                ("tooluse_A1", "read", &["{\"path\":", "\"a\"}"]),
                ("tooluse_B2", "read", &["{\"path\":\"b\"}"]),
            ])
            .stop("tool_use", usage()),
        BedrockScript::new()
            .text(&["Done"])
            .stop("end_turn", usage()),
    ])
    .await;
    let options = StreamOptions {
        reasoning: Some(ReasoningEffort::Medium),
        ..StreamOptions::default()
    };
    let first = complete(
        &client(&server),
        &model(),
        &ctx(vec![Message::user("read a and b")]),
        options.clone(),
    )
    .await;
    assert_eq!(
        first.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        first.error_message
    );
    let calls: Vec<_> = first
        .tool_calls()
        .map(|c| (c.id.clone(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("tooluse_A1".into(), json!({"path": "a"})),
            ("tooluse_B2".into(), json!({"path": "b"}))
        ]
    );
    let Some(ContentBlock::Thinking(t)) = first.content.first() else {
        panic!("{:?}", first.content)
    };
    assert_eq!(
        (t.thinking.as_str(), t.thinking_signature.as_deref()),
        ("Let me look.", Some("c2lnbmF0dXJl"))
    );
    // Through a session file and back.
    let stored: AssistantMessage =
        serde_json::from_str(&serde_json::to_string(&first).unwrap()).unwrap();
    let messages = vec![
        Message::user("read a and b"),
        Message::Assistant(stored),
        Message::ToolResult(ToolResultMessage::new(
            "tooluse_A1",
            "read",
            vec![ContentBlock::text("A")],
        )),
        Message::ToolResult(ToolResultMessage::new(
            "tooluse_B2",
            "read",
            vec![ContentBlock::text("B")],
        )),
    ];
    let second = complete(&client(&server), &model(), &ctx(messages), options).await;
    assert_eq!(second.text(), "Done", "{:?}", second.error_message);
    let body = &server.requests()[1].body;
    check_request(body).unwrap();
    assert_eq!(
        body["messages"][1]["content"][0],
        json!({"reasoningContent": {"reasoningText": {"text": "Let me look.", "signature": "c2lnbmF0dXJl"}}})
    );
    assert_eq!(
        body["messages"][2]["content"][1]["toolResult"]["toolUseId"],
        "tooluse_B2"
    );
    assert_eq!(
        body["additionalModelRequestFields"]["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192})
    );
}

#[tokio::test]
async fn foreign_tool_ids_are_renamed_the_same_way_on_call_and_result() {
    let server = serve(vec![
        BedrockScript::new().text(&["ok"]).stop("end_turn", usage()),
    ])
    .await;
    let mut other = AssistantMessage::empty("openai", "gpt-5");
    other.content = vec![ContentBlock::ToolCall(agent_ai::ToolCall::new(
        "call_1|fc_9",
        "read",
        json!({"path": "a"}),
    ))];
    other.stop_reason = StopReason::ToolUse;
    let messages = vec![
        Message::user("hi"),
        Message::Assistant(other),
        Message::ToolResult(ToolResultMessage::new(
            "call_1|fc_9",
            "read",
            vec![ContentBlock::text("A")],
        )),
    ];
    let msg = ask(&server, messages).await;
    assert_eq!(msg.text(), "ok", "{:?}", msg.error_message);
    let body = &server.requests()[0].body;
    check_request(body).unwrap();
    // Fitted to Bedrock's alphabet, the same in the call and its result.
    let id = "call_1_fc_9";
    assert_eq!(
        body["messages"][1]["content"][0]["toolUse"]["toolUseId"],
        json!(id)
    );
    assert_eq!(
        body["messages"][2]["content"][0]["toolResult"]["toolUseId"],
        json!(id)
    );
}

#[tokio::test]
async fn exceptions_http_errors_and_filters_say_what_happened() {
    let server = serve(vec![
        BedrockScript::new()
            .text(&["Par"])
            .exception("modelStreamErrorException", "The model stream failed"),
        error(
            400,
            "ValidationException",
            "The provided model identifier is invalid.",
        ),
        BedrockScript::new().stop("guardrail_intervened", usage()),
        BedrockScript::new()
            .text(&["cut"])
            .stop("max_tokens", usage()),
    ])
    .await;
    let m = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(m.stop_reason, StopReason::Error);
    assert_eq!(m.text(), "Par");
    assert_eq!(
        m.error_message.as_deref(),
        Some("Bedrock modelStreamErrorException: The model stream failed")
    );
    let m = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(
        m.error_message.as_deref(),
        Some("HTTP 400 ValidationException: The provided model identifier is invalid.")
    );
    let m = ask(&server, vec![Message::user("hi")]).await;
    assert!(m.error_message.unwrap().contains("guardrail"));
    let m = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(m.stop_reason, StopReason::Length);
}

#[tokio::test]
async fn a_disconnect_mid_stream_keeps_the_partial_text_and_errors() {
    let server = serve(vec![BedrockScript::new().text(&["Hal", "f"]).cut()]).await;
    let msg = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.text(), "Half");
    assert!(msg.error_message.unwrap().contains("stream ended"));
}

#[tokio::test]
async fn retry_after_within_the_cap_is_waited_and_beyond_it_fails_at_once() {
    let server = serve(vec![
        rate_limited(0),
        BedrockScript::new()
            .text(&["after"])
            .stop("end_turn", usage()),
        rate_limited(3600),
    ])
    .await;
    let ok = ask(&server, vec![Message::user("hi")]).await;
    assert_eq!(ok.text(), "after", "{:?}", ok.error_message);
    assert_eq!(server.requests().len(), 2);
    let refused = ask(&server, vec![Message::user("hi")]).await;
    let m = refused.error_message.unwrap();
    assert!(
        m.starts_with("HTTP 429 ThrottlingException: Too many requests"),
        "{m}"
    );
    assert!(
        m.contains("retry after 3600 s, more than the 60 s cap"),
        "{m}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_bearer_token_is_sent_unsigned() {
    let server = serve(vec![
        BedrockScript::new().text(&["ok"]).stop("end_turn", usage()),
    ])
    .await;
    let client = BedrockClient::new()
        .with_base_url(Some(server.base.clone()))
        .with_bearer_token("ABSKexample");
    let msg = complete(
        &client,
        &model(),
        &ctx(vec![Message::user("hi")]),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(msg.text(), "ok", "{:?}", msg.error_message);
    let req = &server.requests()[0];
    let auth: Vec<_> = req
        .headers
        .iter()
        .filter(|(k, _)| k == "authorization" || k == "x-amz-date")
        .collect();
    assert_eq!(
        auth,
        vec![&(
            "authorization".to_string(),
            "Bearer ABSKexample".to_string()
        )]
    );
}

#[tokio::test]
async fn abort_mid_stream() {
    let slow = BedrockScript::new()
        .text(&["a", "b", "c"])
        .stop("end_turn", usage())
        .delay_each(Duration::from_secs(5));
    let server = serve(vec![slow]).await;
    let options = StreamOptions::default();
    let cancel = options.cancel.clone();
    let mut events = client(&server).stream(&model(), &ctx(vec![Message::user("hi")]), options);
    while server.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cancel.cancel();
    let mut last = None;
    while let Some(e) = events.next().await {
        last = Some(e);
    }
    let Some(AssistantMessageEvent::Error { reason, .. }) = last else {
        panic!("{last:?}")
    };
    assert_eq!(reason, StopReason::Aborted);
}
