//! A session as one HTML file anyone can open in a browser, or as JSONL.
//!
//! The page is self-contained: no network request, no external script,
//! style or font. It shows the session tree with its branches (the active
//! path first), Markdown with highlighted code, tool calls as collapsible
//! cards drawn by the tools' own renderers (so an edit shows its diff),
//! folded thinking, inline images, and usage and cost per answer and in
//! total.
//!
//! Sessions are written by models, tools and possibly an attacker, so the
//! page treats all of it as data: every byte is escaped, links keep only
//! `http(s):`, `mailto:` and in-page targets, remote images are never
//! loaded, and a Content-Security-Policy allows only the page's own style
//! and script, by hash. Long tool outputs show their first lines; the rest
//! stays in the file, as an inert JSON data block, behind a "show all"
//! button.
//!
//! ```
//! use agent_export::{ExportOptions, export_html};
//! use agent_sessions::SessionManager;
//! use coding_agent::agent_ai::Message;
//!
//! let mut session = SessionManager::in_memory(std::path::Path::new("/work"));
//! session.append_message(&Message::user("hello <b>world</b>"))?;
//! let html = export_html(&session, &ExportOptions::default());
//! assert!(html.contains("hello &lt;b&gt;world&lt;/b&gt;"));
//! assert!(html.contains("Content-Security-Policy"));
//! # Ok::<(), agent_sessions::SessionError>(())
//! ```

mod escape;
mod highlight;
mod markdown;
mod page;
mod render;
mod styled;
mod tree;

use std::io::Write;
use std::path::{Path, PathBuf};

use agent_sessions::SessionManager;
use coding_agent::ToolRegistry;

/// The lines of a tool's output shown before "show all", by default.
pub const DEFAULT_VISIBLE_OUTPUT_LINES: usize = 100;

/// How a page is drawn.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct ExportOptions<'a> {
    /// Draws tool calls and results with the tools' own renderers; without
    /// it, every tool gets the generic drawing.
    pub registry: Option<&'a ToolRegistry>,
    /// Lines of a tool's output shown before "show all".
    pub visible_output_lines: usize,
}

impl Default for ExportOptions<'_> {
    fn default() -> Self {
        ExportOptions {
            registry: None,
            visible_output_lines: DEFAULT_VISIBLE_OUTPUT_LINES,
        }
    }
}

impl<'a> ExportOptions<'a> {
    /// Tools drawn by `registry`'s renderers.
    pub fn with_registry(mut self, registry: &'a ToolRegistry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Lines of a tool's output shown before "show all" (at least 1).
    pub fn with_visible_output_lines(mut self, lines: usize) -> Self {
        self.visible_output_lines = lines.max(1);
        self
    }
}

impl std::fmt::Debug for ExportOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportOptions")
            .field("registry", &self.registry.is_some())
            .field("visible_output_lines", &self.visible_output_lines)
            .finish()
    }
}

/// What an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExportFormat {
    /// One self-contained HTML page.
    #[default]
    Html,
    /// The session file's lines: the header, then every entry.
    Jsonl,
}

impl ExportFormat {
    /// The file extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Html => "html",
            ExportFormat::Jsonl => "jsonl",
        }
    }
}

impl std::str::FromStr for ExportFormat {
    type Err = ExportError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "html" => Ok(ExportFormat::Html),
            "jsonl" => Ok(ExportFormat::Jsonl),
            other => Err(ExportError::Format(other.to_string())),
        }
    }
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// An unknown format name.
    #[error("unknown export format `{0}` (expected `html` or `jsonl`)")]
    Format(String),
    /// The file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The session as one self-contained HTML page.
pub fn export_html(session: &SessionManager, options: &ExportOptions<'_>) -> String {
    page::page(session, options)
}

/// The current branch as JSONL, as Pi exports it: a fresh header (the
/// session's id and directory, version 3, stamped now), then the entries
/// from the root to the leaf, each one's `parentId` the entry before it.
/// Pi's `--session` and ours open the result.
pub fn export_jsonl(session: &SessionManager) -> String {
    use coding_agent::serde_json::{Value, json};
    let header = json!({
        "type": "session",
        "version": agent_sessions::SESSION_VERSION,
        "id": session.session_id(),
        "timestamp": agent_sessions::iso_now(),
        "cwd": session.header().cwd,
    });
    let mut out = header.to_string();
    out.push('\n');
    let mut parent = Value::Null;
    for entry in session.path_to(session.leaf_id()) {
        let mut line = entry.to_json();
        if let Some(fields) = line.as_object_mut() {
            fields.insert("parentId".into(), parent);
        }
        parent = Value::from(entry.id.clone());
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// The file name an export gets when none is given, Pi's naming with our
/// program's name: `coding-agent-session-<session file stem>.html`, and
/// `session-<time>.jsonl` for JSONL.
pub fn default_file_name(session: &SessionManager, format: ExportFormat) -> String {
    match format {
        ExportFormat::Html => {
            let stem = session
                .session_file()
                .and_then(Path::file_stem)
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| session.session_id().to_string());
            format!("coding-agent-session-{stem}.html")
        }
        ExportFormat::Jsonl => {
            let now = agent_sessions::iso_now().replace([':', '.'], "-");
            format!("session-{now}.jsonl")
        }
    }
}

/// Writes the export to `path` (through a temporary file in the same
/// directory, renamed into place, so a reader never sees half a page and
/// a failed write leaves what was there).
///
/// # Errors
/// [`ExportError::Write`] when the directory is not writable or the disk
/// is full.
pub fn write_export(
    session: &SessionManager,
    format: ExportFormat,
    options: &ExportOptions<'_>,
    path: &Path,
) -> Result<(), ExportError> {
    let text = match format {
        ExportFormat::Html => export_html(session, options),
        ExportFormat::Jsonl => export_jsonl(session),
    };
    let write_error = |source| ExportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        // A file replaced keeps its permission bits (a 0600 export stays
        // private); a link is replaced by a file, its target left alone.
        if let Ok(existing) = std::fs::symlink_metadata(path)
            && existing.is_file()
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = existing.permissions().mode() & 0o777;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(write_error(e));
    }
    tracing::debug!(path = %path.display(), bytes = text.len(), "session exported");
    Ok(())
}
