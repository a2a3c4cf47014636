//! Running a tool's blocking file work, and saying what went wrong with it.

use std::path::Path;

use agent_tool::{CancellationToken, ToolError};

/// Runs blocking work on tokio's blocking pool; returns `Operation aborted` as
/// soon as `cancel` fires (the work itself should also watch `cancel`).
pub(crate) async fn blocking<T, F>(cancel: &CancellationToken, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    if cancel.is_cancelled() {
        return Err(ToolError::aborted());
    }
    let handle = tokio::task::spawn_blocking(work);
    tokio::select! {
        joined = handle => match joined {
            Ok(result) => result,
            Err(e) => Err(ToolError::new(format!("internal error: tool task failed: {e}"))),
        },
        _ = cancel.cancelled() => Err(ToolError::aborted()),
    }
}

/// A short, clear description of an I/O error on `path`.
pub(crate) fn describe_io_error(e: &std::io::Error, path: &Path) -> String {
    use std::io::ErrorKind::*;
    if let Some(message) = agent_tool::ops::SandboxDenied::message(e) {
        return message.to_string();
    }
    match e.kind() {
        NotFound => format!("File not found: {}", path.display()),
        PermissionDenied => format!("Permission denied: {}", path.display()),
        IsADirectory => format!("Path is a directory: {}", path.display()),
        NotADirectory => format!("Not a directory: a parent of {} is a file", path.display()),
        _ => format!("{}: {e}", path.display()),
    }
}
