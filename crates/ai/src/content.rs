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
#[derive(Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Provider-specific signature that must be echoed back (some APIs need it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
}

/// An image block.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image bytes.
    pub data: String,
    /// MIME type such as `image/png`.
    pub mime_type: String,
}

/// A thinking (reasoning) block.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    /// The reasoning text.
    pub thinking: String,
    /// Provider signature needed to send the block back (Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
}

/// A tool call requested by the model.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
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

// Clone by hand for `clone_from`: refreshing a copy of a streaming message
// from the next snapshot (the loop does it once per update) then reuses the
// copy's strings and only copies what changed, instead of allocating every
// block of the message again. The patterns name every field, so a new field
// cannot be forgotten.

impl Clone for ContentBlock {
    fn clone(&self) -> Self {
        match self {
            ContentBlock::Text(t) => ContentBlock::Text(t.clone()),
            ContentBlock::Image(i) => ContentBlock::Image(i.clone()),
            ContentBlock::Thinking(t) => ContentBlock::Thinking(t.clone()),
            ContentBlock::ToolCall(c) => ContentBlock::ToolCall(c.clone()),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        match (self, source) {
            (ContentBlock::Text(a), ContentBlock::Text(b)) => a.clone_from(b),
            (ContentBlock::Image(a), ContentBlock::Image(b)) => a.clone_from(b),
            (ContentBlock::Thinking(a), ContentBlock::Thinking(b)) => a.clone_from(b),
            (ContentBlock::ToolCall(a), ContentBlock::ToolCall(b)) => a.clone_from(b),
            (this, source) => *this = source.clone(),
        }
    }
}

impl Clone for TextContent {
    fn clone(&self) -> Self {
        let TextContent {
            text,
            text_signature,
        } = self;
        TextContent {
            text: text.clone(),
            text_signature: text_signature.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        let TextContent {
            text,
            text_signature,
        } = source;
        self.text.clone_from(text);
        self.text_signature.clone_from(text_signature);
    }
}

impl Clone for ImageContent {
    fn clone(&self) -> Self {
        let ImageContent { data, mime_type } = self;
        ImageContent {
            data: data.clone(),
            mime_type: mime_type.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        let ImageContent { data, mime_type } = source;
        self.data.clone_from(data);
        self.mime_type.clone_from(mime_type);
    }
}

impl Clone for ThinkingContent {
    fn clone(&self) -> Self {
        let ThinkingContent {
            thinking,
            thinking_signature,
        } = self;
        ThinkingContent {
            thinking: thinking.clone(),
            thinking_signature: thinking_signature.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        let ThinkingContent {
            thinking,
            thinking_signature,
        } = source;
        self.thinking.clone_from(thinking);
        self.thinking_signature.clone_from(thinking_signature);
    }
}

impl Clone for ToolCall {
    fn clone(&self) -> Self {
        let ToolCall {
            id,
            name,
            arguments,
            thought_signature,
        } = self;
        ToolCall {
            id: id.clone(),
            name: name.clone(),
            arguments: arguments.clone(),
            thought_signature: thought_signature.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        let ToolCall {
            id,
            name,
            arguments,
            thought_signature,
        } = source;
        self.id.clone_from(id);
        self.name.clone_from(name);
        // `Value` has no `clone_from` of its own; a call's arguments rarely
        // change between two snapshots.
        if self.arguments != *arguments {
            self.arguments = arguments.clone();
        }
        self.thought_signature.clone_from(thought_signature);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::AssistantMessage;
    use serde_json::json;

    /// `clone_from` leaves an exact copy whatever it started from: longer,
    /// shorter, other block kinds, other arguments.
    #[test]
    fn clone_from_makes_an_exact_copy() {
        let call = |id: &str, args: Value| ContentBlock::ToolCall(ToolCall::new(id, "read", args));
        let mut a = AssistantMessage::empty("p", "m");
        a.content = vec![
            ContentBlock::text("hello"),
            call("c1", json!({"path": "a"})),
            ContentBlock::image("AAAA", "image/png"),
        ];
        let mut b = AssistantMessage::empty("q", "n");
        b.api = Some("x".into());
        b.error_message = Some("boom".into());
        b.content = vec![
            call("c1", json!({})),
            ContentBlock::Thinking(ThinkingContent {
                thinking: "hm".into(),
                thinking_signature: Some("sig".into()),
            }),
            ContentBlock::text("a much longer text than before"),
            call("c2", json!({"path": "b"})),
        ];
        for (from, to) in [(&a, &b), (&b, &a), (&a, &a)] {
            let mut copy = to.clone();
            copy.clone_from(from);
            assert_eq!(&copy, from);
        }
    }
}
