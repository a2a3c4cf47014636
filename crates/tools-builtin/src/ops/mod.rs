//! Pluggable operations: the file-system and process calls the tools make.
//!
//! The tools' logic (selection, truncation, notices, matching) runs against these
//! traits, so the same tools can work on a remote machine or a sandbox by
//! supplying other implementations. [`LocalFileOps`] and [`LocalProcessOps`] work
//! on this machine. Every file-system access of the seven tools, including
//! grep's and find's directory walks, goes through [`FileOps`].

mod confined;
mod files;
pub mod landlock;
mod process;
pub mod process_tree;
pub mod replace;
pub mod sandbox;

use std::sync::Arc;

pub use confined::{ConfinedFileOps, SandboxDenied};
pub use files::{
    DirEntryInfo, FileInfo, FileOps, LocalFileOps, WalkEntry, WalkOptions, WalkVisitor,
};
pub use process::{CALL_MARKER_VAR, ExecEnd, ExecRequest, LocalProcessOps, OutputSink, ProcessOps};
pub use replace::{WriteConflict, WriteMethod, WriteOutcome, write_file, write_file_if_unchanged};

/// The shared operations of a tool set.
#[derive(Clone)]
pub struct Operations {
    /// File-system calls.
    pub files: Arc<dyn FileOps>,
    /// Process spawning.
    pub processes: Arc<dyn ProcessOps>,
}

impl Default for Operations {
    fn default() -> Self {
        Operations {
            files: Arc::new(LocalFileOps),
            processes: Arc::new(LocalProcessOps),
        }
    }
}

impl Operations {
    /// The local file system and processes confined by `policy` (plain
    /// local operations when the policy is off).
    ///
    /// # Errors
    /// A root that cannot be opened or a deny glob that does not parse.
    pub fn sandboxed(policy: &coding_agent::sandbox::SandboxPolicy) -> std::io::Result<Self> {
        if !policy.is_on() {
            return Ok(Operations::default());
        }
        Ok(Operations {
            files: Arc::new(ConfinedFileOps::new(policy)?),
            processes: Arc::new(sandbox::SandboxedProcessOps::new(policy.clone())),
        })
    }
}

impl std::fmt::Debug for Operations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Operations")
    }
}
