//! Values a session hands every tool call through the call's
//! [`Extensions`](agent_core::Extensions).

use std::path::{Path, PathBuf};

/// The session's working directory, as every call receives it
/// (`cx.get::<WorkingDir>()`). Relative paths in arguments resolve against it.
///
/// ```
/// use agent_tool::{Extensions, ToolCallContext, WorkingDir};
///
/// let cx = ToolCallContext::new("1").with_extensions(Extensions::new().with(WorkingDir::new("/srv/app")));
/// assert_eq!(WorkingDir::of(&cx).unwrap(), std::path::Path::new("/srv/app"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkingDir(pub PathBuf);

impl WorkingDir {
    /// A working directory value.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        WorkingDir(path.into())
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The working directory a call was given, if the host gave one.
    pub fn of(cx: &agent_core::ToolCallContext) -> Option<&Path> {
        cx.get::<WorkingDir>().map(WorkingDir::path)
    }
}
