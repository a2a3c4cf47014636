//! # agent-trust
//!
//! Project trust: whether a project's own settings may run code.
//!
//! A cloned repository is written by someone else. Its `.pi/settings.json`
//! may hold settings that start programs (MCP servers, the shell and its
//! prefix, extensions); those would run outside the sandbox, before any
//! permission rule sees them. It may also hold settings that would weaken
//! the user's own setup (the extensions' timeouts). The caller holds these
//! values back (coding-agent's `Settings::held_back`, its
//! `RUNS_CODE_KEYS` and `WEAKENS_USER_KEYS`) and asks this crate whether
//! the user trusts the project with them. The user trusts a project:
//!
//! - explicitly, with `coding-agent trust [DIR]`, or by answering the
//!   terminal question of an interactive run;
//! - never implicitly: print, JSON, RPC and MCP modes ask nothing and leave
//!   the settings out, with one warning naming the file and the keys.
//!
//! A trust record is kept in the user's agent directory
//! ([`TRUST_FILE_NAME`], mode 0600), keyed by the project's canonical
//! path, and it holds the very values the user approved. If the project's
//! code-running settings change afterwards (a sandboxed command may write
//! `.pi/settings.json` when the directory did not exist yet), they are held
//! back again until the user trusts the new values: trust is given to what
//! the user saw, not to whatever the file says later.
//!
//! The record also pins the files those values run ([`pins`]), by content:
//! every program a project starts (MCP servers, extensions, `shellPath`)
//! starts in the project's directory, so the names resolve to the files
//! pinned. Anything that cannot be pinned completely and exactly (a command
//! line whose files depend on shell expansion, a FIFO, a name that cannot
//! be resolved, more than the budgets [`MAX_PINNED_FILES`] and
//! [`MAX_PINNED_BYTES`]) keeps the project from being trusted for good: it
//! is asked about each time, the question and the warning naming what
//! could not be pinned ([`TrustState::CannotPin`]). A link inside the
//! project to a file outside it is pinned by its target, which the question
//! shows. Records written before pins had this format (`pinFormat` 2) are
//! asked about again, saying why ([`TrustState::Outdated`]).
//!
//! The crate knows no settings format: the held-back values are a JSON
//! object, keyed as in the settings file. Asking the user, and applying
//! the values once trusted, is the caller's part (coding-agent's
//! `resolve_project_trust`).
//!
//! ```
//! use agent_trust::{TrustState, TrustStore};
//! use serde_json::{Map, Value, json};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = TrustStore::at(dir.path().join("trusted-projects.json"));
//! let project = dir.path();
//! // What the caller held back of the project's settings: its shell.
//! let held_back: Map<String, Value> =
//!     serde_json::from_value(json!({"shellPath": "/tmp/evil"})).unwrap();
//! assert_eq!(store.state(project, &held_back).unwrap(), TrustState::NotTrusted);
//!
//! store.trust(project, &held_back).unwrap();
//! assert_eq!(store.state(project, &held_back).unwrap(), TrustState::Trusted);
//!
//! // Other values are not what the user trusted.
//! let changed: Map<String, Value> =
//!     serde_json::from_value(json!({"shellPath": "/tmp/worse"})).unwrap();
//! assert_eq!(store.state(project, &changed).unwrap(), TrustState::Changed);
//! assert!(store.revoke(project).unwrap());
//! ```

use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use agent_tool::path::canonical;
use agent_tool::regular_file::read_regular_file;

pub mod env_vars;
mod pins;
#[cfg(test)]
mod tests;

use pins::PIN_FORMAT;
pub use pins::{MAX_PINNED_BYTES, MAX_PINNED_FILES, Pins, pins};

/// The trust file's name inside the agent directory.
pub const TRUST_FILE_NAME: &str = "trusted-projects.json";

/// The largest file a project controls that is read: settings and context
/// files (coding-agent reads them with this bound), and the trust records
/// themselves (1 MiB). Such files are read only when regular (see
/// [`agent_tool::regular_file`]), so a FIFO cannot hang start-up and a link
/// to `/dev/zero` cannot exhaust memory.
pub const MAX_PROJECT_FILE_BYTES: u64 = 1024 * 1024;

/// Whether a project's held-back settings may be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrustState {
    /// The user trusted the project with exactly these values, and the
    /// files they run hold what they held then.
    Trusted,
    /// No record for the project.
    NotTrusted,
    /// The user trusted the project, but its code-running settings, or the
    /// files they run, have changed since.
    Changed,
    /// Trusted by an earlier version that pinned fewer files: asked again.
    Outdated,
    /// Some of what the values run cannot be pinned (see [`Pins`]): never
    /// trusted for good, asked about each time. One line per thing.
    CannotPin(Vec<String>),
}

/// The trust records could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// The file could not be read, written or parsed.
    #[error("{path}: {message}")]
    File {
        /// The trust file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Some of what the project's values run cannot be pinned, so the
    /// trust is not recorded (see [`Pins::unpinnable`]).
    #[error("{project}: not recorded as trusted: {}", what.join("; "))]
    CannotPin {
        /// The project.
        project: PathBuf,
        /// What cannot be pinned, one line each.
        what: Vec<String>,
    },
    /// The file is not safe to believe: owned by another user, or writable
    /// by others.
    #[error(
        "{path}: not trusted as a record of trust ({why}); fix its owner and mode (0600) or remove it"
    )]
    Unsafe {
        /// The trust file.
        path: PathBuf,
        /// Owner or mode problem.
        why: String,
    },
}

/// The trust records: one JSON file in the user's agent directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    /// The records in the agent directory `dir` (its [`TRUST_FILE_NAME`];
    /// coding-agent's `agent_dir()` finds the user's).
    pub fn in_agent_dir(dir: &Path) -> Self {
        Self::at(dir.join(TRUST_FILE_NAME))
    }

    /// The records in `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        TrustStore { path: path.into() }
    }

    /// The file holding the records.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `project` is trusted with `held_back` (the project's
    /// code-running values, as the caller held them back), the files they
    /// run pinned afresh ([`pins`]).
    ///
    /// # Errors
    /// An unreadable, malformed or unsafe trust file (the caller treats the
    /// project as not trusted).
    pub fn state(
        &self,
        project: &Path,
        held_back: &Map<String, Value>,
    ) -> Result<TrustState, TrustError> {
        self.state_with(project, held_back, &pins(project, held_back))
    }

    /// [`state`](Self::state) with the pins already taken ([`pins`]), so
    /// that the pins a question shows are the ones judged.
    ///
    /// # Errors
    /// As [`state`](Self::state).
    pub fn state_with(
        &self,
        project: &Path,
        held_back: &Map<String, Value>,
        pins: &Pins,
    ) -> Result<TrustState, TrustError> {
        if !pins.unpinnable.is_empty() {
            // Whatever the record says: a record cannot cover it.
            return Ok(TrustState::CannotPin(pins.unpinnable.clone()));
        }
        let records = self.load()?;
        let Some(record) = records.get(&project_key(project)) else {
            return Ok(TrustState::NotTrusted);
        };
        if record.get("settings").and_then(Value::as_object) != Some(held_back) {
            return Ok(TrustState::Changed);
        }
        if record.get("pinFormat").and_then(Value::as_u64) != Some(PIN_FORMAT) {
            return Ok(TrustState::Outdated);
        }
        // The same values, but the files they run may have been rewritten
        // (by a sandboxed command, say).
        Ok(match record.get("files") {
            Some(Value::Object(files)) if *files == pins.files => TrustState::Trusted,
            _ => TrustState::Changed,
        })
    }

    /// Records that the user trusts `project` with `held_back`, and the
    /// files they run as they are now.
    ///
    /// # Errors
    /// The file cannot be read or written; [`TrustError::CannotPin`] (and
    /// nothing recorded) when some of what the values run cannot be pinned.
    pub fn trust(&self, project: &Path, held_back: &Map<String, Value>) -> Result<(), TrustError> {
        self.trust_pinned(project, held_back, &pins(project, held_back))
    }

    /// [`trust`](Self::trust) with the pins already taken ([`pins`]), so
    /// that what was shown is what is recorded.
    ///
    /// # Errors
    /// As [`trust`](Self::trust).
    pub fn trust_pinned(
        &self,
        project: &Path,
        held_back: &Map<String, Value>,
        pins: &Pins,
    ) -> Result<(), TrustError> {
        if !pins.unpinnable.is_empty() {
            return Err(TrustError::CannotPin {
                project: project.to_path_buf(),
                what: pins.unpinnable.clone(),
            });
        }
        let mut records = self.load()?;
        records.insert(
            project_key(project),
            json!({
                "trustedAt": now_millis(),
                "settings": held_back,
                "pinFormat": PIN_FORMAT,
                "files": pins.files,
            }),
        );
        self.save(records)
    }

    /// Removes the record of `project`; whether there was one.
    ///
    /// # Errors
    /// The file cannot be read or written.
    pub fn revoke(&self, project: &Path) -> Result<bool, TrustError> {
        let mut records = self.load()?;
        let removed = records.remove(&project_key(project)).is_some();
        if removed {
            self.save(records)?;
        }
        Ok(removed)
    }

    /// The trusted projects' paths.
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn projects(&self) -> Result<Vec<String>, TrustError> {
        Ok(self.load()?.keys().cloned().collect())
    }

    fn error(&self, message: impl std::fmt::Display) -> TrustError {
        TrustError::File {
            path: self.path.clone(),
            message: message.to_string(),
        }
    }

    pub(crate) fn load(&self) -> Result<Map<String, Value>, TrustError> {
        match std::fs::symlink_metadata(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Map::new()),
            Err(e) => return Err(self.error(e)),
            Ok(meta) => {
                let why = if !meta.file_type().is_file() {
                    Some("not a regular file".to_string())
                } else if meta.uid() != rustix::process::geteuid().as_raw() {
                    Some(format!("owned by uid {}", meta.uid()))
                } else if meta.mode() & 0o022 != 0 {
                    Some(format!(
                        "mode {:o} lets others write it",
                        meta.mode() & 0o777
                    ))
                } else {
                    None
                };
                if let Some(why) = why {
                    return Err(TrustError::Unsafe {
                        path: self.path.clone(),
                        why,
                    });
                }
            }
        }
        let text = read_regular_file(&self.path, MAX_PROJECT_FILE_BYTES)
            .map_err(|e| self.error(e))?
            .unwrap_or_default();
        if text.trim().is_empty() {
            return Ok(Map::new());
        }
        let value: Value = serde_json::from_str(&text).map_err(|e| self.error(e))?;
        match value.get("projects") {
            None => Ok(Map::new()),
            Some(Value::Object(map)) => Ok(map.clone()),
            Some(_) => Err(self.error("`projects` must be an object")),
        }
    }

    pub(crate) fn save(&self, records: Map<String, Value>) -> Result<(), TrustError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| self.error(e))?;
        let text = serde_json::to_string_pretty(&json!({"version": 1, "projects": records}))
            .map_err(|e| self.error(e))?;
        // Written whole beside the file and renamed over it: a crash leaves
        // the old records or the new ones, never half of either.
        let temp = dir.join(format!(
            ".{TRUST_FILE_NAME}.{}.{}",
            std::process::id(),
            now_millis()
        ));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&temp)
            .and_then(|mut file| {
                file.write_all(text.as_bytes())?;
                file.write_all(b"\n")?;
                file.sync_all()
            })
            .and_then(|()| std::fs::rename(&temp, &self.path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(self.error(e));
        }
        Ok(())
    }
}

/// A project's key in the records: its canonical path.
fn project_key(project: &Path) -> String {
    canonical(project).to_string_lossy().into_owned()
}

/// Milliseconds since the Unix epoch (0 before it): when a record was
/// written.
fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
