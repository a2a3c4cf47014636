//! The atomic path: a new file written unnamed (`O_TMPFILE`) or under a
//! marked temporary name, then linked or renamed into place, and the
//! leftovers of killed writers removed.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rustix::fs::{AtFlags, CWD, FileType, FlockOperation, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use crate::random::random_hex;

use super::attributes::{carry_over_attributes, current_umask};
use super::{
    Fallback, MAX_ATTEMPTS, Place, TEMP_MARKER, TEMP_PREFIX, TEMP_SUFFIX, Target,
    is_permission_error, proc_fd, rename_refusal, same_file,
};

/// A new file in a directory, unnamed (`O_TMPFILE`) where the file system
/// allows, until [`NewFile::link_as`] or [`NewFile::rename_over`] names it.
/// A temporary name it had is removed on drop.
struct NewFile {
    file: File,
    dir: OwnedFd,
    /// The temporary name, when it has one.
    temp_name: Option<OsString>,
}

impl NewFile {
    /// `mode` is what `open(O_CREAT)` would get (the umask or the directory's
    /// default ACL apply); a named temporary starts private and gets the
    /// umask-derived mode.
    fn create(dir: &OwnedFd, mode: u32) -> io::Result<Self> {
        let dir = dir.try_clone()?;
        if Path::new("/proc/self/fd").exists() {
            match rustix::fs::openat(
                &dir,
                ".",
                OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
                Mode::from_raw_mode(mode),
            ) {
                Ok(fd) => {
                    return Ok(NewFile {
                        file: File::from(fd),
                        dir,
                        temp_name: None,
                    });
                }
                // No O_TMPFILE here: a named temporary file instead.
                Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOSYS) => {}
                Err(e) => return Err(e.into()),
            }
        }
        for _ in 0..MAX_ATTEMPTS {
            let name = OsString::from(format!("{TEMP_PREFIX}{}{TEMP_SUFFIX}", random_hex()));
            match rustix::fs::openat(
                &dir,
                &name,
                OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(fd) => {
                    let file = File::from(fd);
                    let new = NewFile {
                        file,
                        dir,
                        temp_name: Some(name),
                    };
                    rustix::fs::fchmod(&new.file, Mode::from_raw_mode(mode & !current_umask()))?;
                    return Ok(new);
                }
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(io::Error::other("no unused temporary file name was found"))
    }

    /// Marks the file as ours before it gets a temporary name: a lock held
    /// while we live, and [`TEMP_MARKER`] naming its destination, which is
    /// what [`remove_stale_temp_files`] checks (never the name alone). Where
    /// user extended attributes are unsupported the file is not marked and
    /// never removed by anyone.
    fn mark(&self, destination: &OsStr) {
        let _ = rustix::fs::flock(&self.file, FlockOperation::NonBlockingLockExclusive);
        let _ = rustix::fs::fsetxattr(
            &self.file,
            TEMP_MARKER,
            destination.as_bytes(),
            rustix::fs::XattrFlags::empty(),
        );
    }

    /// Removes the mark once the file has its final name.
    fn unmark(&self) {
        let _ = rustix::fs::fremovexattr(&self.file, TEMP_MARKER);
    }

    /// Links the unnamed file under `name`; `EEXIST` when `name` is taken.
    fn link_unnamed(&self, name: &OsStr) -> rustix::io::Result<()> {
        rustix::fs::linkat(
            CWD,
            proc_fd(&self.file),
            &self.dir,
            name,
            AtFlags::SYMLINK_FOLLOW,
        )
    }

    /// Gives the file the name `name`, never replacing anything: `Ok(false)`
    /// when the name is taken.
    fn link_as(&mut self, name: &OsStr) -> io::Result<bool> {
        let result = match &self.temp_name {
            None => self.link_unnamed(name),
            Some(temp) => {
                match rustix::fs::renameat_with(
                    &self.dir,
                    temp,
                    &self.dir,
                    name,
                    RenameFlags::NOREPLACE,
                ) {
                    // No RENAME_NOREPLACE here: link (which never replaces).
                    Err(Errno::INVAL | Errno::NOSYS) => {
                        rustix::fs::linkat(&self.dir, temp, &self.dir, name, AtFlags::empty())
                    }
                    Ok(()) => {
                        self.temp_name = None;
                        Ok(())
                    }
                    other => other,
                }
            }
        };
        match result {
            Ok(()) => Ok(true),
            Err(Errno::EXIST) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Renames the file over `name` (atomic replace).
    fn rename_over(&mut self, name: &OsStr) -> io::Result<()> {
        if self.temp_name.is_none() {
            for _ in 0..MAX_ATTEMPTS {
                let temp = OsString::from(format!("{TEMP_PREFIX}{}{TEMP_SUFFIX}", random_hex()));
                match self.link_unnamed(&temp) {
                    Ok(()) => {
                        self.temp_name = Some(temp);
                        break;
                    }
                    Err(Errno::EXIST) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        let Some(temp) = &self.temp_name else {
            return Err(io::Error::other("no unused temporary file name was found"));
        };
        rustix::fs::renameat(&self.dir, temp, &self.dir, name)?;
        self.temp_name = None;
        Ok(())
    }

    /// Syncs the directory, so the new name survives a crash.
    fn sync_dir(&self) {
        if let Ok(d) = rustix::fs::openat(
            &self.dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            let _ = rustix::fs::fsync(d);
        }
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp_name.take() {
            let _ = rustix::fs::unlinkat(&self.dir, &temp, AtFlags::empty());
        }
    }
}

/// Creates `name` in `dir` with `data`, atomically; `Ok(false)` when the
/// name was taken meanwhile (nothing is replaced).
pub(super) fn create_new(dir: &OwnedFd, name: &OsStr, data: &[u8]) -> io::Result<bool> {
    let mut new = NewFile::create(dir, 0o666)?;
    new.file.write_all_at(data, 0)?;
    let named = new.temp_name.is_some();
    if named {
        new.mark(name);
    }
    new.file.sync_all()?;
    if !new.link_as(name)? {
        return Ok(false);
    }
    if named {
        new.unmark();
    }
    new.sync_dir();
    remove_stale_temp_files(dir);
    Ok(true)
}

/// Fills a new file, carries the old file's owner, group, mode and extended
/// attributes over, syncs it and renames it over the resolved entry.
pub(super) fn replace_by_rename(
    place: &Place,
    target: &Target,
    data: &[u8],
) -> Result<(), Fallback> {
    let mut new = match NewFile::create(&place.dir, 0o600) {
        Ok(n) => n,
        Err(e) if is_permission_error(&e) => {
            return Err(Fallback::InPlace(format!(
                "no temporary file can be created in its directory ({e})"
            )));
        }
        Err(e) => return Err(Fallback::Fail(e)),
    };
    new.file.write_all_at(data, 0)?;
    carry_over_attributes(&new.file, target)?;
    new.mark(&place.name);
    new.file.sync_all()?;
    match new.rename_over(&place.name) {
        Ok(()) => new.unmark(),
        Err(e) if rename_refusal(&e) => {
            return Err(Fallback::InPlace(format!(
                "the file cannot be replaced by rename ({e})"
            )));
        }
        Err(e) => return Err(Fallback::Fail(e)),
    }
    new.sync_dir();
    remove_stale_temp_files(&place.dir);
    Ok(())
}

/// Whether `name` has the exact shape of our temporary names.
fn is_temp_name(name: &[u8]) -> bool {
    name.len() == TEMP_PREFIX.len() + 16 + TEMP_SUFFIX.len()
        && name.starts_with(TEMP_PREFIX.as_bytes())
        && name.ends_with(TEMP_SUFFIX.as_bytes())
        && name[TEMP_PREFIX.len()..TEMP_PREFIX.len() + 16]
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

/// Removes temporary files a killed writer left in `dir`: only files that
/// carry our [`TEMP_MARKER`] (set on the file itself, not derived from its
/// name) naming another destination, have one link, and that no live writer
/// holds locked. A user's file is never removed for its name.
fn remove_stale_temp_files(dir: &OwnedFd) {
    let Ok(listing) = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return;
    };
    let Ok(entries) = rustix::fs::Dir::new(listing) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_bytes();
        if !is_temp_name(name) {
            continue;
        }
        let name = OsStr::from_bytes(name);
        // Never open a device or FIFO.
        if !rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
        {
            continue;
        }
        let Ok(fd) = rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            continue;
        };
        let Ok(stat) = rustix::fs::fstat(&fd) else {
            continue;
        };
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile || stat.st_nlink != 1 {
            continue;
        }
        if rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive).is_err() {
            continue; // a live writer holds it
        }
        let mut mark = [0u8; 256];
        let marked = match rustix::fs::fgetxattr(&fd, TEMP_MARKER, &mut mark[..]) {
            Ok(n) => &mark[..n] != name.as_bytes(),
            Err(_) => false,
        };
        if !marked {
            continue;
        }
        // Remove only the file we locked, not one that replaced the name since.
        if rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|now| same_file(&now, &stat))
        {
            tracing::debug!(name = %name.to_string_lossy(), "removing a dead writer's temporary file");
            let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
        }
    }
}
