//! Google's Gemini API (`streamGenerateContent`, streaming), on the Gemini
//! Developer API and, with an API key, on Vertex AI.
//!
//! One request is `POST {base}/models/{model}:streamGenerateContent?alt=sse`
//! with the key in `x-goog-api-key`; each SSE `data:` line is a whole
//! `GenerateContentResponse` chunk, and the stream ends after the chunk
//! that carries a `finishReason`.
//!
//! What a session keeps so the next request can send an answer back as the
//! server produced it (Pi's places, so session files move between the two):
//! a part's `thoughtSignature` goes to the block made from it, as a text
//! block's `textSignature`, a thinking block's `thinkingSignature` or a
//! tool call's `thoughtSignature`. Signatures (and thinking as thinking)
//! go back only to the same provider, API and model, and only when they
//! are base64; another model's thinking becomes plain text.
//!
//! Gemini usually sends function calls without an `id`. The client then
//! makes one in Pi's shape, `{name}_{millis}_{n}`, unique in the process;
//! such a made-up id is never sent back (the call and its
//! `functionResponse` are paired by name and order, as Gemini pairs them),
//! while an id the server gave is sent back on both.
//!
//! Tool schemas go as `parametersJsonSchema` (full JSON Schema, as Pi sends
//! them). A server that answers 400 naming a field it does not know (a proxy
//! that speaks only the older form) gets the request once more with the
//! schemas lowered to the legacy `parameters` subset
//! ([`lower_for`]);
//! [`GoogleClient::with_legacy_parameters`] sends that form from the start.
//!
//! Usage: `promptTokenCount` includes `cachedContentTokenCount`, so `input`
//! is the difference and `cacheRead` the cached part; `output` is
//! `candidatesTokenCount` plus `thoughtsTokenCount` (the thinking is billed
//! as output, and counted once).

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::builder::message_stream;
use super::http::{
    DEFAULT_IDLE_TIMEOUT, PreparedRequest, RetryPolicy, client_settings, http_client, json_body,
    read_events,
};
use super::lowering::{lower_for, tool_result_text_and_images};
use crate::content::ContentBlock;
use crate::context::Context;
use crate::handoff::{fit_transcript, same_model};
use crate::message::{AssistantMessage, Message, StopReason, UserContent, now_millis};
use crate::model::Model;
use crate::stream::{AssistantEventStream, ModelClient, ReasoningEffort, StreamOptions};

mod stream;
mod wire;
use self::stream::Stream;
use self::wire::{
    Content, FunctionCall, FunctionDeclaration, FunctionOutput, FunctionResponse, GenerationConfig,
    Part, RequestBody, ThinkingConfig, ToolGroup,
};

/// The Gemini Developer API's base URL.
pub const GOOGLE_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The API name recorded on messages from the Gemini Developer API.
pub const API: &str = "google-generative-ai";

/// The API name recorded on messages from Gemini on Vertex AI.
pub const VERTEX_API: &str = "google-vertex";

/// The Vertex AI base URL of a project and region (`global`, `us-central1`),
/// for [`GoogleClient::vertex`].
///
/// ```
/// use agent_ai::providers::google::vertex_base_url;
/// assert_eq!(
///     vertex_base_url("my-project", "us-central1"),
///     "https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1"
/// );
/// ```
pub fn vertex_base_url(project: &str, location: &str) -> String {
    let host = if location == "global" {
        "aiplatform.googleapis.com".to_string()
    } else {
        format!("{location}-aiplatform.googleapis.com")
    };
    format!("https://{host}/v1/projects/{project}/locations/{location}")
}

/// A Gemini API client.
///
/// ```
/// use agent_ai::providers::google::{GOOGLE_BASE_URL, GoogleClient};
/// let client = GoogleClient::new(GOOGLE_BASE_URL, Some("AIza...".into()));
/// assert_eq!(client.api(), "google-generative-ai");
/// assert_eq!(
///     client.url("gemini-2.5-flash"),
///     "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
/// );
/// ```
#[derive(Debug, Clone)]
pub struct GoogleClient {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    vertex: bool,
    legacy_parameters: bool,
    retry: RetryPolicy,
    idle_timeout: Option<std::time::Duration>,
}

impl GoogleClient {
    /// A client for the Gemini Developer API (or a server speaking it) at
    /// `base_url`, e.g. [`GOOGLE_BASE_URL`], sending `api_key` in
    /// `x-goog-api-key`.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        GoogleClient {
            http: http_client(),
            base_url: base_url.into().trim_end_matches('/').to_string(),
            api_key,
            vertex: false,
            legacy_parameters: false,
            retry: RetryPolicy::default(),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
        }
    }

    /// A client for Gemini on Vertex AI at `base_url` (see
    /// [`vertex_base_url`]) with a Vertex API key: requests go to
    /// `{base}/publishers/google/models/{model}:streamGenerateContent`.
    /// OAuth (application default credentials) is not supported.
    pub fn vertex(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        GoogleClient {
            vertex: true,
            ..Self::new(base_url, api_key)
        }
    }

    /// Sends tool schemas as the legacy `parameters` (Google's OpenAPI
    /// subset, lowered by [`lower_for`]) instead of `parametersJsonSchema`,
    /// for servers that know only that form.
    pub fn with_legacy_parameters(mut self, legacy: bool) -> Self {
        self.legacy_parameters = legacy;
        self
    }

    client_settings!();

    /// The API name this client records on its messages: [`API`] or
    /// [`VERTEX_API`].
    pub fn api(&self) -> &'static str {
        if self.vertex { VERTEX_API } else { API }
    }

    /// The URL a request for `model` goes to.
    pub fn url(&self, model: &str) -> String {
        let publisher = if self.vertex {
            "/publishers/google"
        } else {
            ""
        };
        format!(
            "{}{publisher}/models/{model}:streamGenerateContent?alt=sse",
            self.base_url
        )
    }

    fn headers(&self) -> Vec<(String, String)> {
        self.api_key
            .iter()
            .map(|k| ("x-goog-api-key".to_string(), k.clone()))
            .collect()
    }

    /// The request body for a context (exposed for tests and debugging).
    pub fn request_body(&self, model: &Model, context: &Context, options: &StreamOptions) -> Value {
        let body = self.request(model, context, options, self.legacy_parameters);
        // Plain data with string keys: serializing it cannot fail.
        serde_json::to_value(body).unwrap_or_default()
    }

    /// The request for a context, its tools' schemas in the legacy form
    /// when `legacy`.
    fn request(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        legacy: bool,
    ) -> RequestBody {
        let api = self.api();
        let tools = if context.tools.is_empty() {
            Vec::new()
        } else {
            vec![ToolGroup {
                function_declarations: context
                    .tools
                    .iter()
                    .map(|t| FunctionDeclaration {
                        name: t.name.clone(),
                        description: t.description.clone(),
                        parameters_json_schema: (!legacy).then(|| t.parameters.clone()),
                        parameters: legacy.then(|| lower_for(api, &t.parameters)),
                    })
                    .collect(),
            }]
        };
        let thinking = options.reasoning.filter(|_| model.reasoning).map(|effort| {
            // Budgets a user set (`thinkingBudgets`) replace the
            // Gemini defaults, as in Pi; untouched ones do not.
            let custom = (options.thinking_budgets != crate::thinking::ThinkingBudgets::default())
                .then_some(&options.thinking_budgets);
            thinking_config(&model.id, effort, custom)
        });
        let generation = GenerationConfig {
            max_output_tokens: options.max_tokens,
            temperature: options.temperature,
            thinking_config: thinking,
        };
        RequestBody {
            contents: convert_contents(model, api, context),
            system_instruction: context.system_prompt.as_ref().map(|s| Content {
                role: None,
                parts: vec![Part::text(s.clone())],
            }),
            tools,
            generation_config: (!generation.is_empty()).then_some(generation),
        }
    }
}

/// Pi's thinking settings for a model and level: Gemini 3 takes a
/// `thinkingLevel` (Pro only LOW or HIGH), 2.5 Pro and Flash a token
/// budget, any other model a dynamic budget (-1).
fn thinking_config(
    model: &str,
    effort: ReasoningEffort,
    custom: Option<&crate::thinking::ThinkingBudgets>,
) -> ThinkingConfig {
    use ReasoningEffort as E;
    let id = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let mut config = ThinkingConfig {
        include_thoughts: true,
        thinking_budget: None,
        thinking_level: None,
    };
    if id.starts_with("gemini-3") {
        let level = if id.contains("pro") {
            match effort {
                E::Minimal | E::Low => "LOW",
                _ => "HIGH",
            }
        } else {
            match effort {
                E::Minimal => "MINIMAL",
                E::Low => "LOW",
                E::Medium => "MEDIUM",
                E::High | E::Xhigh => "HIGH",
            }
        };
        config.thinking_level = Some(level);
        return config;
    }
    let top = if id.contains("2.5-pro") {
        Some(32_768)
    } else if id.contains("2.5-flash") {
        Some(24_576)
    } else {
        None
    };
    config.thinking_budget = Some(match (top, effort, custom) {
        (Some(top), _, Some(budgets)) => {
            i64::try_from(budgets.tokens(effort)).map_or(top, |b| b.min(top))
        }
        (None, _, _) => -1,
        (Some(_), E::Minimal, None) => 128,
        (Some(_), E::Low, None) => 2_048,
        (Some(_), E::Medium, None) => 8_192,
        (Some(top), E::High | E::Xhigh, None) => top,
    });
    config
}

// ---------------------------------------------------------------------------
// The transcript as contents

/// What Gemini 3 accepts in place of a function call's signature when the
/// call has none (another model's call): Pi sends the same.
const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// A signature worth sending back: non-empty base64 (standard or URL-safe,
/// padding optional), as Gemini issues them.
fn valid_signature(signature: Option<&str>) -> Option<String> {
    let s = signature?.trim();
    let ok = !s.is_empty()
        && s.trim_end_matches('=')
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_'));
    ok.then(|| s.to_string())
}

/// Counts the ids made up in this process, so that two are never equal.
static CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A made-up id for a call that came without one: Pi's `{name}_{millis}_{n}`.
fn new_call_id(name: &str) -> String {
    let n = CALL_COUNTER.fetch_add(1, Ordering::Relaxed) + 1;
    format!("{name}_{}_{n}", now_millis())
}

/// Whether `id` was made up by [`new_call_id`] (or by Pi, the same way) for
/// a call named `name`: such ids are not the server's and are not sent.
fn made_up_id(id: &str, name: &str) -> bool {
    let Some(rest) = id.strip_prefix(name).and_then(|r| r.strip_prefix('_')) else {
        return false;
    };
    let mut numbers = rest.split('_');
    let digits =
        |s: Option<&str>| s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    digits(numbers.next()) && digits(numbers.next()) && numbers.next().is_none()
}

/// The id to send for a call (or its result): the server's, never ours.
fn wire_id(id: &str, name: &str) -> Option<String> {
    (!id.is_empty() && !made_up_id(id, name)).then(|| id.to_string())
}

/// Appends `part` to the last content when it has `role`, else to a new one.
fn push_part(out: &mut Vec<Content>, role: &'static str, part: Part) {
    match out.last_mut() {
        Some(last) if last.role == Some(role) => last.parts.push(part),
        _ => out.push(Content {
            role: Some(role),
            parts: vec![part],
        }),
    }
}

/// Transcript -> contents.
fn convert_contents(model: &Model, api: &str, context: &Context) -> Vec<Content> {
    let images = model.supports_images();
    let gemini3 = model.id.to_ascii_lowercase().contains("gemini-3");
    let mut out: Vec<Content> = Vec::new();
    let transcript = fit_transcript(&context.messages, model, api);
    for msg in transcript.iter().map(AsRef::as_ref) {
        match msg {
            Message::User(u) => {
                let parts: Vec<Part> = match &u.content {
                    UserContent::Text(t) => vec![Part::text(t.clone())],
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(Part::text(t.text.clone())),
                            ContentBlock::Image(i) if images => {
                                Some(Part::image(&i.mime_type, &i.data))
                            }
                            _ => None,
                        })
                        .collect(),
                };
                if !parts.is_empty() {
                    out.push(Content {
                        role: Some("user"),
                        parts,
                    });
                }
            }
            Message::Assistant(a) => {
                let same = same_model(a, model, api);
                let signature = |s: Option<&str>| if same { valid_signature(s) } else { None };
                let mut parts = Vec::new();
                for block in &a.content {
                    match block {
                        ContentBlock::Text(t) if !t.text.is_empty() => parts.push(Part {
                            thought_signature: signature(t.text_signature.as_deref()),
                            ..Part::text(t.text.clone())
                        }),
                        ContentBlock::Thinking(t) if same => {
                            let sig = signature(t.thinking_signature.as_deref());
                            if !t.thinking.is_empty() || sig.is_some() {
                                parts.push(Part {
                                    thought: Some(true),
                                    thought_signature: sig,
                                    ..Part::text(t.thinking.clone())
                                });
                            }
                        }
                        ContentBlock::Thinking(t) => {
                            if !t.thinking.trim().is_empty() {
                                parts.push(Part::text(t.thinking.clone()));
                            }
                        }
                        ContentBlock::ToolCall(c) => {
                            let sig = signature(c.thought_signature.as_deref())
                                .or_else(|| gemini3.then(|| SKIP_SIGNATURE.to_string()));
                            parts.push(Part {
                                function_call: Some(FunctionCall {
                                    name: c.name.clone(),
                                    args: c.arguments.clone(),
                                    id: wire_id(&c.id, &c.name),
                                }),
                                thought_signature: sig,
                                ..Part::default()
                            });
                        }
                        ContentBlock::Text(_) | ContentBlock::Image(_) => {}
                    }
                }
                if !parts.is_empty() {
                    out.push(Content {
                        role: Some("model"),
                        parts,
                    });
                }
            }
            Message::ToolResult(r) => {
                let (text, attached) = tool_result_text_and_images(r);
                let response = if r.is_error {
                    FunctionOutput::Error(text)
                } else {
                    FunctionOutput::Output(text)
                };
                let part = Part {
                    function_response: Some(FunctionResponse {
                        name: r.tool_name.clone(),
                        response,
                        id: wire_id(&r.tool_call_id, &r.tool_name),
                    }),
                    ..Part::default()
                };
                // The responses to one turn's calls go together, in one
                // user content that holds only function responses.
                match out.last_mut() {
                    Some(last)
                        if last.role == Some("user")
                            && last.parts.iter().all(Part::is_function_response) =>
                    {
                        last.parts.push(part);
                    }
                    _ => out.push(Content {
                        role: Some("user"),
                        parts: vec![part],
                    }),
                }
                if images && !attached.is_empty() {
                    let mut parts = vec![Part::text("Tool result image:".into())];
                    parts.extend(attached.iter().map(|i| Part::image(&i.mime_type, &i.data)));
                    out.push(Content {
                        role: Some("user"),
                        parts,
                    });
                }
            }
        }
    }
    // Consecutive user contents (a tool result's images, then the next
    // prompt) are fine for Gemini; consecutive model contents are merged.
    let mut merged: Vec<Content> = Vec::with_capacity(out.len());
    for content in out {
        if content.role == Some("model") {
            for part in content.parts {
                push_part(&mut merged, "model", part);
            }
        } else {
            merged.push(content);
        }
    }
    merged
}

/// Whether a failed request's message is a 400 about a field the server
/// does not know ("Invalid JSON payload received. Unknown name ..."): the
/// sign of a server that takes only the legacy schema form.
fn refuses_a_schema_field(message: &str) -> bool {
    message.starts_with("HTTP 400") && message.contains("Unknown name")
}

impl ModelClient for GoogleClient {
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
        let body = self.request(model, context, &options, self.legacy_parameters);
        // The second chance: the same request with the legacy schemas.
        let fallback = (!self.legacy_parameters && !context.tools.is_empty())
            .then(|| serde_json::to_vec(&self.request(model, context, &options, true)).ok())
            .flatten();
        let request = PreparedRequest::new(
            &self.http,
            self.url(&model.id),
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
        tracing::debug!(model = %model.id, api = self.api(), "starting a Gemini request");
        tokio::spawn(async move {
            let resend = |error: &str| fallback.filter(|_| refuses_a_schema_field(error));
            let Some(response) = request.open_or_resend(&mut builder, &cancel, resend).await else {
                return;
            };
            let mut state = Stream::new(builder);
            let response = match json_body(response, idle, &cancel).await {
                Err(stream) => stream,
                Ok(body) => {
                    let replayed = body.and_then(|v| state.replay(v));
                    state.close();
                    match replayed.and_then(|()| state.outcome()) {
                        Ok(reason) => state.b.finish(reason),
                        Err(e) if cancel.is_cancelled() => state.b.fail(StopReason::Aborted, e),
                        Err(e) => state.b.fail(StopReason::Error, e),
                    }
                    return;
                }
            };
            let end = read_events(response, idle, &cancel, |event| state.event(&event.data)).await;
            state.close();
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
