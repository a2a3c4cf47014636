//! Finding sessions: the directory of a working directory, listing,
//! continuing the latest, finding by id prefix.

use std::path::{Path, PathBuf};

use agent_ai::Message;
use serde_json::Value;

use crate::entry::{SessionHeader, parse_iso_millis};
use crate::load::read_trusted_session;
use crate::manager::{SessionError, SessionManager};

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
    /// The session it was forked from (that file's path), if any.
    pub parent_session: Option<String>,
}

/// Whether a session recorded for `recorded` belongs to `cwd` (the same
/// text, or the same directory once symlinks are resolved). A session
/// without a recorded directory is kept: nothing says it is another's.
pub(crate) fn same_directory(recorded: &str, cwd: &Path) -> bool {
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

/// `<agent dir>/sessions/--<cwd>--`, where Pi keeps the sessions of `cwd`.
/// The agent directory is the caller's to find (`~/.pi/agent` or what the
/// environment names): this crate reads no settings or variables.
///
/// ```
/// use std::path::Path;
/// let dir = agent_sessions::default_session_dir(Path::new("/home/u/.pi/agent"), Path::new("/work/p"));
/// assert_eq!(dir, Path::new("/home/u/.pi/agent/sessions/--work-p--"));
/// ```
pub fn default_session_dir(agent_dir: &Path, cwd: &Path) -> PathBuf {
    agent_dir.join("sessions").join(session_dir_name(cwd))
}

impl SessionManager {
    /// The most recent session of `cwd` in `session_dir`, or a new one
    /// there.
    ///
    /// # Errors
    /// As [`SessionManager::open`] and [`SessionManager::create`].
    pub fn continue_recent(cwd: &Path, session_dir: &Path) -> Result<Self, SessionError> {
        // The newest session we may trust; checked again on the open
        // file, so one swapped in after the listing is not taken either.
        for info in Self::list(cwd, session_dir) {
            match read_trusted_session(&info.path) {
                Ok(bytes) => return Self::parse(&info.path, &bytes),
                Err(reason) => {
                    tracing::info!(path = %info.path.display(), %reason, "skipping session file")
                }
            }
        }
        Self::create(cwd, session_dir.to_path_buf())
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
    pub fn list(cwd: &Path, session_dir: &Path) -> Vec<SessionInfo> {
        Self::list_dir(session_dir)
            .into_iter()
            .filter(|i| same_directory(&i.cwd, cwd))
            .collect()
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
    pub fn find(cwd: &Path, session_dir: &Path, prefix: &str) -> Result<PathBuf, SessionError> {
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
}

/// Header and summary of one file, without building its tree. Bytes that
/// are not UTF-8 (a torn last line can end inside a character) are replaced.
pub(crate) fn session_info(path: &Path, bytes: &[u8]) -> Option<SessionInfo> {
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
        parent_session: header.parent_session.clone(),
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
                        crate::context::message_from_json(&value["message"])
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
