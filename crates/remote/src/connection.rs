//! One live channel to a helper: start the transport, bring the helper up
//! (uploading it when needed), then multiplex requests over the channel.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_sandbox::SandboxMode;
use agent_tool::CancellationToken;
use sha2::Digest;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;

use crate::protocol::{
    Hello, LINE_PREFIX, MAX_RESPONSE_BODY, Op, PROTOCOL_VERSION, READY_LINE, Reply, Request,
    Response, Start, read_frame_limited, read_frame_sized, write_frame,
};
use crate::{RemoteError, RemoteOptions, RemoteTarget};

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

/// The shell script that brings the helper up on the other side: use a
/// compatible `coding-agent` on PATH, else a cached upload, else ask for
/// an upload. It is one `{ ... }` group so the shell reads all of it before
/// running any of it: nothing after it on stdin is taken for script.
fn bootstrap_script(target: &RemoteTarget, checksum: &str) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let cd = match target.path() {
        Some(p) => format!("cd -- {} 2>/dev/null || fail nodir\n", quote(p)),
        None => String::new(),
    };
    // The sandbox travels in the Start frame, never on a command line.
    let args = "helper";
    format!(
        r#"{{
fail() {{ echo "{LINE_PREFIX}$*"; exit 1; }}
{cd}if command -v coding-agent >/dev/null 2>&1 && coding-agent helper --accepts {PROTOCOL_VERSION} >/dev/null 2>&1; then exec coding-agent {args}; fi
d="${{XDG_CACHE_HOME:-$HOME/.cache}}/coding-agent/helpers"
b="$d/coding-agent-{checksum}"
if [ -f "$b" ] && [ -x "$b" ] && [ -O "$b" ] && [ ! -L "$b" ] && [ -O "$d" ] && [ ! -L "$d" ]; then exec "$b" {args}; fi
echo "{LINE_PREFIX}need $(uname -s) $(uname -m)"
read n || exit 1
umask 077
mkdir -p "$d" || fail fail cannot create "$d"
[ -O "$d" ] && [ ! -L "$d" ] || fail fail "$d" is not owned by this user
chmod 700 "$d" || fail fail cannot protect "$d"
t="$d/.upload.$$"
head -c "$n" > "$t" || fail fail cannot write "$t"
s=$( (sha256sum "$t" || shasum -a 256 "$t") 2>/dev/null | cut -d' ' -f1)
[ "$s" = "{checksum}" ] || {{ rm -f "$t"; fail fail the upload does not match its checksum, or neither sha256sum nor shasum is installed; }}
chmod 700 "$t" && mv -f "$t" "$b" && exec "$b" {args}
fail fail cannot run "$b"
}}
"#
    )
}

/// Text from the other side, made safe to print: control characters and
/// escape sequences removed, at most 2000 characters.
fn clean(text: &str) -> String {
    let text = agent_tool::sanitize_terminal_text(text).into_owned();
    match text.char_indices().nth(2000) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// The SHA-256 of the helper binary, computed once per path.
fn checksum_of(path: &Path) -> io::Result<String> {
    static CACHE: Mutex<Vec<(std::path::PathBuf, String)>> = Mutex::new(Vec::new());
    if let Some((_, sum)) = lock(&CACHE).iter().find(|(p, _)| p == path) {
        return Ok(sum.clone());
    }
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let sum: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    lock(&CACHE).push((path.to_path_buf(), sum.clone()));
    Ok(sum)
}

/// `uname -s` / `uname -m` in Rust's names.
fn matches_local(os: &str, arch: &str) -> bool {
    let os = os.to_ascii_lowercase();
    let arch = match arch {
        "amd64" => "x86_64",
        "arm64" => "aarch64",
        other => other,
    };
    os == std::env::consts::OS && arch == std::env::consts::ARCH
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

/// Classifies a transport that ended before the helper was ready.
fn classify(target: &RemoteTarget, status: Option<i32>, stderr: &str) -> RemoteError {
    // The remote's words reach the user's terminal: no escape sequences.
    let detail = clean(stderr.trim());
    let lower = detail.to_ascii_lowercase();
    let target_text = target.to_string();
    if target.is_ssh() {
        if lower.contains("host key verification failed")
            || lower.contains("remote host identification has changed")
            || lower.contains("no matching host key")
        {
            return RemoteError::HostKey {
                target: target_text,
                detail,
            };
        }
        if lower.contains("permission denied") || lower.contains("too many authentication failures")
        {
            return RemoteError::Auth {
                target: target_text,
                detail,
            };
        }
        if status == Some(255) {
            return RemoteError::Unreachable {
                target: target_text,
                detail,
            };
        }
    }
    RemoteError::Closed {
        target: target_text,
        status,
        detail,
    }
}

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

/// Sends the script, answers an upload request, and reads the greeting.
async fn bring_up(
    target: &RemoteTarget,
    options: &RemoteOptions,
    script: &str,
    stdin: &mut ChildStdin,
    stdout: &mut BufReader<ChildStdout>,
) -> Result<Hello, RemoteError> {
    let closed = || RemoteError::Closed {
        target: target.to_string(),
        status: None,
        detail: String::new(),
    };
    stdin
        .write_all(script.as_bytes())
        .await
        .map_err(|_| closed())?;
    stdin.flush().await.map_err(|_| closed())?;
    let mut uploaded = false;
    let mut noise = 0usize;
    loop {
        let mut line = Vec::new();
        let n = (&mut *stdout)
            .take(4096)
            .read_until(b'\n', &mut line)
            .await
            .map_err(|_| closed())?;
        if n == 0 {
            return Err(closed());
        }
        let line = String::from_utf8_lossy(&line);
        let line = line.trim_end();
        if line == READY_LINE {
            break;
        }
        let Some(said) = line.strip_prefix(LINE_PREFIX) else {
            // A login banner or a profile's chatter: not ours.
            noise += 1;
            if noise > 1000 {
                return Err(RemoteError::Protocol {
                    detail: "the remote shell prints endlessly instead of starting the helper"
                        .into(),
                });
            }
            tracing::debug!(%line, "remote: ignored output before the helper");
            continue;
        };
        let mut words = said.split_whitespace();
        match words.next() {
            Some("need") => {
                let os = clean(words.next().unwrap_or("?"));
                let arch = clean(words.next().unwrap_or("?"));
                let binary = match &options.helper_binary {
                    Some(b) if !uploaded && options.upload && matches_local(&os, &arch) => b,
                    _ => {
                        return Err(RemoteError::HelperMissing {
                            target: target.to_string(),
                            os,
                            arch,
                            uploadable: options.helper_binary.is_some() && options.upload,
                        });
                    }
                };
                let data = tokio::fs::read(binary)
                    .await
                    .map_err(|e| RemoteError::Upload {
                        detail: format!("cannot read {}: {e}", binary.display()),
                    })?;
                tracing::info!(bytes = data.len(), %target, "remote: uploading the helper");
                let upload = async {
                    stdin
                        .write_all(format!("{}\n", data.len()).as_bytes())
                        .await?;
                    stdin.write_all(&data).await?;
                    stdin.flush().await
                };
                if let Err(e) = upload.await {
                    // The script stopped reading: its last line says why.
                    let why = tokio::time::timeout(Duration::from_secs(2), async {
                        let mut line = String::new();
                        while matches!(stdout.read_line(&mut line).await, Ok(n) if n > 0) {
                            if let Some(said) = line.trim_end().strip_prefix(LINE_PREFIX)
                                && let Some(reason) = said.strip_prefix("fail ")
                            {
                                return Some(clean(reason));
                            }
                            line.clear();
                        }
                        None
                    })
                    .await
                    .ok()
                    .flatten();
                    return Err(RemoteError::Upload {
                        detail: why.unwrap_or_else(|| {
                            format!("the channel closed during the upload: {e}")
                        }),
                    });
                }
                uploaded = true;
            }
            Some("nodir") => {
                return Err(RemoteError::NoDirectory {
                    target: target.to_string(),
                    path: target.path().unwrap_or("").to_string(),
                });
            }
            Some("fail") => {
                return Err(RemoteError::Upload {
                    detail: clean(&words.collect::<Vec<_>>().join(" ")),
                });
            }
            _ => tracing::debug!(%line, "remote: unknown bootstrap line"),
        }
    }
    // The helper applies the sandbox this side decided, or refuses.
    let start = Start {
        protocol: PROTOCOL_VERSION,
        sandbox: options.sandbox.clone(),
    };
    write_frame(stdin, &start, &[])
        .await
        .map_err(|_| closed())?;
    stdin.flush().await.map_err(|_| closed())?;
    let frame = read_frame_limited::<_, Response>(stdout, MAX_RESPONSE_BODY)
        .await
        .map_err(|e| RemoteError::Protocol {
            detail: format!("no greeting from the helper: {e}"),
        })?;
    let hello = match frame {
        Some((
            Response {
                id: 0,
                reply: Reply::Hello(hello),
            },
            _,
        )) if hello.protocol == PROTOCOL_VERSION => hello,
        Some((
            Response {
                reply: Reply::Hello(hello),
                ..
            },
            _,
        )) => {
            return Err(RemoteError::Protocol {
                detail: format!(
                    "the helper speaks protocol {}, this program {PROTOCOL_VERSION}",
                    hello.protocol
                ),
            });
        }
        Some((
            Response {
                reply: Reply::Refused { reason },
                ..
            },
            _,
        )) => {
            return Err(RemoteError::Refused {
                target: target.to_string(),
                reason: clean(&reason),
            });
        }
        _ => {
            return Err(RemoteError::Protocol {
                detail: "the helper's first message is not a greeting".into(),
            });
        }
    };
    // A helper that says it runs with less than asked is not used.
    let asked = options.sandbox.mode();
    if options.sandbox.is_chosen()
        && asked != SandboxMode::Off
        && (hello.sandbox_mode < asked || hello.sandbox.is_none())
    {
        return Err(RemoteError::Refused {
            target: target.to_string(),
            reason: format!(
                "the helper confines with {} instead of the {asked} sandbox asked for",
                if hello.sandbox.is_none() {
                    "nothing".to_string()
                } else {
                    format!("mode {}", hello.sandbox_mode)
                }
            ),
        });
    }
    Ok(hello)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_quotes_the_directory_and_names_the_checksum() {
        let target = RemoteTarget::parse("ssh://h/srv/it's here").unwrap();
        let script = bootstrap_script(&target, "abc123");
        assert!(script.contains(r"cd -- '/srv/it'\''s here'"), "{script}");
        assert!(script.contains("coding-agent-abc123"));
        assert!(
            script.contains("coding-agent helper --accepts 2 "),
            "{script}"
        );
        assert!(script.contains("exec coding-agent helper;"), "{script}");
        assert!(script.starts_with('{') && script.trim_end().ends_with('}'));
    }

    #[test]
    fn ssh_failures_are_told_apart() {
        let t = RemoteTarget::parse("ssh://h").unwrap();
        assert!(matches!(
            classify(&t, Some(255), "Host key verification failed.\n"),
            RemoteError::HostKey { .. }
        ));
        assert!(matches!(
            classify(&t, Some(255), "me@h: Permission denied (publickey).\n"),
            RemoteError::Auth { .. }
        ));
        assert!(matches!(
            classify(
                &t,
                Some(255),
                "ssh: connect to host h port 22: Connection refused\n"
            ),
            RemoteError::Unreachable { .. }
        ));
        assert!(matches!(
            classify(&t, Some(1), "sh: 1: oops\n"),
            RemoteError::Closed { .. }
        ));
    }
}
