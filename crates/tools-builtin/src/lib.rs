//! # tools-builtin
//!
//! The seven built-in tools (read, bash, edit, write, grep, find, ls) as
//! `ToolDefinition`s over pluggable file-system and process operations (being
//! built; see ARCHITECTURE.md).

pub use coding_agent;
