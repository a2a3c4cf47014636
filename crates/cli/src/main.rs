//! `coding-agent`: the stock agent, assembled from the workspace crates like any
//! user would assemble one.
//!
//! - `coding-agent [OPTIONS] [PROMPT]...` runs the agent (text, `--print` or
//!   `--mode json`); without a prompt on a terminal it reads prompts line by line.
//! - `coding-agent tool NAME --args JSON` runs one tool call without a model.
//! - `coding-agent demo` runs a scripted tour on a temporary workspace.
//! - `coding-agent mcp` serves the tools to an MCP client (stdio or HTTP).
//!
//! Exit codes: 0 success, 1 the run ended in an error, 2 usage error.

mod args;
mod codemode;
mod demo;
mod export_cmd;
mod extensions;
mod mcp_cmd;
mod mcp_login;
mod mcp_servers;
mod modes;
mod prompt;
mod provider;
mod remote;
mod render;
mod resources;
mod sandbox;
mod session_cmd;
mod signals;
mod slash;
mod startup;
mod tool_cmd;
mod trust_cmd;

use clap::Parser;

use args::{Cli, Command};

/// Prints a line to stdout; a closed pipe (`coding-agent ... | head`) is not an error.
pub(crate) fn print_line(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// Diagnostics on stderr (stdout belongs to the output or the protocol);
/// `mcp_logs` also sends them to MCP clients that ask with `logging/setLevel`.
fn init_tracing(verbose: bool, mcp_logs: Option<&agent_mcp::McpLogSink>) {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let default = if verbose { "debug" } else { "warn" };
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // rmcp's OAuth code logs authorization codes at debug level, and its
    // warnings carry authorization servers' words unfiltered: sign-in
    // secrets and a server's escapes never reach a log, whatever RUST_LOG
    // asks for (our own messages say what failed).
    if let Ok(cap) = "rmcp::transport::auth=error".parse() {
        filter = filter.add_directive(cap);
    }
    // While the terminal UI draws, log lines become its notices instead
    // of landing in the middle of its screen.
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(agent_tui::diagnostics::writer)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter);
    let mcp = mcp_logs.map(|sink| {
        sink.layer()
            .with_filter(tracing_subscriber::filter::LevelFilter::DEBUG)
    });
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(mcp)
        .try_init();
}

fn main() {
    // A script worker confines itself before anything else runs.
    codemode::serve_if_worker();
    let cli = Cli::parse();
    let mcp_logs = matches!(cli.command, Some(Command::Mcp(_))).then(agent_mcp::McpLogSink::new);
    init_tracing(cli.run.verbose, mcp_logs.as_ref());
    // One tool call needs no worker threads (blocking work goes to tokio's
    // blocking pool either way); every other command runs tasks side by side.
    let one_call = matches!(&cli.command, Some(Command::Tool(t)) if t.batch.is_none());
    let mut builder = if one_call {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("coding-agent: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(async move {
        match cli.command {
            Some(Command::Tool(t)) => {
                let outcome = match (&t.batch, &t.name) {
                    (Some(source), _) => tool_cmd::batch(source, t.cwd.as_deref(), t.sandbox, &t.remote).await,
                    (None, Some(name)) => tool_cmd::single(name, t.cwd.as_deref(), t.args.as_deref().unwrap_or("{}"), t.sandbox, &t.remote).await,
                    (None, None) => Err(tool_cmd::UsageError(
                        "give a tool name (coding-agent tool read --args '{\"path\":\"x\"}') or --batch FILE".into(),
                    )),
                };
                match outcome {
                    Ok(()) => 0,
                    Err(e) => {
                        eprintln!("coding-agent tool: {e}");
                        2
                    }
                }
            }
            Some(Command::Demo(d)) => demo::run(d).await,
            Some(Command::Trust(t)) => trust_cmd::run(t),
            Some(Command::Export(e)) => export_cmd::run(&e),
            Some(Command::Helper(h)) => remote::helper(&h).await,
            Some(Command::Mcp(m)) => match m.action {
                Some(action) => mcp_login::run(action).await,
                None => mcp_cmd::run(m, mcp_logs.unwrap_or_default()).await,
            },
            None => modes::run(cli.run).await,
        }
    });
    // Background tasks (e.g. a stdin reader) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    // `exit` runs no destructor: the standing sandbox's placeholders go now.
    agent_sandbox::shut_down();
    std::process::exit(code);
}
