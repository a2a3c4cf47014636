//! OpenAI Chat Completions (streaming), for OpenAI and any compatible server:
//! Ollama, vLLM, llama.cpp's server, OpenRouter, ...

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::builder::{MessageBuilder, message_stream};
use super::http::{
    DEFAULT_IDLE_TIMEOUT, ENDED_EARLY, PreparedRequest, RetryPolicy, StreamEnd, client_settings,
    http_client, json_body, read_events,
};
use super::lowering::tool_result_text_and_images;
use crate::content::ContentBlock;
use crate::context::Context;
use crate::handoff::fit_transcript;
use crate::message::{AssistantMessage, Message, StopReason, Usage, UserContent};
use crate::model::{MaxTokensField, Model};
use crate::stream::{AssistantEventStream, ModelClient, StreamOptions};

mod wire;

/// Default base URL.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// The API name recorded on the messages this client writes.
const API: &str = "openai-completions";

/// A Chat Completions client.
///
/// ```
/// use agent_ai::providers::openai::OpenAiClient;
/// let client = OpenAiClient::new("http://localhost:11434/v1", None);
/// # let _ = client;
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    retry: RetryPolicy,
    idle_timeout: Option<std::time::Duration>,
    strict_tools: bool,
}

impl OpenAiClient {
    /// A client for `base_url` (e.g. `https://api.openai.com/v1`), with an
    /// optional bearer key.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        OpenAiClient {
            http: http_client(),
            base_url: base_url.into().trim_end_matches('/').to_string(),
            api_key,
            retry: RetryPolicy::default(),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            strict_tools: false,
        }
    }

    client_settings!(strict);

    /// The request body for a context (exposed for tests and debugging).
    pub fn request_body(&self, model: &Model, context: &Context, options: &StreamOptions) -> Value {
        // Plain data with string keys: serializing it cannot fail.
        serde_json::to_value(self.request(model, context, options)).unwrap_or_default()
    }

    /// The request for a context.
    fn request(&self, model: &Model, context: &Context, options: &StreamOptions) -> wire::Request {
        // `max_completion_tokens` unless the model's compat says the
        // server knows only `max_tokens`.
        let (max_completion_tokens, max_tokens) = match model.compat.max_tokens_field {
            MaxTokensField::MaxCompletionTokens => (options.max_tokens, None),
            MaxTokensField::MaxTokens => (None, options.max_tokens),
        };
        wire::Request {
            model: model.id.clone(),
            messages: convert_messages(model, context),
            stream: true,
            stream_options: wire::StreamOptions {
                include_usage: true,
            },
            tools: context
                .tools
                .iter()
                .map(|t| wire::Tool::new(t, self.strict_tools))
                .collect(),
            max_completion_tokens,
            max_tokens,
            temperature: options.temperature,
            // Thinking: `reasoning_effort`, for a reasoning model whose server
            // takes it (DeepSeek's reasoner, for one, thinks without being asked).
            reasoning_effort: options
                .reasoning
                .filter(|_| {
                    model.reasoning && model.compat.supports_reasoning_effort != Some(false)
                })
                .map(|effort| effort.as_str()),
        }
    }
}

/// Transcript -> Chat Completions messages.
fn convert_messages(model: &Model, context: &Context) -> Vec<wire::Message> {
    let mut out = Vec::new();
    if let Some(system) = &context.system_prompt {
        out.push(wire::Message::System {
            content: system.clone(),
        });
    }
    let transcript = fit_transcript(&context.messages, model, API);
    for message in transcript.iter().map(AsRef::as_ref) {
        match message {
            Message::User(u) => match &u.content {
                UserContent::Text(t) => out.push(wire::Message::User {
                    content: wire::UserContent::Text(t.clone()),
                }),
                UserContent::Blocks(blocks) => {
                    let mut parts: Vec<wire::Part> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(wire::Part::Text {
                                text: t.text.clone(),
                            }),
                            ContentBlock::Image(i) => {
                                Some(wire::Part::image(&i.mime_type, &i.data))
                            }
                            _ => None,
                        })
                        .collect();
                    let content = match parts.pop() {
                        // A lone text goes as a string.
                        Some(wire::Part::Text { text }) if parts.is_empty() => {
                            wire::UserContent::Text(text)
                        }
                        Some(last) => {
                            parts.push(last);
                            wire::UserContent::Parts(parts)
                        }
                        None => continue,
                    };
                    out.push(wire::Message::User { content });
                }
            },
            Message::Assistant(a) => {
                let text: String = a
                    .content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .collect::<Vec<_>>()
                    .join("");
                let tool_calls = a
                    .tool_calls()
                    .map(|c| wire::ToolCall {
                        id: c.id.clone(),
                        kind: "function",
                        function: wire::FunctionCall {
                            name: c.name.clone(),
                            arguments: c.arguments.to_string(),
                        },
                    })
                    .collect();
                out.push(wire::Message::Assistant {
                    content: (!text.is_empty()).then_some(text),
                    tool_calls,
                });
            }
            Message::ToolResult(r) => {
                let (text, images) = tool_result_text_and_images(r);
                out.push(wire::Message::Tool {
                    tool_call_id: r.tool_call_id.clone(),
                    content: text,
                });
                if !images.is_empty() {
                    // Tool messages cannot carry images: attach them in a user message.
                    let mut parts = vec![wire::Part::Text {
                        text: "Attached image(s) from the tool result:".into(),
                    }];
                    parts.extend(
                        images
                            .into_iter()
                            .map(|i| wire::Part::image(&i.mime_type, &i.data)),
                    );
                    out.push(wire::Message::User {
                        content: wire::UserContent::Parts(parts),
                    });
                }
            }
        }
    }
    out
}

/// One streamed `chat.completion.chunk`, as far as it is read. Every field
/// is optional (`null` counts as absent) and unknown fields are ignored:
/// compatible servers differ in what they send.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Chunk {
    /// Any shape: an object with a `message`, or a bare string.
    error: Option<Value>,
    usage: Option<ChunkUsage>,
    choices: Option<Vec<Choice>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Choice {
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Delta {
    content: Option<String>,
    /// DeepSeek's and vLLM's name for the thinking text.
    reasoning_content: Option<String>,
    /// OpenRouter's and Ollama's name for it.
    reasoning: Option<String>,
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CallDelta {
    index: Option<u64>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FunctionDelta {
    name: Option<String>,
    /// A fragment of JSON text, or (some servers) the arguments parsed.
    arguments: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ChunkUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    total_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptTokensDetails>,
    completion_tokens_details: Option<CompletionTokensDetails>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CompletionTokensDetails {
    reasoning_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PromptTokensDetails {
    cached_tokens: Option<u64>,
}

/// Usage with reasoning tokens counted once. OpenAI counts them inside
/// `completion_tokens` (its `completion_tokens_details` is a breakdown);
/// a server whose `total_tokens` shows they were left out of
/// `completion_tokens` (total = prompt + completion + reasoning) gets
/// them added to the output.
fn usage_from(u: &ChunkUsage) -> Usage {
    let prompt = u.prompt_tokens.unwrap_or(0);
    let completion = u.completion_tokens.unwrap_or(0);
    let cached = u
        .prompt_tokens_details
        .as_ref()
        .and_then(|d| d.cached_tokens)
        .unwrap_or(0);
    let reasoning = u
        .completion_tokens_details
        .as_ref()
        .and_then(|d| d.reasoning_tokens)
        .unwrap_or(0);
    let separate = reasoning > 0 && u.total_tokens == Some(prompt + completion + reasoning);
    let output = if separate {
        completion + reasoning
    } else {
        completion
    };
    Usage {
        input: prompt.saturating_sub(cached),
        output,
        cache_read: cached,
        cache_write: 0,
        total_tokens: u.total_tokens.unwrap_or(prompt + output),
        cost: Default::default(),
    }
}

/// Streaming state of one response.
struct Stream {
    b: MessageBuilder,
    text: Option<usize>,
    thinking: Option<usize>,
    /// OpenAI tool-call index -> content index.
    calls: HashMap<u64, usize>,
    finish: Option<String>,
}

impl Stream {
    fn close_text(&mut self) {
        if let Some(i) = self.text.take() {
            self.b.end_text(i);
        }
        if let Some(i) = self.thinking.take() {
            self.b.end_thinking(i);
        }
    }

    /// Handles one chunk; `false` when the stream is complete.
    fn chunk(&mut self, data: &str) -> Result<bool, String> {
        if data.trim() == "[DONE]" {
            return Ok(false);
        }
        let chunk: Chunk =
            serde_json::from_str(data).map_err(|e| format!("Invalid stream chunk: {e}"))?;
        self.apply(chunk)
    }

    /// Applies one parsed chunk; `Err` when it carries an error.
    fn apply(&mut self, chunk: Chunk) -> Result<bool, String> {
        if let Some(err) = chunk.error {
            let msg = err["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| err.to_string());
            return Err(msg);
        }
        self.b.start();
        if let Some(u) = &chunk.usage {
            self.b.message().usage = usage_from(u);
        }
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return Ok(true);
        };
        let delta = choice.delta.unwrap_or_default();
        for reasoning in [&delta.reasoning_content, &delta.reasoning] {
            if let Some(r) = reasoning.as_deref().filter(|s| !s.is_empty()) {
                let i = match self.thinking {
                    Some(i) => i,
                    None => {
                        let i = self.b.begin_thinking();
                        self.thinking = Some(i);
                        i
                    }
                };
                self.b.append_thinking(i, r);
            }
        }
        if let Some(t) = delta.content.as_deref().filter(|s| !s.is_empty()) {
            if let Some(i) = self.thinking.take() {
                self.b.end_thinking(i);
            }
            let i = match self.text {
                Some(i) => i,
                None => {
                    let i = self.b.begin_text();
                    self.text = Some(i);
                    i
                }
            };
            self.b.append_text(i, t);
        }
        for call in delta.tool_calls.into_iter().flatten() {
            let id = call.id.as_deref();
            // Some servers omit `index`: a new id starts a call, anything else
            // continues the latest one.
            let key = match call.index {
                Some(k) => k,
                None if id.is_some_and(|id| !id.is_empty()) || self.calls.is_empty() => {
                    self.calls.len() as u64
                }
                None => self.calls.len() as u64 - 1,
            };
            let function = call.function.unwrap_or_default();
            let name = function.name.as_deref();
            let index = match self.calls.get(&key) {
                Some(&i) => {
                    self.b.set_tool_call_identity(i, id, None);
                    i
                }
                None => {
                    self.close_text();
                    let i = self.b.begin_tool_call(id.unwrap_or(""), name.unwrap_or(""));
                    self.calls.insert(key, i);
                    i
                }
            };
            match &function.arguments {
                Some(Value::String(args)) => self.b.append_tool_args(index, args),
                // Some servers send the arguments already parsed.
                Some(args @ Value::Object(_)) => self.b.append_tool_args(index, &args.to_string()),
                _ => {}
            }
        }
        if let Some(reason) = choice.finish_reason {
            self.finish = Some(reason);
        }
        Ok(true)
    }

    fn end_blocks(&mut self) {
        self.close_text();
        let mut calls: Vec<usize> = self.calls.drain().map(|(_, i)| i).collect();
        calls.sort_unstable();
        for i in calls {
            self.b.end_tool_call(i);
        }
    }
}

/// A non-streamed `chat.completion`, as far as it is read (every field
/// optional, as in [`Chunk`]).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Completion {
    /// Any shape, as in [`Chunk`].
    error: Option<Value>,
    usage: Option<ChunkUsage>,
    choices: Option<Vec<CompletionChoice>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CompletionChoice {
    /// The whole message, read as one delta.
    message: Option<Delta>,
    finish_reason: Option<String>,
}

/// A non-streamed `chat.completion` as one streaming chunk (its first
/// choice's message as the delta, tool calls indexed).
fn completion_as_chunk(completion: Completion) -> Chunk {
    let choice = completion
        .choices
        .into_iter()
        .flatten()
        .next()
        .unwrap_or_default();
    let mut delta = choice.message;
    if let Some(calls) = delta.as_mut().and_then(|d| d.tool_calls.as_mut()) {
        for (i, call) in calls.iter_mut().enumerate() {
            call.index = Some(i as u64);
        }
    }
    Chunk {
        error: completion.error,
        usage: completion.usage,
        choices: Some(vec![Choice {
            delta,
            finish_reason: choice.finish_reason,
        }]),
    }
}

fn stop_reason(finish: Option<&str>, has_calls: bool) -> StopReason {
    match finish {
        Some("length") => StopReason::Length,
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        _ if has_calls => StopReason::ToolUse,
        _ => StopReason::Stop,
    }
}

impl ModelClient for OpenAiClient {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantEventStream {
        let mut base = AssistantMessage::empty(&model.provider, &model.id);
        base.api = Some(API.to_string());
        let (mut builder, events) = message_stream(base);
        builder.set_prices(model.cost);
        let body = self.request(model, context, &options);
        let url = format!("{}/chat/completions", self.base_url);
        let mut headers = vec![];
        if let Some(key) = &self.api_key {
            headers.push(("authorization".to_string(), format!("Bearer {key}")));
        }
        headers.extend(model.header_pairs());
        let request = PreparedRequest::new(
            &self.http,
            url,
            headers,
            &body,
            self.retry,
            self.idle_timeout,
            &context.tools,
        );
        let cancel: CancellationToken = options.cancel;
        let idle = self.idle_timeout;
        tokio::spawn(async move {
            let Some(response) = request.open(&mut builder, &cancel).await else {
                return;
            };
            let mut state = Stream {
                b: builder,
                text: None,
                thinking: None,
                calls: HashMap::new(),
                finish: None,
            };
            let response = match json_body(response, idle, &cancel).await {
                Err(stream) => stream,
                Ok(body) => {
                    // A whole completion: replay it as one chunk.
                    let outcome = body.and_then(|v| {
                        let completion = serde_json::from_value(v)
                            .map_err(|e| format!("Invalid response: {e}"))?;
                        state.apply(completion_as_chunk(completion))
                    });
                    state.end_blocks();
                    let has_calls = state.b.has_tool_calls();
                    match outcome {
                        Ok(_) => state
                            .b
                            .finish(stop_reason(state.finish.as_deref(), has_calls)),
                        Err(e) if cancel.is_cancelled() => state.b.fail(StopReason::Aborted, e),
                        Err(e) => state.b.fail(StopReason::Error, e),
                    }
                    return;
                }
            };
            let end = read_events(response, idle, &cancel, |event| state.chunk(&event.data)).await;
            state.end_blocks();
            let has_calls = state.b.has_tool_calls();
            match end {
                Err((reason, e)) => state.b.fail(reason, e),
                Ok(StreamEnd::Closed) if state.finish.is_none() => {
                    state.b.fail(StopReason::Error, ENDED_EARLY)
                }
                Ok(_) => {
                    let reason = stop_reason(state.finish.as_deref(), has_calls);
                    state.b.finish(reason);
                }
            }
        });
        events
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn usage(v: Value) -> Usage {
        usage_from(&serde_json::from_value(v).unwrap())
    }

    #[test]
    fn reasoning_tokens_are_counted_once() {
        // OpenAI: reasoning is part of completion_tokens.
        let u = usage(
            json!({"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150,
            "prompt_tokens_details": {"cached_tokens": 40},
            "completion_tokens_details": {"reasoning_tokens": 30}}),
        );
        assert_eq!(
            (u.input, u.output, u.cache_read, u.total_tokens),
            (60, 50, 40, 150)
        );
        // A server that reports them beside completion_tokens.
        let u = usage(
            json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 150,
            "completion_tokens_details": {"reasoning_tokens": 30}}),
        );
        assert_eq!((u.input, u.output, u.total_tokens), (100, 50, 150));
        // No total: completion as given.
        let u = usage(json!({"prompt_tokens": 10, "completion_tokens": 5,
            "completion_tokens_details": {"reasoning_tokens": 3}}));
        assert_eq!((u.output, u.total_tokens), (5, 15));
    }

    #[test]
    fn the_token_limit_field_follows_the_model_compat() {
        let client = OpenAiClient::new("http://x/v1", None);
        let options = StreamOptions {
            max_tokens: Some(100),
            ..Default::default()
        };
        let mut model = Model::new("openai", "gpt-test");
        let body = client.request_body(&model, &Context::default(), &options);
        assert_eq!(body["max_completion_tokens"], 100);
        assert!(body.get("max_tokens").is_none());
        model.compat.max_tokens_field = crate::MaxTokensField::MaxTokens;
        let body = client.request_body(&model, &Context::default(), &options);
        assert_eq!(body["max_tokens"], 100);
        assert!(body.get("max_completion_tokens").is_none());
    }
}
