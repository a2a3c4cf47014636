//! The sandbox policy: which directories the tools may read and write, which
//! files they must never see, and whether commands may use the network.
//!
//! This is data; the rest of this crate enforces it where the effect
//! happens: the confined file operations and the sandboxed process spawner,
//! so a custom tool built on those operations is confined too.
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

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use agent_tool::path::{canonical, normalize_path};

/// How much the tools may change. Ordered from the loosest to the
/// strictest; in JSON, its settings spelling (`"workspace-write"`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
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

/// Environment variable name patterns (`*` matches any run, compared
/// ignoring case) removed from commands' environments whenever a mode is
/// on, unless passed explicitly; names made of a [credential
/// word](CREDENTIAL_WORDS) are removed too.
pub const DEFAULT_SECRET_ENV: [&str; 4] = ["*_API_KEY", "*_TOKEN", "*_SECRET", "*PASSWORD*"];

/// Words that mark a variable as a credential wherever they stand in its
/// name (`AWS_SECRET_ACCESS_KEY`, `stripe_secret_key`, `GH_TOKEN`,
/// `openaiApiKey`). Names are split at `_`, `-`, `.` and lower-to-upper
/// case changes and compared ignoring case, so `TOKENIZERS_PARALLELISM`
/// is not a secret and `PWD` is not a password.
pub const CREDENTIAL_WORDS: [&str; 24] = [
    "pw",
    "privkey",
    "bearer",
    "tkn",
    "pass",
    "creds",
    "jwt",
    "sig",
    "key",
    "keys",
    "apikey",
    "token",
    "tokens",
    "secret",
    "secrets",
    "password",
    "passwd",
    "passphrase",
    "credential",
    "credentials",
    "auth",
    "cookie",
    "pat",
    "dsn",
];

/// Names inside a writable root that stay read-only for every tool and
/// command: what a later, unsandboxed run would execute or obey (git hooks
/// and config, the project's agent settings, and the skills other agents
/// and ours read from `.agents/`).
pub const PROTECTED_NAMES: [&str; 3] = [".git", ".pi", ".agents"];

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
    /// Paths that stay read-only even inside a writable root: each root's
    /// [`PROTECTED_NAMES`] and the user's agent directory (settings, trust
    /// records, credentials).
    pub protected: Vec<PathBuf>,
    /// Whether the temp dir is left out of the writable places
    /// (`sandbox.excludeTmp`): commands then get a private, empty temp dir
    /// that is gone when they end.
    pub exclude_tmp: bool,
}

/// The `sandbox` values of the two settings layers. The user's settings
/// (global file, flags) decide; the project's may only tighten. With
/// coding-agent's `Settings`: `settings.get("sandbox")` and
/// `settings.project_value("sandbox")`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SandboxSettings<'a> {
    /// The user's `sandbox` object.
    pub user: Option<&'a Value>,
    /// The project's `sandbox` object (tighten-only).
    pub project: Option<&'a Value>,
}

/// Every directory the agent may keep its own files in (settings, trust
/// records, sessions, credentials): the ones `CODING_AGENT_DIR` and
/// `PI_CODING_AGENT_DIR` name, and `~/.pi/agent`. All of them, not just the
/// one in use, since a command could point a later run at another.
pub fn agent_dirs() -> Vec<PathBuf> {
    let named = ["CODING_AGENT_DIR", "PI_CODING_AGENT_DIR"].map(|v| {
        std::env::var_os(v)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
    });
    let default_dir = std::env::home_dir().map(|h| h.join(".pi").join("agent"));
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in named.into_iter().chain([default_dir]).flatten() {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// The repository a root's `.git` file names (`gitdir: DIR`), and that
/// repository's common directory (`commondir`), resolved; none when `.git`
/// is a directory or absent.
fn separate_git_dirs(root: &Path) -> Vec<PathBuf> {
    // Another agent process's commands may be writing the root: the file is
    // read through a handle of the root, not through a link, and only when
    // regular (a FIFO would hang the open).
    let bases = [root.to_path_buf()];
    let Some(named) = crate::beneath::read_regular(&bases, &root.join(".git"), 4096)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| {
            text.lines()
                .next()
                .and_then(|l| l.strip_prefix("gitdir:"))
                .map(|d| d.trim().to_string())
        })
    else {
        return Vec::new();
    };
    let spelled = normalize_path(&root.join(named));
    let git_dir = canonical(&spelled);
    // A link on the way (`gitdir: lnk/gd`) could be pointed elsewhere by a
    // command: it is protected itself, which a sandbox that cannot keep a
    // link read-only refuses, naming it.
    let mut dirs = links_on_the_way(root, &spelled);
    dirs.push(git_dir.clone());
    if let Some(common) = crate::beneath::read_regular(&bases, &git_dir.join("commondir"), 4096)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
    {
        let spelled = normalize_path(&git_dir.join(common.trim()));
        dirs.extend(links_on_the_way(root, &spelled));
        dirs.push(canonical(&spelled));
    }
    dirs
}

/// The symbolic links among the entries from `root` (excluded) down to
/// `path` (included): what a command could point elsewhere on the way.
///
/// A look by path, for deciding what to protect when the policy is made:
/// its answer may be out of date as soon as it is given (a command can
/// make or remove a link at any time), which is why every link it finds
/// is protected itself (a sandbox refuses a protected link), and why
/// nothing the agent does after a command relies on it: that walks down
/// with `O_NOFOLLOW` handles instead.
///
/// ```
/// use agent_sandbox::links_on_the_way;
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("real")).unwrap();
/// std::os::unix::fs::symlink("real", dir.path().join("lnk")).unwrap();
/// assert_eq!(
///     links_on_the_way(dir.path(), &dir.path().join("lnk/x")),
///     [dir.path().join("lnk")]
/// );
/// ```
pub fn links_on_the_way(root: &Path, path: &Path) -> Vec<PathBuf> {
    let Ok(rest) = path.strip_prefix(root) else {
        return Vec::new();
    };
    let mut at = root.to_path_buf();
    let mut links = Vec::new();
    for part in rest.components() {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            links.push(at.clone());
        }
    }
    links
}

/// Variables naming files or directories whose content a shell or git
/// runs or obeys later (configuration homes, startup files), beside the
/// home itself: when one lies inside the temp dir, the temp dir is not
/// writable (see [`SandboxPolicy::temp_dir_writable`]).
pub const STARTUP_PLACE_VARS: [&str; 8] = [
    "XDG_CONFIG_HOME",
    "ZDOTDIR",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "BASH_ENV",
    "ENV",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
];

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
            protected: Vec::new(),
            exclude_tmp: false,
        }
    }

    /// [`SandboxPolicy::new`] in `WorkspaceWrite` with nothing writable
    /// but `root`: the temporary directory is not (`exclude_tmp`).
    ///
    /// ```
    /// use agent_sandbox::SandboxPolicy;
    /// let p = SandboxPolicy::workspace_only("/work/project");
    /// assert!(!p.temp_dir_writable());
    /// ```
    pub fn workspace_only(root: impl Into<PathBuf>) -> Self {
        let mut policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, root);
        policy.exclude_tmp = true;
        policy
    }

    /// A policy of `mode` confined to `root` with the default deny globs
    /// and secret patterns; network off.
    ///
    /// In `WorkspaceWrite`, the temporary directory (`$TMPDIR`, else
    /// `/tmp`) is writable too, as compilers and test runners need it
    /// ([`SandboxPolicy::temp_dir_writable`]); set `exclude_tmp` for the
    /// workspace alone, or use [`SandboxPolicy::workspace_only`].
    ///
    /// ```
    /// use agent_sandbox::{SandboxMode, SandboxPolicy};
    /// let p = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/work/project");
    /// assert_eq!(p.roots, [std::path::PathBuf::from("/work/project")]);
    /// assert!(p.deny_read.iter().any(|g| g == "**/.env"));
    /// assert!(!p.network);
    /// ```
    pub fn new(mode: SandboxMode, root: impl Into<PathBuf>) -> Self {
        let home = canonical_home();
        let mut policy = SandboxPolicy {
            mode,
            roots: vec![canonical(&root.into())],
            deny_read: DEFAULT_DENY_READ
                .iter()
                .flat_map(|g| {
                    let expanded = expand_home(g, home.as_deref());
                    // `~/.ssh` may itself be a link (stow, chezmoi): its
                    // target is denied too.
                    let resolved = expanded
                        .strip_suffix("/**")
                        .filter(|d| d.starts_with('/'))
                        .map(|d| format!("{}/**", canonical(Path::new(d)).display()))
                        .filter(|r| *r != expanded);
                    std::iter::once(expanded).chain(resolved)
                })
                .collect(),
            network: false,
            pass_env: Vec::new(),
            secret_env: DEFAULT_SECRET_ENV.iter().map(|s| s.to_string()).collect(),
            protected: Vec::new(),
            exclude_tmp: false,
        };
        policy.protect_defaults();
        // The agent's own files (tokens, sessions, credentials) are not the
        // model's to read.
        for dir in agent_dirs() {
            let glob = format!("{}/**", canonical(&dir).display());
            if !policy.deny_read.contains(&glob) {
                policy.deny_read.push(glob);
            }
        }
        policy
    }

    /// Whether any confinement applies.
    pub fn is_on(&self) -> bool {
        self.mode != SandboxMode::Off
    }

    /// Recomputes [`protected`](Self::protected) from the roots: each
    /// root's [`PROTECTED_NAMES`] and the agent directory. Call it after
    /// changing `roots` by hand.
    pub fn protect_defaults(&mut self) {
        let mut protected: Vec<PathBuf> = self
            .roots
            .iter()
            .flat_map(|r| PROTECTED_NAMES.iter().map(move |n| r.join(n)))
            .collect();
        // A `.git` file (`git init --separate-git-dir`, worktrees) names the
        // repository elsewhere; when that lies in a root it is as much the
        // repository as a `.git` directory, and so is its common directory.
        for root in &self.roots {
            for dir in separate_git_dirs(root) {
                if self.roots.iter().any(|r| dir.starts_with(r)) && !protected.contains(&dir) {
                    protected.push(dir);
                }
            }
        }
        protected.extend(agent_dirs().iter().map(|d| canonical(d)));
        protected.dedup();
        self.protected = protected;
    }

    /// Whether `path` (absolute, symlinks resolved) is, or lies below, a
    /// protected path.
    ///
    /// ```
    /// use agent_sandbox::{SandboxMode, SandboxPolicy};
    /// let p = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/w/p");
    /// assert!(p.is_protected(std::path::Path::new("/w/p/.git/hooks/pre-commit")));
    /// assert!(p.is_protected(std::path::Path::new("/w/p/.pi/settings.json")));
    /// assert!(!p.is_protected(std::path::Path::new("/w/p/src/.gitignore")));
    /// ```
    pub fn is_protected(&self, path: &Path) -> bool {
        self.protected.iter().any(|p| path.starts_with(p))
    }

    /// Whether the temp dir is among the writable places: in
    /// workspace-write mode unless `sandbox.excludeTmp`, and unless writing
    /// it could plant what git or a shell runs later outside the sandbox:
    /// a home inside it (`HOME=/tmp`: `~/.bashrc`), a configuration place
    /// named by the environment inside it ([`STARTUP_PLACE_VARS`]:
    /// `XDG_CONFIG_HOME=/tmp/.config` holds git's global config), or a root
    /// inside it, whose parent directories could get a `.git` (or become a
    /// bare repository) that git, run later in the workspace, would find.
    /// Where it is not, commands get a private, empty one.
    ///
    /// ```
    /// use agent_sandbox::{SandboxMode, SandboxPolicy};
    /// let tmp = std::env::temp_dir();
    /// let inside = SandboxPolicy::new(SandboxMode::WorkspaceWrite, tmp.join("clone/project"));
    /// assert!(!inside.temp_dir_writable());
    /// let mut p = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/work/project");
    /// p.exclude_tmp = true;
    /// assert!(!p.temp_dir_writable());
    /// ```
    pub fn temp_dir_writable(&self) -> bool {
        if self.mode != SandboxMode::WorkspaceWrite || self.exclude_tmp {
            return false;
        }
        let tmp = canonical(&std::env::temp_dir());
        let root_inside = self.roots.iter().any(|r| r.starts_with(&tmp) && *r != tmp);
        let home_inside = canonical_home()
            .into_iter()
            .chain(passwd_home().map(|h| canonical(&h)))
            .chain(
                STARTUP_PLACE_VARS
                    .iter()
                    .filter_map(std::env::var_os)
                    .filter(|v| !v.is_empty())
                    .map(|v| canonical(Path::new(&v))),
            )
            .any(|h| h.starts_with(&tmp));
        !root_inside && !home_inside
    }

    /// Whether the variable `name` is removed from commands' environments:
    /// not listed in `passEnv`, and either made of a credential word
    /// ([`CREDENTIAL_WORDS`]) or matching a `secretEnv` pattern (ignoring
    /// case).
    ///
    /// ```
    /// use agent_sandbox::{SandboxMode, SandboxPolicy};
    /// let mut p = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/w");
    /// for secret in ["AWS_SECRET_ACCESS_KEY", "STRIPE_SECRET_KEY", "openai_api_key", "GH_TOKEN"] {
    ///     assert!(p.hides_env(secret), "{secret}");
    /// }
    /// for secret in ["MYSQL_PWD", "OPENAITOKEN", "githubSecret", "DB_PASS", "AWS_CREDS", "SESSION_JWT", "SSHPASS", "PGPASS"] {
    ///     assert!(p.hides_env(secret), "{secret}");
    /// }
    /// for plain in ["PATH", "HOME", "PWD", "OLDPWD", "TOKENIZERS_PARALLELISM", "KEYMAP"] {
    ///     assert!(!p.hides_env(plain), "{plain}");
    /// }
    /// p.pass_env.push("GH_TOKEN".into());
    /// assert!(!p.hides_env("GH_TOKEN"));
    /// ```
    pub fn hides_env(&self, name: &str) -> bool {
        self.env_filter().hides_env(name)
    }

    /// Whether the variable `name=value` is removed from commands'
    /// environments: a secret name ([`hides_env`](Self::hides_env)), or a
    /// value carrying a password in a URL (`postgres://user:pw@host/db`,
    /// `http://user:pw@proxy:3128`), unless `passEnv` lists it.
    ///
    /// ```
    /// use agent_sandbox::{SandboxMode, SandboxPolicy};
    /// let p = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/w");
    /// assert!(p.hides_var("DATABASE_URL", "postgres://app:hunter2@db/main"));
    /// assert!(p.hides_var("HTTPS_PROXY", "http://me:pw@proxy:3128"));
    /// assert!(!p.hides_var("DATABASE_URL", "postgres://db/main"));
    /// assert!(!p.hides_var("HOMEPAGE", "https://example.com/a@b"));
    /// assert!(p.hides_var("SENTRY_URL", "https://abc123@sentry.example/1"));
    /// assert!(p.hides_var("PG_CONN", "host=db user=app password=hunter2"));
    /// assert!(p.hides_var("AZURE_STORAGE", "DefaultEndpointsProtocol=https;AccountKey=abc"));
    /// assert!(p.hides_var("STRIPE", "sk_live_abc"));
    /// assert!(p.hides_var("DB_PW", "x"));
    /// ```
    pub fn hides_var(&self, name: &str, value: &str) -> bool {
        self.env_filter().hides_var(name, value)
    }

    /// The environment rules ([`hides_env`](Self::hides_env),
    /// [`hides_var`](Self::hides_var)) with the `secretEnv` patterns
    /// compiled once, for a whole environment.
    pub fn env_filter(&self) -> EnvFilter<'_> {
        EnvFilter {
            pass_env: &self.pass_env,
            // Patterns that do not compile hide every variable `passEnv` does
            // not keep: a secret pattern must not fail open.
            secret_env: secret_env_matcher(&self.secret_env).ok(),
        }
    }

    /// Resolves the policy for `cwd` from the two settings layers, with `flag` (the
    /// command line's `--sandbox`) in place of the user's `sandbox.mode`,
    /// and `default_mode` when neither says anything: the
    /// [`SandboxSpec`] of [`SandboxSpec::from_settings`], resolved here.
    ///
    /// # Errors
    /// A `sandbox` value of the wrong shape, naming the key: a broken
    /// sandbox setting never means "no sandbox".
    pub fn from_settings(
        settings: SandboxSettings<'_>,
        cwd: &Path,
        flag: Option<SandboxMode>,
        default_mode: SandboxMode,
    ) -> Result<Self, SandboxConfigError> {
        SandboxSpec::from_settings(settings, flag, default_mode)?.resolve(cwd)
    }
}

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

impl SandboxLayer {
    /// The layer a settings file's `sandbox` value gives (none: an empty
    /// layer); `source` names the file in messages (`project`).
    ///
    /// # Errors
    /// A key of the wrong shape, named.
    ///
    /// ```
    /// use agent_sandbox::{SandboxLayer, SandboxMode};
    /// let value = serde_json::json!({"mode": "read-only", "denyRead": ["db/**"]});
    /// let layer = SandboxLayer::from_value(Some(&value), "project").unwrap();
    /// assert_eq!(layer.mode, Some(SandboxMode::ReadOnly));
    /// assert_eq!(layer.deny_read, ["db/**"]);
    /// assert!(SandboxLayer::from_value(Some(&serde_json::json!({"mode": 1})), "").is_err());
    /// ```
    pub fn from_value(value: Option<&Value>, source: &str) -> Result<Self, SandboxConfigError> {
        let label = if source.is_empty() {
            String::new()
        } else {
            format!(" ({source})")
        };
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

/// The words of a variable name, lower-cased: split at non-alphanumerics
/// and at lower-to-upper case changes.
/// Endings that mark a glued-together name as a credential
/// (`OPENAITOKEN`, `SSHPASS`); `key` is left out (`HOTKEY`, `MONKEY`).
const GLUED_CREDENTIAL_ENDINGS: [&str; 6] =
    ["token", "secret", "password", "passwd", "apikey", "pass"];

/// Whether `value` holds a URL with a password in it (`scheme://user:pw@`).
fn url_with_password(value: &str) -> bool {
    let mut rest = value;
    while let Some(at) = rest.find("://") {
        let after = &rest[at + 3..];
        let authority = after
            .split(['/', '?', '#', ' ', ',', ';'])
            .next()
            .unwrap_or("");
        // A password (`user:pw@`), or a key alone as the user
        // (`https://KEY@sentry.example/1`).
        if let Some((userinfo, _)) = authority.rsplit_once('@')
            && !userinfo.is_empty()
        {
            return true;
        }
        rest = after;
    }
    // A libpq-style connection string (`host=db password=...`), an Azure
    // one (`AccountKey=`), or a value shaped like a well-known token.
    let lower = value.to_ascii_lowercase();
    [
        "password=",
        "passwd=",
        "accountkey=",
        "sharedaccesskey=",
        "hooks.slack.com/",
    ]
    .iter()
    .any(|m| lower.contains(m))
        || [
            "sk_live_",
            "sk_test_",
            "ghp_",
            "gho_",
            "github_pat_",
            "glpat-",
            "xoxb-",
            "xoxp-",
            "AKIA",
        ]
        .iter()
        .any(|p| value.starts_with(p))
}

fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        current.push(c.to_ascii_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// A policy's environment rules, its `secretEnv` patterns compiled: see
/// [`SandboxPolicy::env_filter`].
#[derive(Debug, Clone)]
pub struct EnvFilter<'p> {
    pass_env: &'p [String],
    /// `None` when the patterns do not compile (see [`secret_env_matcher`]).
    secret_env: Option<globset::GlobSet>,
}

impl EnvFilter<'_> {
    /// As [`SandboxPolicy::hides_env`].
    pub fn hides_env(&self, name: &str) -> bool {
        if self.pass_env.iter().any(|p| p == name) {
            return false;
        }
        let words = name_words(name);
        // `MYSQL_PWD` is a password; the shell's own `PWD` and `OLDPWD` are not.
        let is_shell_pwd = name.eq_ignore_ascii_case("PWD") || name.eq_ignore_ascii_case("OLDPWD");
        let credential = words.iter().any(|w| CREDENTIAL_WORDS.contains(&w.as_str()))
            || (!is_shell_pwd && words.iter().any(|w| w == "pwd"))
            // Words glued together: `OPENAITOKEN`, `githubsecret`.
            || words.iter().any(|w| {
                GLUED_CREDENTIAL_ENDINGS
                    .iter()
                    .any(|end| w.len() > end.len() && w.ends_with(end))
            })
            || words.windows(2).any(|p| {
                matches!(
                    (p[0].as_str(), p[1].as_str()),
                    ("api" | "access" | "private" | "secret" | "signing", "key")
                )
            });
        credential
            || self
                .secret_env
                .as_ref()
                .is_none_or(|set| set.is_match(name.to_ascii_lowercase()))
    }

    /// As [`SandboxPolicy::hides_var`].
    pub fn hides_var(&self, name: &str, value: &str) -> bool {
        if self.pass_env.iter().any(|p| p == name) {
            return false;
        }
        self.hides_env(name) || url_with_password(value)
    }
}

/// The `secretEnv` patterns as one set over lower-case names: `*` matches
/// any run of characters, every other character stands for itself, case
/// ignored (ASCII). Only a pattern far past any name's length fails to
/// compile.
fn secret_env_matcher(patterns: &[String]) -> Result<globset::GlobSet, globset::Error> {
    let mut set = globset::GlobSetBuilder::new();
    for pattern in patterns {
        set.add(agent_tool::wildcard::wildcard_glob(
            &pattern.to_ascii_lowercase(),
        )?);
    }
    set.build()
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

/// The effective user's home directory as `/etc/passwd` records it.
fn passwd_home() -> Option<PathBuf> {
    let uid = rustix::process::geteuid().as_raw().to_string();
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.len() >= 6 && f[2] == uid)
        .map(|f| canonical(Path::new(f[5])))
        .filter(|p| p != Path::new("/") && p.is_absolute())
}

/// The home directory as the kernel names it (symlinks resolved), so
/// `~/.ssh/**` matches the paths the tools actually open.
fn canonical_home() -> Option<PathBuf> {
    std::env::home_dir().map(|h| canonical(&h))
}

fn expand_home(text: &str, home: Option<&Path>) -> String {
    match (text.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest).display().to_string(),
        _ => text.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn layers<'a>(global: &'a Value, project: &'a Value) -> SandboxSettings<'a> {
        SandboxSettings {
            user: global.get("sandbox"),
            project: project.get("sandbox"),
        }
    }

    fn policy(global: Value, project: Value, flag: Option<SandboxMode>) -> SandboxPolicy {
        SandboxPolicy::from_settings(
            layers(&global, &project),
            Path::new("/w/p"),
            flag,
            SandboxMode::Off,
        )
        .unwrap()
    }

    #[test]
    fn a_project_only_tightens() {
        // Cannot turn it off.
        let p = policy(
            json!({"sandbox": {"mode": "workspace-write"}}),
            json!({"sandbox": {"mode": "off", "network": true, "additionalDirectories": ["/"],
                   "passEnv": ["AWS_SECRET"], "excludeTmp": false}}),
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
    fn a_spec_travels_as_written_and_resolves_where_it_lands() {
        let (global, project) = (
            json!({"sandbox": {"mode": "read-only", "roots": [".", "../lib"], "denyRead": ["secrets/**", "~/.netrc"],
                               "network": true, "passEnv": ["GH_TOKEN"], "secretEnv": ["CORP_*"], "excludeTmp": true}}),
            json!({"sandbox": {"denyRead": ["db/*.sqlite"]}}),
        );
        let spec = SandboxSpec::from_settings(
            layers(&global, &project),
            Some(SandboxMode::WorkspaceWrite),
            SandboxMode::Off,
        )
        .unwrap();
        // The wire form is JSON with the settings' names, and reads back whole.
        let wire = serde_json::to_value(&spec).unwrap();
        assert_eq!(wire["user"]["mode"], "workspace-write");
        assert_eq!(wire["user"]["denyRead"], json!(["secrets/**", "~/.netrc"]));
        assert_eq!(wire["tightening"][0]["source"], "project");
        let back: SandboxSpec = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(back, spec);
        // A field this side does not know is refused, not ignored.
        let mut unknown = wire;
        unknown["user"]["allowEverything"] = json!(true);
        assert!(serde_json::from_value::<SandboxSpec>(unknown).is_err());
        // Resolved where it lands: relative paths below that workspace.
        let p = back.resolve(Path::new("/srv/app")).unwrap();
        assert_eq!(p.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(
            p.roots,
            [PathBuf::from("/srv/app"), PathBuf::from("/srv/lib")]
        );
        for glob in ["/srv/app/secrets/**", "/srv/app/db/*.sqlite"] {
            assert!(
                p.deny_read.iter().any(|g| g == glob),
                "{glob}: {:?}",
                p.deny_read
            );
        }
        if let Some(home) = canonical_home() {
            let netrc = format!("{}/.netrc", home.display());
            assert!(p.deny_read.contains(&netrc), "{:?}", p.deny_read);
        }
        assert!(p.network && p.exclude_tmp);
        assert_eq!(p.pass_env, ["GH_TOKEN"]);
        assert!(p.secret_env.iter().any(|s| s == "CORP_*"));
        assert!(p.is_protected(Path::new("/srv/app/.git/config")));
    }

    #[test]
    fn a_later_layer_cannot_widen_the_spec() {
        let mut spec = SandboxSpec::default();
        spec.user.mode = Some(SandboxMode::WorkspaceWrite);
        spec.user.exclude_tmp = Some(true);
        let remote = json!({"mode": "off", "additionalDirectories": ["/"], "network": true,
                            "passEnv": ["AWS_SECRET"], "excludeTmp": false, "denyRead": ["keys/**"]});
        spec.tighten(SandboxLayer::from_value(Some(&remote), "remote settings").unwrap());
        assert_eq!(spec.mode(), SandboxMode::WorkspaceWrite);
        let p = spec.resolve(Path::new("/srv/app")).unwrap();
        assert_eq!(p.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(p.roots, [PathBuf::from("/srv/app")]);
        assert!(!p.network);
        assert!(p.pass_env.is_empty());
        assert!(p.exclude_tmp);
        assert!(p.deny_read.iter().any(|g| g == "/srv/app/keys/**"));
        // A root outside is refused, naming the layer.
        let mut wider = spec.clone();
        let roots = json!({"roots": ["/"]});
        wider.tighten(SandboxLayer::from_value(Some(&roots), "remote settings").unwrap());
        let err = wider.resolve(Path::new("/srv/app")).unwrap_err();
        assert!(err.0.contains("sandbox.roots (remote settings)"), "{err}");
        // An unset mode may be switched on by a later layer, never off.
        let mut off = SandboxSpec::default();
        let on = json!({"mode": "read-only"});
        off.tighten(SandboxLayer::from_value(Some(&on), "remote settings").unwrap());
        assert!(off.is_chosen());
        assert_eq!(
            off.resolve(Path::new("/srv/app")).unwrap().mode,
            SandboxMode::ReadOnly
        );
    }

    #[test]
    fn a_project_root_outside_the_users_is_refused() {
        let (global, project) = (
            json!({"sandbox": {"mode": "workspace-write"}}),
            json!({"sandbox": {"roots": ["/"]}}),
        );
        let settings = layers(&global, &project);
        let err = SandboxPolicy::from_settings(settings, Path::new("/w/p"), None, SandboxMode::Off)
            .unwrap_err();
        assert!(err.0.contains("outside the user's roots"), "{err}");
        // Judged on where a symlink points, not on its name.
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("escape")).unwrap();
        let (global, project) = (
            json!({"sandbox": {"mode": "workspace-write"}}),
            json!({"sandbox": {"roots": ["escape"]}}),
        );
        let settings = layers(&global, &project);
        let err = SandboxPolicy::from_settings(settings, &ws, None, SandboxMode::Off).unwrap_err();
        assert!(err.0.contains("outside the user's roots"), "{err}");
        let real = std::fs::canonicalize(&ws).unwrap();
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        let (global, project) = (
            json!({"sandbox": {"mode": "workspace-write"}}),
            json!({"sandbox": {"roots": ["sub"], "excludeTmp": true}}),
        );
        let settings = layers(&global, &project);
        let p = SandboxPolicy::from_settings(settings, &ws, None, SandboxMode::Off).unwrap();
        assert_eq!(p.roots, [real.join("sub")]);
        assert!(p.exclude_tmp);
        assert!(p.is_protected(&real.join("sub/.git/config")));
        // The user's root keeps its protected paths after narrowing, and a
        // project root inside one of them is refused.
        assert!(p.is_protected(&real.join(".git/config")));
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        for root in [".git", ".git/hooks", ".pi", "./.git/../.git"] {
            let (global, project) = (
                json!({"sandbox": {"mode": "workspace-write"}}),
                json!({"sandbox": {"roots": [root]}}),
            );
            let settings = layers(&global, &project);
            let err =
                SandboxPolicy::from_settings(settings, &ws, None, SandboxMode::Off).unwrap_err();
            assert!(err.0.contains("inside the protected path"), "{root}: {err}");
        }
    }

    #[test]
    fn a_writable_home_is_refused() {
        let Some(home) = canonical_home() else {
            return;
        };
        let (global, project) = (json!({"sandbox": {"mode": "workspace-write"}}), json!({}));
        let settings = layers(&global, &project);
        let err =
            SandboxPolicy::from_settings(settings, &home, None, SandboxMode::Off).unwrap_err();
        assert!(err.0.contains("home directory"), "{err}");
        let err = SandboxPolicy::from_settings(settings, Path::new("/"), None, SandboxMode::Off)
            .unwrap_err();
        assert!(err.0.contains("home directory"), "{err}");
        // A default (the MCP server's) becomes read-only instead.
        let p = SandboxPolicy::from_settings(
            SandboxSettings::default(),
            &home,
            None,
            SandboxMode::WorkspaceWrite,
        )
        .unwrap();
        assert_eq!(p.mode, SandboxMode::ReadOnly);
    }

    #[test]
    fn wrong_shapes_are_errors() {
        let (global, project) = (json!({"sandbox": {"mode": "strict"}}), json!({}));
        let settings = layers(&global, &project);
        let err = SandboxPolicy::from_settings(settings, Path::new("/w"), None, SandboxMode::Off)
            .unwrap_err();
        assert!(err.0.contains("sandbox.mode"), "{err}");
        let (global, project) = (
            json!({"sandbox": {"mode": "read-only", "roots": "/"}}),
            json!({}),
        );
        let settings = layers(&global, &project);
        assert!(
            SandboxPolicy::from_settings(settings, Path::new("/w"), None, SandboxMode::Off)
                .is_err()
        );
    }

    #[test]
    fn secret_patterns_match_whole_names_ignoring_case() {
        let p = policy(
            json!({"sandbox": {"mode": "workspace-write", "secretEnv": ["MY_PRIVATE_*", "*internal*", "A?B", "x[1]", "**_Q"],
                               "passEnv": ["MY_PRIVATE_OK"]}}),
            json!({"sandbox": {"secretEnv": ["CORP_*_ID"]}}),
            None,
        );
        let env = p.env_filter();
        for hidden in [
            "MY_PRIVATE_THING",
            "my_private_",
            "My_Private_X/Y",
            "INTERNAL",
            "THE_INTERNAL_HOST",
            "A?B",
            "a?b",
            "X[1]",
            "_Q",
            "RUN_Q",
            "CORP_EU_ID",
            "corp__id",
        ] {
            assert!(env.hides_env(hidden), "{hidden}");
            assert_eq!(p.hides_env(hidden), env.hides_env(hidden), "{hidden}");
        }
        for kept in [
            "MY_PRIVATE_OK",
            "MY_PRIVATE",
            "XMY_PRIVATE_THING",
            "AXB",
            "X1",
            "Q",
            "CORP_ID",
            "CORP_EU_IDS",
            "PATH",
        ] {
            assert!(!env.hides_env(kept), "{kept}");
            assert_eq!(p.hides_env(kept), env.hides_env(kept), "{kept}");
        }
    }

    #[test]
    fn secret_patterns_that_do_not_compile_hide_everything() {
        // Past globset's regex size limit.
        let huge = "a*".repeat(400_000);
        let (global, project) = (
            json!({"sandbox": {"mode": "read-only", "secretEnv": [huge.clone()]}}),
            json!({}),
        );
        let resolved = SandboxPolicy::from_settings(
            layers(&global, &project),
            Path::new("/w"),
            None,
            SandboxMode::Off,
        );
        let Err(err) = resolved else {
            panic!("a pattern past the size limit was accepted");
        };
        assert!(err.0.contains("sandbox.secretEnv"), "{}", &err.0[..100]);
        let mut p = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/w");
        p.secret_env.push(huge);
        p.pass_env.push("HOME".into());
        assert!(p.hides_var("PATH", "/usr/bin"));
        assert!(!p.hides_var("HOME", "/root"));
    }
}
