//! Values a session hands every tool call through the call's
//! [`Extensions`](agent_core::Extensions).

use std::path::{Path, PathBuf};

/// The session's working directory, as every call receives it
/// (`cx.get::<WorkingDir>()`). Relative paths in arguments resolve against it.
///
/// ```
/// use agent_tool::{Extensions, ToolCallContext, WorkingDir};
///
/// let cx = ToolCallContext::new("1").with_extensions(Extensions::new().with(WorkingDir::new("/srv/app")));
/// assert_eq!(WorkingDir::of(&cx).unwrap(), std::path::Path::new("/srv/app"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkingDir(pub PathBuf);

impl WorkingDir {
    /// A working directory value.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        WorkingDir(path.into())
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The working directory a call was given, if the host gave one.
    pub fn of(cx: &agent_core::ToolCallContext) -> Option<&Path> {
        cx.get::<WorkingDir>().map(WorkingDir::path)
    }

    /// A path argument as the call means it: `~`, `@` and `file://` expanded
    /// and a relative path joined to the call's working directory
    /// ([`resolve_to_cwd`](crate::path::resolve_to_cwd)), or to the
    /// process's when the host gave none (a program running tools by hand).
    ///
    /// ```
    /// use agent_tool::{Extensions, ToolCallContext, WorkingDir};
    /// let cx = ToolCallContext::new("1").with_extensions(Extensions::new().with(WorkingDir::new("/srv/app")));
    /// assert_eq!(WorkingDir::resolve(&cx, "notes/../README.md"), std::path::Path::new("/srv/app/README.md"));
    /// assert_eq!(WorkingDir::resolve(&cx, "/etc/hosts"), std::path::Path::new("/etc/hosts"));
    /// ```
    pub fn resolve(cx: &agent_core::ToolCallContext, raw: &str) -> PathBuf {
        let cwd = match Self::of(cx) {
            Some(cwd) => cwd.to_path_buf(),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        };
        crate::path::resolve_to_cwd(raw, &cwd)
    }
}

/// The longest timeout in seconds a tool argument or setting may ask for
/// (2^31 - 1 milliseconds, about 24.8 days, the limit Pi's timers have).
pub const MAX_TIMEOUT_SECONDS: f64 = 2_147_483.647;

/// The bash tool's timeout in seconds when neither the call nor the
/// `bashTimeoutSeconds` setting gives one.
pub const DEFAULT_BASH_TIMEOUT_SECONDS: f64 = 180.0;

/// A timeout setting's meaning, the one clamp of every timeout setting
/// (the tools', the session's, codemode's): `0` disables the timer
/// (`None`), a positive number is used up to [`MAX_TIMEOUT_SECONDS`],
/// anything else (absent, negative, not a number) gives `default`.
///
/// ```
/// use agent_tool::{MAX_TIMEOUT_SECONDS, timeout_seconds};
/// assert_eq!(timeout_seconds(Some(0.0), 180.0), None);
/// assert_eq!(timeout_seconds(Some(5.0), 180.0), Some(5.0));
/// assert_eq!(timeout_seconds(Some(1e20), 180.0), Some(MAX_TIMEOUT_SECONDS));
/// assert_eq!(timeout_seconds(Some(-1.0), 180.0), Some(180.0));
/// assert_eq!(timeout_seconds(None, 180.0), Some(180.0));
/// ```
pub fn timeout_seconds(value: Option<f64>, default: f64) -> Option<f64> {
    match value {
        Some(0.0) => None,
        Some(t) if t > 0.0 => Some(t.min(MAX_TIMEOUT_SECONDS)),
        _ => Some(default),
    }
}

/// The session's settings as tools read them: the merged values in force
/// (a project's code-running keys only once the project is trusted), as
/// JSON. A tool declares the keys it reads as a struct and reads them typed
/// with [`ToolSettings::read`], so tools need no dependency on the product
/// layer's settings type; [`get`](ToolSettings::get) and
/// [`get_path`](ToolSettings::get_path) are there for a key a tool reads
/// only once.
///
/// ```
/// use agent_tool::ToolSettings;
/// use serde_json::json;
///
/// #[derive(serde::Deserialize, Default)]
/// #[serde(rename_all = "camelCase", default)]
/// struct Images { auto_resize: Option<bool> }
/// #[derive(serde::Deserialize, Default)]
/// #[serde(default)]
/// struct ReadSettings { images: Images }
///
/// let settings = ToolSettings::from_value(json!({"images": {"autoResize": false}, "theme": "dark"}));
/// let read: ReadSettings = settings.read();
/// assert_eq!(read.images.auto_resize, Some(false));
/// assert_eq!(settings.get_path("images.autoResize"), Some(&json!(false)));
/// assert!(settings.get("shellPath").is_none());
/// ```
#[derive(Debug, Clone)]
pub struct ToolSettings {
    /// Always a JSON object; kept as a `Value` so [`ToolSettings::read`]
    /// deserializes from it without a copy.
    values: std::sync::Arc<serde_json::Value>,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self::new(serde_json::Map::new())
    }
}

impl ToolSettings {
    /// Settings holding these top-level keys.
    pub fn new(values: serde_json::Map<String, serde_json::Value>) -> Self {
        ToolSettings {
            values: std::sync::Arc::new(serde_json::Value::Object(values)),
        }
    }

    /// Settings from a JSON object (anything else gives empty settings).
    pub fn from_value(value: serde_json::Value) -> Self {
        match value {
            serde_json::Value::Object(map) => Self::new(map),
            _ => Self::default(),
        }
    }

    /// The settings a tool reads, typed: `T` names the keys it wants (serde
    /// renames, `#[serde(default)]`); other keys are ignored. Values of the
    /// wrong type give `T::default()` with a warning: settings files are
    /// checked when they are loaded, so only values set in code get here.
    pub fn read<T: serde::de::DeserializeOwned + Default>(&self) -> T {
        match T::deserialize(&*self.values) {
            Ok(read) => read,
            Err(error) => {
                tracing::warn!(%error, "tool settings of the wrong type; using the defaults");
                T::default()
            }
        }
    }

    /// A top-level value.
    pub fn get(&self, key: &str) -> Option<&serde_json::Value> {
        self.values.get(key)
    }

    /// A value by dotted path (`images.autoResize`).
    pub fn get_path(&self, path: &str) -> Option<&serde_json::Value> {
        let mut parts = path.split('.');
        let mut current = self.values.get(parts.next()?)?;
        for part in parts {
            current = current.get(part)?;
        }
        Some(current)
    }

    /// A top-level string value.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(serde_json::Value::as_str)
    }
}
