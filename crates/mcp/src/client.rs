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
use rmcp::ServiceExt;
use rmcp::handler::client::ClientHandler;
use rmcp::model::{CallToolRequestParams, ContentBlock as McpContent, ResourceContents};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::Value;
use tokio::sync::{Mutex, mpsc};

/// Default time a server has to start and list its tools.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time one tool call may take.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(600);
/// How often a crashed server is started again before its tools give up.
const MAX_RESTARTS: u32 = 3;
/// How long a call's result waits for a tool-list change the server
/// announced during the call.
const LIST_CHANGE_WAIT: Duration = Duration::from_secs(5);
/// The longest tool name providers accept.
const MAX_TOOL_NAME: usize = 64;

/// How to reach one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:8000/mcp`.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

/// How to start one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server's name (the `NAME` in `mcpServers`).
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Time to start and list tools.
    pub startup_timeout: Duration,
    /// Time one call may take.
    pub tool_timeout: Duration,
    /// Builds the process of a stdio server (a sandbox around it, for
    /// instance); `None` starts the command as it is.
    pub launcher: Option<McpLauncher>,
    /// Name the tools as the server does (extensions), instead of
    /// `mcp__<server>__<tool>`.
    pub plain_names: bool,
}

type LaunchFn =
    dyn Fn(&std::ffi::OsStr, &Path) -> std::io::Result<tokio::process::Command> + Send + Sync;

/// Makes the process a stdio server runs in: given the program and the
/// working directory, a command to which the server's arguments and
/// variables are then added.
///
/// ```
/// use agent_mcp::McpLauncher;
/// // Every server under `nice`, as an example of a wrapper.
/// let launcher = McpLauncher::new(|program, cwd| {
///     let mut c = tokio::process::Command::new("nice");
///     c.arg(program).current_dir(cwd);
///     Ok(c)
/// });
/// # let _ = launcher;
/// ```
#[derive(Clone)]
pub struct McpLauncher(Arc<LaunchFn>);

impl McpLauncher {
    /// A launcher from a function of (program, working directory).
    pub fn new(
        f: impl Fn(&std::ffi::OsStr, &Path) -> std::io::Result<tokio::process::Command>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        McpLauncher(Arc::new(f))
    }

    fn command(&self, program: &str, cwd: &Path) -> std::io::Result<tokio::process::Command> {
        (self.0)(program.as_ref(), cwd)
    }
}

impl std::fmt::Debug for McpLauncher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpLauncher")
    }
}

impl PartialEq for McpLauncher {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for McpLauncher {}

/// A configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mcpServers.{server}: {message}")]
pub struct McpConfigError {
    /// The server's name.
    pub server: String,
    /// What is wrong.
    pub message: String,
}

/// Reads `{"NAME": {"command": ..., "args": [...], "env": {...}, "cwd": ...,
/// "startupTimeoutSec": n, "toolTimeoutSec": n}}` (stdio) or `{"NAME":
/// {"url": ..., "headers": {...}}}` (Streamable HTTP), the value of
/// `mcpServers`. `${VAR}` and `${VAR:-default}` in any string are replaced
/// by the environment's values.
///
/// ```
/// let configs = agent_mcp::parse_mcp_servers(&serde_json::json!({
///     "files": {"command": "npx", "args": ["-y", "some-server"], "toolTimeoutSec": 60},
///     "remote": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ${HOME}"}}
/// })).unwrap();
/// assert_eq!(configs[0].name, "files");
/// assert_eq!(configs[0].tool_timeout.as_secs(), 60);
/// assert!(matches!(configs[1].transport, agent_mcp::McpTransport::Http { .. }));
/// ```
///
/// # Errors
/// A server entry of the wrong shape (neither `command` nor `url`, wrong
/// types, a variable that is not set and has no default), naming the server.
pub fn parse_mcp_servers(value: &Value) -> Result<Vec<McpServerConfig>, McpConfigError> {
    let Some(servers) = value.as_object() else {
        return Err(McpConfigError {
            server: String::new(),
            message: "must be an object of servers".into(),
        });
    };
    servers
        .iter()
        .map(|(name, entry)| parse_server(name, entry))
        .collect()
}

fn parse_server(name: &str, entry: &Value) -> Result<McpServerConfig, McpConfigError> {
    let err = |message: String| McpConfigError {
        server: name.to_string(),
        message,
    };
    if !entry.is_object() {
        return Err(err("must be an object".into()));
    }
    let string = |key: &str| -> Result<Option<String>, McpConfigError> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand_env(s).map(Some).map_err(err),
            Some(_) => Err(err(format!("\"{key}\" must be a string"))),
        }
    };
    let strings = |key: &str| -> Result<Vec<String>, McpConfigError> {
        match entry.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .ok_or_else(|| err(format!("\"{key}\" must be a list of strings")))
                        .and_then(|s| expand_env(s).map_err(err))
                })
                .collect(),
            Some(_) => Err(err(format!("\"{key}\" must be a list of strings"))),
        }
    };
    let map = |key: &str| -> Result<BTreeMap<String, String>, McpConfigError> {
        let mut out = BTreeMap::new();
        match entry.get(key) {
            None => {}
            Some(Value::Object(vars)) => {
                for (k, v) in vars {
                    let v = v
                        .as_str()
                        .ok_or_else(|| err(format!("{key}.{k} must be a string")))?;
                    out.insert(k.clone(), expand_env(v).map_err(err)?);
                }
            }
            Some(_) => return Err(err(format!("\"{key}\" must be an object"))),
        }
        Ok(out)
    };
    let seconds = |key: &str, default: Duration| -> Result<Duration, McpConfigError> {
        match entry.get(key) {
            None => Ok(default),
            Some(v) => match v.as_f64() {
                Some(s) if s > 0.0 && s.is_finite() => Ok(Duration::from_secs_f64(s.min(86_400.0))),
                _ => Err(err(format!(
                    "\"{key}\" must be a positive number of seconds"
                ))),
            },
        }
    };
    let transport = match (string("command")?, string("url")?) {
        (Some(_), Some(_)) => {
            return Err(err("give either \"command\" or \"url\", not both".into()));
        }
        (Some(command), None) => McpTransport::Stdio {
            command,
            args: strings("args")?,
            env: map("env")?,
            cwd: string("cwd")?.map(PathBuf::from),
        },
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(err(format!(
                    "\"url\" must be an http:// or https:// address, not {url}"
                )));
            }
            if !cfg!(feature = "http") {
                return Err(err("HTTP servers need agent-mcp's `http` feature".into()));
            }
            McpTransport::Http {
                url,
                headers: map("headers")?,
            }
        }
        (None, None) => return Err(err("needs a \"command\" (stdio) or a \"url\" (HTTP)".into())),
    };
    Ok(McpServerConfig {
        name: name.to_string(),
        transport,
        startup_timeout: seconds("startupTimeoutSec", DEFAULT_STARTUP_TIMEOUT)?,
        tool_timeout: seconds("toolTimeoutSec", DEFAULT_TOOL_TIMEOUT)?,
        launcher: None,
        plain_names: false,
    })
}

/// `${VAR}` and `${VAR:-default}` replaced by the environment's values.
fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed ${{ in {text:?}"));
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match (std::env::var(var), default) {
            (Ok(value), _) => out.push_str(&value),
            (Err(_), Some(d)) => out.push_str(d),
            (Err(_), None) => {
                return Err(format!(
                    "environment variable {var} is not set (write ${{{var}:-default}} for a default)"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `mcp__<server>__<tool>` with characters outside `[A-Za-z0-9_-]` replaced
/// by `_`, cut to 64 characters with a short stable hash when too long.
///
/// ```
/// assert_eq!(agent_mcp::mcp_tool_name("my files", "read.file"), "mcp__my_files__read_file");
/// let long = agent_mcp::mcp_tool_name("server", &"x".repeat(100));
/// assert_eq!(long.len(), 64);
/// ```
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let full = format!("mcp__{}__{}", clean(server), clean(tool));
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    // FNV-1a: stable across runs and platforms.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!("{server}\0{tool}").bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let suffix = format!("_{:08x}", hash as u32);
    format!("{}{suffix}", &full[..MAX_TOOL_NAME - suffix.len()])
}

/// A tool name as a server gives it, made safe for providers: characters
/// outside `[A-Za-z0-9_-]` become `_`, at most 64 characters.
fn plain_tool_name(tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_TOOL_NAME)
        .collect();
    if clean.is_empty() { "_".into() } else { clean }
}

type Client = RunningService<RoleClient, ListChangeHandler>;

/// Our side of a client connection: passes `tools/list_changed` on.
struct ListChangeHandler {
    changed: mpsc::UnboundedSender<()>,
    refresh: Arc<Refresh>,
}

impl ClientHandler for ListChangeHandler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.refresh
            .requested
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _ = self.changed.send(());
    }
}

/// Counts announced and applied tool-list changes of one server, so a call
/// during which the server announced a change returns only once the new
/// list is applied (the next model request then offers the new tools).
#[derive(Default)]
struct Refresh {
    requested: std::sync::atomic::AtomicU64,
    applied: tokio::sync::watch::Sender<u64>,
}

impl Refresh {
    /// Waits (bounded) until every change announced so far is applied.
    async fn settle(&self, limit: Duration) {
        // The notification's handler runs in its own task, started before
        // the call's response is delivered: let it run first.
        tokio::task::yield_now().await;
        let wanted = self.requested.load(std::sync::atomic::Ordering::SeqCst);
        let mut applied = self.applied.subscribe();
        let _ = tokio::time::timeout(limit, applied.wait_for(|n| *n >= wanted)).await;
    }
}

/// One server's connection, started again after a crash.
struct Connection {
    config: McpServerConfig,
    client: Mutex<Option<Client>>,
    restarts: std::sync::atomic::AtomicU32,
    changed: mpsc::UnboundedSender<()>,
    refresh: Arc<Refresh>,
    /// The names of the tools last listed, for updates.
    names: std::sync::Mutex<Vec<String>>,
}

impl Connection {
    async fn start(
        config: &McpServerConfig,
        changed: mpsc::UnboundedSender<()>,
        refresh: Arc<Refresh>,
    ) -> Result<Client, String> {
        let handler = ListChangeHandler { changed, refresh };
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
                let transport = TokioChildProcess::new(wrapped)
                    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                tokio::time::timeout(config.startup_timeout, handler.serve(transport)).await
            }
            #[cfg(feature = "http")]
            McpTransport::Http { url, headers } => {
                agent_ai::providers::install_tls_provider();
                let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
                    http_config(url, headers)?,
                );
                tokio::time::timeout(config.startup_timeout, handler.serve(transport)).await
            }
            #[cfg(not(feature = "http"))]
            McpTransport::Http { .. } => {
                return Err("HTTP servers need agent-mcp's `http` feature".into());
            }
        };
        match serving {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(format!("did not initialise: {e}")),
            Err(_) => Err(format!(
                "did not start within {} s (startupTimeoutSec)",
                config.startup_timeout.as_secs_f64()
            )),
        }
    }

    /// A live client, started again if the last one died.
    async fn client(&self) -> Result<tokio::sync::MutexGuard<'_, Option<Client>>, String> {
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
            *guard =
                Some(Self::start(&self.config, self.changed.clone(), self.refresh.clone()).await?);
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
                let meta = crate::prompt_meta::apply_to_meta(meta, entries);
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
                crate::prompt_meta::apply_to_definition(definition, entries)
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

#[cfg(feature = "http")]
fn http_config(
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
        async move {
            let arguments = params.as_object().cloned().unwrap_or_default();
            let request =
                CallToolRequestParams::new(self.remote_name.clone()).with_arguments(arguments);
            let peer = {
                let guard = self.connection.client().await.map_err(ToolError::new)?;
                match guard.as_ref() {
                    Some(client) => client.peer().clone(),
                    None => return Err(ToolError::new("MCP server is not running")),
                }
            };
            let timeout = self.connection.config.tool_timeout;
            // Dropping the request (cancel or timeout) sends notifications/cancelled.
            let outcome = tokio::select! {
                r = tokio::time::timeout(timeout, peer.call_tool(request)) => r,
                _ = cx.cancel.cancelled() => return Err(ToolError::aborted()),
            };
            let result = match outcome {
                Ok(Ok(result)) => result,
                Ok(Err(e)) => {
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
            };
            self.connection.refresh.settle(LIST_CHANGE_WAIT).await;
            let content = our_content(&result.content);
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
            Ok(AgentToolResult {
                content,
                details: result.structured_content.unwrap_or(Value::Null),
                ..Default::default()
            })
        }
        .boxed()
    }
}

/// MCP content as ours: text, images, embedded text resources (binary ones
/// and links are described in a line).
fn our_content(content: &[McpContent]) -> Vec<ContentBlock> {
    content
        .iter()
        .map(|c| match c {
            McpContent::Text(t) => ContentBlock::text(t.text.clone()),
            McpContent::Image(i) => ContentBlock::Image(ImageContent {
                data: i.data.clone(),
                mime_type: i.mime_type.clone(),
            }),
            McpContent::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { text, .. } => {
                    ContentBlock::text(text.clone())
                }
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    ContentBlock::text(format!(
                        "[binary resource {uri} ({})]",
                        mime_type.as_deref().unwrap_or("unknown type")
                    ))
                }
                _ => ContentBlock::text("[resource of an unknown kind]"),
            },
            McpContent::ResourceLink(link) => {
                ContentBlock::text(format!("[resource {}]", link.uri))
            }
            McpContent::Audio(a) => ContentBlock::text(format!("[audio ({})]", a.mime_type)),
            _ => ContentBlock::text("[content of an unknown kind]"),
        })
        .collect()
}

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

    fn deliver(&self, update: McpToolUpdate) {
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
        let refresh = Arc::new(Refresh::default());
        let client = Connection::start(config, changed.clone(), refresh.clone()).await?;
        let listed = tokio::time::timeout(config.startup_timeout, client.list_all_tools())
            .await
            .map_err(|_| "did not list its tools in time".to_string())?
            .map_err(|e| format!("could not list its tools: {e}"))?;
        Ok::<_, String>((client, listed, changed, notices, refresh))
    }))
    .await;
    let mut tools: Vec<ToolDefinition> = Vec::new();
    let mut warnings = Vec::new();
    for (config, started) in configs.iter().zip(started) {
        match started {
            Ok((client, listed, changed, notices, refresh)) => {
                let connection = Arc::new(Connection {
                    config: config.clone(),
                    client: Mutex::new(Some(client)),
                    restarts: Default::default(),
                    changed,
                    refresh,
                    names: Default::default(),
                });
                tools.extend(connection.definitions(listed));
                watch_list_changes(Arc::downgrade(&connection), notices, updates.clone());
            }
            Err(e) => warnings.push(format!("MCP server {}: {e}", config.name)),
        }
    }
    McpTools {
        tools,
        warnings,
        updates,
    }
}

/// Lists a server's tools again on each `tools/list_changed`, while its
/// tools exist (the task holds the connection weakly).
fn watch_list_changes(
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
            connection.refresh.applied.send_replace(wanted);
        }
    });
}
