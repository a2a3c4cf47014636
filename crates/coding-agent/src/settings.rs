//! Layered settings: a global file, then a project file, merged per key.
//!
//! - Global: `$CODING_AGENT_DIR/settings.json`; without that variable,
//!   `$PI_CODING_AGENT_DIR/settings.json`, then `~/.pi/agent/settings.json`, so an
//!   existing Pi setup is read as is.
//! - Project: `<cwd>/.pi/settings.json`.
//!
//! The project file wins per top-level key; when both values are objects they are
//! merged one level deep (project keys over global keys); arrays and scalars are
//! replaced. A file that cannot be parsed is ignored (as if empty) and its error,
//! naming the file and line, is kept in [`Settings::errors`]. Unknown keys are kept.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Default bash timeout in seconds when the setting is absent.
pub const DEFAULT_BASH_TIMEOUT_SECONDS: f64 = 180.0;

/// A settings file that could not be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct SettingsError {
    /// The file.
    pub path: PathBuf,
    /// What was wrong, with line and column when it is a parse error.
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
    errors: Vec<SettingsError>,
}

/// Where the global settings live (see the module docs).
pub fn agent_dir() -> Option<PathBuf> {
    for var in ["CODING_AGENT_DIR", "PI_CODING_AGENT_DIR"] {
        if let Some(dir) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(dir));
        }
    }
    std::env::home_dir().map(|h| h.join(".pi").join("agent"))
}

impl Settings {
    /// Loads the global and the project settings for `cwd`.
    pub fn load(cwd: &Path) -> Self {
        let global = agent_dir().map(|d| d.join("settings.json"));
        let project = cwd.join(".pi").join("settings.json");
        Self::load_files(global.as_deref(), Some(&project))
    }

    /// Loads and merges two files; either may be missing.
    pub fn load_files(global: Option<&Path>, project: Option<&Path>) -> Self {
        let mut errors = Vec::new();
        let mut read = |path: Option<&Path>| -> Value {
            let Some(path) = path else {
                return Value::Object(Map::new());
            };
            match read_settings_file(path) {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(error = %e, "ignoring settings file");
                    errors.push(e);
                    Value::Object(Map::new())
                }
            }
        };
        let global = read(global);
        let project = read(project);
        let mut settings = Self::merged(global, project);
        settings.errors = errors;
        settings
    }

    /// Settings from one JSON object (anything else counts as empty).
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::Object(values) => Settings {
                values,
                errors: Vec::new(),
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
        if let Value::Object(project) = project {
            for (key, value) in project {
                match (values.get_mut(&key), value) {
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
        }
        Settings {
            values,
            errors: Vec::new(),
        }
    }

    /// Problems met while loading (files ignored).
    pub fn errors(&self) -> &[SettingsError] {
        &self.errors
    }

    /// A raw value by top-level key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// A raw value by dotted path, e.g. `images.autoResize`.
    pub fn get_path(&self, path: &str) -> Option<&Value> {
        let mut parts = path.split('.');
        let mut current = self.values.get(parts.next()?)?;
        for part in parts {
            current = current.get(part)?;
        }
        Some(current)
    }

    /// Sets a top-level key (for programs that configure in code).
    pub fn set(&mut self, key: impl Into<String>, value: Value) {
        self.values.insert(key.into(), value);
    }

    /// Everything, as one JSON object.
    pub fn to_value(&self) -> Value {
        Value::Object(self.values.clone())
    }

    /// `shellPath`: the shell bash runs commands with.
    pub fn shell_path(&self) -> Option<String> {
        self.get_str("shellPath")
    }

    /// `shellCommandPrefix`: prepended to every bash command.
    pub fn shell_command_prefix(&self) -> Option<String> {
        self.get_str("shellCommandPrefix")
    }

    /// `bashTimeoutSeconds`: default timeout of bash calls; `None` when `0` (disabled).
    pub fn bash_timeout_seconds(&self) -> Option<f64> {
        match self.get("bashTimeoutSeconds").and_then(Value::as_f64) {
            Some(t) if t <= 0.0 || !t.is_finite() => None,
            Some(t) => Some(t),
            None => Some(DEFAULT_BASH_TIMEOUT_SECONDS),
        }
    }

    /// `images.autoResize` (default true).
    pub fn images_auto_resize(&self) -> bool {
        self.get_path("images.autoResize")
            .and_then(Value::as_bool)
            .unwrap_or(true)
    }

    /// `images.blockImages` (default false).
    pub fn images_block_images(&self) -> bool {
        self.get_path("images.blockImages")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// `allowedTools`: when present, the only tools that may be offered or run.
    pub fn allowed_tools(&self) -> Option<Vec<String>> {
        self.get("allowedTools").and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
    }

    fn get_str(&self, key: &str) -> Option<String> {
        self.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }
}

fn read_settings_file(path: &Path) -> Result<Value, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Value::Object(Map::new())),
        Err(e) => {
            return Err(SettingsError {
                path: path.to_path_buf(),
                message: e.to_string(),
            });
        }
    };
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(SettingsError {
            path: path.to_path_buf(),
            message: "settings must be a JSON object".to_string(),
        }),
        Err(e) => Err(SettingsError {
            path: path.to_path_buf(),
            message: format!(
                "invalid JSON at line {} column {}: {e}",
                e.line(),
                e.column()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_table() {
        let global = json!({
            "shellPath": "/bin/sh",
            "images": {"autoResize": false, "blockImages": true},
            "list": [1, 2],
            "nested": {"a": {"x": 1}},
            "onlyGlobal": 1
        });
        let project = json!({
            "shellPath": "/bin/bash",
            "images": {"autoResize": true},
            "list": [3],
            "nested": {"a": {"y": 2}},
            "onlyProject": 2
        });
        let s = Settings::merged(global, project);
        assert_eq!(
            s.to_value(),
            json!({
                "shellPath": "/bin/bash",
                "images": {"autoResize": true, "blockImages": true},
                "list": [3],
                "nested": {"a": {"y": 2}},
                "onlyGlobal": 1,
                "onlyProject": 2
            })
        );
    }

    #[test]
    fn malformed_file_is_ignored_with_an_error_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let global = dir.path().join("global.json");
        let project = dir.path().join("project.json");
        std::fs::write(&global, "{\"shellPath\": \"/bin/zsh\"}").unwrap();
        std::fs::write(&project, "{\n  \"shellPath\": \"/bin/bash\",\n  oops\n}").unwrap();
        let s = Settings::load_files(Some(&global), Some(&project));
        assert_eq!(s.shell_path().as_deref(), Some("/bin/zsh"));
        assert_eq!(s.errors().len(), 1);
        let msg = s.errors()[0].to_string();
        assert!(msg.contains("project.json"), "{msg}");
        assert!(msg.contains("line 3"), "{msg}");
    }

    #[test]
    fn missing_files_are_empty_and_defaults_apply() {
        let dir = tempfile::tempdir().unwrap();
        let s = Settings::load_files(Some(&dir.path().join("nope.json")), None);
        assert!(s.errors().is_empty());
        assert_eq!(s.bash_timeout_seconds(), Some(180.0));
        assert!(s.images_auto_resize());
        assert!(!s.images_block_images());
        assert_eq!(s.allowed_tools(), None);
    }

    #[test]
    fn bash_timeout_zero_disables() {
        let s = Settings::from_value(json!({"bashTimeoutSeconds": 0}));
        assert_eq!(s.bash_timeout_seconds(), None);
        let s = Settings::from_value(json!({"bashTimeoutSeconds": 2.5}));
        assert_eq!(s.bash_timeout_seconds(), Some(2.5));
    }

    #[test]
    fn non_object_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        std::fs::write(&p, "[1,2]").unwrap();
        let s = Settings::load_files(Some(&p), None);
        assert_eq!(s.errors().len(), 1);
    }
}
