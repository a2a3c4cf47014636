//! The request bodies of representative requests, pinned byte for byte
//! (key order included) for every HTTP provider: a system prompt, text and
//! an image from the user, this model's own signed thinking, text and a
//! tool call, a tool result with an image, a tool, thinking and caching;
//! and a plain request (no thinking, a temperature, caching off).
//!
//! The expected bodies are in `crates/ai/tests/wire/`, pretty-printed in
//! the order the keys go on the wire. After a deliberate change of a body,
//! `WIRE_DUMP=<dir> cargo test -p agent-ai wire_tests` writes the new ones
//! there to compare and copy over.

use serde_json::{Value, json};

use crate::content::{ContentBlock, TextContent, ThinkingContent, ToolCall};
use crate::context::Context;
use crate::message::{AssistantMessage, Message, StopReason, ToolResultMessage, UserContent};
use crate::model::Model;
use crate::stream::{CacheRetention, ReasoningEffort, StreamOptions};
use crate::tool::Tool;

fn model(provider: &str, api: &str, id: &str) -> Model {
    let mut m = Model::new(provider, id);
    m.api = api.into();
    m.reasoning = true;
    m.max_tokens = 64_000;
    m.input = vec!["text".into(), "image".into()];
    m
}

/// A transcript whose assistant turn is `model`'s own, so its signatures
/// go back.
fn context(model: &Model, thinking_signature: &str, text_signature: Option<&str>) -> Context {
    let mut answer = AssistantMessage::empty(&model.provider, &model.id);
    answer.api = Some(model.api.clone());
    answer.stop_reason = StopReason::ToolUse;
    answer.content = vec![
        ContentBlock::Thinking(ThinkingContent {
            thinking: "plan".into(),
            thinking_signature: Some(thinking_signature.into()),
        }),
        ContentBlock::Text(TextContent {
            text: "Reading.".into(),
            text_signature: text_signature.map(Into::into),
        }),
        ContentBlock::ToolCall(ToolCall::new("call_1", "read", json!({"path": "a.txt"}))),
    ];
    Context {
        system_prompt: Some("Be brief.".into()),
        messages: vec![
            Message::User(crate::message::UserMessage {
                content: UserContent::Blocks(vec![
                    ContentBlock::text("look"),
                    ContentBlock::image("AAAA", "image/png"),
                ]),
                timestamp: 0,
            }),
            Message::Assistant(answer),
            Message::ToolResult(ToolResultMessage::new(
                "call_1",
                "read",
                vec![
                    ContentBlock::text("file body"),
                    ContentBlock::image("BBBB", "image/jpeg"),
                ],
            )),
            Message::user("thanks"),
        ],
        tools: vec![Tool::new(
            "read",
            "Read a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        )],
    }
}

fn thinking() -> StreamOptions {
    StreamOptions {
        max_tokens: Some(1000),
        temperature: Some(0.5),
        reasoning: Some(ReasoningEffort::High),
        session_id: Some("session-1".into()),
        cache_retention: CacheRetention::Long,
        ..StreamOptions::default()
    }
}

fn plain() -> StreamOptions {
    StreamOptions {
        temperature: Some(0.5),
        cache_retention: CacheRetention::None,
        ..StreamOptions::default()
    }
}

/// Compares `body`, as sent, with the golden file `name` (and writes it
/// to `$WIRE_DUMP` when that is set).
fn check(name: &str, golden: &str, body: &Value) {
    let sent = serde_json::to_string_pretty(body).unwrap();
    if let Ok(dir) = std::env::var("WIRE_DUMP") {
        std::fs::write(format!("{dir}/{name}.json"), format!("{sent}\n")).unwrap();
    }
    assert_eq!(
        sent,
        golden.trim_end(),
        "the request body of {name} changed"
    );
}

macro_rules! check {
    ($name:literal, $body:expr) => {
        check(
            $name,
            include_str!(concat!("../../tests/wire/", $name, ".json")),
            &$body,
        )
    };
}

#[cfg(feature = "anthropic")]
#[test]
fn anthropic() {
    use super::anthropic::AnthropicClient;
    let m = model("anthropic", "anthropic-messages", "claude-sonnet-4-5");
    let client = AnthropicClient::new("https://api.anthropic.com", None);
    check!(
        "anthropic-thinking",
        client.request_body(&m, &context(&m, "SIG", None), &thinking())
    );
    let mut adaptive = m.clone();
    adaptive.compat.adaptive_thinking = true;
    check!(
        "anthropic-adaptive",
        client.request_body(&adaptive, &context(&adaptive, "SIG", None), &thinking())
    );
    check!(
        "anthropic-plain",
        client.request_body(&m, &context(&m, "SIG", None), &plain())
    );
}

#[cfg(feature = "openai")]
#[test]
fn openai() {
    use super::openai::OpenAiClient;
    let m = model("openai", "openai-completions", "gpt-5");
    let client = OpenAiClient::new("https://api.openai.com/v1", None);
    check!(
        "openai-thinking",
        client.request_body(&m, &context(&m, "SIG", None), &thinking())
    );
    let mut old = m.clone();
    old.compat.max_tokens_field = crate::model::MaxTokensField::MaxTokens;
    check!(
        "openai-max-tokens",
        client.request_body(&old, &context(&old, "SIG", None), &thinking())
    );
}

#[cfg(feature = "openai-responses")]
#[test]
fn openai_responses() {
    use super::openai_responses::OpenAiResponsesClient;
    let m = model("openai", "openai-responses", "gpt-5");
    let client = OpenAiResponsesClient::new("https://api.openai.com/v1", None);
    let reasoning = r#"{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"ENC"}"#;
    let text = Some(r#"{"v":1,"id":"msg_1"}"#);
    let calls = context(&m, reasoning, text);
    check!(
        "responses-thinking",
        client.request_body(&m, &calls, &thinking())
    );
    check!("responses-plain", client.request_body(&m, &calls, &plain()));
}

#[cfg(feature = "google")]
#[test]
fn google() {
    use super::google::GoogleClient;
    let m = model("google", "google-generative-ai", "gemini-2.5-pro");
    let client = GoogleClient::new("https://generativelanguage.googleapis.com/v1beta", None);
    let calls = context(&m, "U0lH", Some("VFNJRw=="));
    check!(
        "google-thinking",
        client.request_body(&m, &calls, &thinking())
    );
    check!("google-plain", client.request_body(&m, &calls, &plain()));
    check!(
        "google-legacy",
        client
            .with_legacy_parameters(true)
            .request_body(&m, &calls, &plain())
    );
}

#[cfg(feature = "bedrock")]
#[test]
fn bedrock() {
    use super::bedrock::BedrockClient;
    let m = model(
        "amazon-bedrock",
        "bedrock-converse-stream",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    );
    let client = BedrockClient::new();
    check!(
        "bedrock-thinking",
        client.request_body(&m, &context(&m, "SIG", None), &thinking())
    );
    let mut adaptive = m.clone();
    adaptive.compat.adaptive_thinking = true;
    check!(
        "bedrock-adaptive",
        client.request_body(&adaptive, &context(&adaptive, "SIG", None), &thinking())
    );
    let nova = model(
        "amazon-bedrock",
        "bedrock-converse-stream",
        "amazon.nova-pro-v1:0",
    );
    check!(
        "bedrock-nova",
        client.request_body(&nova, &context(&nova, "SIG", None), &plain())
    );
}
