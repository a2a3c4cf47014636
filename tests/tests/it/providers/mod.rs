//! The HTTP providers against a real server on 127.0.0.1 streaming
//! recorded-shape SSE bodies, a module per theme; the shared clients and
//! event builders here.

mod anthropic;
mod openai;
mod options;
mod servers;
mod strict;

use std::time::Duration;

use agent_ai::providers::RetryPolicy;
use agent_ai::providers::anthropic::AnthropicClient;
use agent_ai::providers::openai::OpenAiClient;
use agent_ai::{AssistantMessage, Context, Message, Model, StreamOptions, Tool, complete};
use serde_json::json;
use test_support::http_server::{Reply, serve};

fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        ..RetryPolicy::default()
    }
}

fn ctx() -> Context {
    Context {
        system_prompt: Some("be brief".into()),
        messages: vec![Message::user("hi")],
        tools: vec![Tool::new(
            "read",
            "Read a file",
            json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
        )],
    }
}

async fn openai(replies: Vec<Reply>) -> (AssistantMessage, test_support::http_server::TestServer) {
    let server = serve(replies).await;
    let client = OpenAiClient::new(format!("{}/v1", server.base), Some("sk-test".into()))
        .with_retry(fast_retry());
    let msg = complete(
        &client,
        &Model::new("openai", "gpt-test"),
        &ctx(),
        StreamOptions::default(),
    )
    .await;
    (msg, server)
}

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    json!({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":delta,"finish_reason":finish}]}).to_string()
}

async fn anthropic(
    replies: Vec<Reply>,
) -> (AssistantMessage, test_support::http_server::TestServer) {
    let server = serve(replies).await;
    let client =
        AnthropicClient::new(&server.base, Some("ak-test".into())).with_retry(fast_retry());
    let msg = complete(
        &client,
        &Model::new("anthropic", "claude-test"),
        &ctx(),
        StreamOptions::default(),
    )
    .await;
    (msg, server)
}

fn ev(v: serde_json::Value) -> String {
    format!("event: {}\ndata: {}", v["type"].as_str().unwrap(), v)
}

fn openai_text_reply() -> Reply {
    Reply::sse(&[
        &chunk(json!({"role":"assistant","content":"ok"}), None),
        &chunk(json!({}), Some("stop")),
        "[DONE]",
    ])
}

fn anthropic_text_reply() -> Reply {
    Reply::sse(&[
        &ev(
            json!({"type":"message_start","message":{"id":"m","usage":{"input_tokens":1,"output_tokens":1}}}),
        ),
        &ev(
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        ),
        &ev(
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}),
        ),
        &ev(json!({"type":"content_block_stop","index":0})),
        &ev(
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}),
        ),
        &ev(json!({"type":"message_stop"})),
    ])
}
