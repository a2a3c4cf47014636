//! Tool-list changes of running servers, delivered to a session.

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
