//! The `sandbox` settings layers, typed (`SandboxLayer`), and the spec they
//! make (`SandboxSpec`), resolved into a [`SandboxPolicy`] on the machine it
//! confines.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use agent_tool::path::canonical;

use super::{
    SandboxMode, SandboxPolicy, SandboxSettings, canonical_home, expand_home, passwd_home,
    secret_env_matcher,
};

/// One `sandbox` settings object, typed, its paths as written: relative
/// ones mean the workspace, `~/` the home of the machine it is resolved
/// on. A layer after the first (a project's, a remote's) may only tighten;
/// there `additionalDirectories` and `passEnv` are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxLayer {
    /// Where the layer comes from, for messages (`project`, `remote settings`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// `sandbox.mode`, if it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SandboxMode>,
    /// `sandbox.roots` (empty: the workspace).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<String>,
    /// `sandbox.additionalDirectories`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<String>,
    /// `sandbox.denyRead`: globs, relative ones below the workspace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_read: Vec<String>,
    /// `sandbox.network`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<bool>,
    /// `sandbox.passEnv`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_env: Vec<String>,
    /// `sandbox.secretEnv`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_env: Vec<String>,
    /// `sandbox.excludeTmp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_tmp: Option<bool>,
}

/// The keys of a `sandbox` settings object.
const LAYER_KEYS: [&str; 8] = [
    "mode",
    "roots",
    "additionalDirectories",
    "denyRead",
    "network",
    "passEnv",
    "secretEnv",
    "excludeTmp",
];

impl SandboxLayer {
    /// The layer a settings file's `sandbox` value gives (none: an empty
    /// layer); `source` names the file in messages (`project`).
    ///
    /// # Errors
    /// A key of the wrong shape, or one that is not a sandbox setting,
    /// named.
    ///
    /// ```
    /// use agent_sandbox::{SandboxLayer, SandboxMode};
    /// let value = serde_json::json!({"mode": "read-only", "denyRead": ["db/**"]});
    /// let layer = SandboxLayer::from_value(Some(&value), "project").unwrap();
    /// assert_eq!(layer.mode, Some(SandboxMode::ReadOnly));
    /// assert_eq!(layer.deny_read, ["db/**"]);
    /// assert!(SandboxLayer::from_value(Some(&serde_json::json!({"mode": 1})), "").is_err());
    /// // A misspelt key names itself instead of dropping a protection.
    /// let typo = SandboxLayer::from_value(Some(&serde_json::json!({"denyread": ["x"]})), "project");
    /// assert!(typo.unwrap_err().to_string().contains("sandbox.denyread (project)"));
    /// ```
    pub fn from_value(value: Option<&Value>, source: &str) -> Result<Self, SandboxConfigError> {
        let label = if source.is_empty() {
            String::new()
        } else {
            format!(" ({source})")
        };
        match value {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                // A misspelt key would silently drop a protection the user
                // believes in (`denyread`), so it stops the start instead.
                if let Some(key) = map.keys().find(|k| !LAYER_KEYS.contains(&k.as_str())) {
                    return Err(SandboxConfigError(format!(
                        "sandbox.{key}{label} is not a sandbox setting (the settings are {})",
                        LAYER_KEYS.join(", ")
                    )));
                }
            }
            Some(other) => {
                return Err(SandboxConfigError(format!(
                    "sandbox{label} must be an object, not {other}"
                )));
            }
        }
        let list = |key: &str| strings(value, key, &label);
        let flag = |key: &str| flag_of_key(value, key, &format!("sandbox.{key}{label}"));
        Ok(SandboxLayer {
            source: source.to_string(),
            mode: match value.and_then(|v| v.get("mode")) {
                Some(v) => Some(parse_mode(v, &format!("sandbox.mode{label}"))?),
                None => None,
            },
            roots: list("roots")?,
            additional_directories: list("additionalDirectories")?,
            deny_read: list("denyRead")?,
            network: flag("network")?,
            pass_env: list("passEnv")?,
            secret_env: list("secretEnv")?,
            exclude_tmp: flag("excludeTmp")?,
        })
    }

    fn label(&self) -> String {
        if self.source.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.source)
        }
    }
}

/// A sandbox policy as decided, before it is resolved on the machine it
/// confines: the user's layer (the `--sandbox` flag in place of its mode),
/// the layers that may only tighten it, and the mode when none names one.
///
/// This is what travels to a remote helper: its relative paths and `~`
/// are resolved there, against the remote workspace and the remote user's
/// home, and the remote's own settings are added as more tighten-only
/// layers ([`tighten`](Self::tighten)), so they can narrow it but never
/// widen it.
///
/// ```
/// use agent_sandbox::{SandboxLayer, SandboxMode, SandboxSpec};
/// let mut spec = SandboxSpec::default();
/// spec.user.mode = Some(SandboxMode::WorkspaceWrite);
/// // A remote's settings file trying to switch it off only tightens.
/// spec.tighten(SandboxLayer { mode: Some(SandboxMode::Off), ..Default::default() });
/// assert_eq!(spec.mode(), SandboxMode::WorkspaceWrite);
/// let policy = spec.resolve(std::path::Path::new("/srv/app")).unwrap();
/// assert_eq!(policy.roots, [std::path::PathBuf::from("/srv/app")]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxSpec {
    /// The user's layer: global settings, and flags in its place.
    pub user: SandboxLayer,
    /// Layers that may only tighten, in order (the project's, a remote's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tightening: Vec<SandboxLayer>,
    /// The mode when no layer names one (`off`; the MCP server's
    /// confine-where-possible default is `workspace-write`).
    #[serde(default)]
    pub default_mode: SandboxMode,
}

impl SandboxSpec {
    /// The spec of the two settings layers: `flag` in place of the user's
    /// `sandbox.mode`, the project's layer tighten-only, `default_mode`
    /// when none names a mode.
    ///
    /// # Errors
    /// A `sandbox` value of the wrong shape, naming the key.
    pub fn from_settings(
        settings: SandboxSettings<'_>,
        flag: Option<SandboxMode>,
        default_mode: SandboxMode,
    ) -> Result<Self, SandboxConfigError> {
        let mut user = SandboxLayer::from_value(settings.user, "")?;
        if flag.is_some() {
            user.mode = flag;
        }
        let mut spec = SandboxSpec {
            user,
            tightening: Vec::new(),
            default_mode,
        };
        if let Some(project) = settings.project {
            spec.tighten(SandboxLayer::from_value(Some(project), "project")?);
        }
        Ok(spec)
    }

    /// Adds a layer that may only tighten the policy.
    pub fn tighten(&mut self, layer: SandboxLayer) {
        self.tightening.push(layer);
    }

    /// Whether a flag or a settings layer names the mode (rather than the
    /// default): such a policy is refused, never weakened, where it cannot
    /// be had as asked.
    pub fn is_chosen(&self) -> bool {
        self.user.mode.is_some() || self.tightening.iter().any(|l| l.mode.is_some())
    }

    /// The mode: the user's (or the default), made stricter by every
    /// tightening layer. Resolving may still lower workspace-write to
    /// read-only where the workspace holds the home directory and no one
    /// chose the mode.
    pub fn mode(&self) -> SandboxMode {
        let base = self.user.mode.unwrap_or(self.default_mode);
        self.tightening
            .iter()
            .filter_map(|l| l.mode)
            .fold(base, SandboxMode::max)
    }

    /// The policy for the workspace `cwd` on this machine: relative paths
    /// below `cwd`, `~` this user's home, the agent directories and the
    /// default deny globs of this machine.
    ///
    /// # Errors
    /// A tightening layer's root outside the roots before it, or inside a
    /// protected path; a `secretEnv` pattern that does not compile; a
    /// chosen workspace-write whose writable roots hold the home directory.
    pub fn resolve(&self, cwd: &Path) -> Result<SandboxPolicy, SandboxConfigError> {
        let user = &self.user;
        let chosen = self.is_chosen();
        let mut mode = self.mode();
        if mode == SandboxMode::Off {
            return Ok(SandboxPolicy::off());
        }
        let home = canonical_home();
        // Relative deny globs are matched against the paths the kernel
        // opens, which never go through a symlink.
        let cwd = &canonical(cwd);
        let mut policy = SandboxPolicy::new(mode, cwd);
        if !user.roots.is_empty() {
            policy.roots = user
                .roots
                .iter()
                .map(|r| resolve(cwd, r, home.as_deref()))
                .collect();
        }
        for extra in &user.additional_directories {
            policy.roots.push(resolve(cwd, extra, home.as_deref()));
        }
        // What the user's roots protect stays protected whatever a later
        // layer narrows to: a project root of `.git` must not turn the
        // real `.git` into a writable root.
        policy.protect_defaults();
        let users_protected = policy.protected.clone();
        for layer in self.tightening.iter().filter(|l| !l.roots.is_empty()) {
            // Narrowing only, decided on the directories the kernel will
            // use: a symlink inside the workspace pointing elsewhere is
            // judged by where it points.
            let mut narrowed = Vec::new();
            for text in &layer.roots {
                let root = resolve(cwd, text, home.as_deref());
                if !policy.roots.iter().any(|u| root.starts_with(u)) {
                    return Err(SandboxConfigError(format!(
                        "sandbox.roots{} entry {text:?} resolves to {}, outside the user's roots ({})",
                        layer.label(),
                        root.display(),
                        policy
                            .roots
                            .iter()
                            .map(|r| r.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
                if let Some(p) = users_protected.iter().find(|p| root.starts_with(p)) {
                    return Err(SandboxConfigError(format!(
                        "sandbox.roots{} entry {text:?} resolves to {}, inside the protected path {}",
                        layer.label(),
                        root.display(),
                        p.display()
                    )));
                }
                narrowed.push(root);
            }
            policy.roots = narrowed;
        }
        for layer in std::iter::once(user).chain(&self.tightening) {
            for glob in &layer.deny_read {
                policy.deny_read.push(deny_glob(cwd, glob, home.as_deref()));
            }
            for pattern in &layer.secret_env {
                secret_env_matcher(std::slice::from_ref(pattern)).map_err(|e| {
                    SandboxConfigError(format!("sandbox.secretEnv entry {pattern:?}: {e}"))
                })?;
                policy.secret_env.push(pattern.clone());
            }
        }
        policy.pass_env = user.pass_env.clone();
        policy.network = user.network.unwrap_or(false)
            && self.tightening.iter().all(|l| l.network.unwrap_or(true));
        // Any layer may drop the temp dir; none may add it back.
        policy.exclude_tmp = std::iter::once(user)
            .chain(&self.tightening)
            .any(|l| l.exclude_tmp == Some(true));
        // A writable home would let a command plant what runs later outside
        // the sandbox: ~/.bashrc, ~/.gitconfig, ~/.local/bin/git, ...
        // $HOME and the account's home in /etc/passwd (HOME may be elsewhere).
        let homes: Vec<PathBuf> = home.iter().cloned().chain(passwd_home()).collect();
        if mode == SandboxMode::WorkspaceWrite
            && let Some(home) = homes
                .iter()
                .find(|h| policy.roots.iter().any(|r| h.starts_with(r)))
            && let Some(root) = policy.roots.iter().find(|r| home.starts_with(r))
        {
            if chosen {
                return Err(SandboxConfigError(format!(
                    "workspace-write with the writable root {} would let commands write your home directory ({}), whose startup files run outside the sandbox later; start in a project directory, or use --sandbox read-only",
                    root.display(),
                    home.display()
                )));
            }
            tracing::warn!(root = %root.display(), "the workspace holds the home directory: read-only sandbox");
            mode = SandboxMode::ReadOnly;
            policy.mode = mode;
        }
        policy.protect_defaults();
        for p in users_protected {
            if !policy.protected.contains(&p) {
                policy.protected.push(p);
            }
        }
        Ok(policy)
    }
}

fn flag_of_key(
    source: Option<&Value>,
    key: &str,
    shown: &str,
) -> Result<Option<bool>, SandboxConfigError> {
    match source.and_then(|s| s.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(SandboxConfigError(format!("{shown} must be true or false"))),
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

fn strings(
    source: Option<&Value>,
    key: &str,
    label: &str,
) -> Result<Vec<String>, SandboxConfigError> {
    match source.and_then(|s| s.get(key)) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    SandboxConfigError(format!("sandbox.{key}{label} must list strings"))
                })
            })
            .collect(),
        Some(_) => Err(SandboxConfigError(format!(
            "sandbox.{key}{label} must be a list of strings"
        ))),
    }
}

/// A root as an absolute path with symlinks resolved (see [`canonical`]).
fn resolve(cwd: &Path, text: &str, home: Option<&Path>) -> PathBuf {
    let expanded = PathBuf::from(expand_home(text, home));
    canonical(&cwd.join(expanded))
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
