//! # agent-mcp
//!
//! The Model Context Protocol for coding agents, on the official Rust SDK
//! (`rmcp`). Kept in its own crate so a program that does not speak MCP does
//! not compile it.
//!
//! - [`McpToolServer`]: any list of `ToolDefinition`s (a registry's, the seven
//!   built-ins) served to any MCP client over any rmcp transport: stdio, or
//!   Streamable HTTP through [`McpHttpServer`] (Host/Origin checks, bearer
//!   token). With an [`McpLogSink`] it offers MCP logging fed by `tracing`.
//! - [`connect_mcp_servers`]: MCP servers (the `mcpServers` settings shape,
//!   stdio or HTTP) started in parallel, their tools as `ToolDefinition`s
//!   named `mcp__<server>__<tool>`, kept current on `tools/list_changed`.
//!
//! - [`load_extensions`]: extensions, executables speaking MCP on stdio, as
//!   `coding_agent::Extension`s whose tools keep their own names.
//! - `_meta` keys ([`META_PROMPT_SNIPPET`], [`META_PATH_ARGUMENTS`], ...)
//!   carry a tool's prompt snippet, guidelines and the arguments permission
//!   rules judge, both ways ([`tool_meta()`]).
//!
//! - [`oauth`]: OAuth sign-in for hosted HTTP servers (discovery,
//!   registration, PKCE, refresh on rmcp's `auth`), tokens kept `0600` and
//!   bound to their server's URL.
//!
//! HTTP connections start with `server/discover` and the 2026-07-28
//! per-request metadata, and fall back to `initialize` for older servers;
//! stdio servers get `initialize`.
//!
//! The `http` feature (on by default) brings the HTTP transports and sign-in.

// The extensions guide's Rust blocks are compiled as doctests of this crate.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/extensions.md")]
struct ExtensionsGuide;

mod client;
mod extension;
#[cfg(feature = "http")]
mod http_server;
mod logging;
pub mod oauth;
mod server;
mod tool_meta;

pub use client::{
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, McpConfigError, McpLauncher, McpServerConfig,
    McpToolUpdate, McpToolUpdates, McpTools, McpTransport, connect_mcp_servers, mcp_tool_name,
    parse_mcp_servers,
};
pub use coding_agent::discover_extensions;
pub use extension::{
    ExtensionOptions, ExtensionSource, ExtensionSpec, LoadedExtensions, McpExtension,
    load_extensions,
};
#[cfg(feature = "http")]
pub use http_server::{MCP_HTTP_PATH, McpHttpError, McpHttpOptions, McpHttpServer};
pub use logging::{McpLogLayer, McpLogSink};
/// The SDK, for transports and service types.
pub use rmcp;
pub use server::{McpToolServer, mcp_tool};
pub use tool_meta::{
    META_COMMAND_ARGUMENT, META_CONSTRAINED_SAMPLING, META_EXECUTION_MODE, META_PATH_ARGUMENTS,
    META_PROMPT_GUIDELINES, META_PROMPT_SNIPPET, META_RENDER_SHELL, tool_meta,
};
