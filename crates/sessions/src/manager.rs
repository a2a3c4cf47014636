//! [`SessionManager`]: one session file, appended to entry by entry.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use agent_ai::Message;
use serde_json::Value;

use crate::context::{SessionContext, build_context};
use crate::entry::{
    EntryKind, SESSION_VERSION, SessionEntry, SessionHeader, iso_now, new_entry_id,
};

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

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SessionError + '_ {
    move |source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A session: its header, its entries (a tree by `parentId`) and the
/// current leaf, persisted as JSONL in Pi's version-3 layout.
///
/// Every entry is appended to the file and flushed to the kernel as it is
/// added; the file is never rewritten, so a crash loses at most the line
/// being written. Loading skips a torn or unreadable line with a warning,
/// and the messages handed to the model always have a result for every
/// tool call (see [`build_context`](crate::build_context)).
///
/// ```
/// use agent_sessions::SessionManager;
/// let dir = tempfile::tempdir().unwrap();
/// let mut session = SessionManager::create(dir.path(), dir.path().join("sessions")).unwrap();
/// session.append_message(&agent_ai::Message::user("hello")).unwrap();
/// let file = session.session_file().unwrap().to_path_buf();
/// let reopened = SessionManager::open(&file).unwrap();
/// assert_eq!(reopened.context().messages.len(), 1);
/// ```
#[derive(Debug)]
pub struct SessionManager {
    pub(crate) cwd: PathBuf,
    pub(crate) session_dir: Option<PathBuf>,
    pub(crate) file: Option<PathBuf>,
    pub(crate) header: SessionHeader,
    pub(crate) entries: Vec<SessionEntry>,
    pub(crate) by_id: HashMap<String, usize>,
    pub(crate) leaf: Option<String>,
    pub(crate) writer: Option<File>,
    pub(crate) warnings: Vec<String>,
}

impl SessionManager {
    pub(crate) fn blank(cwd: &Path, session_dir: Option<PathBuf>) -> Self {
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

    /// A new session for `cwd` in `session_dir` (Pi's is
    /// [`default_session_dir`](crate::default_session_dir)). The file
    /// appears with the first entry.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn create(cwd: &Path, session_dir: PathBuf) -> Result<Self, SessionError> {
        let mut manager = Self::blank(cwd, Some(session_dir));
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

    pub(crate) fn index(&mut self, entry: SessionEntry) {
        self.leaf = Some(entry.id.clone());
        self.by_id.insert(entry.id.clone(), self.entries.len());
        self.entries.push(entry);
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
        self.append(EntryKind::Message {
            message: message.clone(),
        })
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

    /// Appends a thinking level change.
    ///
    /// # Errors
    /// As [`SessionManager::append`].
    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String, SessionError> {
        self.append(EntryKind::ThinkingLevelChange {
            thinking_level: level.into(),
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

    /// The thinking level last recorded on the current branch (a
    /// `thinking_level_change` entry), `None` when none was or it is not a
    /// level this agent knows: what a resumed session goes on with.
    ///
    /// ```
    /// use agent_sessions::SessionManager;
    /// let mut session = SessionManager::in_memory(std::path::Path::new("/tmp"));
    /// assert_eq!(session.recorded_thinking_level(), None);
    /// session.append_thinking_level_change("high").unwrap();
    /// assert_eq!(session.recorded_thinking_level(), Some(agent_ai::ThinkingLevel::High));
    /// ```
    pub fn recorded_thinking_level(&self) -> Option<agent_ai::ThinkingLevel> {
        self.path_to(self.leaf.as_deref())
            .into_iter()
            .rev()
            .find_map(|entry| match &entry.kind {
                EntryKind::ThinkingLevelChange { thinking_level } => Some(thinking_level),
                _ => None,
            })
            .and_then(|level| level.parse().ok())
    }

    /// The messages of the current branch, for the model.
    pub fn context(&self) -> SessionContext {
        build_context(&self.path_to(self.leaf.as_deref()))
    }

    /// The entries of the current branch, root first.
    pub fn branch_entries(&self) -> Vec<&SessionEntry> {
        self.path_to(self.leaf.as_deref())
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
}

/// `mkdir -p` where the directories made are the owner's alone (0700).
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}
