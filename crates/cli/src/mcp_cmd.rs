//! `coding-agent mcp`: the seven tools as an MCP server on stdio, or on
//! Streamable HTTP with `--http`.

use std::sync::Arc;

use agent_mcp::rmcp::ServiceExt;
use agent_mcp::{McpHttpOptions, McpHttpServer, McpLogSink, McpToolServer};
use coding_agent::{Settings, ToolRegistry, ToolSelection};

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
        Ok(mut s) => {
            crate::trust_cmd::apply(&mut s, &cwd, false);
            Arc::new(s)
        }
        Err(e) => {
            eprintln!("coding-agent mcp: cannot use the settings file {e}");
            return 2;
        }
    };
    // Which tools: the flags and allowedTools, as for the agent; every
    // allowed built-in is served (not only Pi's default active four).
    // With --remote the tools run there, confined by the helper in the
    // sandbox decided here (workspace-write by default, where it can be had).
    let remote = match &args.remote.remote {
        Some(uri) => {
            match crate::remote::connect(uri, &args.remote, &settings, args.sandbox, true).await {
                Ok(r) => Some(r),
                Err(e) => {
                    eprintln!("coding-agent mcp: {e}");
                    return 2;
                }
            }
        }
        None => None,
    };
    let (tools, cwd) = match &remote {
        Some(remote) => {
            let cwd = crate::remote::remote_dir(remote, args.cwd.as_deref());
            match crate::remote::tools(remote, &cwd, &settings) {
                Ok(t) => (t, cwd),
                Err(e) => {
                    eprintln!("coding-agent mcp: {e}");
                    return 2;
                }
            }
        }
        None => match crate::sandbox::tools(&cwd, &settings, args.sandbox, true) {
            Ok((tools, policy)) => {
                tracing::info!(sandbox = %policy.mode, "MCP server tools");
                (tools.all(), cwd)
            }
            Err(e) => {
                eprintln!("coding-agent mcp: {e}");
                return 2;
            }
        },
    };
    let mut registry = ToolRegistry::new(tools);
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
    let rules = match settings.permission_rules(&cwd) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("coding-agent mcp: cannot use the settings: {e}");
            return 2;
        }
    };
    let definitions = registry.definitions();
    let mut extensions = coding_agent::tool_extensions(&cwd, &settings);
    if let Some(remote) = &remote {
        extensions.insert(remote.mutation_queue());
    }
    let server = McpToolServer::new(definitions, extensions)
        .with_log_sink(logs)
        .with_permissions(agent_permissions::PermissionGate::new(
            rules, None, &cwd, "MCP mode",
        ));
    // One bound for every client, as the agent loop bounds one batch.
    let server = match settings.max_parallel_tools() {
        Some(n) => server.with_max_parallel_calls(n),
        None => server,
    };
    tracing::info!(
        max_parallel = server.max_parallel_calls(),
        "tool calls executing at once"
    );
    if let Some(addr) = args.http {
        let auth_token = match (&args.auth_token_file, args.auth_token) {
            (Some(file), _) => match read_token_file(file) {
                Ok(token) => Some(token),
                Err(e) => {
                    eprintln!("coding-agent mcp: {e}");
                    return 2;
                }
            },
            (None, Some(token)) => {
                if token_given_on_command_line() {
                    eprintln!(
                        "coding-agent mcp: warning: a token given with --auth-token can be read by every local user (ps, /proc); use CODING_AGENT_MCP_TOKEN or --auth-token-file"
                    );
                }
                Some(token)
            }
            (None, None) => None,
        };
        let options = McpHttpOptions {
            auth_token,
            max_connections: args.max_connections,
            max_sessions: args.max_sessions,
            session_idle_timeout: std::time::Duration::from_secs_f64(args.session_idle_timeout),
            ..Default::default()
        };
        return serve_http(server, addr, options).await;
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
    options: McpHttpOptions,
) -> i32 {
    let http = match McpHttpServer::bind(addr, options).await {
        Ok(h) => h,
        Err(e) => {
            eprintln!("coding-agent mcp: {e}");
            return 2;
        }
    };
    // Clients and tests read the address from here (port 0 picks one).
    eprintln!("coding-agent mcp: listening on {}", http.url());
    let token_file = if http.token_was_generated() {
        match write_token_file(http.local_addr(), http.auth_token()) {
            Ok(path) => {
                eprintln!("coding-agent mcp: auth token: {}", http.auth_token());
                eprintln!(
                    "coding-agent mcp: token file (mode 0600): {}",
                    path.display()
                );
                eprintln!(
                    "coding-agent mcp: clients send the header `Authorization: Bearer <token>`"
                );
                Some(path)
            }
            Err(e) => {
                eprintln!("coding-agent mcp: cannot write the token file: {e}");
                return 2;
            }
        }
    } else {
        None
    };
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
    if let Some(path) = token_file {
        let _ = std::fs::remove_file(path);
    }
    0
}

/// Writes a generated token to `<agent dir>/mcp-http-<host>-<port>.token`,
/// readable by its owner only: created anew (`O_CREAT|O_EXCL`, so never
/// through a symlink or into a file someone else prepared) with mode 0600,
/// in a directory created 0700 when missing. A stale file of an earlier
/// server on the same port is replaced.
fn write_token_file(
    addr: std::net::SocketAddr,
    token: &str,
) -> std::io::Result<std::path::PathBuf> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};

    let dir = coding_agent::agent_dir().ok_or_else(|| {
        std::io::Error::other("no agent directory (set CODING_AGENT_DIR or HOME)")
    })?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    let host = addr.ip().to_string().replace(':', "_");
    let path = dir.join(format!("mcp-http-{host}-{}.token", addr.port()));
    let create = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
    };
    let mut file = match create() {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Unlinks a symlink itself, never its target.
            std::fs::remove_file(&path)?;
            create()?
        }
        other => other?,
    };
    file.write_all(format!("{token}\n").as_bytes())?;
    file.sync_all()?;
    Ok(path)
}

/// The first line of `file`, the token for `--auth-token-file`.
fn read_token_file(file: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read the token file {}: {e}", file.display()))?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.is_empty() {
        return Err(format!("the token file {} is empty", file.display()));
    }
    Ok(token)
}

/// Whether `--auth-token` came from the command line (not the variable).
fn token_given_on_command_line() -> bool {
    std::env::args_os().any(|a| {
        let a = a.to_string_lossy();
        a == "--auth-token" || a.starts_with("--auth-token=")
    })
}
