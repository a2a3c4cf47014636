//! The output grep, find and ls share: lines cut at 50 KB, Pi's notices in
//! one `[...]` block, `details`, and the result view.

use agent_tool::{StyledText, Theme};

use crate::view::{PREVIEW_LINES, preview};

/// Pi's notice block: `\n\n[a. b. c]`, or nothing when there are no notices.
pub(crate) fn notice_block(notices: &[String]) -> String {
    if notices.is_empty() {
        String::new()
    } else {
        format!("\n\n[{}]", notices.join(". "))
    }
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
    ) -> agent_tool::AgentToolResult {
        use agent_tool::{DEFAULT_MAX_BYTES, TruncationOptions, format_size, truncate_head};
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
        agent_tool::AgentToolResult::text(format!("{}{}", t.content, notice_block(&self.notices)))
            .with_details(details)
    }
}

/// The result view grep, find and ls share: a muted preview of the lines.
pub(crate) fn listing_view(
    result: &agent_tool::AgentToolResult,
    options: &agent_tool::RenderResultOptions,
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
