//! How `write` and `edit` put new content into a file without damaging it.
//!
//! A careful editor chooses per file:
//!
//! - **A new file** is written to a temporary file in the target directory,
//!   synced and renamed into place: readers never see a partial file.
//! - **An existing file** is replaced the same way (atomic rename) only when
//!   nobody can tell the difference: it is a regular file with one link, its
//!   owner, group, mode and extended attributes (ACLs included) can all be
//!   carried over to the new inode, and the directory lets us create and
//!   rename files. Otherwise, and whenever the rename itself is refused (a
//!   bind-mounted file answers `EBUSY`), the content is written **in place**
//!   into the same inode, so hard links, attributes, ownership and open
//!   handles stay. Before an in-place write the old content is copied to a
//!   backup file and synced; the backup is removed once the new content is
//!   synced. A crash in between leaves the backup beside the file (or in the
//!   system temp directory when the file's directory is not writable), named
//!   `.NAME.coding-agent-backup-XXXXXX`.
//!
//! Temporary files of the atomic path are named `.coding-agent-XXXXXX.tmp`
//! and held under an exclusive `flock` while they exist. A later write into
//! the same directory removes only those nobody holds a lock on: the lock is
//! released by the kernel when its holder dies, however it dies, and it means
//! the same thing across containers sharing the directory (unlike a PID).

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

/// How [`write_file`] put the content into the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum WriteMethod {
    /// The file did not exist; it was created through a temporary file.
    Created,
    /// The file was replaced atomically by renaming a complete new file over it.
    Replaced,
    /// The new content was written into the existing file (same inode).
    InPlace,
}

/// What [`write_file`] did, for a tool's `details`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WriteOutcome {
    /// The way the content went in.
    pub method: WriteMethod,
    /// Why an existing file was written in place instead of replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Prefix of the temporary files of the atomic path.
const TEMP_PREFIX: &str = ".coding-agent-";
/// Suffix of the temporary files of the atomic path.
const TEMP_SUFFIX: &str = ".tmp";
/// Symlink hops followed before giving up, as the kernel's `ELOOP` limit.
const MAX_SYMLINK_HOPS: usize = 40;

/// Writes `data` to `path` as described in the [module docs](self).
///
/// Symlinks are followed to their final target, which is created when the
/// link dangles. Directories, FIFOs, sockets and devices are refused, and so
/// is an existing file the caller may not write (as `echo > file` would be).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use tools_builtin::ops::{WriteMethod, write_file};
/// let path = dir.path().join("notes.txt");
/// assert_eq!(write_file(&path, b"one\n").unwrap().method, WriteMethod::Created);
/// assert_eq!(write_file(&path, b"two\n").unwrap().method, WriteMethod::Replaced);
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
/// ```
pub fn write_file(path: &Path, data: &[u8]) -> io::Result<WriteOutcome> {
    let target = follow_symlinks(path)?;
    let dir = parent_dir(&target).to_path_buf();
    let existing = match std::fs::symlink_metadata(&target) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let outcome = match existing {
        None => {
            replace_by_rename(&target, &dir, data, None).map_err(|f| match f {
                Fallback::Fail(e) => e,
                Fallback::InPlace(reason) => io::Error::other(reason),
            })?;
            WriteOutcome {
                method: WriteMethod::Created,
                reason: None,
            }
        }
        Some(meta) => {
            check_regular(&meta, path)?;
            rustix::fs::accessat(
                rustix::fs::CWD,
                &target,
                rustix::fs::Access::WRITE_OK,
                rustix::fs::AtFlags::EACCESS,
            )
            .map_err(io::Error::from)?;
            let refused = match rename_obstacle(&meta, &dir) {
                Some(reason) => Err(reason),
                None => match replace_by_rename(&target, &dir, data, Some(&meta)) {
                    Ok(()) => Ok(()),
                    Err(Fallback::InPlace(reason)) => Err(reason),
                    Err(Fallback::Fail(e)) => return Err(e),
                },
            };
            match refused {
                Ok(()) => WriteOutcome {
                    method: WriteMethod::Replaced,
                    reason: None,
                },
                Err(reason) => {
                    tracing::debug!(path = %target.display(), %reason, "writing in place");
                    write_in_place(&target, &dir, data)?;
                    WriteOutcome {
                        method: WriteMethod::InPlace,
                        reason: Some(reason),
                    }
                }
            }
        }
    };
    remove_stale_temp_files(&dir);
    Ok(outcome)
}

/// The directory holding `path` (`.` for a bare name).
fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Follows a chain of symlinks at the last component of `path`, also when
/// the final target does not exist yet.
fn follow_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_SYMLINK_HOPS {
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)?;
                current = if link.is_absolute() {
                    link
                } else {
                    parent_dir(&current).join(link)
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other(format!(
        "too many levels of symbolic links: {}",
        path.display()
    )))
}

/// Refuses anything but a regular file.
fn check_regular(meta: &std::fs::Metadata, shown: &Path) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        return Ok(());
    }
    if t.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("{} is a directory", shown.display()),
        ));
    }
    let kind = if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {kind}; only regular files can be written",
            shown.display()
        ),
    ))
}

/// Why an existing file must not be replaced by a new inode, if anything
/// visible to the caller forbids it up front. Ownership and attributes are
/// checked by trying to carry them over (see [`replace_by_rename`]).
fn rename_obstacle(meta: &std::fs::Metadata, dir: &Path) -> Option<String> {
    if meta.nlink() > 1 {
        return Some(format!(
            "the file has {} hard links; a new inode would split them",
            meta.nlink()
        ));
    }
    let dir_ok = rustix::fs::accessat(
        rustix::fs::CWD,
        dir,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
        rustix::fs::AtFlags::EACCESS,
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

/// Creates a temporary file next to `target`, locks it, fills and syncs it,
/// carries the old file's owner, group, mode and extended attributes over,
/// and renames it over `target`.
fn replace_by_rename(
    target: &Path,
    dir: &Path,
    data: &[u8],
    existing: Option<&std::fs::Metadata>,
) -> Result<(), Fallback> {
    // A cleaner in another process may lock and unlink our temp file in the
    // instant between its creation and our lock. Once we hold the lock and
    // the name still points at our file, no cleaner will touch it.
    let mut attempts = 0;
    let tmp = loop {
        attempts += 1;
        let tmp = match tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .suffix(TEMP_SUFFIX)
            .tempfile_in(dir)
        {
            Ok(t) => t,
            Err(e) if existing.is_some() && is_permission_error(&e) => {
                return Err(Fallback::InPlace(format!(
                    "no temporary file can be created in its directory ({e})"
                )));
            }
            Err(e) => return Err(Fallback::Fail(e)),
        };
        rustix::fs::flock(tmp.as_file(), rustix::fs::FlockOperation::LockExclusive)
            .map_err(io::Error::from)?;
        let ours = match (
            tmp.as_file().metadata(),
            std::fs::symlink_metadata(tmp.path()),
        ) {
            (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        };
        if ours {
            break tmp;
        }
        if attempts >= 100 {
            return Err(Fallback::Fail(io::Error::other(
                "temporary files keep disappearing from the directory",
            )));
        }
    };
    let mut file = tmp.as_file();
    file.write_all(data)?;
    match existing {
        Some(meta) => carry_over_attributes(tmp.as_file(), meta, target)?,
        None => {
            let mode = 0o666 & !current_umask();
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
    }
    file.sync_all()?;
    match tmp.persist(target) {
        Ok(_) => {}
        Err(e) if existing.is_some() && rename_refusal(&e.error) => {
            return Err(Fallback::InPlace(format!(
                "the file cannot be replaced by rename ({})",
                e.error
            )));
        }
        Err(e) => return Err(Fallback::Fail(e.error)),
    }
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Errors of a rename that writing in place avoids: a bind-mounted file
/// (`EBUSY`), a sticky directory (`EPERM`), an unwritable directory, another
/// file system.
fn rename_refusal(e: &io::Error) -> bool {
    matches!(
        rustix::io::Errno::from_io_error(e),
        Some(
            rustix::io::Errno::BUSY
                | rustix::io::Errno::PERM
                | rustix::io::Errno::ACCESS
                | rustix::io::Errno::XDEV
                | rustix::io::Errno::ROFS
        )
    )
}

fn is_permission_error(e: &io::Error) -> bool {
    matches!(
        rustix::io::Errno::from_io_error(e),
        Some(rustix::io::Errno::PERM | rustix::io::Errno::ACCESS | rustix::io::Errno::ROFS)
    )
}

/// Gives `tmp` the owner, group, mode (from `meta`) and extended attributes
/// of `original`, or says why that is impossible.
fn carry_over_attributes(
    tmp: &File,
    meta: &std::fs::Metadata,
    original: &Path,
) -> Result<(), Fallback> {
    use rustix::fs::{Gid, Uid};
    let (uid, gid) = (meta.uid(), meta.gid());
    let cur = rustix::fs::fstat(tmp).map_err(io::Error::from)?;
    if cur.st_uid != uid || cur.st_gid != gid {
        // Only root may give a file away; a member may set one of its groups.
        rustix::fs::fchown(tmp, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid))).map_err(
            |e| {
                Fallback::InPlace(format!(
                    "its owner or group ({uid}:{gid}) cannot be kept on a new file ({e})"
                ))
            },
        )?;
    }
    // After chown, which clears set-id bits.
    tmp.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
    copy_xattrs(tmp, original)
}

/// Copies every extended attribute of `original` (ACLs are the
/// `system.posix_acl_*` ones) to `tmp`.
fn copy_xattrs(tmp: &File, original: &Path) -> Result<(), Fallback> {
    let names = list_xattrs(original)?;
    for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let Ok(name) = std::ffi::CString::new(name) else {
            continue;
        };
        let value = get_xattr(original, &name)?;
        rustix::fs::fsetxattr(tmp, &name, &value, rustix::fs::XattrFlags::empty()).map_err(
            |e| {
                Fallback::InPlace(format!(
                    "its extended attribute {} cannot be copied ({e})",
                    name.to_string_lossy()
                ))
            },
        )?;
    }
    Ok(())
}

fn list_xattrs(path: &Path) -> io::Result<Vec<u8>> {
    loop {
        let len = match rustix::fs::listxattr_query(path) {
            Ok(n) => n,
            Err(rustix::io::Errno::NOTSUP) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        if len == 0 {
            return Ok(Vec::new());
        }
        let mut buf = vec![0u8; len];
        match rustix::fs::listxattr(path, &mut buf[..]) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            // The list grew between the two calls.
            Err(rustix::io::Errno::RANGE) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

fn get_xattr(path: &Path, name: &std::ffi::CStr) -> io::Result<Vec<u8>> {
    loop {
        let len = rustix::fs::getxattr_query(path, name)?;
        let mut buf = vec![0u8; len];
        match rustix::fs::getxattr(path, name, &mut buf[..]) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(rustix::io::Errno::RANGE) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Writes `data` into the existing file `target` (same inode), keeping a
/// synced backup of the old content until the new content is synced.
fn write_in_place(target: &Path, dir: &Path, data: &[u8]) -> io::Result<()> {
    let readable = OpenOptions::new().read(true).write(true).open(target);
    let mut file = match readable {
        Ok(f) => f,
        // A write-only file: nothing can be backed up, but `echo >` works.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            let mut f = OpenOptions::new().write(true).open(target)?;
            f.write_all(data)?;
            f.set_len(data.len() as u64)?;
            return f.sync_all();
        }
        Err(e) => return Err(e),
    };
    let backup = make_backup(&mut file, target, dir)?;
    let written = (|| {
        file.rewind()?;
        file.write_all(data)?;
        file.set_len(data.len() as u64)?;
        file.sync_all()
    })();
    match written {
        Ok(()) => {
            let _ = std::fs::remove_file(&backup);
            Ok(())
        }
        Err(e) => {
            // Put the old content back; keep the backup if even that fails.
            let restored = (|| {
                let mut old = File::open(&backup)?;
                file.rewind()?;
                let n = io::copy(&mut old, &mut file)?;
                file.set_len(n)?;
                file.sync_all()
            })();
            match restored {
                Ok(()) => {
                    let _ = std::fs::remove_file(&backup);
                    Err(e)
                }
                Err(_) => Err(io::Error::new(
                    e.kind(),
                    format!(
                        "{e}; the file may be damaged, its old content is kept in {}",
                        backup.display()
                    ),
                )),
            }
        }
    }
}

/// Copies the file's current content to a synced, private backup file in
/// `dir`, or in the system temp directory when `dir` is not writable.
fn make_backup(file: &mut File, target: &Path, dir: &Path) -> io::Result<PathBuf> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.coding-agent-backup-");
    let mut builder = tempfile::Builder::new();
    builder
        .prefix(&prefix)
        .permissions(std::fs::Permissions::from_mode(0o600));
    let created = builder
        .tempfile_in(dir)
        .or_else(|_| builder.tempfile_in(std::env::temp_dir()))?;
    let (mut backup, path) = created.keep().map_err(|e| e.error)?;
    file.rewind()?;
    io::copy(file, &mut backup)?;
    backup.sync_all()?;
    Ok(path)
}

/// The process's umask, read without changing it (Linux); `0o022` elsewhere.
fn current_umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

/// Removes temporary files of the atomic path that no live writer holds.
fn remove_stale_temp_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(TEMP_PREFIX) || !name.ends_with(TEMP_SUFFIX) {
            continue;
        }
        let path = entry.path();
        let Ok(file) = OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&path)
        else {
            continue;
        };
        if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            continue; // a live writer holds it
        }
        // Remove only the file we locked, not one that replaced the name since.
        let same = match (file.metadata(), std::fs::symlink_metadata(&path)) {
            (Ok(a), Ok(b)) => a.is_file() && a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        };
        if same {
            tracing::debug!(path = %path.display(), "removing a dead writer's temporary file");
            let _ = std::fs::remove_file(&path);
        }
    }
}
