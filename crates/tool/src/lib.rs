//! # agent-tool
//!
//! Everything a tool author needs, and nothing about sessions, permissions
//! or the command line. The built-in tools, the permission rules, the
//! sandbox and any custom tool all build on this crate.
//!
//! - The tool shape. The loop runs [`AgentTool`] (from `agent-core`,
//!   re-exported here); [`TypedTool`] is its typed convenience (the schema is
//!   derived from the parameter struct). A [`ToolDefinition`] is a plain
//!   struct holding an `Arc<dyn AgentTool>` plus what a product adds: prompt
//!   snippet, guidelines, renderers, the path arguments it touches
//!   ([`PathArgument`]) and behaviour hints ([`ToolHints`]).
//! - Three ways to make one: [`tool`] (a closure), [`ToolDefinition::typed`]
//!   (a [`TypedTool`] impl) and [`decorate`] (an existing tool with one thing
//!   changed).
//! - The call context: [`ToolCallContext`] carries the host's typed
//!   [`Extensions`]; a session puts a [`WorkingDir`], its [`ToolSettings`]
//!   and its [`FileMutationQueue`] there.
//! - Helpers: the one path resolver ([`path`]), path globs as permission rules
//!   write them ([`path_filter`]), truncation with Pi's semantics
//!   ([`truncate_head`], [`truncate_tail`], ...), schema helpers
//!   ([`params_schema`], [`string_enum`]), terminal rendering ([`StyledText`],
//!   [`Theme`]).
//! - The operations seam ([`ops`]): every file-system and process access of a
//!   tool goes through [`FileOps`] and [`ProcessOps`], so the same tool runs
//!   against a sandbox or another machine.
//!
//! A custom tool and its registration:
//!
//! ```
//! use agent_tool::prelude::*;
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(crate = "agent_tool::serde")]
//! #[schemars(crate = "agent_tool::schemars")]
//! struct Params {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! let greet = tool("greet")
//!     .description("Greets someone.")
//!     .prompt_snippet("Greet people by name")
//!     .execute(|p: Params, _cx| async move { Ok(AgentToolResult::text(format!("Hello, {}!", p.name))) });
//! assert_eq!(greet.parameters()["properties"]["name"]["type"], "string");
//! ```

mod closure_tool;
mod context;
mod decorate;
mod definition;
mod mutation_queue;
pub mod ops;
pub mod path;
pub mod path_filter;
pub mod regular_file;
mod render;
mod restore;
mod schema;
mod truncate;
mod typed;
pub mod wildcard;

pub use closure_tool::{ToolBuilder, tool};
pub use context::{
    DEFAULT_BASH_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS, ToolSettings, WorkingDir, timeout_seconds,
};
pub use decorate::{Decorated, decorate};
pub use definition::{
    PathAccess, PathArgument, RenderCallFn, RenderResultFn, ToolDefinition, ToolHints, ToolLookup,
};
pub use mutation_queue::{FileMutationQueue, KeyFn, queue_key};
pub use ops::{FileOps, Operations, ProcessOps};
pub use render::{
    RenderContext, RenderResultOptions, RenderShell, Span, StyledLine, StyledText, Theme,
    XTERM_PALETTE, default_render_call, default_render_result, sanitize_terminal_text,
};
pub use restore::{EarlierResult, RestoreFn};
pub use schema::{
    string_enum, string_enum_schema, string_enum_with_default, string_enum_with_description,
};
pub use truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, GREP_MAX_LINE_LENGTH, NO_LINE_LIMIT, TruncatedBy,
    TruncationOptions, TruncationResult, count_lines, format_size, head_at_char_boundary,
    split_lines, tail_at_char_boundary, truncate_head, truncate_line, truncate_tail,
};
pub use typed::{Typed, TypedTool, object_params_schema, params_schema, typed_tool};

/// Re-exported so a tool builds its result's text and image blocks, and
/// reads the [`Model`] a host puts into its extensions (does it see
/// images?), without a direct dependency on `agent-ai`.
pub use agent_ai::{ContentBlock, ImageContent, Model, TextContent};
pub use agent_core::{
    ABORTED_MESSAGE, AgentTool, AgentToolResult, CancellationToken, ConstrainedSampling,
    ExecutionMode, Extensions, StrictMode, ToolCallContext, ToolError, ToolMeta, ToolUpdateSink,
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
/// The derives work through the re-exports when told where the crates are
/// (`#[serde(crate = "agent_tool::serde")]`,
/// `#[schemars(crate = "agent_tool::schemars")]`), so a tool crate needs no
/// direct `serde` or `schemars` dependency.
pub mod prelude {
    pub use crate::{
        AgentTool, AgentToolResult, ConstrainedSampling, EarlierResult, Extensions, PathArgument,
        ToolCallContext, ToolDefinition, ToolError, ToolHints, ToolSettings, ToolUpdateSink,
        TypedTool, WorkingDir, decorate, tool, typed_tool,
    };
    pub use futures::future::BoxFuture;
    pub use schemars::JsonSchema;
    pub use serde::Deserialize;
    pub use serde_json::{Value, json};
}
