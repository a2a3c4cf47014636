//! The loop through a provider, failed calls, odd servers (no index, no
//! streaming, a base with `/v1`) and refused connections.

use std::sync::Arc;

use agent_ai::providers::anthropic::AnthropicClient;
use agent_ai::providers::openai::OpenAiClient;
use agent_ai::{Model, ModelClient, StopReason, StreamOptions, complete};
use serde_json::json;
use test_support::http_server::{Reply, serve};

use super::{anthropic, chunk, ctx, ev, fast_retry, openai};

#[tokio::test]
async fn full_loop_sends_the_tool_result_back() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "file body\n").unwrap();
    let server = serve(vec![
        Reply::sse(&[
            &chunk(json!({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.txt\"}"}}]}), Some("tool_calls")),
            "[DONE]",
        ]),
        Reply::sse(&[&chunk(json!({"content":"It says: file body"}), Some("stop")), "[DONE]"]),
    ])
    .await;
    let client = Arc::new(OpenAiClient::new(format!("{}/v1", server.base), None));
    let session = coding_agent::AgentSessionBuilder::new(Model::new("openai", "gpt-test"), client)
        .cwd(dir.path())
        .builtin_tools(tools_builtin::all_tools(dir.path()))
        .settings(coding_agent::Settings::default())
        .context_files(false)
        .build()
        .unwrap();
    let outcome = session.prompt("what is in a.txt?").await.unwrap();
    assert_eq!(outcome.final_text, "It says: file body");
    assert_eq!(outcome.stop_reason, StopReason::Stop);
    assert_eq!(session.last_assistant_text(), "It says: file body");
    let last = session
        .agent()
        .messages()
        .last()
        .unwrap()
        .as_assistant()
        .unwrap()
        .clone();
    assert_eq!(last.text(), "It says: file body");
    let second = &server.requests()[1].body;
    let messages = second["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 2]["role"], "assistant");
    assert_eq!(messages[n - 2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        messages[n - 2]["tool_calls"][0]["function"]["arguments"],
        "{\"path\":\"a.txt\"}"
    );
    assert_eq!(
        messages[n - 1],
        json!({"role":"tool","tool_call_id":"call_1","content":"file body\n"})
    );
    let offered: Vec<&str> = second["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["read", "bash", "edit", "write"]);
}

#[tokio::test]
async fn a_failed_model_call_is_an_error_of_prompt() {
    let server = serve(vec![Reply::status(
        401,
        r#"{"error":{"message":"Incorrect API key provided"}}"#,
    )])
    .await;
    let client = Arc::new(OpenAiClient::new(
        format!("{}/v1", server.base),
        Some("wrong".into()),
    ));
    let session = coding_agent::AgentSessionBuilder::new(Model::new("openai", "gpt-test"), client)
        .settings(coding_agent::Settings::default())
        .context_files(false)
        .build()
        .unwrap();
    let err = session.prompt("hello").await.unwrap_err();
    assert!(err.to_string().contains("HTTP 401"), "{err}");
    let outcome = err.outcome().unwrap();
    assert_eq!(outcome.stop_reason, StopReason::Error);
    assert_eq!(
        outcome.error_message.as_deref(),
        Some("HTTP 401: Incorrect API key provided")
    );
    assert!(matches!(err, coding_agent::AgentError::RunFailed(_)));
}

#[tokio::test]
async fn invalid_tool_name_is_an_error_message() {
    let server = serve(vec![]).await;
    let client = OpenAiClient::new(&server.base, None);
    let mut context = ctx();
    context.tools[0].name = "bad name".into();
    let msg = complete(
        &client,
        &Model::new("openai", "m"),
        &context,
        StreamOptions::default(),
    )
    .await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert!(msg.error_message.unwrap().contains("bad name"));
    let _ = client.stream(&Model::new("openai", "m"), &ctx(), StreamOptions::default());
}

#[tokio::test]
async fn openai_calls_without_index_and_anthropic_base_with_v1() {
    let (msg, _) = openai(vec![Reply::sse(&[
        &chunk(json!({"tool_calls":[{"id":"x1","type":"function","function":{"name":"read","arguments":"{\"path\":"}}]}), None),
        &chunk(json!({"tool_calls":[{"function":{"arguments":"\"a\"}"}}]}), None),
        &chunk(json!({"tool_calls":[{"id":"x2","type":"function","function":{"name":"read","arguments":"{\"path\":\"b\"}"}}]}), None),
        &chunk(json!({}), Some("tool_calls")),
        "[DONE]",
    ])])
    .await;
    let calls: Vec<_> = msg
        .tool_calls()
        .map(|c| (c.id.clone(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("x1".into(), json!({"path":"a"})),
            ("x2".into(), json!({"path":"b"}))
        ]
    );

    let server = serve(vec![Reply::sse(&[
        &ev(json!({"type":"message_start","message":{"usage":{"input_tokens":1}}})),
        &ev(json!({"type":"message_stop"})),
    ])])
    .await;
    let client = AnthropicClient::new(format!("{}/v1/", server.base), None);
    let msg = complete(
        &client,
        &Model::new("anthropic", "m"),
        &ctx(),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(server.requests()[0].path, "/v1/messages");
}

#[tokio::test]
async fn servers_that_ignore_stream_true_still_work() {
    let (msg, _) = openai(vec![Reply::status(
        200,
        &json!({
            "id": "c", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Reading.",
                "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"z.txt\"}"}}]
            }}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
        })
        .to_string(),
    )])
    .await;
    assert_eq!(
        msg.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        msg.error_message
    );
    assert_eq!(msg.text(), "Reading.");
    assert_eq!(
        msg.tool_calls().next().unwrap().arguments,
        json!({"path": "z.txt"})
    );
    assert_eq!(msg.usage.total_tokens, 9);

    let (msg, _) = anthropic(vec![Reply::status(
        200,
        &json!({
            "id": "m", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [
                {"type": "text", "text": "Let me read it."},
                {"type": "tool_use", "id": "toolu_9", "name": "read", "input": {"path": "z.txt"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 11, "output_tokens": 5}
        })
        .to_string(),
    )])
    .await;
    assert_eq!(
        msg.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        msg.error_message
    );
    assert_eq!(msg.text(), "Let me read it.");
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(
        (call.id.as_str(), call.arguments.clone()),
        ("toolu_9", json!({"path": "z.txt"}))
    );
    assert_eq!((msg.usage.input, msg.usage.output), (11, 5));
}

/// A refused connection names the cause and says it was retried, without
/// reqwest's "error sending request" wrapper.
#[tokio::test]
async fn a_refused_connection_names_the_cause_and_the_retries() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = OpenAiClient::new(
        format!("http://127.0.0.1:{port}/v1"),
        Some("sk-test".into()),
    )
    .with_retry(fast_retry());
    let msg = complete(
        &client,
        &Model::new("openai", "gpt-test"),
        &ctx(),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    let error = msg.error_message.unwrap_or_default();
    assert!(
        error.starts_with("cannot connect to http://127.0.0.1:"),
        "{error}"
    );
    assert!(
        error.to_lowercase().contains("connection refused"),
        "{error}"
    );
    assert!(error.ends_with("(tried 3 times)"), "{error}");
    assert!(!error.contains("error sending request"), "{error}");
}
