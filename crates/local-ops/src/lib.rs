//! # agent-local-ops
//!
//! The file and process operations of `agent-tool` ([`FileOps`](agent_tool::ops::FileOps),
//! [`ProcessOps`](agent_tool::ops::ProcessOps)) on this machine. A tool never names this crate: it works
//! on whatever [`Operations`] its host gives it. Hosts that run tools here
//! (the tool set's default, the sandbox underneath its confinement, the
//! remote helper on the far side of its channel) take them from here.
//!
//! - [`LocalFileOps`]: reads, the ignore-aware walk ([`walk`]), and writes
//!   that never leave a half-written file ([`replace`]).
//! - [`LocalProcessOps`]: `<shell> -c` in its own process group, stdout and
//!   stderr on one pipe, and on timeout or cancel a kill of everything the
//!   command started ([`process_tree`]); [`run_local_with`] lets the sandbox
//!   add its set-up to the same runner.
//! - [`local_output_file`]: bash's full-output files in the temp dir, within
//!   [`MAX_OUTPUT_FILES_TOTAL`].
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use agent_tool::ops::FileOps;
//!
//! let ops = agent_local_ops::operations();
//! let path = dir.path().join("a.txt");
//! ops.files.write_file(&path, b"hello\n").unwrap();
//! assert_eq!(ops.files.read_file(&path).unwrap(), b"hello\n");
//! ```

mod files;
mod ignore_files;
mod output_file;
mod process;
pub mod process_tree;
mod random;
pub mod replace;
pub mod walk;

use std::sync::Arc;

use agent_tool::ops::Operations;

pub use files::LocalFileOps;
pub use output_file::{MAX_OUTPUT_FILES_TOTAL, local_output_file};
pub use process::{CALL_MARKER_VAR, LocalProcessOps, resolve_shell, run_local_with};

/// This machine's operations: [`LocalFileOps`] and [`LocalProcessOps`].
pub fn operations() -> Operations {
    Operations {
        files: Arc::new(LocalFileOps),
        processes: Arc::new(LocalProcessOps),
    }
}
