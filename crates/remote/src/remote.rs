//! [`Remote`]: a connection to a helper that reconnects when it drops, and
//! the [`Operations`] built on it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use agent_sandbox::SandboxSpec;
use agent_tool::{FileMutationQueue, Operations};

use crate::RemoteError;
use crate::connection::{Connection, establish};
use crate::ops::{RemoteFileOps, RemoteProcessOps};
use crate::protocol::{Hello, Op, Reply};
use crate::target::RemoteTarget;

/// How to connect.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RemoteOptions {
    /// The helper to upload when the remote has none: a `coding-agent`
    /// binary for the remote's OS and architecture (the CLI passes its own
    /// executable). `None`: never upload.
    pub helper_binary: Option<PathBuf>,
    /// Upload the helper when the remote has no compatible one.
    pub upload: bool,
    /// The sandbox the helper applies on the remote side, as this side's
    /// settings and flags decided it: resolved there (relative paths below
    /// the remote working directory, `~` the remote user's home), tightened
    /// by the remote's own settings, never widened. When the spec
    /// [is chosen](SandboxSpec::is_chosen) and names a mode, a remote that
    /// cannot enforce it refuses ([`RemoteError::Refused`]); a default mode
    /// ([`SandboxSpec::default_mode`], the MCP server's
    /// confine-where-possible) gives way to none there, and
    /// [`Hello::sandbox`](crate::protocol::Hello::sandbox) says so. Default: off, unless the remote's settings
    /// turn it on.
    pub sandbox: SandboxSpec,
    /// Share one SSH connection between channels (OpenSSH `ControlMaster`).
    pub multiplex: bool,
    /// Extra OpenSSH options for `ssh://` targets, each passed as `-o OPTION`
    /// (`IdentityFile=...`, `UserKnownHostsFile=...`).
    pub ssh_options: Vec<String>,
    /// How often to check the link; a link silent for twice this long is
    /// declared dead (zero: never).
    pub keepalive: Duration,
    /// How long connecting (transport, helper start, upload) may take.
    pub connect_timeout: Duration,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            helper_binary: None,
            upload: true,
            sandbox: SandboxSpec::default(),
            multiplex: true,
            ssh_options: Vec::new(),
            keepalive: Duration::from_secs(15),
            connect_timeout: Duration::from_secs(60),
        }
    }
}

impl RemoteOptions {
    /// Uploads `binary` when the remote has no helper.
    pub fn helper_binary(mut self, binary: impl Into<PathBuf>) -> Self {
        self.helper_binary = Some(binary.into());
        self
    }

    /// The sandbox the helper applies (see [`RemoteOptions::sandbox`]).
    pub fn sandbox(mut self, spec: SandboxSpec) -> Self {
        self.sandbox = spec;
        self
    }

    /// The keep-alive interval.
    pub fn keepalive(mut self, every: Duration) -> Self {
        self.keepalive = every;
        self
    }

    /// Extra OpenSSH options (`-o OPTION` each) for `ssh://` targets.
    pub fn ssh_options(mut self, options: Vec<String>) -> Self {
        self.ssh_options = options;
        self
    }

    /// Whether SSH connections are multiplexed.
    pub fn multiplex(mut self, on: bool) -> Self {
        self.multiplex = on;
        self
    }
}

/// A connected remote. Cheap to clone; every clone shares the one channel.
///
/// A dropped channel turns the calls in flight into errors; the next call
/// opens a new channel. The I/O runs on a small runtime of its own, so the
/// blocking file operations may be called from any thread, inside or
/// outside another runtime.
///
/// ```no_run
/// # async fn demo() -> Result<(), agent_remote::RemoteError> {
/// use agent_remote::{Remote, RemoteOptions, RemoteTarget};
/// let target = RemoteTarget::parse("ssh://build-box/srv/app")?;
/// let remote = Remote::connect(target, RemoteOptions::default()).await?;
/// // The seven tools, running on build-box.
/// let tools = tools_builtin::ToolSet::new(remote.cwd())
///     .operations(remote.operations())
///     .queue(remote.mutation_queue())
///     .all();
/// # let _ = tools;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Remote {
    shared: Arc<Shared>,
}

struct Shared {
    target: RemoteTarget,
    options: RemoteOptions,
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    current: Mutex<Option<Arc<Connection>>>,
    opened: AtomicUsize,
    hello: Hello,
    /// The one mutation queue of this remote: every handle's
    /// [`Remote::mutation_queue`] is a clone, so edits through any of them
    /// wait for each other.
    queue: FileMutationQueue,
}

/// The queue of [`Shared::queue`]. Its key function holds the remote
/// weakly: the queue lives inside the shared state, and a strong handle
/// there would keep the connection and its runtime alive for ever.
fn remote_queue(shared: Weak<Shared>) -> FileMutationQueue {
    FileMutationQueue::keyed_by(Arc::new(move |path: &Path| {
        let Some(shared) = shared.upgrade() else {
            return Err(std::io::Error::other("the remote is closed"));
        };
        let remote = Remote { shared };
        match remote.call(Op::RealPath {
            path: path.to_path_buf(),
        })? {
            (Reply::Path { path }, _) => Ok(path),
            (other, _) => Err(crate::ops::unexpected(&other)),
        }
    }))
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Close the channel before its runtime goes; shutting down in the
        // background is allowed from inside another runtime.
        if let Some(c) = self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            c.close("closed");
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("target", &self.shared.target.to_string())
            .field("cwd", &self.shared.hello.cwd)
            .finish()
    }
}

impl Remote {
    /// Connects to `target`: starts the transport, brings the helper up
    /// (uploading it if allowed and needed) and reads its greeting.
    ///
    /// # Errors
    /// A [`RemoteError`] saying what failed: the transport program is
    /// missing, the host key or authentication was refused, the directory
    /// does not exist, no helper can run there, ...
    pub async fn connect(
        target: RemoteTarget,
        options: RemoteOptions,
    ) -> Result<Remote, RemoteError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("agent-remote")
            .enable_all()
            .build()
            .map_err(|e| RemoteError::Protocol {
                detail: format!("cannot start the I/O runtime: {e}"),
            })?;
        let handle = runtime.handle().clone();
        let (t, o) = (target.clone(), options.clone());
        let first = handle.spawn(async move { establish(&t, &o).await }).await;
        let connection = match first {
            Ok(result) => result,
            Err(e) => Err(RemoteError::Protocol {
                detail: format!("the connect task failed: {e}"),
            }),
        };
        let connection = match connection {
            Ok(c) => c,
            Err(e) => {
                runtime.shutdown_background();
                return Err(e);
            }
        };
        tracing::info!(%target, cwd = %connection.hello.cwd.display(), "remote: connected");
        Ok(Remote {
            shared: Arc::new_cyclic(|shared| Shared {
                hello: connection.hello.clone(),
                target,
                options,
                runtime: Some(runtime),
                handle,
                current: Mutex::new(Some(Arc::new(connection))),
                opened: AtomicUsize::new(1),
                queue: remote_queue(shared.clone()),
            }),
        })
    }

    /// Where the tools run.
    pub fn target(&self) -> &RemoteTarget {
        &self.shared.target
    }

    /// The remote working directory (the helper's, from the URI's path).
    pub fn cwd(&self) -> &Path {
        &self.shared.hello.cwd
    }

    /// What the helper said when the first channel opened.
    pub fn hello(&self) -> &Hello {
        &self.shared.hello
    }

    /// The local process carrying the current channel (`ssh`, `docker`,
    /// `sh -c COMMAND`), if a channel is open: for diagnostics, and for
    /// tests that cut the link.
    pub fn transport_pid(&self) -> Option<u32> {
        self.lock_current()
            .as_ref()
            .filter(|c| c.is_alive())
            .and_then(|c| c.pid)
    }

    /// How many channels were opened so far (1 plus reconnects).
    pub fn channels_opened(&self) -> usize {
        self.shared.opened.load(Ordering::Relaxed)
    }

    /// The file and process operations, on the remote machine.
    pub fn operations(&self) -> Operations {
        Operations {
            files: Arc::new(RemoteFileOps::new(self.clone())),
            processes: Arc::new(RemoteProcessOps::new(self.clone())),
        }
    }

    /// The remote's mutation queue, keyed by the remote's canonical paths,
    /// so two spellings of one remote file (a symlink, `..`) share a queue.
    /// Every call, on any clone of this `Remote`, gives the same queue.
    pub fn mutation_queue(&self) -> FileMutationQueue {
        self.shared.queue.clone()
    }

    /// Closes the current channel (calls in flight fail); the next call
    /// opens a new one.
    pub fn disconnect(&self) {
        if let Some(c) = self.lock_current().take() {
            c.close("disconnected by the caller");
        }
    }

    fn lock_current(&self) -> std::sync::MutexGuard<'_, Option<Arc<Connection>>> {
        self.shared
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The live channel, reconnecting when the last one dropped. Blocks
    /// the calling thread while reconnecting.
    pub(crate) fn connection(&self) -> std::io::Result<Arc<Connection>> {
        let mut current = self.lock_current();
        if let Some(c) = current.as_ref().filter(|c| c.is_alive()) {
            return Ok(c.clone());
        }
        *current = None;
        let (target, options) = (self.shared.target.clone(), self.shared.options.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        self.shared.handle.spawn(async move {
            let _ = tx.send(establish(&target, &options).await);
        });
        let fresh = rx
            .recv()
            .map_err(|_| std::io::Error::other("the remote runtime stopped"))?
            .map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    format!("cannot reconnect: {e}"),
                )
            })?;
        self.shared.opened.fetch_add(1, Ordering::Relaxed);
        tracing::info!(target = %self.shared.target, "remote: reconnected");
        let fresh = Arc::new(fresh);
        *current = Some(fresh.clone());
        Ok(fresh)
    }

    /// One request, one answer, on a blocking thread.
    pub(crate) fn call(&self, op: Op) -> std::io::Result<(Reply, Vec<u8>)> {
        self.call_with_body(op, Vec::new())
    }

    /// One request with a body, one answer.
    pub(crate) fn call_with_body(
        &self,
        op: Op,
        body: Vec<u8>,
    ) -> std::io::Result<(Reply, Vec<u8>)> {
        self.connection()?.call(op, body)
    }
}
