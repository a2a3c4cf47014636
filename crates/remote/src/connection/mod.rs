//! One live channel to a helper: start the transport, bring the helper up
//! (uploading it when needed), then multiplex requests over the channel.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_tool::CancellationToken;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;

use crate::protocol::{
    Hello, MAX_RESPONSE_BODY, Op, Reply, Request, Response, read_frame_sized, write_frame,
};
use crate::{RemoteError, RemoteOptions, RemoteTarget};

mod startup;

use startup::{bootstrap_script, bring_up, checksum_of, classify, clean};

/// A reply and its body.
pub(crate) type Incoming = (Reply, Vec<u8>);

/// Where the replies of one request go.
pub(crate) enum Waiter {
    /// A blocking caller (the file operations run on blocking threads),
    /// with what is left of the request's byte budget: a remote that keeps
    /// answering one request cannot fill this process's memory.
    Sync(std::sync::mpsc::Sender<Incoming>, usize),
    /// An async caller (commands), with the bytes it has not read yet. The
    /// reader never waits for a caller (the caller may itself be waiting for
    /// another answer on this channel, as bash does when it opens its
    /// full-output file); a caller more than [`ASYNC_BUDGET`] behind gets an
    /// error instead.
    Async(mpsc::UnboundedSender<Incoming>, Arc<AtomicUsize>),
}

/// An async caller's receiver: counts down the unread bytes.
pub(crate) struct PacedReceiver {
    rx: mpsc::UnboundedReceiver<Incoming>,
    unread: Arc<AtomicUsize>,
}

impl PacedReceiver {
    /// The next answer; `None` once the request's waiter is gone.
    pub(crate) async fn recv(&mut self) -> Option<Incoming> {
        let incoming = self.rx.recv().await?;
        self.unread.fetch_sub(
            incoming.1.len().min(self.unread.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
        Some(incoming)
    }
}

/// The most one request's answer may hold, in bytes, for blocking callers
/// (a walk of a large tree stays far below).
pub(crate) const REQUEST_BUDGET: usize = 512 << 20;

/// The most command output a caller may leave unread (a genuine helper's
/// output is read as fast as it arrives).
pub(crate) const ASYNC_BUDGET: usize = 256 << 20;

/// The largest output frame a client accepts (a helper sends pipe reads).
const MAX_OUTPUT_FRAME: usize = 4 << 20;

impl Waiter {
    /// A blocking waiter and its receiver.
    pub(crate) fn blocking() -> (Waiter, std::sync::mpsc::Receiver<Incoming>) {
        let (tx, rx) = std::sync::mpsc::channel();
        (Waiter::Sync(tx, REQUEST_BUDGET), rx)
    }

    /// An async waiter and its receiver.
    pub(crate) fn paced() -> (Waiter, PacedReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        let unread = Arc::new(AtomicUsize::new(0));
        (
            Waiter::Async(tx, unread.clone()),
            PacedReceiver { rx, unread },
        )
    }
}

/// Whether the link is up, and why it went down.
struct Link {
    pending: Mutex<Pending>,
    last_heard: Mutex<Instant>,
}

struct Pending {
    /// `None` once the link is down (with the reason in `lost`).
    waiters: Option<HashMap<u64, Waiter>>,
    lost: String,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Link {
    fn fail(&self, reason: String) {
        let mut pending = lock(&self.pending);
        if pending.waiters.take().is_some() {
            tracing::info!(%reason, "remote: the link is down");
            pending.lost = reason;
        }
        // Dropping the waiters wakes every caller with "lost".
    }
}

/// A live channel.
pub(crate) struct Connection {
    outgoing: mpsc::UnboundedSender<(Request, Vec<u8>)>,
    link: Arc<Link>,
    next_id: AtomicU64,
    /// Fires to tear the transport down.
    teardown: CancellationToken,
    target: String,
    pub(crate) hello: Hello,
    /// The transport process.
    pub(crate) pid: Option<u32>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.teardown.cancel();
    }
}

impl Connection {
    /// Whether the link is still up.
    pub(crate) fn is_alive(&self) -> bool {
        lock(&self.link.pending).waiters.is_some()
    }

    /// The error every call gets once the link is down.
    pub(crate) fn lost(&self) -> io::Error {
        let reason = lock(&self.link.pending).lost.clone();
        io::Error::new(
            io::ErrorKind::ConnectionAborted,
            format!(
                "the connection to {} was lost ({reason}); the next call reconnects",
                self.target
            ),
        )
    }

    /// Sends a request whose replies go to `waiter`; returns its id.
    pub(crate) fn send(&self, op: Op, body: Vec<u8>, waiter: Waiter) -> io::Result<u64> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut pending = lock(&self.link.pending);
            let Some(waiters) = pending.waiters.as_mut() else {
                drop(pending);
                return Err(self.lost());
            };
            waiters.insert(id, waiter);
        }
        if self.outgoing.send((Request { id, op }, body)).is_err() {
            return Err(self.lost());
        }
        Ok(id)
    }

    /// Sends a request without waiting for anything (cancels).
    pub(crate) fn notify(&self, op: Op) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let _ = self.outgoing.send((Request { id, op }, Vec::new()));
    }

    /// Sends a request and blocks this thread until its one answer.
    pub(crate) fn call(&self, op: Op, body: Vec<u8>) -> io::Result<Incoming> {
        let (waiter, rx) = Waiter::blocking();
        self.send(op, body, waiter)?;
        rx.recv().map_err(|_| self.lost())
    }

    /// Stops the transport now (the link goes down).
    pub(crate) fn close(&self, reason: &str) {
        self.link.fail(reason.to_string());
        self.teardown.cancel();
    }
}

/// Variables the transport keeps even though their names look secret:
/// they say how to reach the other side, not what to do there.
const TRANSPORT_VARS: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "KUBECONFIG",
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "DOCKER_CONTEXT",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "CONTAINER_HOST",
];

/// Opens a channel to `target` and brings the helper up.
pub(crate) async fn establish(
    target: &RemoteTarget,
    options: &RemoteOptions,
) -> Result<Connection, RemoteError> {
    let control = if target.is_ssh() && options.multiplex {
        match crate::target::control_dir() {
            Ok(dir) => Some(dir),
            Err(e) => {
                tracing::warn!(error = %e, "remote: no SSH multiplexing");
                None
            }
        }
    } else {
        None
    };
    let argv = target.command_line_with(control.as_deref(), &options.ssh_options);
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // The agent's own secrets (API keys) stay here; a transport that
    // forwards variables (ssh's SendEnv) then has none to forward.
    let hiding = agent_sandbox::SandboxPolicy::off();
    for (name, value) in std::env::vars_os() {
        let (Some(name), Some(value)) = (name.to_str(), value.to_str()) else {
            continue;
        };
        if !TRANSPORT_VARS.contains(&name) && hiding.hides_var(name, value) {
            command.env_remove(name);
        }
    }
    let mut child = command.spawn().map_err(|source| RemoteError::Spawn {
        program: argv[0].clone(),
        source,
    })?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(RemoteError::Protocol {
            detail: "the transport's pipes are missing".into(),
        });
    };
    let stderr_tail = Arc::new(Mutex::new(String::new()));
    tokio::spawn(collect_stderr(stderr, stderr_tail.clone()));

    let checksum = match &options.helper_binary {
        Some(path) => checksum_of(path).map_err(|e| RemoteError::Upload {
            detail: format!("cannot read the helper binary {}: {e}", path.display()),
        })?,
        None => "none".to_string(),
    };
    let script = bootstrap_script(target, &checksum);
    let mut stdout = BufReader::new(stdout);
    let start = tokio::time::timeout(
        options.connect_timeout,
        bring_up(target, options, &script, &mut stdin, &mut stdout),
    )
    .await;
    let failure = match start {
        Ok(Ok(hello)) => {
            return Ok(run(
                target,
                options,
                child,
                stdin,
                stdout,
                hello,
                stderr_tail,
            ));
        }
        Ok(Err(e)) => e,
        Err(_) => RemoteError::Timeout {
            target: target.to_string(),
            seconds: options.connect_timeout.as_secs(),
        },
    };
    let failure = match failure {
        RemoteError::Closed { .. } => {
            // The transport ended: its exit status and stderr say why.
            let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
                .await
                .ok()
                .and_then(Result::ok)
                .and_then(|s| s.code());
            // Let the stderr reader catch up with the last lines.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let tail = lock(&stderr_tail).clone();
            classify(target, status, &tail)
        }
        other => other,
    };
    let _ = child.start_kill();
    Err(failure)
}

async fn collect_stderr(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(%line, "remote stderr");
        let mut tail = lock(&tail);
        tail.push_str(&line);
        tail.push('\n');
        if tail.len() > 8192 {
            let cut = tail.len() - 4096;
            let cut = (cut..tail.len())
                .find(|i| tail.is_char_boundary(*i))
                .unwrap_or(0);
            tail.drain(..cut);
        }
    }
}

/// Starts the reader, writer and keep-alive tasks of a ready channel.
fn run(
    target: &RemoteTarget,
    options: &RemoteOptions,
    mut child: Child,
    mut stdin: ChildStdin,
    mut stdout: BufReader<ChildStdout>,
    hello: Hello,
    stderr_tail: Arc<Mutex<String>>,
) -> Connection {
    let pid = child.id();
    let link = Arc::new(Link {
        pending: Mutex::new(Pending {
            waiters: Some(HashMap::new()),
            lost: String::new(),
        }),
        last_heard: Mutex::new(Instant::now()),
    });
    let teardown = CancellationToken::new();
    let (outgoing, mut queue) = mpsc::unbounded_channel::<(Request, Vec<u8>)>();

    let writer_link = link.clone();
    let writer_teardown = teardown.clone();
    tokio::spawn(async move {
        while let Some((request, body)) = queue.recv().await {
            if let Err(e) = write_frame(&mut stdin, &request, &body).await {
                if e.kind() == io::ErrorKind::FileTooLarge
                    || e.kind() == io::ErrorKind::InvalidInput
                {
                    // Only this request fails; the link is fine.
                    let waiter = lock(&writer_link.pending)
                        .waiters
                        .as_mut()
                        .and_then(|w| w.remove(&request.id));
                    match waiter {
                        Some(Waiter::Sync(tx, _)) => {
                            let _ = tx.send((crate::helper::error_reply(&e), Vec::new()));
                        }
                        Some(Waiter::Async(tx, _)) => {
                            let _ = tx.send((crate::helper::error_reply(&e), Vec::new()));
                        }
                        None => {}
                    }
                    continue;
                }
                writer_link.fail(format!("cannot write to the channel: {e}"));
                writer_teardown.cancel();
                return;
            }
            if queue.is_empty() && stdin.flush().await.is_err() {
                writer_link.fail("cannot write to the channel".into());
                writer_teardown.cancel();
                return;
            }
        }
    });

    let reader_link = link.clone();
    let reader_teardown = teardown.clone();
    let cancel_tx = outgoing.clone();
    tokio::spawn(async move {
        let reason = loop {
            let frame = tokio::select! {
                frame = read_frame_sized::<_, Response>(&mut stdout, MAX_RESPONSE_BODY) => frame,
                _ = reader_teardown.cancelled() => break "closed".to_string(),
            };
            match frame {
                Ok(Some((response, body, size))) => {
                    *lock(&reader_link.last_heard) = Instant::now();
                    if matches!(response.reply, Reply::Output) && body.len() > MAX_OUTPUT_FRAME {
                        break format!("the remote sent an output frame of {} bytes", body.len());
                    }
                    let partial = response.reply.is_partial();
                    let mut pending = lock(&reader_link.pending);
                    let Some(waiters) = pending.waiters.as_mut() else {
                        break "closed".to_string();
                    };
                    let over_budget = match waiters.get_mut(&response.id) {
                        None => continue,
                        Some(Waiter::Sync(_, budget)) if partial => {
                            let over = size > *budget;
                            *budget = budget.saturating_sub(size);
                            over
                        }
                        Some(Waiter::Async(_, unread)) if partial => {
                            unread.fetch_add(body.len(), Ordering::Relaxed) + body.len()
                                > ASYNC_BUDGET
                        }
                        Some(_) => false,
                    };
                    if over_budget {
                        // One request answered without end: it fails, the
                        // helper is told to stop it, the link stays.
                        let error = crate::helper::error_reply(&io::Error::new(
                            io::ErrorKind::InvalidData,
                            "the remote sent more for one request than this side will hold",
                        ));
                        match waiters.remove(&response.id) {
                            Some(Waiter::Sync(tx, _)) => {
                                let _ = tx.send((error, Vec::new()));
                            }
                            Some(Waiter::Async(tx, _)) => {
                                let _ = tx.send((error, Vec::new()));
                            }
                            None => {}
                        }
                        let _ = cancel_tx.send((
                            Request {
                                id: u64::MAX - 1,
                                op: Op::Cancel {
                                    target: response.id,
                                },
                            },
                            Vec::new(),
                        ));
                        continue;
                    }
                    let waiter = if partial {
                        waiters.get(&response.id)
                    } else {
                        None
                    };
                    let incoming = (response.reply, body);
                    match waiter {
                        Some(Waiter::Sync(tx, _)) => {
                            let _ = tx.send(incoming);
                        }
                        Some(Waiter::Async(tx, _)) => {
                            let _ = tx.send(incoming);
                        }
                        None => match waiters.remove(&response.id) {
                            Some(Waiter::Sync(tx, _)) => {
                                let _ = tx.send(incoming);
                            }
                            Some(Waiter::Async(tx, _)) => {
                                let _ = tx.send(incoming);
                            }
                            None => {}
                        },
                    }
                }
                Ok(None) => break "the remote side closed the channel".to_string(),
                Err(e) => break format!("the channel broke: {e}"),
            }
        };
        let _ = child.start_kill();
        let status = tokio::time::timeout(Duration::from_secs(2), child.wait())
            .await
            .ok()
            .and_then(Result::ok);
        let tail = lock(&stderr_tail).trim().to_string();
        let mut reason = reason;
        if let Some(status) = status.filter(|s| !s.success()) {
            reason.push_str(&format!("; the transport ended with {status}"));
        }
        if !tail.is_empty() {
            let last = tail.lines().last().unwrap_or("");
            reason.push_str(&format!(": {}", clean(last)));
        }
        reader_link.fail(reason);
    });

    let keepalive = options.keepalive;
    if !keepalive.is_zero() {
        let ping_link = link.clone();
        let ping_teardown = teardown.clone();
        let ping = outgoing.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(keepalive);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = ping_teardown.cancelled() => return,
                }
                let silent = lock(&ping_link.last_heard).elapsed();
                if silent > keepalive * 2 {
                    ping_link.fail(format!(
                        "no answer to keep-alives for {} s",
                        silent.as_secs()
                    ));
                    ping_teardown.cancel();
                    return;
                }
                // Pongs carry id u64::MAX: no waiter, they only refresh `last_heard`.
                if ping
                    .send((
                        Request {
                            id: u64::MAX,
                            op: Op::Ping,
                        },
                        Vec::new(),
                    ))
                    .is_err()
                {
                    return;
                }
            }
        });
    }

    Connection {
        outgoing,
        link,
        next_id: AtomicU64::new(1),
        teardown,
        target: target.to_string(),
        hello,
        pid,
    }
}
