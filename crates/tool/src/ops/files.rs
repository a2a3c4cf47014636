//! File-system calls: the [`FileOps`] trait (the local implementation is
//! `agent-local-ops`'s `LocalFileOps`).

use std::io::{self, Read};
use std::path::Path;

use super::search::{FileMatches, SearchRequest, search_files};
use super::walk::{WalkEntry, WalkOptions, WalkVisitor};
use super::write::{WriteConflict, WriteOutcome};

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
///
/// Every file-system access of the seven built-in tools goes through these
/// methods (bash's process goes through [`ProcessOps`](super::ProcessOps)),
/// so another implementation (a container, a remote machine over SSH, an
/// in-memory tree) runs the same tools unchanged.
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
    /// `path` with its symlinks resolved as the file system resolves them,
    /// dangling ones followed too and a missing rest appended (see
    /// [`real_path`](crate::path::real_path)): what path rules judge a
    /// file by.
    fn real_path(&self, path: &Path) -> std::path::PathBuf;
    /// Gives the file the content `data`, creating it if missing and writing
    /// through symlinks (dangling ones included) to their target, as the
    /// kernel resolves them. Never leaves a half-written file behind (the
    /// local implementation, `agent_local_ops::replace::write_file`, chooses
    /// between an atomic replace and an in-place write). Refuses directories and
    /// non-regular files (FIFOs, sockets, devices) and whatever `echo > path`
    /// would be refused.
    fn write_file(&self, path: &Path, data: &[u8]) -> io::Result<WriteOutcome>;
    /// Like [`FileOps::write_file`], but only when the file still holds
    /// exactly `expected` (what the caller read); otherwise a
    /// [`WriteConflict`] error and nothing written.
    ///
    /// The default compares and then writes, which leaves a window for
    /// another writer; the local implementation compares and writes under
    /// the file's lock (`agent_local_ops::replace::write_file_if_unchanged`).
    fn write_file_if_unchanged(
        &self,
        path: &Path,
        expected: &[u8],
        data: &[u8],
    ) -> io::Result<WriteOutcome> {
        match self.read_file(path) {
            Ok(current) if current == expected => self.write_file(path, data),
            Ok(_) => Err(WriteConflict::error(path)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(WriteConflict::error(path)),
            Err(e) => Err(e),
        }
    }
    /// `mkdir -p`.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Lists a directory (without `.` and `..`).
    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntryInfo>>;
    /// Whether something exists at `path` (symlinks followed).
    fn exists(&self, path: &Path) -> bool {
        self.metadata(path).is_ok()
    }
    /// Runs a content search (grep's): walk, match, context lines.
    ///
    /// The default is [`search_files`] over this implementation's own
    /// [`walk`](FileOps::walk) and [`open_read`](FileOps::open_read), so a
    /// wrapper that hides or refuses files applies to every file searched.
    /// A remote backend overrides it to run the whole search on the other
    /// side as one request.
    ///
    /// # Errors
    /// See [`search_files`].
    fn search(
        &self,
        request: &SearchRequest,
        cancel: &agent_core::CancellationToken,
    ) -> io::Result<Vec<FileMatches>> {
        search_files(self, request, cancel)
    }
    /// Walks a directory tree for grep and find: hidden entries included,
    /// `.git` skipped, symlinks not followed, `visit` called for every entry
    /// below the root until it returns `false`.
    ///
    /// The default walks with [`FileOps::read_dir`] and honours no ignore
    /// files; the local one (`agent_local_ops::LocalFileOps`) honours
    /// `.gitignore`, `.ignore` and `.rgignore`.
    ///
    /// # Errors
    /// An invalid glob (`InvalidInput`); unreadable directories are skipped.
    fn walk(&self, options: &WalkOptions<'_>, visit: WalkVisitor<'_>) -> io::Result<()> {
        let glob = match options.glob.filter(|g| !g.is_empty()) {
            Some(g) => Some(super::walk::GlobFilter::new(g)?),
            None => None,
        };
        // `read_dir` follows symlinks, so a depth bound stops link loops.
        const MAX_DEPTH: usize = 64;
        let mut stack = vec![(options.root.to_path_buf(), 0usize)];
        // Depth first with sorted names: the path order the tools report in.
        while let Some((dir, depth)) = stack.pop() {
            let Ok(mut entries) = self.read_dir(&dir) else {
                continue;
            };
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            let mut subdirs = Vec::new();
            for entry in entries {
                if entry.name == ".git" {
                    continue;
                }
                let path = dir.join(&entry.name);
                let is_dir = entry.is_dir == Some(true);
                let is_file = !is_dir && self.metadata(&path).map(|m| m.is_file).unwrap_or(false);
                if is_dir && depth < MAX_DEPTH {
                    subdirs.push((path.clone(), depth + 1));
                }
                let wanted = is_dir || glob.as_ref().is_none_or(|g| g.matches(options.root, &path));
                if wanted
                    && !visit(WalkEntry {
                        path: path.clone(),
                        is_dir,
                        is_file,
                    })
                {
                    return Ok(());
                }
            }
            stack.extend(subdirs.into_iter().rev());
        }
        Ok(())
    }
}
