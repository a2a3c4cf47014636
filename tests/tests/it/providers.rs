//! The HTTP providers against a real server on 127.0.0.1 streaming
//! recorded-shape SSE bodies.

use std::sync::Arc;
use std::time::Duration;

use agent_ai::providers::RetryPolicy;
use agent_ai::providers::anthropic::AnthropicClient;
use agent_ai::providers::openai::OpenAiClient;
use agent_ai::{
    AssistantMessage, ContentBlock, Context, Message, Model, ModelClient, StopReason,
    StreamOptions, Tool, complete,
};
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

#[tokio::test]
async fn anthropic_thinking_text_and_tool_use() {
    let (msg, server) = anthropic(vec![Reply::sse(&[
        &ev(json!({"type":"message_start","message":{"id":"m","usage":{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":1}}})),
        &ev(json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})),
        &ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}})),
        &ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig=="}})),
        &ev(json!({"type":"content_block_stop","index":0})),
        &ev(json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})),
        &ev(json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Reading."}})),
        &ev(json!({"type":"content_block_stop","index":1})),
        &ev(json!({"type":"ping"})),
        &ev(json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}})),
        &ev(json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a"}})),
        &ev(json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":".txt\"}"}})),
        &ev(json!({"type":"content_block_stop","index":2})),
        &ev(json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}})),
        &ev(json!({"type":"message_stop"})),
    ])])
    .await;
    assert_eq!(
        msg.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        msg.error_message
    );
    match &msg.content[0] {
        ContentBlock::Thinking(t) => {
            assert_eq!(t.thinking, "Let me think");
            assert_eq!(t.thinking_signature.as_deref(), Some("sig=="));
        }
        other => panic!("expected thinking, got {other:?}"),
    }
    assert_eq!(msg.text(), "Reading.");
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(
        (call.id.as_str(), call.arguments.clone()),
        ("toolu_1", json!({"path":"a.txt"}))
    );
    assert_eq!(
        (msg.usage.input, msg.usage.cache_read, msg.usage.output),
        (20, 5, 42)
    );
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| k == "x-api-key" && v == "ak-test")
    );
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| k == "anthropic-version" && v == "2023-06-01")
    );
    assert_eq!(req.body["system"][0]["text"], "be brief");
    assert_eq!(
        req.body["tools"][0]["input_schema"]["required"],
        json!(["path"])
    );
    assert!(req.body["max_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn anthropic_error_event_and_retry() {
    let (msg, _) = anthropic(vec![Reply::sse(&[
        &ev(json!({"type":"message_start","message":{"usage":{"input_tokens":1}}})),
        &ev(json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})),
    ])])
    .await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("overloaded_error: Overloaded")
    );

    let (msg, server) = anthropic(vec![
        Reply::status(529, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
        Reply::sse(&[
            &ev(json!({"type":"message_start","message":{"usage":{"input_tokens":1}}})),
            &ev(json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})),
            &ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"fine"}})),
            &ev(json!({"type":"content_block_stop","index":0})),
            &ev(json!({"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":1}})),
            &ev(json!({"type":"message_stop"})),
        ]),
    ])
    .await;
    assert_eq!(msg.stop_reason, StopReason::Length);
    assert_eq!(msg.text(), "fine");
    assert_eq!(server.requests().len(), 2);
}

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

/// Tools for the constrained-sampling tests: `todo` asks for strict mode,
/// `read` does not, `env` requires it with a schema strict mode cannot
/// express (a free-form map).
fn strict_tools(with_env: bool) -> Context {
    let todo = Tool::new(
        "todo",
        "Adds a todo",
        json!({"type":"object","properties":{"item":{"type":"string"},"due":{"type":"string"}},"required":["item"]}),
    )
    .with_constrained_sampling(agent_ai::ConstrainedSampling::prefer());
    let mut context = ctx();
    context.tools.push(todo);
    if with_env {
        context.tools.push(
            Tool::new("env", "Sets variables", json!({"type":"object","properties":{"vars":{"type":"object","additionalProperties":{"type":"string"}}}}))
                .with_constrained_sampling(agent_ai::ConstrainedSampling::require()),
        );
    }
    context
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

#[tokio::test]
async fn openai_sends_strict_only_for_the_tool_that_asks() {
    let server = serve(vec![openai_text_reply()]).await;
    let client = OpenAiClient::new(format!("{}/v1", server.base), None).with_retry(fast_retry());
    let msg = complete(
        &client,
        &Model::new("openai", "gpt-test"),
        &strict_tools(false),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    let tools = server.requests()[0].body["tools"].clone();
    let read = &tools[0]["function"];
    assert_eq!(read["name"], "read");
    assert!(read.get("strict").is_none(), "{read}");
    assert!(read["parameters"].get("additionalProperties").is_none());
    let todo = &tools[1]["function"];
    assert_eq!(todo["strict"], true);
    // Strict-lowered: all required, the optional one nullable, closed.
    assert_eq!(
        todo["parameters"],
        json!({"type":"object","properties":{"item":{"type":"string"},"due":{"type":["string","null"]}},
            "required":["item","due"],"additionalProperties":false})
    );
}

#[tokio::test]
async fn anthropic_sends_strict_only_for_the_tool_that_asks_with_the_beta_header() {
    let server = serve(vec![anthropic_text_reply(), anthropic_text_reply()]).await;
    let client =
        AnthropicClient::new(&server.base, Some("ak-test".into())).with_retry(fast_retry());
    let model = Model::new("anthropic", "claude-test");
    let msg = complete(
        &client,
        &model,
        &strict_tools(false),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    complete(&client, &model, &ctx(), StreamOptions::default()).await;
    let requests = server.requests();
    let beta = |i: usize| {
        requests[i]
            .headers
            .iter()
            .find(|(k, _)| k == "anthropic-beta")
            .map(|(_, v)| v.clone())
    };
    let tools = &requests[0].body["tools"];
    assert!(tools[0].get("strict").is_none(), "{}", tools[0]);
    assert_eq!(tools[1]["strict"], true);
    assert_eq!(tools[1]["input_schema"]["additionalProperties"], false);
    assert_eq!(tools[1]["input_schema"]["required"], json!(["item"]));
    assert_eq!(
        beta(0).as_deref(),
        Some(agent_ai::providers::anthropic::STRICT_TOOLS_BETA)
    );
    // No strict tool, no beta header.
    assert_eq!(beta(1), None);
}

#[tokio::test]
async fn a_tool_requiring_strict_mode_its_schema_cannot_have_fails_before_sending() {
    let server = serve(vec![openai_text_reply(), anthropic_text_reply()]).await;
    let openai = OpenAiClient::new(format!("{}/v1", server.base), None).with_retry(fast_retry());
    let anthropic = AnthropicClient::new(&server.base, None).with_retry(fast_retry());
    for (client, model) in [
        (
            &openai as &dyn ModelClient,
            Model::new("openai", "gpt-test"),
        ),
        (
            &anthropic as &dyn ModelClient,
            Model::new("anthropic", "claude-test"),
        ),
    ] {
        let msg = complete(
            client,
            &model,
            &strict_tools(true),
            StreamOptions::default(),
        )
        .await;
        assert_eq!(msg.stop_reason, StopReason::Error);
        assert_eq!(
            msg.error_message.as_deref(),
            Some(
                "Tool \"env\" requires constrained sampling, but its schema cannot be sent strict: /properties/vars takes properties of its own choosing"
            )
        );
    }
    assert!(server.requests().is_empty());
}

/// Model prices: $3 in, $15 out, $0.30 cache read, $3.75 cache write per
/// million tokens.
fn priced(provider: &str, api: &str) -> Model {
    let mut m = Model::new(provider, "priced");
    m.api = api.into();
    m.cost = agent_ai::ModelCost {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
    };
    m
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[tokio::test]
async fn every_message_is_priced_on_anthropic_and_chat_completions() {
    // Anthropic: 1 000 input, 200 000 cache read, 4 000 cache write, 2 000 output.
    let server = serve(vec![Reply::sse(&[
        &ev(json!({"type":"message_start","message":{"id":"m","usage":{"input_tokens":1000,
            "cache_read_input_tokens":200000,"cache_creation_input_tokens":4000,"output_tokens":1}}})),
        &ev(json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})),
        &ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}})),
        &ev(json!({"type":"content_block_stop","index":0})),
        &ev(json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2000}})),
        &ev(json!({"type":"message_stop"})),
    ])])
    .await;
    let client = AnthropicClient::new(&server.base, Some("k".into())).with_retry(fast_retry());
    let msg = complete(
        &client,
        &priced("anthropic", "anthropic-messages"),
        &ctx(),
        StreamOptions::default(),
    )
    .await;
    let u = msg.usage;
    assert_eq!(
        (
            u.input,
            u.output,
            u.cache_read,
            u.cache_write,
            u.total_tokens
        ),
        (1000, 2000, 200_000, 4000, 207_000)
    );
    // 0.003 + 0.03 + 0.06 + 0.015 dollars.
    assert!(
        close(u.cost.input, 0.003) && close(u.cost.output, 0.03),
        "{:?}",
        u.cost
    );
    assert!(
        close(u.cost.cache_read, 0.06) && close(u.cost.cache_write, 0.015),
        "{:?}",
        u.cost
    );
    assert!(close(u.cost.total, 0.108), "{:?}", u.cost);

    // Chat Completions: 5 000 prompt tokens of which 4 000 cached, 300 completion.
    let server = serve(vec![Reply::sse(&[
        &chunk(json!({"role":"assistant","content":"ok"}), Some("stop")),
        &json!({"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5000,
            "completion_tokens":300,"total_tokens":5300,"prompt_tokens_details":{"cached_tokens":4000}}}).to_string(),
        "[DONE]",
    ])])
    .await;
    let client = OpenAiClient::new(format!("{}/v1", server.base), None).with_retry(fast_retry());
    let msg = complete(
        &client,
        &priced("openai", "openai-completions"),
        &ctx(),
        StreamOptions::default(),
    )
    .await;
    let u = msg.usage;
    assert_eq!((u.input, u.cache_read, u.output), (1000, 4000, 300));
    // 0.003 + 0.0012 + 0.0045 dollars.
    assert!(close(u.cost.total, 0.0087), "{:?}", u.cost);
}

fn with_effort(effort: Option<agent_ai::ReasoningEffort>) -> StreamOptions {
    StreamOptions {
        reasoning: effort,
        temperature: Some(0.5),
        ..StreamOptions::default()
    }
}

#[tokio::test]
async fn thinking_levels_reach_each_api_in_its_own_field() {
    use agent_ai::ReasoningEffort::*;
    // Anthropic, budget model: budget per level, max_tokens grows, no temperature, beta header.
    let server = serve((0..5).map(|_| anthropic_text_reply()).collect()).await;
    let client = AnthropicClient::new(&server.base, Some("k".into())).with_retry(fast_retry());
    let mut budget = Model::new("anthropic", "claude-sonnet-4-5");
    budget.reasoning = true;
    budget.max_tokens = 64_000;
    let mut adaptive = budget.clone();
    adaptive.id = "claude-opus-4-6".into();
    adaptive.compat.adaptive_thinking = true;
    adaptive.compat.supports_xhigh = true;
    for (model, effort) in [
        (&budget, Some(Minimal)),
        (&budget, Some(High)),
        (&budget, None),
        (&adaptive, Some(Minimal)),
        (&adaptive, Some(Xhigh)),
    ] {
        complete(&client, model, &ctx(), with_effort(effort)).await;
    }
    let r = server.requests();
    assert_eq!(
        r[0].body["thinking"],
        json!({"type":"enabled","budget_tokens":1024})
    );
    assert_eq!(r[0].body["max_tokens"], 32_000 + 1024);
    assert!(r[0].body.get("temperature").is_none());
    let beta = |i: usize| {
        r[i].headers
            .iter()
            .find(|(k, _)| k == "anthropic-beta")
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        beta(0).as_deref(),
        Some(agent_ai::providers::anthropic::INTERLEAVED_THINKING_BETA)
    );
    assert_eq!(r[1].body["thinking"]["budget_tokens"], 16_384);
    assert!(r[2].body.get("thinking").is_none());
    assert_eq!(r[2].body["temperature"], 0.5);
    assert_eq!(beta(2), None);
    assert_eq!(r[3].body["thinking"], json!({"type":"adaptive"}));
    assert_eq!(r[3].body["output_config"], json!({"effort":"low"}));
    assert_eq!(r[4].body["output_config"], json!({"effort":"max"}));
    assert_eq!(beta(3), None);

    // Chat Completions: reasoning_effort, only for a reasoning model whose server takes it.
    let server = serve((0..4).map(|_| openai_text_reply()).collect()).await;
    let client = OpenAiClient::new(format!("{}/v1", server.base), None).with_retry(fast_retry());
    let mut reasoning = Model::new("openai", "o4-mini");
    reasoning.reasoning = true;
    let mut refuses = reasoning.clone();
    refuses.compat.supports_reasoning_effort = Some(false);
    for (model, effort) in [
        (&reasoning, Some(Medium)),
        (&reasoning, None),
        (&Model::new("openai", "gpt-4o"), Some(High)),
        (&refuses, Some(High)),
    ] {
        complete(&client, model, &ctx(), with_effort(effort)).await;
    }
    let r = server.requests();
    assert_eq!(r[0].body["reasoning_effort"], "medium");
    for (i, request) in r.iter().enumerate().skip(1) {
        let body = &request.body;
        assert!(body.get("reasoning_effort").is_none(), "{i}: {body}");
    }
}

/// Prompt caching on Anthropic: the system prompt and the last user block
/// carry `cache_control` by default; `none` sends none; a one-hour
/// lifetime is asked only of Anthropic's own endpoint.
#[test]
fn anthropic_marks_the_system_prompt_and_the_last_user_block_for_the_cache() {
    use agent_ai::CacheRetention;
    let context = Context {
        system_prompt: Some("be brief".into()),
        messages: vec![
            Message::user("first"),
            Message::Assistant({
                let mut a = AssistantMessage::empty("anthropic", "claude-test");
                a.content = vec![ContentBlock::text("answer")];
                a
            }),
            Message::user("second"),
        ],
        tools: vec![],
    };
    let model = Model::new("anthropic", "claude-test");
    let body = |base: &str, cache_retention| {
        AnthropicClient::new(base, None).request_body(
            &model,
            &context,
            &StreamOptions {
                cache_retention,
                ..StreamOptions::default()
            },
        )
    };
    let short = body("http://127.0.0.1:9", CacheRetention::Short);
    assert_eq!(
        short["system"],
        json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}])
    );
    let messages = short["messages"].as_array().unwrap();
    assert_eq!(
        messages[2]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(messages[0]["content"][0].get("cache_control").is_none());
    let none = body("http://127.0.0.1:9", CacheRetention::None);
    assert_eq!(none["system"], "be brief");
    assert!(!none.to_string().contains("cache_control"));
    let long_proxy = body("http://127.0.0.1:9", CacheRetention::Long);
    assert!(!long_proxy.to_string().contains("\"ttl\""));
    let long = body("https://api.anthropic.com", CacheRetention::Long);
    assert_eq!(long["system"][0]["cache_control"]["ttl"], "1h");
}
