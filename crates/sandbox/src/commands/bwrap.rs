//! bubblewrap (`bwrap`): the namespaces a sandboxed command runs in, as a
//! command line built from the policy.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::policy::{SandboxMode, SandboxPolicy};

/// Names the bubblewrap binary to use instead of looking in the system's
/// directories (for a non-standard install, and for tests).
pub const BWRAP_PATH_VAR: &str = "CODING_AGENT_BWRAP";

/// Where bubblewrap is looked for: system directories only, never a
/// relative or project-controlled `PATH` entry.
const SYSTEM_DIRS: [&str; 4] = ["/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin"];

/// The bubblewrap binary, or the words to tell the user how to get it.
pub(crate) fn find() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(BWRAP_PATH_VAR).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("{BWRAP_PATH_VAR}={} names no file", path.display()))
        };
    }
    SYSTEM_DIRS
        .iter()
        .map(|d| Path::new(d).join("bwrap"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: apt-get install bubblewrap, Fedora: dnf install bubblewrap)".to_string()
        })
}

/// The options placing a command in its sandbox (everything before the
/// working directory and the command, see [`chdir_then_command`]). `disable_userns` adds `--disable-userns` (bubblewrap
/// 0.8 and later), so the command cannot make namespaces of its own.
///
/// # Errors
/// A protected path (or a submodule's `.git`) that is a symbolic link:
/// a mount follows links, so the link itself would stay replaceable.
pub(crate) fn args(
    policy: &SandboxPolicy,
    read_only: &[PathBuf],
    disable_userns: bool,
) -> Result<Vec<OsString>, String> {
    let mut a = Args::default();
    // A user namespace even as root: capabilities inside it give nothing
    // outside (no device nodes, no raw disks, no module loading).
    a.flag("--unshare-user");
    a.flag("--unshare-pid");
    a.flag("--unshare-ipc");
    a.flag("--unshare-uts");
    a.flag("--unshare-cgroup-try");
    if !policy.network {
        // Only loopback inside: `/proc/net` lists none of the host's
        // sockets, and no abstract socket of the host is reachable (the
        // seccomp filter already refuses every socket but netlink's).
        a.flag("--unshare-net");
    }
    if disable_userns {
        a.flag("--disable-userns");
    }
    a.flag("--die-with-parent");
    // No capabilities inside, even as root: no file capabilities set
    // (CAP_SETFCAP), nothing overridden on the files root owns.
    a.one("--cap-drop", "ALL");
    // Own session: no TIOCSTI into the agent's terminal.
    a.flag("--new-session");
    // Everything read-only, metadata included; then the writable places.
    a.pair("--ro-bind", "/", "/");
    a.one("--dev", "/dev");
    a.one("--proc", "/proc");
    // bubblewrap's own cover of these is skipped when it cannot tell that
    // they are writable (0.8 asks access(), which says no): as root they
    // are, to the host's root (see `child::PROC_READ_ONLY`).
    for path in super::child::PROC_READ_ONLY {
        let path = Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
        if path.exists() {
            a.pair("--ro-bind", path, path);
        }
    }
    let tmp = agent_tool::path::canonical(&std::env::temp_dir());
    if let Some(tmp) = shared_tmp(policy) {
        a.pair("--bind", &tmp, &tmp);
    } else {
        // A private, empty temp dir: tools that need one work, nothing
        // outside changes, and it is gone when the command ends.
        a.one("--tmpfs", &tmp);
    }
    for root in &policy.roots {
        let bind = if policy.mode == SandboxMode::WorkspaceWrite {
            "--bind"
        } else {
            "--ro-bind"
        };
        // A root under the temp dir must come back after the tmpfs.
        a.pair(bind, root, root);
    }
    if read_only.len() > MAX_READ_ONLY_PATHS {
        return Err(format!(
            "the workspace has {} paths to keep read-only (submodules, worktrees), more than the {MAX_READ_ONLY_PATHS} the sandbox can mount",
            read_only.len()
        ));
    }
    // What a later, unsandboxed run would execute stays read-only.
    // Only what lies in a writable place needs a mount of its own. The look
    // follows no link (a parallel command may be swapping directories): a
    // link at the path or on the way to it is refused, since bubblewrap's
    // mount would follow it and the link itself would stay replaceable.
    let places = writable_places(policy);
    let writable = writable_ones(policy, read_only);
    // The directories on the way to a protected path are bound onto
    // themselves first: a mount point cannot be renamed or removed (EBUSY),
    // so no command can move a protected path away, put another in its
    // place or swap a directory on the way for a link while it runs. Were
    // they movable, a command running in parallel could move `sub` aside
    // while another command's namespace is built, and that namespace would
    // leave the real `sub/.git` writable wherever it went.
    if policy.mode == SandboxMode::WorkspaceWrite {
        for dir in ancestors_inside(&writable, &places) {
            match crate::beneath::look(&places, &dir) {
                crate::beneath::Look::Link(link) => {
                    return Err(format!(
                        "{} is a symbolic link on the way to a protected path, and a link cannot be kept in place (a command could replace it); replace it with what it names, or run with --sandbox off",
                        link.display()
                    ));
                }
                crate::beneath::Look::Present => a.pair("--bind", &dir, &dir),
                crate::beneath::Look::Absent => {}
            }
        }
    }
    for path in &writable {
        match crate::beneath::look(&places, path) {
            crate::beneath::Look::Link(link) => {
                return Err(format!(
                    "{} is a symbolic link, and a link cannot be kept read-only (a command could replace it); replace it with what it names, or run with --sandbox off",
                    link.display()
                ));
            }
            crate::beneath::Look::Present => a.pair("--ro-bind", path, path),
            crate::beneath::Look::Absent => {}
        }
    }
    // The agent directory holds the agent's own secrets (MCP tokens,
    // sessions of every project, credentials): commands see it empty.
    // Pi's default one too (`~/.pi/agent`, its auth.json) when
    // CODING_AGENT_DIR names another.
    let mut hidden: Vec<PathBuf> = Vec::new();
    for dir in crate::policy::agent_dirs()
        .iter()
        .map(|d| agent_tool::path::canonical(d))
    {
        if hidden.contains(&dir) {
            continue;
        }
        hidden.push(dir.clone());
        if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir())
            && !policy.roots.iter().any(|r| r.starts_with(&dir))
        {
            a.one("--tmpfs", &dir);
            a.one("--remount-ro", &dir);
        }
    }
    // Denied files and directories that exist now are hidden from
    // commands too (patterns with wildcards are for the file tools).
    for glob in &policy.deny_read {
        let literal = glob.strip_suffix("/**").unwrap_or(glob);
        if literal.contains(['*', '?', '[', '{']) || !literal.starts_with('/') {
            continue;
        }
        // A link (`~/.ssh` kept in a dotfiles repository) hides what it
        // names.
        let resolved = std::fs::canonicalize(literal).unwrap_or_else(|_| PathBuf::from(literal));
        let path = resolved.as_path();
        // Never hide a root (a pattern such as `/home/**`), nor twice.
        if policy.roots.iter().any(|r| r.starts_with(path)) || hidden.iter().any(|h| h == path) {
            continue;
        }
        hidden.push(path.to_path_buf());
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => {
                a.one("--tmpfs", path);
                a.one("--remount-ro", path);
            }
            Ok(m) if m.is_file() => a.pair("--ro-bind", Path::new("/dev/null"), path),
            _ => {}
        }
    }
    Ok(a.0)
}

/// The directories strictly between a writable place and each of
/// `paths`, shallowest first, each once.
fn ancestors_inside(paths: &[PathBuf], places: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for path in paths {
        for dir in path.ancestors().skip(1) {
            if places.iter().any(|p| p == dir) || !places.iter().any(|p| dir.starts_with(p)) {
                break;
            }
            if !found.iter().any(|f| f == dir) {
                found.push(dir.to_path_buf());
            }
        }
    }
    found.sort_by_key(|d| d.components().count());
    found
}

/// The end of a bubblewrap command line: the working directory, then the
/// command.
pub(crate) fn chdir_then_command(args: &mut Vec<OsString>, cwd: &Path) {
    args.push("--chdir".into());
    args.push(cwd.as_os_str().to_os_string());
    args.push("--".into());
}

/// The paths inside the writable places that stay read-only: the policy's
/// protected paths and, in workspace-write mode, the `.git` of every
/// submodule of each root (see [`gitlinks`](super::gitlinks)).
///
/// # Errors
/// A git index that cannot be read whole (see
/// [`gitlinks`](super::gitlinks)).
pub(crate) fn read_only_paths(policy: &SandboxPolicy) -> Result<Vec<PathBuf>, String> {
    let mut paths = policy.protected.clone();
    if policy.mode == SandboxMode::WorkspaceWrite {
        for root in &policy.roots {
            for entry in super::gitlinks::submodule_git_entries(root, &writable_places(policy))? {
                if !paths.contains(&entry) {
                    paths.push(entry);
                }
            }
        }
    }
    // Linked worktrees outside every root need nothing: they are read-only.
    paths.retain(|p| policy.protected.contains(p) || policy.roots.iter().any(|r| p.starts_with(r)));
    Ok(paths)
}

/// The paths of `paths` a command could create: those below a writable
/// root or the shared temp dir. Only these need a placeholder; creating
/// one anywhere else (the agent directory in the home) would be a change
/// outside the workspace for nothing.
pub(crate) fn writable_ones(policy: &SandboxPolicy, paths: &[PathBuf]) -> Vec<PathBuf> {
    let places = writable_places(policy);
    paths
        .iter()
        .filter(|p| places.iter().any(|w| p.starts_with(w)))
        .cloned()
        .collect()
}

/// Where a command may create, rename or replace things when it runs in
/// workspace-write mode: the roots and the shared temp dir. Whatever the
/// agent does below one of them after a command started goes through
/// handles walked down from it (see [`crate::beneath`]).
pub(crate) fn writable_places(policy: &SandboxPolicy) -> Vec<PathBuf> {
    policy
        .roots
        .iter()
        .cloned()
        .chain(shared_tmp(policy))
        .collect()
}

/// The temp dir when commands share the machine's (writable), `None` when
/// they get a private one (see [`SandboxPolicy::temp_dir_writable`]).
pub(crate) fn shared_tmp(policy: &SandboxPolicy) -> Option<PathBuf> {
    policy
        .temp_dir_writable()
        .then(|| agent_tool::path::canonical(&std::env::temp_dir()))
}

/// More read-only paths than this and bubblewrap's argument limit would
/// fail every command obscurely: refuse plainly instead.
pub(crate) const MAX_READ_ONLY_PATHS: usize = 2000;

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flag(&mut self, flag: &str) {
        self.0.push(flag.into());
    }
    fn one(&mut self, flag: &str, value: impl AsRef<std::ffi::OsStr>) {
        self.0.push(flag.into());
        self.0.push(value.as_ref().to_os_string());
    }
    fn pair(
        &mut self,
        flag: &str,
        source: impl AsRef<std::ffi::OsStr>,
        dest: impl AsRef<std::ffi::OsStr>,
    ) {
        self.one(flag, source);
        self.0.push(dest.as_ref().to_os_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// bubblewrap 0.8 leaves `/proc/sys` writable for a root sandbox when
    /// `access()` says no; the options cover it themselves, for every
    /// command and program started through bubblewrap.
    #[test]
    fn host_wide_proc_settings_are_mounted_read_only() {
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/nonexistent-root");
        let args = args(&policy, &[], true).unwrap();
        let proc_at = args.iter().position(|a| a == "--proc").unwrap();
        let covered = args
            .windows(3)
            .position(|w| w[0] == "--ro-bind" && w[1] == "/proc/sys" && w[2] == "/proc/sys")
            .expect("/proc/sys read-only");
        assert!(covered > proc_at, "the cover must come after the mount");
        assert!(args.iter().any(|a| a == "--unshare-net"), "network off");
    }

    /// The directories on the way to a protected path are mount points
    /// in the sandbox, bound before the protected path itself.
    #[test]
    fn the_way_to_a_protected_path_is_pinned_shallow_first() {
        let dir = tempfile::tempdir().unwrap();
        let root = agent_tool::path::canonical(dir.path());
        std::fs::create_dir_all(root.join("a/sub/.git")).unwrap();
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &root);
        let protected = [root.join("a/sub/.git")];
        let args = args(&policy, &protected, true).unwrap();
        let at = |flag: &str, path: &Path| {
            args.windows(3)
                .position(|w| w[0] == flag && w[1] == path.as_os_str() && w[2] == path.as_os_str())
        };
        let a = at("--bind", &root.join("a")).expect("a pinned");
        let sub = at("--bind", &root.join("a/sub")).expect("sub pinned");
        let git = at("--ro-bind", &root.join("a/sub/.git")).expect(".git read-only");
        assert!(a < sub && sub < git, "{args:?}");
        assert!(at("--bind", &root).unwrap() < a, "the root first");
    }
}
