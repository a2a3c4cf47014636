//! How a run of an [`Agent`](crate::Agent)(super::Agent) ends: its outcome, or why it was
//! refused or failed.

use agent_ai::{Message, StopReason, Usage};

/// Why an [`Agent`](crate::Agent) call was refused or its run failed.
///
/// Its `Debug` form (what `?` in `main` prints) is one short line, not the
/// run's transcript: the outcome is there for code through
/// [`AgentError::outcome`].
///
/// ```
/// let e = agent_core::AgentError::CannotContinue("the transcript is empty");
/// assert_eq!(format!("{e:?}"), "CannotContinue: nothing to continue: the transcript is empty");
/// ```
#[derive(Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A run is already in progress; use `steer` or `follow_up` instead.
    #[error("the agent is already running; queue the message with steer() or follow_up()")]
    AlreadyRunning,
    /// `continue_run` needs a transcript ending in a user or toolResult message.
    #[error("nothing to continue: {0}")]
    CannotContinue(&'static str),
    /// The run ended with a model error (HTTP status, network, invalid
    /// response); the outcome holds the message and what the run produced.
    #[error("the model request failed: {}", .0.error_message.as_deref().unwrap_or("unknown error"))]
    RunFailed(Box<RunOutcome>),
    /// The run was cancelled with [`Agent::abort`](crate::Agent::abort).
    #[error("the run was aborted")]
    Aborted(Box<RunOutcome>),
}

impl std::fmt::Debug for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            AgentError::AlreadyRunning => "AlreadyRunning",
            AgentError::CannotContinue(_) => "CannotContinue",
            AgentError::RunFailed(_) => "RunFailed",
            AgentError::Aborted(_) => "Aborted",
        };
        write!(f, "{kind}: {self}")?;
        if let Some(outcome) = self.outcome() {
            write!(f, " ({} messages in the run)", outcome.messages.len())?;
        }
        Ok(())
    }
}

impl AgentError {
    /// The run's outcome, when a run took place.
    pub fn outcome(&self) -> Option<&RunOutcome> {
        match self {
            AgentError::RunFailed(o) | AgentError::Aborted(o) => Some(o),
            _ => None,
        }
    }
}

/// How a run ended: what [`Agent::prompt`](crate::Agent::prompt) and [`Agent::continue_run`](crate::Agent::continue_run)
/// return (inside [`AgentError::RunFailed`] or [`AgentError::Aborted`] when
/// it did not end well).
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// Why the last assistant message stopped.
    pub stop_reason: StopReason,
    /// The error of a run that ended in `error` or `aborted`.
    pub error_message: Option<String>,
    /// The text of the last assistant message.
    pub final_text: String,
    /// Tokens (and cost) of every model request of the run, added up.
    pub usage: Usage,
    /// The messages the run added to the transcript, prompts included.
    pub messages: Vec<Message>,
}

impl RunOutcome {
    /// The outcome of a run that added `messages`.
    pub fn from_messages(messages: Vec<Message>) -> Self {
        let mut usage = Usage::default();
        for a in messages.iter().filter_map(Message::as_assistant) {
            usage.add(&a.usage);
        }
        let last = messages.iter().rev().find_map(Message::as_assistant);
        RunOutcome {
            stop_reason: last.map(|a| a.stop_reason).unwrap_or(StopReason::Stop),
            error_message: last.and_then(|a| a.error_message.clone()),
            final_text: last.map(|a| a.text()).unwrap_or_default(),
            usage,
            messages,
        }
    }

    /// `Ok(self)` for a run that ended normally, the matching error otherwise.
    pub fn into_result(self) -> Result<RunOutcome, AgentError> {
        match self.stop_reason {
            StopReason::Error => Err(AgentError::RunFailed(Box::new(self))),
            StopReason::Aborted => Err(AgentError::Aborted(Box::new(self))),
            _ => Ok(self),
        }
    }
}
