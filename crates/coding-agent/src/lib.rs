//! # coding-agent
//!
//! The product layer: the agent session around `agent_core::Agent`. The
//! [`ToolRegistry`] decides which tools exist, are allowed and are active;
//! [`build_system_prompt`] tells the model about them; [`Settings`] are
//! layered global/project files, whose code-running values wait for the
//! user to trust the project ([`resolve_project_trust`], over the
//! `agent-trust` crate's records); `agent_permissions`
//! rules gate calls; [`Extension`]s register tools and intercept calls;
//! sessions are the JSONL files a run is saved to and resumed from
//! (the `agent-sessions` crate; [`session_dir`] is where they are kept);
//! [`compaction`] keeps the transcript inside the window.
//! [`AgentSessionBuilder`] assembles all of it; front ends (the terminal UI,
//! Pi's RPC mode in the `agent-rpc` crate) drive the session it builds.
//!
//! Tools are written with the `agent-tool` crate (re-exported as
//! [`agent_tool`], its items at this crate's root for convenience): this
//! layer names no concrete tool. Rules and compaction learn which argument
//! of a tool is a path from the tool's own declaration
//! ([`agent_tool::PathArgument`]).

mod agent_dir;
mod agent_session;
pub mod compaction;
mod extension;
mod model_switch;
mod project_trust;
mod registry;
mod restore;
mod settings;
mod skills;
mod system_prompt;
mod user_bash;

pub use agent_dir::{agent_dir, session_dir};
pub use agent_session::{
    AgentSession, AgentSessionBuilder, IMAGES_BLOCKED_TEXT, SessionBuildError, tool_extensions,
};
pub use agent_skills;
pub use extension::{
    Extension, ExtensionApi, HandlerError, ToolCallDecision, ToolCallEvent, ToolCallHandler,
    ToolResultEvent, ToolResultHandler, ToolResultPatch, discover_extensions,
    non_executable_extension_files,
};
pub use model_switch::{ModelResolver, switch_model};
pub use project_trust::{TrustOutcome, resolve_project_trust};
pub use registry::{ToolRegistry, ToolSelection, ToolSource};
pub use settings::{
    CodemodeValues, CompactionValues, DEFAULT_BASH_TIMEOUT_SECONDS,
    DEFAULT_STREAM_IDLE_TIMEOUT_SECONDS, ImageSettings, KnownSettings, MAX_TIMEOUT_SECONDS,
    RUNS_CODE_KEYS, Seconds, Settings, SettingsError, TuiModeSetting, WEAKENS_USER_KEYS,
};
pub use skills::BUILTIN_COMMANDS;
pub use system_prompt::{
    BASH_EXPLORATION_GUIDELINE, CLOSING_GUIDELINES, ContextFile, SystemPromptOptions,
    build_guidelines, build_system_prompt, load_context_files, today,
};
pub use user_bash::UserBash;

pub use agent_ai;
pub use agent_core;
pub use agent_core::{AgentError, RunOutcome};
pub use agent_tool;
/// Path helpers for custom tools (`resolve_to_cwd`, `expand_path`, ...),
/// re-exported so a tool needs no direct dependency on agent-tool.
pub use agent_tool::path;
pub use agent_tool::{
    AgentTool, AgentToolResult, CancellationToken, ConstrainedSampling, DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES, Decorated, EarlierResult, ExecutionMode, Extensions, FileMutationQueue,
    GREP_MAX_LINE_LENGTH, PathAccess, PathArgument, RenderContext, RenderResultOptions,
    RenderShell, Span, StrictMode, StyledLine, StyledText, Theme, ToolBuilder, ToolCallContext,
    ToolDefinition, ToolError, ToolHints, ToolUpdateSink, TruncatedBy, TruncationOptions,
    TruncationResult, TypedTool, WorkingDir, XTERM_PALETTE, decorate, default_render_call,
    default_render_result, format_size, sanitize_terminal_text, string_enum, string_enum_schema,
    string_enum_with_default, string_enum_with_description, tool, truncate_head, truncate_line,
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

/// `text` as one shell word, for a command line the user may paste (a
/// path, a server's name); a NUL, which no path or argument holds, is
/// dropped. Quoted by `shlex`.
///
/// ```
/// assert_eq!(coding_agent::shell_quote("plain-name"), "plain-name");
/// assert_eq!(coding_agent::shell_quote("it's here"), r#""it's here""#);
/// ```
pub fn shell_quote(text: &str) -> String {
    let clean = text.replace('\0', "");
    shlex::try_quote(&clean)
        .map(|q| q.into_owned())
        .unwrap_or(clean)
}

/// What a program assembling an agent uses, in one import: the session, the
/// registry, settings, and everything a tool author needs.
///
/// The derives work through the re-exports when told where the crates
/// are, so a program needs no direct `serde` or `schemars` dependency:
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
    pub use crate::{AgentSession, AgentSessionBuilder, Settings, ToolRegistry};
    pub use agent_tool::prelude::*;
}
