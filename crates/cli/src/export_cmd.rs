//! `coding-agent export SESSION` and RPC `export_html` (`/export` is
//! `agent_commands`'):
//! the session as a self-contained HTML page (or JSONL), drawn by
//! `agent_export` with the tools' own renderers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_export::{ExportFormat, ExportOptions, default_file_name, write_export};
use agent_sessions::SessionManager;
use coding_agent::ToolRegistry;

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
pub fn rpc_exporter(registry: ToolRegistry) -> agent_rpc::HtmlExporter {
    Arc::new(move |session, output| export(session, ExportFormat::Html, &registry, output))
}
