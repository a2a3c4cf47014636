//! Project trust: whether a project's own settings may run code.
//!
//! A cloned repository is written by someone else. Its `.pi/settings.json`
//! may hold settings that start programs ([`RUNS_CODE_KEYS`]: MCP servers,
//! the shell and its prefix, and every later key of that kind); those would
//! run outside the sandbox, before any permission rule sees them. It may
//! also hold settings that would weaken the user's own setup
//! ([`WEAKENS_USER_KEYS`]: the extensions' timeouts). So these are held
//! back ([`Settings::held_back`]) until the user trusts the project:
//!
//! - explicitly, with `coding-agent trust [DIR]`, or by answering the
//!   terminal question of an interactive run;
//! - never implicitly: print, JSON, RPC and MCP modes ask nothing and leave
//!   the settings out, with one warning naming the file and the keys.
//!
//! A trust record is kept in the user's agent directory
//! (`trusted-projects.json`, mode 0600), keyed by the project's canonical
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
//! ```
//! use coding_agent::Settings;
//! use coding_agent::trust::{TrustState, TrustStore};
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = TrustStore::at(dir.path().join("trusted-projects.json"));
//! let project = dir.path();
//! let mut settings = Settings::merged(
//!     json!({"shellPath": "/bin/bash"}),
//!     json!({"shellPath": "/tmp/evil", "bashTimeoutSeconds": 5}),
//! );
//! // Held back: the project's shell is not used, its other settings are.
//! assert_eq!(settings.shell_path().as_deref(), Some("/bin/bash"));
//! assert_eq!(settings.bash_timeout_seconds(), Some(5.0));
//! assert_eq!(store.state(project, settings.held_back()).unwrap(), TrustState::NotTrusted);
//!
//! store.trust(project, settings.held_back()).unwrap();
//! assert_eq!(store.state(project, settings.held_back()).unwrap(), TrustState::Trusted);
//! settings.apply_held_back();
//! assert_eq!(settings.shell_path().as_deref(), Some("/tmp/evil"));
//! ```

use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::Settings;
use crate::project_file::read_regular_file;
use agent_tool::path::canonical;

pub use crate::settings::{RUNS_CODE_KEYS, WEAKENS_USER_KEYS};

/// The trust file's name inside the agent directory.
pub const TRUST_FILE_NAME: &str = "trusted-projects.json";

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
    /// The records in the user's agent directory
    /// ([`agent_dir`](crate::agent_dir::agent_dir)); `None` without a home.
    pub fn in_agent_dir() -> Option<Self> {
        crate::agent_dir::agent_dir().map(|d| Self::at(d.join(TRUST_FILE_NAME)))
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
    /// code-running values, [`Settings::held_back`]), the files they run
    /// pinned afresh ([`pins`]).
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

    /// [`state`](Self::state) with the pins already taken.
    fn state_with(
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
                "trustedAt": agent_ai::now_millis(),
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

    fn load(&self) -> Result<Map<String, Value>, TrustError> {
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
        let text = read_regular_file(&self.path, crate::MAX_PROJECT_FILE_BYTES)
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

    fn save(&self, records: Map<String, Value>) -> Result<(), TrustError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| self.error(e))?;
        let text = serde_json::to_string_pretty(&json!({"version": 1, "projects": records}))
            .map_err(|e| self.error(e))?;
        // Written whole beside the file and renamed over it: a crash leaves
        // the old records or the new ones, never half of either.
        let temp = dir.join(format!(
            ".{TRUST_FILE_NAME}.{}.{}",
            std::process::id(),
            agent_ai::now_millis()
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

mod pins;
#[cfg(test)]
mod tests;

use pins::PIN_FORMAT;
pub use pins::{MAX_PINNED_BYTES, MAX_PINNED_FILES, Pins, pins};

/// A project's key in the records: its canonical path.
fn project_key(project: &Path) -> String {
    canonical(project).to_string_lossy().into_owned()
}

/// What [`resolve_project_trust`] did with the held-back settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrustOutcome {
    /// The project holds no code-running settings.
    NothingHeldBack,
    /// Trusted (before, or by the answer just given): applied.
    Applied,
    /// Left out; the warning says why.
    Ignored {
        /// One line naming the file and the keys, for the user.
        warning: String,
    },
}

/// Applies the project's held-back settings if `store` trusts them with
/// their current values, else asks `ask` (a terminal question; `None` in
/// modes without one) and records a yes. The settings stay held back
/// otherwise, and the outcome carries the warning to show.
///
/// `project` is the directory whose `.pi/settings.json` was read.
pub fn resolve_project_trust(
    settings: &mut Settings,
    project: &Path,
    store: Option<&TrustStore>,
    ask: Option<&mut dyn FnMut(&str) -> bool>,
) -> TrustOutcome {
    if settings.held_back().is_empty() {
        return TrustOutcome::NothingHeldBack;
    }
    let file = project.join(".pi").join("settings.json");
    let keys = settings
        .held_back()
        .keys()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    let pins = pins(project, settings.held_back());
    let state = match store.map(|s| s.state_with(project, settings.held_back(), &pins)) {
        Some(Ok(state)) => state,
        Some(Err(e)) => {
            tracing::warn!("{e}");
            TrustState::NotTrusted
        }
        None => TrustState::NotTrusted,
    };
    if state == TrustState::Trusted {
        settings.apply_held_back();
        return TrustOutcome::Applied;
    }
    let mut why = match state {
        TrustState::Changed => {
            "they, or the project files they run, changed after you trusted this project".to_string()
        }
        TrustState::Outdated => "this project was trusted by an earlier coding-agent, which pinned fewer of the files it runs".to_string(),
        _ => "this project is not trusted".to_string(),
    };
    if !pins.unpinnable.is_empty() {
        // Named in the warning and the question alike: the user must know
        // why this project is asked about every time.
        why.push_str(&format!(
            "; it cannot be trusted for good, so it is asked about each time, because not everything it runs can be pinned: {}",
            pins.unpinnable.join("; ")
        ));
    }
    if let Some(ask) = ask {
        let shown = serde_json::to_string_pretty(&Value::Object(settings.held_back().clone()))
            .unwrap_or_default();
        let mut question = format!(
            "{} wants to run programs outside the sandbox ({why}):\n{shown}\n",
            file.display()
        );
        for (link, target) in &pins.links_out {
            question.push_str(&format!(
                "{link} is a link out of the project to {} (pinned by its content)\n",
                target.display()
            ));
        }
        question.push_str("Trust this project and use these settings?");
        if ask(&question) {
            if let Some(store) = store
                && let Err(e) = store.trust_pinned(project, settings.held_back(), &pins)
            {
                tracing::warn!("the trust was not recorded: {e}");
            }
            settings.apply_held_back();
            return TrustOutcome::Applied;
        }
    }
    let next = if pins.unpinnable.is_empty() {
        format!(
            "review the file, then run `coding-agent trust {}`",
            crate::shell_quote(&project.display().to_string())
        )
    } else {
        "review the file, then answer the question of an interactive run".to_string()
    };
    TrustOutcome::Ignored {
        warning: format!("{}: ignoring {keys}: {why} ({next})", file.display()),
    }
}
