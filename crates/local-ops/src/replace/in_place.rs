//! Writing into the same inode: the synced backup made first, the write,
//! and where the backup goes.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, CWD, Mode, OFlags};

use crate::random::random_hex;

use super::{BACKUP_INFIX, BACKUP_NAME_KEEP, Place, Target, proc_fd};

/// A synced copy of a file's old content.
struct Backup {
    dir: OwnedFd,
    name: OsString,
    shown: PathBuf,
}

impl Backup {
    fn open(&self) -> io::Result<File> {
        Ok(File::from(rustix::fs::openat(
            &self.dir,
            &self.name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?))
    }

    fn remove(&self) {
        let _ = rustix::fs::unlinkat(&self.dir, &self.name, AtFlags::empty());
    }
}

/// The error for an in-place write that cannot be made safe.
fn no_backup(shown: &Path, why: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!(
        "{} must be written in place (same inode), and no backup of its old content could be made ({why}), so a failed write could lose it; nothing was written",
        shown.display()
    ))
}

/// Writes `data` into the target's inode, keeping a synced backup of the
/// old content until the new content is synced; refuses when no backup can
/// be made.
pub(super) fn write_in_place(
    target: &Target,
    place: Option<&Place>,
    data: &[u8],
    shown: &Path,
) -> io::Result<()> {
    // Read through the descriptor the kernel resolved: the same inode.
    let mut old = match rustix::fs::openat(
        CWD,
        proc_fd(&target.file),
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => File::from(fd),
        Err(e) => {
            return Err(no_backup(
                shown,
                format_args!("the file cannot be read: {}", io::Error::from(e)),
            ));
        }
    };
    let backup = make_backup(&mut old, shown, place).map_err(|e| no_backup(shown, e))?;
    let file = &target.file;
    let written = (|| {
        file.write_all_at(data, 0)?;
        file.set_len(data.len() as u64)?;
        file.sync_all()
    })();
    match written {
        Ok(()) => {
            backup.remove();
            Ok(())
        }
        Err(e) => {
            // Put the old content back; keep the backup if even that fails.
            let restored = (|| {
                let mut saved = Vec::new();
                backup.open()?.read_to_end(&mut saved)?;
                file.write_all_at(&saved, 0)?;
                file.set_len(saved.len() as u64)?;
                file.sync_all()
            })();
            match restored {
                Ok(()) => {
                    backup.remove();
                    Err(e)
                }
                Err(_) => Err(io::Error::new(
                    e.kind(),
                    format!(
                        "{e}; the file may be damaged, its old content is kept in {}",
                        backup.shown.display()
                    ),
                )),
            }
        }
    }
}

/// The backup's name: the file's name (shortened to [`BACKUP_NAME_KEEP`]
/// bytes), the infix and a random part; always far below `NAME_MAX`.
fn backup_name(shown: &Path) -> OsString {
    let name = shown.file_name().map(OsStr::as_bytes).unwrap_or_default();
    let mut kept = &name[..name.len().min(BACKUP_NAME_KEEP)];
    // Do not end in the middle of a UTF-8 character.
    while let Err(e) = std::str::from_utf8(kept) {
        if e.error_len().is_some() {
            break; // not UTF-8 anyway: bytes are fine
        }
        kept = &kept[..e.valid_up_to()];
    }
    let mut out = b".".to_vec();
    out.extend_from_slice(kept);
    out.extend_from_slice(BACKUP_INFIX.as_bytes());
    out.extend_from_slice(random_hex().as_bytes());
    std::os::unix::ffi::OsStringExt::from_vec(out)
}

/// Copies `old` to a synced, private backup file beside the file (`place`),
/// or in the system temp directory when that fails.
fn make_backup(old: &mut File, shown: &Path, place: Option<&Place>) -> io::Result<Backup> {
    let mut first_error = None;
    let temp = std::env::temp_dir();
    let beside = place.map(|p| (p.dir.try_clone(), p.dir_path.clone()));
    let temp_dir = rustix::fs::openat(
        CWD,
        &temp,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from);
    let candidates = beside.into_iter().chain(std::iter::once((temp_dir, temp)));
    for (dir, dir_path) in candidates {
        let result = dir.and_then(|dir| {
            let name = backup_name(shown);
            let fd = rustix::fs::openat(
                &dir,
                &name,
                OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )?;
            let backup = Backup {
                shown: dir_path.join(&name),
                dir,
                name,
            };
            let copied = (|| {
                let mut file = File::from(fd);
                io::copy(old, &mut file)?;
                file.sync_all()
            })();
            match copied {
                Ok(()) => Ok(backup),
                Err(e) => {
                    backup.remove();
                    Err(e)
                }
            }
        });
        match result {
            Ok(b) => return Ok(b),
            Err(e) => {
                // Start over from the beginning for the next place.
                let _ = std::io::Seek::rewind(old);
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| io::Error::other("no place for a backup")))
}
