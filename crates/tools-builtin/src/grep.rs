//! `grep`: search file contents in-process (ripgrep's crates), sorted by path,
//! stopping once the match limit is certain.

use std::path::PathBuf;
use std::sync::Arc;

use agent_tool::{
    AgentToolResult, CancellationToken, GREP_MAX_LINE_LENGTH, ToolError, truncate_line,
};
use agent_tool::{
    PathArgument, RenderContext, RenderResultOptions, StyledText, Theme, ToolCallContext,
    ToolDefinition, ToolHints, TypedTool,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::blocking::blocking;
use crate::listing::{Listing, listing_view};
use crate::view::header;
use agent_tool::ops::{FileMatches, FileOps, SearchRequest};
use agent_tool::path::resolve_to_cwd;

/// Arguments of `grep`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepParams {
    /// Regular expression (or literal text with literal: true) to search for.
    pub pattern: String,
    /// Directory or file to search (default: the working directory).
    pub path: Option<String>,
    /// Only search files matching this glob, e.g. '*.rs' or '**/*.test.ts'.
    pub glob: Option<String>,
    /// Match case-insensitively (default: false).
    pub ignore_case: Option<bool>,
    /// Treat the pattern as literal text, not a regular expression (default: false).
    pub literal: Option<bool>,
    /// Lines of context to show before and after each match (default: 0).
    pub context: Option<i64>,
    /// Most matching lines to return (default: 100).
    pub limit: Option<i64>,
}

/// Default match limit.
pub const DEFAULT_GREP_LIMIT: usize = 100;

/// The `grep` tool.
pub struct GrepTool {
    cwd: PathBuf,
    files: Arc<dyn FileOps>,
}

impl GrepTool {
    /// A grep tool for `cwd`.
    pub fn new(cwd: impl Into<PathBuf>, files: Arc<dyn FileOps>) -> Self {
        GrepTool {
            cwd: cwd.into(),
            files,
        }
    }
}

/// A fully resolved search (the operations' [`SearchRequest`]).
pub type GrepRequest = SearchRequest;

/// The longest line grep searches.
pub use agent_tool::ops::MAX_SEARCHED_LINE;

/// Runs a search and formats Pi's output (matches in path order).
pub fn run_grep(
    files: &dyn FileOps,
    request: &GrepRequest,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let info =
        files.metadata(&request.root).map_err(
            |e| match agent_tool::ops::SandboxDenied::message(&e) {
                Some(message) => ToolError::new(message.to_string()),
                None => ToolError::new(format!("Path not found: {}", request.root.display())),
            },
        )?;
    if !info.is_dir && !info.is_file {
        return Err(ToolError::new(format!(
            "Not a regular file: {}",
            request.root.display()
        )));
    }
    let limit = request.limit.max(1);
    let found =
        files.search(request, cancel).map_err(
            |e| match agent_tool::ops::SandboxDenied::message(&e) {
                Some(message) => ToolError::new(message.to_string()),
                None => ToolError::new(e.to_string()),
            },
        )?;
    if cancel.is_cancelled() {
        return Err(ToolError::aborted());
    }
    let unsearched: Vec<String> = found
        .iter()
        .filter(|f| f.line_too_long)
        .map(|f| f.display.clone())
        .collect();
    let kept: Vec<FileMatches> = found.into_iter().filter(|f| !f.lines.is_empty()).collect();
    let per_file = kept;
    let total: usize = per_file.iter().map(|f| f.lines.len()).sum();
    let unsearched_notice = (!unsearched.is_empty()).then(|| {
        format!(
            "Not searched past a line longer than {}: {}",
            agent_tool::format_size(MAX_SEARCHED_LINE as u64),
            unsearched.join(", ")
        )
    });
    if total == 0 {
        return Ok(match unsearched_notice {
            Some(notice) => AgentToolResult::text(format!("No matches found\n\n[{notice}]"))
                .with_details(json!({"linesTooLong": unsearched})),
            None => AgentToolResult::text("No matches found"),
        });
    }
    let limit_reached = total >= limit;

    let mut lines_truncated = false;
    let mut out: Vec<String> = Vec::new();
    // The 500-character cut applies to the line's own text, not to the
    // `path:line: ` prefix.
    let mut emit = |prefix: String, text: &str| {
        let (text, cut) = truncate_line(text, GREP_MAX_LINE_LENGTH);
        lines_truncated |= cut;
        out.push(prefix + &text);
    };
    for fm in &per_file {
        if request.context == 0 {
            for (n, text) in &fm.lines {
                emit(format!("{}:{n}: ", fm.display), text);
            }
            continue;
        }
        let c = request.context as u64;
        match &fm.context {
            Some(texts) => {
                // Never walk past the file's last line, however large `context` is.
                let last_line = texts.keys().next_back().copied().unwrap_or(0);
                for (n, _) in &fm.lines {
                    let from = n.saturating_sub(c).max(1);
                    for k in from..=n.saturating_add(c).min(last_line) {
                        let Some(text) = texts.get(&k) else {
                            continue;
                        };
                        if k == *n {
                            emit(format!("{}:{k}: ", fm.display), text);
                        } else {
                            emit(format!("{}-{k}- ", fm.display), text);
                        }
                    }
                }
            }
            None => {
                for (n, _) in &fm.lines {
                    emit(format!("{}:{n}: ", fm.display), "(unable to read file)");
                }
            }
        }
    }
    let mut listing = Listing::default();
    if limit_reached {
        listing.limit_reached(
            "matchLimitReached",
            limit,
            format!(
                "{limit} matches limit reached. Use limit={} for more, or refine pattern",
                limit * 2
            ),
        );
    }
    let shortened = lines_truncated.then(|| {
        (
            "linesTruncated",
            json!(true),
            format!("Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"),
        )
    });
    let mut result = listing.finish(&out, shortened);
    if let Some(notice) = unsearched_notice {
        append_notice(&mut result, &notice);
        if let Value::Object(map) = &mut result.details {
            map.insert("linesTooLong".into(), json!(unsearched));
        } else {
            result.details = json!({"linesTooLong": unsearched});
        }
    }
    Ok(result)
}

/// Adds `notice` to a result's `[...]` notice block (or starts one).
fn append_notice(result: &mut AgentToolResult, notice: &str) {
    if let Some(agent_tool::ContentBlock::Text(t)) = result.content.first_mut() {
        if t.text.ends_with(']') && t.text.contains("\n\n[") {
            t.text.pop();
            t.text.push_str(&format!(". {notice}]"));
        } else {
            t.text.push_str(&format!("\n\n[{notice}]"));
        }
    }
}

impl TypedTool for GrepTool {
    type Params = GrepParams;

    fn name(&self) -> &str {
        "grep"
    }

    fn label(&self) -> &str {
        "Grep"
    }

    fn description(&self) -> &str {
        "Search file contents for a regular expression (or literal text). Returns matching lines as path:line: text, sorted by path. Honours .gitignore. Output stops after 100 matches or 50KB, whichever comes first; lines longer than 500 characters are shortened."
    }

    async fn execute(
        &self,
        params: GrepParams,
        cx: ToolCallContext,
    ) -> Result<AgentToolResult, ToolError> {
        let ctx = &cx;
        let request = GrepRequest {
            root: resolve_to_cwd(params.path.as_deref().unwrap_or("."), &self.cwd),
            pattern: params.pattern,
            glob: params.glob,
            ignore_case: params.ignore_case.unwrap_or(false),
            literal: params.literal.unwrap_or(false),
            context: params.context.unwrap_or(0).max(0) as usize,
            limit: params.limit.unwrap_or(DEFAULT_GREP_LIMIT as i64).max(1) as usize,
        };
        let files = self.files.clone();
        let cancel = ctx.cancel.clone();
        blocking(&ctx.cancel, move || {
            run_grep(files.as_ref(), &request, &cancel)
        })
        .await
    }
}

impl GrepTool {
    /// The tool with its prompt snippet, guidelines, renderers and
    /// declarations, as a session registers it.
    pub fn definition(self) -> ToolDefinition {
        ToolDefinition::typed(self)
            .with_active_by_default(false)
            .with_prompt_snippet("Search file contents by pattern (honours .gitignore)")
            .with_render_call(render_call)
            .with_render_result(render_result)
            .with_path_argument(PathArgument::read("path"))
            .with_hints(ToolHints::read_only())
    }
}

fn render_call(args: &Value, theme: &Theme, _ctx: &RenderContext) -> Option<StyledText> {
    let pattern = args["pattern"].as_str().unwrap_or("?");
    let mut rest = format!("/{pattern}/");
    if let Some(p) = args["path"].as_str() {
        rest.push_str(&format!(" in {p}"));
    }
    if let Some(g) = args["glob"].as_str() {
        rest.push_str(&format!(" ({g})"));
    }
    Some(header("grep", &rest, theme))
}

fn render_result(
    result: &AgentToolResult,
    options: &RenderResultOptions,
    theme: &Theme,
    _ctx: &RenderContext,
) -> Option<StyledText> {
    Some(listing_view(result, options, theme))
}
