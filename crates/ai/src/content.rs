//! Content blocks: the pieces messages are made of.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One block of message content, tagged by `type` on the wire.
///
/// User messages and tool results carry [`ContentBlock::Text`] and
/// [`ContentBlock::Image`]; assistant messages carry text, thinking and tool calls.
///
/// ```
/// use agent_ai::ContentBlock;
/// let block = ContentBlock::text("hello");
/// assert_eq!(serde_json::to_string(&block).unwrap(), r#"{"type":"text","text":"hello"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    /// Plain text.
    #[serde(rename = "text")]
    Text(TextContent),
    /// A base64-encoded image.
    #[serde(rename = "image")]
    Image(ImageContent),
    /// Model reasoning, shown to the user but not treated as an answer.
    #[serde(rename = "thinking")]
    Thinking(ThinkingContent),
    /// A request from the model to run a tool.
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })
    }

    /// An image block from base64 data and its MIME type.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
        })
    }

    /// The text of a text block, `None` for any other kind.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    /// The tool call of a tool-call block, `None` for any other kind.
    pub fn as_tool_call(&self) -> Option<&ToolCall> {
        match self {
            ContentBlock::ToolCall(c) => Some(c),
            _ => None,
        }
    }
}

/// A text block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Provider-specific signature that must be echoed back (some APIs need it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
}

/// An image block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image bytes.
    pub data: String,
    /// MIME type such as `image/png`.
    pub mime_type: String,
}

/// A thinking (reasoning) block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    /// The reasoning text.
    pub thinking: String,
    /// Provider signature needed to send the block back (Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Call id, unique within the assistant message; echoed in the tool result.
    pub id: String,
    /// Name of the tool to run.
    pub name: String,
    /// Raw arguments as the model produced them.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// Provider signature attached to the call (Gemini).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

impl ToolCall {
    /// A tool call with the given id, tool name and arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            thought_signature: None,
        }
    }
}
