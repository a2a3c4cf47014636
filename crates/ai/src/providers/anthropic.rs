//! Anthropic Messages API (streaming).

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::builder::{MessageBuilder, message_stream};
use super::http::{
    DEFAULT_IDLE_TIMEOUT, ENDED_EARLY, PreparedRequest, RetryPolicy, client_settings, http_client,
    json_body, read_events,
};
use super::lowering::sends_strict;
use crate::content::ContentBlock;
use crate::context::Context;
use crate::handoff::fit_transcript;
use crate::message::{AssistantMessage, Message, StopReason, UserContent};
use crate::model::Model;
use crate::stream::{AssistantEventStream, CacheRetention, ModelClient, StreamOptions};
use crate::thinking::ClaudeThinking;

mod wire;

/// Default base URL.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-beta` header value sent with requests that carry strict
/// tools (Anthropic's structured outputs).
pub const STRICT_TOOLS_BETA: &str = "structured-outputs-2025-11-13";

/// The `anthropic-beta` value that lets a budget-thinking model think
/// between tool calls.
pub const INTERLEAVED_THINKING_BETA: &str = crate::thinking::INTERLEAVED_THINKING_BETA;

/// The API name recorded on the messages this client writes.
const API: &str = "anthropic-messages";

/// API version header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A Messages API client.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    retry: RetryPolicy,
    idle_timeout: Option<std::time::Duration>,
}

impl AnthropicClient {
    /// A client for `base_url` (e.g. `https://api.anthropic.com`; a trailing
    /// `/v1` is accepted too).
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        let base_url = base_url.into();
        let base_url = base_url.trim_end_matches('/');
        AnthropicClient {
            http: http_client(),
            base_url: base_url.strip_suffix("/v1").unwrap_or(base_url).to_string(),
            api_key,
            retry: RetryPolicy::default(),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
        }
    }

    client_settings!();

    /// The request body for a context (exposed for tests and debugging).
    pub fn request_body(&self, model: &Model, context: &Context, options: &StreamOptions) -> Value {
        // Plain data with string keys: serializing it cannot fail.
        serde_json::to_value(self.request(model, context, options)).unwrap_or_default()
    }

    /// The request for a context.
    fn request(&self, model: &Model, context: &Context, options: &StreamOptions) -> wire::Request {
        let claude = ClaudeThinking::request(model, options);
        let cache = self.cache_control(options.cache_retention);
        let mut messages = convert_messages(model, context);
        if let Some(cache) = cache {
            mark_last_user_block(&mut messages, cache);
        }
        let system = context.system_prompt.as_ref().map(|system| match cache {
            Some(cache) if !system.is_empty() => wire::System::Blocks(vec![wire::Block::Text {
                text: system.clone(),
                cache_control: Some(cache),
            }]),
            _ => wire::System::Text(system.clone()),
        });
        wire::Request {
            model: model.id.clone(),
            max_tokens: claude.max_tokens,
            messages,
            stream: true,
            system,
            tools: context.tools.iter().map(wire::Tool::new).collect(),
            output_config: claude.effort.map(|effort| wire::OutputConfig { effort }),
            // Anthropic refuses a temperature with thinking on.
            temperature: options.temperature.filter(|_| claude.thinking.is_none()),
            thinking: claude.thinking,
        }
    }

    /// The `cache_control` marker for `retention`: ephemeral, with a one
    /// hour lifetime for long retention on Anthropic's own endpoint (other
    /// endpoints, proxies among them, may refuse `ttl`).
    fn cache_control(&self, retention: CacheRetention) -> Option<wire::CacheControl> {
        let ttl = match retention {
            CacheRetention::None => return None,
            CacheRetention::Long if self.base_url.contains("api.anthropic.com") => Some("1h"),
            _ => None,
        };
        Some(wire::CacheControl {
            kind: "ephemeral",
            ttl,
        })
    }
}

/// Puts `cache` on the last block of the last user message: the prompt up
/// to there is cached, and the next request reads it back.
fn mark_last_user_block(messages: &mut [wire::Message], cache: wire::CacheControl) {
    let last_block = messages
        .iter_mut()
        .rev()
        .find(|m| m.role == "user")
        .and_then(|m| m.content.last_mut());
    if let Some(block) = last_block {
        block.set_cache_control(cache);
    }
}

fn block_json(block: &ContentBlock) -> Option<wire::Block> {
    match block {
        ContentBlock::Text(t) if !t.text.is_empty() => Some(wire::Block::text(&t.text)),
        ContentBlock::Image(i) => Some(wire::Block::image(&i.mime_type, &i.data)),
        _ => None,
    }
}

fn convert_messages(model: &Model, context: &Context) -> Vec<wire::Message> {
    let mut out: Vec<wire::Message> = Vec::new();
    let transcript = fit_transcript(&context.messages, model, API);
    for message in transcript.iter().map(AsRef::as_ref) {
        match message {
            Message::User(u) => {
                let content: Vec<wire::Block> = match &u.content {
                    UserContent::Text(t) => vec![wire::Block::text(t)],
                    UserContent::Blocks(b) => b.iter().filter_map(block_json).collect(),
                };
                if !content.is_empty() {
                    out.push(wire::Message {
                        role: "user",
                        content,
                    });
                }
            }
            Message::Assistant(a) => {
                let content: Vec<wire::Block> = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        // Unsigned thinking (cut short, or from a server
                        // that signs nothing) cannot go back as thinking.
                        ContentBlock::Thinking(t) => match &t.thinking_signature {
                            Some(sig) => Some(wire::Block::Thinking {
                                thinking: t.thinking.clone(),
                                signature: sig.clone(),
                            }),
                            None if !t.thinking.trim().is_empty() => {
                                Some(wire::Block::text(&t.thinking))
                            }
                            None => None,
                        },
                        ContentBlock::ToolCall(c) => Some(wire::Block::ToolUse {
                            id: c.id.clone(),
                            name: c.name.clone(),
                            input: c.arguments.clone(),
                        }),
                        other => block_json(other),
                    })
                    .collect();
                if !content.is_empty() {
                    out.push(wire::Message {
                        role: "assistant",
                        content,
                    });
                }
            }
            Message::ToolResult(r) => {
                let mut inner: Vec<wire::Block> = r.content.iter().filter_map(block_json).collect();
                if inner.is_empty() {
                    inner.push(wire::Block::text("(no output)"));
                }
                let block = wire::Block::ToolResult {
                    tool_use_id: r.tool_call_id.clone(),
                    content: inner,
                    is_error: r.is_error,
                    cache_control: None,
                };
                // Consecutive tool results travel in one user message.
                match out.last_mut() {
                    Some(last)
                        if last.role == "user"
                            && last
                                .content
                                .iter()
                                .all(|b| matches!(b, wire::Block::ToolResult { .. })) =>
                    {
                        last.content.push(block);
                    }
                    _ => out.push(wire::Message {
                        role: "user",
                        content: vec![block],
                    }),
                }
            }
        }
    }
    out
}

/// One Messages stream event, as far as it is read: one struct for every
/// `type` (each reads its own fields), every field optional (`null` counts
/// as absent), unknown fields and types ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Event {
    #[serde(rename = "type")]
    kind: Option<String>,
    /// The content block of `content_block_*`.
    index: Option<u64>,
    /// `message_start`'s message.
    message: Option<MessageStart>,
    /// `content_block_start`'s block.
    content_block: Option<BlockStart>,
    /// `content_block_delta`'s and `message_delta`'s delta.
    delta: Option<Delta>,
    /// `message_delta`'s usage.
    usage: Option<EventUsage>,
    /// `error`'s error: any shape (`type` and `message` when it is an object).
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MessageStart {
    usage: Option<EventUsage>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EventUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BlockStart {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
    id: Option<String>,
    name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Delta {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
    thinking: Option<String>,
    signature: Option<String>,
    partial_json: Option<String>,
    stop_reason: Option<String>,
}

enum Open {
    Text(usize),
    Thinking(usize),
    Tool(usize),
}

struct Stream {
    b: MessageBuilder,
    open: HashMap<u64, Open>,
    stop: Option<String>,
    done: bool,
}

impl Stream {
    /// Handles one event's data; `false` when the message is complete.
    fn event(&mut self, data: &str) -> Result<bool, String> {
        let event: Event =
            serde_json::from_str(data).map_err(|e| format!("Invalid stream event: {e}"))?;
        self.apply(event)
    }

    /// Applies one parsed event; `Err` when it is an `error` event.
    fn apply(&mut self, v: Event) -> Result<bool, String> {
        let index = v.index.unwrap_or(0);
        match v.kind.as_deref().unwrap_or("") {
            "message_start" => {
                self.b.start();
                let u = v.message.and_then(|m| m.usage).unwrap_or_default();
                let usage = &mut self.b.message().usage;
                usage.input = u.input_tokens.unwrap_or(0);
                usage.cache_read = u.cache_read_input_tokens.unwrap_or(0);
                usage.cache_write = u.cache_creation_input_tokens.unwrap_or(0);
                usage.output = u.output_tokens.unwrap_or(0);
                usage.total_tokens =
                    usage.input + usage.output + usage.cache_read + usage.cache_write;
            }
            "content_block_start" => {
                let block = v.content_block.unwrap_or_default();
                let open = match block.kind.as_deref() {
                    Some("text") => {
                        let i = self.b.begin_text();
                        if let Some(t) = block.text.as_deref().filter(|t| !t.is_empty()) {
                            self.b.append_text(i, t);
                        }
                        Open::Text(i)
                    }
                    Some("thinking") => Open::Thinking(self.b.begin_thinking()),
                    Some("tool_use") => Open::Tool(self.b.begin_tool_call(
                        block.id.as_deref().unwrap_or(""),
                        block.name.as_deref().unwrap_or(""),
                    )),
                    _ => return Ok(true),
                };
                self.open.insert(index, open);
            }
            "content_block_delta" => {
                let d = v.delta.unwrap_or_default();
                let text = |t: Option<String>| t.unwrap_or_default();
                match (self.open.get(&index), d.kind.as_deref()) {
                    (Some(Open::Text(i)), Some("text_delta")) => {
                        let i = *i;
                        self.b.append_text(i, &text(d.text));
                    }
                    (Some(Open::Thinking(i)), Some("thinking_delta")) => {
                        let i = *i;
                        self.b.append_thinking(i, &text(d.thinking));
                    }
                    (Some(Open::Thinking(i)), Some("signature_delta")) => {
                        let i = *i;
                        self.b.append_signature(i, &text(d.signature));
                    }
                    (Some(Open::Tool(i)), Some("input_json_delta")) => {
                        let i = *i;
                        self.b.append_tool_args(i, &text(d.partial_json));
                    }
                    _ => {}
                }
            }
            "content_block_stop" => match self.open.remove(&index) {
                Some(Open::Text(i)) => self.b.end_text(i),
                Some(Open::Thinking(i)) => self.b.end_thinking(i),
                Some(Open::Tool(i)) => self.b.end_tool_call(i),
                None => {}
            },
            "message_delta" => {
                if let Some(r) = v.delta.and_then(|d| d.stop_reason) {
                    self.stop = Some(r);
                }
                if let Some(o) = v.usage.and_then(|u| u.output_tokens) {
                    let usage = &mut self.b.message().usage;
                    usage.output = o;
                    usage.total_tokens =
                        usage.input + usage.output + usage.cache_read + usage.cache_write;
                }
            }
            "message_stop" => {
                self.done = true;
                return Ok(false);
            }
            "error" => {
                let e = v.error.unwrap_or_default();
                return Err(match (e["type"].as_str(), e["message"].as_str()) {
                    (Some(t), Some(m)) => format!("{t}: {m}"),
                    (_, Some(m)) => m.to_string(),
                    _ => e.to_string(),
                });
            }
            _ => {}
        }
        Ok(true)
    }

    fn close_all(&mut self) {
        let mut open: Vec<(u64, Open)> = self.open.drain().collect();
        open.sort_by_key(|(k, _)| *k);
        for (_, o) in open {
            match o {
                Open::Text(i) => self.b.end_text(i),
                Open::Thinking(i) => self.b.end_thinking(i),
                Open::Tool(i) => self.b.end_tool_call(i),
            }
        }
    }
}

/// A non-streamed Messages response, as far as it is read (every field
/// optional, as in [`Event`]).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WholeMessage {
    content: Option<Vec<WholeBlock>>,
    stop_reason: Option<String>,
    usage: Option<EventUsage>,
}

/// One content block of a [`WholeMessage`].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WholeBlock {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
    thinking: Option<String>,
    signature: Option<String>,
    id: Option<String>,
    name: Option<String>,
    /// The tool call's arguments, any JSON.
    input: Option<Value>,
}

/// A non-streamed Messages response as the stream events it stands for.
fn message_as_events(v: Value) -> Result<Vec<Event>, String> {
    let invalid = |e: serde_json::Error| format!("Invalid response: {e}");
    if v["type"] == "error" {
        return Ok(vec![serde_json::from_value(v).map_err(invalid)?]);
    }
    let whole: WholeMessage = serde_json::from_value(v).map_err(invalid)?;
    let output_tokens = whole.usage.as_ref().and_then(|u| u.output_tokens);
    let event = |kind: &str| Event {
        kind: Some(kind.to_string()),
        ..Event::default()
    };
    let delta = |kind: &str| Delta {
        kind: Some(kind.to_string()),
        ..Delta::default()
    };
    let mut events = vec![Event {
        message: Some(MessageStart { usage: whole.usage }),
        ..event("message_start")
    }];
    for (i, block) in whole.content.into_iter().flatten().enumerate() {
        let index = Some(i as u64);
        let start = |kind: &str| BlockStart {
            kind: Some(kind.to_string()),
            ..BlockStart::default()
        };
        let (start, first) = match block.kind.as_deref() {
            Some("text") => (
                start("text"),
                Delta {
                    text: block.text,
                    ..delta("text_delta")
                },
            ),
            Some("thinking") => (
                start("thinking"),
                Delta {
                    thinking: block.thinking,
                    ..delta("thinking_delta")
                },
            ),
            Some("tool_use") => (
                BlockStart {
                    id: block.id,
                    name: block.name,
                    ..start("tool_use")
                },
                Delta {
                    partial_json: Some(block.input.unwrap_or_default().to_string()),
                    ..delta("input_json_delta")
                },
            ),
            _ => continue,
        };
        events.push(Event {
            index,
            content_block: Some(start),
            ..event("content_block_start")
        });
        events.push(Event {
            index,
            delta: Some(first),
            ..event("content_block_delta")
        });
        if let Some(signature) = block.signature {
            events.push(Event {
                index,
                delta: Some(Delta {
                    signature: Some(signature),
                    ..delta("signature_delta")
                }),
                ..event("content_block_delta")
            });
        }
        events.push(Event {
            index,
            ..event("content_block_stop")
        });
    }
    events.push(Event {
        delta: Some(Delta {
            stop_reason: whole.stop_reason,
            ..Delta::default()
        }),
        usage: Some(EventUsage {
            output_tokens,
            ..EventUsage::default()
        }),
        ..event("message_delta")
    });
    events.push(event("message_stop"));
    Ok(events)
}

impl ModelClient for AnthropicClient {
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
        let url = format!("{}/v1/messages", self.base_url);
        let mut headers = vec![(
            "anthropic-version".to_string(),
            ANTHROPIC_VERSION.to_string(),
        )];
        if let Some(key) = &self.api_key {
            headers.push(("x-api-key".to_string(), key.clone()));
        }
        // Strict tools are a beta of the Messages API: announced only when
        // a tool is sent strict, so other requests stay as they were.
        let mut betas = Vec::new();
        if context
            .tools
            .iter()
            .any(|t| sends_strict(t, false).unwrap_or(false))
        {
            betas.push(STRICT_TOOLS_BETA);
        }
        if matches!(
            ClaudeThinking::of(model, &options),
            Some(ClaudeThinking::Budget(_))
        ) {
            betas.push(INTERLEAVED_THINKING_BETA);
        }
        if !betas.is_empty() {
            headers.push(("anthropic-beta".to_string(), betas.join(",")));
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
                open: HashMap::new(),
                stop: None,
                done: false,
            };
            let response = match json_body(response, idle, &cancel).await {
                Err(stream) => stream,
                Ok(body) => {
                    // A whole message: replay it as the events a stream would have sent.
                    let mut outcome = body.and_then(message_as_events);
                    if let Ok(events) = &mut outcome {
                        for event in std::mem::take(events) {
                            if let Err(err) = state.apply(event) {
                                outcome = Err(err);
                                break;
                            }
                        }
                    }
                    state.close_all();
                    match outcome {
                        Ok(_) if state.stop.as_deref() == Some("refusal") => state
                            .b
                            .fail(StopReason::Error, "The model refused to answer"),
                        Ok(_) => state.b.finish(match state.stop.as_deref() {
                            Some("max_tokens") => StopReason::Length,
                            Some("tool_use") => StopReason::ToolUse,
                            _ if state.b.has_tool_calls() => StopReason::ToolUse,
                            _ => StopReason::Stop,
                        }),
                        Err(e) if cancel.is_cancelled() => state.b.fail(StopReason::Aborted, e),
                        Err(e) => state.b.fail(StopReason::Error, e),
                    }
                    return;
                }
            };
            let end = read_events(response, idle, &cancel, |event| state.event(&event.data)).await;
            state.close_all();
            match end {
                Err((reason, e)) => state.b.fail(reason, e),
                Ok(_) if state.done || state.stop.is_some() => {
                    let reason = match state.stop.as_deref() {
                        Some("max_tokens") => StopReason::Length,
                        Some("tool_use") => StopReason::ToolUse,
                        Some("refusal") => {
                            state
                                .b
                                .fail(StopReason::Error, "The model refused to answer");
                            return;
                        }
                        _ if state.b.has_tool_calls() => StopReason::ToolUse,
                        _ => StopReason::Stop,
                    };
                    state.b.finish(reason);
                }
                Ok(_) => state.b.fail(StopReason::Error, ENDED_EARLY),
            }
            debug_assert!(state.b.is_finished());
        });
        events
    }
}
