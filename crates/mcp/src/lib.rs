//! # agent-mcp
//!
//! The Model Context Protocol for coding agents, on the official Rust SDK
//! (`rmcp`). Kept in its own crate so a program that does not speak MCP does
//! not compile it.
//!
//! - [`McpToolServer`]: any list of `ToolDefinition`s (a registry's, the seven
//!   built-ins) served to any MCP client over any rmcp transport (stdio here).

mod server;

/// The SDK, for transports and service types.
pub use rmcp;
pub use server::{McpToolServer, mcp_tool};
