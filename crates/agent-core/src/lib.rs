//! # agent-core
//!
//! The agent loop and the tool contract it executes.
//!
//! - [`AgentTool`]: the one object-safe tool trait the loop runs, returning
//!   [`AgentToolResult`] or [`ToolError`]. Each call gets a [`ToolCallContext`]
//!   carrying the host's typed [`Extensions`]. (Tool authors write tools with
//!   the `agent-tool` crate: typed parameters, closures, prompt metadata.)
//! - [`run_agent_loop`] / [`agent_loop`]: stream a model response, run its tool
//!   calls (prepare, execute, finalise), feed results back, repeat; every step is
//!   an [`AgentEvent`] with Pi's wire names.
//! - [`Agent`]: a stateful wrapper with `prompt`, `continue_run`, `abort`,
//!   `steer`, `follow_up`, `subscribe` and `wait_for_idle`.
//! - Hooks around tool execution ([`BeforeToolCallHook`], [`AfterToolCallHook`]).
//! - [`NestedToolCalls`]: a running tool (a script) calls the run's other
//!   tools through the same pipeline, hooks included.
//!
//! This crate knows nothing about rendering, prompts, settings, files or any
//! concrete tool.
//!
//! ## Execution rules
//! - Preparation (lookup, `prepare_arguments`, validation, `before_tool_call`)
//!   runs one call at a time in the assistant message's order; any failure there
//!   is an immediate error result.
//! - A batch runs sequentially if the config says so or any of its tools declares
//!   [`ExecutionMode::Sequential`]; otherwise all prepared calls run concurrently
//!   once all are prepared, at most [`AgentLoopConfig::max_parallel_tools`] at a time.
//! - `tool_execution_start` in source order, `tool_execution_end` in completion
//!   order, toolResult messages and `turn_end.toolResults` in source order.
//! - A failure becomes `{content: [text], details: {}, isError: true}`.
//! - The loop stops after a batch only if every result asks to `terminate`.

mod agent;
mod agent_loop;
mod config;
mod event;
mod extensions;
mod fn_tool;
mod hook_snapshot;
mod hooks;
mod nested;
mod queue_mode;
mod tool;
mod tool_execution;
pub use tool_execution::{execute_tool_call, execute_tool_call_with};

pub use agent::{
    Agent, AgentError, AgentOptions, AgentState, IntoPrompt, RunOutcome, SubscriptionId, WeakAgent,
};
pub use agent_loop::{agent_loop, run_agent_loop, run_agent_loop_continue};
pub use queue_mode::QueueMode;
mod compaction;
pub use compaction::{
    CompactedContext, CompactionError, CompactionReason, ContextCompactor,
    is_context_overflow_message,
};
pub use config::{
    AgentContext, AgentLoopConfig, ContextRefresh, ContextTransform, MessageSource,
    UnknownToolMessage, default_max_parallel_tools,
};
pub use event::{AgentEvent, EventSink};
pub use extensions::Extensions;
pub use fn_tool::{FnTool, IntoAgentTool};
pub use hooks::{
    AfterToolCallContext, AfterToolCallHook, AfterToolCallResult, BeforeToolCallContext,
    BeforeToolCallHook, BeforeToolCallResult, HookError,
};
pub use nested::{NestedOutcome, NestedToolCalls};
pub use tool::{
    ABORTED_MESSAGE, AgentTool, AgentToolResult, ExecutionMode, ToolCallContext, ToolError,
    ToolMeta, ToolUpdateSink,
};

/// Re-exported so a tool can ask for constrained sampling without naming `agent-ai`.
pub use agent_ai::{ConstrainedSampling, StrictMode};

/// Re-exported so that an `impl AgentTool` names its future type without
/// a direct dependency on `futures`.
pub use futures::future::BoxFuture;

/// Re-exported so tools and hooks can name the cancellation type without a direct dependency.
pub use tokio_util::sync::CancellationToken;
