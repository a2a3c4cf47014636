//! Messages: what the conversation is made of.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::{ContentBlock, ToolCall};
use crate::model::ModelCost;

/// Milliseconds since the Unix epoch, the timestamp unit of every message.
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A conversation message, tagged by `role` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role")]
pub enum Message {
    /// Input from the user (or injected steering / follow-up text).
    #[serde(rename = "user")]
    User(UserMessage),
    /// A model response.
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage),
    /// The result of one tool call.
    #[serde(rename = "toolResult")]
    ToolResult(ToolResultMessage),
}

impl Message {
    /// A user message holding one text block, stamped now.
    ///
    /// ```
    /// let m = agent_ai::Message::user("hi");
    /// assert_eq!(m.role(), "user");
    /// ```
    pub fn user(text: impl Into<String>) -> Self {
        Message::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text(text)]),
            timestamp: now_millis(),
        })
    }

    /// The wire name of the message's role.
    pub fn role(&self) -> &'static str {
        match self {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Message::Assistant(m) => Some(m),
            _ => None,
        }
    }

    /// The tool result, if this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResultMessage> {
        match self {
            Message::ToolResult(m) => Some(m),
            _ => None,
        }
    }
}

/// User content: a plain string or a list of text/image blocks, as on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    /// A plain string.
    Text(String),
    /// Text and image blocks.
    Blocks(Vec<ContentBlock>),
}

impl UserContent {
    /// The content as blocks (a plain string becomes one text block).
    pub fn to_blocks(&self) -> Vec<ContentBlock> {
        match self {
            UserContent::Text(t) => vec![ContentBlock::text(t.clone())],
            UserContent::Blocks(b) => b.clone(),
        }
    }
}

impl UserMessage {
    /// All text joined with newlines (images left out).
    pub fn text(&self) -> String {
        match &self.content {
            UserContent::Text(t) => t.clone(),
            UserContent::Blocks(blocks) => blocks
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// A message from the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// What the user said.
    pub content: UserContent,
    /// Milliseconds since the Unix epoch.
    #[serde(default)]
    pub timestamp: i64,
}

/// Why the model stopped producing output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// Finished normally.
    #[default]
    Stop,
    /// Hit the output token limit; tool-call arguments may be cut short.
    Length,
    /// Stopped to have tools run.
    ToolUse,
    /// The request or stream failed; see `errorMessage`.
    Error,
    /// Cancelled by the caller.
    Aborted,
}

/// Cost of a request in dollars, split like [`Usage`].
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// Input tokens cost.
    #[serde(default)]
    pub input: f64,
    /// Output tokens cost.
    #[serde(default)]
    pub output: f64,
    /// Cache read cost.
    #[serde(default)]
    pub cache_read: f64,
    /// Cache write cost.
    #[serde(default)]
    pub cache_write: f64,
    /// Sum of the above.
    #[serde(default)]
    pub total: f64,
}

/// Token usage of one model request (or of work done inside a tool).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input (prompt) tokens not served from cache.
    #[serde(default)]
    pub input: u64,
    /// Output (completion) tokens.
    #[serde(default)]
    pub output: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write: u64,
    /// All tokens of the request.
    #[serde(default)]
    pub total_tokens: u64,
    /// Dollar cost, when the model's prices are known.
    #[serde(default)]
    pub cost: Cost,
}

impl Usage {
    /// Sets `cost` from the model's prices (see [`ModelCost::cost_of`]).
    /// Free prices (all zero: unknown, or a local model) leave a cost the
    /// server reported as it is.
    ///
    /// ```
    /// use agent_ai::{ModelCost, Usage};
    /// let mut u = Usage { input: 2_000, output: 500, ..Default::default() };
    /// u.price(&ModelCost { input: 1.0, output: 4.0, ..Default::default() });
    /// assert_eq!(u.cost.total, 0.004);
    /// ```
    pub fn price(&mut self, prices: &ModelCost) {
        if !prices.is_free() {
            self.cost = prices.cost_of(self);
        }
    }

    /// Adds another request's usage to this one (tokens and cost).
    ///
    /// ```
    /// let mut total = agent_ai::Usage::default();
    /// total.add(&agent_ai::Usage { input: 10, output: 5, total_tokens: 15, ..Default::default() });
    /// total.add(&agent_ai::Usage { input: 3, output: 1, total_tokens: 4, ..Default::default() });
    /// assert_eq!((total.input, total.output, total.total_tokens), (13, 6, 19));
    /// ```
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cost.input += other.cost.input;
        self.cost.output += other.cost.output;
        self.cost.cache_read += other.cost.cache_read;
        self.cost.cache_write += other.cost.cache_write;
        self.cost.total += other.cost.total;
    }
}

/// A model response.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Text, thinking and tool-call blocks in the order the model produced them.
    pub content: Vec<ContentBlock>,
    /// API family that produced the message (e.g. `openai-completions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// Provider name (e.g. `openai`, `anthropic`, `scripted`).
    #[serde(default)]
    pub provider: String,
    /// Model id.
    #[serde(default)]
    pub model: String,
    /// Token usage of the request.
    #[serde(default)]
    pub usage: Usage,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// What went wrong, when `stop_reason` is `error` or `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Milliseconds since the Unix epoch.
    #[serde(default)]
    pub timestamp: i64,
}

impl AssistantMessage {
    /// An empty message for the given provider and model, stamped now.
    pub fn empty(provider: impl Into<String>, model: impl Into<String>) -> Self {
        AssistantMessage {
            content: Vec::new(),
            api: None,
            provider: provider.into(),
            model: model.into(),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            error_message: None,
            timestamp: now_millis(),
        }
    }

    /// The tool calls of the message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(ContentBlock::as_tool_call)
    }

    /// All text blocks joined (no separator), the answer a print mode shows.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("")
    }
}

// By hand for `clone_from` (see the content blocks' `Clone`): a copy of a
// streaming message refreshed from each snapshot reuses its blocks.
impl Clone for AssistantMessage {
    fn clone(&self) -> Self {
        let AssistantMessage {
            content,
            api,
            provider,
            model,
            usage,
            stop_reason,
            error_message,
            timestamp,
        } = self;
        AssistantMessage {
            content: content.clone(),
            api: api.clone(),
            provider: provider.clone(),
            model: model.clone(),
            usage: *usage,
            stop_reason: *stop_reason,
            error_message: error_message.clone(),
            timestamp: *timestamp,
        }
    }

    fn clone_from(&mut self, source: &Self) {
        let AssistantMessage {
            content,
            api,
            provider,
            model,
            usage,
            stop_reason,
            error_message,
            timestamp,
        } = source;
        self.content.clone_from(content);
        self.api.clone_from(api);
        self.provider.clone_from(provider);
        self.model.clone_from(model);
        self.usage = *usage;
        self.stop_reason = *stop_reason;
        self.error_message.clone_from(error_message);
        self.timestamp = *timestamp;
    }
}

/// The result of one tool call, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// Id of the tool call this answers.
    pub tool_call_id: String,
    /// Name of the tool that ran.
    pub tool_name: String,
    /// What the model sees: text and image blocks.
    pub content: Vec<ContentBlock>,
    /// Structured data for UIs and logs; never sent to the model.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
    /// Tokens used by work inside the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Tool names this result introduced (only present when non-empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_tool_names: Vec<String>,
    /// Whether the tool failed.
    pub is_error: bool,
    /// Milliseconds since the Unix epoch.
    #[serde(default)]
    pub timestamp: i64,
}

impl ToolResultMessage {
    /// A successful result of the call `tool_call_id` to `tool_name`,
    /// stamped now.
    ///
    /// ```
    /// use agent_ai::{ContentBlock, ToolResultMessage};
    /// let r = ToolResultMessage::new("call_1", "read", vec![ContentBlock::text("hi")]);
    /// assert!(!r.is_error);
    /// assert_eq!(r.text(), "hi");
    /// ```
    pub fn new(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        content: Vec<ContentBlock>,
    ) -> Self {
        ToolResultMessage {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            content,
            details: Value::Null,
            usage: None,
            added_tool_names: Vec::new(),
            is_error: false,
            timestamp: now_millis(),
        }
    }

    /// All text blocks joined with newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl From<&str> for Message {
    fn from(text: &str) -> Self {
        Message::user(text)
    }
}

impl From<String> for Message {
    fn from(text: String) -> Self {
        Message::user(text)
    }
}
