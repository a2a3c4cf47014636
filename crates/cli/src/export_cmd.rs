//! `coding-agent export SESSION`, `/export [PATH]` and RPC `export_html`:
//! the session as a self-contained HTML page (or JSONL), drawn by
//! `agent_export` with the tools' own renderers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_export::{ExportFormat, ExportOptions, default_file_name, write_export};
use coding_agent::sessions::SessionManager;
use coding_agent::{AgentSession, ToolRegistry};

use crate::args::ExportArgs;

/// `coding-agent export SESSION [-o FILE] [--format html|jsonl]`.
pub fn run(args: &ExportArgs) -> i32 {
    let format = match args.format.as_deref().map(str::parse::<ExportFormat>) {
        Some(Ok(f)) => f,
        Some(Err(e)) => {
            eprintln!("coding-agent export: {e}");
            return 2;
        }
        None if args
            .output
            .as_deref()
            .is_some_and(|o| o.extension().is_some_and(|e| e == "jsonl")) =>
        {
            ExportFormat::Jsonl
        }
        None => ExportFormat::Html,
    };
    let session = match SessionManager::open(&args.session) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("coding-agent export: {e}");
            return 1;
        }
    };
    // The built-in tools draw their own cards, as in the terminal.
    let registry = ToolRegistry::new(tools_builtin::all_tools(session.cwd()));
    match export(&session, format, &registry, args.output.as_deref()) {
        Ok(path) => {
            println!("{}", path.display());
            0
        }
        Err(e) => {
            eprintln!("coding-agent export: {e}");
            1
        }
    }
}

/// Writes `session` at `output` (default: Pi's naming, in the current
/// directory) and answers the path.
fn export(
    session: &SessionManager,
    format: ExportFormat,
    registry: &ToolRegistry,
    output: Option<&Path>,
) -> Result<PathBuf, String> {
    let path = match output {
        Some(p) => p.to_path_buf(),
        None => PathBuf::from(default_file_name(session, format)),
    };
    let options = ExportOptions::default().with_registry(registry);
    write_export(session, format, &options, &path).map_err(|e| e.to_string())?;
    Ok(path)
}

/// RPC `export_html`, with the session's own tools drawing the cards.
pub fn rpc_exporter(registry: ToolRegistry) -> coding_agent::rpc::HtmlExporter {
    Arc::new(move |session, output| export(session, ExportFormat::Html, &registry, output))
}

/// `/export [PATH]`: HTML, or JSONL when PATH ends in `.jsonl` (as Pi).
pub fn slash(session: &AgentSession, rest: &str) -> Result<String, String> {
    let store = session
        .session_manager()
        .ok_or("this conversation is not recorded (--no-session)")?;
    let output = first_argument(rest).map(PathBuf::from);
    let format = match &output {
        Some(p) if p.extension().is_some_and(|e| e == "jsonl") => ExportFormat::Jsonl,
        _ => ExportFormat::Html,
    };
    let registry = session.registry();
    let manager = store.lock().unwrap_or_else(|p| p.into_inner());
    let path = export(&manager, format, &registry, output.as_deref())?;
    Ok(format!("Session exported to: {}", path.display()))
}

/// The first argument: a quoted string, or up to the first space.
fn first_argument(rest: &str) -> Option<&str> {
    let rest = rest.trim_start();
    match rest.chars().next()? {
        quote @ ('"' | '\'') => {
            let inner = &rest[1..];
            inner.find(quote).map(|end| &inner[..end])
        }
        _ => rest.split_whitespace().next(),
    }
}

#[cfg(test)]
mod tests {
    use super::first_argument;

    #[test]
    fn the_path_argument_is_quoted_or_a_word() {
        assert_eq!(first_argument(""), None);
        assert_eq!(first_argument("  out.html extra"), Some("out.html"));
        assert_eq!(first_argument("\"my file.html\" x"), Some("my file.html"));
        assert_eq!(first_argument("'unclosed"), None);
    }
}
