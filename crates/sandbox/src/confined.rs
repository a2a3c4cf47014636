//! [`ConfinedFileOps`]: file operations that cannot leave the sandbox roots
//! or touch denied files.
//!
//! Every path is opened through a handle of its root with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: the kernel resolves
//! symlinks and `..` and refuses any resolution that leaves the root, and the
//! tool then reads through the very descriptor that was checked, so there is
//! no window between check and use. Deny globs are matched against the path
//! the kernel actually opened. Writes run on a thread restricted by Landlock
//! to the writable roots, so even a symlink swapped in mid-write cannot send
//! the bytes elsewhere.

use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::policy::{SandboxMode, SandboxPolicy};
use agent_tool::path::normalize_path;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use rustix::fs::{Mode, OFlags, ResolveFlags};

use agent_local_ops::LocalFileOps;
use agent_tool::ops::SandboxDenied;
use agent_tool::ops::{
    DirEntryInfo, FileInfo, FileOps, WalkEntry, WalkOptions, WalkVisitor, WriteOutcome,
};

/// One directory the tools may use.
#[derive(Debug)]
struct Root {
    /// As configured (absolute, normalised).
    given: PathBuf,
    /// After resolving symlinks, when it differs.
    real: PathBuf,
    /// An `O_PATH` handle opened once, the base of every resolution.
    fd: OwnedFd,
    /// Whether the tools may write below it.
    writable: bool,
}

/// File operations confined by a [`SandboxPolicy`]: reads only below the
/// roots (and the temp dir, where bash leaves full outputs), writes only
/// below them in `workspace-write` and never in `read-only`, denied files
/// neither read, listed, searched nor written.
pub struct ConfinedFileOps {
    inner: Arc<dyn FileOps>,
    roots: Vec<Root>,
    deny: GlobSet,
    mode: SandboxMode,
    /// Read-only even inside writable roots (see
    /// [`SandboxPolicy::protected`]).
    protected: Vec<PathBuf>,
}

impl std::fmt::Debug for ConfinedFileOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfinedFileOps")
            .field("mode", &self.mode)
            .field(
                "roots",
                &self.roots.iter().map(|r| &r.given).collect::<Vec<_>>(),
            )
            .finish()
    }
}

fn denied(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, SandboxDenied(message))
}

impl ConfinedFileOps {
    /// Confines the local file system by `policy`.
    ///
    /// # Errors
    /// A root that cannot be opened, or a deny glob that does not parse.
    pub fn new(policy: &SandboxPolicy) -> io::Result<Self> {
        Self::over(Arc::new(LocalFileOps), policy)
    }

    /// Confines `inner` (which must be a local file system) by `policy`.
    ///
    /// # Errors
    /// As [`ConfinedFileOps::new`].
    pub fn over(inner: Arc<dyn FileOps>, policy: &SandboxPolicy) -> io::Result<Self> {
        let writable = policy.mode == SandboxMode::WorkspaceWrite;
        let mut roots = Vec::new();
        let temp = normalize_path(&std::env::temp_dir());
        // The temp dir stays readable (bash's full-output files live there)
        // but is written only when commands may write it too.
        let temp_writable = writable && policy.temp_dir_writable();
        for (path, writable) in policy
            .roots
            .iter()
            .map(|r| (r.clone(), writable))
            .chain(std::iter::once((temp, temp_writable)))
        {
            let fd = rustix::fs::open(
                &path,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| {
                io::Error::new(
                    io::Error::from(e).kind(),
                    format!("sandbox root {}: {e}", path.display()),
                )
            })?;
            let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            roots.push(Root {
                given: path,
                real,
                fd,
                writable,
            });
        }
        let mut deny = GlobSetBuilder::new();
        for pattern in &policy.deny_read {
            let glob = GlobBuilder::new(pattern)
                .case_insensitive(true)
                .literal_separator(true)
                .build()
                .map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("sandbox.denyRead {pattern:?}: {e}"),
                    )
                })?;
            deny.add(glob);
            // `dir/**` also denies `dir` itself.
            if let Some(dir) = pattern.strip_suffix("/**")
                && let Ok(glob) = GlobBuilder::new(dir)
                    .case_insensitive(true)
                    .literal_separator(true)
                    .build()
            {
                deny.add(glob);
            }
        }
        let deny = deny
            .build()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        Ok(ConfinedFileOps {
            inner,
            roots,
            deny,
            mode: policy.mode,
            protected: policy.protected.clone(),
        })
    }

    /// Refuses a write to `real` (symlinks resolved) when it is, or lies
    /// below, a protected path: `.git` or `.pi` anywhere under a root, or
    /// the agent directory. What a later, unsandboxed run executes (git
    /// hooks and config, the project's agent settings) is never written
    /// from inside the sandbox.
    fn refuse_protected(&self, real: &Path, shown: &Path) -> io::Result<()> {
        let under_root_named = self.roots.iter().any(|root| {
            real.strip_prefix(&root.real).is_ok_and(|rest| {
                rest.components().any(|c| {
                    crate::policy::PROTECTED_NAMES
                        .iter()
                        .any(|n| c.as_os_str() == std::ffi::OsStr::new(n))
                })
            })
        });
        if under_root_named || self.protected.iter().any(|p| real.starts_with(p)) {
            return Err(denied(format!(
                "Sandbox: {} is protected (.git, .pi, .agents and the agent directory stay read-only: a later run outside the sandbox would execute what is written there)",
                shown.display()
            )));
        }
        Ok(())
    }

    fn roots_text(&self) -> String {
        self.roots
            .iter()
            .map(|r| r.given.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether `path` matches a deny glob (compared in NFC, ignoring case).
    fn is_denied(&self, path: &Path) -> bool {
        use std::os::unix::ffi::OsStrExt;
        if self.deny.is_empty() {
            return false;
        }
        if self.deny.is_match_candidate(&globset::Candidate::new(path)) {
            return true;
        }
        // Another Unicode form of a denied name; only non-ASCII paths can differ.
        let bytes = path.as_os_str().as_bytes();
        if bytes.is_ascii() {
            return false;
        }
        use unicode_normalization::UnicodeNormalization;
        let nfc: String = path.to_string_lossy().nfc().collect();
        self.deny.is_match(&nfc)
    }

    /// The root `path` lies under (lexically) and the rest of the path.
    fn root_of(&self, path: &Path) -> io::Result<(&Root, PathBuf)> {
        let path = normalize_path(path);
        self.roots
            .iter()
            .filter_map(|r| {
                [&r.given, &r.real]
                    .into_iter()
                    .find_map(|base| path.strip_prefix(base).ok())
                    .map(|rest| (r, rest.to_path_buf()))
            })
            // The deepest root wins (a writable root inside a read-only one).
            .max_by_key(|(r, _)| r.given.components().count())
            .ok_or_else(|| {
                denied(format!(
                    "Sandbox: {} is outside the workspace roots ({})",
                    path.display(),
                    self.roots_text()
                ))
            })
    }

    /// Opens `path` beneath its root; the descriptor and the path the kernel
    /// resolved.
    fn open_beneath(&self, path: &Path, flags: OFlags) -> io::Result<(OwnedFd, PathBuf, &Root)> {
        let (root, rest) = self.root_of(path)?;
        let rel: &Path = if rest.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &rest
        };
        let fd = rustix::fs::openat2(
            root.fd.as_fd(),
            rel,
            flags | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        )
        .map_err(|e| match e {
            rustix::io::Errno::XDEV => denied(format!(
                "Sandbox: {} resolves outside the workspace root {} (a symlink or `..` leads out)",
                path.display(),
                root.given.display()
            )),
            rustix::io::Errno::NOSYS => denied(
                "Sandbox: the kernel lacks openat2 (Linux 5.6+), needed to confine file access; run with --sandbox off".to_string(),
            ),
            other => io::Error::from(other),
        })?;
        let real = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))?;
        if self.is_denied(&real) || self.is_denied(&normalize_path(path)) {
            return Err(denied(format!(
                "Sandbox: {} matches a denied pattern (sandbox.denyRead)",
                path.display()
            )));
        }
        Ok((fd, real, root))
    }

    /// Checks that `path` may be written and returns the path to write.
    fn writable_target(&self, path: &Path) -> io::Result<PathBuf> {
        if self.mode == SandboxMode::ReadOnly {
            return Err(denied(format!(
                "Sandbox: {} cannot be modified in read-only mode",
                path.display()
            )));
        }
        let name = path.file_name().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} names no file", path.display()),
            )
        })?;
        let parent = path.parent().unwrap_or(Path::new("/"));
        let (_dir, real_parent, root) =
            self.open_beneath(parent, OFlags::PATH | OFlags::DIRECTORY)?;
        if !root.writable {
            return Err(denied(format!(
                "Sandbox: {} is not under a writable root",
                path.display()
            )));
        }
        let target = real_parent.join(name);
        match self.open_beneath(path, OFlags::PATH) {
            Ok((fd, real, _)) => {
                let stat = rustix::fs::fstat(&fd)?;
                if stat.st_nlink > 1 && (stat.st_mode & libc_s_ifmt()) == libc_s_ifreg() {
                    return Err(denied(format!(
                        "Sandbox: {} has {} hard links; one may lie outside the workspace, so it is not written",
                        path.display(),
                        stat.st_nlink
                    )));
                }
                // Written where the kernel resolved it (a symlink inside the root).
                self.root_of(&real)?;
                self.refuse_protected(&real, path)?;
                Ok(real)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // A dangling symlink would be written through: its target must
                // be allowed too.
                if let Ok(link) = std::fs::read_link(&target) {
                    let resolved = normalize_path(&real_parent.join(link));
                    let (root, _) = self.root_of(&resolved)?;
                    self.refuse_protected(&resolved, path)?;
                    if !root.writable || self.is_denied(&resolved) {
                        return Err(denied(format!(
                            "Sandbox: {} is a symlink to {}, which may not be written",
                            path.display(),
                            resolved.display()
                        )));
                    }
                    // Written at the judged target, not through the link,
                    // which could be pointed elsewhere meanwhile.
                    return Ok(resolved);
                }
                self.refuse_protected(&target, path)?;
                Ok(target)
            }
            Err(e) => Err(e),
        }
    }

    /// Writes `data` to `path` (when it holds `expected`, if given).
    ///
    /// Two guards, because the path may change between the first look and
    /// the write (a directory swapped for a symlink into `.git`): the
    /// writing thread is restricted by Landlock to the writable roots, and
    /// the directory and file the write actually opened are judged again,
    /// on the paths the kernel reports for their descriptors.
    fn write_confined(
        &self,
        path: &Path,
        data: &[u8],
        expected: Option<&[u8]>,
    ) -> io::Result<WriteOutcome> {
        let target = self.writable_target(path)?;
        let dirs = self.writable_dirs();
        let check = |real: &Path, stat: Option<&rustix::fs::Stat>| -> io::Result<()> {
            let (root, _) = self.root_of(real)?;
            if !root.writable {
                return Err(denied(format!(
                    "Sandbox: {} is not under a writable root",
                    path.display()
                )));
            }
            self.refuse_protected(real, path)?;
            if self.is_denied(real) {
                return Err(denied(format!(
                    "Sandbox: {} matches a denied pattern (sandbox.denyRead)",
                    path.display()
                )));
            }
            if let Some(stat) = stat
                && stat.st_nlink > 1
                && (stat.st_mode & libc_s_ifmt()) == libc_s_ifreg()
            {
                return Err(denied(format!(
                    "Sandbox: {} has {} hard links; one may lie outside the workspace, so it is not written",
                    path.display(),
                    stat.st_nlink
                )));
            }
            Ok(())
        };
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    crate::landlock::restrict_thread_writes(&dirs)?;
                    drop_override_capabilities()?;
                    agent_local_ops::replace::write_file_checked(&target, data, expected, &check)
                })
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the write thread panicked")))
        })
    }

    /// The directories below which a write may land.
    fn writable_dirs(&self) -> Vec<PathBuf> {
        self.roots
            .iter()
            .filter(|r| r.writable)
            .map(|r| r.real.clone())
            .collect()
    }
}

/// As root, gives up (for the calling thread only) the capabilities that
/// override file permissions and ownership, so a sandboxed write reaches
/// another user's file only through its permission bits, as a sandboxed
/// command does.
fn drop_override_capabilities() -> io::Result<()> {
    use rustix::thread::{CapabilitySet, capabilities, set_capabilities};
    if !rustix::process::geteuid().is_root() {
        return Ok(());
    }
    let overriding = CapabilitySet::DAC_OVERRIDE
        | CapabilitySet::DAC_READ_SEARCH
        | CapabilitySet::FOWNER
        | CapabilitySet::FSETID
        | CapabilitySet::CHOWN;
    let mut sets = capabilities(None).map_err(io::Error::from)?;
    sets.effective -= overriding;
    sets.permitted -= overriding;
    set_capabilities(None, sets).map_err(|e| {
        io::Error::new(
            io::Error::from(e).kind(),
            format!("Sandbox: cannot give up root's file capabilities for the write: {e}"),
        )
    })
}

/// As root, what a sandboxed command could not read is not read for the
/// model either: another user's file or directory is reached only through
/// its "other" permission bits (`wanted`: 0o4 to read, 0o5 to list), as
/// from the command's user namespace, where that user is unmapped.
fn refuse_by_bits(fd: &OwnedFd, shown: &Path, wanted: u32) -> io::Result<()> {
    if !rustix::process::geteuid().is_root() {
        return Ok(());
    }
    let stat = rustix::fs::fstat(fd)?;
    if stat.st_uid == 0 || stat.st_mode & wanted == wanted {
        return Ok(());
    }
    Err(denied(format!(
        "Sandbox: {} belongs to another user and its permissions do not let others read it",
        shown.display()
    )))
}

const fn libc_s_ifmt() -> u32 {
    0o170000
}

const fn libc_s_ifreg() -> u32 {
    0o100000
}

impl FileOps for ConfinedFileOps {
    fn real_path(&self, path: &Path) -> PathBuf {
        agent_tool::path::real_path(path)
    }

    fn metadata(&self, path: &Path) -> io::Result<FileInfo> {
        let (fd, _, _) = self.open_beneath(path, OFlags::PATH)?;
        let m = std::fs::File::from(fd).metadata()?;
        Ok(FileInfo {
            is_file: m.is_file(),
            is_dir: m.is_dir(),
            len: m.len(),
        })
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        // Non-blocking, so a FIFO cannot stall the open; reads block as usual.
        let (fd, _, _) = self.open_beneath(path, OFlags::RDONLY | OFlags::NONBLOCK)?;
        refuse_by_bits(&fd, path, 0o4)?;
        let flags = rustix::fs::fcntl_getfl(&fd)?;
        rustix::fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK)?;
        Ok(Box::new(std::fs::File::from(fd)))
    }

    fn check_access(&self, path: &Path, write: bool) -> io::Result<()> {
        let real = if write {
            self.writable_target(path)?
        } else {
            self.open_beneath(path, OFlags::PATH)?.1
        };
        self.inner.check_access(&real, write)
    }

    fn write_file(&self, path: &Path, data: &[u8]) -> io::Result<WriteOutcome> {
        self.write_confined(path, data, None)
    }

    fn write_file_if_unchanged(
        &self,
        path: &Path,
        expected: &[u8],
        data: &[u8],
    ) -> io::Result<WriteOutcome> {
        self.write_confined(path, data, Some(expected))
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        if self
            .open_beneath(path, OFlags::PATH | OFlags::DIRECTORY)
            .is_ok()
        {
            return Ok(());
        }
        if self.mode == SandboxMode::ReadOnly {
            return Err(denied(format!(
                "Sandbox: {} cannot be created in read-only mode",
                path.display()
            )));
        }
        let (root, rest) = self.root_of(path)?;
        if !root.writable {
            return Err(denied(format!(
                "Sandbox: {} is not under a writable root",
                path.display()
            )));
        }
        self.refuse_protected(&root.real.join(&rest), path)?;
        let mut done = PathBuf::new();
        for component in rest.components() {
            let next = done.join(component);
            let open = |p: &Path| {
                rustix::fs::openat2(
                    root.fd.as_fd(),
                    if p.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        p
                    },
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                    ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
                )
            };
            match open(&next) {
                Ok(_) => {}
                Err(rustix::io::Errno::NOENT) => {
                    let parent = open(&done).map_err(io::Error::from)?;
                    match rustix::fs::mkdirat(
                        &parent,
                        component.as_os_str(),
                        Mode::from_raw_mode(0o777),
                    ) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(rustix::io::Errno::XDEV) => {
                    return Err(denied(format!(
                        "Sandbox: {} resolves outside the workspace root {}",
                        path.display(),
                        root.given.display()
                    )));
                }
                Err(e) => return Err(e.into()),
            }
            done = next;
        }
        Ok(())
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntryInfo>> {
        let (fd, real, _) = self.open_beneath(path, OFlags::RDONLY | OFlags::DIRECTORY)?;
        refuse_by_bits(&fd, path, 0o5)?;
        // Listed from the descriptor opened beneath the root, not by path
        // again: a command may have swapped the directory for a link since.
        let mut entries = Vec::new();
        for entry in rustix::fs::Dir::read_from(&fd).map_err(io::Error::from)? {
            let entry = entry.map_err(io::Error::from)?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name_os = std::ffi::OsStr::from_bytes(name);
            let is_dir = match entry.file_type() {
                rustix::fs::FileType::Directory => Some(true),
                rustix::fs::FileType::Symlink | rustix::fs::FileType::Unknown => {
                    rustix::fs::statat(&fd, name_os, rustix::fs::AtFlags::empty())
                        .ok()
                        .map(|st| {
                            rustix::fs::FileType::from_raw_mode(st.st_mode)
                                == rustix::fs::FileType::Directory
                        })
                }
                _ => Some(false),
            };
            if self.is_denied(&real.join(name_os)) {
                continue;
            }
            entries.push(DirEntryInfo {
                name: name_os.to_string_lossy().into_owned(),
                is_dir,
            });
        }
        Ok(entries)
    }

    fn exists(&self, path: &Path) -> bool {
        // A refused path "exists", so the operation that follows reports the
        // sandbox's reason instead of "not found".
        match self.open_beneath(path, OFlags::PATH) {
            Ok(_) => true,
            Err(e) => SandboxDenied::message(&e).is_some(),
        }
    }

    fn walk(&self, options: &WalkOptions<'_>, visit: WalkVisitor<'_>) -> io::Result<()> {
        let (_fd, real, _) = self.open_beneath(options.root, OFlags::PATH | OFlags::DIRECTORY)?;
        let given = options.root.to_path_buf();
        let walk = WalkOptions {
            root: &real,
            ..*options
        };
        let same = real == given;
        let filter = |entry: WalkEntry| {
            if self.is_denied(&entry.path) {
                return true;
            }
            if same {
                return visit(entry);
            }
            // Reported under the path the caller asked for.
            let path = match entry.path.strip_prefix(&real) {
                Ok(rest) => given.join(rest),
                Err(_) => entry.path.clone(),
            };
            visit(WalkEntry { path, ..entry })
        };
        self.inner.walk(&walk, &filter)
    }
}
