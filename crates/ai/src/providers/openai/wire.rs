//! The Chat Completions request as we send it (`POST /chat/completions`).
//!
//! Fields are declared in the order they go on the wire; optional ones are
//! left out when unset. A `Value` here is vendor-opaque: a tool's JSON
//! Schema is passed through as lowered.

use serde::Serialize;
use serde_json::Value;

use crate::providers::lowering::{openai_parameters, sends_strict};

/// `POST /chat/completions`, as far as we send it.
#[derive(Debug, Serialize)]
pub(super) struct Request {
    pub model: String,
    pub messages: Vec<Message>,
    pub stream: bool,
    pub stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// One of the two limits is sent, per `Model.compat.maxTokensField`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub(super) struct StreamOptions {
    pub include_usage: bool,
}

/// One message, tagged by `role`.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub(super) enum Message {
    System {
        content: String,
    },
    User {
        content: UserContent,
    },
    Assistant {
        /// `null` when the turn has only tool calls.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A user message's content: a string, or parts when there is more than
/// one text or an image.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum UserContent {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Part {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

impl Part {
    /// An image as a `data:` URL.
    pub(super) fn image(mime: &str, data: &str) -> Self {
        Part::ImageUrl {
            image_url: ImageUrl {
                url: format!("data:{mime};base64,{data}"),
            },
        }
    }
}

#[derive(Debug, Serialize)]
pub(super) struct ImageUrl {
    pub url: String,
}

#[derive(Debug, Serialize)]
pub(super) struct ToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionCall,
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionCall {
    pub name: String,
    /// The arguments as a JSON string, as the API wants them.
    pub arguments: String,
}

/// A tool: `{type: "function", function: {...}}`.
#[derive(Debug, Serialize)]
pub(super) struct Tool {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: Function,
}

#[derive(Debug, Serialize)]
pub(super) struct Function {
    pub name: String,
    pub description: String,
    /// Opaque: the tool's JSON Schema, lowered for OpenAI.
    pub parameters: Value,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
}

impl Tool {
    /// `tool` in Chat Completions' shape, strict when the tool or the
    /// client asks for it (see [`sends_strict`]). A refused `require`
    /// fails the request before it is sent (`PreparedRequest`); here it is
    /// sent unconstrained.
    pub(super) fn new(tool: &crate::tool::Tool, strict_tools: bool) -> Self {
        let strict = sends_strict(tool, strict_tools).unwrap_or(false);
        Tool {
            kind: "function",
            function: Function {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: openai_parameters(tool, strict),
                strict,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
            serde_json::to_value(Tool::new(&tool(), false)).unwrap(),
            json!({"type":"function","function":{"name":"read","description":"Read a file","parameters":{
                "type":"object",
                "properties":{"path":{"type":"string","description":"Path"},"limit":{"type":"integer","minimum":0}},
                "required":["path"]}}})
        );
    }

    #[test]
    fn strict_tool_golden() {
        assert_eq!(
            serde_json::to_value(Tool::new(&tool(), true).function).unwrap(),
            json!({"name":"read","description":"Read a file","parameters":{
                "type":"object",
                "properties":{"path":{"type":"string","description":"Path"},"limit":{"type":["integer","null"],"minimum":0}},
                "required":["path","limit"],
                "additionalProperties":false},"strict":true})
        );
    }
}
