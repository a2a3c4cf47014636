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

use std::time::SystemTime;

use serde_json::{Map, Value, json};
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
        let claude = is_claude(&model.id);
        let cache = cache_point(model, options.cache_retention);
        let mut body = Map::new();
        body.insert(
            "messages".into(),
            Value::Array(convert_messages(model, context, cache.as_ref())),
        );
        if let Some(system) = context.system_prompt.as_ref().filter(|s| !s.is_empty()) {
            let mut blocks = vec![json!({ "text": system })];
            blocks.extend(cache.clone());
            body.insert("system".into(), Value::Array(blocks));
        }
        let mut inference = Map::new();
        let mut thinking = None;
        if claude {
            let (max_tokens, t) = ClaudeThinking::request(model, options);
            inference.insert("maxTokens".into(), json!(max_tokens));
            thinking = t;
        } else if let Some(max) = options
            .max_tokens
            .or((model.max_tokens > 0).then_some(model.max_tokens))
        {
            inference.insert("maxTokens".into(), json!(max));
        }
        if let (Some(t), None) = (options.temperature, &thinking) {
            // Claude refuses a temperature with thinking on.
            inference.insert("temperature".into(), json!(t));
        }
        body.insert("inferenceConfig".into(), Value::Object(inference));
        if !context.tools.is_empty() {
            let tools: Vec<Value> = context
                .tools
                .iter()
                .map(|t| {
                    json!({"toolSpec": {
                        "name": t.name,
                        "description": t.description,
                        "inputSchema": {"json": t.parameters},
                    }})
                })
                .collect();
            body.insert("toolConfig".into(), json!({ "tools": tools }));
        }
        if let Some(mut thinking) = thinking {
            let mut fields = Map::new();
            match thinking.as_object_mut().and_then(|o| o.remove("effort")) {
                Some(effort) => {
                    fields.insert("output_config".into(), json!({ "effort": effort }));
                }
                None => {
                    fields.insert(
                        "anthropic_beta".into(),
                        json!([crate::thinking::INTERLEAVED_THINKING_BETA]),
                    );
                }
            }
            fields.insert("thinking".into(), thinking);
            body.insert("additionalModelRequestFields".into(), Value::Object(fields));
        }
        Value::Object(body)
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
fn cache_point(model: &Model, retention: CacheRetention) -> Option<Value> {
    match retention {
        _ if !is_claude(&model.id) => None,
        CacheRetention::None => None,
        CacheRetention::Short => Some(json!({"cachePoint": {"type": "default"}})),
        CacheRetention::Long => Some(json!({"cachePoint": {"type": "default", "ttl": "1h"}})),
    }
}

/// The image formats Bedrock takes, from a MIME type.
fn image_block(mime_type: &str, data: &str) -> Option<Value> {
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
    Some(json!({"image": {"format": format, "source": {"bytes": data}}}))
}

fn user_block(block: &ContentBlock) -> Option<Value> {
    match block {
        ContentBlock::Text(t) if !t.text.trim().is_empty() => Some(json!({"text": t.text})),
        ContentBlock::Image(i) => image_block(&i.mime_type, &i.data),
        _ => None,
    }
}

/// An assistant message fitted by [`fit_transcript`]: the thinking left is
/// this model's own. Claude takes it back signed (unsigned, as text: Claude
/// refuses it); other models take their reasoning text.
fn assistant_blocks(message: &AssistantMessage, model: &Model) -> Vec<Value> {
    let claude = is_claude(&model.id);
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(t) if !t.text.trim().is_empty() => Some(json!({"text": t.text})),
            ContentBlock::Thinking(t) if t.thinking.trim().is_empty() => None,
            ContentBlock::Thinking(t) => match (&t.thinking_signature, claude) {
                (Some(sig), true) => Some(json!({"reasoningContent": {
                    "reasoningText": {"text": t.thinking, "signature": sig}
                }})),
                (None, true) => Some(json!({"text": t.thinking})),
                (_, false) => Some(json!({"reasoningContent": {
                    "reasoningText": {"text": t.thinking}
                }})),
            },
            ContentBlock::ToolCall(c) => Some(json!({"toolUse": {
                "toolUseId": c.id,
                "name": c.name,
                "input": if c.arguments.is_object() { c.arguments.clone() } else { json!({}) },
            }})),
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
fn convert_messages(model: &Model, context: &Context, cache: Option<&Value>) -> Vec<Value> {
    let transcript = fit_transcript(&context.messages, model, API);
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in transcript.iter().map(|m| m.as_ref()) {
        let (role, content) = match message {
            Message::User(u) => (
                "user",
                match &u.content {
                    UserContent::Text(t) if t.trim().is_empty() => Vec::new(),
                    UserContent::Text(t) => vec![json!({ "text": t })],
                    UserContent::Blocks(b) => b.iter().filter_map(user_block).collect(),
                },
            ),
            Message::Assistant(a) => ("assistant", assistant_blocks(a, model)),
            Message::ToolResult(r) => {
                let mut inner: Vec<Value> = r.content.iter().filter_map(user_block).collect();
                if inner.is_empty() {
                    inner.push(json!({"text": "(no output)"}));
                }
                (
                    "user",
                    vec![json!({"toolResult": {
                        "toolUseId": r.tool_call_id,
                        "content": inner,
                        "status": if r.is_error { "error" } else { "success" },
                    }})],
                )
            }
        };
        if content.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, blocks)) if *last == role => blocks.extend(content),
            _ => turns.push((role, content)),
        }
    }
    if let Some(cache) = cache
        && let Some((_, blocks)) = turns.iter_mut().rev().find(|(r, _)| *r == "user")
    {
        blocks.push(cache.clone());
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
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
        let body = self.request_body(model, context, &options);
        // reqwest serialises the body with serde_json::to_vec, byte for
        // byte what is signed here.
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let mut headers: Vec<(String, String)> = model.header_pairs().collect();
        match auth_headers(&auth, &url, &region, &headers, &bytes, SystemTime::now()) {
            Ok(added) => headers.extend(added),
            Err(e) => {
                builder.fail(StopReason::Error, e);
                return events;
            }
        }
        let request = PreparedRequest::new(
            &self.http,
            url,
            headers,
            body,
            self.retry,
            self.idle_timeout,
            &context.tools,
        );
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
