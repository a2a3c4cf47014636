//! Pluggable operations: the file-system and process calls the tools make.
//!
//! The tools' logic (selection, truncation, notices, matching) runs against these
//! traits, so the same tools can work on a remote machine or a sandbox by
//! supplying other implementations (the sandbox crate confines these, a remote
//! backend forwards them). This module holds the seam only: the traits, what
//! crosses them, and what every backend gets for free over its own calls
//! (the default [`FileOps::walk`] and the grep engine [`search_files`] behind
//! the default [`FileOps::search`]). The implementation on this machine,
//! `LocalFileOps` and `LocalProcessOps`, is the crate `agent-local-ops`.
//! Every file-system access of the seven tools, including grep's and find's
//! directory walks, goes through [`FileOps`].

mod denied;
mod files;
mod output_file;
mod process;
pub mod search;
pub mod walk;
mod write;

use std::sync::Arc;

pub use denied::SandboxDenied;
pub use files::{DirEntryInfo, FileInfo, FileOps};
pub use output_file::OutputFile;
pub use process::{ExecEnd, ExecRequest, OutputSink, ProcessOps};
pub use search::{FileMatches, MAX_SEARCHED_LINE, SearchRequest, search_files};
pub use walk::{WalkEntry, WalkOptions, WalkVisitor};
pub use write::{WriteConflict, WriteMethod, WriteOutcome};

/// The shared operations of a tool set: which machine (or confinement) its
/// file and process calls reach. `agent_local_ops::operations()` gives this
/// machine's.
#[derive(Clone)]
pub struct Operations {
    /// File-system calls.
    pub files: Arc<dyn FileOps>,
    /// Process spawning.
    pub processes: Arc<dyn ProcessOps>,
}

impl std::fmt::Debug for Operations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Operations")
    }
}
