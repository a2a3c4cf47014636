//! `coding-agent mcp`: the seven tools as an MCP server on stdio.

use std::sync::Arc;

use agent_mcp::McpToolServer;
use agent_mcp::rmcp::ServiceExt;
use coding_agent::{Settings, ToolContext, ToolRegistry, ToolSelection};

use crate::args::McpArgs;

/// Serves until the client disconnects; returns the exit code.
pub async fn run(args: McpArgs) -> i32 {
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
    let mut registry = ToolRegistry::new(tools_builtin::all_tools(&cwd));
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
    );
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
