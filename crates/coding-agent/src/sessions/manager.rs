//! [`SessionManager`]: one session file, appended to entry by entry.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use agent_ai::Message;
use serde_json::Value;

use super::context::{SessionContext, build_context};
use super::entry::{
    EntryKind, SESSION_VERSION, SessionEntry, SessionHeader, iso_now, new_entry_id,
    parse_iso_millis,
};
use crate::settings::agent_dir;

/// What can go wrong with a session file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Reading or writing failed.
    #[error("session file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file has no session header.
    #[error("{} is not a session file (no session header)", .0.display())]
    NotASession(PathBuf),
    /// No session matches.
    #[error("no session matches {0:?}")]
    NotFound(String),
    /// Several sessions match an id prefix.
    #[error("{0:?} matches several sessions: {1}")]
    Ambiguous(String, String),
    /// An entry id that is not in the session.
    #[error("no entry {0} in this session")]
    NoEntry(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SessionError + '_ {
    move |source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A session file found by [`SessionManager::list`].
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    /// The file.
    pub path: PathBuf,
    /// The session id.
    pub id: String,
    /// Its working directory.
    pub cwd: String,
    /// When it was created (ms since the epoch).
    pub created: i64,
    /// When it was last written (ms since the epoch).
    pub modified: i64,
    /// Its display name, if set.
    pub name: Option<String>,
    /// The first user message's text (for pickers).
    pub first_message: String,
    /// How many message entries it has.
    pub message_count: usize,
}

/// A session: its header, its entries (a tree by `parentId`) and the
/// current leaf, persisted as JSONL in Pi's version-3 layout.
///
/// Every entry is appended to the file and flushed to the kernel as it is
/// added; the file is never rewritten, so a crash loses at most the line
/// being written. Loading skips a torn or unreadable line with a warning,
/// and the messages handed to the model always have a result for every
/// tool call (see [`build_context`](super::build_context)).
///
/// ```
/// use coding_agent::sessions::SessionManager;
/// let dir = tempfile::tempdir().unwrap();
/// let mut session = SessionManager::create(dir.path(), Some(dir.path().join("sessions"))).unwrap();
/// session.append_message(&agent_ai::Message::user("hello")).unwrap();
/// let file = session.session_file().unwrap().to_path_buf();
/// let reopened = SessionManager::open(&file).unwrap();
/// assert_eq!(reopened.context().messages.len(), 1);
/// ```
#[derive(Debug)]
pub struct SessionManager {
    cwd: PathBuf,
    session_dir: Option<PathBuf>,
    file: Option<PathBuf>,
    header: SessionHeader,
    entries: Vec<SessionEntry>,
    by_id: HashMap<String, usize>,
    leaf: Option<String>,
    writer: Option<File>,
    warnings: Vec<String>,
}

/// Whether a session recorded for `recorded` belongs to `cwd` (the same
/// text, or the same directory once symlinks are resolved). A session
/// without a recorded directory is kept: nothing says it is another's.
fn same_directory(recorded: &str, cwd: &Path) -> bool {
    if recorded.is_empty() || Path::new(recorded) == cwd {
        return true;
    }
    match (std::fs::canonicalize(recorded), std::fs::canonicalize(cwd)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `--<cwd with / replaced by ->--`, as Pi names session directories.
pub fn session_dir_name(cwd: &Path) -> String {
    let text = cwd.to_string_lossy();
    let trimmed = text.trim_start_matches(['/', '\\']);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

/// `<agent dir>/sessions/--<cwd>--`.
pub fn default_session_dir(cwd: &Path) -> Option<PathBuf> {
    agent_dir().map(|d| d.join("sessions").join(session_dir_name(cwd)))
}

impl SessionManager {
    fn blank(cwd: &Path, session_dir: Option<PathBuf>) -> Self {
        SessionManager {
            cwd: cwd.to_path_buf(),
            session_dir,
            file: None,
            header: SessionHeader {
                kind: "session".into(),
                version: SESSION_VERSION,
                id: uuid::Uuid::new_v4().to_string(),
                timestamp: iso_now(),
                cwd: cwd.display().to_string(),
                parent_session: None,
                remote: None,
            },
            entries: Vec::new(),
            by_id: HashMap::new(),
            leaf: None,
            writer: None,
            warnings: Vec::new(),
        }
    }

    /// A new session for `cwd` in `session_dir` (default:
    /// [`default_session_dir`]). The file appears with the first entry.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn create(cwd: &Path, session_dir: Option<PathBuf>) -> Result<Self, SessionError> {
        let dir = session_dir.or_else(|| default_session_dir(cwd));
        let mut manager = Self::blank(cwd, dir);
        manager.new_session(None)?;
        Ok(manager)
    }

    /// A new session written to `path` (opened instead when it exists).
    ///
    /// # Errors
    /// As [`SessionManager::open`]; a parent directory that cannot be created.
    pub fn open_or_create(path: &Path, cwd: &Path) -> Result<Self, SessionError> {
        if path.exists() {
            return Self::open(path);
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(io(dir))?;
        }
        let mut manager = Self::blank(cwd, path.parent().map(Path::to_path_buf));
        manager.file = Some(path.to_path_buf());
        Ok(manager)
    }

    /// A session kept in memory only.
    pub fn in_memory(cwd: &Path) -> Self {
        Self::blank(cwd, None)
    }

    /// Opens an existing file; its last entry is the leaf.
    ///
    /// # Errors
    /// The file cannot be read or has no session header.
    pub fn open(path: &Path) -> Result<Self, SessionError> {
        let bytes = std::fs::read(path).map_err(io(path))?;
        Self::parse(path, &bytes)
    }

    /// Builds the manager from a file's bytes (invalid UTF-8, e.g. a torn
    /// multi-byte character, is replaced, not fatal).
    fn parse(path: &Path, bytes: &[u8]) -> Result<Self, SessionError> {
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
            match SessionEntry::from_json(&value) {
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

    fn index(&mut self, entry: SessionEntry) {
        self.leaf = Some(entry.id.clone());
        self.by_id.insert(entry.id.clone(), self.entries.len());
        self.entries.push(entry);
    }

    /// The most recent session of `cwd` in `session_dir`, or a new one.
    ///
    /// # Errors
    /// As [`SessionManager::open`] and [`SessionManager::create`].
    pub fn continue_recent(cwd: &Path, session_dir: Option<PathBuf>) -> Result<Self, SessionError> {
        let dir = session_dir.or_else(|| default_session_dir(cwd));
        if let Some(dir) = &dir {
            // The newest session we may trust; checked again on the open
            // file, so one swapped in after the listing is not taken either.
            for info in Self::list_dir(dir)
                .into_iter()
                .filter(|i| same_directory(&i.cwd, cwd))
            {
                match read_trusted_session(&info.path) {
                    Ok(bytes) => return Self::parse(&info.path, &bytes),
                    Err(reason) => {
                        tracing::info!(path = %info.path.display(), %reason, "skipping session file")
                    }
                }
            }
        }
        Self::create(cwd, dir)
    }

    /// The sessions of `cwd`, most recently written first.
    ///
    /// Only files we may trust are listed (so `-c`, `-r` and `/resume`
    /// never pick up another user's file in a shared directory): regular
    /// files (not symbolic links) owned by the current user and not writable
    /// by everyone, the rules of context files (`AGENTS.md`) except that a
    /// file of root's is not ours to append to either.
    /// Others are skipped, the skip logged at `info` level.
    ///
    /// Sessions recorded for another directory are left out: two
    /// directories can share a folder name (`/a/b-c` and `/a-b/c` both
    /// become `--a-b-c--`), and one project's transcript must not be
    /// continued from the other.
    pub fn list(cwd: &Path, session_dir: Option<PathBuf>) -> Vec<SessionInfo> {
        match session_dir.or_else(|| default_session_dir(cwd)) {
            Some(dir) => Self::list_dir(&dir)
                .into_iter()
                .filter(|i| same_directory(&i.cwd, cwd))
                .collect(),
            None => Vec::new(),
        }
    }

    fn list_dir(dir: &Path) -> Vec<SessionInfo> {
        let Ok(read) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut out: Vec<SessionInfo> = read
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            .filter_map(|e| {
                let path = e.path();
                match read_trusted_session(&path) {
                    Ok(bytes) => session_info(&path, &bytes),
                    Err(reason) => {
                        tracing::info!(path = %path.display(), %reason, "skipping session file");
                        None
                    }
                }
            })
            .collect();
        out.sort_by(|a, b| b.modified.cmp(&a.modified).then(b.created.cmp(&a.created)));
        out
    }

    /// The session of `cwd` whose id (or file name) starts with `prefix`.
    ///
    /// # Errors
    /// None or several match.
    pub fn find(
        cwd: &Path,
        session_dir: Option<PathBuf>,
        prefix: &str,
    ) -> Result<PathBuf, SessionError> {
        let matches: Vec<SessionInfo> = Self::list(cwd, session_dir)
            .into_iter()
            .filter(|s| {
                s.id.starts_with(prefix)
                    || s.path
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
            .collect();
        match matches.len() {
            0 => Err(SessionError::NotFound(prefix.to_string())),
            1 => Ok(matches[0].path.clone()),
            _ => Err(SessionError::Ambiguous(
                prefix.to_string(),
                matches
                    .iter()
                    .map(|m| m.id.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
            )),
        }
    }

    /// Starts a new, empty session in the same directory (its file appears
    /// with the first entry).
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn new_session(&mut self, parent_session: Option<String>) -> Result<(), SessionError> {
        let keep_dir = self.session_dir.clone();
        let cwd = self.cwd.clone();
        *self = Self::blank(&cwd, keep_dir);
        self.header.parent_session = parent_session;
        if let Some(dir) = &self.session_dir {
            create_private_dir(dir).map_err(io(dir))?;
            let stamp = self.header.timestamp.replace([':', '.'], "-");
            self.file = Some(dir.join(format!("{stamp}_{}.jsonl", self.header.id)));
        }
        Ok(())
    }

    /// Writes one line, and the header first when the file is new.
    fn persist(&mut self, entry: &SessionEntry) -> Result<(), SessionError> {
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        if self.writer.is_none() {
            let exists = path.exists();
            // Transcripts hold what the tools read: only the owner reads them.
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .read(true)
                .mode(0o600)
                .open(&path)
                .map_err(io(&path))?;
            let meta = file.metadata().map_err(io(&path))?;
            if !meta.is_file() || meta.uid() != rustix::process::geteuid().as_raw() {
                return Err(SessionError::Io {
                    path: path.clone(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::PermissionDenied,
                        format!(
                            "not a regular file of yours (owner uid {}); nothing appended",
                            meta.uid()
                        ),
                    ),
                });
            }
            let len = meta.len();
            if !exists || len == 0 {
                let header = serde_json::to_string(&self.header).unwrap_or_default();
                file.write_all(format!("{header}\n").as_bytes())
                    .map_err(io(&path))?;
            } else {
                // After a torn last line, start on a fresh one.
                let mut last = [0u8; 1];
                file.seek(SeekFrom::End(-1)).map_err(io(&path))?;
                file.read_exact(&mut last).map_err(io(&path))?;
                if last[0] != b'\n' {
                    file.write_all(b"\n").map_err(io(&path))?;
                }
            }
            self.writer = Some(file);
        }
        let line = format!("{}\n", entry.to_json());
        if let Some(file) = self.writer.as_mut() {
            // One write per entry; the kernel has it before the call returns.
            file.write_all(line.as_bytes()).map_err(io(&path))?;
        }
        Ok(())
    }

    /// Adds an entry after the leaf and makes it the leaf; returns its id.
    ///
    /// # Errors
    /// The line cannot be written (the entry is kept in memory anyway).
    pub fn append(&mut self, kind: EntryKind) -> Result<String, SessionError> {
        let entry = SessionEntry {
            id: new_entry_id(|c| self.by_id.contains_key(c)),
            parent_id: self.leaf.clone(),
            timestamp: iso_now(),
            kind,
        };
        let id = entry.id.clone();
        let written = self.persist(&entry);
        self.index(entry);
        written.map(|()| id)
    }

    /// Appends a message.
    ///
    /// # Errors
    /// As [`SessionManager::append`].
    pub fn append_message(&mut self, message: &Message) -> Result<String, SessionError> {
        let message = serde_json::to_value(message).unwrap_or(Value::Null);
        self.append(EntryKind::Message { message })
    }

    /// Appends a model change.
    ///
    /// # Errors
    /// As [`SessionManager::append`].
    pub fn append_model_change(
        &mut self,
        provider: &str,
        model_id: &str,
    ) -> Result<String, SessionError> {
        self.append(EntryKind::ModelChange {
            provider: provider.into(),
            model_id: model_id.into(),
        })
    }

    /// Appends a compaction.
    ///
    /// # Errors
    /// As [`SessionManager::append`].
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: &str,
        tokens_before: u64,
        details: Option<Value>,
    ) -> Result<String, SessionError> {
        self.append(EntryKind::Compaction {
            summary: summary.into(),
            first_kept_entry_id: first_kept_entry_id.into(),
            tokens_before,
            details,
            from_hook: None,
        })
    }

    /// Sets the session's display name.
    ///
    /// # Errors
    /// As [`SessionManager::append`].
    pub fn set_name(&mut self, name: &str) -> Result<String, SessionError> {
        self.append(EntryKind::SessionInfo {
            name: Some(name.into()),
        })
    }

    /// Moves the leaf to `entry_id`: the next entry starts a branch there.
    ///
    /// # Errors
    /// [`SessionError::NoEntry`].
    pub fn branch(&mut self, entry_id: &str) -> Result<(), SessionError> {
        if !self.by_id.contains_key(entry_id) {
            return Err(SessionError::NoEntry(entry_id.into()));
        }
        self.leaf = Some(entry_id.to_string());
        Ok(())
    }

    /// The leaf before any entry: the next entry starts a new root.
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// A new session file holding the path from the root to `entry_id`
    /// (`None`: the leaf), with this file as `parentSession`. The new
    /// session's leaf is that entry.
    ///
    /// # Errors
    /// [`SessionError::NoEntry`], or the new file cannot be written.
    pub fn fork(&self, entry_id: Option<&str>) -> Result<SessionManager, SessionError> {
        let at = match entry_id {
            Some(id) => Some(
                self.by_id
                    .get(id)
                    .map(|_| id.to_string())
                    .ok_or_else(|| SessionError::NoEntry(id.into()))?,
            ),
            None => self.leaf.clone(),
        };
        let mut fork = Self::blank(&self.cwd, self.session_dir.clone());
        let parent = self.file.as_ref().map(|p| p.display().to_string());
        fork.new_session(parent)?;
        let path: Vec<SessionEntry> = self.path_to(at.as_deref()).into_iter().cloned().collect();
        for entry in path {
            fork.persist(&entry)?;
            fork.index(entry);
        }
        Ok(fork)
    }

    /// The entries from the root to `leaf` (`None`: empty).
    pub fn path_to(&self, leaf: Option<&str>) -> Vec<&SessionEntry> {
        let mut path = Vec::new();
        let mut current = leaf
            .and_then(|id| self.by_id.get(id))
            .map(|&i| &self.entries[i]);
        let mut seen = std::collections::HashSet::new();
        while let Some(entry) = current {
            // Cycles are cut on load; this guards entries added since.
            if !seen.insert(entry.id.as_str()) {
                tracing::debug!(entry = %entry.id, "a cycle in the parent links; path cut");
                break;
            }
            path.push(entry);
            current = entry
                .parent_id
                .as_deref()
                .and_then(|p| self.by_id.get(p))
                .map(|&i| &self.entries[i]);
        }
        path.reverse();
        path
    }

    /// The messages of the current branch, for the model.
    pub fn context(&self) -> SessionContext {
        build_context(&self.path_to(self.leaf.as_deref()))
    }

    /// Every entry, in file order.
    pub fn entries(&self) -> &[SessionEntry] {
        &self.entries
    }

    /// An entry by id.
    pub fn entry(&self, id: &str) -> Option<&SessionEntry> {
        self.by_id.get(id).map(|&i| &self.entries[i])
    }

    /// The entries whose parent is `id` (`None`: the roots).
    pub fn children(&self, id: Option<&str>) -> Vec<&SessionEntry> {
        self.entries
            .iter()
            .filter(|e| e.parent_id.as_deref() == id)
            .collect()
    }

    /// The current leaf.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// Records where the tools run (a remote URI) in the header. A file
    /// already written keeps the header it has.
    pub fn set_remote(&mut self, remote: impl Into<String>) {
        self.header.remote = Some(remote.into());
    }

    /// The header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.header.id
    }

    /// The file (`None` in memory).
    pub fn session_file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The directory new sessions go to.
    pub fn session_dir(&self) -> Option<&Path> {
        self.session_dir.as_deref()
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The latest display name.
    pub fn name(&self) -> Option<String> {
        self.entries.iter().rev().find_map(|e| match &e.kind {
            EntryKind::SessionInfo { name } => Some(name.clone()),
            _ => None,
        })?
    }

    /// Lines skipped while loading.
    pub fn load_warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The tree as text, one entry a line, the current path marked `*`.
    pub fn tree_text(&self) -> String {
        let on_path: std::collections::HashSet<&str> = self
            .path_to(self.leaf.as_deref())
            .iter()
            .map(|e| e.id.as_str())
            .collect();
        let mut out = String::new();
        let mut stack: Vec<(&SessionEntry, usize)> = self
            .children(None)
            .into_iter()
            .rev()
            .map(|e| (e, 0))
            .collect();
        // Entries shown once, even when duplicate ids make the links loop.
        let mut shown = std::collections::HashSet::new();
        while let Some((entry, depth)) = stack.pop() {
            if !shown.insert(std::ptr::from_ref(entry)) {
                continue;
            }
            let mark = if on_path.contains(entry.id.as_str()) {
                '*'
            } else {
                ' '
            };
            let leaf = if self.leaf.as_deref() == Some(entry.id.as_str()) {
                "  <- leaf"
            } else {
                ""
            };
            out.push_str(&format!(
                "{mark} {}{} {}{leaf}\n",
                "  ".repeat(depth),
                entry.id,
                describe(entry)
            ));
            for child in self.children(Some(&entry.id)).into_iter().rev() {
                stack.push((child, depth + 1));
            }
        }
        out
    }
}

/// One line about an entry, for `/tree`.
fn describe(entry: &SessionEntry) -> String {
    let clip = |s: &str| {
        let one_line = s.replace('\n', " ");
        match one_line.char_indices().nth(60) {
            Some((at, _)) => format!("{}...", &one_line[..at]),
            None => one_line,
        }
    };
    match &entry.kind {
        EntryKind::Message { message } => {
            let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
            let text = super::context::message_from_json(message)
                .map(|m| match m {
                    Message::User(u) => u.text(),
                    Message::Assistant(a) => {
                        let calls: Vec<String> = a.tool_calls().map(|c| c.name.clone()).collect();
                        if calls.is_empty() {
                            a.text()
                        } else {
                            format!("[{}] {}", calls.join(", "), a.text())
                        }
                    }
                    Message::ToolResult(r) => format!("{}: {}", r.tool_name, r.text()),
                })
                .unwrap_or_default();
            format!("{role}: {}", clip(&text))
        }
        EntryKind::ModelChange { provider, model_id } => format!("model {provider}/{model_id}"),
        EntryKind::ThinkingLevelChange { thinking_level } => format!("thinking {thinking_level}"),
        EntryKind::Compaction { tokens_before, .. } => {
            format!("compaction ({tokens_before} tokens before)")
        }
        EntryKind::BranchSummary { summary, .. } => format!("branch summary: {}", clip(summary)),
        EntryKind::Custom { custom_type, .. } => format!("custom {custom_type}"),
        EntryKind::CustomMessage { custom_type, .. } => format!("custom message {custom_type}"),
        EntryKind::Label { target_id, label } => format!(
            "label {target_id}: {}",
            label.as_deref().unwrap_or("(cleared)")
        ),
        EntryKind::SessionInfo { name } => format!("name: {}", name.as_deref().unwrap_or("")),
    }
}

/// `mkdir -p` where the directories made are the owner's alone (0700).
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// A session file's bytes if we may trust it: a regular file (a symbolic
/// link is refused), owned by us, not writable by everyone. The
/// checks are made on the opened file, not on the name.
fn read_trusted_session(path: &Path) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    // Not root's either (unlike context files): we could not append to it.
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!("owned by uid {}, not by you", meta.uid()));
    }
    if meta.mode() & 0o002 != 0 {
        return Err("writable by everyone".into());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// Header and summary of one file, without building its tree. Bytes that
/// are not UTF-8 (a torn last line can end inside a character) are replaced.
fn session_info(path: &Path, bytes: &[u8]) -> Option<SessionInfo> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.lines();
    let header: SessionHeader = serde_json::from_str(lines.next()?).ok()?;
    if header.kind != "session" {
        return None;
    }
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let mut info = SessionInfo {
        path: path.to_path_buf(),
        id: header.id.clone(),
        cwd: header.cwd.clone(),
        created: parse_iso_millis(&header.timestamp),
        modified,
        name: None,
        first_message: String::new(),
        message_count: 0,
    };
    for line in lines {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match value.get("type").and_then(Value::as_str) {
            Some("message") => {
                info.message_count += 1;
                if info.first_message.is_empty()
                    && value["message"]["role"] == "user"
                    && let Some(Message::User(u)) =
                        super::context::message_from_json(&value["message"])
                {
                    info.first_message = u.text();
                }
            }
            Some("session_info") => {
                info.name = value
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            }
            _ => {}
        }
    }
    Some(info)
}
