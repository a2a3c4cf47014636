//! # coding-agent
//!
//! The product layer on top of `agent-core` (being built): `ToolDefinition`
//! (prompt snippet, guidelines, terminal renderers), the conversions to and from
//! `AgentTool`, the tool registry with active-set selection and `allowedTools`,
//! system-prompt assembly, layered settings and the extension API.
//!
//! Until those land, this crate re-exports the loop and the helpers a custom tool
//! needs, so depending on it alone is enough.

pub use agent_ai;
pub use agent_core;
