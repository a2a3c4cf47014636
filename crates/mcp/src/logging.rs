//! The MCP logging capability: `tracing` events sent to clients as
//! `notifications/message`, at the level each client chose: with
//! `logging/setLevel` for its connection (the 2025 revisions), or in one
//! request's `_meta` (`io.modelcontextprotocol/logLevel`, SEP-2575) for the
//! events raised while that request is served, sent on its own response.
//! A request of the 2026-07-28 revision that names no level gets none.
//!
//! The protocol's newest revision deprecates `logging/setLevel` (SEP-2577),
//! but clients on the 2025 revisions, most of today's, still use it.
#![allow(deprecated)]

use std::cell::Cell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;

/// Targets whose events are never forwarded: the protocol and HTTP stacks log
/// while sending a notification, which would feed back into itself.
const QUIET_TARGETS: [&str; 4] = ["rmcp", "hyper", "h2", "tokio"];

thread_local! {
    /// Set while this thread forwards an event, so an event emitted on the
    /// way is dropped instead of recursing.
    static FORWARDING: Cell<bool> = const { Cell::new(false) };
}

tokio::task_local! {
    /// The request served on this task that named a log level in its
    /// `_meta`: the events the task raises go to that request's response.
    static REQUEST_LOG: RequestLog;
}

/// Where the log messages of one request go: the request's own queue of
/// notifications, which the server sends before the request's result.
#[derive(Clone)]
pub(crate) struct RequestLog {
    level: LoggingLevel,
    out: tokio::sync::mpsc::Sender<crate::server::Outgoing>,
}

impl RequestLog {
    /// Messages at `level` and above into `out`.
    pub(crate) fn new(
        level: LoggingLevel,
        out: tokio::sync::mpsc::Sender<crate::server::Outgoing>,
    ) -> Self {
        RequestLog { level, out }
    }

    /// Runs `work` with its events going to this request. Events a task
    /// spawned by `work` raises are not the request's (the scope does not
    /// cross `tokio::spawn`), so they never reach it.
    pub(crate) async fn scope<F: std::future::Future>(self, work: F) -> F::Output {
        REQUEST_LOG.scope(self, work).await
    }
}

struct Listener {
    connection: u64,
    peer: Peer<RoleServer>,
    level: LoggingLevel,
}

/// Where MCP servers register the clients that asked for log messages, and
/// the [`tracing_subscriber::Layer`] that sends them.
///
/// Give the same sink to [`McpToolServer::with_log_sink`](crate::McpToolServer::with_log_sink)
/// and install [`McpLogSink::layer`] in the program's subscriber:
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt;
///
/// let sink = agent_mcp::McpLogSink::new();
/// let subscriber = tracing_subscriber::registry().with(sink.layer());
/// # drop(subscriber);
/// ```
///
/// Until a client sends `logging/setLevel` nothing is sent to it.
#[derive(Clone, Default)]
pub struct McpLogSink {
    listeners: Arc<Mutex<Vec<Listener>>>,
    next_connection: Arc<AtomicU64>,
}

impl std::fmt::Debug for McpLogSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.lock().len();
        f.debug_struct("McpLogSink")
            .field("listeners", &count)
            .finish()
    }
}

impl McpLogSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// The layer that forwards events to the registered clients.
    pub fn layer(&self) -> McpLogLayer {
        McpLogLayer { sink: self.clone() }
    }

    /// A fresh id for one client connection.
    pub(crate) fn connection_id(&self) -> u64 {
        self.next_connection.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Listener>> {
        self.listeners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends messages at `level` and above to `peer` from now on (replacing
    /// the connection's earlier choice).
    pub(crate) fn set_level(&self, connection: u64, peer: Peer<RoleServer>, level: LoggingLevel) {
        let mut listeners = self.lock();
        listeners.retain(|l| l.connection != connection && !l.peer.is_transport_closed());
        listeners.push(Listener {
            connection,
            peer,
            level,
        });
    }

    fn forward(&self, level: LoggingLevel, logger: &str, data: Value) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut listeners = self.lock();
        listeners.retain(|l| !l.peer.is_transport_closed());
        for listener in listeners.iter() {
            if severity(level) < severity(listener.level) {
                continue;
            }
            let peer = listener.peer.clone();
            let param =
                LoggingMessageNotificationParam::new(level, data.clone()).with_logger(logger);
            runtime.spawn(async move {
                let _ = peer.notify_logging_message(param).await;
            });
        }
    }

    fn wants(&self, level: LoggingLevel) -> bool {
        self.lock()
            .iter()
            .any(|l| severity(level) >= severity(l.level))
    }
}

/// MCP's levels in order of severity (syslog's order).
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

fn mcp_level(level: &tracing::Level) -> LoggingLevel {
    match *level {
        tracing::Level::ERROR => LoggingLevel::Error,
        tracing::Level::WARN => LoggingLevel::Warning,
        tracing::Level::INFO => LoggingLevel::Info,
        _ => LoggingLevel::Debug,
    }
}

/// A [`tracing_subscriber::Layer`] that sends events to MCP clients; made by
/// [`McpLogSink::layer`].
#[derive(Clone, Debug)]
pub struct McpLogLayer {
    sink: McpLogSink,
}

/// Collects an event's message and fields.
#[derive(Default)]
struct Fields {
    message: String,
    extra: Map<String, Value>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.extra.insert(field.name().into(), Value::from(value));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.extra.insert(field.name().into(), Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.extra.insert(field.name().into(), Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.extra.insert(field.name().into(), Value::from(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            self.extra
                .insert(field.name().into(), Value::from(format!("{value:?}")));
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for McpLogLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _cx: Context<'_, S>) {
        let meta = event.metadata();
        let target = meta.target();
        if QUIET_TARGETS
            .iter()
            .any(|q| target == *q || target.starts_with(&format!("{q}::")))
        {
            return;
        }
        let level = mcp_level(meta.level());
        // The request being served here, when it asked for this level.
        let request = REQUEST_LOG
            .try_with(|r| (severity(level) >= severity(r.level)).then(|| r.out.clone()))
            .ok()
            .flatten();
        if (request.is_none() && !self.sink.wants(level)) || FORWARDING.with(Cell::get) {
            return;
        }
        FORWARDING.with(|f| f.set(true));
        let mut fields = Fields::default();
        event.record(&mut fields);
        let data = if fields.extra.is_empty() {
            Value::from(fields.message)
        } else {
            let mut object = Map::new();
            object.insert("message".into(), Value::from(fields.message));
            object.extend(fields.extra);
            Value::Object(object)
        };
        if let Some(out) = request {
            // A full queue drops the message: logging never holds a tool up.
            let param =
                LoggingMessageNotificationParam::new(level, data.clone()).with_logger(target);
            let _ = out.try_send(crate::server::Outgoing::Log(param));
        }
        self.sink.forward(level, target, data);
        FORWARDING.with(|f| f.set(false));
    }
}
