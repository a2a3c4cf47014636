//! # agent-remote
//!
//! Tools where the code is. The file and process operations of
//! `agent-tool` ([`FileOps`](agent_tool::ops::FileOps),
//! [`ProcessOps`](agent_tool::ops::ProcessOps)) are forwarded over one
//! stdio channel to a helper on the other side: the `coding-agent` binary
//! in helper mode, running [`helper::serve`]. The built-in tools and any
//! custom tool written on the operations run there unchanged, with the
//! same fidelity as locally: grep and find walk and search in-process on
//! the remote (one request each, never one round trip per file), bash's
//! process tree is killed there on cancel, truncation and spill files
//! behave as locally, and the helper applies the sandbox on its side:
//! the one this side decided ([`RemoteOptions::sandbox`], an
//! [`agent_sandbox::SandboxSpec`]), which the remote's own settings may
//! only tighten, or it refuses to start ([`RemoteError::Refused`]).
//!
//! - [`RemoteTarget`]: where, as a URI (`ssh://`, `docker://`, `podman://`,
//!   `kubectl://`, `exec:`).
//! - [`Remote::connect`]: opens the channel, finds or uploads the helper,
//!   and reconnects on the next call after a drop.
//! - [`Remote::operations`] and [`Remote::mutation_queue`]: what a tool set
//!   runs on.
//! - [`protocol`]: the frames on the channel, for another implementation.
//!
//! Requests are multiplexed: parallel tool calls stay parallel, and a long
//! command's output streams while other calls proceed. A dropped channel
//! turns every call in flight into an error; a keep-alive bounds the time
//! to notice a dead link.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use agent_remote::{Remote, RemoteOptions, RemoteTarget};
//!
//! let target = RemoteTarget::parse("docker://web/srv/app")?;
//! // A `coding-agent` binary built for the remote's platform: it is uploaded
//! // and runs there as `coding-agent helper`. Not `current_exe()`: that is
//! // your own program, which would run again on the remote.
//! let options = RemoteOptions::default().helper_binary("/usr/local/bin/coding-agent");
//! let remote = Remote::connect(target, options).await?;
//! let files = remote.operations().files;
//! let readme = files.read_file(&remote.cwd().join("README.md"))?;
//! # let _ = readme;
//! # Ok(()) }
//! ```

// The remote guide's Rust blocks are compiled as doctests of this crate.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/remote.md")]
struct RemoteGuideDoctests;

mod connection;
pub mod helper;
mod ops;
pub mod protocol;
mod remote;
mod target;

pub use agent_sandbox::{SandboxLayer, SandboxMode, SandboxSpec};
pub use ops::{RemoteFileOps, RemoteProcessOps};
pub use remote::{Remote, RemoteOptions};
pub use target::{ContainerEngine, RemoteTarget, control_dir};

/// Why a remote could not be reached or used. Each case says what to do.
/// Its `Debug` is one line, the kind and the message, so that `?` in a
/// `main` returning `Result` prints something a person can read.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The URI does not parse.
    #[error("invalid remote {uri:?}: {reason}")]
    InvalidUri {
        /// The URI.
        uri: String,
        /// What is wrong.
        reason: String,
    },
    /// The transport program (ssh, docker, kubectl, sh) cannot be started.
    #[error("cannot start {program}: {source} (is it installed and on PATH?)")]
    Spawn {
        /// The program.
        program: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// SSH refused the host key.
    #[error(
        "{target}: the host key was refused ({detail}); check the host's key and your known_hosts (connect once with `ssh` to accept it)"
    )]
    HostKey {
        /// The target.
        target: String,
        /// What ssh said.
        detail: String,
    },
    /// SSH authentication failed.
    #[error(
        "{target}: authentication failed ({detail}); load a key into ssh-agent or name one with IdentityFile in ~/.ssh/config (passwords cannot be typed here)"
    )]
    Auth {
        /// The target.
        target: String,
        /// What ssh said.
        detail: String,
    },
    /// The host could not be reached.
    #[error("{target}: cannot connect ({detail})")]
    Unreachable {
        /// The target.
        target: String,
        /// What the transport said.
        detail: String,
    },
    /// The working directory does not exist on the remote.
    #[error("{target}: the directory {path:?} does not exist there")]
    NoDirectory {
        /// The target.
        target: String,
        /// The directory.
        path: String,
    },
    /// No helper can run on the remote.
    #[error(
        "{target}: no coding-agent helper there ({os} {arch}){}; install coding-agent {version} on the remote's PATH (e.g. `cargo install coding-agent-cli`)",
        if *uploadable { ", and this binary cannot run there" } else { "" },
        version = env!("CARGO_PKG_VERSION")
    )]
    HelperMissing {
        /// The target.
        target: String,
        /// The remote's `uname -s`.
        os: String,
        /// The remote's `uname -m`.
        arch: String,
        /// Whether an upload was possible in principle.
        uploadable: bool,
    },
    /// The helper upload failed.
    #[error("cannot upload the helper: {detail}")]
    Upload {
        /// What failed.
        detail: String,
    },
    /// Connecting took too long.
    #[error("{target}: no helper answered within {seconds} s")]
    Timeout {
        /// The target.
        target: String,
        /// The limit.
        seconds: u64,
    },
    /// The transport ended before the helper was ready.
    #[error("{target}: the channel closed before the helper started{}{}", status.map(|s| format!(" (exit status {s})")).unwrap_or_default(), if detail.is_empty() { String::new() } else { format!(": {detail}") })]
    Closed {
        /// The target.
        target: String,
        /// The transport's exit status.
        status: Option<i32>,
        /// Its last words on stderr.
        detail: String,
    },
    /// The helper will not serve as asked: above all, the sandbox this side
    /// decided cannot be enforced there. Nothing runs unconfined instead.
    #[error("{target}: the helper refused to start: {reason}")]
    Refused {
        /// The target.
        target: String,
        /// Why, as the helper (or this side's check of its greeting) said.
        reason: String,
    },
    /// The other side does not speak the protocol.
    #[error("the remote helper misbehaved: {detail}")]
    Protocol {
        /// What went wrong.
        detail: String,
    },
}

impl std::fmt::Debug for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            RemoteError::InvalidUri { .. } => "InvalidUri",
            RemoteError::Spawn { .. } => "Spawn",
            RemoteError::HostKey { .. } => "HostKey",
            RemoteError::Auth { .. } => "Auth",
            RemoteError::Unreachable { .. } => "Unreachable",
            RemoteError::NoDirectory { .. } => "NoDirectory",
            RemoteError::HelperMissing { .. } => "HelperMissing",
            RemoteError::Upload { .. } => "Upload",
            RemoteError::Timeout { .. } => "Timeout",
            RemoteError::Closed { .. } => "Closed",
            RemoteError::Refused { .. } => "Refused",
            RemoteError::Protocol { .. } => "Protocol",
        };
        let message = self.to_string();
        write!(f, "{kind}: {}", message.trim_end().replace('\n', " "))
    }
}

#[cfg(test)]
mod debug_tests {
    use super::RemoteError;

    #[test]
    fn debug_is_one_line_with_the_kind_and_the_message() {
        let e = RemoteError::Unreachable {
            target: "ssh://box".into(),
            detail: "ssh: connect to host box port 22: Connection refused\n".into(),
        };
        let debug = format!("{e:?}");
        assert!(
            debug.starts_with("Unreachable: ssh://box: cannot connect"),
            "{debug}"
        );
        assert_eq!(debug.lines().count(), 1, "{debug}");
    }
}
