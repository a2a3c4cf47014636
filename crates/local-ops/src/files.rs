//! [`LocalFileOps`]: [`FileOps`] on this machine's file system.

use std::io::{self, Read};
use std::path::Path;

use agent_tool::ops::{DirEntryInfo, FileInfo, FileOps, WalkOptions, WalkVisitor, WriteOutcome};

use crate::replace::{write_file, write_file_if_unchanged};

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

    fn real_path(&self, path: &Path) -> std::path::PathBuf {
        agent_tool::path::real_path(path)
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

    fn write_file_if_unchanged(
        &self,
        path: &Path,
        expected: &[u8],
        data: &[u8],
    ) -> io::Result<WriteOutcome> {
        write_file_if_unchanged(path, expected, data)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn walk(&self, options: &WalkOptions<'_>, visit: WalkVisitor<'_>) -> io::Result<()> {
        crate::walk::walk_local(options, visit)
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
