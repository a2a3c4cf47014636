//! What goes to the client: responses and events, with a bounded backlog
//! (streaming deltas dropped past it, commands and runs paused past
//! [`OUTPUT_LIMIT`]).

use super::*;

/// Streaming lines beyond this many waiting for the client are dropped.
pub(super) const DELTA_BACKLOG: usize = 1024;
/// Streaming lines are dropped once this many bytes wait for the client.
pub(super) const DELTA_BACKLOG_BYTES: usize = 1 << 20;
/// Past this many bytes waiting for the client, commands are not read and a
/// run is paused until the client reads (one line may exceed it).
pub const OUTPUT_LIMIT: usize = 8 << 20;
/// How much output waits for the client, and who waits for room.
#[derive(Default)]
pub(super) struct Backlog {
    /// Lines queued, not yet written.
    pub(super) lines: AtomicUsize,
    /// Their bytes.
    pub(super) bytes: AtomicUsize,
    /// The writer is gone (the client closed its end): nobody waits.
    pub(super) closed: std::sync::atomic::AtomicBool,
    /// A run being stopped is not paused: it winds down in a few events.
    pub(super) stopping: std::sync::atomic::AtomicBool,
    /// Woken as lines are written: the command loop.
    pub(super) room: tokio::sync::Notify,
    /// Woken as lines are written: the paused run.
    pub(super) run: futures::task::AtomicWaker,
}

impl Backlog {
    pub(super) fn full(&self) -> bool {
        self.bytes.load(Ordering::Acquire) > OUTPUT_LIMIT && !self.closed.load(Ordering::Acquire)
    }

    /// A line has left for the client.
    pub(super) fn written(&self, len: usize) {
        self.lines.fetch_sub(1, Ordering::AcqRel);
        self.bytes.fetch_sub(len, Ordering::AcqRel);
        if !self.full() {
            self.room.notify_waiters();
            self.run.wake();
        }
    }

    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.room.notify_waiters();
        self.run.wake();
    }

    /// Resolves once the backlog is under [`OUTPUT_LIMIT`].
    pub(super) async fn wait_for_room(&self) {
        loop {
            let notified = self.room.notified();
            if !self.full() {
                return;
            }
            notified.await;
        }
    }
}

/// The output side: lines for the client, in order. The sender never
/// blocks; the backlog is bounded by the command loop, which waits for room
/// before it reads the next command, and by pausing a run (`paced`).
#[derive(Clone)]
pub struct RpcOutput {
    pub(super) tx: mpsc::UnboundedSender<String>,
    pub(super) backlog: Arc<Backlog>,
}

impl RpcOutput {
    pub(super) fn send(&self, value: &impl serde::Serialize) {
        if let Ok(line) = serde_json::to_string(value) {
            self.backlog.lines.fetch_add(1, Ordering::AcqRel);
            self.backlog
                .bytes
                .fetch_add(line.len() + 1, Ordering::AcqRel);
            if self.tx.send(line).is_err() {
                self.backlog.close();
            }
        }
    }

    pub(super) fn send_event(&self, event: &AgentEvent) {
        let delta = matches!(
            event,
            AgentEvent::MessageUpdate { .. } | AgentEvent::ToolExecutionUpdate { .. }
        );
        if delta
            && (self.backlog.lines.load(Ordering::Acquire) > DELTA_BACKLOG
                || self.backlog.bytes.load(Ordering::Acquire) > DELTA_BACKLOG_BYTES)
        {
            return;
        }
        if let Ok(value) = serde_json::to_value(event) {
            self.send(&value);
        }
    }
}

/// Runs `run` only while the client keeps up: whenever more than
/// [`OUTPUT_LIMIT`] bytes wait for it, `run` is not polled (it emits no
/// event) until the writer has made room. The first poll always happens,
/// so the run has started when this returns `Pending` the first time.
pub(super) fn paced<F: std::future::Future>(
    backlog: Arc<Backlog>,
    run: F,
) -> impl std::future::Future<Output = F::Output> {
    let mut run = Box::pin(run);
    let mut started = false;
    futures::future::poll_fn(move |cx| {
        let paused = || backlog.full() && !backlog.stopping.load(Ordering::Acquire);
        if started && paused() {
            backlog.run.register(cx.waker());
            if paused() {
                return std::task::Poll::Pending;
            }
        }
        started = true;
        run.as_mut().poll(cx)
    })
}
