//! Opening files that someone else may have replaced: a project's settings,
//! context files, the scripts trust pins, a repository's `.git` files.
//!
//! A plain `open(2)` of a FIFO waits for a writer, for ever, and a process
//! blocked there does not run its signal handlers; a sandboxed command can
//! plant one with `mkfifo`. So these files are opened with `O_NONBLOCK`
//! (which makes opening a FIFO return at once) and accepted only when the
//! opened descriptor (`fstat`, not a second look at the name) is a regular
//! file.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let fifo = dir.path().join("fifo");
//! rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
//! let err = agent_tool::regular_file::read_regular_file(&fifo, 1024).unwrap_err();
//! assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
//! assert!(agent_tool::regular_file::read_regular_file(&dir.path().join("none"), 1024)
//!     .unwrap()
//!     .is_none());
//! ```

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// How to open: whether a symbolic link as the last component is refused
/// (the caller pins the link itself, or has resolved it already).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Links {
    /// Follow a link in the last component (settings, context files).
    #[default]
    Follow,
    /// Refuse one (`O_NOFOLLOW`): the name must be the file itself.
    Refuse,
}

/// What a non-regular file is, for messages: `FIFO`, `directory`, ...
pub fn kind_name(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "directory"
    } else if file_type.is_fifo() {
        "FIFO"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_char_device() {
        "character device"
    } else if file_type.is_block_device() {
        "block device"
    } else if file_type.is_symlink() {
        "symbolic link"
    } else if file_type.is_file() {
        "regular file"
    } else {
        "special file"
    }
}

/// Opens `path` for reading without blocking on a FIFO; `Ok(None)` when it
/// does not exist. The file is returned only when the opened descriptor is
/// a regular file; any other type is an [`io::ErrorKind::InvalidInput`]
/// error naming the type ("not a regular file (FIFO)").
///
/// # Errors
/// The file cannot be opened, or is not a regular file (with
/// [`Links::Refuse`], a link is refused by the kernel: `ELOOP`).
pub fn open_regular(path: &Path, links: Links) -> io::Result<Option<File>> {
    // `NOCTTY`: a terminal device planted under the name never becomes
    // the agent's controlling terminal on the way to being refused.
    let mut flags =
        rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC | rustix::fs::OFlags::NOCTTY;
    if links == Links::Refuse {
        flags |= rustix::fs::OFlags::NOFOLLOW;
    }
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let file_type = file.metadata()?.file_type();
    if !file_type.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({})", kind_name(file_type)),
        ));
    }
    Ok(Some(file))
}

/// Reads `path` whole if it is a regular file of at most `limit` bytes
/// (opened as [`open_regular`] does, following links); `Ok(None)` when it
/// does not exist.
///
/// # Errors
/// It cannot be read, is not a regular file, or is larger than `limit`.
pub fn read_regular_bytes(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let Some(file) = open_regular(path, Links::Follow)? else {
        return Ok(None);
    };
    let too_large = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        )
    };
    if file.metadata()?.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    // The file may grow after the check.
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(Some(bytes))
}

/// [`read_regular_bytes`] as UTF-8 text.
///
/// # Errors
/// As [`read_regular_bytes`], and text that is not UTF-8.
pub fn read_regular_file(path: &Path, limit: u64) -> io::Result<Option<String>> {
    read_regular_bytes(path, limit)?
        .map(|bytes| {
            String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
        })
        .transpose()
}
