//! The Messages API request as we send it (`POST /v1/messages`).
//!
//! Fields are declared in the order they go on the wire; optional ones are
//! left out when unset. A `Value` here is vendor-opaque: a tool's JSON
//! Schema and a tool call's arguments are passed through as they are.

use serde::Serialize;
use serde_json::Value;

use crate::providers::lowering::{anthropic_input_schema, sends_strict};
use crate::thinking::ClaudeThinkingParam;

/// `POST /v1/messages`, as far as we send it.
#[derive(Debug, Serialize)]
pub(super) struct Request {
    pub model: String,
    pub max_tokens: u64,
    pub messages: Vec<Message>,
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<System>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// Adaptive thinking's effort.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_config: Option<OutputConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ClaudeThinkingParam>,
    /// Never with thinking on: Anthropic refuses it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

/// The system prompt: a plain string, or one text block when it carries a
/// cache marker.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum System {
    Text(String),
    Blocks(Vec<Block>),
}

#[derive(Debug, Serialize)]
pub(super) struct OutputConfig {
    pub effort: &'static str,
}

/// One message of the conversation.
#[derive(Debug, Serialize)]
pub(super) struct Message {
    pub role: &'static str,
    pub content: Vec<Block>,
}

/// A content block.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block {
    Text {
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: String,
        /// Opaque: Anthropic's signature, sent back as it came.
        signature: String,
    },
    ToolUse {
        id: String,
        name: String,
        /// Opaque: the arguments the model wrote.
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: Vec<Block>,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl Block {
    /// A text block without a cache marker.
    pub(super) fn text(text: impl Into<String>) -> Self {
        Block::Text {
            text: text.into(),
            cache_control: None,
        }
    }

    /// A base64 image block.
    pub(super) fn image(media_type: &str, data: &str) -> Self {
        Block::Image {
            source: ImageSource {
                kind: "base64",
                media_type: media_type.to_string(),
                data: data.to_string(),
            },
            cache_control: None,
        }
    }

    /// Puts the cache marker on this block, where its type takes one.
    pub(super) fn set_cache_control(&mut self, cache: CacheControl) {
        match self {
            Block::Text { cache_control, .. }
            | Block::Image { cache_control, .. }
            | Block::ToolResult { cache_control, .. } => *cache_control = Some(cache),
            Block::Thinking { .. } | Block::ToolUse { .. } => {}
        }
    }
}

#[derive(Debug, Serialize)]
pub(super) struct ImageSource {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub media_type: String,
    pub data: String,
}

/// `cache_control`: ephemeral, with a lifetime when asked for.
#[derive(Debug, Clone, Copy, Serialize)]
pub(super) struct CacheControl {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<&'static str>,
}

/// A tool as the Messages API takes it.
#[derive(Debug, Serialize)]
pub(super) struct Tool {
    pub name: String,
    pub description: String,
    /// Opaque: the tool's JSON Schema, lowered for Anthropic.
    pub input_schema: Value,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
}

impl Tool {
    /// `tool` in the Messages API's shape; strict (see [`sends_strict`])
    /// adds `strict: true` and closes every object of the schema. A
    /// refused `require` fails the request before it is sent
    /// (`PreparedRequest`); here it is sent unconstrained.
    pub(super) fn new(tool: &crate::tool::Tool) -> Self {
        let strict = sends_strict(tool, false).unwrap_or(false);
        Tool {
            name: tool.name.clone(),
            description: tool.description.clone(),
            input_schema: anthropic_input_schema(tool, strict),
            strict,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tool::ConstrainedSampling;

    fn tool() -> crate::tool::Tool {
        crate::tool::Tool::new(
            "read",
            "Read a file",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "ReadParams",
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path"},
                    "limit": {"type": "integer", "format": "uint32", "minimum": 0}
                },
                "required": ["path"]
            }),
        )
    }

    #[test]
    fn tool_golden() {
        assert_eq!(
            serde_json::to_value(Tool::new(&tool())).unwrap(),
            json!({"name":"read","description":"Read a file","input_schema":{
                "type":"object",
                "properties":{"path":{"type":"string","description":"Path"},"limit":{"type":"integer","minimum":0}},
                "required":["path"]}})
        );
    }

    #[test]
    fn strict_closes_objects_and_keeps_optionals() {
        let strict = tool().with_constrained_sampling(ConstrainedSampling::prefer());
        assert_eq!(
            serde_json::to_value(Tool::new(&strict)).unwrap(),
            json!({"name":"read","description":"Read a file","input_schema":{
                "type":"object",
                "properties":{"path":{"type":"string","description":"Path"},"limit":{"type":"integer","minimum":0}},
                "required":["path"],
                "additionalProperties":false},"strict":true})
        );
    }
}
