//! [`McpToolServer`]: tool definitions served to any MCP client.

// Logging (setLevel, the capability) is deprecated by the newest protocol
// revision; clients on the 2025 revisions still use it.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_ai::{ContentBlock, ToolCall};
use agent_core::Extensions;
use agent_core::{AgentTool, AgentToolResult, BeforeToolCallHook, execute_tool_call_with};
use agent_tool::ToolDefinition;
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as McpContent,
    ListToolsResult, LoggingMessageNotificationParam, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    Tool as McpTool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext, RoleServer};

use crate::McpLogSink;
use crate::logging::RequestLog;

/// Serves tool definitions over MCP: `tools/list` shows each tool's schema,
/// description and annotations; `tools/call` runs the call through the same
/// preparation, coercion and validation as the agent loop. A tool failure or
/// invalid arguments is a result with `isError: true` and the text the model
/// would see; an unknown tool is a JSON-RPC error. A call with a
/// `progressToken` gets `notifications/progress` from the tool's updates,
/// sent before its result; `notifications/cancelled` cancels the call (bash
/// kills its processes). The server never sends the client a request.
/// With a log sink ([`McpToolServer::with_log_sink`]) the server offers the
/// logging capability: after `logging/setLevel`, `tracing` events at or above
/// the level go to the client as `notifications/message`; a request naming a
/// level in its `_meta` (`io.modelcontextprotocol/logLevel`, the 2026-07-28
/// revision) gets the events raised while it is served, before its result,
/// and a request naming none gets none of them.
///
/// Each tool's `_meta` carries what its definition declares (prompt lines,
/// path and command arguments; see [`tool_meta`](crate::tool_meta())), so a
/// client built on this crate keeps it under its permission rules.
///
/// At most [`McpToolServer::with_max_parallel_calls`] calls execute at once,
/// across every client of the server (by default
/// [`agent_core::default_max_parallel_tools`], from the open-file limit);
/// the others wait for a slot in arrival order, so hundreds of parallel bash
/// calls do not run out of file descriptors.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use agent_mcp::McpToolServer;
/// use agent_mcp::rmcp::ServiceExt;
///
/// let cwd = std::env::current_dir()?;
/// let server = McpToolServer::new(
///     tools_builtin::all_tools(&cwd),
///     agent_tool::Extensions::new().with(agent_tool::WorkingDir::new(&cwd)),
/// )
/// .with_server_info("my-tools", "1.2.0");
/// # let _ = Arc::new(());
/// server.serve(agent_mcp::rmcp::transport::stdio()).await?.waiting().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpToolServer {
    definitions: Vec<ToolDefinition>,
    tools: Vec<Arc<dyn AgentTool>>,
    next_call: Arc<AtomicU64>,
    log_sink: Option<McpLogSink>,
    connection: u64,
    before: Option<BeforeToolCallHook>,
    slots: Arc<tokio::sync::Semaphore>,
    max_parallel: usize,
    extensions: Extensions,
    server_name: String,
    server_version: String,
    instructions: Option<String>,
}

impl McpToolServer {
    /// A server for `definitions`; every call gets `extensions` (at least a
    /// [`WorkingDir`](agent_tool::WorkingDir) for tools that read it from the
    /// context). It reports itself as `coding-agent` with this crate's version
    /// unless [`McpToolServer::with_server_info`] says otherwise.
    pub fn new(definitions: Vec<ToolDefinition>, extensions: Extensions) -> Self {
        let tools = definitions.iter().map(ToolDefinition::tool).collect();
        let max_parallel = agent_core::default_max_parallel_tools();
        McpToolServer {
            definitions,
            tools,
            next_call: Arc::new(AtomicU64::new(1)),
            log_sink: None,
            connection: 0,
            before: None,
            slots: Arc::new(tokio::sync::Semaphore::new(max_parallel)),
            max_parallel,
            extensions,
            server_name: "coding-agent".into(),
            server_version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
        }
    }

    /// The name and version the server reports in `initialize`.
    pub fn with_server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.server_name = name.into();
        self.server_version = version.into();
        self
    }

    /// The instructions the server gives clients in `initialize`; by default
    /// they are built from the tools actually served.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The instructions in force: the caller's, or one line naming each
    /// served tool with its prompt snippet (or label).
    pub fn instructions(&self) -> String {
        if let Some(text) = &self.instructions {
            return text.clone();
        }
        let mut text = String::from("Tools served by this agent:");
        for d in &self.definitions {
            let what = d.prompt_snippet().unwrap_or(d.label());
            text.push_str(&format!("\n- {}: {what}", d.name()));
        }
        text
    }

    /// At most `n` calls execute at once (at least 1), across all the
    /// connections of this server and its copies; further calls wait.
    /// Settings' `maxParallelTools` goes here.
    pub fn with_max_parallel_calls(mut self, n: usize) -> Self {
        let n = n.clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
        self.slots = Arc::new(tokio::sync::Semaphore::new(n));
        self.max_parallel = n;
        self
    }

    /// How many calls may execute at once.
    pub fn max_parallel_calls(&self) -> usize {
        self.max_parallel
    }

    /// Checks every call against permission rules first; there is no one to
    /// ask over MCP, so calls that need approval are refused with the rule
    /// in the result's text (build the gate without a prompt).
    /// The gate learns what each served tool declares (path and command
    /// arguments) from the served definitions.
    pub fn with_permissions(mut self, gate: agent_permissions::PermissionGate) -> Self {
        let served = self.definitions.clone();
        let gate = gate.with_tools(Arc::new(move |name: &str| {
            served.iter().find(|d| d.name() == name).cloned()
        }));
        self.before = (!gate.is_empty()).then(|| gate.hook());
        self
    }

    /// Offers the logging capability, registering clients in `sink` (whose
    /// [`McpLogSink::layer`] the program installs in its subscriber).
    pub fn with_log_sink(mut self, sink: McpLogSink) -> Self {
        self.connection = sink.connection_id();
        self.log_sink = Some(sink);
        self
    }

    /// A copy for another client connection (its own log level); transports
    /// that serve many clients, like HTTP, call this per session.
    pub fn for_new_connection(&self) -> Self {
        let mut copy = self.clone();
        if let Some(sink) = &self.log_sink {
            copy.connection = sink.connection_id();
        }
        copy
    }

    /// The names served, in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.definitions
            .iter()
            .map(|d| d.name().to_string())
            .collect()
    }
}

/// The MCP description of a definition, its annotations from the tool's
/// declared [`ToolHints`](agent_tool::ToolHints) (none when it declares none).
pub fn mcp_tool(definition: &ToolDefinition) -> McpTool {
    let schema = match definition.parameters() {
        serde_json::Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    let hints = definition.hints();
    let mut annotations = ToolAnnotations::with_title(definition.label());
    if let Some(v) = hints.read_only {
        annotations = annotations.read_only(v);
    }
    if let Some(v) = hints.destructive {
        annotations = annotations.destructive(v);
    }
    if let Some(v) = hints.idempotent {
        annotations = annotations.idempotent(v);
    }
    if let Some(v) = hints.open_world {
        annotations = annotations.open_world(v);
    }
    let tool = McpTool::new(
        definition.name().to_string(),
        definition.description().to_string(),
        Arc::new(schema),
    )
    .with_title(definition.label())
    .with_annotations(annotations);
    let meta = crate::tool_meta::tool_meta(definition);
    if meta.is_empty() {
        tool
    } else {
        tool.with_meta(rmcp::model::MetaObject(meta))
    }
}

/// How many notifications of one call may wait to be sent; beyond it the
/// newest are dropped (a tool never waits for its client to read them).
const OUTGOING_BACKLOG: usize = 64;

/// A notification a call sends while it runs.
pub(crate) enum Outgoing {
    /// A step of its progress.
    Progress(ProgressNotificationParam),
    /// A log message, for a request that named a level.
    Log(LoggingMessageNotificationParam),
}

impl Outgoing {
    async fn send(self, peer: &Peer<RoleServer>) {
        // A client that went away is the transport's to notice.
        let _ = match self {
            Outgoing::Progress(param) => peer.notify_progress(param).await,
            Outgoing::Log(param) => peer.notify_logging_message(param).await,
        };
    }
}

/// Our result blocks as MCP content.
fn mcp_content(result: &AgentToolResult) -> Vec<McpContent> {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(t) => Some(McpContent::text(t.text.clone())),
            ContentBlock::Image(i) => Some(McpContent::image(i.data.clone(), i.mime_type.clone())),
            _ => None,
        })
        .collect()
}

impl ServerHandler for McpToolServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools();
        let capabilities = if self.log_sink.is_some() {
            capabilities.enable_logging().build()
        } else {
            capabilities.build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(rmcp::model::Implementation::new(
                self.server_name.clone(),
                self.server_version.clone(),
            ))
            .with_instructions(self.instructions())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match &self.log_sink {
            Some(sink) => {
                sink.set_level(self.connection, context.peer.clone(), request.level);
                Ok(())
            }
            None => Err(ErrorData::method_not_found::<
                rmcp::model::SetLevelRequestMethod,
            >()),
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.definitions.iter().map(mcp_tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !self.tools.iter().any(|t| t.name() == name) {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        }
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let id = format!("mcp_{}", self.next_call.fetch_add(1, Ordering::Relaxed));
        let call = ToolCall::new(id, name, arguments);
        // What the call says while it runs (progress, and log messages when
        // the request named a level) queues here and goes out in order, on
        // the request's own stream, before its result: a notification sent
        // after the result would reach no one (a 2026-07-28 response stream
        // ends with it, and a client drops a finished call's updates).
        let (queue, mut queued) = tokio::sync::mpsc::channel::<Outgoing>(OUTGOING_BACKLOG);
        let progress = context.meta.get_progress_token();
        let sent = Arc::new(AtomicU64::new(0));
        let progress_queue = queue.clone();
        let on_update = move |partial: AgentToolResult| {
            let Some(token) = progress.clone() else {
                return;
            };
            let step = sent.fetch_add(1, Ordering::Relaxed) + 1;
            let text = partial.text_content();
            let last_line = text.lines().rev().find(|l| !l.trim().is_empty());
            let mut param = ProgressNotificationParam::new(token, step as f64);
            if let Some(line) = last_line {
                param = param.with_message(line.to_string());
            }
            // A full queue drops the step: the next one says more.
            let _ = progress_queue.try_send(Outgoing::Progress(param));
        };
        // SEP-2575: a request's log level is in its `_meta`; without one it
        // gets no log messages.
        let log = self
            .log_sink
            .as_ref()
            .and(context.meta.log_level())
            .map(|level| RequestLog::new(level, queue.clone()));
        drop(queue);
        // A slot first (in arrival order); a call cancelled while it waits
        // never starts.
        let _slot = tokio::select! {
            slot = self.slots.clone().acquire_owned() => slot.ok(),
            _ = context.ct.cancelled() => {
                return Ok(CallToolResult::error(vec![McpContent::text("Operation aborted")]).into());
            }
        };
        let work = async {
            tracing::info!(tool = %call.name, call = %call.id, "tools/call");
            let outcome = execute_tool_call_with(
                &self.tools,
                &call,
                &context.ct,
                self.before.as_ref(),
                &self.extensions,
                on_update,
            )
            .await;
            tracing::debug!(tool = %call.name, call = %call.id, is_error = outcome.1, "tools/call finished");
            outcome
        };
        let work = async move {
            match log {
                Some(log) => log.scope(work).await,
                None => work.await,
            }
        };
        tokio::pin!(work);
        let peer = context.peer.clone();
        let (result, is_error) = loop {
            tokio::select! {
                biased;
                Some(message) = queued.recv() => message.send(&peer).await,
                outcome = &mut work => break outcome,
            }
        };
        while let Ok(message) = queued.try_recv() {
            message.send(&peer).await;
        }
        let mut out = if is_error {
            CallToolResult::error(mcp_content(&result))
        } else {
            CallToolResult::success(mcp_content(&result))
        };
        if !result.details.is_null() {
            out.structured_content = Some(result.details.clone());
        }
        Ok(out.into())
    }
}
