//! The official `anthropic` and `openai` Python SDKs read our fake
//! Anthropic and Chat Completions servers (`test_support::anthropic`,
//! `test_support::chat_completions`) with their own stream helpers, so the
//! fakes the other tests (the handoff matrix among them) trust speak the
//! protocols as the vendors' SDKs read them. Without the SDKs the tests
//! are skipped with how to install them; on CI (`CI=true`) they fail.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::anthropic::AnthropicScript;
use test_support::chat_completions::ChatScript;
use test_support::http_server::serve;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/request_sdk.py")
}

#[tokio::test]
async fn the_anthropic_sdk_reads_the_fake_messages_stream() {
    if !test_support::python_package("anthropic, pydantic", "anthropic") {
        return;
    }
    let server = serve(vec![
        AnthropicScript::new()
            .thinking("let me look", "sig-1")
            .text_in(&["Rea", "ding."])
            .tool_use("toolu_01", "read", &json!({"path": "a.txt"}))
            .stop("tool_use"),
    ])
    .await;
    let summary =
        test_support::python_referee(&script(), &["stream-anthropic-messages", &server.base]).await;
    assert_eq!(summary["stop_reason"], "tool_use", "{summary}");
    assert_eq!(
        summary["blocks"],
        json!([
            {"thinking": "let me look", "signature": "sig-1"},
            {"text": "Reading."},
            {"tool_use": "toolu_01", "name": "read", "input": {"path": "a.txt"}},
        ])
    );
    assert_eq!(summary["usage"], json!({"input": 20, "output": 30}));
}

#[tokio::test]
async fn the_openai_sdk_reads_the_fake_chat_completions_stream() {
    if !test_support::python_package("openai, pydantic", "openai") {
        return;
    }
    let server = serve(vec![
        ChatScript::new()
            .reasoning("let me look")
            .content("Reading.")
            .call("call_1", "read", &json!({"path": "a.txt"}))
            .call("call_2", "ls", &json!({}))
            .finish("tool_calls"),
    ])
    .await;
    let summary: Value =
        test_support::python_referee(&script(), &["stream-openai-completions", &server.base]).await;
    assert_eq!(summary["text"], "Reading.", "{summary}");
    assert_eq!(summary["reasoning"], "let me look");
    assert_eq!(summary["finish_reason"], "tool_calls");
    assert_eq!(
        summary["calls"],
        json!([
            {"id": "call_1", "name": "read", "arguments": "{\"path\":\"a.txt\"}"},
            {"id": "call_2", "name": "ls", "arguments": "{}"},
        ])
    );
    assert_eq!(summary["usage"], json!({"input": 20, "output": 30}));
}
