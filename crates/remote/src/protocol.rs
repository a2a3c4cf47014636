//! The helper protocol: framing and message shapes.
//!
//! After the transport starts the helper, the helper prints one text line,
//! [`READY_LINE`], and from then on both sides exchange frames. A frame is
//!
//! ```text
//! u32 header length (big endian) | u32 body length (big endian) | header (JSON) | body (bytes)
//! ```
//!
//! The header is a [`Request`] (client to helper) or a [`Response`] (helper
//! to client); the body carries file contents and command output untouched,
//! so they cost no encoding. Requests carry an `id` the client chooses;
//! every response names the request it belongs to, and responses of
//! different requests interleave freely: the channel is multiplexed.
//!
//! The client's first frame is [`Start`]: the sandbox the helper must
//! apply, decided by the client. The helper's first frame answers it: a
//! [`Response`] with id 0 carrying [`Hello`] once that sandbox stands, or
//! [`Reply::Refused`] (and the helper exits) when it cannot be had there.
//!
//! The section "The protocol" of `docs/remote.md` in the repository walks
//! through a session's messages.

use std::io;
use std::path::PathBuf;

use agent_sandbox::SandboxSpec;
use agent_tool::ops::{FileMatches, SearchRequest, WriteOutcome};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The protocol version this crate speaks. Version 2 added [`Start`]: the
/// client decides the helper's sandbox.
pub const PROTOCOL_VERSION: u32 = 2;

/// The line the helper prints when it is ready for frames.
pub const READY_LINE: &str = "@@coding-agent ready 2";

/// The prefix of every text line the bootstrap script prints for the client.
pub const LINE_PREFIX: &str = "@@coding-agent ";

/// The largest frame header accepted (16 MiB).
pub const MAX_HEADER: usize = 16 << 20;

/// The largest frame body accepted (1 GiB): larger files are refused with a
/// clear error rather than buffered.
pub const MAX_BODY: usize = 1 << 30;

/// The largest response body a client accepts (64 MiB): the helper never
/// sends more in one frame, and a misbehaving remote cannot make the client
/// allocate more.
pub const MAX_RESPONSE_BODY: usize = 64 << 20;

/// The client's first frame, sent once [`READY_LINE`] arrives: what the
/// helper applies before it serves anything.
///
/// The helper resolves [`sandbox`](Self::sandbox) on its machine (relative
/// paths below its working directory, `~` its user's home), adds its own
/// settings as layers that may only tighten it, and answers [`Hello`], or
/// [`Reply::Refused`] when the result cannot be enforced there and the
/// spec [is chosen](SandboxSpec::is_chosen): never unconfined in its place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Start {
    /// The protocol version the client speaks ([`PROTOCOL_VERSION`]).
    pub protocol: u32,
    /// The sandbox, as the client's settings and flags decided it.
    pub sandbox: SandboxSpec,
}

/// A request from the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Chosen by the client, unique among its requests in flight (never 0).
    pub id: u64,
    /// What to do.
    #[serde(flatten)]
    pub op: Op,
}

/// The operations a helper performs. Each maps onto one method of
/// [`FileOps`](agent_tool::ops::FileOps) or
/// [`ProcessOps`](agent_tool::ops::ProcessOps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Op {
    /// Metadata, symlinks followed. Answer: [`Reply::Info`].
    Metadata {
        /// The path.
        path: PathBuf,
    },
    /// Up to `len` bytes from `offset`. Answer: [`Reply::Bytes`] with the
    /// data as body.
    ReadRange {
        /// The path.
        path: PathBuf,
        /// Where to start.
        offset: u64,
        /// The most bytes to return.
        len: u64,
    },
    /// Whether the file can be read (and written). Answer: [`Reply::Done`].
    CheckAccess {
        /// The path.
        path: PathBuf,
        /// Check write access too.
        write: bool,
    },
    /// Symlinks resolved. Answer: [`Reply::Path`].
    RealPath {
        /// The path.
        path: PathBuf,
    },
    /// The body becomes the file's content. Answer: [`Reply::Written`].
    WriteFile {
        /// The path.
        path: PathBuf,
    },
    /// The body is the expected content (`expected_len` bytes) followed by
    /// the new content; written only if the file still holds the expected
    /// content. Answer: [`Reply::Written`], or an error with `conflict`.
    WriteIfUnchanged {
        /// The path.
        path: PathBuf,
        /// Length of the expected content at the start of the body.
        expected_len: u64,
    },
    /// `mkdir -p`. Answer: [`Reply::Done`].
    CreateDirAll {
        /// The path.
        path: PathBuf,
    },
    /// A directory listing. Answer: [`Reply::Entries`].
    ReadDir {
        /// The path.
        path: PathBuf,
    },
    /// A directory walk. Answers: any number of [`Reply::Walked`] batches,
    /// then [`Reply::End`]. Cancellable.
    Walk {
        /// The directory.
        root: PathBuf,
        /// Only files matching this glob.
        glob: Option<String>,
        /// Path order.
        ordered: bool,
    },
    /// A content search. Answers: [`Reply::Found`] batches of files, then
    /// [`Reply::End`]. Cancellable.
    Search {
        /// The search.
        request: SearchRequest,
    },
    /// Runs a command. Answers: [`Reply::Output`] chunks (output as body),
    /// then [`Reply::Exit`]. Cancellable: a cancel kills the command's whole
    /// process tree and the answer is `Exit` with `aborted`.
    Exec {
        /// The shell (`<shell> -c <command>`).
        shell: PathBuf,
        /// The command text.
        command: String,
        /// Working directory.
        cwd: PathBuf,
        /// Variables to set on top of the helper's own environment.
        set_env: Vec<(String, String)>,
        /// Variables to remove from it.
        unset_env: Vec<String>,
        /// Kill the command after this many milliseconds.
        timeout_ms: Option<u64>,
    },
    /// A new private file for a command's full output in the helper's temp
    /// dir. Answer: [`Reply::Path`].
    CreateOutputFile,
    /// The body written at `offset` of a file made by
    /// [`Op::CreateOutputFile`]. Answer: [`Reply::Done`].
    WriteAt {
        /// The file.
        path: PathBuf,
        /// Where.
        offset: u64,
    },
    /// Whether commands can run in this directory. Answer: [`Reply::Bool`].
    WorkingDirExists {
        /// The path.
        path: PathBuf,
    },
    /// The shell to run commands with. Answer: [`Reply::Path`], or an error
    /// with `tool_error` (a message for the model).
    ResolveShell {
        /// The configured shell, if any.
        explicit: Option<String>,
    },
    /// Cancels the request `target`. No answer of its own.
    Cancel {
        /// The request to cancel.
        target: u64,
    },
    /// A keep-alive. Answer: [`Reply::Pong`].
    Ping,
}

impl Op {
    /// Whether the answer comes in several frames.
    pub fn streams(&self) -> bool {
        matches!(self, Op::Walk { .. } | Op::Search { .. } | Op::Exec { .. })
    }
}

/// A response from the helper.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The request it answers (0: the greeting).
    pub id: u64,
    /// The answer.
    #[serde(flatten)]
    pub reply: Reply,
}

/// What the helper says about itself, first thing after [`READY_LINE`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// The protocol version it speaks.
    pub protocol: u32,
    /// Its program version.
    pub version: String,
    /// Its operating system (`std::env::consts::OS`).
    pub os: String,
    /// Its architecture (`std::env::consts::ARCH`).
    pub arch: String,
    /// Its working directory: where the tools run.
    pub cwd: PathBuf,
    /// Its user's home directory (what `~` means there), if it has one.
    #[serde(default)]
    pub home: Option<PathBuf>,
    /// What confines its commands (the sandbox report), if anything.
    pub sandbox: Option<serde_json::Value>,
    /// The mode of the sandbox it applies to files and commands (the
    /// client's, or stricter).
    pub sandbox_mode: agent_sandbox::SandboxMode,
}

/// A directory entry on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireDirEntry {
    /// Its name.
    pub name: String,
    /// A directory (symlinks followed), unknown when it cannot be stat'ed.
    pub is_dir: Option<bool>,
}

/// A walk entry on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireWalkEntry {
    /// Its full path.
    pub path: PathBuf,
    /// A directory.
    pub is_dir: bool,
    /// A regular file.
    pub is_file: bool,
}

/// How a command ended, on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum WireExecEnd {
    /// It exited; no code when a signal ended it.
    Exited {
        /// The exit code.
        code: Option<i32>,
    },
    /// Killed at the timeout.
    TimedOut,
    /// Killed by a cancel.
    Aborted,
}

/// An error on the wire: enough to rebuild the `io::Error` the local
/// operation would have returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    /// The `io::ErrorKind`, as its Rust name (`NotFound`, `PermissionDenied`, ...).
    pub kind: String,
    /// The message.
    pub message: String,
    /// A refusal of the remote's sandbox or rules (`SandboxDenied`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sandbox_denied: bool,
    /// A write conflict (`WriteConflict`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conflict: bool,
    /// A message meant for the model as it is (`ToolError`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tool_error: bool,
}

/// The answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Reply {
    /// The greeting (id 0).
    Hello(Hello),
    /// Instead of the greeting (id 0): the helper will not serve as the
    /// [`Start`] frame asked (the sandbox cannot be enforced there, the
    /// remote's settings are broken, ...), and exits.
    Refused {
        /// Why, in words for the user.
        reason: String,
    },
    /// Metadata.
    Info {
        /// A regular file.
        is_file: bool,
        /// A directory.
        is_dir: bool,
        /// Size in bytes.
        len: u64,
    },
    /// File data in the body.
    Bytes {
        /// The end of the file was reached.
        eof: bool,
    },
    /// Success without a value.
    Done,
    /// A path.
    Path {
        /// The path.
        path: PathBuf,
    },
    /// A write happened.
    Written {
        /// How.
        outcome: WriteOutcome,
    },
    /// A directory listing.
    Entries {
        /// The entries.
        entries: Vec<WireDirEntry>,
    },
    /// A batch of walk entries (more may follow).
    Walked {
        /// The entries.
        entries: Vec<WireWalkEntry>,
    },
    /// The end of a walk.
    End,
    /// A batch of search results (more may follow).
    Found {
        /// The files with matches.
        files: Vec<FileMatches>,
    },
    /// Command output in the body (more may follow).
    Output,
    /// The command ended.
    Exit {
        /// How.
        end: WireExecEnd,
    },
    /// A yes or no.
    Bool {
        /// The answer.
        value: bool,
    },
    /// The keep-alive answer.
    Pong,
    /// The request failed.
    Error(WireError),
}

impl Reply {
    /// Whether more frames follow for the same request.
    pub fn is_partial(&self) -> bool {
        matches!(
            self,
            Reply::Walked { .. } | Reply::Found { .. } | Reply::Output
        )
    }
}

/// `io::ErrorKind`s that travel by name; anything else arrives as `Other`.
const KINDS: &[io::ErrorKind] = &[
    io::ErrorKind::NotFound,
    io::ErrorKind::PermissionDenied,
    io::ErrorKind::AlreadyExists,
    io::ErrorKind::InvalidInput,
    io::ErrorKind::InvalidData,
    io::ErrorKind::NotADirectory,
    io::ErrorKind::IsADirectory,
    io::ErrorKind::DirectoryNotEmpty,
    io::ErrorKind::ReadOnlyFilesystem,
    io::ErrorKind::StorageFull,
    io::ErrorKind::FileTooLarge,
    io::ErrorKind::TimedOut,
    io::ErrorKind::Interrupted,
    io::ErrorKind::Unsupported,
    io::ErrorKind::UnexpectedEof,
    io::ErrorKind::OutOfMemory,
    io::ErrorKind::CrossesDevices,
    io::ErrorKind::InvalidFilename,
];

/// The name of `kind` on the wire.
pub fn kind_name(kind: io::ErrorKind) -> String {
    format!("{kind:?}")
}

/// The `io::ErrorKind` named `name` (`Other` for unknown names).
pub fn kind_from_name(name: &str) -> io::ErrorKind {
    KINDS
        .iter()
        .copied()
        .find(|k| kind_name(*k) == name)
        .unwrap_or(io::ErrorKind::Other)
}

/// Writes one frame.
///
/// # Errors
/// The writer's errors, or `InvalidInput` when the header cannot be encoded
/// (a path that is not UTF-8) or a part exceeds its maximum.
pub async fn write_frame<W: AsyncWrite + Unpin, T: Serialize>(
    writer: &mut W,
    header: &T,
    body: &[u8],
) -> io::Result<()> {
    let head = serde_json::to_vec(header)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    if head.len() > MAX_HEADER || body.len() > MAX_BODY {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "too large for the remote channel ({} bytes; at most {MAX_BODY})",
                body.len()
            ),
        ));
    }
    let mut prefix = [0u8; 8];
    prefix[..4].copy_from_slice(&(head.len() as u32).to_be_bytes());
    prefix[4..].copy_from_slice(&(body.len() as u32).to_be_bytes());
    writer.write_all(&prefix).await?;
    writer.write_all(&head).await?;
    writer.write_all(body).await
}

/// Reads one frame; `None` at a clean end of the stream (between frames).
///
/// # Errors
/// The reader's errors, a truncated frame, a part over its maximum, or a
/// header that is not the expected JSON (`InvalidData`).
pub async fn read_frame<R: AsyncRead + Unpin, T: for<'de> Deserialize<'de>>(
    reader: &mut R,
) -> io::Result<Option<(T, Vec<u8>)>> {
    read_frame_limited(reader, MAX_BODY).await
}

/// [`read_frame`] accepting bodies of at most `max_body` bytes.
///
/// # Errors
/// As [`read_frame`].
pub async fn read_frame_limited<R: AsyncRead + Unpin, T: for<'de> Deserialize<'de>>(
    reader: &mut R,
    max_body: usize,
) -> io::Result<Option<(T, Vec<u8>)>> {
    Ok(read_frame_sized(reader, max_body)
        .await?
        .map(|(header, body, _)| (header, body)))
}

/// [`read_frame_limited`], also returning the frame's size in bytes.
///
/// # Errors
/// As [`read_frame`].
pub async fn read_frame_sized<R: AsyncRead + Unpin, T: for<'de> Deserialize<'de>>(
    reader: &mut R,
    max_body: usize,
) -> io::Result<Option<(T, Vec<u8>, usize)>> {
    let mut prefix = [0u8; 8];
    let mut filled = 0;
    while filled < prefix.len() {
        let n = reader.read(&mut prefix[filled..]).await?;
        if n == 0 {
            return if filled == 0 {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        filled += n;
    }
    let head_len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
    let body_len = u32::from_be_bytes([prefix[4], prefix[5], prefix[6], prefix[7]]) as usize;
    if head_len > MAX_HEADER || body_len > max_body.min(MAX_BODY) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {head_len} + {body_len} bytes is over the protocol's limits"),
        ));
    }
    let mut head = vec![0u8; head_len];
    reader.read_exact(&mut head).await?;
    let mut body = vec![0u8; body_len];
    reader.read_exact(&mut body).await?;
    let header = serde_json::from_slice(&head).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame header that is not a known message: {e}"),
        )
    })?;
    Ok(Some((header, body, 8 + head_len + body_len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_bad_ones_are_errors() {
        let request = Request {
            id: 7,
            op: Op::ReadRange {
                path: "/etc/hostname".into(),
                offset: 3,
                len: 10,
            },
        };
        let mut wire = Vec::new();
        write_frame(&mut wire, &request, b"body").await.unwrap();
        let text = String::from_utf8_lossy(&wire[8..]).to_string();
        assert!(text.starts_with(r#"{"id":7,"op":"read_range","path":"/etc/hostname""#));
        let (back, body): (Request, Vec<u8>) =
            read_frame(&mut wire.as_slice()).await.unwrap().unwrap();
        assert_eq!(back, request);
        assert_eq!(body, b"body");

        // A clean end, a cut frame, an oversized one, and garbage.
        let empty: &[u8] = &[];
        assert!(
            read_frame::<_, Request>(&mut &*empty)
                .await
                .unwrap()
                .is_none()
        );
        let cut = &wire[..wire.len() - 2];
        assert!(read_frame::<_, Request>(&mut &*cut).await.is_err());
        let huge = [0xff_u8; 8];
        let e = read_frame::<_, Request>(&mut &huge[..]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let mut junk = Vec::new();
        write_frame(
            &mut junk,
            &serde_json::json!({"id": 1, "op": "format_disk"}),
            b"",
        )
        .await
        .unwrap();
        let e = read_frame::<_, Request>(&mut junk.as_slice())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("not a known message"), "{e}");
    }

    #[test]
    fn error_kinds_travel_by_name() {
        for kind in KINDS {
            assert_eq!(kind_from_name(&kind_name(*kind)), *kind);
        }
        assert_eq!(kind_from_name("SomethingNew"), io::ErrorKind::Other);
    }
}
