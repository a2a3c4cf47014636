//! The official `openai` Python SDK referees our Responses API code, both
//! ways (`pip install openai`; `.ci/run` installs it):
//! - the SDK streams from the fake Responses server, so the fake the other
//!   tests trust speaks the protocol as the vendor's SDK reads it;
//! - the request bodies our client sent are validated against the SDK's
//!   request types.
//!
//! Without the SDK the tests are skipped with how to install it; on CI
//! (`CI=true`) they fail instead.

use std::path::{Path, PathBuf};

use agent_ai::providers::openai_responses::OpenAiResponsesClient;
use agent_ai::{
    ContentBlock, Context, Message, Model, ReasoningEffort, StopReason, StreamOptions, Tool,
    ToolResultMessage, complete,
};
use serde_json::{Value, json};
use test_support::http_server::serve;
use test_support::openai_responses::{Call, ResponseScript, Usage, rate_limited};

fn sdk_available() -> bool {
    test_support::python_package("openai, pydantic", "openai")
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/openai_responses_sdk.py")
}

/// Runs the referee script; its stdout as JSON, or a panic with its stderr.
async fn referee(mode: &str, arg: &str) -> Value {
    test_support::python_referee(&script(), &[mode, arg]).await
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

/// Reasoning, text and two parallel calls, as one response.
fn full_script() -> ResponseScript {
    ResponseScript::new("resp_1")
        .reasoning("rs_1", &["Think", "ing."], "ENC-1")
        .text("msg_1", &["Hel", "lo"])
        .parallel_calls(&[
            Call {
                id: "fc_a",
                call_id: "call_a",
                name: "read",
                pieces: &["{\"path\":", "\"x\"}"],
            },
            Call {
                id: "fc_b",
                call_id: "call_b",
                name: "read",
                pieces: &["{\"path\":\"y\"}"],
            },
        ])
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_reads_every_event_of_the_fake() {
    if !sdk_available() {
        return;
    }
    let server = serve(vec![
        full_script().completed(usage()),
        full_script().completed(usage()),
        ResponseScript::new("resp_2")
            .text("msg_2", &["par"])
            .error("server_error", "The server had an error."),
        ResponseScript::new("resp_3").failed("invalid_prompt", "Too long."),
        rate_limited("172800"),
    ])
    .await;
    let summary = referee("stream", &format!("{}/v1", server.base)).await;
    let classes: Vec<&str> = summary["classes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for class in [
        "ResponseCreatedEvent",
        "ResponseInProgressEvent",
        "ResponseOutputItemAddedEvent",
        "ResponseReasoningSummaryPartAddedEvent",
        "ResponseReasoningSummaryTextDeltaEvent",
        "ResponseReasoningSummaryTextDoneEvent",
        "ResponseReasoningSummaryPartDoneEvent",
        "ResponseContentPartAddedEvent",
        "ResponseTextDeltaEvent",
        "ResponseTextDoneEvent",
        "ResponseContentPartDoneEvent",
        "ResponseFunctionCallArgumentsDeltaEvent",
        "ResponseFunctionCallArgumentsDoneEvent",
        "ResponseOutputItemDoneEvent",
        "ResponseCompletedEvent",
    ] {
        assert!(classes.contains(&class), "{class} missing from {classes:?}");
    }
    assert_eq!(summary["text"], "Hello");
    assert_eq!(summary["reasoning"], "Thinking.");
    assert_eq!(summary["encrypted_content"], "ENC-1");
    assert_eq!(
        summary["arguments"],
        json!({"fc_a": "{\"path\":\"x\"}", "fc_b": "{\"path\":\"y\"}"})
    );
    assert_eq!(
        summary["calls"],
        json!([
            ["call_a", "fc_a", "read", "{\"path\":\"x\"}"],
            ["call_b", "fc_b", "read", "{\"path\":\"y\"}"]
        ])
    );
    assert_eq!(
        summary["usage"],
        json!({"input_tokens": 100, "cached_tokens": 60, "cache_write_tokens": 10, "output_tokens": 30, "reasoning_tokens": 20, "total_tokens": 130})
    );
    assert_eq!(summary["helper_text"], "Hello");
    assert_eq!(
        summary["helper_items"],
        json!(["reasoning", "message", "function_call", "function_call"])
    );
    assert_eq!(
        summary["error"],
        json!([
            "ResponseErrorEvent",
            "server_error",
            "The server had an error."
        ])
    );
    assert_eq!(
        summary["failed"],
        json!(["ResponseFailedEvent", "invalid_prompt", "Too long."])
    );
    assert_eq!(
        summary["rate_limited"],
        json!([429, "rate_limit_exceeded", "172800"])
    );
}

fn tool_result(id: &str, content: Vec<ContentBlock>) -> Message {
    Message::ToolResult(ToolResultMessage::new(id, "read", content))
}

#[tokio::test(flavor = "multi_thread")]
async fn our_request_bodies_pass_the_sdks_request_types() {
    if !sdk_available() {
        return;
    }
    let server = serve(vec![
        full_script().completed(usage()),
        ResponseScript::new("r2")
            .text("m", &["ok"])
            .completed(usage()),
        ResponseScript::new("r3")
            .text("m", &["ok"])
            .completed(usage()),
    ])
    .await;
    let client = OpenAiResponsesClient::new(format!("{}/v1", server.base), None);
    let mut model = Model::new("openai", "gpt-fake");
    model.reasoning = true;
    model.input = vec!["text".into(), "image".into()];
    let tools = vec![
        Tool::new(
            "read",
            "Read a file",
            json!({"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]}),
        ),
        Tool::new("ls", "List", json!({"type":"object","properties":{}}))
            .with_constrained_sampling(agent_ai::ConstrainedSampling::prefer()),
    ];
    let options = || StreamOptions {
        max_tokens: Some(4096),
        reasoning: Some(ReasoningEffort::Medium),
        session_id: Some("session-1".into()),
        ..Default::default()
    };
    let user = Message::User(agent_ai::UserMessage {
        content: agent_ai::UserContent::Blocks(vec![
            ContentBlock::text("what is in these?"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
        ]),
        timestamp: 0,
    });
    let mut context = Context {
        system_prompt: Some("be brief".into()),
        messages: vec![user],
        tools,
    };
    // 1: a first turn; it answers with reasoning, text and two calls.
    let answer = complete(&client, &model, &context, options()).await;
    assert_eq!(
        answer.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        answer.error_message
    );
    // 2: the whole transcript back, a tool result with an image.
    context.messages.push(Message::Assistant(answer));
    context
        .messages
        .push(tool_result("call_a|fc_a", vec![ContentBlock::text("x")]));
    context.messages.push(tool_result(
        "call_b|fc_b",
        vec![ContentBlock::image("iVBORw0KGgo=", "image/png")],
    ));
    let second = complete(&client, &model, &context, options()).await;
    assert_eq!(second.text(), "ok", "{:?}", second.error_message);
    // 3: the same transcript to another model that does not reason.
    let other = Model::new("openai", "gpt-other");
    let third = complete(&client, &other, &context, StreamOptions::default()).await;
    assert_eq!(third.text(), "ok", "{:?}", third.error_message);

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 3);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bodies.json");
    std::fs::write(&file, serde_json::to_string(&bodies).unwrap()).unwrap();
    let checked = referee("validate", file.to_str().unwrap()).await;
    assert_eq!(checked["bodies"], 3);
    // Every kind of item went through: messages, reasoning, calls, outputs, images.
    let all = serde_json::to_string(&bodies).unwrap();
    for kind in [
        "\"reasoning\"",
        "\"function_call\"",
        "\"function_call_output\"",
        "\"input_image\"",
        "\"output_text\"",
    ] {
        assert!(all.contains(kind), "{kind} never sent");
    }
}
