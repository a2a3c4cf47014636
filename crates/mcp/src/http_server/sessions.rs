//! rmcp's session manager with a cap on open sessions and idle expiry.

use std::cell::Cell;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use tokio_util::sync::CancellationToken;

use super::lock;

tokio::task_local! {
    /// Set when the session cap refused an `initialize` of this request.
    pub(super) static SESSION_REFUSED: Cell<bool>;
}

/// rmcp's in-memory sessions with a cap and idle expiry: a session with no
/// open stream (no request in progress, no `GET` stream) for the idle
/// timeout is closed. rmcp's own keep-alive is off: it counts a long tool
/// call without output as idle.
pub(super) struct Sessions {
    pub(super) local: LocalSessionManager,
    pub(super) max: usize,
    pub(super) idle: Duration,
    pub(super) creating: tokio::sync::Mutex<()>,
    pub(super) activity: Arc<Mutex<HashMap<SessionId, Activity>>>,
}

pub(super) struct Activity {
    pub(super) last: Instant,
    pub(super) open_streams: usize,
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum SessionsError {
    #[error("too many open MCP sessions (the limit is {0})")]
    Full(usize),
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

impl Sessions {
    pub(super) fn new(max: usize, idle: Duration) -> Self {
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = None;
        Sessions {
            local,
            max,
            idle,
            creating: tokio::sync::Mutex::new(()),
            activity: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub(super) fn touch(&self, id: &SessionId) {
        if let Some(a) = lock(&self.activity).get_mut(id) {
            a.last = Instant::now();
        }
    }

    /// `stream`, counted as open until dropped.
    pub(super) fn track(
        &self,
        id: &SessionId,
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> TrackedStream {
        if let Some(a) = lock(&self.activity).get_mut(id) {
            a.last = Instant::now();
            a.open_streams += 1;
        }
        TrackedStream {
            inner: Box::pin(stream),
            _open: OpenStream {
                activity: self.activity.clone(),
                id: id.clone(),
            },
        }
    }

    pub(super) fn expired(&self) -> Vec<SessionId> {
        lock(&self.activity)
            .iter()
            .filter(|(_, a)| a.open_streams == 0 && a.last.elapsed() >= self.idle)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Closes idle sessions until `shutdown`.
    pub(super) async fn expire_idle(self: Arc<Self>, shutdown: CancellationToken) {
        let period = (self.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(15));
        loop {
            tokio::select! {
                _ = tokio::time::sleep(period) => {}
                _ = shutdown.cancelled() => return,
            }
            for id in self.expired() {
                tracing::info!(session = %id, "closing an idle MCP session");
                if let Err(e) = self.close_session(&id).await {
                    tracing::debug!(session = %id, error = %e, "closing an idle session");
                }
            }
        }
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one_at_a_time = self.creating.lock().await;
        let open = self.local.sessions.read().await.len();
        if open >= self.max {
            let _ = SESSION_REFUSED.try_with(|r| r.set(true));
            tracing::warn!(open, max = self.max, "refusing a new MCP session");
            return Err(SessionsError::Full(self.max));
        }
        let (id, transport) = self.local.create_session().await?;
        lock(&self.activity).insert(
            id.clone(),
            Activity {
                last: Instant::now(),
                open_streams: 0,
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        Ok(self.local.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.touch(id);
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        lock(&self.activity).remove(id);
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.local.create_stream(id, message).await?;
        Ok(self.track(id, stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.local.create_standalone_stream(id).await?;
        Ok(self.track(id, stream))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.local.resume(id, last_event_id).await?;
        Ok(self.track(id, stream))
    }
}

/// A session's stream; open until dropped.
pub(super) struct TrackedStream {
    pub(super) inner: Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>,
    pub(super) _open: OpenStream,
}

impl Stream for TrackedStream {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

pub(super) struct OpenStream {
    pub(super) activity: Arc<Mutex<HashMap<SessionId, Activity>>>,
    pub(super) id: SessionId,
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        if let Some(a) = lock(&self.activity).get_mut(&self.id) {
            a.open_streams = a.open_streams.saturating_sub(1);
            a.last = Instant::now();
        }
    }
}
