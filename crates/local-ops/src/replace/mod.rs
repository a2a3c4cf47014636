//! How `write` and `edit` put new content into a file without damaging it.
//!
//! **The kernel resolves every path.** The user's path is opened as given
//! (`openat` on its directory, the last component followed by the kernel), so
//! `fs.protected_symlinks`, `fs.protected_regular` and the permission checks
//! apply exactly as they do to `echo > path`: an existing file is opened for
//! writing with `O_CREAT` (no `O_TRUNC`) before anything changes, and a
//! dangling symlink's target is created by that same open. Nothing is resolved
//! by hand. The file that open returned is the one written; an atomic replace
//! renames over the directory entry the kernel resolved, after checking that
//! the entry still names that file.
//!
//! **One writer at a time.** The resolved file is locked (`flock`, exclusive)
//! for the whole check-and-write, and after the lock is taken the path must
//! still name the locked file (a rename by the previous holder swaps inodes;
//! then the new one is locked instead). [`write_file_if_unchanged`] compares
//! the content under the lock with what the caller read and refuses with a
//! [`WriteConflict`] rather than overwrite a change it never saw.
//!
//! A careful editor then chooses per file:
//!
//! - **A new file** is written to an unnamed temporary file (`O_TMPFILE`) in
//!   the target directory, synced and linked into place under its name (never
//!   over something that appeared meanwhile): readers never see a partial file.
//! - **An existing file** is replaced the same way (atomic rename) only when
//!   nobody can tell the difference: it is a regular file with one link, its
//!   owner, group, mode and extended attributes (ACLs included, exactly: an
//!   ACL the directory's default ACL would add is removed) can all be carried
//!   over to the new inode, and the directory lets us create and rename
//!   files. Otherwise, and whenever the rename itself is refused (a
//!   bind-mounted file answers `EBUSY`), the content is written **in place**
//!   into the same inode, so hard links, attributes, ownership and open
//!   handles stay. Before an in-place write the old content is copied to a
//!   backup file and synced; the backup is removed once the new content is
//!   synced. When no backup can be made (the file is not readable, the disk is
//!   full) nothing is written and the error says so. A crash in between
//!   leaves the backup beside the file (or in the system temp directory when
//!   the file's directory is not writable), named
//!   `.NAME.coding-agent-backup-XXXXXXXXXXXXXXXX`, `NAME` shortened so the
//!   whole name fits any file system's limit.
//!
//! The temporary file of an atomic replace has no name until it is complete;
//! it gets a short random one (`.coding-agent-XXXXXXXXXXXXXXXX.tmp`) only for
//! the instant of the rename (always, on file systems without `O_TMPFILE`).
//! While named it is locked (`flock`) and carries the extended attribute
//! `user.coding-agent.temp` naming its destination. A later write into the
//! same directory removes a leftover of a killed writer only when the file
//! itself says so: that attribute (naming another file), one link, and no
//! lock held. Nothing is ever deleted because of its name.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_tool::ops::{WriteConflict, WriteMethod, WriteOutcome};

use rustix::fs::{AtFlags, CWD, FileType, FlockOperation, Mode, OFlags, Stat};
use rustix::io::Errno;

mod atomic;
mod attributes;
mod in_place;

use atomic::{create_new, replace_by_rename};
use in_place::write_in_place;

/// Prefix of the (briefly) named temporary files of the atomic path.
const TEMP_PREFIX: &str = ".coding-agent-";
/// Suffix of the (briefly) named temporary files of the atomic path.
const TEMP_SUFFIX: &str = ".tmp";
/// The extended attribute that marks a temporary file of ours while it has
/// a name; its value is the name it is about to be renamed to.
const TEMP_MARKER: &str = "user.coding-agent.temp";
/// What a backup's name holds between the file's name and the random part.
const BACKUP_INFIX: &str = ".coding-agent-backup-";
/// Bytes of the file's name kept in its backup's name: with the dot, infix
/// and random part the whole stays far below `NAME_MAX` (255).
const BACKUP_NAME_KEEP: usize = 96;
/// Attempts when the path keeps changing under us.
const MAX_ATTEMPTS: usize = 100;
/// How long to wait for another writer's lock before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// Writes `data` to `path` as described in the [module docs](self).
///
/// Symlinks are followed by the kernel; a dangling one's target is created.
/// Directories, FIFOs, sockets and devices are refused, and so is anything
/// `echo > path` would be refused (permissions, `fs.protected_symlinks`,
/// `fs.protected_regular`).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use agent_local_ops::replace::write_file;
/// use agent_tool::ops::WriteMethod;
/// let path = dir.path().join("notes.txt");
/// assert_eq!(write_file(&path, b"one\n").unwrap().method, WriteMethod::Created);
/// assert_eq!(write_file(&path, b"two\n").unwrap().method, WriteMethod::Replaced);
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
/// ```
///
/// # Errors
/// Anything the kernel refuses, a non-regular file, a full disk, or a file
/// that must be written in place while no backup of it can be made.
pub fn write_file(path: &Path, data: &[u8]) -> io::Result<WriteOutcome> {
    write_checked(path, data, None, None)
}

/// Like [`write_file`], but only when the file still holds exactly
/// `expected` (what the caller read), checked under the file's lock.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use agent_local_ops::replace::{write_file, write_file_if_unchanged};
/// use agent_tool::ops::WriteConflict;
/// let path = dir.path().join("n.txt");
/// write_file(&path, b"one\n").unwrap();
/// write_file_if_unchanged(&path, b"one\n", b"two\n").unwrap();
/// let stale = write_file_if_unchanged(&path, b"one\n", b"three\n").unwrap_err();
/// assert!(WriteConflict::is(&stale));
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
/// ```
///
/// # Errors
/// A [`WriteConflict`] when the content differs or the file is gone, and
/// everything [`write_file`] reports.
pub fn write_file_if_unchanged(
    path: &Path,
    expected: &[u8],
    data: &[u8],
) -> io::Result<WriteOutcome> {
    write_checked(path, data, Some(expected), None)
}

/// Judges, on what the kernel opened, whether a write may land there: the
/// real path (read back from the open descriptor) of the directory a new
/// file is created in, joined with its name, or of the existing file, with
/// that file's status. An error refuses the write.
pub type WriteCheck<'a> = &'a (dyn Fn(&Path, Option<&Stat>) -> io::Result<()> + Sync);

/// [`write_file`] (with `expected`: [`write_file_if_unchanged`]) where
/// `check` judges the directory and the file actually opened, so nothing
/// swapped into the path between a caller's own look and the write (a
/// symlink to a protected directory) is written. Symlinks are not written
/// through when they appear dangling: that would create their target before
/// it could be judged.
pub fn write_file_checked(
    path: &Path,
    data: &[u8],
    expected: Option<&[u8]>,
    check: WriteCheck<'_>,
) -> io::Result<WriteOutcome> {
    write_checked(path, data, expected, Some(check))
}

fn write_checked(
    path: &Path,
    data: &[u8],
    expected: Option<&[u8]>,
    check: Option<WriteCheck<'_>>,
) -> io::Result<WriteOutcome> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let dir_path = parent_dir(path);
    for _ in 0..MAX_ATTEMPTS {
        let dir = rustix::fs::openat(
            CWD,
            dir_path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        if let Some(check) = check {
            let real_dir = std::fs::read_link(proc_fd(&dir))?;
            check(&real_dir.join(name), None)?;
        }
        let mut target = match open_target(&dir, name, path, check.is_none())? {
            Opened::Changed => continue,
            Opened::Missing => {
                if expected.is_some() {
                    return Err(WriteConflict::error(path));
                }
                match create_new(&dir, name, data)? {
                    true => {
                        return Ok(WriteOutcome {
                            method: WriteMethod::Created,
                            reason: None,
                        });
                    }
                    // Something took the name meanwhile: look again.
                    false => continue,
                }
            }
            Opened::File(t) => t,
        };
        if let Some(check) = check {
            let real = std::fs::read_link(proc_fd(&target.file))?;
            check(&real, Some(&target.stat))?;
        }
        lock(&target.file, path)?;
        // The previous holder may have renamed a new file over the path.
        if !still_named(&dir, name, &target.stat) {
            continue;
        }
        // Owner, mode and links as they are now, under the lock.
        target.stat = rustix::fs::fstat(&target.file)?;
        if let Some(expected) = expected {
            let current = read_all(&target, &dir, name)?;
            if current != expected {
                return Err(WriteConflict::error(path));
            }
        }
        return write_existing(&target, data, path);
    }
    Err(io::Error::other(format!(
        "{} kept changing while it was being written; nothing was written",
        path.display()
    )))
}

/// The directory holding `path` (`.` for a bare name).
fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The file to write, as the kernel resolved it.
struct Target {
    /// Opened for writing; its lock serialises writers.
    file: File,
    /// Its identity and attributes when opened.
    stat: Stat,
    /// Created by our open (through a dangling symlink).
    created: bool,
}

enum Opened {
    /// Nothing at the path, not even a symlink.
    Missing,
    /// The path changed between two looks; look again.
    Changed,
    File(Target),
}

fn same_file(a: &Stat, b: &Stat) -> bool {
    a.st_dev == b.st_dev && a.st_ino == b.st_ino
}

/// The open `echo > path` does, without truncating: the kernel follows
/// symlinks under its protections, checks write permission and creates a
/// dangling symlink's target.
fn open_for_write(dir: &OwnedFd, name: &OsStr) -> io::Result<File> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o666),
    )?;
    // Non-blocking only so that the open itself never waits.
    if let Ok(flags) = rustix::fs::fcntl_getfl(&fd) {
        let _ = rustix::fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK);
    }
    Ok(File::from(fd))
}

fn open_target(
    dir: &OwnedFd,
    name: &OsStr,
    shown: &Path,
    follow_dangling: bool,
) -> io::Result<Opened> {
    // Looked at first without opening for writing, so a device or FIFO is
    // refused before it is opened.
    match rustix::fs::openat(dir, name, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()) {
        Ok(found) => {
            let stat = rustix::fs::fstat(&found)?;
            check_regular(stat.st_mode, shown)?;
            let file = open_for_write(dir, name)?;
            let now = rustix::fs::fstat(&file)?;
            if !same_file(&stat, &now) {
                return Ok(Opened::Changed);
            }
            Ok(Opened::File(Target {
                file,
                stat: now,
                created: false,
            }))
        }
        Err(Errno::NOENT) => match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) => Ok(Opened::Missing),
            Ok(link) if FileType::from_raw_mode(link.st_mode) == FileType::Symlink => {
                if !follow_dangling {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!(
                            "{} became a dangling symlink while it was being written; nothing was written",
                            shown.display()
                        ),
                    ));
                }
                // A dangling symlink: the kernel follows it and creates the target.
                let file = open_for_write(dir, name)?;
                let stat = rustix::fs::fstat(&file)?;
                check_regular(stat.st_mode, shown)?;
                Ok(Opened::File(Target {
                    file,
                    stat,
                    created: true,
                }))
            }
            Ok(_) => Ok(Opened::Changed),
            Err(e) => Err(e.into()),
        },
        Err(e) => Err(e.into()),
    }
}

/// Takes the exclusive lock, waiting a bounded time for another holder.
fn lock(file: &File, shown: &Path) -> io::Result<()> {
    let mut waited = Duration::ZERO;
    let mut pause = Duration::from_millis(1);
    loop {
        match rustix::fs::flock(file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(Errno::WOULDBLOCK) if waited < LOCK_WAIT => {
                std::thread::sleep(pause);
                waited += pause;
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(Errno::WOULDBLOCK) => {
                return Err(io::Error::other(format!(
                    "{} stayed locked by another process for {} s; nothing was written",
                    shown.display(),
                    LOCK_WAIT.as_secs()
                )));
            }
            // No flock on this file system: nothing to serialise with.
            Err(Errno::NOLCK | Errno::OPNOTSUPP | Errno::NOSYS) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Whether `name` in `dir` still resolves to the file `stat` describes.
fn still_named(dir: &OwnedFd, name: &OsStr, stat: &Stat) -> bool {
    rustix::fs::openat(dir, name, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
        .and_then(rustix::fs::fstat)
        .is_ok_and(|now| same_file(&now, stat))
}

/// The `/proc` path of an open descriptor.
fn proc_fd(fd: impl AsFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd()))
}

/// Opens the target again with other flags: through `/proc` (the same
/// inode, whatever the path does), else by name with an identity check.
fn reopen(target: &Target, dir: &OwnedFd, name: &OsStr, flags: OFlags) -> io::Result<File> {
    match rustix::fs::openat(
        CWD,
        proc_fd(&target.file),
        flags | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => return Ok(File::from(fd)),
        Err(Errno::NOENT) if !Path::new("/proc/self/fd").exists() => {}
        Err(e) => return Err(e.into()),
    }
    let fd = rustix::fs::openat(dir, name, flags | OFlags::CLOEXEC, Mode::empty())?;
    if !same_file(&rustix::fs::fstat(&fd)?, &target.stat) {
        return Err(io::Error::other("the file was replaced while it was read"));
    }
    Ok(File::from(fd))
}

fn read_all(target: &Target, dir: &OwnedFd, name: &OsStr) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    reopen(target, dir, name, OFlags::RDONLY)?.read_to_end(&mut buf)?;
    Ok(buf)
}

/// Refuses anything but a regular file.
fn check_regular(mode: u32, shown: &Path) -> io::Result<()> {
    let kind = match FileType::from_raw_mode(mode) {
        FileType::RegularFile => return Ok(()),
        FileType::Directory => {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{} is a directory", shown.display()),
            ));
        }
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        _ => "not a regular file",
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {kind}; only regular files can be written",
            shown.display()
        ),
    ))
}

/// Writes an existing (locked) file: atomic replace where nobody can tell,
/// in place otherwise.
fn write_existing(target: &Target, data: &[u8], shown: &Path) -> io::Result<WriteOutcome> {
    let replaced = if target.created {
        WriteMethod::Created
    } else {
        WriteMethod::Replaced
    };
    let place = locate(target);
    let reason = match &place {
        Err(reason) => reason.clone(),
        Ok(place) => match rename_obstacle(&target.stat, &place.dir) {
            Some(reason) => reason,
            None => match replace_by_rename(place, target, data) {
                Ok(()) => {
                    return Ok(WriteOutcome {
                        method: replaced,
                        reason: None,
                    });
                }
                Err(Fallback::InPlace(reason)) => reason,
                Err(Fallback::Fail(e)) => return Err(e),
            },
        },
    };
    tracing::debug!(path = %shown.display(), %reason, "writing in place");
    write_in_place(target, place.ok().as_ref(), data, shown)?;
    Ok(WriteOutcome {
        method: WriteMethod::InPlace,
        reason: Some(reason),
    })
}

/// The directory entry of the resolved file.
struct Place {
    dir: OwnedFd,
    dir_path: PathBuf,
    name: OsString,
}

/// Finds the directory entry that names the file the kernel resolved (not a
/// path made by hand), checking it still names that file.
fn locate(target: &Target) -> Result<Place, String> {
    let real = std::fs::read_link(proc_fd(&target.file))
        .map_err(|e| format!("its location cannot be read from /proc ({e})"))?;
    let (Some(dir_path), Some(name)) = (real.parent(), real.file_name()) else {
        return Err("its location is not a file name".to_string());
    };
    let dir = rustix::fs::openat(
        CWD,
        dir_path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("its directory cannot be opened ({e})"))?;
    match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if same_file(&st, &target.stat) => Ok(Place {
            dir,
            dir_path: dir_path.to_path_buf(),
            name: name.to_os_string(),
        }),
        _ => Err("its directory entry moved while it was being written".to_string()),
    }
}

/// Why an existing file must not be replaced by a new inode, if anything
/// visible to the caller forbids it up front. Ownership and attributes are
/// checked by trying to carry them over (see [`replace_by_rename`]).
fn rename_obstacle(stat: &Stat, dir: &OwnedFd) -> Option<String> {
    if stat.st_nlink > 1 {
        return Some(format!(
            "the file has {} hard links; a new inode would split them",
            stat.st_nlink
        ));
    }
    let dir_ok = rustix::fs::accessat(
        dir,
        ".",
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
        AtFlags::EACCESS,
    );
    if dir_ok.is_err() {
        return Some("its directory is not writable".to_string());
    }
    None
}

/// Why [`replace_by_rename`] did not replace the file.
enum Fallback {
    /// Replacing would change something visible; write in place instead.
    InPlace(String),
    /// A real failure (disk full, I/O error): report it.
    Fail(io::Error),
}

impl From<io::Error> for Fallback {
    fn from(e: io::Error) -> Self {
        Fallback::Fail(e)
    }
}

impl From<Errno> for Fallback {
    fn from(e: Errno) -> Self {
        Fallback::Fail(e.into())
    }
}

/// Errors of a rename that writing in place avoids: a bind-mounted file
/// (`EBUSY`), a sticky directory (`EPERM`), an unwritable directory, another
/// file system.
fn rename_refusal(e: &io::Error) -> bool {
    matches!(
        Errno::from_io_error(e),
        Some(Errno::BUSY | Errno::PERM | Errno::ACCESS | Errno::XDEV | Errno::ROFS)
    )
}

fn is_permission_error(e: &io::Error) -> bool {
    matches!(
        Errno::from_io_error(e),
        Some(Errno::PERM | Errno::ACCESS | Errno::ROFS)
    )
}
