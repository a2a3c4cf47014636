//! # tools-builtin
//!
//! The seven built-in tools: `read`, `bash`, `edit`, `write`, `grep`, `find`
//! and `ls`. Each lives in its own module with its schema, description,
//! prompt snippet, guidelines and renderers. The logic runs over the
//! pluggable operations of `agent-tool` ([`FileOps`], [`ProcessOps`]), so the
//! same tools work against a sandbox or another backend. This crate depends
//! on `agent-tool` only: no sessions, permissions or command line.
//!
//! Each tool is a [`TypedTool`](agent_tool::TypedTool): `typed_tool(ReadTool::new(..))` is
//! the lean tool the loop runs (Pi's `createReadTool`), and
//! `ReadTool::new(..).definition()` adds its prompt snippet, guidelines,
//! renderers and path declaration. [`ToolSet`] builds them all over shared
//! operations.
//!
//! ```
//! let tools = tools_builtin::all_tools(std::env::temp_dir());
//! let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
//! assert_eq!(names, ["read", "bash", "edit", "write", "grep", "find", "ls"]);
//! ```
//!
//! Where we differ from Pi on purpose: grep and find run in-process (no rg or
//! fd binary) and sort their output; read refuses non-image binary files and
//! streams large files; write reports real UTF-8 byte counts; edit replaces only
//! the matched spans; write and edit replace files atomically; bash has a
//! default timeout and kills the whole process group.

pub mod bash;
mod bash_output;
mod blocking;
pub mod edit;
pub mod edit_core;
pub mod find;
pub mod grep;
pub mod image;
mod listing;
pub mod ls;
pub mod path_rules;
pub mod read;
mod smallest;
mod view;
pub mod write;

use std::path::PathBuf;

use agent_tool::FileMutationQueue;
use agent_tool::ToolDefinition;

pub use agent_tool::ops::{FileOps, Operations, ProcessOps};
pub use bash::{BashOptions, BashTool, SpawnContext, SpawnHook};
pub use edit::EditTool;
pub use find::FindTool;
pub use grep::GrepTool;
pub use ls::LsTool;
pub use read::ReadTool;
pub use write::WriteTool;

/// The built-ins active when no selection names the active tools (the
/// others are registered but wait to be asked for).
pub const DEFAULT_ACTIVE_TOOLS: [&str; 4] = ["read", "bash", "edit", "write"];

/// Names of the built-in tools, in registry order.
pub const BUILTIN_TOOL_NAMES: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// A name that is not a built-in tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Unknown tool name: {0}")]
pub struct UnknownTool(pub String);

/// Builds built-in tools that share operations and one file mutation queue.
///
/// ```
/// use tools_builtin::{BashOptions, ToolSet};
/// let tools = ToolSet::new("/tmp")
///     .bash_options(BashOptions { command_prefix: Some("set -e".into()), ..Default::default() })
///     .all();
/// assert_eq!(tools.len(), 7);
/// ```
#[derive(Clone, Debug)]
pub struct ToolSet {
    cwd: PathBuf,
    operations: Operations,
    queue: FileMutationQueue,
    bash: BashOptions,
    read_rules: agent_tool::path_filter::PathRuleFilter,
}

impl ToolSet {
    /// This machine's operations (`agent_local_ops::operations`), a fresh
    /// queue, default bash options.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        ToolSet {
            cwd: cwd.into(),
            operations: agent_local_ops::operations(),
            queue: FileMutationQueue::new(),
            bash: BashOptions::default(),
            read_rules: Default::default(),
        }
    }

    /// Uses other file-system and process operations.
    pub fn operations(mut self, operations: Operations) -> Self {
        self.operations = operations;
        self
    }

    /// Shares an existing mutation queue (e.g. with other tools of the
    /// environment). A call whose context carries a queue (a session puts
    /// its own there) uses that one instead.
    pub fn queue(mut self, queue: FileMutationQueue) -> Self {
        self.queue = queue;
        self
    }

    /// Options of the bash tool.
    pub fn bash_options(mut self, options: BashOptions) -> Self {
        self.bash = options;
        self
    }

    /// Applies the permission rules' Read paths to every file the tools
    /// touch: grep, find and ls leave out what a Read deny or ask rule
    /// covers, and no tool opens or writes what a Read deny rule covers
    /// (see [`path_rules`]). Use with
    /// `agent_permissions::PermissionRules::read_filter`
    /// of the rules the session's permission gate holds.
    pub fn read_rules(mut self, filter: agent_tool::path_filter::PathRuleFilter) -> Self {
        self.read_rules = filter;
        self
    }

    /// One tool by name.
    pub fn tool(&self, name: &str) -> Result<ToolDefinition, UnknownTool> {
        let files =
            path_rules::RuleFilteredFileOps::wrap(self.operations.files.clone(), &self.read_rules);
        let cwd = self.cwd.clone();
        Ok(match name {
            "read" => ReadTool::new(cwd, files).definition(),
            "bash" => BashTool::new(cwd, self.operations.processes.clone(), self.bash.clone())
                .definition(),
            "edit" => EditTool::new(cwd, files, self.queue.clone()).definition(),
            "write" => WriteTool::new(cwd, files, self.queue.clone()).definition(),
            "grep" => GrepTool::new(cwd, files).definition(),
            "find" => FindTool::new(cwd, files).definition(),
            "ls" => LsTool::new(cwd, files).definition(),
            other => return Err(UnknownTool(other.to_string())),
        })
    }

    fn named(&self, names: &[&str]) -> Vec<ToolDefinition> {
        names.iter().filter_map(|n| self.tool(n).ok()).collect()
    }

    /// All seven tools.
    pub fn all(&self) -> Vec<ToolDefinition> {
        self.named(&BUILTIN_TOOL_NAMES)
    }

    /// read, bash, edit, write.
    pub fn coding(&self) -> Vec<ToolDefinition> {
        self.named(&["read", "bash", "edit", "write"])
    }

    /// read, grep, find, ls.
    pub fn read_only(&self) -> Vec<ToolDefinition> {
        self.named(&["read", "grep", "find", "ls"])
    }
}

/// All seven built-in tools for `cwd`.
pub fn all_tools(cwd: impl Into<PathBuf>) -> Vec<ToolDefinition> {
    ToolSet::new(cwd).all()
}

/// read, bash, edit, write for `cwd`.
pub fn coding_tools(cwd: impl Into<PathBuf>) -> Vec<ToolDefinition> {
    ToolSet::new(cwd).coding()
}

/// read, grep, find, ls for `cwd`.
pub fn read_only_tools(cwd: impl Into<PathBuf>) -> Vec<ToolDefinition> {
    ToolSet::new(cwd).read_only()
}

/// One built-in tool by name.
pub fn tool_by_name(name: &str, cwd: impl Into<PathBuf>) -> Result<ToolDefinition, UnknownTool> {
    ToolSet::new(cwd).tool(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_active_tools_are_the_ones_that_say_so() {
        let active: Vec<String> = all_tools(std::env::temp_dir())
            .iter()
            .filter(|d| d.active_by_default())
            .map(|d| d.name().to_string())
            .collect();
        assert_eq!(active, DEFAULT_ACTIVE_TOOLS);
    }
}
