//! `coding-agent mcp`: the seven tools as an MCP server on stdio, or on
//! Streamable HTTP with `--http`.

use std::sync::Arc;

use agent_mcp::rmcp::ServiceExt;
use agent_mcp::{McpHttpOptions, McpHttpServer, McpLogSink, McpToolServer};
use coding_agent::{Settings, ToolContext, ToolRegistry, ToolSelection};

use crate::args::McpArgs;

/// Serves until the client disconnects (stdio) or a signal (HTTP); returns
/// the exit code. `logs` receives the clients' `logging/setLevel`.
pub async fn run(args: McpArgs, logs: McpLogSink) -> i32 {
    let cwd = match args
        .cwd
        .clone()
        .map(Ok)
        .unwrap_or_else(std::env::current_dir)
    {
        Ok(c) => std::path::absolute(&c).unwrap_or(c),
        Err(e) => {
            eprintln!("coding-agent mcp: cannot read the current directory: {e}");
            return 2;
        }
    };
    let settings = match Settings::load(&cwd) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("coding-agent mcp: cannot use the settings file {e}");
            return 2;
        }
    };
    // Which tools: the flags and allowedTools, as for the agent; every
    // allowed built-in is served (not only Pi's default active four).
    let (tools, policy) = match crate::sandbox::tools(&cwd, &settings, args.sandbox, true) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("coding-agent mcp: {e}");
            return 2;
        }
    };
    tracing::info!(sandbox = %policy.mode, "MCP server tools");
    let mut registry = ToolRegistry::new(tools.all());
    registry.set_settings_allowed_tools(settings.allowed_tools());
    registry.apply_selection(ToolSelection {
        tools: args.tools.as_deref().map(ToolSelection::parse_list),
        exclude_tools: args
            .exclude_tools
            .as_deref()
            .map(ToolSelection::parse_list)
            .unwrap_or_default(),
        ..Default::default()
    });
    let rules = match coding_agent::permissions::PermissionRules::from_settings(&settings, &cwd) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("coding-agent mcp: cannot use the settings: {e}");
            return 2;
        }
    };
    let definitions = registry.definitions();
    let context_settings = settings.clone();
    let context_cwd = cwd.clone();
    let server = McpToolServer::new(
        definitions,
        Arc::new(move || ToolContext {
            cwd: context_cwd.clone(),
            model: None,
            settings: context_settings.clone(),
            cancel: Default::default(),
        }),
    )
    .with_log_sink(logs)
    .with_permissions(coding_agent::permissions::PermissionGate::new(
        rules, None, &cwd, "MCP mode",
    ));
    if let Some(addr) = args.http {
        return serve_http(server, addr, args.auth_token).await;
    }
    tracing::info!(tools = ?server.tool_names(), cwd = %cwd.display(), "serving MCP on stdio");
    let running = match server.serve(agent_mcp::rmcp::transport::stdio()).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("coding-agent mcp: the client did not initialise: {e}");
            return 1;
        }
    };
    match running.waiting().await {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("coding-agent mcp: {e}");
            1
        }
    }
}

/// `--http`: serves until SIGINT, SIGTERM or SIGHUP.
async fn serve_http(
    server: McpToolServer,
    addr: std::net::SocketAddr,
    token: Option<String>,
) -> i32 {
    let http = match McpHttpServer::bind(addr, McpHttpOptions { auth_token: token }).await {
        Ok(h) => h,
        Err(e) => {
            eprintln!("coding-agent mcp: {e}");
            return 2;
        }
    };
    // Clients and tests read the address from here (port 0 picks one).
    eprintln!("coding-agent mcp: listening on {}", http.url());
    let shutdown = tokio_util::sync::CancellationToken::new();
    let on_signal = shutdown.clone();
    crate::signals::exit_on_terminate(
        move || on_signal.cancel(),
        || async {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        },
    );
    let on_interrupt = shutdown.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
    http.serve(server, shutdown).await;
    0
}
