//! What a run works on and how it is configured, shared by the loop and the
//! tool execution (which must not depend on each other).

use std::sync::Arc;

use agent_ai::{Message, Model, ModelClient};

use crate::hooks::{AfterToolCallHook, BeforeToolCallHook};
use crate::tool::{AgentTool, ExecutionMode};

/// Supplies queued messages (steering or follow-up) when the loop asks for them.
pub type MessageSource = Arc<dyn Fn() -> Vec<Message> + Send + Sync>;

/// Rewrites the transcript sent to the model (the stored transcript is untouched),
/// e.g. to drop images or prune old tool output.
pub type ContextTransform = Arc<dyn Fn(&[Message]) -> Vec<Message> + Send + Sync>;

/// The state a run works on: system prompt, transcript and active tools.
#[derive(Clone, Default)]
pub struct AgentContext {
    /// System prompt sent with every request.
    pub system_prompt: String,
    /// The transcript; the run appends to it.
    pub messages: Vec<Message>,
    /// Tools the model is offered and the loop may execute. A call naming any
    /// other tool gets a `Tool <name> not found` error result.
    pub tools: Vec<Arc<dyn AgentTool>>,
}

impl AgentContext {
    /// The names of the active tools, in the order they are offered.
    ///
    /// ```
    /// let context = agent_core::AgentContext::default();
    /// assert!(context.tool_names().is_empty());
    /// ```
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// The active tool called `name`, if there is one.
    pub fn tool(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        self.tools.iter().find(|t| t.name() == name)
    }
}

impl std::fmt::Debug for AgentContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentContext")
            .field("system_prompt", &self.system_prompt)
            .field("messages", &self.messages.len())
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.name().to_string())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// How the loop talks to the model and runs tools.
#[derive(Clone)]
pub struct AgentLoopConfig {
    /// The model to call.
    pub model: Model,
    /// The client that streams responses.
    pub client: Arc<dyn ModelClient>,
    /// Batch scheduling: `Parallel` (default) unless a tool in the batch asks otherwise.
    pub tool_execution: ExecutionMode,
    /// Runs after validation, before execution; may block or rewrite arguments.
    pub before_tool_call: Option<BeforeToolCallHook>,
    /// Runs after execution; may replace parts of the result.
    pub after_tool_call: Option<AfterToolCallHook>,
    /// Polled after each turn; messages it returns are injected before the next request.
    pub steering_messages: Option<MessageSource>,
    /// Polled when the loop would stop; messages it returns start a new turn.
    pub follow_up_messages: Option<MessageSource>,
    /// Maximum output tokens per request, if not the model default.
    pub max_tokens: Option<u64>,
    /// Sampling temperature, if any.
    pub temperature: Option<f64>,
    /// How hard a reasoning model thinks (`None`: thinking off); see
    /// [`agent_ai::StreamOptions::reasoning`].
    pub reasoning: Option<agent_ai::ReasoningEffort>,
    /// Thinking token budgets for APIs that take one.
    pub thinking_budgets: agent_ai::ThinkingBudgets,
    /// The conversation's stable id, sent with every request so that the
    /// provider can reuse its prompt cache (see
    /// [`agent_ai::StreamOptions::session_id`]).
    pub session_id: Option<String>,
    /// How long the provider keeps the prompt cached (see
    /// [`agent_ai::CacheRetention`]; on by default).
    pub cache_retention: agent_ai::CacheRetention,
    /// Rewrites each request's transcript before it is sent.
    pub transform_context: Option<ContextTransform>,
    /// The most tool calls of a parallel batch that execute at once; the
    /// others wait for a free slot (so 600 parallel bash calls do not run out
    /// of file descriptors). Default: [`default_max_parallel_tools`].
    pub max_parallel_tools: usize,
    /// Explains a call to a tool that is not among the active tools (for
    /// example "registered but not active"); `None` from it, or no function,
    /// gives Pi's `Tool <name> not found`.
    pub unknown_tool_message: Option<UnknownToolMessage>,
    /// Called before each model request; may swap the tools or the system
    /// prompt between turns (the stateful `Agent` applies `set_tools` and
    /// `set_system_prompt` made during a run this way).
    pub refresh_context: Option<ContextRefresh>,
    /// Shrinks the transcript near the window and after an overflow error.
    pub compactor: Option<Arc<dyn crate::ContextCompactor>>,
    /// Typed values every tool call receives in its
    /// [`ToolCallContext::extensions`](crate::ToolCallContext::extensions).
    pub tool_extensions: crate::Extensions,
}

/// Updates the loop's context between turns; see
/// [`AgentLoopConfig::refresh_context`].
pub type ContextRefresh = Arc<dyn Fn(&mut AgentContext) + Send + Sync>;

/// Explains why a tool name is not among the active tools, if the caller
/// knows more than "not found".
pub type UnknownToolMessage = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The default bound on concurrently executing tool calls, derived from the
/// open-file limit: one slot per 8 descriptors above a reserve of 64, at
/// least 1 and at most 256 (e.g. 120 under `ulimit -n 1024`).
pub fn default_max_parallel_tools() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    match limit {
        Some(n) => (n.saturating_sub(64) / 8).clamp(1, 256) as usize,
        None => 256,
    }
}

impl AgentLoopConfig {
    /// A parallel-execution config with no hooks and no queues.
    pub fn new(model: Model, client: Arc<dyn ModelClient>) -> Self {
        AgentLoopConfig {
            model,
            client,
            tool_execution: ExecutionMode::Parallel,
            before_tool_call: None,
            after_tool_call: None,
            steering_messages: None,
            follow_up_messages: None,
            max_tokens: None,
            temperature: None,
            reasoning: None,
            thinking_budgets: agent_ai::ThinkingBudgets::default(),
            session_id: None,
            cache_retention: agent_ai::CacheRetention::default(),
            transform_context: None,
            max_parallel_tools: default_max_parallel_tools(),
            unknown_tool_message: None,
            refresh_context: None,
            compactor: None,
            tool_extensions: crate::Extensions::new(),
        }
    }
}

impl std::fmt::Debug for AgentLoopConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentLoopConfig")
            .field("model", &self.model.id)
            .field("tool_execution", &self.tool_execution)
            .finish_non_exhaustive()
    }
}
