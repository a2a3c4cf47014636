//! File access for what the agent itself does, unconfined (and possibly as
//! root), on paths a sandboxed command can change: the check after each
//! command, the placeholders, the reading of git's index and gitfiles, the
//! look at protected paths before they are mounted.
//!
//! The rule: inside a root, nothing is reached by path. A root is opened
//! with `O_NOFOLLOW`, then every component below it with
//! `openat(O_NOFOLLOW | O_DIRECTORY)`, and the last one is looked at,
//! read, created, renamed or removed relative to its parent's handle
//! (`fstatat(AT_SYMLINK_NOFOLLOW)`, `openat`, `mkdirat`, `renameat`,
//! `unlinkat`). A command running in parallel can swap a directory for a
//! symbolic link at any moment; a walk that meets a link stops there (the
//! link itself is what it found) and follows nothing, and a handle already
//! open keeps naming the directory it was opened on. A rename always stays
//! within one directory handle, so nothing can be moved out of the
//! workspace, or into it from outside. Files a command could have replaced
//! are opened non-blocking and accepted only when regular, so a FIFO cannot
//! hang the agent.
//!
//! The root itself is opened by path: the walk starts at the outermost root
//! holding a path, whose ancestors lie in no root and so are read-only to
//! every command (a root inside the temp dir gets commands a private temp
//! dir, see [`SandboxPolicy::temp_dir_writable`](crate::SandboxPolicy::temp_dir_writable)).

use std::ffi::{OsStr, OsString};
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};

/// Device, inode and type of a file. The type is part of it because an
/// inode number is reused once freed: a link made where a replaced file
/// stood may get the number the file had, but never its type.
pub(crate) type Identity = (u64, u64, u32);

/// The identity of what `stat` describes.
pub(crate) fn identity_of(stat: &rustix::fs::Stat) -> Identity {
    (
        stat.st_dev,
        stat.st_ino,
        rustix::fs::FileType::from_raw_mode(stat.st_mode).as_raw_mode(),
    )
}

/// A handle on the directory at `path` itself: a symbolic link there is not
/// followed.
pub(crate) fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    rustix::fs::open(
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)
}

/// A handle on the directory `name` in `dir`, never through a link.
pub(crate) fn open_child_dir(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)
}

/// What stands at `name` in `dir`, links not followed.
pub(crate) fn stat_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<rustix::fs::Stat> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(io::Error::from)
}

/// Where a walk down from a directory handle stopped.
#[derive(Debug)]
pub(crate) enum Walk {
    /// Every component is a directory: the handle of the last one.
    Reached(OwnedFd),
    /// A component is a symbolic link: the handle of its parent, its name,
    /// and its path below the start of the walk. Nothing below it was
    /// looked at.
    Link {
        parent: OwnedFd,
        name: OsString,
        at: PathBuf,
    },
    /// A component is missing, not a directory, or not a plain name.
    Stopped,
}

/// The components of `rel` when every one is a plain name (no `..`, `.`,
/// or root): only those can be walked without leaving where they start.
pub(crate) fn plain_names(rel: &Path) -> Option<Vec<&OsStr>> {
    rel.components()
        .map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect()
}

/// Walks from `from` down `rel`, opening each component with `O_NOFOLLOW`.
pub(crate) fn walk(from: BorrowedFd<'_>, rel: &Path) -> Walk {
    let Some(names) = plain_names(rel) else {
        tracing::debug!(path = %rel.display(), "not a plain relative path: not walked");
        return Walk::Stopped;
    };
    let Ok(mut dir) = rustix::io::fcntl_dupfd_cloexec(from, 0) else {
        return Walk::Stopped;
    };
    let mut at = PathBuf::new();
    for name in names {
        at.push(name);
        match open_child_dir(dir.as_fd(), name) {
            Ok(next) => dir = next,
            Err(_) => {
                // Refused (a link, a file, nothing): say which, without
                // following anything.
                return match stat_at(dir.as_fd(), name) {
                    Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                        Walk::Link {
                            parent: dir,
                            name: name.to_os_string(),
                            at,
                        }
                    }
                    _ => Walk::Stopped,
                };
            }
        }
    }
    Walk::Reached(dir)
}

/// The outermost of `bases` holding `path` (lexically), and the rest of the
/// path below it.
pub(crate) fn base_of<'a>(bases: &'a [PathBuf], path: &'a Path) -> Option<(&'a Path, &'a Path)> {
    bases
        .iter()
        .filter_map(|b| path.strip_prefix(b).ok().map(|rest| (b.as_path(), rest)))
        .min_by_key(|(b, _)| b.components().count())
}

/// The handle of the directory holding `path`, and its last name: walked
/// from the outermost of `bases` holding it without following a link, or,
/// for a path outside every base (where no command can write), opened by
/// path. `None` when the way is blocked (a link, a file, nothing there).
pub(crate) fn parent_handle(bases: &[PathBuf], path: &Path) -> Option<(OwnedFd, OsString)> {
    let name = path.file_name()?.to_os_string();
    let parent = path.parent()?;
    match base_of(bases, parent) {
        Some((base, rel)) => match walk(open_dir(base).ok()?.as_fd(), rel) {
            Walk::Reached(dir) => Some((dir, name)),
            Walk::Link { at, .. } => {
                tracing::debug!(path = %path.display(), link = %base.join(at).display(), "a symbolic link on the way: not followed");
                None
            }
            Walk::Stopped => None,
        },
        None => rustix::fs::open(
            parent,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()
        .map(|dir| (dir, name)),
    }
}

/// A handle on the directory at `path` (see [`parent_handle`]), not
/// through a link.
pub(crate) fn dir_handle(bases: &[PathBuf], path: &Path) -> Option<OwnedFd> {
    match base_of(bases, path) {
        Some((base, rel)) if rel.as_os_str().is_empty() => open_dir(base).ok(),
        _ => {
            let (parent, name) = parent_handle(bases, path)?;
            open_child_dir(parent.as_fd(), &name).ok()
        }
    }
}

/// What stands at `path`, looked at from the outermost of `bases` holding
/// it without following a link.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Look {
    /// Something that is not a link.
    Present,
    /// Nothing, or no directory on the way.
    Absent,
    /// A symbolic link at the path or on the way to it: its path.
    Link(PathBuf),
}

/// Looks at `path` (see [`Look`]); outside every base, where no command
/// can change anything, by path.
pub(crate) fn look(bases: &[PathBuf], path: &Path) -> Look {
    let found = |stat: io::Result<rustix::fs::Stat>| match stat {
        Ok(s) if FileType::from_raw_mode(s.st_mode) == FileType::Symlink => {
            Look::Link(path.to_path_buf())
        }
        Ok(_) => Look::Present,
        Err(_) => Look::Absent,
    };
    let Some((base, rel)) = base_of(bases, path) else {
        return found(rustix::fs::lstat(path).map_err(io::Error::from));
    };
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return found(rustix::fs::lstat(base).map_err(io::Error::from));
    };
    let Ok(fd) = open_dir(base) else {
        return Look::Absent;
    };
    match walk(fd.as_fd(), parent) {
        Walk::Reached(dir) => found(stat_at(dir.as_fd(), name)),
        Walk::Link { at, .. } => Look::Link(base.join(at)),
        Walk::Stopped => Look::Absent,
    }
}

/// Why a file is not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// Nothing there, or the way to it is blocked by a link.
    #[error("not found")]
    Missing,
    /// A link, a FIFO, a device, a directory...
    #[error("not a regular file")]
    NotRegular,
    /// Larger than the caller accepts.
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    /// The read itself failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Opens the regular file `name` in `dir` for reading: never through a
/// link, non-blocking (a FIFO cannot hang the open), at most `max` bytes
/// long; the file and its status.
pub(crate) fn open_regular_at(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    max: u64,
) -> Result<(std::fs::File, rustix::fs::Stat), ReadError> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR => ReadError::Missing,
        rustix::io::Errno::LOOP => ReadError::NotRegular,
        e => ReadError::Io(e.into()),
    })?;
    let stat = rustix::fs::fstat(&fd).map_err(io::Error::from)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(ReadError::NotRegular);
    }
    if u64::try_from(stat.st_size).unwrap_or(u64::MAX) > max {
        return Err(ReadError::TooLarge(max));
    }
    Ok((std::fs::File::from(fd), stat))
}

/// The bytes of `file`, at most `max` (it may have grown since it was
/// opened).
pub(crate) fn read_at_most(file: std::fs::File, max: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::TooLarge(max));
    }
    Ok(bytes)
}

/// The bytes of the regular file at `path` (see [`parent_handle`] and
/// [`open_regular_at`]).
pub(crate) fn read_regular(bases: &[PathBuf], path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    let (dir, name) = parent_handle(bases, path).ok_or(ReadError::Missing)?;
    let (file, _) = open_regular_at(dir.as_fd(), &name, max)?;
    read_at_most(file, max)
}

/// The names in the directory `name` of `dir` (not through a link), at most
/// `limit` of them, `.` and `..` left out.
pub(crate) fn list_at(dir: BorrowedFd<'_>, name: &OsStr, limit: usize) -> Vec<OsString> {
    use std::os::unix::ffi::OsStrExt;
    let Ok(fd) = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return Vec::new();
    };
    let Ok(entries) = rustix::fs::Dir::new(fd) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
        .filter(|n| n != "." && n != "..")
        .take(limit)
        .collect()
}

/// Renames `name` in `dir` to `NAME.set-aside-by-sandbox-MILLIS`, in the
/// same directory handle and never over an existing name; the new name.
pub(crate) fn set_aside(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OsString> {
    // Milliseconds since the epoch: the name says when it was set aside.
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
    for attempt in 0..8u32 {
        let mut aside = name.to_os_string();
        aside.push(format!(".set-aside-by-sandbox-{stamp}"));
        if attempt > 0 {
            aside.push(format!("-{attempt}"));
        }
        match rustix::fs::renameat_with(dir, name, dir, &aside, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(aside),
            Err(rustix::io::Errno::EXIST) => last = io::Error::from(io::ErrorKind::AlreadyExists),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_stops_at_a_link_and_follows_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::create_dir_all(outside.join("b")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("a/lnk")).unwrap();
        let fd = open_dir(&root).unwrap();
        match walk(fd.as_fd(), Path::new("a/lnk/b")) {
            Walk::Link { name, at, .. } => {
                assert_eq!(name, "lnk");
                assert_eq!(at, Path::new("a/lnk"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            walk(fd.as_fd(), Path::new("a/../a")),
            Walk::Stopped
        ));
        assert!(matches!(walk(fd.as_fd(), Path::new("a")), Walk::Reached(_)));
        // Reading through the link is refused, as is a FIFO.
        std::fs::write(outside.join("b/f"), "secret").unwrap();
        assert!(matches!(
            read_regular(std::slice::from_ref(&root), &root.join("a/lnk/b/f"), 100),
            Err(ReadError::Missing)
        ));
        rustix::fs::mknodat(
            fd.as_fd(),
            "fifo",
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(matches!(
            read_regular(std::slice::from_ref(&root), &root.join("fifo"), 100),
            Err(ReadError::NotRegular)
        ));
    }
}
