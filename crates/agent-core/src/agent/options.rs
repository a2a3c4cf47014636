//! What an [`Agent`](crate::Agent) starts with.

use std::sync::Arc;

use agent_ai::{Message, Model, ModelClient};

use crate::config::{ContextTransform, UnknownToolMessage};
use crate::hooks::{AfterToolCallHook, BeforeToolCallHook};
use crate::queue_mode::QueueMode;
use crate::tool::{AgentTool, ExecutionMode};

/// Everything an [`Agent`](crate::Agent) starts with.
pub struct AgentOptions {
    /// System prompt.
    pub system_prompt: String,
    /// Model to call.
    pub model: Model,
    /// Client that streams responses.
    pub client: Arc<dyn ModelClient>,
    /// Active tools.
    pub tools: Vec<Arc<dyn AgentTool>>,
    /// Initial transcript.
    pub messages: Vec<Message>,
    /// Batch scheduling.
    pub tool_execution: ExecutionMode,
    /// Hook run before each tool call.
    pub before_tool_call: Option<BeforeToolCallHook>,
    /// Hook run after each tool call.
    pub after_tool_call: Option<AfterToolCallHook>,
    /// Delivery of steering messages.
    pub steering_mode: QueueMode,
    /// Delivery of follow-up messages.
    pub follow_up_mode: QueueMode,
    /// Rewrites each request's transcript before it is sent.
    pub transform_context: Option<ContextTransform>,
    /// The most tool calls that execute at once (see
    /// [`AgentLoopConfig::max_parallel_tools`](crate::AgentLoopConfig::max_parallel_tools)).
    pub max_parallel_tools: usize,
    /// How hard a reasoning model thinks (see
    /// [`AgentLoopConfig::reasoning`](crate::AgentLoopConfig::reasoning)).
    pub reasoning: Option<agent_ai::ReasoningEffort>,
    /// Thinking token budgets (see [`AgentLoopConfig::thinking_budgets`](crate::AgentLoopConfig::thinking_budgets)).
    pub thinking_budgets: agent_ai::ThinkingBudgets,
    /// The conversation's id for prompt caching (see
    /// [`AgentLoopConfig::session_id`](crate::AgentLoopConfig::session_id)).
    pub session_id: Option<String>,
    /// Prompt-cache lifetime (see [`AgentLoopConfig::cache_retention`](crate::AgentLoopConfig::cache_retention)).
    pub cache_retention: agent_ai::CacheRetention,
    /// Explains calls to tools that are not active (see
    /// [`AgentLoopConfig::unknown_tool_message`](crate::AgentLoopConfig::unknown_tool_message)).
    pub unknown_tool_message: Option<UnknownToolMessage>,
    /// Keeps the transcript inside the context window (see
    /// [`AgentLoopConfig::compactor`](crate::AgentLoopConfig::compactor)).
    pub compactor: Option<Arc<dyn crate::ContextCompactor>>,
    /// Typed values every tool call receives (see
    /// [`AgentLoopConfig::tool_extensions`](crate::AgentLoopConfig::tool_extensions)).
    pub tool_extensions: crate::Extensions,
}

impl AgentOptions {
    /// Options with no tools, no hooks and an empty transcript.
    pub fn new(model: Model, client: Arc<dyn ModelClient>) -> Self {
        AgentOptions {
            system_prompt: String::new(),
            model,
            client,
            tools: Vec::new(),
            messages: Vec::new(),
            tool_execution: ExecutionMode::Parallel,
            before_tool_call: None,
            after_tool_call: None,
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            transform_context: None,
            max_parallel_tools: crate::config::default_max_parallel_tools(),
            reasoning: None,
            thinking_budgets: agent_ai::ThinkingBudgets::default(),
            session_id: None,
            cache_retention: agent_ai::CacheRetention::default(),
            unknown_tool_message: None,
            compactor: None,
            tool_extensions: crate::Extensions::new(),
        }
    }

    /// The same options with this system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// The same options with these active tools: `Arc<dyn AgentTool>`s,
    /// `Arc`s of concrete tools or [`FnTool`](crate::FnTool)s, no casts
    /// needed.
    pub fn with_tools<T: crate::IntoAgentTool>(
        mut self,
        tools: impl IntoIterator<Item = T>,
    ) -> Self {
        self.tools = tools
            .into_iter()
            .map(crate::IntoAgentTool::into_agent_tool)
            .collect();
        self
    }

    /// The same options starting from this transcript.
    pub fn with_messages(mut self, messages: Vec<Message>) -> Self {
        self.messages = messages;
        self
    }

    /// The same options with this hook before each tool call.
    pub fn with_before_tool_call(mut self, hook: BeforeToolCallHook) -> Self {
        self.before_tool_call = Some(hook);
        self
    }

    /// The same options with this hook after each tool call.
    pub fn with_after_tool_call(mut self, hook: AfterToolCallHook) -> Self {
        self.after_tool_call = Some(hook);
        self
    }

    /// The same options running every batch one call at a time.
    pub fn sequential(mut self) -> Self {
        self.tool_execution = ExecutionMode::Sequential;
        self
    }

    /// The same options handing every tool call these extensions.
    pub fn with_tool_extensions(mut self, extensions: crate::Extensions) -> Self {
        self.tool_extensions = extensions;
        self
    }
}
