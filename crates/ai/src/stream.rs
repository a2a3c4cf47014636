//! Streaming model responses: the event vocabulary and the client trait.

use std::sync::Arc;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::content::ToolCall;
use crate::context::Context;
use crate::message::{AssistantMessage, StopReason};
use crate::model::Model;

/// One step of a streamed assistant message, tagged by `type` on the wire.
///
/// Every event carries `partial`: the message as assembled so far, so a consumer
/// never has to re-assemble deltas itself. It is shared ([`Arc`]): a provider
/// makes each one from a [`crate::PartialMessage`] at the cost of the change,
/// and a consumer that keeps only the newest lets that buffer be reused. A well-formed stream starts with
/// [`AssistantMessageEvent::Start`] and ends with exactly one
/// [`AssistantMessageEvent::Done`] or [`AssistantMessageEvent::Error`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AssistantMessageEvent {
    /// The message began.
    Start {
        /// The (empty) message.
        partial: Arc<AssistantMessage>,
    },
    /// A text block began at `contentIndex`.
    TextStart {
        /// Index of the block in `content`.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The message so far.
        partial: Arc<AssistantMessage>,
    },
    /// More text for the block at `contentIndex`.
    TextDelta {
        /// Index of the block in `content`.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The new text.
        delta: String,
        /// The message so far.
        partial: Arc<AssistantMessage>,
    },
    /// The text block at `contentIndex` is complete.
    TextEnd {
        /// Index of the block in `content`.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The block's full text.
        content: String,
        /// The message so far.
        partial: Arc<AssistantMessage>,
    },
    /// A thinking block began.
    ThinkingStart {
        /// Index of the block in `content`.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The message so far.
        partial: Arc<AssistantMessage>,
    },
    /// More reasoning text.
    ThinkingDelta {
        /// Index of the block in `content`.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The new text.
        delta: String,
        /// The message so far.
        partial: Arc<AssistantMessage>,
    },
    /// The thinking block is complete.
    ThinkingEnd {
        /// Index of the block in `content`.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The block's full text.
        content: String,
        /// The message so far.
        partial: Arc<AssistantMessage>,
    },
    /// A tool call began.
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        /// Index of the block in `content`.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The message so far.
        partial: Arc<AssistantMessage>,
    },
    /// More of the tool call's JSON arguments.
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        /// Index of the block in `content`.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// A fragment of the arguments' JSON text.
        delta: String,
        /// The message so far.
        partial: Arc<AssistantMessage>,
    },
    /// The tool call is complete, with parsed arguments.
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        /// Index of the block in `content`.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The finished call.
        #[serde(rename = "toolCall")]
        tool_call: ToolCall,
        /// The message so far.
        partial: Arc<AssistantMessage>,
    },
    /// The message finished normally.
    Done {
        /// `stop`, `length` or `toolUse`.
        reason: StopReason,
        /// The final message.
        message: AssistantMessage,
    },
    /// The request failed or was cancelled.
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        /// The final message, with `errorMessage` set.
        error: AssistantMessage,
    },
}

impl AssistantMessageEvent {
    /// The message as it stands after this event.
    pub fn message(&self) -> &AssistantMessage {
        match self.snapshot() {
            Ok(partial) => partial,
            Err(last) => last,
        }
    }

    /// The shared snapshot a streaming event carries; `None` for the final
    /// events, whose message is owned.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_ai::{AssistantMessage, AssistantMessageEvent};
    /// let partial = Arc::new(AssistantMessage::empty("p", "m"));
    /// let event = AssistantMessageEvent::Start { partial: partial.clone() };
    /// assert!(Arc::ptr_eq(event.partial().unwrap(), &partial));
    /// ```
    pub fn partial(&self) -> Option<&Arc<AssistantMessage>> {
        self.snapshot().ok()
    }

    // One match for both accessors: a streaming event's shared snapshot, or
    // the owned message of a final one.
    fn snapshot(&self) -> Result<&Arc<AssistantMessage>, &AssistantMessage> {
        match self {
            AssistantMessageEvent::Start { partial }
            | AssistantMessageEvent::TextStart { partial, .. }
            | AssistantMessageEvent::TextDelta { partial, .. }
            | AssistantMessageEvent::TextEnd { partial, .. }
            | AssistantMessageEvent::ThinkingStart { partial, .. }
            | AssistantMessageEvent::ThinkingDelta { partial, .. }
            | AssistantMessageEvent::ThinkingEnd { partial, .. }
            | AssistantMessageEvent::ToolCallStart { partial, .. }
            | AssistantMessageEvent::ToolCallDelta { partial, .. }
            | AssistantMessageEvent::ToolCallEnd { partial, .. } => Ok(partial),
            AssistantMessageEvent::Done { message, .. } => Err(message),
            AssistantMessageEvent::Error { error, .. } => Err(error),
        }
    }

    /// Whether this event ends the stream.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. }
        )
    }
}

/// A stream of assistant-message events.
pub type AssistantEventStream = BoxStream<'static, AssistantMessageEvent>;

/// Per-request options.
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// Cancels the request; the stream then ends with an `aborted` error event.
    pub cancel: CancellationToken,
    /// Overrides the model's default maximum output tokens.
    pub max_tokens: Option<u64>,
    /// Sampling temperature, when the caller wants one.
    pub temperature: Option<f64>,
    /// How hard a reasoning model should think; `None` asks for no
    /// thinking. Sent only to a model whose [`Model::reasoning`] is set:
    /// Responses `reasoning.effort`, Chat Completions `reasoning_effort`,
    /// Anthropic `thinking` (a token budget from
    /// [`StreamOptions::thinking_budgets`], or adaptive thinking with an
    /// effort for models whose compat says so), Gemini `thinkingConfig`
    /// (Pi's budgets and levels).
    pub reasoning: Option<ReasoningEffort>,
    /// Token budgets per level, for APIs that take a budget.
    pub thinking_budgets: crate::thinking::ThinkingBudgets,
    /// A stable id for the conversation, which lets the server reuse its
    /// prompt cache across requests (the Responses provider sends it as
    /// `prompt_cache_key`).
    pub session_id: Option<String>,
    /// How long the provider should keep the prompt cached; see
    /// [`CacheRetention`].
    pub cache_retention: CacheRetention,
}

/// How long a provider should keep a conversation's prompt in its cache,
/// Pi's `cacheRetention`. A cached prompt costs a tenth of its price to
/// read back, so caching is on unless asked otherwise.
///
/// - Anthropic: `cache_control` on the system prompt and on the last user
///   block (`ttl: "1h"` for [`CacheRetention::Long`] on Anthropic's own
///   endpoint, which alone takes it).
/// - Responses: `prompt_cache_key` from [`StreamOptions::session_id`]
///   (`prompt_cache_retention: "24h"` for long).
/// - Bedrock: a `cachePoint` after the system prompt and the last user
///   message.
/// - Chat Completions and Gemini cache by themselves.
///
/// ```
/// let r: agent_ai::CacheRetention = serde_json::from_str(r#""none""#).unwrap();
/// assert_eq!(r, agent_ai::CacheRetention::None);
/// assert_eq!(agent_ai::CacheRetention::default(), agent_ai::CacheRetention::Short);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheRetention {
    /// Ask for no caching.
    None,
    /// The provider's default lifetime (five minutes at Anthropic).
    #[default]
    Short,
    /// The longest lifetime the provider offers.
    Long,
}

impl CacheRetention {
    /// Parses `none`, `short` or `long` (Pi's `PI_CACHE_RETENTION` values).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" | "off" => Some(CacheRetention::None),
            "short" => Some(CacheRetention::Short),
            "long" => Some(CacheRetention::Long),
            _ => None,
        }
    }
}

/// Reasoning effort, by Pi's thinking-level names.
///
/// ```
/// let e: agent_ai::ReasoningEffort = serde_json::from_str(r#""high""#).unwrap();
/// assert_eq!(e.as_str(), "high");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    /// The least reasoning the model can do.
    Minimal,
    /// Little reasoning.
    Low,
    /// The usual default of reasoning models.
    Medium,
    /// Much reasoning.
    High,
    /// The most; only some models accept it (others refuse the request).
    Xhigh,
}

impl ReasoningEffort {
    /// The wire name (`minimal` ... `xhigh`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::Xhigh => "xhigh",
        }
    }
}

/// Something that turns a [`Context`] into a streamed assistant message.
///
/// Implementations never fail out of band: transport errors, HTTP errors and
/// cancellation all end the stream with an [`AssistantMessageEvent::Error`] whose
/// message has `stopReason` `error` or `aborted` and an `errorMessage`.
pub trait ModelClient: Send + Sync {
    /// Starts one request and streams its events.
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantEventStream;
}

/// A finished stream's message, built from an error when nothing usable came back.
///
/// Used by callers that want the final message and do not care about deltas.
pub async fn complete(
    client: &dyn ModelClient,
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessage {
    use futures::StreamExt;
    let mut stream = client.stream(model, context, options);
    let mut last: Option<Arc<AssistantMessage>> = None;
    while let Some(event) = stream.next().await {
        match event {
            AssistantMessageEvent::Done { message, .. } => return message,
            AssistantMessageEvent::Error { error, .. } => return error,
            other => last = other.partial().cloned(),
        }
    }
    let mut msg = last
        .map(Arc::unwrap_or_clone)
        .unwrap_or_else(|| AssistantMessage::empty(&model.provider, &model.id));
    msg.stop_reason = StopReason::Error;
    msg.error_message = Some("model stream ended without a final event".to_string());
    msg
}
