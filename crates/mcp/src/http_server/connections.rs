//! The cap on open connections: a full table closes the connection idle
//! the longest to make room, never one just opened; a request in progress
//! keeps its connection busy until its body has been sent.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::body::{Body, Frame, SizeHint};
use tokio_util::sync::CancellationToken;

use super::lock;

/// The open connections, oldest first, and whether each has a request in
/// progress.
pub(super) struct Connections {
    pub(super) max: usize,
    /// How long a connection must have been without a request in progress
    /// before it may be closed for room: a client that just connected and
    /// is sending its request is not cut off, one that stalls is.
    pub(super) evictable_after: Duration,
    pub(super) table: Mutex<ConnectionTable>,
    pub(super) changed: tokio::sync::Notify,
}

#[derive(Default)]
pub(super) struct ConnectionTable {
    pub(super) next: u64,
    pub(super) open: BTreeMap<u64, OpenConnection>,
}

pub(super) struct OpenConnection {
    pub(super) close: CancellationToken,
    pub(super) usage: Arc<ConnectionUse>,
}

/// Requests in progress on one connection, and since when it has had none.
pub(super) struct ConnectionUse {
    pub(super) requests: AtomicUsize,
    pub(super) idle_since: Mutex<Instant>,
}

impl ConnectionUse {
    pub(super) fn new() -> Self {
        ConnectionUse {
            requests: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
        }
    }

    /// No request in progress, for at least `at_least`.
    pub(super) fn idle_for(&self, at_least: Duration) -> bool {
        self.requests.load(Ordering::Acquire) == 0 && lock(&self.idle_since).elapsed() >= at_least
    }
}

/// One connection's place; dropping it frees the place.
pub(super) struct Place {
    id: u64,
    pub(super) close: CancellationToken,
    pub(super) usage: Arc<ConnectionUse>,
    connections: Arc<Connections>,
}

impl Drop for Place {
    fn drop(&mut self) {
        lock(&self.connections.table).open.remove(&self.id);
        self.connections.changed.notify_one();
    }
}

impl Connections {
    pub(super) fn new(max: usize, evictable_after: Duration) -> Self {
        Connections {
            max,
            evictable_after,
            table: Mutex::new(ConnectionTable::default()),
            changed: tokio::sync::Notify::new(),
        }
    }

    /// A place now: a free one, or the oldest idle connection's (closed).
    pub(super) fn try_admit(self: &Arc<Self>) -> Option<Place> {
        let mut table = lock(&self.table);
        if table.open.len() >= self.max {
            let idle = table
                .open
                .iter()
                .find(|(_, c)| c.usage.idle_for(self.evictable_after))
                .map(|(id, _)| *id)?;
            if let Some(evicted) = table.open.remove(&idle) {
                evicted.close.cancel();
            }
        }
        let id = table.next;
        table.next += 1;
        let close = CancellationToken::new();
        let usage = Arc::new(ConnectionUse::new());
        table.open.insert(
            id,
            OpenConnection {
                close: close.clone(),
                usage: usage.clone(),
            },
        );
        Some(Place {
            id,
            close,
            usage,
            connections: self.clone(),
        })
    }

    /// Waits for a place; `None` on shutdown.
    pub(super) async fn admit(self: &Arc<Self>, shutdown: &CancellationToken) -> Option<Place> {
        // An idle connection becomes closable with time, not with an event.
        let recheck = (self.evictable_after / 2).max(Duration::from_millis(20));
        loop {
            if let Some(place) = self.try_admit() {
                return Some(place);
            }
            tracing::debug!(max = self.max, "every HTTP connection is in use; waiting");
            tokio::select! {
                _ = self.changed.notified() => {}
                _ = tokio::time::sleep(recheck) => {}
                _ = shutdown.cancelled() => return None,
            }
        }
    }
}

/// A request in progress on a connection (so it is not closed for room).
pub(super) struct Busy {
    usage: Arc<ConnectionUse>,
    connections: Arc<Connections>,
}

impl Busy {
    pub(super) fn start(usage: Arc<ConnectionUse>, connections: Arc<Connections>) -> Self {
        usage.requests.fetch_add(1, Ordering::AcqRel);
        Busy { usage, connections }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if self.usage.requests.fetch_sub(1, Ordering::AcqRel) == 1 {
            *lock(&self.usage.idle_since) = Instant::now();
            self.connections.changed.notify_one();
        }
    }
}

/// A response body that keeps its connection busy until it is dropped.
pub(super) struct GuardedBody {
    pub(super) inner: BoxBody<Bytes, Infallible>,
    pub(super) _busy: Busy,
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_closes_the_oldest_idle_connection() {
        let connections = Arc::new(Connections::new(2, Duration::ZERO));
        let first = connections.try_admit().unwrap();
        let second = connections.try_admit().unwrap();
        let _busy = Busy::start(first.usage.clone(), connections.clone());
        // The first is busy: the second, idle, makes room.
        let third = connections.try_admit().unwrap();
        assert!(!first.close.is_cancelled());
        assert!(second.close.is_cancelled());
        let _busy_too = Busy::start(third.usage.clone(), connections.clone());
        assert!(connections.try_admit().is_none(), "all busy: wait");
        drop(second);
        assert!(connections.try_admit().is_none());
        drop(third);
        assert!(connections.try_admit().is_some());
    }

    #[test]
    fn a_connection_just_opened_is_not_closed_for_room() {
        let connections = Arc::new(Connections::new(1, Duration::from_secs(3600)));
        let first = connections.try_admit().unwrap();
        assert!(connections.try_admit().is_none(), "wait instead");
        assert!(!first.close.is_cancelled());
    }
}
