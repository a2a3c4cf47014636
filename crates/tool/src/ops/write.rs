//! What a write reports: how the content went in ([`WriteOutcome`]) and the
//! refusal of a write whose file changed since it was read
//! ([`WriteConflict`]). The local way of writing is `agent-local-ops`'s
//! `replace` module.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How [`FileOps::write_file`](super::FileOps::write_file) put the content into the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum WriteMethod {
    /// The file did not exist; it was created through a temporary file.
    Created,
    /// The file was replaced atomically by renaming a complete new file over it.
    Replaced,
    /// The new content was written into the existing file (same inode).
    InPlace,
}

/// What [`FileOps::write_file`](super::FileOps::write_file) did, for a tool's `details`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteOutcome {
    /// The way the content went in.
    pub method: WriteMethod,
    /// Why an existing file was written in place instead of replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The file no longer holds what the caller read: another process changed it
/// (or removed it) in between. Nothing was written.
///
/// Carried inside an [`io::Error`]; [`WriteConflict::is`] recognises it.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} changed on disk after it was read (another process wrote it); nothing was written",
    path.display()
)]
pub struct WriteConflict {
    /// The path as the caller gave it.
    pub path: PathBuf,
}

impl WriteConflict {
    /// The conflict on `path`, as an [`io::Error`].
    pub fn error(path: &Path) -> io::Error {
        io::Error::other(WriteConflict {
            path: path.to_path_buf(),
        })
    }

    /// Whether `error` is a [`WriteConflict`].
    pub fn is(error: &io::Error) -> bool {
        error.get_ref().is_some_and(|e| e.is::<WriteConflict>())
    }
}
