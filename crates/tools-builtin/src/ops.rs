//! Pluggable operations: the file-system and process calls the tools make.
//!
//! The tools' logic (selection, truncation, notices, matching) runs against these
//! traits, so the same tools can work on a remote machine or a sandbox by
//! supplying other implementations. [`LocalFileOps`] and [`LocalProcessOps`] work
//! on this machine. (grep and find walk the local file system directly with the
//! `ignore` crate; a remote backend supplies its own definitions for them.)

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_core::CancellationToken;
use futures::FutureExt;
use futures::future::BoxFuture;

/// What the tools need to know about a path (symlinks followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInfo {
    /// A regular file.
    pub is_file: bool,
    /// A directory.
    pub is_dir: bool,
    /// Size in bytes.
    pub len: u64,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntryInfo {
    /// The entry's name (lossily decoded).
    pub name: String,
    /// Whether it is a directory, following symlinks; `None` when it cannot be
    /// stat'ed (e.g. a dangling symlink).
    pub is_dir: Option<bool>,
}

/// File-system calls, blocking. Tools call them from a blocking thread.
pub trait FileOps: Send + Sync {
    /// Metadata, following symlinks.
    fn metadata(&self, path: &Path) -> io::Result<FileInfo>;
    /// Opens a file for streaming reads.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>>;
    /// Reads a whole file.
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.open_read(path)?.read_to_end(&mut buf)?;
        Ok(buf)
    }
    /// Checks that the file can be read (and written, when `write`).
    fn check_access(&self, path: &Path, write: bool) -> io::Result<()>;
    /// Replaces the file's content atomically (never a half-written file),
    /// keeping its permissions and writing through symlinks to their target.
    fn write_file_atomic(&self, path: &Path, data: &[u8]) -> io::Result<()>;
    /// `mkdir -p`.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Lists a directory (without `.` and `..`).
    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntryInfo>>;
}

/// [`FileOps`] on the local file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalFileOps;

impl FileOps for LocalFileOps {
    fn metadata(&self, path: &Path) -> io::Result<FileInfo> {
        let m = std::fs::metadata(path)?;
        Ok(FileInfo {
            is_file: m.is_file(),
            is_dir: m.is_dir(),
            len: m.len(),
        })
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(std::fs::File::open(path)?))
    }

    fn check_access(&self, path: &Path, write: bool) -> io::Result<()> {
        let mode = if write {
            rustix::fs::Access::READ_OK | rustix::fs::Access::WRITE_OK
        } else {
            rustix::fs::Access::READ_OK
        };
        rustix::fs::access(path, mode).map_err(io::Error::from)
    }

    fn write_file_atomic(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        write_atomic(path, data)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntryInfo>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            // The directory entry's own type needs no stat; only symlinks are followed.
            let is_dir = match entry.file_type() {
                Ok(t) if !t.is_symlink() => Some(t.is_dir()),
                _ => std::fs::metadata(entry.path()).ok().map(|m| m.is_dir()),
            };
            out.push(DirEntryInfo {
                name: entry.file_name().to_string_lossy().into_owned(),
                is_dir,
            });
        }
        Ok(out)
    }
}

/// The process's umask, read without changing it (Linux); `0o022` elsewhere.
fn current_umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

/// Writes `data` to `path` through a temporary file in the same directory:
/// write, fsync, copy permissions and owner, rename over the target, fsync the
/// directory. A symlink is followed, so the link stays and its target changes.
pub fn write_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let target: PathBuf = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(_) => path.to_path_buf(),
    };
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let existing = std::fs::metadata(&target).ok();
    if existing.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("{} is a directory", path.display()),
        ));
    }
    // The pid in the name lets a later write recognise leftovers of a process
    // that died mid-write (SIGKILL skips the temp file's cleanup).
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)?;
    tmp.write_all(data)?;
    let mode = match &existing {
        Some(m) => m.permissions().mode() & 0o7777,
        None => 0o666 & !current_umask(),
    };
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    if let Some(m) = &existing {
        // Best effort: only root may give a file to someone else.
        let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(m.uid()), Some(m.gid()));
    }
    tmp.as_file().sync_all()?;
    tmp.persist(&target).map_err(|e| e.error)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    remove_stale_temp_files(dir);
    Ok(())
}

/// Prefix of the temporary files [`write_atomic`] creates.
const TEMP_PREFIX: &str = ".coding-agent-";
/// Suffix of the temporary files [`write_atomic`] creates.
const TEMP_SUFFIX: &str = ".tmp";

/// Removes temp files of [`write_atomic`] whose writing process no longer exists.
fn remove_stale_temp_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix(TEMP_PREFIX) else {
            continue;
        };
        if !name.ends_with(TEMP_SUFFIX) {
            continue;
        }
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        let alive = rustix::process::Pid::from_raw(pid)
            .map(|p| {
                matches!(
                    rustix::process::test_kill_process(p),
                    Ok(()) | Err(rustix::io::Errno::PERM)
                )
            })
            .unwrap_or(false);
        if !alive {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A command for [`ProcessOps::exec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// The shell to run (`<shell> -c <command>`).
    pub shell: PathBuf,
    /// The command text.
    pub command: String,
    /// Working directory.
    pub cwd: PathBuf,
    /// The complete environment of the child.
    pub env: Vec<(OsString, OsString)>,
    /// Kill the command after this long.
    pub timeout: Option<Duration>,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecEnd {
    /// It exited by itself; `None` when a signal (not ours) ended it.
    Exited(Option<i32>),
    /// The timeout fired and the command was killed.
    TimedOut,
    /// The cancellation token fired and the command was killed.
    Aborted,
}

/// Receives output bytes (stdout and stderr merged, in arrival order).
pub type OutputSink<'a> = &'a mut (dyn FnMut(&[u8]) + Send);

/// Process spawning for bash.
pub trait ProcessOps: Send + Sync {
    /// Runs `request`, streaming its output into `on_data` until it ends.
    fn exec<'a>(
        &'a self,
        request: ExecRequest,
        on_data: OutputSink<'a>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, io::Result<ExecEnd>>;
}

/// How long to keep reading after the shell exited while descendants still
/// hold the output pipe open without writing.
const DRAIN_IDLE: Duration = Duration::from_millis(100);

/// [`ProcessOps`] on this machine: own process group, one pipe for stdout and
/// stderr, group kill (and a sweep for escaped descendants) on timeout or
/// cancel, a bounded drain when background children keep the pipe open.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalProcessOps;

/// Environment variable marking every process a bash call starts, so escaped
/// descendants (`setsid`, double forks) can be found and killed.
pub const CALL_MARKER_VAR: &str = "CODING_AGENT_BASH_CALL";

impl ProcessOps for LocalProcessOps {
    fn exec<'a>(
        &'a self,
        request: ExecRequest,
        on_data: OutputSink<'a>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, io::Result<ExecEnd>> {
        run_local(request, on_data, cancel).boxed()
    }
}

async fn run_local(
    request: ExecRequest,
    on_data: OutputSink<'_>,
    cancel: CancellationToken,
) -> io::Result<ExecEnd> {
    use tokio::io::AsyncReadExt;

    let marker = format!(
        "{}-{}",
        std::process::id(),
        agent_ai::now_millis() as u64 ^ (fastrand_u64())
    );
    let (reader, writer) = std::io::pipe()?;
    // A larger pipe means fewer wake-ups for chatty commands (best effort).
    let _ = rustix::pipe::fcntl_setpipe_size(&writer, 1 << 20);
    let writer_err = writer.try_clone()?;
    let mut command = tokio::process::Command::new(&request.shell);
    command
        .arg("-c")
        .arg(&request.command)
        .current_dir(&request.cwd)
        .env_clear()
        .envs(request.env.iter().map(|(k, v)| (k, v)))
        .env(CALL_MARKER_VAR, &marker)
        .stdin(std::process::Stdio::null())
        .stdout(writer)
        .stderr(writer_err)
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    // The parent's copies of the write end must go, or EOF never comes.
    drop(command);
    let pid = child.id();
    let mut pipe =
        tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader))?;

    let deadline = request.timeout.map(|t| tokio::time::Instant::now() + t);
    let sleep_until = async move {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending::<()>().await,
        }
    };
    tokio::pin!(sleep_until);
    let mut buf = vec![0u8; 256 * 1024];
    let mut status: Option<std::process::ExitStatus> = None;
    let mut pipe_open = true;
    let end = loop {
        if status.is_some() && !pipe_open {
            break None;
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => break Some(ExecEnd::Aborted),
            _ = &mut sleep_until => break Some(ExecEnd::TimedOut),
            read = pipe.read(&mut buf), if pipe_open => match read {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(n) => on_data(&buf[..n]),
            },
            waited = child.wait(), if status.is_none() => {
                status = Some(waited?);
            },
            // After the shell exited, stop waiting for a pipe that descendants
            // keep open but do not write to.
            _ = tokio::time::sleep(DRAIN_IDLE), if status.is_some() && pipe_open => {
                pipe_open = false;
            },
        }
    };
    match end {
        Some(kind) => {
            kill_call(pid, &marker);
            let _ = child.wait().await;
            // Whatever is already in the pipe is still output of the command.
            while let Ok(n) = pipe.try_read(&mut buf) {
                if n == 0 {
                    break;
                }
                on_data(&buf[..n]);
            }
            Ok(kind)
        }
        None => Ok(ExecEnd::Exited(status.and_then(|s| s.code()))),
    }
}

/// A cheap random number for the call marker (no extra dependency).
fn fastrand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(agent_ai::now_millis() as u64);
    h.finish()
}

/// SIGKILLs the call's process group, then every process still carrying the
/// call's marker in its environment (descendants that left the group).
pub fn kill_call(pid: Option<u32>, marker: &str) {
    if let Some(pid) = pid.and_then(|p| rustix::process::Pid::from_raw(p as i32))
        && rustix::process::kill_process_group(pid, rustix::process::Signal::KILL).is_err()
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    kill_marked(marker);
}

/// Kills processes whose environment contains `CALL_MARKER_VAR=marker` (Linux /proc).
fn kill_marked(marker: &str) {
    let needle = format!("{CALL_MARKER_VAR}={marker}");
    let me = std::process::id();
    // Two sweeps: a process may fork while the first one runs.
    for _ in 0..2 {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            if environ.split(|&b| b == 0).any(|kv| kv == needle.as_bytes())
                && let Some(p) = rustix::process::Pid::from_raw(pid as i32)
            {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
    }
}

/// The shared operations of a tool set.
#[derive(Clone)]
pub struct Operations {
    /// File-system calls.
    pub files: Arc<dyn FileOps>,
    /// Process spawning.
    pub processes: Arc<dyn ProcessOps>,
}

impl Default for Operations {
    fn default() -> Self {
        Operations {
            files: Arc::new(LocalFileOps),
            processes: Arc::new(LocalProcessOps),
        }
    }
}

impl std::fmt::Debug for Operations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Operations")
    }
}
