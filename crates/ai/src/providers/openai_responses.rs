//! The OpenAI Responses API (streaming), on OpenAI and on Azure OpenAI.
//!
//! One request is `POST {base}/responses` with `stream: true` and
//! `store: false`: the server keeps nothing, so every request carries the
//! whole conversation as input items.
//!
//! What a session keeps so the next request can send an answer back as the
//! server produced it (the same places and shapes Pi uses, so session files
//! move between the two):
//! - a tool call's id is `call_id|item_id` (`call_abc|fc_123`): the call id
//!   the tool result answers and the id of the `function_call` item;
//! - a thinking block's `thinkingSignature` is the whole `reasoning` item as
//!   JSON, `encrypted_content` included (requested with
//!   `include: ["reasoning.encrypted_content"]` for reasoning models); it is
//!   replayed as it came, to the same provider, API and model only;
//! - a text block's `textSignature` is `{"v":1,"id":"msg_..."}`, the id of
//!   its `message` item.
//!
//! An answer from another model is sent as far as it makes sense: its
//! thinking becomes plain text (empty thinking is dropped), its tool calls
//! lose their `fc_` item ids (which the server would try to pair with
//! reasoning it never saw), and its ids are reduced to the characters the
//! API accepts, in the call and in its result alike.
//!
//! Usage: `input` is `input_tokens` less the cached ones (`cacheRead`) and
//! those written to the cache (`cacheWrite`), both of which
//! `input_tokens_details` counts inside `input_tokens`; `output` is
//! `output_tokens`, which already includes the reasoning tokens.

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::builder::message_stream;
use super::http::{
    DEFAULT_IDLE_TIMEOUT, PreparedRequest, RetryPolicy, client_settings, http_client, json_body,
    read_events,
};
use super::lowering::{openai_parameters, sends_strict, tool_result_text_and_images};
use crate::content::ContentBlock;
use crate::context::Context;
use crate::handoff::{fit_transcript, same_model};
use crate::message::{AssistantMessage, Message, StopReason, UserContent};
use crate::model::Model;
use crate::stream::{AssistantEventStream, CacheRetention, ModelClient, StreamOptions};

mod stream;
mod wire;
use self::stream::Stream;
use self::wire::{
    FunctionTool, InputItem, Item, Part, ReasoningParam, RequestBody, input_image, message,
};

/// OpenAI's base URL for the Responses API.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// The API name recorded on messages from OpenAI's Responses API.
pub const API: &str = "openai-responses";

/// The API name recorded on messages from Azure OpenAI's Responses API.
pub const AZURE_API: &str = "azure-openai-responses";

/// The Responses base URL of an Azure OpenAI resource:
/// `https://{resource}.openai.azure.com/openai/v1`.
///
/// ```
/// use agent_ai::providers::openai_responses::azure_base_url;
/// assert_eq!(azure_base_url("contoso"), "https://contoso.openai.azure.com/openai/v1");
/// ```
pub fn azure_base_url(resource: &str) -> String {
    format!("https://{resource}.openai.azure.com/openai/v1")
}

/// How the client authenticates, and so which API it speaks for.
#[derive(Debug, Clone)]
enum Auth {
    /// OpenAI and compatible servers: `Authorization: Bearer KEY`.
    Bearer(Option<String>),
    /// Azure OpenAI: `api-key: KEY`, and `?api-version=` when given.
    Azure {
        key: Option<String>,
        api_version: Option<String>,
    },
}

/// A Responses API client.
///
/// ```
/// use agent_ai::providers::openai_responses::{OpenAiResponsesClient, azure_base_url};
/// let openai = OpenAiResponsesClient::new("https://api.openai.com/v1", Some("sk-...".into()));
/// let azure = OpenAiResponsesClient::azure(azure_base_url("contoso"), Some("key".into()))
///     .with_api_version(Some("2025-04-01-preview".into()));
/// assert_eq!(openai.api(), "openai-responses");
/// assert_eq!(azure.api(), "azure-openai-responses");
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiResponsesClient {
    http: reqwest::Client,
    base_url: String,
    auth: Auth,
    retry: RetryPolicy,
    idle_timeout: Option<std::time::Duration>,
    strict_tools: bool,
}

impl OpenAiResponsesClient {
    /// A client for OpenAI (or a compatible server) at `base_url`, e.g.
    /// `https://api.openai.com/v1`, with an optional bearer key.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        Self::with_auth(base_url.into(), Auth::Bearer(api_key))
    }

    /// A client for Azure OpenAI at `base_url` (see [`azure_base_url`]),
    /// sending the key in the `api-key` header.
    pub fn azure(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        Self::with_auth(
            base_url.into(),
            Auth::Azure {
                key: api_key,
                api_version: None,
            },
        )
    }

    fn with_auth(base_url: String, auth: Auth) -> Self {
        OpenAiResponsesClient {
            http: http_client(),
            base_url: base_url.trim_end_matches('/').to_string(),
            auth,
            retry: RetryPolicy::default(),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            strict_tools: false,
        }
    }

    /// Azure only: the `api-version` query parameter older deployments
    /// need (`None`, the default, sends none). Ignored for OpenAI.
    pub fn with_api_version(mut self, version: Option<String>) -> Self {
        if let Auth::Azure { api_version, .. } = &mut self.auth {
            *api_version = version;
        }
        self
    }

    client_settings!(strict);

    /// The API name this client records on its messages: [`API`] or
    /// [`AZURE_API`].
    pub fn api(&self) -> &'static str {
        match self.auth {
            Auth::Bearer(_) => API,
            Auth::Azure { .. } => AZURE_API,
        }
    }

    /// The URL requests go to.
    fn url(&self) -> String {
        let url = format!("{}/responses", self.base_url);
        let Auth::Azure {
            api_version: Some(version),
            ..
        } = &self.auth
        else {
            return url;
        };
        match reqwest::Url::parse(&url) {
            Ok(mut parsed) => {
                parsed.query_pairs_mut().append_pair("api-version", version);
                parsed.to_string()
            }
            // Sent as is: the request then fails with the URL's own error.
            Err(_) => url,
        }
    }

    fn headers(&self) -> Vec<(String, String)> {
        match &self.auth {
            Auth::Bearer(Some(key)) => vec![("authorization".into(), format!("Bearer {key}"))],
            Auth::Azure { key: Some(key), .. } => vec![("api-key".into(), key.clone())],
            _ => Vec::new(),
        }
    }

    /// The request body for a context (exposed for tests and debugging).
    pub fn request_body(&self, model: &Model, context: &Context, options: &StreamOptions) -> Value {
        // Plain data with string keys: serializing it cannot fail.
        serde_json::to_value(self.request(model, context, options)).unwrap_or_default()
    }

    /// The request for a context.
    fn request(&self, model: &Model, context: &Context, options: &StreamOptions) -> RequestBody {
        RequestBody {
            model: model.id.clone(),
            input: convert_input(model, self.api(), context),
            stream: true,
            store: false,
            include: if model.reasoning {
                vec!["reasoning.encrypted_content"]
            } else {
                Vec::new()
            },
            tools: context
                .tools
                .iter()
                .map(|t| {
                    // A refused `require` fails the request before it is
                    // sent (`PreparedRequest`); here it is sent unconstrained.
                    let strict = sends_strict(t, self.strict_tools).unwrap_or(false);
                    FunctionTool {
                        kind: "function",
                        name: t.name.clone(),
                        description: t.description.clone(),
                        parameters: openai_parameters(t, strict),
                        strict,
                    }
                })
                .collect(),
            max_output_tokens: options.max_tokens,
            temperature: options.temperature,
            prompt_cache_key: options
                .session_id
                .clone()
                .filter(|_| options.cache_retention != CacheRetention::None),
            prompt_cache_retention: (options.cache_retention == CacheRetention::Long)
                .then_some("24h"),
            reasoning: options
                .reasoning
                .filter(|_| model.reasoning)
                .map(|effort| ReasoningParam {
                    effort: effort.as_str(),
                    summary: "auto",
                }),
        }
    }
}

// ---------------------------------------------------------------------------
// The transcript as input items

/// An id part reduced to what the API accepts: `[A-Za-z0-9_-]`, at most
/// 64 characters, no trailing `_`.
fn clean_id(id: &str) -> String {
    let mapped: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    mapped.trim_end_matches('_').to_string()
}

/// Splits our tool-call id into the call id and the `fc_` item id, each
/// cleaned (an item id gets the `fc_` prefix the API requires).
fn split_call_id(id: &str) -> (String, Option<String>) {
    match id.split_once('|') {
        Some((call, item)) => {
            let item = if item.starts_with("fc") {
                item.to_string()
            } else {
                format!("fc_{item}")
            };
            (
                clean_id(call),
                Some(clean_id(&item)).filter(|s| !s.is_empty()),
            )
        }
        None => (clean_id(id), None),
    }
}

/// A text block's signature as Pi writes it: `{"v":1,"id":...}`, with the
/// item's `phase` when it has one.
#[derive(Serialize)]
struct TextSignature<'a> {
    v: u8,
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    phase: Option<&'a str>,
}

/// The item id kept in a text block's signature: Pi's `{"v":1,"id":...}`,
/// or (older sessions) the bare id.
fn text_item_id(signature: Option<&str>) -> Option<String> {
    let signature = signature.filter(|s| !s.is_empty())?;
    if signature.starts_with('{')
        && let Ok(v) = serde_json::from_str::<Value>(signature)
        && v["v"] == 1
        && let Some(id) = v["id"].as_str()
    {
        return Some(id.to_string());
    }
    Some(signature.to_string())
}

/// A stored reasoning item that can be replayed: a JSON object of type
/// `reasoning` with its `encrypted_content` (without it a `store: false`
/// server answers 404 "Items are not persisted").
fn replayable_reasoning(signature: Option<&str>) -> Option<Value> {
    let item: Value = serde_json::from_str(signature?).ok()?;
    let ok = item["type"] == "reasoning"
        && item["encrypted_content"]
            .as_str()
            .is_some_and(|s| !s.is_empty());
    ok.then_some(item)
}

/// Transcript -> input items.
fn convert_input(model: &Model, api: &str, context: &Context) -> Vec<InputItem> {
    let mut out = Vec::new();
    if let Some(system) = &context.system_prompt {
        let role = if model.reasoning {
            "developer"
        } else {
            "system"
        };
        out.push(message(
            role,
            vec![Part::InputText {
                text: system.clone(),
            }],
        ));
    }
    let images = model.supports_images();
    let transcript = fit_transcript(&context.messages, model, api);
    for (index, msg) in transcript.iter().map(AsRef::as_ref).enumerate() {
        match msg {
            Message::User(u) => {
                let content: Vec<Part> = match &u.content {
                    UserContent::Text(t) => vec![Part::InputText { text: t.clone() }],
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(Part::InputText {
                                text: t.text.clone(),
                            }),
                            ContentBlock::Image(i) if images => {
                                Some(input_image(&i.mime_type, &i.data))
                            }
                            _ => None,
                        })
                        .collect(),
                };
                if !content.is_empty() {
                    out.push(message("user", content));
                }
            }
            Message::Assistant(a) => {
                let same = same_model(a, model, api);
                let mut skipped_reasoning = false;
                let assistant_text = |text: String, id: Option<String>| {
                    InputItem::Built(Item::Message {
                        role: "assistant",
                        content: vec![Part::OutputText {
                            text,
                            annotations: Vec::new(),
                        }],
                        id: Some(id.unwrap_or_else(|| format!("msg_{index}"))),
                        status: Some("completed"),
                    })
                };
                for block in &a.content {
                    match block {
                        ContentBlock::Thinking(t) if same => {
                            match replayable_reasoning(t.thinking_signature.as_deref()) {
                                Some(item) => out.push(InputItem::Stored(item)),
                                None => skipped_reasoning = true,
                            }
                        }
                        ContentBlock::Thinking(t) => {
                            if !t.thinking.trim().is_empty() {
                                out.push(assistant_text(t.thinking.clone(), None));
                            }
                        }
                        ContentBlock::Text(t) => {
                            let id = if same {
                                text_item_id(t.text_signature.as_deref())
                                    .map(|id| clean_id(&id))
                                    .filter(|id| !id.is_empty())
                            } else {
                                None
                            };
                            out.push(assistant_text(t.text.clone(), id));
                        }
                        ContentBlock::ToolCall(c) => {
                            let (call_id, item_id) = split_call_id(&c.id);
                            out.push(InputItem::Built(Item::FunctionCall {
                                // Another model's item id, or one whose
                                // reasoning is not sent, would be checked
                                // against reasoning the server never saw.
                                id: item_id.filter(|_| same && !skipped_reasoning),
                                call_id,
                                name: c.name.clone(),
                                arguments: c.arguments.to_string(),
                            }));
                        }
                        ContentBlock::Image(_) => {}
                    }
                }
            }
            Message::ToolResult(r) => {
                let (call_id, _) = split_call_id(&r.tool_call_id);
                let (output, attached) = tool_result_text_and_images(r);
                let attached: Vec<Part> = attached
                    .into_iter()
                    .map(|i| input_image(&i.mime_type, &i.data))
                    .collect();
                out.push(InputItem::Built(Item::FunctionCallOutput {
                    call_id,
                    output,
                }));
                if images && !attached.is_empty() {
                    let mut parts = vec![Part::InputText {
                        text: "Attached image(s) from tool result:".into(),
                    }];
                    parts.extend(attached);
                    out.push(message("user", parts));
                }
            }
        }
    }
    out
}

impl ModelClient for OpenAiResponsesClient {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantEventStream {
        let mut base = AssistantMessage::empty(&model.provider, &model.id);
        base.api = Some(self.api().to_string());
        let (mut builder, events) = message_stream(base);
        builder.set_prices(model.cost);
        let body = self.request(model, context, &options);
        let request = PreparedRequest::new(
            &self.http,
            self.url(),
            self.headers()
                .into_iter()
                .chain(model.header_pairs())
                .collect(),
            &body,
            self.retry,
            self.idle_timeout,
            &context.tools,
        );
        let cancel: CancellationToken = options.cancel;
        let idle = self.idle_timeout;
        tracing::debug!(model = %model.id, api = self.api(), "starting a Responses request");
        tokio::spawn(async move {
            let Some(response) = request.open(&mut builder, &cancel).await else {
                return;
            };
            let mut state = Stream::new(builder);
            let response = match json_body(response, idle, &cancel).await {
                Err(stream) => stream,
                Ok(body) => {
                    let replayed = body.and_then(|v| state.replay(&v));
                    state.end_blocks();
                    match replayed.and_then(|()| state.outcome()) {
                        Ok(reason) => state.b.finish(reason),
                        Err(e) if cancel.is_cancelled() => state.b.fail(StopReason::Aborted, e),
                        Err(e) => state.b.fail(StopReason::Error, e),
                    }
                    return;
                }
            };
            let end = read_events(response, idle, &cancel, |event| {
                state.event(event.event.as_deref(), &event.data)
            })
            .await;
            state.end_blocks();
            match end.and_then(|_| state.outcome().map_err(|e| (StopReason::Error, e))) {
                Ok(reason) => state.b.finish(reason),
                Err((reason, e)) => state.b.fail(reason, e),
            }
        });
        events
    }
}

#[cfg(test)]
mod tests;
