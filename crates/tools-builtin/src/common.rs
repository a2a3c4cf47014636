//! Helpers shared by the tools.

use std::path::Path;

use agent_core::{CancellationToken, ToolError};
use coding_agent::anstyle::Style;
use coding_agent::{StyledLine, StyledText, Theme};

/// Runs blocking work on tokio's blocking pool; returns `Operation aborted` as
/// soon as `cancel` fires (the work itself should also watch `cancel`).
pub(crate) async fn blocking<T, F>(cancel: &CancellationToken, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    if cancel.is_cancelled() {
        return Err(ToolError::aborted());
    }
    let handle = tokio::task::spawn_blocking(work);
    tokio::select! {
        joined = handle => match joined {
            Ok(result) => result,
            Err(e) => Err(ToolError::new(format!("internal error: tool task failed: {e}"))),
        },
        _ = cancel.cancelled() => Err(ToolError::aborted()),
    }
}

/// Pi's notice block: `\n\n[a. b. c]`, or nothing when there are no notices.
pub(crate) fn notice_block(notices: &[String]) -> String {
    if notices.is_empty() {
        String::new()
    } else {
        format!("\n\n[{}]", notices.join(". "))
    }
}

/// A short, clear description of an I/O error on `path`.
pub(crate) fn describe_io_error(e: &std::io::Error, path: &Path) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        NotFound => format!("File not found: {}", path.display()),
        PermissionDenied => format!("Permission denied: {}", path.display()),
        IsADirectory => format!("Path is a directory: {}", path.display()),
        NotADirectory => format!("Not a directory: a parent of {} is a file", path.display()),
        _ => format!("{}: {e}", path.display()),
    }
}

/// Number of lines the generic previews show.
pub(crate) const PREVIEW_LINES: usize = 10;

/// A header line `name rest` in the theme's title and accent styles.
pub(crate) fn header(name: &str, rest: &str, theme: &Theme) -> StyledText {
    let mut t = StyledText::new();
    t.push(StyledLine::styled(name, theme.tool_title).push(format!(" {rest}"), theme.accent));
    t
}

/// The first (or last) `n` lines of `text`, with a muted "more lines" note.
pub(crate) fn preview(
    text: &str,
    n: usize,
    from_end: bool,
    style: Style,
    theme: &Theme,
) -> StyledText {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = StyledText::new();
    if lines.len() <= n {
        for l in &lines {
            out.push(StyledLine::styled(*l, style));
        }
        return out;
    }
    let hidden = lines.len() - n;
    if from_end {
        out.push(StyledLine::styled(
            format!("... ({hidden} earlier lines)"),
            theme.muted,
        ));
        for l in &lines[hidden..] {
            out.push(StyledLine::styled(*l, style));
        }
    } else {
        for l in &lines[..n] {
            out.push(StyledLine::styled(*l, style));
        }
        out.push(StyledLine::styled(
            format!("... ({hidden} more lines)"),
            theme.muted,
        ));
    }
    out
}

/// The output of a listing tool (grep, find, ls): lines joined and cut at
/// 50 KB, then Pi's notices (joined by `. ` in one `[...]` block) and details.
#[derive(Default)]
pub(crate) struct Listing {
    notices: Vec<String>,
    details: serde_json::Map<String, serde_json::Value>,
}

impl Listing {
    /// Records a reached limit: its notice and `details[key] = limit`.
    pub(crate) fn limit_reached(&mut self, key: &str, limit: usize, notice: String) {
        self.notices.push(notice);
        self.details.insert(key.into(), serde_json::json!(limit));
    }

    /// Builds the result; `trailing` is a notice and detail that come after the
    /// byte-limit notice (grep's shortened-lines flag).
    pub(crate) fn finish(
        mut self,
        lines: &[String],
        trailing: Option<(&str, serde_json::Value, String)>,
    ) -> agent_core::AgentToolResult {
        use agent_core::{DEFAULT_MAX_BYTES, TruncationOptions, format_size, truncate_head};
        let t = truncate_head(
            &lines.join("\n"),
            TruncationOptions::bytes_only(DEFAULT_MAX_BYTES),
        );
        if t.truncated {
            self.notices.push(format!(
                "{} limit reached",
                format_size(DEFAULT_MAX_BYTES as u64)
            ));
            self.details
                .insert("truncation".into(), serde_json::json!(t));
        }
        if let Some((key, value, notice)) = trailing {
            self.notices.push(notice);
            self.details.insert(key.into(), value);
        }
        let details = if self.details.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::Value::Object(self.details)
        };
        agent_core::AgentToolResult::text(format!("{}{}", t.content, notice_block(&self.notices)))
            .with_details(details)
    }
}

/// The result view grep, find and ls share: a muted preview of the lines.
pub(crate) fn listing_view(
    result: &agent_core::AgentToolResult,
    options: &coding_agent::RenderResultOptions,
    theme: &Theme,
) -> StyledText {
    let style = if options.is_error {
        theme.error
    } else {
        theme.muted
    };
    let n = if options.expanded {
        usize::MAX
    } else {
        PREVIEW_LINES
    };
    preview(&result.text_content(), n, false, style, theme)
}
