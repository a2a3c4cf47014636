//! The helper: the remote end of the channel. It runs the operations it is
//! asked for on its own machine, with the same [`Operations`] a local tool
//! set would use (confined by the sandbox the client asked for), and
//! answers over the same channel.
//!
//! `coding-agent helper` runs [`serve`] on its stdin and stdout; a program
//! embedding the toolkit can run it on any pair of streams. The client's
//! [`Start`] frame names the sandbox; the caller's set-up function turns it
//! into the [`HelperConfig`] to serve, or refuses.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_tool::CancellationToken;
use agent_tool::Operations;
use agent_tool::ops::{
    ExecEnd, ExecRequest, FileOps, SandboxDenied, WalkEntry, WalkOptions, WriteConflict,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use agent_sandbox::SandboxMode;

use crate::protocol::{
    Hello, MAX_RESPONSE_BODY, Op, PROTOCOL_VERSION, READY_LINE, Reply, Request, Response, Start,
    WireDirEntry, WireError, WireExecEnd, WireWalkEntry, kind_name, read_frame, read_frame_limited,
    write_frame,
};

/// How many walk entries travel in one frame.
const WALK_BATCH: usize = 512;

/// How many files of search results travel in one frame.
const SEARCH_BATCH: usize = 256;

/// How long in-flight requests get to finish (their commands killed) after
/// the client went away.
const WIND_DOWN: Duration = Duration::from_secs(5);

/// What the helper serves.
#[derive(Clone, Debug)]
pub struct HelperConfig {
    /// The operations requests run on.
    pub operations: Operations,
    /// The working directory reported to the client.
    pub cwd: PathBuf,
    /// The program version reported to the client.
    pub version: String,
    /// The mode of the sandbox that confines [`operations`](Self::operations),
    /// reported to the client.
    pub sandbox_mode: SandboxMode,
    /// The output files this helper made (the only ones `write_at` writes).
    output_files: Arc<Mutex<OutputFiles>>,
}

impl HelperConfig {
    /// Serves `operations` for `cwd`, reporting this crate's version.
    pub fn new(operations: Operations, cwd: impl Into<PathBuf>) -> Self {
        HelperConfig {
            operations,
            cwd: cwd.into(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            sandbox_mode: SandboxMode::Off,
            output_files: Arc::default(),
        }
    }
}

type Outgoing = mpsc::UnboundedSender<(Response, Vec<u8>)>;

/// Why a helper will not serve as its client asked; the client sees the
/// text as [`Reply::Refused`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HelperRefusal(pub String);

/// Serves requests from `input`, answering on `output`, until `input` ends.
///
/// Prints [`READY_LINE`], reads the client's [`Start`] frame and hands it
/// to `setup`, which builds what to serve (the operations confined as the
/// frame's sandbox says) or refuses; a refusal is sent as
/// [`Reply::Refused`] and nothing is served. Then the greeting, then
/// requests. When the client goes away, every request still running is
/// cancelled (its commands killed).
///
/// # Errors
/// Only a failure to write the ready line, the greeting or the refusal;
/// later I/O errors end the session.
pub async fn serve<R, W, F>(input: R, output: W, setup: F) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    F: FnOnce(&Start) -> Result<HelperConfig, HelperRefusal>,
{
    let mut output = output;
    let mut input = input;
    output
        .write_all(format!("{READY_LINE}\n").as_bytes())
        .await?;
    output.flush().await?;
    // The Start frame is small: no body, a bounded header.
    let start = match read_frame_limited::<_, Start>(&mut input, MAX_RESPONSE_BODY).await {
        Ok(Some((start, _))) => start,
        Ok(None) => return Ok(()),
        Err(e) => {
            let reason = format!("the client's first frame is not a valid start: {e}");
            return refuse(&mut output, &reason).await;
        }
    };
    if start.protocol != PROTOCOL_VERSION {
        let reason = format!(
            "the client speaks protocol {}, this helper {PROTOCOL_VERSION}",
            start.protocol
        );
        return refuse(&mut output, &reason).await;
    }
    let config = match setup(&start) {
        Ok(config) => config,
        Err(refusal) => return refuse(&mut output, &refusal.0).await,
    };
    let hello = Response {
        id: 0,
        reply: Reply::Hello(Hello {
            protocol: PROTOCOL_VERSION,
            version: config.version.clone(),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            cwd: config.cwd.clone(),
            home: std::env::home_dir(),
            sandbox: config.operations.processes.sandbox_report(),
            sandbox_mode: config.sandbox_mode,
        }),
    };
    write_frame(&mut output, &hello, &[]).await?;
    output.flush().await?;

    let (tx, mut rx) = mpsc::unbounded_channel::<(Response, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((response, body)) = rx.recv().await {
            if let Err(e) = write_frame(&mut output, &response, &body).await {
                tracing::debug!(error = %e, "helper: cannot answer");
                if e.kind() == io::ErrorKind::FileTooLarge {
                    let refusal = Response {
                        id: response.id,
                        reply: error_reply(&e),
                    };
                    if write_frame(&mut output, &refusal, &[]).await.is_ok() {
                        continue;
                    }
                }
                return;
            }
            // Flush once the queue is drained: many small answers, few writes.
            if rx.is_empty() && output.flush().await.is_err() {
                return;
            }
        }
    });

    let running: Arc<Mutex<HashMap<u64, CancellationToken>>> = Arc::default();
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let frame = match read_frame::<_, Request>(&mut input).await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(error = %e, "helper: the channel broke");
                break;
            }
        };
        let (request, body) = frame;
        match request.op {
            Op::Cancel { target } => {
                if let Some(token) = lock(&running).get(&target) {
                    token.cancel();
                }
            }
            Op::Ping => {
                let _ = tx.send((
                    Response {
                        id: request.id,
                        reply: Reply::Pong,
                    },
                    Vec::new(),
                ));
            }
            op => {
                let token = CancellationToken::new();
                lock(&running).insert(request.id, token.clone());
                let tx = tx.clone();
                let config = config.clone();
                let running = running.clone();
                let id = request.id;
                tasks.spawn(async move {
                    handle(id, op, body, &config, &tx, token).await;
                    lock(&running).remove(&id);
                });
            }
        }
        // Reap finished tasks so the set does not grow without bound.
        while tasks.try_join_next().is_some() {}
    }
    for token in lock(&running).values() {
        token.cancel();
    }
    let _ = tokio::time::timeout(WIND_DOWN, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    drop(tx);
    let _ = tokio::time::timeout(WIND_DOWN, writer).await;
    Ok(())
}

/// Answers the start with a refusal instead of the greeting.
async fn refuse<W: AsyncWrite + Unpin>(output: &mut W, reason: &str) -> io::Result<()> {
    let refusal = Response {
        id: 0,
        reply: Reply::Refused {
            reason: reason.to_string(),
        },
    };
    write_frame(output, &refusal, &[]).await?;
    output.flush().await
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The wire form of `e`.
pub(crate) fn error_reply(e: &io::Error) -> Reply {
    Reply::Error(WireError {
        kind: kind_name(e.kind()),
        message: SandboxDenied::message(e)
            .map(str::to_string)
            .unwrap_or_else(|| e.to_string()),
        sandbox_denied: SandboxDenied::message(e).is_some(),
        conflict: WriteConflict::is(e),
        tool_error: false,
    })
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(io::Error::other(format!("helper task failed: {e}"))))
}

async fn handle(
    id: u64,
    op: Op,
    body: Vec<u8>,
    config: &HelperConfig,
    tx: &Outgoing,
    cancel: CancellationToken,
) {
    let files = config.operations.files.clone();
    let send = |reply: Reply, body: Vec<u8>| {
        let _ = tx.send((Response { id, reply }, body));
    };
    let answer: io::Result<(Reply, Vec<u8>)> = match op {
        Op::Metadata { path } => blocking(move || files.metadata(&path)).await.map(|m| {
            (
                Reply::Info {
                    is_file: m.is_file,
                    is_dir: m.is_dir,
                    len: m.len,
                },
                Vec::new(),
            )
        }),
        Op::ReadRange { path, offset, len } => {
            blocking(move || read_range(files.as_ref(), &path, offset, len))
                .await
                .map(|(data, eof)| (Reply::Bytes { eof }, data))
        }
        Op::CheckAccess { path, write } => blocking(move || files.check_access(&path, write))
            .await
            .map(|()| (Reply::Done, Vec::new())),
        Op::RealPath { path } => blocking(move || Ok(files.real_path(&path)))
            .await
            .map(|path| (Reply::Path { path }, Vec::new())),
        Op::WriteFile { path } => blocking(move || files.write_file(&path, &body))
            .await
            .map(|outcome| (Reply::Written { outcome }, Vec::new())),
        Op::WriteIfUnchanged { path, expected_len } => blocking(move || {
            let split = usize::try_from(expected_len)
                .ok()
                .filter(|n| *n <= body.len())
                .ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidData, "expected_len past the body")
                })?;
            let (expected, data) = body.split_at(split);
            files.write_file_if_unchanged(&path, expected, data)
        })
        .await
        .map(|outcome| (Reply::Written { outcome }, Vec::new())),
        Op::CreateDirAll { path } => blocking(move || files.create_dir_all(&path))
            .await
            .map(|()| (Reply::Done, Vec::new())),
        Op::ReadDir { path } => blocking(move || files.read_dir(&path))
            .await
            .map(|entries| {
                let entries = entries
                    .into_iter()
                    .map(|e| WireDirEntry {
                        name: e.name,
                        is_dir: e.is_dir,
                    })
                    .collect();
                (Reply::Entries { entries }, Vec::new())
            }),
        Op::Walk {
            root,
            glob,
            ordered,
        } => {
            let tx = tx.clone();
            let cancel = cancel.clone();
            blocking(move || {
                walk(
                    files.as_ref(),
                    id,
                    &root,
                    glob.as_deref(),
                    ordered,
                    &tx,
                    &cancel,
                )
            })
            .await
            .map(|()| (Reply::End, Vec::new()))
        }
        Op::Search { request } => {
            let cancel = cancel.clone();
            let found = blocking(move || files.search(&request, &cancel)).await;
            found.map(|found| {
                // In batches: a search with a large limit stays under the
                // frame header's size limit.
                let mut found = found.into_iter().peekable();
                while found.peek().is_some() {
                    let files: Vec<_> = found.by_ref().take(SEARCH_BATCH).collect();
                    send(Reply::Found { files }, Vec::new());
                }
                (Reply::End, Vec::new())
            })
        }
        Op::Exec {
            shell,
            command,
            cwd,
            set_env,
            unset_env,
            timeout_ms,
        } => {
            let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
                .filter(|(k, _)| {
                    !unset_env.iter().any(|u| k.to_str() == Some(u))
                        && !set_env.iter().any(|(s, _)| k.to_str() == Some(s))
                })
                .collect();
            env.extend(set_env.into_iter().map(|(k, v)| (k.into(), v.into())));
            let request = ExecRequest {
                shell,
                command,
                cwd,
                env,
                timeout: timeout_ms.map(Duration::from_millis),
            };
            let mut on_data = |chunk: &[u8]| send(Reply::Output, chunk.to_vec());
            config
                .operations
                .processes
                .exec(request, &mut on_data, cancel.clone())
                .await
                .map(|end| {
                    let end = match end {
                        ExecEnd::Exited(code) => WireExecEnd::Exited { code },
                        ExecEnd::TimedOut => WireExecEnd::TimedOut,
                        ExecEnd::Aborted => WireExecEnd::Aborted,
                    };
                    (Reply::Exit { end }, Vec::new())
                })
        }
        Op::CreateOutputFile => {
            let made = config.output_files.clone();
            blocking(move || lock(&made).create())
                .await
                .map(|path| (Reply::Path { path }, Vec::new()))
        }
        Op::WriteAt { path, offset } => {
            let made = config.output_files.clone();
            blocking(move || lock(&made).write_at(&path, offset, &body))
                .await
                .map(|()| (Reply::Done, Vec::new()))
        }
        Op::WorkingDirExists { path } => {
            let processes = config.operations.processes.clone();
            blocking(move || Ok(processes.working_dir_exists(&path)))
                .await
                .map(|value| (Reply::Bool { value }, Vec::new()))
        }
        Op::ResolveShell { explicit } => {
            match config
                .operations
                .processes
                .resolve_shell(explicit.as_deref())
            {
                Ok(path) => Ok((Reply::Path { path }, Vec::new())),
                Err(e) => {
                    send(
                        Reply::Error(WireError {
                            kind: kind_name(io::ErrorKind::NotFound),
                            message: e.to_string(),
                            sandbox_denied: false,
                            conflict: false,
                            tool_error: true,
                        }),
                        Vec::new(),
                    );
                    return;
                }
            }
        }
        Op::Cancel { .. } | Op::Ping => return,
    };
    match answer {
        Ok((reply, body)) => send(reply, body),
        Err(e) => send(error_reply(&e), Vec::new()),
    }
}

/// The full-output files this helper made, written only through the
/// handles it opened when making them: the command whose output it is may
/// share the temp dir, and a path it replaced with a symlink must not
/// redirect the writes (the helper itself runs outside the sandbox).
#[derive(Debug, Default)]
pub(crate) struct OutputFiles {
    /// Oldest first: path, handle, bytes written.
    files: Vec<(PathBuf, std::fs::File, u64)>,
}

impl OutputFiles {
    fn create(&mut self) -> io::Result<PathBuf> {
        // As locally: past the total budget the oldest files go.
        let mut total: u64 = self.files.iter().map(|(_, _, n)| *n).sum();
        while total > agent_local_ops::MAX_OUTPUT_FILES_TOTAL && !self.files.is_empty() {
            let (old, _, n) = self.files.remove(0);
            // An unlink removes a link, never what it points to.
            let _ = std::fs::remove_file(&old);
            total -= n;
        }
        let (file, path) = tempfile::Builder::new()
            .prefix("coding-agent-bash-")
            .suffix(".log")
            .tempfile()?
            .keep()
            .map_err(|e| e.error)?;
        self.files.push((path.clone(), file, 0));
        Ok(path)
    }

    fn write_at(&mut self, path: &std::path::Path, offset: u64, data: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let Some((_, file, written)) = self.files.iter_mut().find(|(p, _, _)| p == path) else {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "not an output file of this helper",
            ));
        };
        file.write_all_at(data, offset)?;
        *written = (*written).max(offset + data.len() as u64);
        Ok(())
    }
}

fn read_range(
    files: &dyn FileOps,
    path: &std::path::Path,
    offset: u64,
    len: u64,
) -> io::Result<(Vec<u8>, bool)> {
    use std::io::Read;
    let len = len.min(crate::protocol::MAX_RESPONSE_BODY as u64);
    let mut reader = files.open_read(path)?;
    // The operations give a stream, not a seekable file: skip to `offset`.
    io::copy(&mut (&mut reader).take(offset), &mut io::sink())?;
    let mut data = Vec::new();
    (&mut reader).take(len).read_to_end(&mut data)?;
    let eof = (data.len() as u64) < len || {
        let mut probe = [0u8; 1];
        reader.read(&mut probe)? == 0
    };
    Ok((data, eof))
}

fn walk(
    files: &dyn FileOps,
    id: u64,
    root: &std::path::Path,
    glob: Option<&str>,
    ordered: bool,
    tx: &Outgoing,
    cancel: &CancellationToken,
) -> io::Result<()> {
    let batch = Mutex::new(Vec::with_capacity(WALK_BATCH));
    let flush = |entries: Vec<WireWalkEntry>| {
        tx.send((
            Response {
                id,
                reply: Reply::Walked { entries },
            },
            Vec::new(),
        ))
        .is_ok()
    };
    let options = WalkOptions {
        root,
        glob,
        ordered,
    };
    files.walk(&options, &|entry: WalkEntry| {
        if cancel.is_cancelled() {
            return false;
        }
        let mut pending = lock(&batch);
        pending.push(WireWalkEntry {
            path: entry.path,
            is_dir: entry.is_dir,
            is_file: entry.is_file,
        });
        if pending.len() >= WALK_BATCH {
            let full = std::mem::replace(&mut *pending, Vec::with_capacity(WALK_BATCH));
            return flush(full);
        }
        true
    })?;
    let rest = std::mem::take(&mut *lock(&batch));
    if !rest.is_empty() {
        flush(rest);
    }
    Ok(())
}
