//! Layered settings: a global file, then a project file, merged per key.
//!
//! - Global: `$CODING_AGENT_DIR/settings.json`; without that variable,
//!   `$PI_CODING_AGENT_DIR/settings.json`, then `~/.pi/agent/settings.json`, so an
//!   existing Pi setup is read as is.
//! - Project: `<cwd>/.pi/settings.json`.
//!
//! The project file wins per top-level key; when both values are objects they are
//! merged one level deep (project keys over global keys); arrays and scalars are
//! replaced. One exception: `allowedTools` can only be narrowed by the project
//! (the result is the intersection of both lists), so a cloned repository
//! cannot widen what the user allowed; timeouts can only be shortened and
//! `images.blockImages` only turned on. Two kinds of project keys are kept
//! apart instead of merged: the sandbox and permission rules, which a
//! project may only tighten ([`TIGHTEN_ONLY_KEYS`]), and keys that start
//! programs ([`RUNS_CODE_KEYS`]) or would weaken the user's own setup
//! ([`WEAKENS_USER_KEYS`]), held back until the user trusts the project
//! ([`resolve_project_trust`](crate::resolve_project_trust)). `docs/settings.md` lists every key.
//!
//! Settings never fail open: a file that exists but cannot be read, is not a
//! regular file, is larger than 1 MiB, is not valid JSON, or holds a known key
//! with a value of the wrong type is an error ([`Settings::load`] returns it,
//! naming the file, the line or key, and the reason) rather than being
//! ignored. Unknown keys are kept (extensions may read them) and named in
//! [`Settings::warnings`], so a misspelt key does not go unnoticed.
//!
//! What the agent reads, it reads typed: [`Settings::known`]
//! ([`KnownSettings`]), built from the merged values.

mod known;
mod permissions;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use agent_tool::regular_file::read_regular_file;
use agent_trust::MAX_PROJECT_FILE_BYTES;

use crate::agent_dir::agent_dir;

pub use known::{
    CodemodeValues, CompactionValues, ImageSettings, KnownSettings, Seconds, TuiModeSetting,
};

pub use agent_tool::{DEFAULT_BASH_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS};

/// Default idle timeout of a model stream, in seconds.
pub const DEFAULT_STREAM_IDLE_TIMEOUT_SECONDS: f64 = 300.0;

/// A settings file that could not be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct SettingsError {
    /// The file.
    pub path: PathBuf,
    /// What was wrong, with line and column when it is a parse error, or the
    /// key whose value has the wrong type.
    pub message: String,
}

/// Merged settings.
///
/// ```
/// use coding_agent::Settings;
/// use serde_json::json;
/// let global = json!({"images": {"autoResize": false, "blockImages": true}, "allowedTools": ["read", "bash"]});
/// let project = json!({"images": {"autoResize": true}, "allowedTools": ["read"]});
/// let s = Settings::merged(global, project);
/// assert!(s.images_auto_resize());
/// assert!(s.images_block_images());
/// assert_eq!(s.allowed_tools(), Some(vec!["read".to_string()]));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    values: Map<String, Value>,
    /// The project file's values of the keys a project may only tighten
    /// ([`TIGHTEN_ONLY_KEYS`]); kept apart so they cannot override the user's.
    project: Map<String, Value>,
    /// The project file's values of keys that run code
    /// ([`RUNS_CODE_KEYS`]), not applied until the project is trusted.
    held_back: Map<String, Value>,
    /// The held-back values once applied (the project is trusted), so
    /// that what came from the project can still be told apart.
    applied: Map<String, Value>,
    /// `values` typed; rebuilt whenever `values` changes.
    known: KnownSettings,
    /// What the files held that is not an error but deserves a word.
    warnings: Vec<String>,
    /// The files read (global, project), to name in later errors.
    files: [Option<PathBuf>; 2],
}

/// Keys whose values start programs: a project's values of these are held
/// back until the user trusts the project (see
/// [`resolve_project_trust`](crate::resolve_project_trust)).
/// Every new key that runs code belongs here.
pub const RUNS_CODE_KEYS: [&str; 6] = [
    "mcpServers",
    "shellPath",
    "shellCommandPrefix",
    "extensions",
    "hooks",
    "packages",
];

/// Keys that run nothing but would let a project weaken the user's own
/// setup: the extensions' timeouts (a tiny start-up timeout keeps the
/// user's extensions from starting, and a user extension that replaces
/// `bash` would give way to the built-in one). Held back with
/// [`RUNS_CODE_KEYS`] until the user trusts the project.
pub const WEAKENS_USER_KEYS: [&str; 2] = ["extensionStartupTimeoutSec", "extensionToolTimeoutSec"];

/// Keys only the user's own file may set: paths of skills and prompt
/// templates. A project's values would turn any file the user can read
/// into a command or a skill, or drop the user's own; a project brings its
/// skills and templates through its `.pi/skills`, `.agents/skills` and
/// `.pi/prompts` directories, read once it is trusted and pinned by content.
pub const USER_ONLY_KEYS: [&str; 3] = ["skills", "prompts", "enableSkillCommands"];

/// Timeouts a project may only shorten (with their defaults): a repository
/// must not be able to lift the guards against hangs.
const LOWER_ONLY_KEYS: [(&str, f64); 2] = [
    ("bashTimeoutSeconds", DEFAULT_BASH_TIMEOUT_SECONDS),
    (
        "streamIdleTimeoutSeconds",
        DEFAULT_STREAM_IDLE_TIMEOUT_SECONDS,
    ),
];

/// Keys whose project values never replace the user's: the sandbox and
/// permission rules (see [`sandbox`](crate::sandbox)). Read the project's
/// with [`Settings::project_value`].
pub const TIGHTEN_ONLY_KEYS: [&str; 2] = ["sandbox", "permissions"];

/// `value` merged into `values` under `key` (see the module docs).
fn merge_key(values: &mut Map<String, Value>, key: String, value: Value) {
    match (values.get_mut(&key), value) {
        (Some(Value::Array(base)), Value::Array(over)) if key == "allowedTools" => {
            // Narrow only: keep the project's order, drop what the user did not allow.
            let narrowed = over.into_iter().filter(|v| base.contains(v)).collect();
            *base = narrowed;
        }
        (Some(Value::Object(base)), Value::Object(over)) => {
            for (k, v) in over {
                base.insert(k, v);
            }
        }
        (_, value) => {
            values.insert(key, value);
        }
    }
}

impl Settings {
    /// Loads the global and the project settings for `cwd`.
    ///
    /// # Errors
    /// A file that exists but cannot be used (see the module docs).
    pub fn load(cwd: &Path) -> Result<Self, SettingsError> {
        let global = agent_dir().map(|d| d.join("settings.json"));
        let project = cwd.join(".pi").join("settings.json");
        let mut settings = Self::load_files(global.as_deref(), Some(&project))?;
        settings.hold_back_project_extensions(cwd);
        Ok(settings)
    }

    /// The executables in the project's `.pi/extensions/` join the
    /// held-back `extensions` value (as `.pi/extensions/NAME`): they run
    /// code, so trusting the project covers them, pinned by content like
    /// every program a held-back value names.
    fn hold_back_project_extensions(&mut self, cwd: &Path) {
        let found = crate::extension::discover_extensions(&cwd.join(".pi").join("extensions"));
        if found.is_empty() {
            return;
        }
        let entry = self
            .held_back
            .entry("extensions")
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(list) = entry else {
            return;
        };
        for path in found {
            let Some(name) = path.file_name() else {
                continue;
            };
            let relative = Value::from(format!(".pi/extensions/{}", name.to_string_lossy()));
            if !list.contains(&relative) {
                list.push(relative);
            }
        }
    }

    /// Loads, validates and merges two files; either may be missing.
    ///
    /// # Errors
    /// The first file that exists but cannot be used.
    pub fn load_files(
        global: Option<&Path>,
        project: Option<&Path>,
    ) -> Result<Self, SettingsError> {
        let mut warnings = Vec::new();
        let mut read = |path: Option<&Path>| -> Result<Value, SettingsError> {
            let Some(path) = path else {
                return Ok(Value::Object(Map::new()));
            };
            let (value, unknown) = read_settings_file(path)?;
            if !unknown.is_empty() {
                let keys: Vec<String> = unknown.iter().map(|k| format!("`{k}`")).collect();
                warnings.push(format!(
                    "{}: unknown settings, not used by coding-agent (kept for extensions): {}",
                    path.display(),
                    keys.join(", ")
                ));
            }
            Ok(value)
        };
        // The global file first: its error is reported before the project's.
        let mut settings = Self::merged(read(global)?, read(project)?);
        settings.warnings = warnings;
        settings.files = [global, project].map(|f| f.map(Path::to_path_buf));
        Ok(settings)
    }

    /// What the files held that is worth a warning but is not an error:
    /// unknown keys, by file. Empty for settings not read from files.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The values in force, typed (what the agent itself reads).
    pub fn known(&self) -> &KnownSettings {
        &self.known
    }

    /// Settings from one JSON object (anything else counts as empty). Values
    /// are not validated; the typed accessors fall back to defaults and clamp.
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::Object(values) => Settings {
                known: known::lenient(&values),
                values,
                ..Settings::default()
            },
            _ => Settings::default(),
        }
    }

    /// `project` over `global` with the merge rule of the module docs.
    pub fn merged(global: Value, project: Value) -> Self {
        let mut values = match global {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let mut tighten_only = Map::new();
        let mut held_back = Map::new();
        if let Value::Object(project) = project {
            for (key, value) in project {
                if TIGHTEN_ONLY_KEYS.contains(&key.as_str()) {
                    tighten_only.insert(key, value);
                    continue;
                }
                if RUNS_CODE_KEYS.contains(&key.as_str())
                    || WEAKENS_USER_KEYS.contains(&key.as_str())
                {
                    held_back.insert(key, value);
                    continue;
                }
                if USER_ONLY_KEYS.contains(&key.as_str()) {
                    tracing::warn!(key = %key, "only your own settings may name skills and prompt templates: the project's value is ignored");
                    continue;
                }
                let mut value = value;
                if key == "images"
                    && let Some(images) = value.as_object_mut()
                    && images.get("blockImages") == Some(&Value::Bool(false))
                {
                    // A project may turn image blocking on, never off.
                    images.remove("blockImages");
                }
                if let Some((_, default)) = LOWER_ONLY_KEYS.iter().find(|(k, _)| *k == key) {
                    // A project may shorten a timeout, never lift it.
                    let user = match values.get(&key).and_then(Value::as_f64) {
                        Some(t) if t >= 0.0 => t,
                        _ => *default,
                    };
                    let shorter = value
                        .as_f64()
                        .is_some_and(|t| t > 0.0 && (user == 0.0 || t < user));
                    if !shorter {
                        tracing::warn!(key = %key, "a project setting may only shorten this timeout: ignored");
                        continue;
                    }
                }
                merge_key(&mut values, key, value);
            }
        }
        Settings {
            known: known::lenient(&values),
            values,
            project: tighten_only,
            held_back,
            ..Settings::default()
        }
    }

    /// The project file's values of code-running keys ([`RUNS_CODE_KEYS`])
    /// and of keys that weaken the user's setup ([`WEAKENS_USER_KEYS`])
    /// that are not applied; see
    /// [`resolve_project_trust`](crate::resolve_project_trust).
    pub fn held_back(&self) -> &Map<String, Value> {
        &self.held_back
    }

    /// Applies the held-back project values (the project is trusted), with
    /// the usual merge rule.
    pub fn apply_held_back(&mut self) {
        for (key, value) in std::mem::take(&mut self.held_back) {
            self.applied.insert(key.clone(), value.clone());
            merge_key(&mut self.values, key, value);
        }
        self.known = known::lenient(&self.values);
    }

    /// The project file's value of a code-running key once applied by
    /// [`apply_held_back`](Self::apply_held_back): which MCP servers, for
    /// instance, the project (not the user) defined.
    pub fn applied_project_value(&self, key: &str) -> Option<&Value> {
        self.applied.get(key)
    }

    /// The project file's value of a tighten-only key (`sandbox`,
    /// `permissions`); [`Settings::get`] gives the user's.
    pub fn project_value(&self, key: &str) -> Option<&Value> {
        self.project.get(key)
    }

    /// A raw value by top-level key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// Sets a top-level key (for programs that configure in code).
    pub fn set(&mut self, key: impl Into<String>, value: Value) {
        self.values.insert(key.into(), value);
        self.known = known::lenient(&self.values);
    }

    /// Everything, as one JSON object.
    pub fn to_value(&self) -> Value {
        Value::Object(self.values.clone())
    }

    /// `shellPath`: the shell bash runs commands with.
    pub fn shell_path(&self) -> Option<String> {
        non_empty(&self.known.shell_path)
    }

    /// `shellCommandPrefix`: prepended to every bash command.
    pub fn shell_command_prefix(&self) -> Option<String> {
        non_empty(&self.known.shell_command_prefix)
    }

    /// `bashTimeoutSeconds`: default timeout of bash calls; `None` when `0`
    /// (disabled). Values above [`MAX_TIMEOUT_SECONDS`] are clamped; a value
    /// that is not a non-negative number gives the default (files with such
    /// values are refused by [`Settings::load`]).
    pub fn bash_timeout_seconds(&self) -> Option<f64> {
        timeout(
            self.known.bash_timeout_seconds,
            DEFAULT_BASH_TIMEOUT_SECONDS,
        )
    }

    /// The values in force, as tools read them (see [`agent_tool::ToolSettings`]).
    pub fn tool_settings(&self) -> agent_tool::ToolSettings {
        agent_tool::ToolSettings::new(self.values.clone())
    }

    /// `streamIdleTimeoutSeconds`: how long a model stream may stay silent
    /// before the request fails (default 300); `None` when `0` (disabled).
    pub fn stream_idle_timeout_seconds(&self) -> Option<f64> {
        timeout(
            self.known.stream_idle_timeout_seconds,
            DEFAULT_STREAM_IDLE_TIMEOUT_SECONDS,
        )
    }

    /// `maxParallelTools`: how many tool calls may execute at once; further
    /// calls wait for a slot. `None` when absent (the caller picks a default).
    pub fn max_parallel_tools(&self) -> Option<usize> {
        self.known
            .max_parallel_tools
            .map(|n| n.get().min(u32::MAX as u64) as usize)
    }

    /// `defaultThinkingLevel` (default `off`).
    pub fn default_thinking_level(&self) -> agent_ai::ThinkingLevel {
        self.known.default_thinking_level.unwrap_or_default()
    }

    /// `thinkingBudgets` (default 1024 / 2048 / 8192 / 16384 tokens for
    /// minimal / low / medium / high).
    pub fn thinking_budgets(&self) -> agent_ai::ThinkingBudgets {
        self.known.thinking_budgets.unwrap_or_default()
    }

    /// How long providers keep the prompt cached: the
    /// `PI_CACHE_RETENTION` environment variable (`none`, `short`, `long`,
    /// as Pi reads it) over `cacheRetention`; `short` when neither is set.
    /// Caching is on by default because a cached prompt costs a tenth.
    pub fn cache_retention(&self) -> agent_ai::CacheRetention {
        std::env::var("PI_CACHE_RETENTION")
            .ok()
            .and_then(|v| agent_ai::CacheRetention::parse(&v))
            .or(self.known.cache_retention)
            .unwrap_or_default()
    }

    /// `constrainedSampling`: `true` sends every tool whose schema allows it
    /// strict (constrained to its schema), `false` sends none strict (for a
    /// server that refuses `strict`), absent leaves it to what each tool
    /// declares.
    pub fn constrained_sampling(&self) -> Option<bool> {
        self.known.constrained_sampling
    }

    /// `images.autoResize` (default true).
    pub fn images_auto_resize(&self) -> bool {
        self.known.images.auto_resize.unwrap_or(true)
    }

    /// `images.blockImages` (default false).
    pub fn images_block_images(&self) -> bool {
        self.known.images.block_images.unwrap_or(false)
    }

    /// `allowedTools`: when present, the only tools that may be offered or run.
    pub fn allowed_tools(&self) -> Option<Vec<String>> {
        self.known.allowed_tools.clone()
    }

    /// `defaultTools` when it holds only `+name`/`-name` entries (Pi's way to
    /// add `codemode` to the default tools): the changes to the default
    /// active set. A command line `--tools` replaces it.
    pub fn default_tool_changes(&self) -> Option<Vec<String>> {
        let list: Vec<String> = self
            .get("defaultTools")?
            .as_array()?
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<_>>()?;
        (!list.is_empty()
            && list
                .iter()
                .all(|n| n.starts_with('+') || n.starts_with('-')))
        .then_some(list)
    }
}

/// A string setting; empty counts as unset.
fn non_empty(value: &Option<String>) -> Option<String> {
    value.as_ref().filter(|s| !s.is_empty()).cloned()
}

/// A timeout setting: `None` when `0` (disabled), clamped to
/// [`MAX_TIMEOUT_SECONDS`], the default when absent: the clamp every
/// timeout setting goes through ([`agent_tool::timeout_seconds`]).
fn timeout(value: Option<Seconds>, default: f64) -> Option<f64> {
    agent_tool::timeout_seconds(value.map(|Seconds(t)| t), default)
}

/// One file's object, checked, with its unknown keys (dotted).
fn read_settings_file(path: &Path) -> Result<(Value, Vec<String>), SettingsError> {
    let error = |message: String| SettingsError {
        path: path.to_path_buf(),
        message,
    };
    let empty = || (Value::Object(Map::new()), Vec::new());
    let text = match read_regular_file(path, MAX_PROJECT_FILE_BYTES) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok(empty()),
        Err(e) => return Err(error(format!("cannot read the settings file: {e}"))),
    };
    if text.trim().is_empty() {
        return Ok(empty());
    }
    let mut map = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(error("settings must be a JSON object".to_string())),
        Err(e) => {
            return Err(error(format!(
                "invalid JSON at line {} column {}: {e}",
                e.line(),
                e.column()
            )));
        }
    };
    let unknown = known::check(&map).map_err(error)?;
    clamp_timeouts(&mut map);
    Ok((Value::Object(map), unknown))
}

/// Timeouts above [`MAX_TIMEOUT_SECONDS`] are clamped in the values
/// themselves: tools read their own copy ([`agent_tool::ToolSettings`]).
fn clamp_timeouts(map: &mut Map<String, Value>) {
    for key in ["bashTimeoutSeconds", "streamIdleTimeoutSeconds"] {
        if let Some(t) = map.get(key).and_then(Value::as_f64)
            && t > MAX_TIMEOUT_SECONDS
        {
            tracing::warn!(
                key,
                value = t,
                max = MAX_TIMEOUT_SECONDS,
                "clamping a timeout"
            );
            map.insert(key.to_string(), Value::from(MAX_TIMEOUT_SECONDS));
        }
    }
}

#[cfg(test)]
mod tests;
