//! MCP servers' tools as [`ToolDefinition`]s (`mcp__<server>__<tool>`).
//!
//! Servers are configured the way Claude Code and Cursor configure them:
//! `{"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...},
//! "cwd": "..."}}}` for stdio and `{"NAME": {"url": "http://.../mcp",
//! "headers": {...}}}` for Streamable HTTP; `${VAR}` and `${VAR:-default}`
//! in strings take the environment's values. Each server starts in its own
//! task with a start-up timeout; one that fails to start is reported and
//! skipped, never fatal. A server that dies is started again on the next
//! call (a bounded number of times). A server's
//! `notifications/tools/list_changed` lists its tools again and reports the
//! change as an [`McpToolUpdate`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_ai::{ContentBlock, ImageContent};
use agent_core::{AgentToolResult, ToolError, ToolMeta};
use agent_tool::{AgentTool, ToolCallContext, ToolDefinition, ToolHints};
use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::handler::client::ClientHandler;
use rmcp::model::{CallToolRequestParams, ContentBlock as McpContent, ResourceContents};
use rmcp::service::ClientServiceExt;
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::Value;
use tokio::sync::{Mutex, mpsc};

mod call;
mod config;
mod content;
mod names;
mod updates;

pub use config::{
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, McpConfigError, McpLauncher, McpServerConfig,
    McpTransport, parse_mcp_servers,
};
use content::{limit_output, our_content};
pub use names::mcp_tool_name;
use names::plain_tool_name;
pub use updates::{McpToolUpdate, McpToolUpdates};
use updates::{Refresh, watch_list_changes};

/// How often a crashed server is started again before its tools give up.
const MAX_RESTARTS: u32 = 3;
/// How often one call signs in again after its token is refused.
#[cfg(feature = "http")]
const MAX_SIGN_INS_PER_CALL: u32 = 2;
/// How long a call's result waits for a tool-list change the server
/// announced during the call.
const LIST_CHANGE_WAIT: Duration = Duration::from_secs(5);

type Client = RunningService<RoleClient, Handler>;

/// Our side of a client connection: passes `tools/list_changed` on, and
/// routes progress to the calls running (through the transport, see
/// [`call`]). One per server, kept across restarts.
#[derive(Clone)]
struct Handler {
    changed: mpsc::UnboundedSender<()>,
    refresh: Arc<Refresh>,
    progress: Arc<call::ProgressRoutes>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.refresh
            .requested
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _ = self.changed.send(());
    }
}

/// Why a connection did not start.
#[derive(Debug)]
enum StartError {
    /// The server answered the handshake with something unusable.
    Handshake(String),
    /// Anything else (no process, a timeout, sign-in needed).
    Other(String),
}

impl From<String> for StartError {
    fn from(e: String) -> Self {
        StartError::Other(e)
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Handshake(e) => write!(f, "did not initialise: {e}"),
            StartError::Other(e) => f.write_str(e),
        }
    }
}

/// One server's connection, started again after a crash.
struct Connection {
    config: McpServerConfig,
    client: Mutex<Option<Arc<Client>>>,
    restarts: std::sync::atomic::AtomicU32,
    handler: Handler,
    /// The names of the tools last listed, for updates.
    names: std::sync::Mutex<Vec<String>>,
}

impl Connection {
    async fn start(config: &McpServerConfig, handler: Handler) -> Result<Client, StartError> {
        // stdio servers get the `initialize` handshake: the SDKs most of
        // them are written with leave an unknown request unanswered, and
        // `server/discover` would cost each one the probe's full wait.
        // HTTP servers try `server/discover` first (the 2026-07-28 request
        // metadata) and fall back.
        let first = match config.transport {
            McpTransport::Stdio { .. } => rmcp::service::ClientLifecycleMode::Initialize,
            McpTransport::Http { .. } => lifecycle(),
        };
        if matches!(first, rmcp::service::ClientLifecycleMode::Initialize) {
            return Self::start_with(config, handler, first).await;
        }
        match Self::start_with(config, handler.clone(), first).await {
            // A server that answered `server/discover` with something other
            // than a result or an error (an empty object, say) gets the
            // older handshake, on a fresh connection.
            Err(StartError::Handshake(first)) => {
                tracing::debug!(server = %config.name, error = %first, "discover failed; trying initialize");
                Self::start_with(
                    config,
                    handler,
                    rmcp::service::ClientLifecycleMode::Initialize,
                )
                .await
                .map_err(|e| match e {
                    StartError::Handshake(second) => StartError::Other(format!(
                        "did not initialise: {second} (and to server/discover: {first})"
                    )),
                    other => other,
                })
            }
            other => other,
        }
    }

    async fn start_with(
        config: &McpServerConfig,
        handler: Handler,
        lifecycle: rmcp::service::ClientLifecycleMode,
    ) -> Result<Client, StartError> {
        let serving = match &config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let base = match &config.launcher {
                    Some(launcher) => {
                        let dir = match cwd {
                            Some(d) => d.clone(),
                            None => std::env::current_dir()
                                .map_err(|e| format!("cannot start `{command}`: {e}"))?,
                        };
                        launcher
                            .command(command, &dir)
                            .map_err(|e| format!("cannot start `{command}`: {e}"))?
                    }
                    None => tokio::process::Command::new(command),
                };
                let child = base.configure(|c| {
                    // A server must not outlive the agent or a failed start.
                    c.args(args).envs(env).kill_on_drop(true);
                    if let Some(cwd) = cwd {
                        c.current_dir(cwd);
                    }
                });
                // Its own process group, killed whole: a server (or the
                // script starting it) whose children hold our pipes would
                // otherwise outlive a failed start or the agent.
                let mut wrapped = process_wrap::tokio::CommandWrap::from(child);
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                // Its stderr is read here and logged, line by line: a server
                // writing to the agent's terminal would draw over the
                // terminal UI.
                let (transport, stderr) = TokioChildProcess::builder(wrapped)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                if let Some(stderr) = stderr {
                    forward_stderr(config.name.clone(), stderr);
                }
                let transport = call::Watched::new(transport, handler.progress.clone());
                tokio::time::timeout(
                    config.startup_timeout,
                    handler.serve_with_lifecycle(transport, lifecycle),
                )
                .await
            }
            #[cfg(feature = "http")]
            McpTransport::Http { url, headers } => {
                return Self::start_http(config, url, headers, handler, lifecycle).await;
            }
            #[cfg(not(feature = "http"))]
            McpTransport::Http { .. } => {
                return Err(StartError::Other(
                    "HTTP servers need agent-mcp's `http` feature".into(),
                ));
            }
        };
        match serving {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(StartError::Handshake(e.to_string())),
            Err(_) => Err(StartError::Other(format!(
                "did not start within {} s (startupTimeoutSec)",
                config.startup_timeout.as_secs_f64()
            ))),
        }
    }

    /// Connects to an HTTP server: with the stored sign-in when there is
    /// one; after a 401 (or a 403 for a scope the token lacks) it signs in
    /// through the configured prompt once and connects again.
    #[cfg(feature = "http")]
    async fn start_http(
        config: &McpServerConfig,
        url: &str,
        headers: &BTreeMap<String, String>,
        handler: Handler,
        lifecycle: rmcp::service::ClientLifecycleMode,
    ) -> Result<Client, StartError> {
        use rmcp::transport::IntoTransport;
        agent_ai::providers::install_tls_provider();
        let mut signed_in = false;
        loop {
            let handler = handler.clone();
            let progress = handler.progress.clone();
            let settings = http_config(url, headers).map_err(StartError::Other)?;
            let authorized = crate::oauth::authorized_client(config)
                .await
                .map_err(StartError::Other)?;
            // The two transports are different types; `Either` lets one
            // timeout cover whichever handshake runs.
            let handshake = match authorized {
                Some(auth) => futures::future::Either::Left(
                    handler.serve_with_lifecycle(
                        call::Watched::new(
                            rmcp::transport::StreamableHttpClientTransport::with_client(
                                auth, settings,
                            )
                            .into_transport(),
                            progress,
                        ),
                        lifecycle.clone(),
                    ),
                ),
                None => futures::future::Either::Right(
                    handler.serve_with_lifecycle(
                        call::Watched::new(
                            rmcp::transport::StreamableHttpClientTransport::from_config(settings)
                                .into_transport(),
                            progress,
                        ),
                        lifecycle.clone(),
                    ),
                ),
            };
            let serving = tokio::time::timeout(config.startup_timeout, handshake).await;
            let error = match serving {
                Ok(Ok(client)) => return Ok(client),
                Ok(Err(e)) => e,
                Err(_) => {
                    return Err(StartError::Other(format!(
                        "did not start within {} s (startupTimeoutSec)",
                        config.startup_timeout.as_secs_f64()
                    )));
                }
            };
            let Some(challenge) = error.auth_challenge() else {
                return Err(StartError::Handshake(error.to_string()));
            };
            match (&config.auth_prompt, &config.tokens) {
                (Some(prompt), Some(_)) if !signed_in => {
                    crate::oauth::login(config, &*prompt.0, Some(challenge))
                        .await
                        .map_err(|e| StartError::Other(e.to_string()))?;
                    signed_in = true;
                }
                (Some(_), Some(_)) => {
                    return Err(StartError::Other(format!(
                        "refused the token of a fresh sign-in: {error}"
                    )));
                }
                _ => return Err(StartError::Other(crate::oauth::needs_sign_in(config))),
            }
        }
    }

    /// After a call failed on a 401 or 403: signs in again through the
    /// prompt (when there is one) and drops the client, so the next
    /// [`Connection::client`] connects with the new token. `false` when
    /// nobody can sign in.
    #[cfg(feature = "http")]
    async fn reauthorize(&self, challenge: &str) -> Result<bool, String> {
        let (Some(prompt), Some(_)) = (&self.config.auth_prompt, &self.config.tokens) else {
            return Ok(false);
        };
        crate::oauth::login(&self.config, &*prompt.0, Some(challenge))
            .await
            .map_err(|e| e.to_string())?;
        if let Some(old) = self.client.lock().await.take() {
            old.cancellation_token().cancel();
        }
        Ok(true)
    }

    /// A live client, started again if the last one died.
    async fn client(&self) -> Result<tokio::sync::MutexGuard<'_, Option<Arc<Client>>>, String> {
        let mut guard = self.client.lock().await;
        let dead = guard.as_ref().is_none_or(|c| c.is_transport_closed());
        if dead {
            let n = self
                .restarts
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if n >= MAX_RESTARTS {
                return Err(format!(
                    "MCP server {} stopped and was restarted {MAX_RESTARTS} times; giving up",
                    self.config.name
                ));
            }
            tracing::warn!(server = %self.config.name, "restarting MCP server");
            *guard = Some(Arc::new(
                Self::start(&self.config, self.handler.clone())
                    .await
                    .map_err(|e| e.to_string())?,
            ));
        }
        Ok(guard)
    }

    /// The server's tools as definitions.
    fn definitions(self: &Arc<Self>, listed: Vec<rmcp::model::Tool>) -> Vec<ToolDefinition> {
        let tools: Vec<ToolDefinition> = listed
            .into_iter()
            .map(|tool| {
                let name = if self.config.plain_names {
                    plain_tool_name(&tool.name)
                } else {
                    mcp_tool_name(&self.config.name, &tool.name)
                };
                let description = tool.description.as_deref().unwrap_or("").to_string();
                let entries = tool.meta.as_ref().map(|m| &m.0);
                let meta = ToolMeta::new(name, description)
                    .with_label(tool.title.clone().unwrap_or_else(|| tool.name.to_string()))
                    .with_parameters(Value::Object((*tool.input_schema).clone()));
                let meta = crate::tool_meta::apply_to_meta(meta, entries);
                let hints = tool
                    .annotations
                    .as_ref()
                    .map(|a| ToolHints {
                        read_only: a.read_only_hint,
                        destructive: a.destructive_hint,
                        idempotent: a.idempotent_hint,
                        open_world: a.open_world_hint,
                    })
                    .unwrap_or_default();
                let definition = ToolDefinition::new(Arc::new(McpRemoteTool {
                    meta,
                    remote_name: tool.name.to_string(),
                    connection: self.clone(),
                }))
                .with_hints(hints);
                crate::tool_meta::apply_to_definition(definition, entries)
            })
            .collect();
        *self.names.lock().unwrap_or_else(|p| p.into_inner()) =
            tools.iter().map(|t| t.name().to_string()).collect();
        tools
    }

    /// Lists the tools again after `tools/list_changed`.
    async fn relist(self: &Arc<Self>) -> Result<McpToolUpdate, String> {
        let peer = {
            let guard = self.client().await?;
            match guard.as_ref() {
                Some(client) => client.peer().clone(),
                None => return Err("not running".into()),
            }
        };
        let listed = tokio::time::timeout(self.config.startup_timeout, peer.list_all_tools())
            .await
            .map_err(|_| "did not list its tools in time".to_string())?
            .map_err(|e| format!("could not list its tools: {e}"))?;
        let removed = self.names.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Ok(McpToolUpdate {
            server: self.config.name.clone(),
            removed,
            tools: self.definitions(listed),
        })
    }
}

/// How an HTTP connection starts: `server/discover` with the 2026-07-28
/// per-request metadata (`MCP-Protocol-Version` on every POST, `_meta` with
/// the protocol version and client capabilities on every request), falling
/// back to `initialize` for a server that predates it.
pub(crate) fn lifecycle() -> rmcp::service::ClientLifecycleMode {
    use rmcp::model::ProtocolVersion;
    rmcp::service::ClientLifecycleMode::Auto {
        preferred_versions: vec![
            ProtocolVersion::V_2026_07_28,
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_03_26,
        ],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

#[cfg(feature = "http")]
pub(crate) fn http_config(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig, String> {
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        let name = http::HeaderName::try_from(name.as_str())
            .map_err(|e| format!("header {name:?}: {e}"))?;
        let value = http::HeaderValue::try_from(value.as_str())
            .map_err(|e| format!("header {name}: {e}"))?;
        custom.insert(name, value);
    }
    Ok(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .custom_headers(custom),
    )
}

/// One remote tool.
struct McpRemoteTool {
    meta: ToolMeta,
    remote_name: String,
    connection: Arc<Connection>,
}

impl AgentTool for McpRemoteTool {
    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn execute(
        &self,
        params: Value,
        cx: ToolCallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>> {
        // Without `http` there are no sign-ins to count or retry.
        #[cfg_attr(
            not(feature = "http"),
            allow(unused_mut, unused_variables, clippy::never_loop)
        )]
        async move {
            let arguments = params.as_object().cloned().unwrap_or_default();
            let request =
                CallToolRequestParams::new(self.remote_name.clone()).with_arguments(arguments);
            let timeout = self.connection.config.tool_timeout;
            let mut sign_ins = 0;
            let result = loop {
                let client = {
                    let guard = self.connection.client().await.map_err(ToolError::new)?;
                    match guard.as_ref() {
                        Some(client) => client.clone(),
                        None => return Err(ToolError::new("MCP server is not running")),
                    }
                };
                // Dropping the request (cancel or timeout) sends
                // notifications/cancelled; the server's progress arrives as
                // the call's updates; `input_required` rounds (SEP-2322) are
                // answered on the way.
                let calling = call::call_tool(
                    client.peer(),
                    &self.connection.handler.progress,
                    request.clone(),
                    &cx.updates,
                );
                let outcome = tokio::select! {
                    r = tokio::time::timeout(timeout, calling) => r,
                    _ = cx.cancel.cancelled() => return Err(ToolError::aborted()),
                };
                match outcome {
                    Ok(Ok(result)) => break result,
                    Ok(Err(e)) => {
                        #[cfg(feature = "http")]
                        if let Some(challenge) = e.auth_challenge() {
                            let config = &self.connection.config;
                            // A token refused again after fresh sign-ins (a
                            // scope the server never grants) is an answer.
                            if sign_ins >= MAX_SIGN_INS_PER_CALL {
                                return Err(ToolError::new(format!(
                                    "MCP server {} still refuses the call after {sign_ins} sign-ins: {e}",
                                    config.name
                                )));
                            }
                            sign_ins += 1;
                            match self.connection.reauthorize(challenge).await {
                                Ok(true) => continue,
                                Ok(false) => {
                                    return Err(ToolError::new(format!(
                                        "MCP server {} {}",
                                        config.name,
                                        crate::oauth::needs_sign_in(config)
                                    )));
                                }
                                Err(why) => {
                                    return Err(ToolError::new(format!(
                                        "MCP server {}: {why}",
                                        config.name
                                    )));
                                }
                            }
                        }
                        return Err(ToolError::new(format!(
                            "MCP server {} failed: {e}",
                            self.connection.config.name
                        )));
                    }
                    Err(_) => {
                        return Err(ToolError::new(format!(
                            "MCP tool {} did not answer within {} s (toolTimeoutSec)",
                            self.meta.name,
                            timeout.as_secs_f64()
                        )));
                    }
                }
            };
            self.connection.handler.refresh.settle(LIST_CHANGE_WAIT).await;
            let (content, truncation) = limit_output(our_content(&result.content));
            if result.is_error == Some(true) {
                let text = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                return Err(ToolError::new(text));
            }
            let mut details = result.structured_content.unwrap_or(Value::Null);
            if let Some(truncation) = truncation {
                match &mut details {
                    Value::Object(map) => {
                        map.entry("truncation").or_insert(truncation);
                    }
                    Value::Null => details = serde_json::json!({ "truncation": truncation }),
                    _ => {}
                }
            }
            Ok(AgentToolResult {
                content,
                details,
                ..Default::default()
            })
        }
        .boxed()
    }
}

/// What [`connect_mcp_servers`] found.
pub struct McpTools {
    /// Every server's tools, in configuration order.
    pub tools: Vec<ToolDefinition>,
    /// One line per server that could not be used.
    pub warnings: Vec<String>,
    /// Later changes of the servers' tool lists.
    pub updates: McpToolUpdates,
}

/// Starts every server in parallel and turns their tools into definitions.
/// A server that fails to start or list its tools is a warning, not an error.
pub async fn connect_mcp_servers(configs: &[McpServerConfig]) -> McpTools {
    let updates = McpToolUpdates::default();
    let started = futures::future::join_all(configs.iter().map(|config| async move {
        let (changed, notices) = mpsc::unbounded_channel();
        let handler = Handler {
            changed,
            refresh: Arc::new(Refresh::default()),
            progress: Default::default(),
        };
        let (client, listed) = start_and_list(config, &handler).await?;
        Ok::<_, String>((client, listed, handler, notices))
    }))
    .await;
    let mut tools: Vec<ToolDefinition> = Vec::new();
    let mut warnings = Vec::new();
    for (config, started) in configs.iter().zip(started) {
        match started {
            Ok((client, listed, handler, notices)) => {
                let connection = Arc::new(Connection {
                    config: config.clone(),
                    client: Mutex::new(Some(Arc::new(client))),
                    restarts: Default::default(),
                    handler,
                    names: Default::default(),
                });
                tools.extend(connection.definitions(listed));
                watch_list_changes(Arc::downgrade(&connection), notices, updates.clone());
            }
            // Servers' and authorization servers' words reach a terminal.
            Err(e) => warnings.push(crate::oauth::strip_controls(&format!(
                "MCP server {}: {e}",
                config.name
            ))),
        }
    }
    McpTools {
        tools,
        warnings,
        updates,
    }
}

/// Starts a server and lists its tools. A server that accepts the
/// connection but refuses the listing with a 401 (its authorization server
/// changed, say) is signed in to again once, through the prompt.
// Without `http` there is no sign-in to retry after.
#[cfg_attr(
    not(feature = "http"),
    allow(unused_mut, unused_variables, clippy::never_loop)
)]
async fn start_and_list(
    config: &McpServerConfig,
    handler: &Handler,
) -> Result<(Client, Vec<rmcp::model::Tool>), String> {
    let start = || async {
        Connection::start(config, handler.clone())
            .await
            .map_err(|e| e.to_string())
    };
    let mut client = start().await?;
    let mut signed_in = false;
    loop {
        let error =
            match tokio::time::timeout(config.startup_timeout, client.list_all_tools()).await {
                Err(_) => return Err("did not list its tools in time".to_string()),
                Ok(Ok(listed)) => return Ok((client, listed)),
                Ok(Err(e)) => e,
            };
        #[cfg(feature = "http")]
        if let Some(challenge) = error.auth_challenge().map(str::to_string) {
            let (Some(prompt), Some(_)) = (&config.auth_prompt, &config.tokens) else {
                return Err(crate::oauth::needs_sign_in(config));
            };
            if !signed_in {
                crate::oauth::login(config, &*prompt.0, Some(&challenge))
                    .await
                    .map_err(|e| e.to_string())?;
                signed_in = true;
                client.cancellation_token().cancel();
                client = start().await?;
                continue;
            }
        }
        return Err(format!("could not list its tools: {error}"));
    }
}

/// Logs what a stdio server writes on stderr (at `info`: `-v` shows it), one event per line (at
/// most 4 KiB a line, control characters dropped), until it closes it.
fn forward_stderr(server: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::AsyncBufReadExt;
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).split(b'\n');
        while let Ok(Some(line)) = lines.next_segment().await {
            let text = String::from_utf8_lossy(&line[..line.len().min(4096)]);
            let text: String = text
                .chars()
                .filter(|c| !c.is_control() || *c == '\t')
                .collect();
            if !text.trim().is_empty() {
                tracing::info!(server = %server, "{text}");
            }
        }
    });
}
