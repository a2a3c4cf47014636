//! The Converse request as we send it
//! (`POST /model/{id}/converse-stream`).
//!
//! Fields are declared in the order they go on the wire; optional ones are
//! left out when unset. Bedrock's unions (a content block is an object
//! with one key naming its kind) are serde's externally tagged enums. A
//! `Value` here is vendor-opaque: a tool's JSON Schema and a tool call's
//! arguments are passed through as they are.

use serde::Serialize;
use serde_json::Value;

use crate::thinking::ClaudeThinkingParam;

/// The `ConverseStream` body, as far as we send it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Request {
    pub messages: Vec<Message>,
    /// The system prompt's text, then its cache point.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub system: Vec<Block>,
    pub inference_config: InferenceConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_config: Option<ToolConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_model_request_fields: Option<ClaudeFields>,
}

/// One turn: `user` and `assistant` alternate.
#[derive(Debug, Serialize)]
pub(super) struct Message {
    pub role: &'static str,
    pub content: Vec<Block>,
}

/// A content block: `{"text": ...}`, `{"image": {...}}`, ...
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum Block {
    Text(String),
    Image(Image),
    ReasoningContent(ReasoningContent),
    ToolUse(ToolUse),
    ToolResult(ToolResult),
    CachePoint(CachePoint),
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Image {
    /// `png`, `jpeg`, `gif` or `webp`.
    pub format: &'static str,
    pub source: ImageSource,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct ImageSource {
    /// Base64, as the JSON protocol carries blobs.
    pub bytes: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ReasoningContent {
    pub reasoning_text: ReasoningText,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct ReasoningText {
    pub text: String,
    /// Opaque: Claude's signature, sent back as it came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolUse {
    pub tool_use_id: String,
    pub name: String,
    /// Opaque: the arguments the model wrote (an object).
    pub input: Value,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolResult {
    pub tool_use_id: String,
    pub content: Vec<Block>,
    /// `success` or `error`.
    pub status: &'static str,
}

/// `cachePoint`: the prompt up to here is cached.
#[derive(Debug, Clone, Copy, Serialize)]
pub(super) struct CachePoint {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<&'static str>,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InferenceConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

#[derive(Debug, Serialize)]
pub(super) struct ToolConfig {
    pub tools: Vec<Tool>,
}

/// `{"toolSpec": {...}}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Tool {
    pub tool_spec: ToolSpec,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: InputSchema,
}

#[derive(Debug, Serialize)]
pub(super) struct InputSchema {
    /// Opaque: the tool's JSON Schema as given.
    pub json: Value,
}

/// `additionalModelRequestFields` for a thinking Claude model: passed by
/// Bedrock to Anthropic's API, so in its (snake_case) spelling.
#[derive(Debug, Serialize)]
pub(super) struct ClaudeFields {
    /// Adaptive thinking's effort.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_config: Option<OutputConfig>,
    /// Budget thinking's interleaved-thinking beta.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub anthropic_beta: Vec<&'static str>,
    pub thinking: ClaudeThinkingParam,
}

#[derive(Debug, Serialize)]
pub(super) struct OutputConfig {
    pub effort: &'static str,
}
