//! Amazon Bedrock's Converse API, streaming (`ConverseStream`), without the
//! AWS SDK: reqwest, a SigV4 signer and an event-stream decoder of our own.
//!
//! One request is `POST {base}/model/{model id, URL-encoded}/converse-stream`
//! where `base` is `https://bedrock-runtime.{region}.amazonaws.com`. It is
//! signed with SigV4 (service `bedrock`), or carries a Bedrock API key as
//! `Authorization: Bearer`. The answer is a binary event stream
//! (`application/vnd.amazon.eventstream`): `messageStart`,
//! `contentBlockStart` / `contentBlockDelta` / `contentBlockStop`,
//! `messageStop` and `metadata` (usage), or an exception frame.
//!
//! Where the credentials come from, first found wins: the client's own
//! ([`BedrockClient::with_credentials`], [`BedrockClient::with_bearer_token`]);
//! `AWS_BEARER_TOKEN_BEDROCK`; `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` /
//! `AWS_SESSION_TOKEN`; the keys of profile `AWS_PROFILE` (default
//! `default`) in `~/.aws/credentials` (`AWS_SHARED_CREDENTIALS_FILE`), then
//! in `~/.aws/config` (`AWS_CONFIG_FILE`). The region: the client's,
//! `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's `region`, else
//! `us-east-1`. They are looked up when a request starts, and a problem
//! (a malformed file: its name and line) ends that message with an error.
//!
//! Claude models get Anthropic's thinking through
//! `additionalModelRequestFields`, their signed reasoning back (only from
//! the same model), and, unless [`StreamOptions::cache_retention`] says
//! `none`, cache points after the system prompt and the last user turn
//! (`ttl: "1h"` for long retention). The transcript is first fitted to the
//! model ([`fit_transcript`]), which also puts tool-call ids in Bedrock's
//! alphabet (`[a-zA-Z0-9_-]`, at most 64) the same way for a call and its
//! result.
//!
//! Usage: `inputTokens` excludes the cached tokens, which come as
//! `cacheReadInputTokens` and `cacheWriteInputTokens`.

mod credentials;
mod eventstream;
mod sigv4;
mod stream;
mod wire;

use std::time::SystemTime;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use self::credentials::{AwsCredentials, BedrockAuth, CredentialsError};
use self::credentials::{Environment, home_dir, process_env_var};
use super::builder::message_stream;
use super::http::{
    DEFAULT_IDLE_TIMEOUT, PreparedRequest, RetryPolicy, client_settings, http_client,
};
use crate::content::ContentBlock;
use crate::context::Context;
use crate::handoff::fit_transcript;
use crate::message::{AssistantMessage, Message, StopReason, UserContent};
use crate::model::Model;
use crate::stream::{AssistantEventStream, CacheRetention, ModelClient, StreamOptions};
use crate::thinking::ClaudeThinking;

/// The API name recorded on messages from Bedrock.
pub const API: &str = "bedrock-converse-stream";

/// The SigV4 service name of the Bedrock runtime.
pub const SIGNING_SERVICE: &str = "bedrock";

/// The region used when nothing names one (as Pi).
pub const DEFAULT_REGION: &str = "us-east-1";

/// The Bedrock runtime endpoint of a region.
///
/// ```
/// use agent_ai::providers::bedrock::bedrock_base_url;
/// assert_eq!(bedrock_base_url("eu-west-1"), "https://bedrock-runtime.eu-west-1.amazonaws.com");
/// ```
pub fn bedrock_base_url(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}

/// The region of a Bedrock runtime endpoint URL
/// (`https://bedrock-runtime.{region}.amazonaws.com`, `.amazonaws.com.cn`
/// in China), `None` for any other URL (a proxy, a VPC endpoint, a test
/// server).
///
/// ```
/// use agent_ai::providers::bedrock::region_of_endpoint;
/// assert_eq!(region_of_endpoint("https://bedrock-runtime.eu-west-1.amazonaws.com/").as_deref(), Some("eu-west-1"));
/// assert_eq!(region_of_endpoint("http://127.0.0.1:9000"), None);
/// ```
pub fn region_of_endpoint(url: &str) -> Option<String> {
    let host = url
        .strip_prefix("https://bedrock-runtime.")?
        .trim_end_matches('/');
    let region = host
        .strip_suffix(".amazonaws.com")
        .or_else(|| host.strip_suffix(".amazonaws.com.cn"))?;
    let ok = !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    ok.then(|| region.to_string())
}

/// A ConverseStream client.
///
/// ```
/// use agent_ai::providers::bedrock::{AwsCredentials, BedrockClient};
/// let client = BedrockClient::new()
///     .with_region("us-west-2")
///     .with_credentials(AwsCredentials::new("AKIDEXAMPLE", "secret"));
/// assert_eq!(
///     client.url("us-west-2", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
///     "https://bedrock-runtime.us-west-2.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
/// );
/// ```
#[derive(Debug, Clone)]
pub struct BedrockClient {
    http: reqwest::Client,
    base_url: Option<String>,
    region: Option<String>,
    auth: Option<BedrockAuth>,
    retry: RetryPolicy,
    idle_timeout: Option<std::time::Duration>,
}

impl Default for BedrockClient {
    fn default() -> Self {
        Self::new()
    }
}

impl BedrockClient {
    /// A client for the Bedrock endpoint of the region and with the
    /// credentials found when a request starts (see the module docs).
    pub fn new() -> Self {
        BedrockClient {
            http: http_client(),
            base_url: None,
            region: None,
            auth: None,
            retry: RetryPolicy::default(),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
        }
    }

    /// Sends requests to `base_url` (a VPC endpoint, a proxy, a test server)
    /// instead of the region's endpoint; `None` keeps the default.
    pub fn with_base_url(mut self, base_url: Option<String>) -> Self {
        self.base_url = base_url.map(|b| b.trim_end_matches('/').to_string());
        self
    }

    /// The region, instead of the one the environment names.
    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// Signs with these credentials instead of looking for some.
    pub fn with_credentials(mut self, credentials: AwsCredentials) -> Self {
        self.auth = Some(BedrockAuth::Sigv4(credentials));
        self
    }

    /// Sends this Amazon Bedrock API key as `Authorization: Bearer` (no
    /// signing) instead of looking for credentials.
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        self.auth = Some(BedrockAuth::Bearer(token.into()));
        self
    }

    client_settings!();

    /// The URL a request for `model` goes to in `region` (the model id is
    /// percent-encoded: `:` becomes `%3A`).
    pub fn url(&self, region: &str, model: &str) -> String {
        let base = self
            .base_url
            .clone()
            .unwrap_or_else(|| bedrock_base_url(region));
        format!(
            "{base}/model/{}/converse-stream",
            sigv4::uri_encode(model, false)
        )
    }

    /// The region and credentials a request would use now, from the
    /// client's own and the process's environment and files.
    ///
    /// # Errors
    /// A malformed or incomplete credentials file, or no credentials.
    pub fn resolve(&self) -> Result<(String, BedrockAuth), CredentialsError> {
        self.resolve_in(&Environment {
            var: &process_env_var,
            home: home_dir(),
        })
    }

    fn resolve_in(&self, env: &Environment<'_>) -> Result<(String, BedrockAuth), CredentialsError> {
        let region = match &self.region {
            Some(r) => r.clone(),
            None => env.region()?.unwrap_or_else(|| DEFAULT_REGION.to_string()),
        };
        let auth = match &self.auth {
            Some(a) => a.clone(),
            None => env.auth()?,
        };
        Ok((region, auth))
    }

    /// The request body for a context (exposed for tests and debugging).
    pub fn request_body(&self, model: &Model, context: &Context, options: &StreamOptions) -> Value {
        // Plain data with string keys: serializing it cannot fail.
        serde_json::to_value(request(model, context, options)).unwrap_or_default()
    }
}

/// The request for a context.
fn request(model: &Model, context: &Context, options: &StreamOptions) -> wire::Request {
    let cache = cache_point(model, options.cache_retention);
    let mut system = Vec::new();
    if let Some(text) = context.system_prompt.as_ref().filter(|s| !s.is_empty()) {
        system.push(wire::Block::Text(text.clone()));
        system.extend(cache.map(wire::Block::CachePoint));
    }
    let mut inference_config = wire::InferenceConfig::default();
    let mut claude_fields = None;
    if is_claude(&model.id) {
        let claude = ClaudeThinking::request(model, options);
        inference_config.max_tokens = Some(claude.max_tokens);
        claude_fields = claude.thinking.map(|thinking| wire::ClaudeFields {
            output_config: claude.effort.map(|effort| wire::OutputConfig { effort }),
            // Budget thinking between tool calls is a beta.
            anthropic_beta: match claude.effort {
                Some(_) => Vec::new(),
                None => vec![crate::thinking::INTERLEAVED_THINKING_BETA],
            },
            thinking,
        });
    } else {
        inference_config.max_tokens = options
            .max_tokens
            .or((model.max_tokens > 0).then_some(model.max_tokens));
    }
    if claude_fields.is_none() {
        // Claude refuses a temperature with thinking on.
        inference_config.temperature = options.temperature;
    }
    let tool_config = (!context.tools.is_empty()).then(|| wire::ToolConfig {
        tools: context
            .tools
            .iter()
            .map(|t| wire::Tool {
                tool_spec: wire::ToolSpec {
                    name: t.name.clone(),
                    description: t.description.clone(),
                    input_schema: wire::InputSchema {
                        json: t.parameters.clone(),
                    },
                },
            })
            .collect(),
    });
    wire::Request {
        messages: convert_messages(model, context, cache),
        system,
        inference_config,
        tool_config,
        additional_model_request_fields: claude_fields,
    }
}

/// Whether a Bedrock model id is an Anthropic Claude model (a foundation
/// model `anthropic.claude-...`, an inference profile `us.anthropic...`,
/// or an ARN naming one).
fn is_claude(id: &str) -> bool {
    id.to_ascii_lowercase().contains("claude")
}

/// The cache point to put after the system prompt and the last user turn:
/// only Claude models take one here, none when caching is off, a one-hour
/// lifetime for long retention.
fn cache_point(model: &Model, retention: CacheRetention) -> Option<wire::CachePoint> {
    let ttl = match retention {
        _ if !is_claude(&model.id) => return None,
        CacheRetention::None => return None,
        CacheRetention::Short => None,
        CacheRetention::Long => Some("1h"),
    };
    Some(wire::CachePoint {
        kind: "default",
        ttl,
    })
}

/// The image formats Bedrock takes, from a MIME type.
fn image_block(mime_type: &str, data: &str) -> Option<wire::Block> {
    let format = match mime_type.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => {
            tracing::warn!(
                mime_type = other,
                "Bedrock takes no image of this type; dropped"
            );
            return None;
        }
    };
    Some(wire::Block::Image(wire::Image {
        format,
        source: wire::ImageSource {
            bytes: data.to_string(),
        },
    }))
}

fn user_block(block: &ContentBlock) -> Option<wire::Block> {
    match block {
        ContentBlock::Text(t) if !t.text.trim().is_empty() => {
            Some(wire::Block::Text(t.text.clone()))
        }
        ContentBlock::Image(i) => image_block(&i.mime_type, &i.data),
        _ => None,
    }
}

/// Reasoning text, signed or not.
fn reasoning(text: &str, signature: Option<&String>) -> wire::Block {
    wire::Block::ReasoningContent(wire::ReasoningContent {
        reasoning_text: wire::ReasoningText {
            text: text.to_string(),
            signature: signature.cloned(),
        },
    })
}

/// An assistant message fitted by [`fit_transcript`]: the thinking left is
/// this model's own. Claude takes it back signed (unsigned, as text: Claude
/// refuses it); other models take their reasoning text.
fn assistant_blocks(message: &AssistantMessage, model: &Model) -> Vec<wire::Block> {
    let claude = is_claude(&model.id);
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                Some(wire::Block::Text(t.text.clone()))
            }
            ContentBlock::Thinking(t) if t.thinking.trim().is_empty() => None,
            ContentBlock::Thinking(t) => match (&t.thinking_signature, claude) {
                (Some(sig), true) => Some(reasoning(&t.thinking, Some(sig))),
                (None, true) => Some(wire::Block::Text(t.thinking.clone())),
                (_, false) => Some(reasoning(&t.thinking, None)),
            },
            ContentBlock::ToolCall(c) => Some(wire::Block::ToolUse(wire::ToolUse {
                tool_use_id: c.id.clone(),
                name: c.name.clone(),
                input: if c.arguments.is_object() {
                    c.arguments.clone()
                } else {
                    Value::Object(serde_json::Map::new())
                },
            })),
            _ => None,
        })
        .collect()
}

/// The `messages` of a request, from the transcript fitted to the model
/// ([`fit_transcript`]: other models' thinking as text, tool-call ids in
/// Bedrock's alphabet, failed turns out, open calls closed). User and
/// assistant turns alternate: tool results are user content, and
/// consecutive user content is one turn. `cache` goes after the last user
/// turn.
fn convert_messages(
    model: &Model,
    context: &Context,
    cache: Option<wire::CachePoint>,
) -> Vec<wire::Message> {
    let transcript = fit_transcript(&context.messages, model, API);
    let mut turns: Vec<wire::Message> = Vec::new();
    for message in transcript.iter().map(|m| m.as_ref()) {
        let (role, content) = match message {
            Message::User(u) => (
                "user",
                match &u.content {
                    UserContent::Text(t) if t.trim().is_empty() => Vec::new(),
                    UserContent::Text(t) => vec![wire::Block::Text(t.clone())],
                    UserContent::Blocks(b) => b.iter().filter_map(user_block).collect(),
                },
            ),
            Message::Assistant(a) => ("assistant", assistant_blocks(a, model)),
            Message::ToolResult(r) => {
                let mut inner: Vec<wire::Block> = r.content.iter().filter_map(user_block).collect();
                if inner.is_empty() {
                    inner.push(wire::Block::Text("(no output)".into()));
                }
                (
                    "user",
                    vec![wire::Block::ToolResult(wire::ToolResult {
                        tool_use_id: r.tool_call_id.clone(),
                        content: inner,
                        status: if r.is_error { "error" } else { "success" },
                    })],
                )
            }
        };
        if content.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(content),
            _ => turns.push(wire::Message { role, content }),
        }
    }
    if let Some(cache) = cache
        && let Some(last) = turns.iter_mut().rev().find(|m| m.role == "user")
    {
        last.content.push(wire::Block::CachePoint(cache));
    }
    turns
}

/// The host (with a non-default port), path and query of a URL, as SigV4
/// signs them.
fn url_parts(url: &str) -> Option<(String, String, String)> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?;
    let host = match parsed.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    Some((
        host,
        parsed.path().to_string(),
        parsed.query().unwrap_or("").to_string(),
    ))
}

/// The headers that authenticate a POST of `body` to `url`, signed at
/// `time` (`extra` are the other headers sent, signed too).
fn auth_headers(
    auth: &BedrockAuth,
    url: &str,
    region: &str,
    extra: &[(String, String)],
    body: &[u8],
    time: SystemTime,
) -> Result<Vec<(String, String)>, String> {
    match auth {
        BedrockAuth::Bearer(token) => Ok(vec![(
            "authorization".to_string(),
            format!("Bearer {token}"),
        )]),
        BedrockAuth::Sigv4(credentials) => {
            let (host, path, query) =
                url_parts(url).ok_or_else(|| format!("Bedrock: invalid URL {url}"))?;
            // reqwest sends `content-type: application/json` with a JSON body.
            let mut signed = vec![("content-type".to_string(), "application/json".to_string())];
            signed.extend(extra.iter().cloned());
            let input = sigv4::SigningInput {
                method: "POST",
                path: &path,
                query: &query,
                host: &host,
                headers: &signed,
                body,
                region,
                service: SIGNING_SERVICE,
            };
            Ok(sigv4::sign(&input, credentials, time))
        }
    }
}

impl ModelClient for BedrockClient {
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
        let (region, auth) = match self.resolve() {
            Ok(found) => found,
            Err(e) => {
                builder.fail(StopReason::Error, format!("Amazon Bedrock: {e}"));
                return events;
            }
        };
        let url = self.url(&region, &model.id);
        let body = request(model, context, &options);
        let mut request = PreparedRequest::new(
            &self.http,
            url,
            model.header_pairs().collect(),
            &body,
            self.retry,
            self.idle_timeout,
            &context.tools,
        );
        // The body is encoded once: the bytes signed are the bytes sent.
        match auth_headers(
            &auth,
            &request.url,
            &region,
            &request.headers,
            &request.body,
            SystemTime::now(),
        ) {
            Ok(added) => request.headers.extend(added),
            Err(e) => {
                builder.fail(StopReason::Error, e);
                return events;
            }
        }
        let cancel: CancellationToken = options.cancel;
        let idle = self.idle_timeout;
        tracing::debug!(model = %model.id, %region, "starting a Bedrock request");
        tokio::spawn(async move {
            let Some(response) = request.open(&mut builder, &cancel).await else {
                return;
            };
            stream::run(builder, response, idle, &cancel).await;
        });
        events
    }
}

#[cfg(test)]
mod tests;
