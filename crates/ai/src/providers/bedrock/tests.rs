use std::collections::HashMap;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use serde_json::json;

use super::credentials::parse_ini;
use super::eventstream::tests::frame;
use super::*;
use crate::content::{TextContent, ThinkingContent, ToolCall};
use crate::message::ToolResultMessage;
use crate::stream::{AssistantMessageEvent, ReasoningEffort};

const CLAUDE: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

fn claude() -> Model {
    let mut m = Model::new("amazon-bedrock", CLAUDE);
    m.api = API.into();
    m.reasoning = true;
    m.max_tokens = 64_000;
    m
}

fn answer(model: &str, content: Vec<ContentBlock>) -> Message {
    let mut a = AssistantMessage::empty("amazon-bedrock", model);
    a.api = Some(API.into());
    a.content = content;
    a.stop_reason = StopReason::ToolUse;
    Message::Assistant(a)
}

fn transcript(model: &str) -> Context {
    Context {
        system_prompt: Some("Be brief.".into()),
        messages: vec![
            Message::user("hi"),
            answer(
                model,
                vec![
                    ContentBlock::Thinking(ThinkingContent {
                        thinking: "plan".into(),
                        thinking_signature: Some("SIG".into()),
                    }),
                    ContentBlock::Text(TextContent {
                        text: "Reading.".into(),
                        text_signature: None,
                    }),
                    ContentBlock::ToolCall(ToolCall::new(
                        "call|fc_1",
                        "read",
                        json!({"path": "a"}),
                    )),
                    ContentBlock::ToolCall(ToolCall::new("toolu_2", "ls", json!({}))),
                ],
            ),
            Message::ToolResult(ToolResultMessage::new(
                "call|fc_1",
                "read",
                vec![ContentBlock::text("file")],
            )),
            Message::ToolResult({
                let mut r = ToolResultMessage::new("toolu_2", "ls", vec![]);
                r.is_error = true;
                r
            }),
            Message::user("thanks"),
        ],
        tools: vec![crate::Tool::new(
            "read",
            "Read a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )],
    }
}

#[test]
fn the_body_has_converse_shapes_cache_points_and_thinking() {
    let options = StreamOptions {
        reasoning: Some(ReasoningEffort::Low),
        temperature: Some(0.3),
        ..StreamOptions::default()
    };
    let body = BedrockClient::new().request_body(&claude(), &transcript(CLAUDE), &options);
    assert_eq!(
        body["system"],
        json!([{"text": "Be brief."}, {"cachePoint": {"type": "default"}}])
    );
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "tool results and the next prompt are one user turn"
    );
    // Fitted to Bedrock's alphabet, the same in the call and its result.
    let id = "call_fc_1";
    assert!(
        id.len() <= 64
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    );
    assert_eq!(
        messages[1]["content"],
        json!([
            {"reasoningContent": {"reasoningText": {"text": "plan", "signature": "SIG"}}},
            {"text": "Reading."},
            {"toolUse": {"toolUseId": id, "name": "read", "input": {"path": "a"}}},
            {"toolUse": {"toolUseId": "toolu_2", "name": "ls", "input": {}}},
        ])
    );
    assert_eq!(
        messages[2]["content"],
        json!([
            {"toolResult": {"toolUseId": id, "content": [{"text": "file"}], "status": "success"}},
            {"toolResult": {"toolUseId": "toolu_2", "content": [{"text": "(no output)"}], "status": "error"}},
            {"text": "thanks"},
            {"cachePoint": {"type": "default"}},
        ])
    );
    // A budget of 2048 on top of 32 000; no temperature with thinking.
    assert_eq!(body["inferenceConfig"], json!({"maxTokens": 34_048}));
    assert_eq!(
        body["additionalModelRequestFields"],
        json!({
            "anthropic_beta": ["interleaved-thinking-2025-05-14"],
            "thinking": {"type": "enabled", "budget_tokens": 2048},
        })
    );
    assert_eq!(
        body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["type"],
        "object"
    );
}

#[test]
fn other_models_get_thinking_as_text_and_no_cache_points() {
    let mut nova = Model::new("amazon-bedrock", "us.amazon.nova-pro-v1:0");
    nova.max_tokens = 10_000;
    let options = StreamOptions {
        temperature: Some(0.5),
        ..StreamOptions::default()
    };
    let body = BedrockClient::new().request_body(&nova, &transcript(CLAUDE), &options);
    assert_eq!(body["system"], json!([{"text": "Be brief."}]));
    assert_eq!(body["messages"][1]["content"][0], json!({"text": "plan"}));
    assert!(!body.to_string().contains("cachePoint"));
    assert_eq!(
        body["inferenceConfig"],
        json!({"maxTokens": 10_000, "temperature": 0.5})
    );
    // Another Claude's signed thinking is text too.
    let body = BedrockClient::new().request_body(&claude(), &transcript("other"), &options);
    assert_eq!(body["messages"][1]["content"][0], json!({"text": "plan"}));
}

#[test]
fn adaptive_thinking_goes_with_an_effort() {
    let mut m = claude();
    m.compat.adaptive_thinking = true;
    let options = StreamOptions {
        reasoning: Some(ReasoningEffort::High),
        ..StreamOptions::default()
    };
    let body = BedrockClient::new().request_body(&m, &transcript(CLAUDE), &options);
    assert_eq!(
        body["additionalModelRequestFields"],
        json!({"output_config": {"effort": "high"}, "thinking": {"type": "adaptive"}})
    );
}

#[test]
fn model_ids_are_encoded_in_the_path_as_botocore_encodes_them() {
    let client = BedrockClient::new().with_base_url(Some("http://h/".into()));
    // botocore's rest-json serializer gives this very path for this ARN.
    assert_eq!(
        client.url(
            "x",
            "arn:aws:bedrock:us-east-1:123:application-inference-profile/a b+c"
        ),
        "http://h/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Aapplication-inference-profile%2Fa%20b%2Bc/converse-stream"
    );
    assert_eq!(
        region_of_endpoint("https://bedrock-runtime.us-gov-west-1.amazonaws.com").as_deref(),
        Some("us-gov-west-1")
    );
    assert_eq!(
        region_of_endpoint("https://bedrock-runtime.cn-north-1.amazonaws.com.cn").as_deref(),
        Some("cn-north-1")
    );
    assert_eq!(
        region_of_endpoint("https://bedrock-runtime.evil.com/x.amazonaws.com"),
        None
    );
}

#[test]
fn cache_retention_decides_the_cache_points() {
    let cached = |retention| {
        let options = StreamOptions {
            cache_retention: retention,
            ..StreamOptions::default()
        };
        let body = BedrockClient::new().request_body(&claude(), &transcript(CLAUDE), &options);
        let points: Vec<Value> = body
            .to_string()
            .match_indices("cachePoint")
            .map(|_| Value::Null)
            .collect();
        (points.len(), body["system"][1].clone())
    };
    assert_eq!(cached(CacheRetention::None), (0, Value::Null));
    assert_eq!(
        cached(CacheRetention::Short),
        (2, json!({"cachePoint": {"type": "default"}}))
    );
    assert_eq!(
        cached(CacheRetention::Long),
        (2, json!({"cachePoint": {"type": "default", "ttl": "1h"}}))
    );
}

fn env_of(
    vars: &[(&str, &str)],
    home: Option<PathBuf>,
) -> (HashMap<String, String>, Option<PathBuf>) {
    (
        vars.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        home,
    )
}

fn resolve(
    client: &BedrockClient,
    vars: &[(&str, &str)],
    home: Option<PathBuf>,
) -> Result<(String, BedrockAuth), CredentialsError> {
    let (map, home) = env_of(vars, home);
    let var = move |k: &str| map.get(k).cloned();
    client.resolve_in(&Environment { var: &var, home })
}

#[test]
fn credentials_come_from_the_client_the_environment_then_the_files() {
    let dir = std::env::temp_dir().join(format!("bedrock-creds-{}", std::process::id()));
    std::fs::create_dir_all(dir.join(".aws")).unwrap();
    std::fs::write(
        dir.join(".aws/credentials"),
        "# keys\n[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key = s1\n\n[work]\naws_access_key_id=AKWORK\naws_secret_access_key=s2\naws_session_token = tok\n[half]\naws_access_key_id = AKHALF\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(".aws/config"),
        "[default]\nregion = eu-west-3\n[profile work]\nregion = ap-south-1\ns3 =\n  max_concurrent_requests = 20\n",
    )
    .unwrap();
    let home = Some(dir.clone());
    let keys = |id: &str, secret: &str, token: Option<&str>| {
        BedrockAuth::Sigv4(AwsCredentials {
            access_key_id: id.into(),
            secret_access_key: secret.into(),
            session_token: token.map(str::to_string),
        })
    };
    let client = BedrockClient::new();
    assert_eq!(
        resolve(&client, &[], home.clone()).unwrap(),
        ("eu-west-3".into(), keys("AKDEFAULT", "s1", None))
    );
    assert_eq!(
        resolve(&client, &[("AWS_PROFILE", "work")], home.clone()).unwrap(),
        ("ap-south-1".into(), keys("AKWORK", "s2", Some("tok")))
    );
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKENV"),
        ("AWS_SECRET_ACCESS_KEY", "s3"),
        ("AWS_SESSION_TOKEN", "t3"),
        ("AWS_DEFAULT_REGION", "us-west-1"),
    ];
    assert_eq!(
        resolve(&client, &env, home.clone()).unwrap(),
        ("us-west-1".into(), keys("AKENV", "s3", Some("t3")))
    );
    let bearer = [
        ("AWS_BEARER_TOKEN_BEDROCK", "bk"),
        ("AWS_REGION", "us-east-2"),
    ];
    assert_eq!(
        resolve(&client, &bearer, home.clone()).unwrap(),
        ("us-east-2".into(), BedrockAuth::Bearer("bk".into()))
    );
    let explicit = BedrockClient::new()
        .with_region("eu-north-1")
        .with_credentials(AwsCredentials::new("AKX", "sx"));
    assert_eq!(
        resolve(&explicit, &bearer, home.clone()).unwrap(),
        ("eu-north-1".into(), keys("AKX", "sx", None))
    );
    let e = resolve(&client, &[("AWS_PROFILE", "half")], home.clone()).unwrap_err();
    assert!(
        e.to_string().contains("\"half\"")
            && e.to_string().contains("aws_secret_access_key is missing"),
        "{e}"
    );
    let e = resolve(&client, &[("AWS_ACCESS_KEY_ID", "AK")], home.clone()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"
    );
    let e = resolve(&client, &[("AWS_PROFILE", "none")], home.clone()).unwrap_err();
    assert!(e.to_string().contains("AWS_BEARER_TOKEN_BEDROCK"), "{e}");
    // Another file by variable; no home, no region: the default region.
    let other = dir.join("other");
    std::fs::write(
        &other,
        "[default]\naws_access_key_id = AKO\naws_secret_access_key = so\n",
    )
    .unwrap();
    let vars = [("AWS_SHARED_CREDENTIALS_FILE", other.to_str().unwrap())];
    assert_eq!(
        resolve(&client, &vars, None).unwrap(),
        (DEFAULT_REGION.into(), keys("AKO", "so", None))
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_files_name_the_file_and_line() {
    let file = Path::new("/home/u/.aws/credentials");
    let cases = [
        ("aws_access_key_id = x\n", 1, "before any `[section]`"),
        ("[default]\n\n[broken\n", 3, "closing `]`"),
        ("[default]\njust words\n", 2, "expected `key = value`"),
        ("[]\n", 1, "no name"),
    ];
    for (text, line, what) in cases {
        let e = parse_ini(text, file).unwrap_err();
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!("/home/u/.aws/credentials:{line}: "))
                && shown.contains(what),
            "{shown}"
        );
    }
    let ok = parse_ini("; c\n[a]\nK = v = w\n", file).unwrap();
    assert_eq!(ok["a"]["k"], "v = w");
}

/// Runs frames through a stream state and collects the final message.
async fn replay(frames: Vec<Vec<u8>>) -> AssistantMessage {
    let (builder, mut events) = message_stream(AssistantMessage::empty("amazon-bedrock", CLAUDE));
    let mut state = stream::Stream::new(builder);
    let mut decoder = eventstream::FrameDecoder::default();
    let mut failed = None;
    for f in frames {
        for frame in decoder.push(&f).unwrap() {
            if let Err(e) = state.frame(&frame) {
                failed.get_or_insert(e);
            }
        }
    }
    state.close_all();
    match failed.map_or_else(|| state.outcome(), Err) {
        Ok(r) => state.b.finish(r),
        Err(e) => state.b.fail(StopReason::Error, e),
    }
    let mut last = None;
    while let Some(e) = events.next().await {
        match e {
            AssistantMessageEvent::Done { message, .. } => last = Some(message),
            AssistantMessageEvent::Error { error, .. } => last = Some(error),
            _ => {}
        }
    }
    last.unwrap()
}

fn event(kind: &str, payload: Value) -> Vec<u8> {
    frame(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

#[tokio::test]
async fn frames_become_a_message_with_thinking_text_calls_and_usage() {
    let m = replay(vec![
        event("messageStart", json!({"role": "assistant"})),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Hm"}}})),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "SIG"}}})),
        event("contentBlockStop", json!({"contentBlockIndex": 0})),
        event("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"text": "Hi"}})),
        event("contentBlockStop", json!({"contentBlockIndex": 1})),
        event("contentBlockStart", json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "read"}}})),
        event("contentBlockDelta", json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{\"path\":"}}})),
        event("contentBlockDelta", json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "\"a\"}"}}})),
        event("contentBlockStop", json!({"contentBlockIndex": 2})),
        event("messageStop", json!({"stopReason": "tool_use"})),
        event("metadata", json!({"usage": {"inputTokens": 10, "outputTokens": 5, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 7, "totalTokens": 122}, "metrics": {"latencyMs": 3}})),
    ])
    .await;
    assert_eq!(m.stop_reason, StopReason::ToolUse);
    match &m.content[..] {
        [
            ContentBlock::Thinking(t),
            ContentBlock::Text(x),
            ContentBlock::ToolCall(c),
        ] => {
            assert_eq!(
                (t.thinking.as_str(), t.thinking_signature.as_deref()),
                ("Hm", Some("SIG"))
            );
            assert_eq!(x.text, "Hi");
            assert_eq!(
                (c.id.as_str(), &c.arguments),
                ("tooluse_1", &json!({"path": "a"}))
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        (
            m.usage.input,
            m.usage.output,
            m.usage.cache_read,
            m.usage.cache_write,
            m.usage.total_tokens
        ),
        (10, 5, 100, 7, 122)
    );
}

#[tokio::test]
async fn exceptions_filters_and_early_ends_are_errors_that_say_why() {
    let exception = frame(
        &[
            (":exception-type", "throttlingException"),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        br#"{"message":"Too many tokens, please wait before trying again."}"#,
    );
    let m = replay(vec![event("messageStart", json!({})), exception]).await;
    assert_eq!(m.stop_reason, StopReason::Error);
    assert_eq!(
        m.error_message.as_deref(),
        Some("Bedrock throttlingException: Too many tokens, please wait before trying again.")
    );
    let m = replay(vec![event(
        "messageStop",
        json!({"stopReason": "guardrail_intervened"}),
    )])
    .await;
    assert!(m.error_message.unwrap().contains("guardrail_intervened"));
    let m = replay(vec![event(
        "contentBlockDelta",
        json!({"delta": {"text": "par"}}),
    )])
    .await;
    assert_eq!(
        m.error_message.as_deref(),
        Some(crate::providers::http::ENDED_EARLY)
    );
    let m = replay(vec![event(
        "messageStop",
        json!({"stopReason": "max_tokens"}),
    )])
    .await;
    assert_eq!(m.stop_reason, StopReason::Length);
}
