//! What the pickers write: a label in the open session (through its
//! manager), a name appended to another session's file, a session file
//! deleted. Each returns the line the picker shows, or why it did
//! nothing; none panics on what a user typed or what a file holds.
//!
//! Only a regular file directly inside the sessions directory is renamed
//! or deleted: the file is found by name relative to the directory's own
//! descriptor and never through a symbolic link, so a link planted in the
//! directory is refused, not followed.

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use agent_sessions::{EntryKind, SessionManager};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// Longest label or session name, in characters.
pub const MAX_NAME_CHARS: usize = 500;
/// How much of a file is read to see that it is a session (its header).
const HEADER_BYTES: usize = 64 * 1024;

/// `name` trimmed, when it may be written as `what` (`a label`, `a session
/// name`): no control characters (a name is one line of a terminal), at
/// most [`MAX_NAME_CHARS`].
///
/// ```
/// use agent_tui::pickers::clean_name;
/// assert_eq!(clean_name("a label", "  v1 done ").as_deref(), Ok("v1 done"));
/// assert!(clean_name("a label", "a\u{1b}[2Jb").unwrap_err().contains("control"));
/// ```
///
/// # Errors
/// The text saying why `name` cannot be written.
pub fn clean_name(what: &str, name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.chars().any(char::is_control) {
        return Err(format!("{what} cannot hold control characters; not saved"));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "{what} is longer than {MAX_NAME_CHARS} characters; not saved"
        ));
    }
    Ok(name.to_string())
}

/// Sets (or, with `None` or an empty text, clears) the label of `entry`:
/// a `label` entry appended to the session as Pi appends it (after the
/// leaf, which it becomes).
///
/// # Errors
/// No such entry, a label that [`clean_name`] refuses, or the line could
/// not be written.
pub fn write_label(
    manager: &mut SessionManager,
    entry: &str,
    label: Option<&str>,
) -> Result<String, String> {
    if manager.entry(entry).is_none() {
        return Err(format!("no entry {entry} in this session"));
    }
    let label = match label {
        Some(text) => Some(clean_name("a label", text)?).filter(|l| !l.is_empty()),
        None => None,
    };
    let done = match &label {
        Some(l) => format!("entry {entry} labelled {l:?}"),
        None => format!("label of entry {entry} removed"),
    };
    manager
        .append(EntryKind::Label {
            target_id: entry.to_string(),
            label,
        })
        .map_err(|e| format!("label not saved: {e}"))?;
    Ok(done)
}

/// Names the session in `path` (a file directly in `dir`): a
/// `session_info` entry appended to that file, as Pi's rename does.
///
/// # Errors
/// A name [`clean_name`] refuses or an empty one, a file that is not a
/// regular session file of `dir`, or one that cannot be read or written.
pub fn rename_session(dir: &Path, path: &Path, name: &str) -> Result<String, String> {
    let name = clean_name("a session name", name)?;
    if name.is_empty() {
        return Err("a session name cannot be empty".into());
    }
    let (_dir, file_name, _) = entry_in_dir(dir, path)?;
    let mut manager = SessionManager::open(path).map_err(|e| format!("not renamed: {e}"))?;
    manager
        .set_name(&name)
        .map_err(|e| format!("not renamed: {e}"))?;
    Ok(format!("{} named {name:?}", file_name.to_string_lossy()))
}

/// Deletes the session file `path`, which must be a regular session file
/// directly in `dir` and not `current` (the session open now).
///
/// # Errors
/// Why it was not deleted: outside `dir`, a link or not a regular file,
/// another user's, the open session, not a session file, or the removal
/// failed.
pub fn delete_session(dir: &Path, path: &Path, current: Option<&Path>) -> Result<String, String> {
    let (dir_fd, name, stat) = entry_in_dir(dir, path)?;
    if let Some(current) = current
        && let Ok(meta) = std::fs::metadata(current)
        && meta.dev() == stat.st_dev
        && meta.ino() == stat.st_ino
    {
        return Err("the session open now cannot be deleted".into());
    }
    // Its head, read through the same directory without following links,
    // must be a session header: nothing else is deleted from here.
    let file = rustix::fs::openat(
        &dir_fd,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("not deleted: cannot read it ({e})"))?;
    let opened = rustix::fs::fstat(&file).map_err(|e| format!("not deleted: {e}"))?;
    if opened.st_ino != stat.st_ino || opened.st_dev != stat.st_dev {
        return Err("not deleted: the file changed while it was checked".into());
    }
    let mut head = Vec::new();
    std::fs::File::from(file)
        .take(HEADER_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| format!("not deleted: cannot read it ({e})"))?;
    if !is_session_header(&head) {
        return Err("not deleted: it is not a session file (no session header)".into());
    }
    rustix::fs::unlinkat(&dir_fd, name, AtFlags::empty())
        .map_err(|e| format!("not deleted: {e}"))?;
    Ok(format!("deleted {}", name.to_string_lossy()))
}

/// `path`'s directory opened (it must be `dir`), its file name, and what
/// that name is in the directory without following a link: a regular
/// `.jsonl` file of this user's.
fn entry_in_dir<'a>(
    dir: &Path,
    path: &'a Path,
) -> Result<(OwnedFd, &'a OsStr, rustix::fs::Stat), String> {
    let name = path
        .file_name()
        .filter(|n| n.as_bytes().ends_with(b".jsonl"))
        .ok_or_else(|| format!("{} is not a session file name", path.display()))?;
    let parent = path.parent().unwrap_or(Path::new(""));
    let same_dir = match (std::fs::canonicalize(parent), std::fs::canonicalize(dir)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same_dir {
        return Err(format!(
            "{} is not in the sessions directory {}",
            path.display(),
            dir.display()
        ));
    }
    let dir_fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("cannot open the sessions directory {}: {e}", dir.display()))?;
    let stat = rustix::fs::statat(&dir_fd, name, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| format!("{}: {e}", name.to_string_lossy()))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(format!(
            "{} is a link or not a regular file; left alone",
            name.to_string_lossy()
        ));
    }
    if stat.st_uid != rustix::process::geteuid().as_raw() {
        return Err(format!(
            "{} belongs to another user; left alone",
            name.to_string_lossy()
        ));
    }
    Ok((dir_fd, name, stat))
}

/// Whether the first line of `head` is a session header.
fn is_session_header(head: &[u8]) -> bool {
    let line = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    serde_json::from_slice::<serde_json::Value>(line)
        .ok()
        .is_some_and(|v| v.get("type").and_then(serde_json::Value::as_str) == Some("session"))
}
