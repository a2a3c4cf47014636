//! The sandbox policy: which directories the tools may read and write, which
//! files they must never see, and whether commands may use the network.
//!
//! This is data. Enforcement sits where the effect happens: the confined file
//! operations and the Landlock-restricted process spawner of
//! `tools-builtin`, so a custom tool built on those operations is confined
//! too.
//!
//! Settings (`sandbox` in the global or project settings file):
//!
//! ```json
//! {"sandbox": {"mode": "workspace-write", "roots": ["."], "additionalDirectories": ["../lib"],
//!              "denyRead": ["secrets/**"], "network": false, "passEnv": ["GITHUB_TOKEN"],
//!              "secretEnv": ["MY_PRIVATE_*"]}}
//! ```
//!
//! A project's `.pi/settings.json` may only tighten what the user's global
//! settings and flags set: a stricter mode, roots inside the user's roots,
//! more deny globs, more secret variables, network off. It can never turn the
//! sandbox off, add directories or pass secrets.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::Settings;

/// How much the tools may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum SandboxMode {
    /// No confinement (Pi's behaviour).
    #[default]
    Off,
    /// Tools and commands may write only under the roots and the temp dir.
    WorkspaceWrite,
    /// Nothing may be modified.
    ReadOnly,
}

impl SandboxMode {
    /// Parses `off`, `read-only` or `workspace-write`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "off" => Some(SandboxMode::Off),
            "read-only" => Some(SandboxMode::ReadOnly),
            "workspace-write" => Some(SandboxMode::WorkspaceWrite),
            _ => None,
        }
    }

    /// The settings spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Deny globs in force whenever a mode is on (besides the settings' own).
pub const DEFAULT_DENY_READ: [&str; 7] = [
    "**/.env",
    "**/.env.*",
    "**/*.pem",
    "**/*.key",
    "~/.ssh/**",
    "~/.aws/**",
    "~/.config/gcloud/**",
];

/// Environment variable name patterns (`*` matches any run) removed from
/// commands' environments whenever a mode is on, unless passed explicitly.
pub const DEFAULT_SECRET_ENV: [&str; 4] = ["*_API_KEY", "*_TOKEN", "*_SECRET", "*PASSWORD*"];

/// The resolved policy for one working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The mode.
    pub mode: SandboxMode,
    /// Absolute directories the tools may read (and, in workspace-write,
    /// write) below: the roots plus the additional directories.
    pub roots: Vec<PathBuf>,
    /// Glob patterns (absolute, `~` expanded, or matching at any depth when
    /// they start with `**/`) of files no tool may read, list or write.
    pub deny_read: Vec<String>,
    /// Whether commands may open TCP connections and listen.
    pub network: bool,
    /// Variables kept in commands' environments even if they look secret.
    pub pass_env: Vec<String>,
    /// Name patterns of variables removed from commands' environments.
    pub secret_env: Vec<String>,
}

impl SandboxPolicy {
    /// No confinement.
    pub fn off() -> Self {
        SandboxPolicy {
            mode: SandboxMode::Off,
            roots: Vec::new(),
            deny_read: Vec::new(),
            network: true,
            pass_env: Vec::new(),
            secret_env: Vec::new(),
        }
    }

    /// A policy of `mode` confined to `root` with the default deny globs
    /// and secret patterns; network off.
    ///
    /// ```
    /// use coding_agent::sandbox::{SandboxMode, SandboxPolicy};
    /// let p = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/work/project");
    /// assert_eq!(p.roots, [std::path::PathBuf::from("/work/project")]);
    /// assert!(p.deny_read.iter().any(|g| g == "**/.env"));
    /// assert!(!p.network);
    /// ```
    pub fn new(mode: SandboxMode, root: impl Into<PathBuf>) -> Self {
        let home = std::env::home_dir();
        SandboxPolicy {
            mode,
            roots: vec![normalize(&root.into())],
            deny_read: DEFAULT_DENY_READ
                .iter()
                .map(|g| expand_home(g, home.as_deref()))
                .collect(),
            network: false,
            pass_env: Vec::new(),
            secret_env: DEFAULT_SECRET_ENV.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Whether any confinement applies.
    pub fn is_on(&self) -> bool {
        self.mode != SandboxMode::Off
    }

    /// Resolves the policy for `cwd` from the settings, with `flag` (the
    /// command line's `--sandbox`) in place of the user's `sandbox.mode`,
    /// and `default_mode` when neither says anything.
    ///
    /// # Errors
    /// A `sandbox` value of the wrong shape, naming the key: a broken
    /// sandbox setting never means "no sandbox".
    pub fn from_settings(
        settings: &Settings,
        cwd: &Path,
        flag: Option<SandboxMode>,
        default_mode: SandboxMode,
    ) -> Result<Self, SandboxConfigError> {
        let user = settings.get("sandbox");
        let project = settings.project_value("sandbox");
        let user_mode = match user.and_then(|u| u.get("mode")) {
            Some(v) => Some(parse_mode(v, "sandbox.mode")?),
            None => None,
        };
        let project_mode = match project.and_then(|p| p.get("mode")) {
            Some(v) => Some(parse_mode(v, "sandbox.mode (project)")?),
            None => None,
        };
        let base = flag.or(user_mode).unwrap_or(default_mode);
        // The project only tightens: the stricter of the two.
        let mode = project_mode.map_or(base, |p| p.max(base));
        if mode == SandboxMode::Off {
            return Ok(Self::off());
        }
        let home = std::env::home_dir();
        let mut policy = Self::new(mode, cwd);
        let user_roots = strings(user, "roots")?;
        if !user_roots.is_empty() {
            policy.roots = user_roots
                .iter()
                .map(|r| resolve(cwd, r, home.as_deref()))
                .collect();
        }
        for extra in strings(user, "additionalDirectories")? {
            policy.roots.push(resolve(cwd, &extra, home.as_deref()));
        }
        let project_roots = strings(project, "roots")?;
        if !project_roots.is_empty() {
            // Narrowing only: a project root outside every user root is dropped.
            let narrowed: Vec<PathBuf> = project_roots
                .iter()
                .map(|r| resolve(cwd, r, home.as_deref()))
                .filter(|r| policy.roots.iter().any(|u| r.starts_with(u)))
                .collect();
            if narrowed.is_empty() {
                tracing::warn!("the project's sandbox.roots lie outside the user's roots; ignored");
            } else {
                policy.roots = narrowed;
            }
        }
        for source in [user, project] {
            for glob in strings(source, "denyRead")? {
                policy
                    .deny_read
                    .push(deny_glob(cwd, &glob, home.as_deref()));
            }
            policy.secret_env.extend(strings(source, "secretEnv")?);
        }
        policy.pass_env = strings(user, "passEnv")?;
        let flag_of =
            |source: Option<&Value>, key: &str| -> Result<Option<bool>, SandboxConfigError> {
                match source.and_then(|s| s.get("network")) {
                    None => Ok(None),
                    Some(Value::Bool(b)) => Ok(Some(*b)),
                    Some(_) => Err(SandboxConfigError(format!("{key} must be true or false"))),
                }
            };
        let user_network = flag_of(user, "sandbox.network")?.unwrap_or(false);
        let project_network = flag_of(project, "sandbox.network (project)")?.unwrap_or(true);
        policy.network = user_network && project_network;
        Ok(policy)
    }
}

/// A `sandbox` setting of the wrong shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SandboxConfigError(pub String);

fn parse_mode(value: &Value, key: &str) -> Result<SandboxMode, SandboxConfigError> {
    value.as_str().and_then(SandboxMode::parse).ok_or_else(|| {
        SandboxConfigError(format!(
            "{key} must be \"off\", \"read-only\" or \"workspace-write\", not {value}"
        ))
    })
}

fn strings(source: Option<&Value>, key: &str) -> Result<Vec<String>, SandboxConfigError> {
    match source.and_then(|s| s.get(key)) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| SandboxConfigError(format!("sandbox.{key} must list strings")))
            })
            .collect(),
        Some(_) => Err(SandboxConfigError(format!(
            "sandbox.{key} must be a list of strings"
        ))),
    }
}

fn expand_home(text: &str, home: Option<&Path>) -> String {
    match (text.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest).display().to_string(),
        _ => text.to_string(),
    }
}

/// A root as an absolute, lexically normalised path.
fn resolve(cwd: &Path, text: &str, home: Option<&Path>) -> PathBuf {
    let expanded = PathBuf::from(expand_home(text, home));
    normalize(&cwd.join(expanded))
}

/// A deny glob: `~` expanded; relative patterns without a leading `**/`
/// are relative to `cwd`.
fn deny_glob(cwd: &Path, text: &str, home: Option<&Path>) -> String {
    let expanded = expand_home(text, home);
    if expanded.starts_with('/') || expanded.starts_with("**/") {
        expanded
    } else {
        let relative = expanded.strip_prefix("./").unwrap_or(&expanded);
        format!("{}/{relative}", cwd.display())
    }
}

/// `.` and `..` removed without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(global: Value, project: Value, flag: Option<SandboxMode>) -> SandboxPolicy {
        let settings = Settings::merged(global, project);
        SandboxPolicy::from_settings(&settings, Path::new("/w/p"), flag, SandboxMode::Off).unwrap()
    }

    #[test]
    fn a_project_only_tightens() {
        // Cannot turn it off.
        let p = policy(
            json!({"sandbox": {"mode": "workspace-write"}}),
            json!({"sandbox": {"mode": "off", "network": true, "additionalDirectories": ["/"],
                   "passEnv": ["AWS_SECRET"], "roots": ["/"]}}),
            None,
        );
        assert_eq!(p.mode, SandboxMode::WorkspaceWrite);
        assert!(!p.network);
        assert_eq!(p.roots, [PathBuf::from("/w/p")]);
        assert!(p.pass_env.is_empty());
        // May turn it on, stricter, narrower, with more deny globs.
        let p = policy(
            json!({}),
            json!({"sandbox": {"mode": "read-only", "roots": ["sub"], "denyRead": ["db/*.sqlite"]}}),
            None,
        );
        assert_eq!(p.mode, SandboxMode::ReadOnly);
        assert_eq!(p.roots, [PathBuf::from("/w/p/sub")]);
        assert!(p.deny_read.contains(&"/w/p/db/*.sqlite".to_string()));
        // The flag stands in for the user's setting, the project still tightens.
        let p = policy(
            json!({"sandbox": {"mode": "read-only"}}),
            json!({}),
            Some(SandboxMode::Off),
        );
        assert_eq!(p.mode, SandboxMode::Off);
        let p = policy(
            json!({}),
            json!({"sandbox": {"mode": "read-only"}}),
            Some(SandboxMode::Off),
        );
        assert_eq!(p.mode, SandboxMode::ReadOnly);
    }

    #[test]
    fn wrong_shapes_are_errors() {
        let settings = Settings::merged(json!({"sandbox": {"mode": "strict"}}), json!({}));
        let err = SandboxPolicy::from_settings(&settings, Path::new("/w"), None, SandboxMode::Off)
            .unwrap_err();
        assert!(err.0.contains("sandbox.mode"), "{err}");
        let settings = Settings::merged(
            json!({"sandbox": {"mode": "read-only", "roots": "/"}}),
            json!({}),
        );
        assert!(
            SandboxPolicy::from_settings(&settings, Path::new("/w"), None, SandboxMode::Off)
                .is_err()
        );
    }
}
