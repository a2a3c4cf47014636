//! Tool-list changes of running servers: counted, listed again, and
//! delivered to a session.

use super::*;

/// A server's new tool list, after it sent `notifications/tools/list_changed`.
pub struct McpToolUpdate {
    /// The server's name.
    pub server: String,
    /// The names of its tools before the change.
    pub removed: Vec<String>,
    /// Its tools now.
    pub tools: Vec<ToolDefinition>,
}

impl std::fmt::Debug for McpToolUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolUpdate")
            .field("server", &self.server)
            .field("removed", &self.removed)
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.name().to_string())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Where tool-list changes go: a function set with [`McpToolUpdates::on_update`]
/// (changes that came before it are delivered to it at once).
#[derive(Clone, Default)]
pub struct McpToolUpdates {
    inner: Arc<std::sync::Mutex<UpdatesInner>>,
}

type UpdateFn = Arc<dyn Fn(McpToolUpdate) + Send + Sync>;

#[derive(Default)]
struct UpdatesInner {
    handler: Option<UpdateFn>,
    queued: Vec<McpToolUpdate>,
}

impl std::fmt::Debug for McpToolUpdates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolUpdates").finish_non_exhaustive()
    }
}

impl McpToolUpdates {
    /// Calls `handler` for every change (it runs before the call during
    /// which the server announced the change returns).
    pub fn on_update(&self, handler: impl Fn(McpToolUpdate) + Send + Sync + 'static) {
        let handler: UpdateFn = Arc::new(handler);
        let queued = {
            let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            inner.handler = Some(handler.clone());
            std::mem::take(&mut inner.queued)
        };
        for update in queued {
            handler(update);
        }
    }

    /// Keeps `session`'s tools equal to the servers' lists: removed tools
    /// go, new ones follow the session's selection and `allowedTools`.
    pub fn keep_session_updated(&self, session: &coding_agent::AgentSession) {
        let session = session.clone();
        self.on_update(move |update| {
            tracing::info!(server = %update.server, tools = update.tools.len(), "MCP tool list changed");
            session.replace_tools(&update.removed, update.tools);
        });
    }

    pub(super) fn deliver(&self, update: McpToolUpdate) {
        let handler = {
            let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            match &inner.handler {
                Some(h) => h.clone(),
                None => {
                    inner.queued.push(update);
                    return;
                }
            }
        };
        handler(update);
    }
}

/// Counts announced and applied tool-list changes of one server, so a call
/// during which the server announced a change returns only once the new
/// list is applied (the next model request then offers the new tools).
#[derive(Default)]
pub(super) struct Refresh {
    pub(super) requested: std::sync::atomic::AtomicU64,
    pub(super) applied: tokio::sync::watch::Sender<u64>,
}

impl Refresh {
    /// Waits (bounded) until every change announced so far is applied.
    pub(super) async fn settle(&self, limit: Duration) {
        // The notification's handler runs in its own task, started before
        // the call's response is delivered: let it run first.
        tokio::task::yield_now().await;
        let wanted = self.requested.load(std::sync::atomic::Ordering::SeqCst);
        let mut applied = self.applied.subscribe();
        let _ = tokio::time::timeout(limit, applied.wait_for(|n| *n >= wanted)).await;
    }
}

/// Lists a server's tools again on each `tools/list_changed`, while its
/// tools exist (the task holds the connection weakly).
pub(super) fn watch_list_changes(
    connection: std::sync::Weak<Connection>,
    mut notices: mpsc::UnboundedReceiver<()>,
    updates: McpToolUpdates,
) {
    tokio::spawn(async move {
        while notices.recv().await.is_some() {
            // Several notices in a row need one listing.
            while notices.try_recv().is_ok() {}
            let Some(connection) = connection.upgrade() else {
                break;
            };
            let wanted = connection
                .handler
                .refresh
                .requested
                .load(std::sync::atomic::Ordering::SeqCst);
            match connection.relist().await {
                Ok(update) => updates.deliver(update),
                Err(e) => {
                    tracing::warn!(server = %connection.config.name, error = %e, "cannot refresh MCP tools");
                }
            }
            // Applied or failed: a waiting call may go on.
            connection.handler.refresh.applied.send_replace(wanted);
        }
    });
}
