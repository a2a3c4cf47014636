//! # agent-mcp
//!
//! The Model Context Protocol for coding agents, on the official Rust SDK
//! (`rmcp`). Kept in its own crate so a program that does not speak MCP does
//! not compile it.
//!
//! - [`McpToolServer`]: any list of `ToolDefinition`s (a registry's, the seven
//!   built-ins) served to any MCP client over any rmcp transport (stdio here).
//! - [`connect_mcp_servers`]: MCP servers (the `mcpServers` settings shape,
//!   stdio) started in parallel, their tools as `ToolDefinition`s named
//!   `mcp__<server>__<tool>`.

mod client;
mod server;

pub use client::{
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, McpConfigError, McpServerConfig, McpTools,
    connect_mcp_servers, mcp_tool_name, parse_mcp_servers,
};
/// The SDK, for transports and service types.
pub use rmcp;
pub use server::{McpToolServer, mcp_tool};
