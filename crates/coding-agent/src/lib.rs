//! # coding-agent
//!
//! The product layer: where a tool becomes a feature. A [`ToolDefinition`] adds
//! to the loop's lean `AgentTool` a prompt snippet, prompt guidelines and
//! terminal renderers; the [`ToolRegistry`] decides which tools exist, are
//! allowed and are active; [`build_system_prompt`] tells the model about them;
//! [`Settings`] are layered global/project files; [`Extension`]s register tools
//! and intercept calls; [`AgentSessionBuilder`] assembles all of it around an
//! `agent_core::Agent`.
//!
//! The truncation helpers and the file mutation queue are re-exported, so a
//! custom tool needs only this crate; [`prelude`] brings in what a tool
//! author uses.
//!
//! Three ways to make a tool, from least to most code:
//!
//! - [`tool`]: name, description and an async closure;
//! - [`decorate`]: an existing tool with one thing changed (a check before
//!   it runs, another `execute`, description or schema), everything else kept;
//! - [`TypedToolDefinition`] (or [`ToolDefinition`] for untyped arguments):
//!   a trait impl, for tools with renderers or state.

mod closure_tool;
pub mod compaction;
mod decorate;
mod definition;
mod extension;
pub mod path;
pub mod permissions;
mod project_file;
mod registry;
mod render;
pub mod rpc;
pub mod sandbox;
mod schema;
mod session;
pub mod sessions;
mod settings;
mod system_prompt;
pub mod trust;

pub use closure_tool::{ToolBuilder, tool};
pub use decorate::{Decorated, decorate};
pub use definition::{
    CallContext, ToolContext, ToolContextFactory, ToolDefinition, TypedDefinition,
    TypedToolDefinition, tool_definition_from_agent_tool, typed_definition, wrap_tool_definition,
};
pub use extension::{
    Extension, ExtensionApi, ToolCallDecision, ToolCallEvent, ToolCallHandler, ToolResultEvent,
    ToolResultHandler, ToolResultPatch,
};
pub use project_file::MAX_PROJECT_FILE_BYTES;
pub use registry::{DEFAULT_ACTIVE_TOOLS, ToolRegistry, ToolSelection, ToolSource};
pub use render::{
    RenderContext, RenderResultOptions, RenderShell, Span, StyledLine, StyledText, Theme,
    default_render_call, default_render_result, sanitize_terminal_text,
};
pub use schema::{string_enum, string_enum_schema, string_enum_with_description};
pub use session::{AgentSession, AgentSessionBuilder, IMAGES_BLOCKED_TEXT};
pub use settings::{
    DEFAULT_BASH_TIMEOUT_SECONDS, DEFAULT_STREAM_IDLE_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS,
    Settings, SettingsError, agent_dir,
};
pub use system_prompt::{
    BASH_EXPLORATION_GUIDELINE, CLOSING_GUIDELINES, ContextFile, SystemPromptOptions,
    build_guidelines, build_system_prompt, load_context_files, today,
};

pub use agent_ai;
pub use agent_core;
pub use agent_core::{
    AgentError, AgentToolResult, CancellationToken, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES,
    ExecutionMode, FileMutationQueue, GREP_MAX_LINE_LENGTH, RunOutcome, ToolError, ToolUpdateSink,
    TruncatedBy, TruncationOptions, TruncationResult, format_size, truncate_head, truncate_line,
    truncate_tail,
};
/// Re-exported so renderers can build styles without a direct dependency.
pub use anstyle;
/// Re-exported for `#[derive(JsonSchema)]` on tool parameters.
pub use schemars;
/// Re-exported for `#[derive(Deserialize)]` on tool parameters.
pub use serde;
/// Re-exported for JSON values in arguments and details.
pub use serde_json;

/// What a tool author needs, in one import.
///
/// The derives work through these re-exports when told where the crates
/// are, so a tool crate needs no direct `serde` or `schemars` dependency:
///
/// ```
/// use coding_agent::prelude::*;
///
/// #[derive(Deserialize, JsonSchema)]
/// #[serde(crate = "coding_agent::serde")]
/// #[schemars(crate = "coding_agent::schemars")]
/// struct Params {
///     /// Who to greet.
///     name: String,
/// }
///
/// let greet = tool("greet")
///     .description("Greets someone.")
///     .execute(|p: Params, _cx| async move { Ok(AgentToolResult::text(format!("Hello, {}!", p.name))) });
/// assert_eq!(greet.parameters()["properties"]["name"]["type"], "string");
/// ```
pub mod prelude {
    pub use crate::{
        AgentSession, AgentSessionBuilder, AgentToolResult, CallContext, Settings, ToolContext,
        ToolDefinition, ToolError, ToolRegistry, ToolUpdateSink, TypedToolDefinition, decorate,
        tool, typed_definition,
    };
    pub use futures::future::BoxFuture;
    pub use schemars::JsonSchema;
    pub use serde::Deserialize;
    pub use serde_json::{Value, json};
}
