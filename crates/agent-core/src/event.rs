//! Events the loop emits, with Pi's wire names.

use std::sync::Arc;

use agent_ai::{AssistantMessage, AssistantMessageEvent, Message, ToolResultMessage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::AgentToolResult;

/// Something that happened during a run, tagged by `type` (snake_case) on the wire.
///
/// For one prompt with one successful tool call the order is: `agent_start`,
/// `turn_start`, `message_start`/`message_end` (user), `message_start`,
/// `message_update`..., `message_end` (assistant), `tool_execution_start`,
/// `tool_execution_end`, `message_start`/`message_end` (toolResult), `turn_end`,
/// then the next turn, and finally `agent_end`.
///
/// Calls a tool makes through [`NestedToolCalls`](crate::NestedToolCalls)
/// come between their parent's `tool_execution_start` and
/// `tool_execution_end`, as `tool_execution_*` (and `tool_call_decision`)
/// events whose `parentToolCallId` names the parent; they have no
/// toolResult messages.
// Events are short-lived and matched on by value; boxing the big variant would
// only make every consumer's pattern noisier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// A run began.
    AgentStart,
    /// A run finished; `messages` are the messages the run added.
    AgentEnd {
        /// Messages added by the run, prompts included.
        messages: Vec<Message>,
    },
    /// A turn (one model request plus its tool calls) began.
    TurnStart,
    /// A turn finished.
    TurnEnd {
        /// The assistant message of the turn.
        message: Message,
        /// Tool results of the turn, in the assistant message's call order.
        #[serde(rename = "toolResults")]
        tool_results: Vec<ToolResultMessage>,
    },
    /// A message began (user, assistant or toolResult).
    MessageStart {
        /// The message (partial for an assistant message).
        message: Message,
    },
    /// An assistant message is streaming.
    MessageUpdate {
        /// The message so far: the same shared snapshot as the provider
        /// event's `partial` (on the wire, an assistant [`Message`]).
        #[serde(with = "assistant_snapshot")]
        message: Arc<AssistantMessage>,
        /// The provider event that changed it.
        #[serde(rename = "assistantMessageEvent")]
        assistant_message_event: AssistantMessageEvent,
    },
    /// A message is complete.
    MessageEnd {
        /// The final message.
        message: Message,
    },
    /// A tool call is about to be prepared and run.
    ToolExecutionStart {
        /// Tool call id.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// Tool name.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// Raw arguments as the model sent them.
        args: Value,
        /// The call that made this one, for a nested call (a tool running
        /// tools through [`NestedToolCalls`](crate::NestedToolCalls)); absent
        /// for the model's own calls.
        #[serde(
            rename = "parentToolCallId",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        parent_tool_call_id: Option<String>,
    },
    /// A `before_tool_call` hook recorded a decision about a call (e.g. the
    /// permission rule that allowed or refused it); sent between
    /// `tool_execution_start` and the call's execution or error result.
    ToolCallDecision {
        /// Tool call id.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// Tool name.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// The hook's record.
        decision: Value,
        /// The call that made this one, for a nested call (a tool running
        /// tools through [`NestedToolCalls`](crate::NestedToolCalls)); absent
        /// for the model's own calls.
        #[serde(
            rename = "parentToolCallId",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        parent_tool_call_id: Option<String>,
    },
    /// The transcript is being compacted before a request.
    AutoCompactionStart {
        /// `threshold` or `overflow`.
        reason: String,
    },
    /// Compaction finished.
    AutoCompactionEnd {
        /// The compactor's record (`null` when it failed or was aborted).
        result: Option<Value>,
        /// Whether the run was cancelled meanwhile.
        aborted: bool,
        /// Whether the failed request is sent again (after an overflow).
        #[serde(rename = "willRetry")]
        will_retry: bool,
        /// Why it failed.
        #[serde(rename = "errorMessage", skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
    /// A running tool reported progress.
    ToolExecutionUpdate {
        /// Tool call id.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// Tool name.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// Raw arguments as the model sent them.
        args: Value,
        /// The partial result.
        #[serde(rename = "partialResult")]
        partial_result: AgentToolResult,
        /// The call that made this one, for a nested call (a tool running
        /// tools through [`NestedToolCalls`](crate::NestedToolCalls)); absent
        /// for the model's own calls.
        #[serde(
            rename = "parentToolCallId",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        parent_tool_call_id: Option<String>,
    },
    /// A tool call finished (events come in completion order).
    ToolExecutionEnd {
        /// Tool call id.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// Tool name.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// The final result.
        result: AgentToolResult,
        /// Whether the call failed.
        #[serde(rename = "isError")]
        is_error: bool,
        /// The call that made this one, for a nested call (a tool running
        /// tools through [`NestedToolCalls`](crate::NestedToolCalls)); absent
        /// for the model's own calls.
        #[serde(
            rename = "parentToolCallId",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        parent_tool_call_id: Option<String>,
    },
}

impl AgentEvent {
    /// The wire name of the event type, e.g. `tool_execution_start`.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolCallDecision { .. } => "tool_call_decision",
            AgentEvent::AutoCompactionStart { .. } => "auto_compaction_start",
            AgentEvent::AutoCompactionEnd { .. } => "auto_compaction_end",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
        }
    }

    /// The calling tool call's id when this event is about a nested call
    /// (see [`NestedToolCalls`](crate::NestedToolCalls)); `None` for the
    /// model's own calls and every other event.
    ///
    /// ```
    /// use agent_core::{AgentEvent, AgentToolResult};
    /// let end = AgentEvent::ToolExecutionEnd {
    ///     tool_call_id: "c1/1".into(),
    ///     tool_name: "read".into(),
    ///     result: AgentToolResult::text("hi"),
    ///     is_error: false,
    ///     parent_tool_call_id: Some("c1".into()),
    /// };
    /// assert_eq!(end.parent_tool_call_id(), Some("c1"));
    /// assert_eq!(AgentEvent::AgentStart.parent_tool_call_id(), None);
    /// ```
    pub fn parent_tool_call_id(&self) -> Option<&str> {
        match self {
            AgentEvent::ToolExecutionStart {
                parent_tool_call_id,
                ..
            }
            | AgentEvent::ToolCallDecision {
                parent_tool_call_id,
                ..
            }
            | AgentEvent::ToolExecutionUpdate {
                parent_tool_call_id,
                ..
            }
            | AgentEvent::ToolExecutionEnd {
                parent_tool_call_id,
                ..
            } => parent_tool_call_id.as_deref(),
            _ => None,
        }
    }
}

/// A shared assistant message written and read as a [`Message`] (with its
/// `role`), so `message_update` keeps Pi's shape.
mod assistant_snapshot {
    use std::sync::Arc;

    use agent_ai::{AssistantMessage, Message};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize)]
    #[serde(tag = "role")]
    enum Tagged<'a> {
        #[serde(rename = "assistant")]
        Assistant(&'a AssistantMessage),
    }

    pub(super) fn serialize<S: Serializer>(
        message: &Arc<AssistantMessage>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        Tagged::Assistant(message).serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Arc<AssistantMessage>, D::Error> {
        match Message::deserialize(deserializer)? {
            Message::Assistant(message) => Ok(Arc::new(message)),
            other => Err(serde::de::Error::custom(format!(
                "message_update carries an assistant message, not a {} message",
                other.role()
            ))),
        }
    }
}

/// Receives every event of a run, synchronously and in order. Events are lent,
/// so a sink that keeps one clones it; one that only prints it copies nothing.
pub type EventSink = Arc<dyn Fn(&AgentEvent) + Send + Sync>;
