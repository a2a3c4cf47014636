//! [`LocalProcessOps`]: [`ProcessOps`] on this machine.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_tool::ops::{ExecEnd, ExecRequest, OutputFile, OutputSink, ProcessOps};
use agent_tool::{CancellationToken, ToolError};
use futures::FutureExt;
use futures::future::BoxFuture;

use crate::process_tree::{ShellGuard, become_subreaper, kill_call_tree};

/// How long to keep reading after the shell exited while descendants still
/// hold the output pipe open without writing.
const DRAIN_IDLE: Duration = Duration::from_millis(100);
/// The longest the call waits for output after the shell exited: background
/// children that keep writing do not hold the call open.
const DRAIN_TOTAL: Duration = Duration::from_millis(300);

/// [`ProcessOps`] on this machine: own process group, one pipe for stdout and
/// stderr, and on timeout or cancel a kill of everything the command started
/// (process group, process tree, re-parented orphans, marked environment;
/// this process becomes a child subreaper on first use, see
/// [`process_tree`](crate::process_tree)). After the shell exits, output is
/// read for a short while; background children keep running, as they would
/// in a terminal, but their later output is not captured.
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
        run_local_with(request, on_data, cancel, None, |command| command.spawn()).boxed()
    }

    fn working_dir_exists(&self, cwd: &Path) -> bool {
        cwd.is_dir()
    }

    fn resolve_shell(&self, explicit: Option<&str>) -> Result<PathBuf, ToolError> {
        resolve_shell(explicit)
    }

    fn create_output_file(&self) -> io::Result<Box<dyn OutputFile>> {
        crate::local_output_file()
    }
}

/// Runs `request` on this machine, starting the shell with `spawn` (the
/// sandbox adds its set-up there). With `wrapper`, the shell runs as the
/// last arguments of that command line (`wrapper[0]` is the program).
pub async fn run_local_with(
    request: ExecRequest,
    on_data: OutputSink<'_>,
    cancel: CancellationToken,
    wrapper: Option<Vec<std::ffi::OsString>>,
    spawn: impl FnOnce(&mut tokio::process::Command) -> io::Result<tokio::process::Child>,
) -> io::Result<ExecEnd> {
    use tokio::io::AsyncReadExt;

    become_subreaper();
    let marker = format!("{}-{}", std::process::id(), crate::random::random_hex());
    let (reader, writer) = std::io::pipe()?;
    // A larger pipe means fewer wake-ups for chatty commands (best effort).
    let _ = rustix::pipe::fcntl_setpipe_size(&writer, 1 << 20);
    let writer_err = writer.try_clone()?;
    let mut command = match wrapper {
        Some(mut line) if !line.is_empty() => {
            let mut command = tokio::process::Command::new(line.remove(0));
            command.args(line).arg(&request.shell);
            command
        }
        _ => tokio::process::Command::new(&request.shell),
    };
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
    // Registered until the shell is reaped, so no orphan sweep touches it.
    let (mut child, shell) = ShellGuard::spawn(|| spawn(&mut command))?;
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
    let mut drain_until: Option<tokio::time::Instant> = None;
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
                drain_until = Some(tokio::time::Instant::now() + DRAIN_TOTAL);
            },
            // After the shell exited, stop waiting for a pipe that descendants
            // keep open: at once when they are quiet, soon when they are not.
            _ = tokio::time::sleep(DRAIN_IDLE), if status.is_some() && pipe_open => {
                pipe_open = false;
            },
            _ = tokio::time::sleep_until(drain_until.unwrap_or_else(tokio::time::Instant::now)), if drain_until.is_some() && pipe_open => {
                pipe_open = false;
            },
        }
    };
    match end {
        Some(kind) => {
            let start = shell.as_ref().map(|s| s.start).unwrap_or(0);
            kill_call_tree(pid, start, &marker);
            let _ = child.wait().await;
            drop(shell);
            // Whatever is already in the pipe is still output of the command.
            while let Ok(n) = pipe.try_read(&mut buf) {
                if n == 0 {
                    break;
                }
                on_data(&buf[..n]);
            }
            Ok(kind)
        }
        None => {
            drop(shell);
            // Background children may go on writing; keep reading (and
            // dropping) so they never die of a closed pipe.
            if tokio::runtime::Handle::try_current().is_ok() {
                tokio::spawn(async move {
                    let mut sink = vec![0u8; 64 * 1024];
                    while let Ok(n) = pipe.read(&mut sink).await {
                        if n == 0 {
                            break;
                        }
                    }
                });
            }
            Ok(ExecEnd::Exited(status.and_then(|s| s.code())))
        }
    }
}

/// Picks the shell: an explicit path (must exist), `/bin/bash`, `bash` on PATH, `sh`.
pub fn resolve_shell(explicit: Option<&str>) -> Result<PathBuf, ToolError> {
    if let Some(path) = explicit {
        let p = PathBuf::from(path);
        return if p.exists() {
            Ok(p)
        } else {
            Err(ToolError::new(format!(
                "Custom shell path not found: {path}"
            )))
        };
    }
    if Path::new("/bin/bash").exists() {
        return Ok(PathBuf::from("/bin/bash"));
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("bash");
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Ok(PathBuf::from("sh"))
}
