//! MCP servers' tools as [`ToolDefinition`]s (`mcp__<server>__<tool>`).
//!
//! Servers are configured the way Claude Code and Cursor configure them:
//! `{"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...},
//! "cwd": "..."}}}` (stdio). Each server starts in its own task with a
//! start-up timeout; one that fails to start is reported and skipped, never
//! fatal. A server that dies is started again on the next call (a bounded
//! number of times).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_ai::{ContentBlock, ImageContent};
use agent_core::{AgentToolResult, ToolError, ToolMeta};
use coding_agent::{CallContext, ToolDefinition};
use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ContentBlock as McpContent, ResourceContents};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::Value;
use tokio::sync::Mutex;

/// Default time a server has to start and list its tools.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time one tool call may take.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(600);
/// How often a crashed server is started again before its tools give up.
const MAX_RESTARTS: u32 = 3;
/// The longest tool name providers accept.
const MAX_TOOL_NAME: usize = 64;

/// How to start one MCP server (stdio).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server's name (the `NAME` in `mcpServers`).
    pub name: String,
    /// The program to run.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// Time to start and list tools.
    pub startup_timeout: Duration,
    /// Time one call may take.
    pub tool_timeout: Duration,
}

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
/// "startupTimeoutSec": n, "toolTimeoutSec": n}}` (the value of
/// `mcpServers`).
///
/// ```
/// let configs = agent_mcp::parse_mcp_servers(&serde_json::json!({
///     "files": {"command": "npx", "args": ["-y", "some-server"], "toolTimeoutSec": 60}
/// })).unwrap();
/// assert_eq!(configs[0].name, "files");
/// assert_eq!(configs[0].tool_timeout.as_secs(), 60);
/// ```
///
/// # Errors
/// A server entry of the wrong shape (no `command`, a URL-only server,
/// wrong types), naming the server.
pub fn parse_mcp_servers(value: &Value) -> Result<Vec<McpServerConfig>, McpConfigError> {
    let Some(servers) = value.as_object() else {
        return Err(McpConfigError {
            server: String::new(),
            message: "must be an object of servers".into(),
        });
    };
    let mut out = Vec::new();
    for (name, entry) in servers {
        let err = |message: String| McpConfigError {
            server: name.clone(),
            message,
        };
        let Some(command) = entry.get("command").and_then(Value::as_str) else {
            let message = if entry.get("url").is_some() {
                "HTTP servers (url) are not supported yet; use a stdio command".to_string()
            } else {
                "needs a \"command\"".to_string()
            };
            return Err(err(message));
        };
        let strings = |key: &str| -> Result<Vec<String>, McpConfigError> {
            match entry.get(key) {
                None => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| err(format!("\"{key}\" must be a list of strings")))
                    })
                    .collect(),
                Some(_) => Err(err(format!("\"{key}\" must be a list of strings"))),
            }
        };
        let mut env = BTreeMap::new();
        match entry.get("env") {
            None => {}
            Some(Value::Object(vars)) => {
                for (k, v) in vars {
                    let v = v
                        .as_str()
                        .ok_or_else(|| err(format!("env.{k} must be a string")))?;
                    env.insert(k.clone(), v.to_string());
                }
            }
            Some(_) => return Err(err("\"env\" must be an object".into())),
        }
        let seconds = |key: &str, default: Duration| -> Result<Duration, McpConfigError> {
            match entry.get(key) {
                None => Ok(default),
                Some(v) => match v.as_f64() {
                    Some(s) if s > 0.0 && s.is_finite() => {
                        Ok(Duration::from_secs_f64(s.min(86_400.0)))
                    }
                    _ => Err(err(format!(
                        "\"{key}\" must be a positive number of seconds"
                    ))),
                },
            }
        };
        out.push(McpServerConfig {
            name: name.clone(),
            command: command.to_string(),
            args: strings("args")?,
            env,
            cwd: entry.get("cwd").and_then(Value::as_str).map(PathBuf::from),
            startup_timeout: seconds("startupTimeoutSec", DEFAULT_STARTUP_TIMEOUT)?,
            tool_timeout: seconds("toolTimeoutSec", DEFAULT_TOOL_TIMEOUT)?,
        });
    }
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

type Client = RunningService<RoleClient, ()>;

/// One server's connection, started again after a crash.
struct Connection {
    config: McpServerConfig,
    client: Mutex<Option<Client>>,
    restarts: std::sync::atomic::AtomicU32,
}

impl Connection {
    async fn start(config: &McpServerConfig) -> Result<Client, String> {
        let command = tokio::process::Command::new(&config.command).configure(|c| {
            // A server must not outlive the agent or a failed start.
            c.args(&config.args).envs(&config.env).kill_on_drop(true);
            if let Some(cwd) = &config.cwd {
                c.current_dir(cwd);
            }
        });
        let transport = TokioChildProcess::new(command)
            .map_err(|e| format!("cannot start `{}`: {e}", config.command))?;
        match tokio::time::timeout(config.startup_timeout, ().serve(transport)).await {
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
            *guard = Some(Self::start(&self.config).await?);
        }
        Ok(guard)
    }
}

/// One remote tool.
struct McpRemoteTool {
    meta: ToolMeta,
    remote_name: String,
    connection: Arc<Connection>,
}

impl ToolDefinition for McpRemoteTool {
    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn execute(
        &self,
        params: Value,
        cx: CallContext,
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

/// What [`connect_mcp_servers`] found.
pub struct McpTools {
    /// Every server's tools, in configuration order.
    pub tools: Vec<Arc<dyn ToolDefinition>>,
    /// One line per server that could not be used.
    pub warnings: Vec<String>,
}

/// Starts every server in parallel and turns their tools into definitions.
/// A server that fails to start or list its tools is a warning, not an error.
pub async fn connect_mcp_servers(configs: &[McpServerConfig]) -> McpTools {
    let started = futures::future::join_all(configs.iter().map(|config| async move {
        let client = Connection::start(config).await?;
        let listed = tokio::time::timeout(config.startup_timeout, client.list_all_tools())
            .await
            .map_err(|_| "did not list its tools in time".to_string())?
            .map_err(|e| format!("could not list its tools: {e}"))?;
        Ok::<_, String>((client, listed))
    }))
    .await;
    let mut tools: Vec<Arc<dyn ToolDefinition>> = Vec::new();
    let mut warnings = Vec::new();
    for (config, started) in configs.iter().zip(started) {
        match started {
            Ok((client, listed)) => {
                let connection = Arc::new(Connection {
                    config: config.clone(),
                    client: Mutex::new(Some(client)),
                    restarts: Default::default(),
                });
                for tool in listed {
                    let name = mcp_tool_name(&config.name, &tool.name);
                    let description = tool.description.as_deref().unwrap_or("").to_string();
                    let meta = ToolMeta::new(name, description)
                        .with_label(tool.title.clone().unwrap_or_else(|| tool.name.to_string()))
                        .with_parameters(Value::Object((*tool.input_schema).clone()));
                    tools.push(Arc::new(McpRemoteTool {
                        meta,
                        remote_name: tool.name.to_string(),
                        connection: connection.clone(),
                    }));
                }
            }
            Err(e) => warnings.push(format!("MCP server {}: {e}", config.name)),
        }
    }
    McpTools { tools, warnings }
}
