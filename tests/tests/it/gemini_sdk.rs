//! The official `google-genai` Python SDK referees our Gemini code, both
//! ways (`pip install google-genai`; `.ci/run` installs it):
//! - the SDK streams from the fake Gemini server, so the fake the other
//!   tests trust speaks the protocol as the vendor's SDK reads it;
//! - the request bodies our client sent are validated with the SDK's
//!   pydantic request types, which refuse unknown keys.
//!
//! Without the SDK the tests are skipped with how to install it; on CI
//! (`CI=true`) they fail instead.

use std::path::{Path, PathBuf};

use agent_ai::providers::google::GoogleClient;
use agent_ai::{
    ContentBlock, Context, Message, Model, ReasoningEffort, StopReason, StreamOptions, Tool,
    ToolResultMessage, complete,
};
use serde_json::{Value, json};
use test_support::gemini::{GeminiScript, Usage, prompt_blocked, rate_limited};
use test_support::http_server::serve;

fn sdk_available() -> bool {
    test_support::python_package("google.genai, pydantic", "google-genai")
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/gemini_sdk.py")
}

/// Runs the referee script; its stdout as JSON, or a panic with its stderr.
async fn referee(mode: &str, arg: &str) -> Value {
    test_support::python_referee(&script(), &[mode, arg]).await
}

fn usage() -> Usage {
    Usage {
        prompt: 100,
        cached: 60,
        candidates: 30,
        thoughts: 20,
    }
}

/// Thinking, text and two parallel calls, as one response.
fn full_script() -> GeminiScript {
    GeminiScript::new()
        .thinking(&["Think", "ing."], "U0lHLTE=")
        .text(&["Hel", "lo"])
        .calls(&[
            ("read", json!({"path": "x"}), None, Some("U0lHLTI=")),
            ("read", json!({"path": "y"}), Some("srv-2"), None),
        ])
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_reads_every_chunk_of_the_fake() {
    if !sdk_available() {
        return;
    }
    let server = serve(vec![
        full_script().stop(usage()),
        GeminiScript::new()
            .text(&["Sure"])
            .finish("SAFETY", usage()),
        prompt_blocked("PROHIBITED_CONTENT"),
        rate_limited("12s"),
    ])
    .await;
    let summary = referee("stream", &server.base).await;
    assert_eq!(summary["text"], "Hello");
    assert_eq!(summary["thoughts"], "Thinking.");
    assert_eq!(summary["signatures"], json!(["SIG-1", "SIG-2"]));
    assert_eq!(
        summary["calls"],
        json!([["read", {"path": "x"}, null], ["read", {"path": "y"}, "srv-2"]])
    );
    assert_eq!(summary["usage"], json!([100, 60, 30, 20, 150]));
    assert_eq!(summary["finish"], json!(["STOP"]));
    assert_eq!(summary["safety"], "SAFETY");
    assert_eq!(summary["blocked"], "PROHIBITED_CONTENT");
    assert_eq!(
        summary["rate_limited"],
        json!([429, "RESOURCE_EXHAUSTED", ["12s"]])
    );
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths[0],
        "/v1beta/models/gemini-fake:streamGenerateContent?alt=sse"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn our_request_bodies_pass_the_sdks_request_types() {
    if !sdk_available() {
        return;
    }
    let ok = || GeminiScript::new().text(&["ok"]).stop(usage());
    let server = serve(vec![full_script().stop(usage()), ok(), ok(), ok()]).await;
    let base = format!("{}/v1beta", server.base);
    let client = GoogleClient::new(&base, Some("k".into()));
    let mut model = Model::new("google", "gemini-2.5-flash");
    model.reasoning = true;
    model.input = vec!["text".into(), "image".into()];
    let tools = vec![
        Tool::new(
            "read",
            "Read a file",
            json!({"type":"object","properties":{"path":{"type":"string"},"limit":{"type":["integer","null"]},
                "mode":{"oneOf":[{"const":"a"},{"const":"b"}]}},"required":["path"],"additionalProperties":false}),
        ),
        Tool::new("ls", "List", json!({"type":"object","properties":{}})),
    ];
    let options = || StreamOptions {
        max_tokens: Some(4096),
        temperature: Some(0.5),
        reasoning: Some(ReasoningEffort::Medium),
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
    // 1: a first turn; it answers with thinking, text and two calls.
    let answer = complete(&client, &model, &context, options()).await;
    assert_eq!(
        answer.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        answer.error_message
    );
    let ids: Vec<String> = answer.tool_calls().map(|c| c.id.clone()).collect();
    // 2: the whole transcript back (signatures echoed), one result an image.
    context.messages.push(Message::Assistant(answer));
    context
        .messages
        .push(Message::ToolResult(ToolResultMessage::new(
            &ids[0],
            "read",
            vec![ContentBlock::text("x")],
        )));
    context
        .messages
        .push(Message::ToolResult(ToolResultMessage::new(
            &ids[1],
            "read",
            vec![ContentBlock::image("iVBORw0KGgo=", "image/png")],
        )));
    let second = complete(&client, &model, &context, options()).await;
    assert_eq!(second.text(), "ok", "{:?}", second.error_message);
    // 3: the same transcript to another model.
    let other = Model::new("google", "gemini-2.5-pro");
    let third = complete(&client, &other, &context, StreamOptions::default()).await;
    assert_eq!(third.text(), "ok", "{:?}", third.error_message);
    // 4: the legacy `parameters` form, checked as the SDK's `Schema`.
    let legacy = GoogleClient::new(&base, None).with_legacy_parameters(true);
    let fourth = complete(&legacy, &model, &context, options()).await;
    assert_eq!(fourth.text(), "ok", "{:?}", fourth.error_message);

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 4);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bodies.json");
    std::fs::write(&file, serde_json::to_string(&bodies).unwrap()).unwrap();
    let checked = referee("validate", file.to_str().unwrap()).await;
    assert_eq!(checked["bodies"], 4);
    let all = serde_json::to_string(&bodies).unwrap();
    for key in [
        "\"thoughtSignature\"",
        "\"thought\":true",
        "\"functionCall\"",
        "\"functionResponse\"",
        "\"inlineData\"",
        "\"thinkingConfig\"",
        "\"parametersJsonSchema\"",
        "\"nullable\"",
    ] {
        assert!(all.contains(key), "{key} never sent");
    }
}
