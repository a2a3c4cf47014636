//! Hooks around tool execution: `before_tool_call` and `after_tool_call`.

use std::sync::Arc;

use agent_ai::{AssistantMessage, ContentBlock, ToolCall, Usage};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::AgentContext;
use crate::tool::AgentToolResult;

/// What a `before_tool_call` hook sees.
#[derive(Debug, Clone)]
pub struct BeforeToolCallContext {
    /// The assistant message that asked for the call, shared by every
    /// call of the batch (a copy per call made a batch quadratic).
    pub assistant_message: Arc<AssistantMessage>,
    /// The call as the model sent it.
    pub tool_call: ToolCall,
    /// Arguments after preparation, coercion and validation.
    pub args: Value,
    /// The run as the batch began: system prompt, transcript (up to and
    /// including the assistant message) and active tools. Shared by every
    /// call of the batch.
    pub context: Arc<AgentContext>,
}

/// A `before_tool_call` decision. The default lets the call run unchanged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BeforeToolCallResult {
    /// Refuse the call; it never executes and gets an error result.
    pub block: bool,
    /// Text of the error result of a blocked call (default `Tool execution was blocked`).
    pub reason: Option<String>,
    /// Carried onto a blocked call's result.
    pub terminate: bool,
    /// Replacement arguments; executed as given, without re-validation.
    pub args: Option<Value>,
    /// What was decided about the call and why (e.g. which permission rule
    /// matched), for observers: the loop sends it as a
    /// [`AgentEvent::ToolCallDecision`](crate::AgentEvent::ToolCallDecision).
    pub decision: Option<Value>,
}

impl BeforeToolCallResult {
    /// Blocks the call with a reason.
    pub fn block(reason: impl Into<String>) -> Self {
        BeforeToolCallResult {
            block: true,
            reason: Some(reason.into()),
            ..Default::default()
        }
    }

    /// Lets the call run with other arguments.
    pub fn rewrite(args: Value) -> Self {
        BeforeToolCallResult {
            args: Some(args),
            ..Default::default()
        }
    }
}

/// What an `after_tool_call` hook sees.
#[derive(Debug, Clone)]
pub struct AfterToolCallContext {
    /// The assistant message that asked for the call, shared by every
    /// call of the batch (a copy per call made a batch quadratic).
    pub assistant_message: Arc<AssistantMessage>,
    /// The call as the model sent it.
    pub tool_call: ToolCall,
    /// The arguments the tool ran with.
    pub args: Value,
    /// The tool's result (or its error result).
    pub result: AgentToolResult,
    /// Whether the call failed.
    pub is_error: bool,
    /// The run as the batch began (see [`BeforeToolCallContext::context`]).
    pub context: Arc<AgentContext>,
}

/// Replacements an `after_tool_call` hook asks for; each `Some` field replaces the
/// original wholesale (no deep merge), `None` keeps it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AfterToolCallResult {
    /// New content.
    pub content: Option<Vec<ContentBlock>>,
    /// New details.
    pub details: Option<Value>,
    /// New usage.
    pub usage: Option<Usage>,
    /// New terminate flag.
    pub terminate: Option<bool>,
    /// New error flag.
    pub is_error: Option<bool>,
}

/// Why a hook failed, as a hook author says it: a message for the model.
///
/// The call's result becomes an error whose text is the message: from a
/// `before_tool_call` hook the tool is not run (as with
/// [`BeforeToolCallResult::block`], without ending the run); from an
/// `after_tool_call` hook the tool's own result is replaced.
///
/// ```
/// use std::sync::Arc;
/// use agent_core::{BeforeToolCallHook, HookError};
///
/// // Given to the loop with `AgentOptions::with_before_tool_call`.
/// let hook: BeforeToolCallHook = Arc::new(|ctx, _cancel| {
///     Box::pin(async move {
///         // A failing check is a hook error; `?` takes a `String` too.
///         let path = ctx.args["path"]
///             .as_str()
///             .ok_or_else(|| HookError::new("this hook needs a `path` argument"))?;
///         if path.starts_with("/etc") {
///             return Err(format!("{path} is off limits").into());
///         }
///         Ok(None)
///     })
/// });
/// # let _ = hook;
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookError {
    message: String,
}

impl HookError {
    /// A failure with this message (the text of the call's error result).
    pub fn new(message: impl Into<String>) -> Self {
        HookError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message, owned.
    pub fn into_message(self) -> String {
        self.message
    }
}

impl From<String> for HookError {
    fn from(message: String) -> Self {
        HookError::new(message)
    }
}

impl From<&str> for HookError {
    fn from(message: &str) -> Self {
        HookError::new(message)
    }
}

/// A hook run after validation and before execution. An `Err` becomes the
/// call's error result, and the tool is not run (see [`HookError`]).
pub type BeforeToolCallHook = Arc<
    dyn Fn(
            BeforeToolCallContext,
            CancellationToken,
        ) -> BoxFuture<'static, Result<Option<BeforeToolCallResult>, HookError>>
        + Send
        + Sync,
>;

/// A hook run after execution. An `Err` replaces the call's result with an
/// error result (see [`HookError`]).
pub type AfterToolCallHook = Arc<
    dyn Fn(
            AfterToolCallContext,
            CancellationToken,
        ) -> BoxFuture<'static, Result<Option<AfterToolCallResult>, HookError>>
        + Send
        + Sync,
>;
