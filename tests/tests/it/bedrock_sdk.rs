//! boto3 / botocore, AWS's official Python SDK, referee our Bedrock code
//! (`pip install boto3`; `.ci/run` installs it):
//! - boto3's `converse_stream` reads the fake Bedrock runtime, so the
//!   frames the other tests trust are the ones AWS's SDK decodes (text,
//!   reasoning, tool use, metadata, an exception frame, HTTP errors);
//! - the request bodies our client sent are validated against botocore's
//!   service model and serialised again by botocore, which must give the
//!   same JSON and the same URL path;
//! - botocore signs our recorded requests again (same method, URL,
//!   headers, body and `X-Amz-Date`) and must compute our `Authorization`
//!   header, with and without a session token.
//!
//! Without boto3 the tests are skipped with how to install it; on CI
//! (`CI=true`) they fail instead.

use std::path::{Path, PathBuf};

use agent_ai::providers::bedrock::{AwsCredentials, BedrockClient};
use agent_ai::{
    ContentBlock, Context, Message, Model, ReasoningEffort, StopReason, StreamOptions, Tool,
    ToolResultMessage, complete,
};
use serde_json::{Value, json};
use test_support::bedrock::{BedrockScript, Usage, error, rate_limited};
use test_support::http_server::serve;

const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

fn sdk_available() -> bool {
    test_support::python_package("boto3, botocore", "boto3")
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bedrock_sdk.py")
}

/// Runs the referee script with `args`; its stdout as JSON.
async fn referee(args: &[&str]) -> Value {
    test_support::python_referee(&script(), args).await
}

/// Writes `value` to a file in `dir` and returns its path.
fn file_of(dir: &tempfile::TempDir, name: &str, value: &Value) -> String {
    let file = dir.path().join(name);
    std::fs::write(&file, value.to_string()).unwrap();
    file.to_string_lossy().into_owned()
}

fn usage() -> Usage {
    Usage {
        input: 100,
        output: 50,
        cache_read: 1000,
        cache_write: 200,
    }
}

/// Reasoning, text and two tool calls, as one response.
fn full_script() -> BedrockScript {
    BedrockScript::new()
        .thinking(&["Think", "ing."], "c2ln")
        .text(&["Hel", "lo"])
        .calls(&[
            ("tooluse_1", "read", &["{\"path\":", "\"x\"}"]),
            ("tooluse_2", "ls", &["{}"]),
        ])
}

#[tokio::test(flavor = "multi_thread")]
async fn boto3_reads_every_frame_of_the_fake() {
    if !sdk_available() {
        return;
    }
    let server = serve(vec![
        full_script().stop("tool_use", usage()),
        BedrockScript::new()
            .text(&["Par"])
            .exception("throttlingException", "Too many tokens, please wait."),
        error(
            400,
            "ValidationException",
            "The provided model identifier is invalid.",
        ),
        rate_limited(7),
    ])
    .await;
    let summary = referee(&["stream", &server.base, MODEL]).await;
    assert_eq!(summary["text"], "Hello");
    assert_eq!(summary["reasoning"], "Thinking.");
    assert_eq!(summary["signatures"], json!(["c2ln"]));
    assert_eq!(
        summary["tools"],
        json!([["tooluse_1", "read", {"path": "x"}], ["tooluse_2", "ls", {}]])
    );
    assert_eq!(summary["stop"], "tool_use");
    assert_eq!(summary["usage"], json!([100, 50, 1000, 200, 1350]));
    let events = summary["events"].as_array().unwrap();
    assert_eq!(events.first().unwrap(), "messageStart");
    assert_eq!(events.last().unwrap(), "metadata");
    assert_eq!(
        summary["exception"],
        json!(["throttlingException", "Too many tokens, please wait."])
    );
    assert_eq!(
        summary["http_error"],
        json!([
            400,
            "ValidationException",
            "The provided model identifier is invalid."
        ])
    );
    assert_eq!(summary["throttled"][0], 429);
    assert_eq!(summary["throttled"][1], "ThrottlingException");
    // boto3 encodes the model id in the path as we do.
    let requests = server.requests();
    assert_eq!(
        requests[0].path,
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
}

fn claude() -> Model {
    let mut m = Model::new("amazon-bedrock", MODEL);
    m.api = "bedrock-converse-stream".into();
    m.reasoning = true;
    m.max_tokens = 64_000;
    m.input = vec!["text".into(), "image".into()];
    m
}

/// A transcript with an image, thinking, two calls (one id foreign), an
/// image result and an error result, sent to Claude with thinking, to
/// Claude with adaptive thinking, and to Nova with a temperature.
async fn conversation(client: &BedrockClient) {
    let tools = vec![
        Tool::new(
            "read",
            "Read a file",
            json!({"type":"object","properties":{"path":{"type":"string"},"limit":{"type":["integer","null"]}},"required":["path"],"additionalProperties":false}),
        ),
        Tool::new("ls", "List", json!({"type":"object","properties":{}})),
    ];
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
    let thinking = StreamOptions {
        reasoning: Some(ReasoningEffort::Medium),
        ..Default::default()
    };
    let answer = complete(client, &claude(), &context, thinking.clone()).await;
    assert_eq!(
        answer.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        answer.error_message
    );
    let ids: Vec<String> = answer.tool_calls().map(|c| c.id.clone()).collect();
    context.messages.push(Message::Assistant(answer));
    context
        .messages
        .push(Message::ToolResult(ToolResultMessage::new(
            &ids[0],
            "read",
            vec![ContentBlock::image("iVBORw0KGgo=", "image/png")],
        )));
    let mut failed = ToolResultMessage::new(&ids[1], "ls", vec![ContentBlock::text("no such dir")]);
    failed.is_error = true;
    context.messages.push(Message::ToolResult(failed));
    let second = complete(client, &claude(), &context, thinking.clone()).await;
    assert_eq!(second.text(), "ok", "{:?}", second.error_message);
    let mut adaptive = claude();
    adaptive.compat.adaptive_thinking = true;
    let third = complete(client, &adaptive, &context, thinking).await;
    assert_eq!(third.text(), "ok", "{:?}", third.error_message);
    let mut nova = Model::new("amazon-bedrock", "us.amazon.nova-pro-v1:0");
    nova.max_tokens = 10_000;
    let plain = StreamOptions {
        temperature: Some(0.5),
        max_tokens: Some(512),
        ..Default::default()
    };
    let fourth = complete(client, &nova, &context, plain).await;
    assert_eq!(fourth.text(), "ok", "{:?}", fourth.error_message);
}

#[tokio::test(flavor = "multi_thread")]
async fn our_bodies_pass_botocores_service_model_and_serialise_the_same() {
    if !sdk_available() {
        return;
    }
    let ok = || BedrockScript::new().text(&["ok"]).stop("end_turn", usage());
    let server = serve(vec![
        full_script().stop("tool_use", usage()),
        ok(),
        ok(),
        ok(),
    ])
    .await;
    let client = BedrockClient::new()
        .with_base_url(Some(server.base.clone()))
        .with_credentials(AwsCredentials::new("AKIDEXAMPLE", "secret"));
    conversation(&client).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let models = [MODEL, MODEL, MODEL, "us.amazon.nova-pro-v1:0"];
    let list: Vec<Value> = requests
        .iter()
        .zip(models)
        .map(|(r, m)| json!({"modelId": m, "body": r.body}))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let checked = referee(&["validate", &file_of(&dir, "bodies.json", &json!(list))]).await;
    let ours: Vec<Value> = requests.iter().map(|r| json!(r.path)).collect();
    assert_eq!(checked["paths"], json!(ours), "botocore's URL paths");
    let all = Value::Array(list).to_string();
    for key in [
        "\"reasoningContent\"",
        "\"signature\"",
        "\"toolUse\"",
        "\"toolResult\"",
        "\"status\":\"error\"",
        "\"image\"",
        "\"cachePoint\"",
        "\"additionalModelRequestFields\"",
        "\"adaptive\"",
        "\"temperature\"",
        "\"toolConfig\"",
    ] {
        assert!(all.contains(key), "{key} never sent");
    }
}

/// Signs requests with `credentials` to the fake, then has botocore sign
/// the same recorded requests.
async fn resign(credentials: AwsCredentials) {
    let ok = || BedrockScript::new().text(&["ok"]).stop("end_turn", usage());
    let server = serve(vec![ok(), ok()]).await;
    let client = BedrockClient::new()
        .with_base_url(Some(server.base.clone()))
        .with_region("eu-central-1")
        .with_credentials(credentials.clone());
    let context = Context {
        system_prompt: Some("be brief  with   spaces".into()),
        messages: vec![Message::user("héllo")],
        tools: Vec::new(),
    };
    for id in [MODEL, "amazon.nova-lite-v1:0"] {
        let mut model = Model::new("amazon-bedrock", id);
        model
            .headers
            .insert("X-Custom-Header".into(), "  a   b ".into());
        let msg = complete(&client, &model, &context, StreamOptions::default()).await;
        assert_eq!(msg.text(), "ok", "{:?}", msg.error_message);
    }
    // What the transport adds and the signer leaves out, as botocore does
    // for headers its HTTP client adds after signing.
    let unsigned = [
        "accept",
        "content-length",
        "authorization",
        "user-agent",
        "accept-encoding",
        "connection",
    ];
    let requests = server.requests();
    let list: Vec<Value> = requests
        .iter()
        .map(|r| {
            json!({
                "method": r.method,
                "url": format!("{}{}", server.base, r.path),
                "headers": r.headers.iter().filter(|(k, _)| !unsigned.contains(&k.as_str())).collect::<Vec<_>>(),
                "body": String::from_utf8(r.raw_body.clone()).unwrap(),
                "access_key": credentials.access_key_id,
                "secret_key": credentials.secret_access_key,
                "token": credentials.session_token,
                "region": "eu-central-1",
            })
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let theirs = referee(&["sign", &file_of(&dir, "requests.json", &json!(list))]).await;
    let ours: Vec<Value> = requests
        .iter()
        .map(|r| json!(r.header("authorization")))
        .collect();
    assert_eq!(theirs, json!(ours));
}

#[tokio::test(flavor = "multi_thread")]
async fn botocore_computes_our_signature() {
    if !sdk_available() {
        return;
    }
    resign(AwsCredentials::new(
        "AKIDEXAMPLE",
        "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn botocore_computes_our_signature_with_a_session_token() {
    if !sdk_available() {
        return;
    }
    resign(
        AwsCredentials::new("ASIAEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
            .with_session_token("IQoJb3JpZ2luX2VjEXAMPLE//TOKEN+/="),
    )
    .await;
}
