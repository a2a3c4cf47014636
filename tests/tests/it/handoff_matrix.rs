//! The cross-provider handoff matrix: a transcript with thinking, a tool
//! call and its result, produced by each API through our client, is
//! replayed to every API (itself included). Each target's fake checks the
//! request the way the vendor's service does (signatures it did not issue,
//! id formats, unanswered calls), and the vendor's official Python SDK
//! validates every body sent (`anthropic`, `openai`, `google-genai`,
//! `boto3`; skipped without them off CI).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_ai::providers::anthropic::AnthropicClient;
use agent_ai::providers::bedrock::{AwsCredentials, BedrockClient};
use agent_ai::providers::google::GoogleClient;
use agent_ai::providers::openai::OpenAiClient;
use agent_ai::providers::openai_responses::OpenAiResponsesClient;
use agent_ai::{
    AssistantMessage, ContentBlock, Context, Message, Model, ModelClient, ReasoningEffort,
    StopReason, StreamOptions, Tool, ToolResultMessage, complete,
};
use serde_json::{Value, json};
use test_support::anthropic::AnthropicScript;
use test_support::bedrock::BedrockScript;
use test_support::chat_completions::ChatScript;
use test_support::gemini::GeminiScript;
use test_support::http_server::{Reply, serve};
use test_support::openai_responses::{Call, ResponseScript};

const THOUGHT: &str = "I should read a.txt first";
const RESULT: &str = "the contents of a.txt";
const ANTHROPIC_SIGNATURE: &str = "EqQBCkYIBxgCKkBanthropicSig";
const RESPONSES_ENCRYPTED: &str = "gAAAAABencryptedReasoning";
const GEMINI_SIGNATURES: [&str; 2] = ["U0lHLXRob3VnaHQ=", "U0lHLWNhbGw="];
const BEDROCK_SIGNATURE: &str = "EqoBCkgIBxABbedrockSig";

/// The five wire APIs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Api {
    Completions,
    Responses,
    Anthropic,
    Gemini,
    Bedrock,
}

const APIS: [Api; 5] = [
    Api::Completions,
    Api::Responses,
    Api::Anthropic,
    Api::Gemini,
    Api::Bedrock,
];

impl Api {
    fn model(self) -> Model {
        let (provider, api, id) = match self {
            Api::Completions => ("deepseek", "openai-completions", "deepseek-reasoner"),
            Api::Responses => ("openai", "openai-responses", "gpt-5"),
            Api::Anthropic => ("anthropic", "anthropic-messages", "claude-sonnet-4-5"),
            Api::Gemini => ("google", "google-generative-ai", "gemini-2.5-pro"),
            Api::Bedrock => (
                "amazon-bedrock",
                "bedrock-converse-stream",
                "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            ),
        };
        let mut model = Model::new(provider, id);
        model.api = api.into();
        model.reasoning = true;
        model
    }

    fn client(self, base: &str) -> Arc<dyn ModelClient> {
        let key = Some("test-key".to_string());
        match self {
            Api::Completions => Arc::new(OpenAiClient::new(format!("{base}/v1"), key)),
            Api::Responses => Arc::new(OpenAiResponsesClient::new(format!("{base}/v1"), key)),
            Api::Anthropic => Arc::new(AnthropicClient::new(base, key)),
            Api::Gemini => Arc::new(GoogleClient::new(format!("{base}/v1beta"), key)),
            Api::Bedrock => Arc::new(
                BedrockClient::new()
                    .with_base_url(Some(base.to_string()))
                    .with_credentials(AwsCredentials::new("AKIDEXAMPLE", "secret")),
            ),
        }
    }

    /// An answer that thinks, says something and calls `read`, as this
    /// API streams it.
    fn turn_with_a_call(self) -> Reply {
        let args = json!({"path": "a.txt"});
        match self {
            Api::Completions => ChatScript::new()
                .reasoning(THOUGHT)
                .content("Reading it.")
                .call("call_k3Xq9ZlP0aB7cD2eF4gH6iJ8", "read", &args)
                .finish("tool_calls"),
            Api::Responses => ResponseScript::new("resp_1")
                .reasoning("rs_1", &[THOUGHT], RESPONSES_ENCRYPTED)
                .text("msg_1", &["Reading it."])
                .parallel_calls(&[Call {
                    id: "fc_68a1b2c3d4e5f60718293a4b5c6d7e8f",
                    call_id: "call_Zx81bQ2mN4vR6tY8uI0oP2aS",
                    name: "read",
                    pieces: &[r#"{"path":"a.txt"}"#],
                }])
                .completed(Default::default()),
            Api::Anthropic => AnthropicScript::new()
                .thinking(THOUGHT, ANTHROPIC_SIGNATURE)
                .text("Reading it.")
                .tool_use("toolu_01A09q90qw90lq917835lq9", "read", &args)
                .stop("tool_use"),
            Api::Gemini => GeminiScript::new()
                .thinking(&[THOUGHT], GEMINI_SIGNATURES[0])
                .text(&["Reading it."])
                .calls(&[("read", args, None, Some(GEMINI_SIGNATURES[1]))])
                .stop(Default::default()),
            Api::Bedrock => BedrockScript::new()
                .thinking(&[THOUGHT], BEDROCK_SIGNATURE)
                .text(&["Reading it."])
                .calls(&[(
                    "tooluse_kT3xQ9ZlP0aB7cD2eF4gH6",
                    "read",
                    &[r#"{"path":"a.txt"}"#],
                )])
                .stop("tool_use", Default::default()),
        }
    }

    /// A plain answer.
    fn answer(self) -> Reply {
        match self {
            Api::Completions => ChatScript::new().content("done").finish("stop"),
            Api::Responses => ResponseScript::new("resp_2")
                .text("msg_2", &["done"])
                .completed(Default::default()),
            Api::Anthropic => AnthropicScript::new().text("done").stop("end_turn"),
            Api::Gemini => GeminiScript::new().text(&["done"]).stop(Default::default()),
            Api::Bedrock => BedrockScript::new()
                .text(&["done"])
                .stop("end_turn", Default::default()),
        }
    }

    /// The checks this API's service makes on the replayed transcript.
    fn check(self, body: &Value) -> Result<(), String> {
        match self {
            Api::Completions => test_support::chat_completions::check_request(body),
            Api::Responses => {
                test_support::openai_responses::check_request(body)?;
                for item in body["input"].as_array().into_iter().flatten() {
                    if item["type"] == "reasoning"
                        && item["encrypted_content"] != RESPONSES_ENCRYPTED
                    {
                        return Err(format!("reasoning this server did not issue: {item}"));
                    }
                }
                Ok(())
            }
            Api::Anthropic => test_support::anthropic::check_request(body, &[ANTHROPIC_SIGNATURE]),
            Api::Gemini => {
                test_support::gemini::check_request(body)?;
                let all = body.to_string();
                for sig in all.split("\"thoughtSignature\":\"").skip(1) {
                    let sig = sig.split('"').next().unwrap_or("");
                    if !GEMINI_SIGNATURES.contains(&sig)
                        && sig != "skip_thought_signature_validator"
                    {
                        return Err(format!("Corrupted thought signature {sig:?}"));
                    }
                }
                Ok(())
            }
            Api::Bedrock => {
                test_support::bedrock::check_request(body)?;
                let all = body.to_string();
                for sig in all.split("\"signature\":\"").skip(1) {
                    let sig = sig.split('"').next().unwrap_or("");
                    if sig != BEDROCK_SIGNATURE {
                        return Err(format!(
                            "reasoning signature this model did not issue: {sig:?}"
                        ));
                    }
                }
                Ok(())
            }
        }
    }

    /// The vendor SDK's referee: script and arguments before the file.
    fn referee(self) -> Option<(&'static str, &'static str, &'static str)> {
        Some(match self {
            Api::Completions => ("request_sdk.py", "openai-completions", "openai, pydantic"),
            Api::Responses => ("openai_responses_sdk.py", "validate", "openai, pydantic"),
            Api::Anthropic => (
                "request_sdk.py",
                "anthropic-messages",
                "anthropic, pydantic",
            ),
            Api::Gemini => ("gemini_sdk.py", "validate", "google.genai, pydantic"),
            Api::Bedrock => ("bedrock_sdk.py", "validate", "boto3, botocore"),
        })
    }
}

fn tools() -> Vec<Tool> {
    vec![Tool::new(
        "read",
        "Read a file",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )]
}

fn options() -> StreamOptions {
    StreamOptions {
        reasoning: Some(ReasoningEffort::Medium),
        ..StreamOptions::default()
    }
}

/// The transcript `source` leaves: the user's ask, its answer with the
/// call, and the call's result.
async fn transcript_from(source: Api) -> Vec<Message> {
    let server = serve(vec![source.turn_with_a_call()]).await;
    let model = source.model();
    let context = Context {
        system_prompt: Some("You are a test.".into()),
        messages: vec![Message::user("what is in a.txt?")],
        tools: tools(),
    };
    let answer: AssistantMessage =
        complete(&*source.client(&server.base), &model, &context, options()).await;
    assert_eq!(
        answer.stop_reason,
        StopReason::ToolUse,
        "{source:?}: {:?}",
        answer.error_message
    );
    assert!(
        answer
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::Thinking(t) if t.thinking == THOUGHT)),
        "{source:?} gave no thinking: {:?}",
        answer.content
    );
    let call = answer.tool_calls().next().expect("a call").clone();
    let mut messages = context.messages;
    messages.push(Message::Assistant(answer));
    messages.push(Message::ToolResult(ToolResultMessage::new(
        call.id,
        call.name,
        vec![ContentBlock::text(RESULT)],
    )));
    messages
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

#[tokio::test]
async fn every_api_takes_every_apis_transcript() {
    let mut transcripts = Vec::new();
    for source in APIS {
        transcripts.push((source, transcript_from(source).await));
    }
    let mut failures = Vec::new();
    for target in APIS {
        let mut bodies = Vec::new();
        for (source, messages) in &transcripts {
            let server = serve(vec![target.answer()]).await;
            let context = Context {
                system_prompt: Some("You are a test.".into()),
                messages: messages.clone(),
                tools: tools(),
            };
            let reply = complete(
                &*target.client(&server.base),
                &target.model(),
                &context,
                options(),
            )
            .await;
            let body = server.requests()[0].body.clone();
            let sent = body.to_string();
            let combo = format!("{source:?} -> {target:?}");
            if reply.text() != "done" {
                failures.push(format!("{combo}: {:?}", reply.error_message));
            }
            if let Err(e) = target.check(&body) {
                failures.push(format!("{combo}: the service would refuse it: {e}"));
            }
            if !sent.contains(RESULT) {
                failures.push(format!("{combo}: the tool result was not sent"));
            }
            // Another model's thinking arrives as text.
            if *source != target && !sent.contains(THOUGHT) {
                failures.push(format!("{combo}: the other model's thinking was lost"));
            }
            bodies.push(body);
        }
        if let Some((script, mode, modules)) = target.referee()
            && test_support::python_package(modules, modules.split(',').next().unwrap_or(""))
        {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("bodies.json");
            std::fs::write(&file, serde_json::to_string(&bodies).unwrap()).unwrap();
            let checked =
                test_support::python_referee(&fixture(script), &[mode, file.to_str().unwrap()])
                    .await;
            assert_eq!(checked["bodies"], APIS.len(), "{target:?}: {checked}");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
