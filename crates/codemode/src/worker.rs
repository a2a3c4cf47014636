//! The worker sandbox: each script's VM in a confined child process.
//!
//! The child is a program that calls [`worker_main`](crate::worker_main)
//! (the stock `coding-agent` binary does, in a hidden mode). It confines
//! itself before it reads a script (see [`confine`](crate::confine)), so
//! even code execution through a QuickJS bug reaches nothing but its pipes
//! to us, and we check every frame it sends.
//!
//! At most [`WorkerSandbox::max_live`] workers are alive at once, a warm
//! one (already confined, its VM made) included; scripts beyond that wait in
//! arrival order, at most [`WorkerSandbox::wait_limit`]. A worker runs one
//! script and is killed with SIGKILL when it ends, when its deadline passes
//! or when the call is aborted; its slot frees once the process is reaped.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};

use crate::protocol::{HostMessage, MAX_FRAME_BYTES, ScriptRequest, VmEvent, write_frame};
use crate::sandbox::{BoxFuture, SandboxError, ScriptRun, ScriptSandbox, Stop};

/// Workers alive at once by default: one script and one warm worker.
pub const DEFAULT_MAX_WORKERS: usize = 2;
/// How long a script waits for a free worker by default.
pub const DEFAULT_WAIT_LIMIT: Duration = Duration::from_secs(60);

/// Runs each script in a fresh confined worker process.
///
/// ```no_run
/// use agent_codemode::WorkerSandbox;
/// // A program of yours that calls `agent_codemode::worker_main()` when given
/// // this argument; `coding-agent` does so for `__codemode-worker`.
/// let sandbox = WorkerSandbox::new("/usr/local/bin/coding-agent", ["__codemode-worker"]);
/// # let _ = sandbox;
/// ```
#[derive(Debug, Clone)]
pub struct WorkerSandbox {
    pool: Arc<Pool>,
}

#[derive(Debug)]
struct Pool {
    program: PathBuf,
    args: Vec<OsString>,
    max_live: usize,
    wait_limit: Duration,
    state: Mutex<PoolState>,
}

#[derive(Debug, Default)]
struct PoolState {
    live: usize,
    warm: Option<Worker>,
    waiters: VecDeque<oneshot::Sender<()>>,
}

/// A started worker process with its pipes.
#[derive(Debug)]
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
}

impl WorkerSandbox {
    /// Workers are `program args...`, started with an empty environment in `/`.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> WorkerSandbox {
        WorkerSandbox {
            pool: Arc::new(Pool {
                program: program.into(),
                args: args.into_iter().map(Into::into).collect(),
                max_live: DEFAULT_MAX_WORKERS,
                wait_limit: DEFAULT_WAIT_LIMIT,
                state: Mutex::default(),
            }),
        }
    }

    /// The same sandbox with at most `max` workers alive at once (min 1).
    pub fn max_live(self, max: usize) -> WorkerSandbox {
        self.rebuild(|pool| pool.max_live = max.max(1))
    }

    /// The same sandbox with scripts waiting at most `limit` for a worker.
    pub fn wait_limit(self, limit: Duration) -> WorkerSandbox {
        self.rebuild(|pool| pool.wait_limit = limit)
    }

    fn rebuild(self, change: impl FnOnce(&mut Pool)) -> WorkerSandbox {
        let mut pool = Pool {
            program: self.pool.program.clone(),
            args: self.pool.args.clone(),
            max_live: self.pool.max_live,
            wait_limit: self.pool.wait_limit,
            state: Mutex::default(),
        };
        change(&mut pool);
        WorkerSandbox {
            pool: Arc::new(pool),
        }
    }

    /// Starts a warm worker now (if a slot is free), so the first script
    /// does not wait for a process to start. Needs a tokio runtime.
    pub fn prewarm(&self) {
        Pool::refill(&self.pool);
    }

    /// Workers alive now (warm ones included).
    pub fn live_workers(&self) -> usize {
        self.pool.state.lock().map(|s| s.live).unwrap_or(0)
    }
}

impl Pool {
    fn spawn(&self) -> Result<Worker, SandboxError> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| {
            SandboxError::Failed(format!(
                "could not start the script worker {}: {e}",
                self.program.display()
            ))
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(SandboxError::Failed(
                "the script worker has no pipes".into(),
            ));
        };
        Ok(Worker {
            child,
            stdin,
            stdout,
        })
    }

    /// Puts a warm worker in place when none is and a slot is free.
    fn refill(pool: &Arc<Pool>) {
        // Starting a process needs the runtime's reactor (a slot freed
        // while the runtime shuts down starts nothing).
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let Ok(mut state) = pool.state.lock() else {
            return;
        };
        if state.warm.is_some() || state.live >= pool.max_live || !state.waiters.is_empty() {
            return;
        }
        match pool.spawn() {
            Ok(worker) => {
                state.live += 1;
                state.warm = Some(worker);
            }
            Err(e) => tracing::warn!(error = %e, "could not start a warm script worker"),
        }
    }

    /// Frees a slot: the next waiter gets it, else a warm worker takes it.
    fn release(pool: &Arc<Pool>) {
        {
            let Ok(mut state) = pool.state.lock() else {
                return;
            };
            state.live = state.live.saturating_sub(1);
            while let Some(waiter) = state.waiters.pop_front() {
                if waiter.send(()).is_ok() {
                    return;
                }
            }
        }
        // Starting a process takes a while: not on the path of the script
        // that just ended.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let pool = pool.clone();
            runtime.spawn(async move { Pool::refill(&pool) });
        }
    }

    /// A worker for one script: the warm one, a new one, or the next free.
    async fn acquire(pool: &Arc<Pool>) -> Result<Worker, SandboxError> {
        let waited_from = tokio::time::Instant::now();
        loop {
            let wait = {
                let mut state = pool
                    .state
                    .lock()
                    .map_err(|_| SandboxError::Failed("the worker pool is poisoned".into()))?;
                if let Some(mut worker) = state.warm.take() {
                    if matches!(worker.child.try_wait(), Ok(None)) {
                        drop(state);
                        Pool::refill(pool);
                        return Ok(worker);
                    }
                    // The warm worker died while it waited: its slot is free.
                    state.live = state.live.saturating_sub(1);
                }
                if state.live < pool.max_live {
                    state.live += 1;
                    drop(state);
                    return pool.spawn().inspect_err(|_| Pool::release(pool));
                }
                let (tx, rx) = oneshot::channel();
                state.waiters.push_back(tx);
                rx
            };
            let left = pool.wait_limit.saturating_sub(waited_from.elapsed());
            match tokio::time::timeout(left, wait).await {
                Ok(Ok(())) => {
                    // The releasing script handed its slot to us.
                    return pool.spawn().inspect_err(|_| Pool::release(pool));
                }
                Ok(Err(_)) => continue,
                Err(_) => {
                    return Err(SandboxError::Busy(format!(
                        "no script worker became free within {} seconds: all {} are held by other scripts; retry after they finish",
                        pool.wait_limit.as_secs(),
                        pool.max_live
                    )));
                }
            }
        }
    }
}

impl ScriptSandbox for WorkerSandbox {
    fn start(&self, request: ScriptRequest) -> BoxFuture<'_, Result<ScriptRun, SandboxError>> {
        let pool = self.pool.clone();
        Box::pin(async move {
            let worker = Pool::acquire(&pool).await?;
            // From here the slot is released when the process is reaped.
            let slot = Slot(Some(pool));
            run_on(worker, request, slot).await
        })
    }
}

/// Returns its slot to the pool when dropped.
struct Slot(Option<Arc<Pool>>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(pool) = self.0.take() {
            Pool::release(&pool);
        }
    }
}

async fn run_on(
    worker: Worker,
    request: ScriptRequest,
    slot: Slot,
) -> Result<ScriptRun, SandboxError> {
    let Worker {
        mut child,
        mut stdin,
        mut stdout,
    } = worker;
    let mut start = Vec::new();
    write_frame(&mut start, &HostMessage::Start(request))
        .map_err(|e| SandboxError::Failed(format!("the script cannot be sent: {e}")))?;
    if let Err(e) = stdin.write_all(&start).await {
        let _ = child.start_kill();
        let _ = child.wait().await;
        drop(slot);
        return Err(SandboxError::Failed(format!(
            "the script worker did not take the script: {e}"
        )));
    }

    let (events_tx, events_rx) = mpsc::unbounded_channel::<VmEvent>();
    let reader = tokio::spawn(async move {
        loop {
            match read_frame_async(&mut stdout).await {
                Ok(Some(event)) => {
                    let end = matches!(event, VmEvent::End(_));
                    if events_tx.send(event).is_err() || end {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "a script worker sent a bad frame");
                    break;
                }
            }
        }
    });
    let (inbox_tx, mut inbox_rx) = mpsc::unbounded_channel::<HostMessage>();
    let writer = tokio::spawn(async move {
        while let Some(message) = inbox_rx.recv().await {
            let mut frame = Vec::new();
            if write_frame(&mut frame, &message).is_err() || stdin.write_all(&frame).await.is_err()
            {
                break;
            }
        }
        // Dropping stdin tells a waiting worker the host is gone.
    });
    Ok(ScriptRun::new(
        events_rx,
        move |message| inbox_tx.send(message).is_ok(),
        move |how| {
            let end = async move {
                if how == Stop::Kill {
                    let _ = child.start_kill();
                }
                // The writer ends now that its channel is closed; a worker
                // reading EOF after its script exits on its own.
                let status = match tokio::time::timeout(Duration::from_secs(5), child.wait()).await
                {
                    Ok(status) => status.ok(),
                    Err(_) => {
                        let _ = child.start_kill();
                        child.wait().await.ok()
                    }
                };
                reader.abort();
                writer.abort();
                drop(slot);
                status.and_then(|status| abnormal(status, how == Stop::Kill))
            };
            Box::pin(async move {
                if how == Stop::Detach {
                    // Reaped (and its slot freed) in the background.
                    tokio::spawn(end);
                    None
                } else {
                    end.await
                }
            }) as BoxFuture<'static, Option<String>>
        },
    ))
}

/// How a worker ended, when that was not a clean exit (or our own kill).
fn abnormal(status: std::process::ExitStatus, killed_by_us: bool) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        if killed_by_us && signal == libc::SIGKILL {
            return None;
        }
        let name = match signal {
            libc::SIGSEGV => "SIGSEGV".to_string(),
            libc::SIGABRT => "SIGABRT".to_string(),
            libc::SIGSYS => "SIGSYS (a system call the worker may not make)".to_string(),
            libc::SIGKILL => "SIGKILL".to_string(),
            libc::SIGBUS => "SIGBUS".to_string(),
            other => format!("signal {other}"),
        };
        return Some(format!("the script worker was killed by {name}"));
    }
    match status.code() {
        Some(0) | None => None,
        Some(code) => Some(format!("the script worker exited with status {code}")),
    }
}

async fn read_frame_async(input: &mut ChildStdout) -> std::io::Result<Option<VmEvent>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes passes the limit of {MAX_FRAME_BYTES}"),
        ));
    }
    let mut body = vec![0u8; len];
    input.read_exact(&mut body).await?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}
