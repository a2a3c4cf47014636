//! Process spawning: the [`ProcessOps`] trait (the local implementation is
//! `agent-local-ops`'s `LocalProcessOps`).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_core::CancellationToken;
use futures::future::BoxFuture;

/// A command for [`ProcessOps::exec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// The shell to run (`<shell> -c <command>`).
    pub shell: PathBuf,
    /// The command text.
    pub command: String,
    /// Working directory.
    pub cwd: PathBuf,
    /// The complete environment of the child.
    pub env: Vec<(OsString, OsString)>,
    /// Kill the command after this long.
    pub timeout: Option<Duration>,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecEnd {
    /// It exited by itself; `None` when a signal (not ours) ended it.
    Exited(Option<i32>),
    /// The timeout fired and the command was killed.
    TimedOut,
    /// The cancellation token fired and the command was killed.
    Aborted,
}

/// Receives output bytes (stdout and stderr merged, in arrival order).
pub type OutputSink<'a> = &'a mut (dyn FnMut(&[u8]) + Send);

/// Process spawning for bash.
pub trait ProcessOps: Send + Sync {
    /// Whether `cwd` is a directory commands can run in, on the machine
    /// commands run on.
    fn working_dir_exists(&self, cwd: &Path) -> bool;
    /// The shell to run commands with: `explicit` (the `shellPath` setting)
    /// if it exists, else the backend's bash or sh.
    ///
    /// # Errors
    /// A message for the model when no usable shell is found.
    fn resolve_shell(&self, explicit: Option<&str>) -> Result<PathBuf, agent_core::ToolError>;
    /// What confines the commands, reported in successful results'
    /// `details.sandbox`; `None` (the default) when nothing does.
    fn sandbox_report(&self) -> Option<serde_json::Value> {
        None
    }
    /// A new file for a command's full output when it is too long to show,
    /// on the machine commands run on (the model reads it back with the
    /// same backend's `read`).
    ///
    /// # Errors
    /// The file cannot be created (bash then reports output without it).
    fn create_output_file(&self) -> io::Result<Box<dyn super::OutputFile>>;
    /// Runs `request`, streaming its output into `on_data` until it ends.
    fn exec<'a>(
        &'a self,
        request: ExecRequest,
        on_data: OutputSink<'a>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, io::Result<ExecEnd>>;
}
