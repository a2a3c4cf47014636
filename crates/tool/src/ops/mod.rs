//! Pluggable operations: the file-system and process calls the tools make.
//!
//! The tools' logic (selection, truncation, notices, matching) runs against these
//! traits, so the same tools can work on a remote machine or a sandbox by
//! supplying other implementations (the sandbox crate confines these, a remote
//! backend forwards them). [`LocalFileOps`] and [`LocalProcessOps`] work
//! on this machine. Every file-system access of the seven tools, including
//! grep's and find's directory walks, goes through [`FileOps`].

mod denied;
mod files;
mod ignore_files;
mod output_file;
mod process;
pub mod process_tree;
mod random;
pub mod replace;
pub mod search;
pub mod walk;

use std::sync::Arc;

pub use denied::SandboxDenied;
pub use files::{DirEntryInfo, FileInfo, FileOps, LocalFileOps};
pub use output_file::{MAX_OUTPUT_FILES_TOTAL, OutputFile, local_output_file};
pub use process::{
    CALL_MARKER_VAR, ExecEnd, ExecRequest, LocalProcessOps, OutputSink, ProcessOps, resolve_shell,
    run_local_with,
};
pub use replace::{WriteConflict, WriteMethod, WriteOutcome, write_file, write_file_if_unchanged};
pub use search::{FileMatches, MAX_SEARCHED_LINE, SearchRequest, search_files};
pub use walk::{WalkEntry, WalkOptions, WalkVisitor};

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

impl std::fmt::Debug for Operations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Operations")
    }
}
