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

mod env;
mod spec;
#[cfg(test)]
mod tests;

pub use env::EnvFilter;
use env::secret_env_matcher;
pub use spec::{SandboxConfigError, SandboxLayer, SandboxSpec};

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
