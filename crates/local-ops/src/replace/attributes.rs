//! Ownership and mode rules: carrying a file's owner, group, mode and
//! extended attributes (ACLs exactly) over to a new inode, and the umask.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::Mode;
use rustix::io::Errno;

use super::{Fallback, TEMP_MARKER, Target};

/// The access ACL's extended attribute.
const ACL_ACCESS: &str = "system.posix_acl_access";

/// Gives `new` the owner, group, extended attributes (exactly the original's
/// ACL, or none) and mode of the target, or says why that is impossible.
pub(super) fn carry_over_attributes(new: &File, target: &Target) -> Result<(), Fallback> {
    use rustix::fs::{Gid, Uid};
    let meta = &target.stat;
    let (uid, gid) = (meta.st_uid, meta.st_gid);
    let cur = rustix::fs::fstat(new)?;
    if cur.st_uid != uid || cur.st_gid != gid {
        // Only root may give a file away; a member may set one of its groups.
        rustix::fs::fchown(new, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid))).map_err(
            |e| {
                Fallback::InPlace(format!(
                    "its owner or group ({uid}:{gid}) cannot be kept on a new file ({e})"
                ))
            },
        )?;
    }
    let names = list_xattrs(&target.file)?;
    let mut has_acl = false;
    for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = OsStr::from_bytes(name);
        if name == TEMP_MARKER {
            continue;
        }
        has_acl |= name == ACL_ACCESS;
        let value = get_xattr(&target.file, name)?;
        rustix::fs::fsetxattr(new, name, &value, rustix::fs::XattrFlags::empty()).map_err(|e| {
            Fallback::InPlace(format!(
                "its extended attribute {} cannot be copied ({e})",
                name.to_string_lossy()
            ))
        })?;
    }
    if !has_acl {
        // The directory's default ACL gave the new file one the old lacks.
        match rustix::fs::fremovexattr(new, ACL_ACCESS) {
            Ok(()) | Err(Errno::NODATA | Errno::OPNOTSUPP) => {}
            Err(e) => {
                return Err(Fallback::InPlace(format!(
                    "an inherited ACL cannot be removed from a new file ({e})"
                )));
            }
        }
    }
    // Last: chown clears set-id bits, and an ACL sets the group bits.
    rustix::fs::fchmod(new, Mode::from_raw_mode(meta.st_mode & 0o7777))?;
    Ok(())
}

fn list_xattrs(file: &File) -> io::Result<Vec<u8>> {
    loop {
        let len = match rustix::fs::flistxattr_query(file) {
            Ok(n) => n,
            Err(Errno::NOTSUP) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        if len == 0 {
            return Ok(Vec::new());
        }
        let mut buf = vec![0u8; len];
        match rustix::fs::flistxattr(file, &mut buf[..]) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            // The list grew between the two calls.
            Err(Errno::RANGE) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

fn get_xattr(file: &File, name: &OsStr) -> io::Result<Vec<u8>> {
    loop {
        let len = rustix::fs::fgetxattr_query(file, name)?;
        let mut buf = vec![0u8; len];
        match rustix::fs::fgetxattr(file, name, &mut buf[..]) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(Errno::RANGE) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The process's umask, read without changing it (Linux); `0o022` elsewhere.
pub(super) fn current_umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}
