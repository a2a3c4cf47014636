//! [`FileOps`] and [`ProcessOps`] forwarded to the helper.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_tool::ops::{
    DirEntryInfo, ExecEnd, ExecRequest, FileInfo, FileMatches, FileOps, OutputFile, OutputSink,
    ProcessOps, SandboxDenied, SearchRequest, WalkEntry, WalkOptions, WalkVisitor, WriteConflict,
    WriteOutcome,
};
use agent_tool::{CancellationToken, ToolError};
use futures::FutureExt;
use futures::future::BoxFuture;

use crate::connection::Waiter;
use crate::protocol::{Op, Reply, WireError, WireExecEnd, kind_from_name};
use crate::remote::Remote;

/// How long the remote gets to end a command after its timeout or a cancel.
const GRACE: Duration = Duration::from_secs(10);

/// How much one read request asks for: most source files in one round trip.
const READ_CHUNK: u64 = 4 << 20;

/// The `io::Error` a wire error stands for.
pub(crate) fn to_io(error: WireError, path: Option<&Path>) -> io::Error {
    let kind = kind_from_name(&error.kind);
    if error.conflict {
        return WriteConflict::error(path.unwrap_or(Path::new("")));
    }
    if error.sandbox_denied {
        return io::Error::new(kind, SandboxDenied(error.message));
    }
    io::Error::new(kind, error.message)
}

/// A reply that does not fit the request.
pub(crate) fn unexpected(reply: &Reply) -> io::Error {
    match reply {
        Reply::Error(e) => to_io(e.clone(), None),
        other => io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the helper answered with an unexpected message: {other:?}"),
        ),
    }
}

fn expect_err(reply: Reply, path: &Path) -> io::Error {
    match reply {
        Reply::Error(e) => to_io(e, Some(path)),
        other => unexpected(&other),
    }
}

/// File operations on the remote machine.
#[derive(Debug, Clone)]
pub struct RemoteFileOps {
    remote: Remote,
}

impl RemoteFileOps {
    /// The file operations of `remote`.
    pub fn new(remote: Remote) -> Self {
        RemoteFileOps { remote }
    }

    fn read_range(&self, path: &Path, offset: u64, len: u64) -> io::Result<(Vec<u8>, bool)> {
        match self.remote.call(Op::ReadRange {
            path: path.to_path_buf(),
            offset,
            len,
        })? {
            (Reply::Bytes { .. }, data) if data.len() as u64 > len => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the remote answered a read of {len} bytes with {} bytes",
                    data.len()
                ),
            )),
            (Reply::Bytes { eof }, data) => Ok((data, eof)),
            (other, _) => Err(expect_err(other, path)),
        }
    }
}

/// A remote file read in chunks as it is consumed.
struct RemoteReader {
    files: RemoteFileOps,
    path: PathBuf,
    next_offset: u64,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
}

impl Read for RemoteReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.buf.len() {
            if self.eof || out.is_empty() {
                return Ok(0);
            }
            let (data, eof) = self
                .files
                .read_range(&self.path, self.next_offset, READ_CHUNK)?;
            self.next_offset += data.len() as u64;
            self.eof = eof || data.is_empty();
            self.buf = data;
            self.pos = 0;
            if self.buf.is_empty() {
                return Ok(0);
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl FileOps for RemoteFileOps {
    fn metadata(&self, path: &Path) -> io::Result<FileInfo> {
        match self.remote.call(Op::Metadata {
            path: path.to_path_buf(),
        })? {
            (
                Reply::Info {
                    is_file,
                    is_dir,
                    len,
                },
                _,
            ) => Ok(FileInfo {
                is_file,
                is_dir,
                len,
            }),
            (other, _) => Err(expect_err(other, path)),
        }
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        // The first chunk comes now, so a missing or unreadable file fails
        // at open, as a local open would.
        let (data, eof) = self.read_range(path, 0, READ_CHUNK)?;
        Ok(Box::new(RemoteReader {
            files: self.clone(),
            path: path.to_path_buf(),
            next_offset: data.len() as u64,
            eof: eof || data.is_empty(),
            buf: data,
            pos: 0,
        }))
    }

    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut all = Vec::new();
        loop {
            // A whole file in memory: bounded, whatever the remote claims.
            if all.len() >= crate::protocol::MAX_BODY {
                return Err(io::Error::new(
                    io::ErrorKind::FileTooLarge,
                    format!(
                        "{} is larger than {} MiB, too large to read whole from the remote",
                        path.display(),
                        crate::protocol::MAX_BODY >> 20
                    ),
                ));
            }
            let (data, eof) = self.read_range(path, all.len() as u64, READ_CHUNK * 4)?;
            let empty = data.is_empty();
            all.extend_from_slice(&data);
            if eof || empty {
                return Ok(all);
            }
        }
    }

    fn check_access(&self, path: &Path, write: bool) -> io::Result<()> {
        match self.remote.call(Op::CheckAccess {
            path: path.to_path_buf(),
            write,
        })? {
            (Reply::Done, _) => Ok(()),
            (other, _) => Err(expect_err(other, path)),
        }
    }

    fn real_path(&self, path: &Path) -> PathBuf {
        match self.remote.call(Op::RealPath {
            path: path.to_path_buf(),
        }) {
            Ok((Reply::Path { path }, _)) => path,
            // The call that follows meets the same failure and reports it.
            _ => path.to_path_buf(),
        }
    }

    fn write_file(&self, path: &Path, data: &[u8]) -> io::Result<WriteOutcome> {
        match self.remote.call_with_body(
            Op::WriteFile {
                path: path.to_path_buf(),
            },
            data.to_vec(),
        )? {
            (Reply::Written { outcome }, _) => Ok(outcome),
            (other, _) => Err(expect_err(other, path)),
        }
    }

    fn write_file_if_unchanged(
        &self,
        path: &Path,
        expected: &[u8],
        data: &[u8],
    ) -> io::Result<WriteOutcome> {
        let mut body = Vec::with_capacity(expected.len() + data.len());
        body.extend_from_slice(expected);
        body.extend_from_slice(data);
        match self.remote.call_with_body(
            Op::WriteIfUnchanged {
                path: path.to_path_buf(),
                expected_len: expected.len() as u64,
            },
            body,
        )? {
            (Reply::Written { outcome }, _) => Ok(outcome),
            (other, _) => Err(expect_err(other, path)),
        }
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        match self.remote.call(Op::CreateDirAll {
            path: path.to_path_buf(),
        })? {
            (Reply::Done, _) => Ok(()),
            (other, _) => Err(expect_err(other, path)),
        }
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntryInfo>> {
        match self.remote.call(Op::ReadDir {
            path: path.to_path_buf(),
        })? {
            (Reply::Entries { entries }, _) => Ok(entries
                .into_iter()
                .map(|e| DirEntryInfo {
                    name: e.name,
                    is_dir: e.is_dir,
                })
                .collect()),
            (other, _) => Err(expect_err(other, path)),
        }
    }

    fn search(
        &self,
        request: &SearchRequest,
        cancel: &CancellationToken,
    ) -> io::Result<Vec<FileMatches>> {
        // One request for the whole search: the walk and every file read
        // happen on the remote side; the results come in batches.
        let connection = self.remote.connection()?;
        let (waiter, rx) = Waiter::blocking();
        let id = connection.send(
            Op::Search {
                request: request.clone(),
            },
            Vec::new(),
            waiter,
        )?;
        let mut all: Vec<FileMatches> = Vec::new();
        let mut lines = 0usize;
        let mut cancel_sent = false;
        loop {
            let reply = match rx.recv_timeout(std::time::Duration::from_millis(100)) {
                Ok((reply, _)) => reply,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    // The search stops early on the remote; what it found comes back.
                    if cancel.is_cancelled() && !cancel_sent {
                        cancel_sent = true;
                        connection.notify(Op::Cancel { target: id });
                    }
                    continue;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(connection.lost());
                }
            };
            match reply {
                Reply::Found { files } => {
                    for file in files {
                        lines += file.lines.len();
                        all.push(file);
                    }
                    // The remote owes no more than `limit` lines; a longer
                    // answer is cut here, whatever the other side sends.
                    if lines >= request.limit.max(1) {
                        connection.notify(Op::Cancel { target: id });
                        return Ok(all);
                    }
                }
                Reply::End => return Ok(all),
                other => return Err(expect_err(other, &request.root)),
            }
        }
    }

    fn walk(&self, options: &WalkOptions<'_>, visit: WalkVisitor<'_>) -> io::Result<()> {
        let connection = self.remote.connection()?;
        let (waiter, rx) = Waiter::blocking();
        let id = connection.send(
            Op::Walk {
                root: options.root.to_path_buf(),
                glob: options.glob.map(str::to_string),
                ordered: options.ordered,
            },
            Vec::new(),
            waiter,
        )?;
        loop {
            let Ok((reply, _)) = rx.recv() else {
                return Err(connection.lost());
            };
            match reply {
                Reply::Walked { entries } => {
                    for entry in entries {
                        let keep_going = visit(WalkEntry {
                            path: entry.path,
                            is_dir: entry.is_dir,
                            is_file: entry.is_file,
                        });
                        if !keep_going {
                            connection.notify(Op::Cancel { target: id });
                            return Ok(());
                        }
                    }
                }
                Reply::End => return Ok(()),
                other => return Err(expect_err(other, options.root)),
            }
        }
    }
}

/// A full-output file on the remote: written in large pieces at known
/// offsets, without waiting for each answer (the helper may handle two
/// pieces in either order; the offsets keep the file right).
struct RemoteOutputFile {
    remote: Remote,
    path: PathBuf,
    buf: Vec<u8>,
    offset: u64,
}

/// How much output travels in one piece.
const OUTPUT_PIECE: usize = 1 << 20;

impl RemoteOutputFile {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let piece = std::mem::take(&mut self.buf);
        let len = piece.len() as u64;
        let connection = self.remote.connection()?;
        // Nobody waits for the answer.
        let (waiter, _ignored) = Waiter::blocking();
        connection.send(
            Op::WriteAt {
                path: self.path.clone(),
                offset: self.offset,
            },
            piece,
            waiter,
        )?;
        self.offset += len;
        Ok(())
    }
}

impl std::io::Write for RemoteOutputFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= OUTPUT_PIECE {
            self.send()?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

impl OutputFile for RemoteOutputFile {
    fn path(&self) -> &Path {
        &self.path
    }
}

/// Process operations on the remote machine.
#[derive(Debug, Clone)]
pub struct RemoteProcessOps {
    remote: Remote,
}

impl RemoteProcessOps {
    /// The process operations of `remote`.
    pub fn new(remote: Remote) -> Self {
        RemoteProcessOps { remote }
    }
}

/// What the caller changed in the environment it would give a local child:
/// only those differences travel, so this machine's variables (API keys
/// among them) never reach the remote, whose commands keep its own.
fn environment_changes(env: &[(OsString, OsString)]) -> (Vec<(String, String)>, Vec<String>) {
    let local: std::collections::HashMap<OsString, OsString> = std::env::vars_os().collect();
    let mut set = Vec::new();
    for (k, v) in env {
        if local.get(k) != Some(v)
            && let (Some(k), Some(v)) = (k.to_str(), v.to_str())
        {
            set.push((k.to_string(), v.to_string()));
        }
    }
    let unset = local
        .keys()
        .filter(|k| !env.iter().any(|(e, _)| e == *k))
        .filter_map(|k| k.to_str().map(str::to_string))
        .collect();
    (set, unset)
}

impl ProcessOps for RemoteProcessOps {
    fn working_dir_exists(&self, cwd: &Path) -> bool {
        matches!(
            self.remote.call(Op::WorkingDirExists {
                path: cwd.to_path_buf()
            }),
            Ok((Reply::Bool { value: true }, _))
        )
    }

    fn resolve_shell(&self, explicit: Option<&str>) -> Result<PathBuf, ToolError> {
        match self.remote.call(Op::ResolveShell {
            explicit: explicit.map(str::to_string),
        }) {
            Ok((Reply::Path { path }, _)) => Ok(path),
            Ok((Reply::Error(e), _)) => Err(ToolError::new(e.message)),
            Ok((other, _)) => Err(ToolError::new(unexpected(&other).to_string())),
            Err(e) => Err(ToolError::new(e.to_string())),
        }
    }

    fn sandbox_report(&self) -> Option<serde_json::Value> {
        self.remote.hello().sandbox.clone()
    }

    fn create_output_file(&self) -> io::Result<Box<dyn OutputFile>> {
        match self.remote.call(Op::CreateOutputFile)? {
            (Reply::Path { path }, _) => Ok(Box::new(RemoteOutputFile {
                remote: self.remote.clone(),
                path,
                buf: Vec::new(),
                offset: 0,
            })),
            (other, _) => Err(unexpected(&other)),
        }
    }

    fn exec<'a>(
        &'a self,
        request: ExecRequest,
        on_data: OutputSink<'a>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, io::Result<ExecEnd>> {
        async move {
            let remote = self.remote.clone();
            // Connecting may block (a reconnect): not on this runtime's thread.
            let connection = tokio::task::spawn_blocking(move || remote.connection())
                .await
                .map_err(|e| io::Error::other(e.to_string()))??;
            let (set_env, unset_env) = environment_changes(&request.env);
            let timeout = request.timeout;
            let (waiter, mut rx) = Waiter::paced();
            let id = connection.send(
                Op::Exec {
                    shell: request.shell,
                    command: request.command,
                    cwd: request.cwd,
                    set_env,
                    unset_env,
                    timeout_ms: request.timeout.map(|t| t.as_millis() as u64),
                },
                Vec::new(),
                waiter,
            )?;
            let mut cancel_sent = false;
            // The remote kills at the timeout; past it (and a grace), or
            // once a cancel went unanswered that long, this side stops
            // waiting and drops the channel: a remote that hangs cannot
            // hold the call.
            let far = tokio::time::Instant::now() + Duration::from_secs(86_400 * 365);
            let mut give_up = match timeout {
                Some(t) => tokio::time::Instant::now() + t + GRACE,
                None => far,
            };
            let mut give_up_as = ExecEnd::TimedOut;
            loop {
                let incoming = tokio::select! {
                    incoming = rx.recv() => incoming,
                    _ = cancel.cancelled(), if !cancel_sent => {
                        // The helper kills the command's tree and answers `aborted`.
                        cancel_sent = true;
                        connection.notify(Op::Cancel { target: id });
                        give_up = give_up.min(tokio::time::Instant::now() + GRACE);
                        give_up_as = ExecEnd::Aborted;
                        continue;
                    }
                    _ = tokio::time::sleep_until(give_up) => {
                        connection.close("the remote did not end a command it was told to stop");
                        return Ok(give_up_as);
                    }
                };
                let Some((reply, body)) = incoming else {
                    return Err(connection.lost());
                };
                match reply {
                    Reply::Output => on_data(&body),
                    Reply::Exit { end } => {
                        return Ok(match end {
                            WireExecEnd::Exited { code } => ExecEnd::Exited(code),
                            WireExecEnd::TimedOut => ExecEnd::TimedOut,
                            WireExecEnd::Aborted => ExecEnd::Aborted,
                        });
                    }
                    other => return Err(unexpected(&other)),
                }
            }
        }
        .boxed()
    }
}
