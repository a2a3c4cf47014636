//! Keeping a long run inside the model's context window: the loop asks a
//! [`ContextCompactor`] before every request, and again when a request
//! failed because the context was too long (then it retries once).

use agent_ai::{AssistantMessage, Message};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Why the loop compacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompactionReason {
    /// The context is close to the window.
    Threshold,
    /// The provider refused the request as too long.
    Overflow,
}

impl CompactionReason {
    /// `threshold` or `overflow`, as in the event stream.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionReason::Threshold => "threshold",
            CompactionReason::Overflow => "overflow",
        }
    }
}

/// A compacted transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactedContext {
    /// The messages that replace the transcript.
    pub messages: Vec<Message>,
    /// What to report in `auto_compaction_end.result` (summary, kept entry, ...).
    pub record: Value,
}

/// Why a compaction did not happen; the transcript stays as it was.
///
/// ```
/// use agent_core::{AgentError, CompactionError};
/// let e = CompactionError::NothingToCompact("too short".into());
/// assert_eq!(e.to_string(), "nothing to compact yet: too short");
/// assert_eq!(CompactionError::Busy.to_string(), AgentError::AlreadyRunning.to_string());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompactionError {
    /// A run is in progress (for a compaction asked for outside the loop).
    #[error("{}", crate::AgentError::AlreadyRunning)]
    Busy,
    /// Too little of the conversation is old enough to summarise; why.
    #[error("nothing to compact yet: {0}")]
    NothingToCompact(String),
    /// No summary: the model's error, or an empty answer.
    #[error("{0}")]
    Summary(String),
}

/// Decides when and how to shrink the transcript.
pub trait ContextCompactor: Send + Sync {
    /// Whether the transcript should be compacted before the next request.
    fn needs_compaction(&self, messages: &[Message]) -> bool;

    /// Whether a failed response means "the context is too long".
    fn is_overflow(&self, failed: &AssistantMessage) -> bool {
        failed
            .error_message
            .as_deref()
            .is_some_and(is_context_overflow_message)
    }

    /// A shorter transcript; an `Err` leaves the transcript as it was.
    fn compact(
        &self,
        messages: Vec<Message>,
        reason: CompactionReason,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<CompactedContext, CompactionError>>;
}

/// Whether a provider's error text says the context is too long (the
/// wordings of OpenAI, Anthropic, Google and common local servers).
pub fn is_context_overflow_message(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "context length",
        "context window",
        "maximum context",
        "prompt is too long",
        "too many tokens",
        "input is too long",
        "exceeds the maximum",
        "request too large",
        "reduce the length",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}
