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
use std::sync::{Arc, Mutex};

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

/// How to end a VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// At once, even mid-computation (SIGKILL for a worker).
    Kill,
    /// It is gone or going: wait for it, to learn how it ended.
    Wait,
    /// It has ended its script: let it exit in the background.
    Detach,
}

type Stopper = Box<dyn FnOnce(Stop) -> BoxFuture<'static, Option<String>> + Send>;

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
    /// message (false once it is gone), and `stop`, which ends the VM as
    /// [`Stop`] says and reports why it ended abnormally, if it did.
    pub fn new(
        events: mpsc::UnboundedReceiver<VmEvent>,
        to_vm: impl Fn(HostMessage) -> bool + Send + Sync + 'static,
        stop: impl FnOnce(Stop) -> BoxFuture<'static, Option<String>> + Send + 'static,
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

    /// Ends the VM as `how` says. Returns a description of an abnormal end
    /// (a signal, a crash) when it waited to learn one.
    pub async fn stop(mut self, how: Stop) -> Option<String> {
        // Closing the VM's inbox lets a VM waiting for a settlement end.
        self.to_vm = None;
        match self.stopper.take() {
            Some(stop) => stop(how).await,
            None => None,
        }
    }
}

/// Runs each script on a fresh VM on a thread of this process, with the
/// next VM made in the background while a script runs (so a script finds
/// its VM ready, built-ins already frozen).
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
#[derive(Debug, Clone, Default)]
pub struct InProcessSandbox {
    warm: Arc<Mutex<Option<VmThread>>>,
}

/// A thread that makes a VM and waits for one script to run on it.
#[derive(Debug)]
struct VmThread {
    jobs: std::sync::mpsc::Sender<Job>,
    interrupt: VmInterrupt,
}

/// One script for a [`VmThread`].
struct Job {
    request: ScriptRequest,
    events: mpsc::UnboundedSender<VmEvent>,
    inbox: std::sync::mpsc::Receiver<HostMessage>,
    done: tokio::sync::oneshot::Sender<()>,
}

/// Stack of the VM thread: well above QuickJS's own stack limit, so deep
/// recursion ends in a catchable `RangeError`, not a crash.
const VM_THREAD_STACK: usize = 16 * 1024 * 1024;

impl VmThread {
    fn spawn() -> Result<VmThread, SandboxError> {
        let interrupt = VmInterrupt::new();
        let vm_interrupt = interrupt.clone();
        let (jobs, waiting) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("codemode-vm".into())
            .stack_size(VM_THREAD_STACK)
            .spawn(move || {
                let vm = Vm::with_interrupt(vm_interrupt);
                // The sandbox dropped without a script for it: nothing to do.
                let Ok(job) = waiting.recv() else {
                    return;
                };
                match vm {
                    Ok(vm) => {
                        let (events, inbox) = (job.events, job.inbox);
                        vm.run(
                            job.request,
                            move |event| events.send(event).is_ok(),
                            move || inbox.recv().ok(),
                        );
                    }
                    Err(e) => {
                        let _ = job.events.send(VmEvent::End(ScriptEnd::Threw {
                            name: "InternalError".into(),
                            message: e.to_string(),
                            stack: format!("InternalError: {e}"),
                        }));
                    }
                }
                let _ = job.done.send(());
            })
            .map_err(|e| SandboxError::Failed(format!("could not start the VM thread: {e}")))?;
        Ok(VmThread { jobs, interrupt })
    }
}

impl ScriptSandbox for InProcessSandbox {
    fn start(&self, request: ScriptRequest) -> BoxFuture<'_, Result<ScriptRun, SandboxError>> {
        Box::pin(async move {
            let warm = self.warm.lock().ok().and_then(|mut w| w.take());
            let thread = match warm {
                Some(thread) => thread,
                None => VmThread::spawn()?,
            };
            // The next script's VM is made while this one runs.
            if let (Ok(next), Ok(mut slot)) = (VmThread::spawn(), self.warm.lock()) {
                *slot = Some(next);
            }
            let (events_tx, events_rx) = mpsc::unbounded_channel();
            let (inbox_tx, inbox_rx) = std::sync::mpsc::channel::<HostMessage>();
            let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
            let VmThread { jobs, interrupt } = thread;
            jobs.send(Job {
                request,
                events: events_tx,
                inbox: inbox_rx,
                done: done_tx,
            })
            .map_err(|_| SandboxError::Failed("the VM thread is gone".into()))?;
            let inbox = Mutex::new(inbox_tx);
            Ok(ScriptRun::new(
                events_rx,
                move |message| inbox.lock().is_ok_and(|tx| tx.send(message).is_ok()),
                move |how| {
                    Box::pin(async move {
                        match how {
                            Stop::Kill => interrupt.interrupt(),
                            Stop::Wait => {
                                let _ = done_rx.await;
                            }
                            Stop::Detach => {}
                        }
                        // A VM stuck in a built-in that never polls the
                        // interrupt keeps its thread; the run does not wait.
                        None
                    }) as BoxFuture<'static, Option<String>>
                },
            ))
        })
    }
}
