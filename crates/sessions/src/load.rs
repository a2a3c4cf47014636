//! Reading a session file: validation, old layouts, broken trees.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::entry::{SessionEntry, SessionHeader, new_entry_id};
use crate::manager::io;
use crate::manager::{SessionError, SessionManager};

impl SessionManager {
    /// Opens an existing file; its last entry is the leaf.
    ///
    /// # Errors
    /// The file cannot be read or has no session header.
    pub fn open(path: &Path) -> Result<Self, SessionError> {
        // Without blocking on a FIFO: `--session PATH` may name a file in
        // a workspace that a command could have replaced.
        let bytes = open_session(path, Links::Follow)
            .and_then(|(file, meta)| read_all(file, &meta))
            .map_err(io(path))?;
        Self::parse(path, &bytes)
    }

    /// Builds the manager from a file's bytes (invalid UTF-8, e.g. a torn
    /// multi-byte character, is replaced, not fatal).
    pub(crate) fn parse(path: &Path, bytes: &[u8]) -> Result<Self, SessionError> {
        let text = String::from_utf8_lossy(bytes);
        let mut header = None;
        let mut manager = Self::blank(Path::new("/"), path.parent().map(Path::to_path_buf));
        let mut lines = text.split('\n').peekable();
        let mut number = 0;
        while let Some(line) = lines.next() {
            number += 1;
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = match serde_json::from_str(line) {
                Ok(v) => v,
                Err(e) => {
                    let torn = lines.peek().is_none_or(|rest| rest.is_empty());
                    let what = if torn {
                        "a torn last line"
                    } else {
                        "an unreadable line"
                    };
                    let warning =
                        format!("{}: {what} (line {number}) skipped: {e}", path.display());
                    tracing::warn!("{warning}");
                    manager.warnings.push(warning);
                    continue;
                }
            };
            if value.get("type").and_then(Value::as_str) == Some("session") {
                if header.is_none() {
                    header = serde_json::from_value::<SessionHeader>(value).ok();
                }
                continue;
            }
            match SessionEntry::from_json(value) {
                Some(entry) => manager.index(entry),
                None => {
                    let warning = format!(
                        "{}: line {number} is not an entry we know; skipped",
                        path.display()
                    );
                    tracing::debug!("{warning}");
                    manager.warnings.push(warning);
                }
            }
        }
        let header = header.ok_or_else(|| SessionError::NotASession(path.to_path_buf()))?;
        if header.version < 2 {
            manager.migrate_linear();
        }
        manager.cut_cycles(path);
        manager.cwd = PathBuf::from(&header.cwd);
        manager.header = header;
        manager.file = Some(path.to_path_buf());
        Ok(manager)
    }

    /// Version 1 files have no ids: chain the entries in file order.
    fn migrate_linear(&mut self) {
        let mut previous: Option<String> = None;
        for i in 0..self.entries.len() {
            if self.entries[i].id.is_empty() {
                let id = new_entry_id(|c| self.by_id.contains_key(c));
                self.entries[i].id = id;
            }
            self.entries[i].parent_id = previous.clone();
            previous = Some(self.entries[i].id.clone());
        }
        self.by_id = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id.clone(), i))
            .collect();
        self.leaf = previous;
    }

    /// Parent links that loop (an entry its own parent, or a ring) are cut
    /// where the walk from the entry first comes back to itself, the leaf's
    /// path first; the entry there becomes a root. One warning for the file.
    fn cut_cycles(&mut self, path: &Path) {
        const NEW: u8 = 0;
        const ON_WALK: u8 = 1;
        const DONE: u8 = 2;
        let mut state = vec![NEW; self.entries.len()];
        let leaf = self
            .leaf
            .as_deref()
            .and_then(|id| self.by_id.get(id))
            .copied();
        let starts: Vec<usize> = leaf.into_iter().chain(0..self.entries.len()).collect();
        let mut cut = 0usize;
        for start in starts {
            if state[start] != NEW {
                continue;
            }
            let mut walk = Vec::new();
            let mut i = start;
            loop {
                state[i] = ON_WALK;
                walk.push(i);
                let parent = self.entries[i]
                    .parent_id
                    .as_deref()
                    .and_then(|p| self.by_id.get(p))
                    .copied();
                match parent {
                    None => break,
                    Some(p) if state[p] == DONE => break,
                    Some(p) if state[p] == ON_WALK => {
                        self.entries[i].parent_id = None;
                        cut += 1;
                        break;
                    }
                    Some(p) => i = p,
                }
            }
            for j in walk {
                state[j] = DONE;
            }
        }
        if cut > 0 {
            let warning = format!(
                "{}: {cut} cycle(s) in the entries' parent links; each cut at its first repeated entry",
                path.display()
            );
            // Reported once, through `load_warnings` (the CLI prints them).
            tracing::debug!("{warning}");
            self.warnings.push(warning);
        }
    }
}

/// Whether a symbolic link as the file's name is followed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Links {
    Follow,
    Refuse,
}

/// Opens a session file without blocking (a FIFO planted under the name
/// returns at once instead of waiting for a writer), accepted only when the
/// opened descriptor is a regular file.
fn open_session(path: &Path, links: Links) -> std::io::Result<(File, Metadata)> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags =
        rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC | rustix::fs::OFlags::NOCTTY;
    if links == Links::Refuse {
        flags |= rustix::fs::OFlags::NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok((file, meta))
}

fn read_all(mut file: File, meta: &Metadata) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A session file's bytes if we may trust it: a regular file (a symbolic
/// link is refused), owned by us, not writable by everyone. The
/// checks are made on the opened file, not on the name.
pub(crate) fn read_trusted_session(path: &Path) -> Result<Vec<u8>, String> {
    let (file, meta) = open_session(path, Links::Refuse).map_err(|e| e.to_string())?;
    // Not root's either (unlike context files): we could not append to it.
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!("owned by uid {}, not by you", meta.uid()));
    }
    if meta.mode() & 0o002 != 0 {
        return Err("writable by everyone".into());
    }
    read_all(file, &meta).map_err(|e| e.to_string())
}
