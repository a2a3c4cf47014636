//! Where a script's VM runs: the [`ScriptSandbox`] seam, and the
//! in-process executor.
//!
//! A sandbox starts a VM for one request and hands back a [`ScriptRun`]:
//! the VM's events, a way to settle its tool calls, and a way to stop it.
//! [`InProcessSandbox`] runs the VM on a thread of this process (for library
//! users and tests); [`WorkerSandbox`](crate::WorkerSandbox) runs it in a
//! confined child process.

use std::future::Future;
use std::pin::Pin;

use tokio::sync::mpsc;

use crate::protocol::{HostMessage, ScriptEnd, ScriptRequest, VmEvent};
use crate::vm::{Vm, VmInterrupt};

/// A boxed future, as the sandbox trait returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a script could not run, or its VM failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// No worker became free in time.
    #[error("{0}")]
    Busy(String),
    /// The VM or its process could not be started or failed.
    #[error("{0}")]
    Failed(String),
}

/// Something that can run a script's VM.
pub trait ScriptSandbox: Send + Sync + std::fmt::Debug {
    /// Starts a VM for `request`. Waiting for a free executor counts toward
    /// the caller's deadline, which the caller enforces by dropping this
    /// future.
    fn start(&self, request: ScriptRequest) -> BoxFuture<'_, Result<ScriptRun, SandboxError>>;
}

type Stopper = Box<dyn FnOnce(bool) -> BoxFuture<'static, Option<String>> + Send>;

/// One running script: its events, its settlements, and its stop.
pub struct ScriptRun {
    pub(crate) events: mpsc::UnboundedReceiver<VmEvent>,
    to_vm: Option<Box<dyn Fn(HostMessage) -> bool + Send + Sync>>,
    stopper: Option<Stopper>,
}

impl std::fmt::Debug for ScriptRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptRun").finish_non_exhaustive()
    }
}

impl ScriptRun {
    /// A run from its parts: `events` from the VM, `to_vm` to send it a
    /// message (false once it is gone), and `stop`, which ends the VM (when
    /// its argument is true, at once, even mid-computation) and reports why
    /// it ended abnormally, if it did.
    pub fn new(
        events: mpsc::UnboundedReceiver<VmEvent>,
        to_vm: impl Fn(HostMessage) -> bool + Send + Sync + 'static,
        stop: impl FnOnce(bool) -> BoxFuture<'static, Option<String>> + Send + 'static,
    ) -> ScriptRun {
        ScriptRun {
            events,
            to_vm: Some(Box::new(to_vm)),
            stopper: Some(Box::new(stop)),
        }
    }

    /// The VM's next event; `None` when it is gone without a word more.
    pub async fn next_event(&mut self) -> Option<VmEvent> {
        self.events.recv().await
    }

    /// Settles call `id` in the VM.
    pub fn settle(&self, id: u64, ok: bool, payload: String) -> bool {
        self.to_vm
            .as_ref()
            .is_some_and(|send| send(HostMessage::Settle { id, ok, payload }))
    }

    /// Ends the VM: at once when `kill`, else after it has ended on its
    /// own. Returns a description of an abnormal end (a signal, a crash).
    pub async fn stop(mut self, kill: bool) -> Option<String> {
        // Closing the VM's inbox lets a VM waiting for a settlement end.
        self.to_vm = None;
        match self.stopper.take() {
            Some(stop) => stop(kill).await,
            None => None,
        }
    }
}

/// Runs each script on a fresh VM on a thread of this process.
///
/// A runaway loop is stopped by QuickJS's interrupt check; a built-in that
/// never polls it (`new Array(1e9).join()`) keeps its thread busy until it
/// returns or fails on the heap limit, and a crash inside QuickJS takes the
/// process with it. Use [`WorkerSandbox`](crate::WorkerSandbox) where
/// scripts come from a model.
///
/// ```
/// use agent_codemode::{InProcessSandbox, ScriptSandbox};
/// let sandbox: &dyn ScriptSandbox = &InProcessSandbox::default();
/// # let _ = sandbox;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct InProcessSandbox;

/// Stack of the VM thread: well above QuickJS's own stack limit, so deep
/// recursion ends in a catchable `RangeError`, not a crash.
const VM_THREAD_STACK: usize = 16 * 1024 * 1024;

impl ScriptSandbox for InProcessSandbox {
    fn start(&self, request: ScriptRequest) -> BoxFuture<'_, Result<ScriptRun, SandboxError>> {
        Box::pin(async move {
            let interrupt = VmInterrupt::new();
            let vm_interrupt = interrupt.clone();
            let (events_tx, events_rx) = mpsc::unbounded_channel();
            let (inbox_tx, inbox_rx) = std::sync::mpsc::channel::<HostMessage>();
            let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
            std::thread::Builder::new()
                .name("codemode-vm".into())
                .stack_size(VM_THREAD_STACK)
                .spawn(move || {
                    let vm = match Vm::with_interrupt(vm_interrupt) {
                        Ok(vm) => vm,
                        Err(e) => {
                            let _ = events_tx.send(VmEvent::End(ScriptEnd::Threw {
                                name: "InternalError".into(),
                                message: e.to_string(),
                                stack: format!("InternalError: {e}"),
                            }));
                            return;
                        }
                    };
                    vm.run(
                        request,
                        move |event| events_tx.send(event).is_ok(),
                        move || inbox_rx.recv().ok(),
                    );
                    let _ = done_tx.send(());
                })
                .map_err(|e| SandboxError::Failed(format!("could not start the VM thread: {e}")))?;
            let inbox = std::sync::Mutex::new(inbox_tx);
            Ok(ScriptRun::new(
                events_rx,
                move |message| inbox.lock().is_ok_and(|tx| tx.send(message).is_ok()),
                move |kill| {
                    Box::pin(async move {
                        if kill {
                            interrupt.interrupt();
                        }
                        // A VM stuck in a built-in that never polls the
                        // interrupt keeps its thread; the run does not wait.
                        if !kill {
                            let _ = done_rx.await;
                        }
                        None
                    }) as BoxFuture<'static, Option<String>>
                },
            ))
        })
    }
}
