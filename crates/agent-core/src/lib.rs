//! # agent-core
//!
//! The agent loop and the tool contract it executes.
//!
//! - [`AgentTool`] (object safe), [`TypedTool`] (schema derived from a
//!   `Params` struct by `schemars`) and [`fn_tool`] (a closure), returning
//!   [`AgentToolResult`] or [`ToolError`].
//! - [`run_agent_loop`] / [`agent_loop`]: stream a model response, run its tool
//!   calls (prepare, execute, finalise), feed results back, repeat; every step is
//!   an [`AgentEvent`] with Pi's wire names.
//! - [`Agent`]: a stateful wrapper with `prompt`, `continue_run`, `abort`,
//!   `steer`, `follow_up`, `subscribe` and `wait_for_idle`.
//! - Hooks around tool execution ([`BeforeToolCallHook`], [`AfterToolCallHook`]).
//! - [`FileMutationQueue`]: per-file FIFO for tools that change files.
//! - Truncation helpers with Pi's semantics ([`truncate_head`], [`truncate_tail`],
//!   [`truncate_line`], [`format_size`]).
//!
//! This crate knows nothing about rendering, prompts, settings or any concrete tool.
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
mod fn_tool;
mod hooks;
mod mutation_queue;
mod tool;
mod tool_execution;
pub use tool_execution::{execute_tool_call, execute_tool_call_with};
mod truncate;
mod typed;

pub use agent::{
    Agent, AgentError, AgentOptions, AgentState, IntoPrompt, QueueMode, RunOutcome, SubscriptionId,
};
pub use agent_loop::{agent_loop, run_agent_loop, run_agent_loop_continue};
mod compaction;
pub use compaction::{
    CompactedContext, CompactionReason, ContextCompactor, is_context_overflow_message,
};
pub use config::{
    AgentContext, AgentLoopConfig, ContextRefresh, ContextTransform, MessageSource,
    UnknownToolMessage, default_max_parallel_tools,
};
pub use event::{AgentEvent, EventSink};
pub use fn_tool::{FnToolBuilder, fn_tool};
pub use hooks::{
    AfterToolCallContext, AfterToolCallHook, AfterToolCallResult, BeforeToolCallContext,
    BeforeToolCallHook, BeforeToolCallResult,
};
pub use mutation_queue::{FileMutationQueue, queue_key};
pub use tool::{
    ABORTED_MESSAGE, AgentTool, AgentToolResult, ExecutionMode, ToolCallContext, ToolError,
    ToolMeta, ToolUpdateSink,
};
pub use truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, GREP_MAX_LINE_LENGTH, NO_LINE_LIMIT, TruncatedBy,
    TruncationOptions, TruncationResult, count_lines, format_size, head_at_char_boundary,
    split_lines, tail_at_char_boundary, truncate_head, truncate_line, truncate_tail,
};
pub use typed::{Typed, TypedTool, object_params_schema, params_schema, typed_tool};

/// Re-exported so tools and hooks can name the cancellation type without a direct dependency.
pub use tokio_util::sync::CancellationToken;
