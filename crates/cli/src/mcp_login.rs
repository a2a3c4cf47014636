//! `coding-agent mcp login NAME` and `mcp logout NAME`: OAuth sign-in to an
//! HTTP server of the settings' `mcpServers`, tokens in the agent
//! directory's `mcp-auth/`.

use coding_agent::Settings;

use crate::args::{McpAction, McpLoginArgs};

/// Runs the action; returns the exit code.
pub async fn run(action: McpAction) -> i32 {
    match action {
        McpAction::Login(args) => login(args).await,
        McpAction::Logout(args) => logout(args),
    }
}

async fn login(args: McpLoginArgs) -> i32 {
    let config = match server(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("coding-agent mcp login: {e}");
            return 2;
        }
    };
    let mut prompt = agent_mcp::oauth::BrowserPrompt::default();
    prompt.no_browser = args.no_browser;
    let url = match &config.transport {
        agent_mcp::McpTransport::Http { url, .. } => url.clone(),
        _ => String::new(),
    };
    eprintln!("Signing in to MCP server {} at {url}", config.name);
    match agent_mcp::oauth::login(&config, &prompt, None).await {
        Ok(()) => {
            let place = config
                .tokens
                .as_ref()
                .map(|t| t.path_for(&config.name, &url).display().to_string())
                .unwrap_or_default();
            eprintln!(
                "Signed in to MCP server {}; tokens kept in {place}",
                config.name
            );
            0
        }
        Err(e) => {
            eprintln!("coding-agent mcp login: {e}");
            1
        }
    }
}

fn logout(args: McpLoginArgs) -> i32 {
    let Some(store) = agent_mcp::oauth::TokenStore::in_agent_dir() else {
        eprintln!("coding-agent mcp logout: no agent directory (set HOME or PI_CODING_AGENT_DIR)");
        return 2;
    };
    match store.remove(&args.name) {
        Ok(true) => {
            eprintln!("Signed out of MCP server {}", args.name);
            0
        }
        Ok(false) => {
            eprintln!("No sign-in is stored for MCP server {}", args.name);
            0
        }
        Err(e) => {
            eprintln!("coding-agent mcp logout: {e}");
            1
        }
    }
}

/// The configuration of the named server, with the agent directory's token
/// store.
fn server(args: &McpLoginArgs) -> Result<agent_mcp::McpServerConfig, String> {
    let cwd = match &args.cwd {
        Some(c) => c.clone(),
        None => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let mut settings =
        Settings::load(&cwd).map_err(|e| format!("cannot use the settings file {e}"))?;
    crate::trust_cmd::apply(&mut settings, &cwd, false);
    let configs = crate::mcp_servers::configured(&args.mcp_config, &settings, &cwd)?;
    let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
    let Some(config) = configs.iter().find(|c| c.name == args.name) else {
        return Err(if names.is_empty() {
            format!("no MCP server named {} (mcpServers is empty)", args.name)
        } else {
            format!(
                "no MCP server named {} (configured: {})",
                args.name,
                names.join(", ")
            )
        });
    };
    if !matches!(config.transport, agent_mcp::McpTransport::Http { .. }) {
        return Err(format!(
            "MCP server {} is started as a command (stdio); only HTTP servers sign in",
            args.name
        ));
    }
    if config.tokens.is_none() {
        return Err("no agent directory for the tokens (set HOME or PI_CODING_AGENT_DIR)".into());
    }
    Ok(config.clone())
}
