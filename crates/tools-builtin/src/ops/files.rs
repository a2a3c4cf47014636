//! File-system calls: the [`FileOps`] trait and the local implementation.

use std::io::{self, Read};
use std::path::Path;

use super::replace::{WriteOutcome, write_file};

/// What the tools need to know about a path (symlinks followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInfo {
    /// A regular file.
    pub is_file: bool,
    /// A directory.
    pub is_dir: bool,
    /// Size in bytes.
    pub len: u64,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntryInfo {
    /// The entry's name (lossily decoded).
    pub name: String,
    /// Whether it is a directory, following symlinks; `None` when it cannot be
    /// stat'ed (e.g. a dangling symlink).
    pub is_dir: Option<bool>,
}

/// File-system calls, blocking. Tools call them from a blocking thread.
pub trait FileOps: Send + Sync {
    /// Metadata, following symlinks.
    fn metadata(&self, path: &Path) -> io::Result<FileInfo>;
    /// Opens a file for streaming reads.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>>;
    /// Reads a whole file.
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.open_read(path)?.read_to_end(&mut buf)?;
        Ok(buf)
    }
    /// Checks that the file can be read (and written, when `write`).
    fn check_access(&self, path: &Path, write: bool) -> io::Result<()>;
    /// Gives the file the content `data`, creating it if missing and writing
    /// through symlinks (dangling ones included) to their target. Never leaves
    /// a half-written file behind: see [`write_file`] for how the local
    /// implementation chooses between an atomic replace and an in-place write.
    /// Refuses directories and non-regular files (FIFOs, sockets, devices) and
    /// files the caller may not write.
    fn write_file(&self, path: &Path, data: &[u8]) -> io::Result<WriteOutcome>;
    /// `mkdir -p`.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Lists a directory (without `.` and `..`).
    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntryInfo>>;
}

/// [`FileOps`] on the local file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalFileOps;

impl FileOps for LocalFileOps {
    fn metadata(&self, path: &Path) -> io::Result<FileInfo> {
        let m = std::fs::metadata(path)?;
        Ok(FileInfo {
            is_file: m.is_file(),
            is_dir: m.is_dir(),
            len: m.len(),
        })
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(std::fs::File::open(path)?))
    }

    fn check_access(&self, path: &Path, write: bool) -> io::Result<()> {
        let mode = if write {
            rustix::fs::Access::READ_OK | rustix::fs::Access::WRITE_OK
        } else {
            rustix::fs::Access::READ_OK
        };
        // The effective ids decide, as they do for the open that follows.
        rustix::fs::accessat(rustix::fs::CWD, path, mode, rustix::fs::AtFlags::EACCESS)
            .map_err(io::Error::from)
    }

    fn write_file(&self, path: &Path, data: &[u8]) -> io::Result<WriteOutcome> {
        write_file(path, data)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntryInfo>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            // The directory entry's own type needs no stat; only symlinks are followed.
            let is_dir = match entry.file_type() {
                Ok(t) if !t.is_symlink() => Some(t.is_dir()),
                _ => std::fs::metadata(entry.path()).ok().map(|m| m.is_dir()),
            };
            out.push(DirEntryInfo {
                name: entry.file_name().to_string_lossy().into_owned(),
                is_dir,
            });
        }
        Ok(out)
    }
}
