//! `find`: file names by glob, in-process, sorted.

use std::path::PathBuf;
use std::sync::Arc;

use agent_tool::{AgentToolResult, ToolError};
use agent_tool::{
    PathArgument, RenderContext, RenderResultOptions, StyledText, Theme, ToolCallContext,
    ToolDefinition, ToolHints, TypedTool,
};
use serde::Deserialize;
use serde_json::Value;

use crate::blocking::blocking;
use crate::listing::{Listing, listing_view};
use crate::smallest::Smallest;
use crate::view::header;
use agent_tool::ops::FileOps;
use agent_tool::ops::{WalkEntry, WalkOptions};
use agent_tool::path::{display_relative, resolve_to_cwd};

/// Arguments of `find`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct FindParams {
    /// Glob to match, e.g. '*.rs', '**/*.json' or 'src/**/*.test.ts'. Without a '/', it matches file names at any depth.
    pub pattern: String,
    /// Directory to search in (default: the working directory).
    pub path: Option<String>,
    /// Most results to return (default: 1000).
    pub limit: Option<i64>,
}

/// Default result limit.
pub const DEFAULT_FIND_LIMIT: usize = 1000;

/// The `find` tool.
pub struct FindTool {
    cwd: PathBuf,
    files: Arc<dyn FileOps>,
}

impl FindTool {
    /// A find tool for `cwd`.
    pub fn new(cwd: impl Into<PathBuf>, files: Arc<dyn FileOps>) -> Self {
        FindTool {
            cwd: cwd.into(),
            files,
        }
    }
}

/// Compiles a find pattern: without `/` it matches the file name; with `/` it
/// matches the path relative to the search root, with `**/` in front unless it
/// starts with `/` or `**/` or is `**`.
pub fn compile_find_pattern(pattern: &str) -> Result<(globset::GlobSet, bool), ToolError> {
    let (glob, full_path) = if pattern.contains('/') {
        let p = if let Some(anchored) = pattern.strip_prefix('/') {
            anchored.to_string()
        } else if pattern.starts_with("**/") || pattern == "**" {
            pattern.to_string()
        } else {
            format!("**/{pattern}")
        };
        (p, true)
    } else {
        (pattern.to_string(), false)
    };
    let invalid = |e: globset::Error| {
        ToolError::new(format!("Invalid glob pattern \"{pattern}\": {}", e.kind()))
    };
    let one = globset::GlobBuilder::new(&glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(invalid)?;
    // A set of one: a pattern too large to compile is an error for the
    // model, where `compile_matcher` would panic.
    let matcher = globset::GlobSetBuilder::new()
        .add(one)
        .build()
        .map_err(invalid)?;
    Ok((matcher, full_path))
}

impl TypedTool for FindTool {
    type Params = FindParams;

    fn name(&self) -> &str {
        "find"
    }

    fn label(&self) -> &str {
        "Find"
    }

    fn description(&self) -> &str {
        "Find files and directories by glob pattern. Returns paths relative to the search directory, sorted, directories ending in '/'. Honours .gitignore. Output stops after 1000 results or 50KB, whichever comes first."
    }

    async fn execute(
        &self,
        params: FindParams,
        cx: ToolCallContext,
    ) -> Result<AgentToolResult, ToolError> {
        let ctx = &cx;
        let limit = match params.limit {
            Some(l) if l < 1 => {
                return Err(ToolError::new(format!(
                    "Invalid limit {l}: limit must be 1 or more"
                )));
            }
            Some(l) => l as usize,
            None => DEFAULT_FIND_LIMIT,
        };
        let root = resolve_to_cwd(params.path.as_deref().unwrap_or("."), &self.cwd);
        let files = self.files.clone();
        let cancel = ctx.cancel.clone();
        blocking(&ctx.cancel, move || {
            let info =
                files.metadata(&root).map_err(
                    |e| match agent_tool::ops::SandboxDenied::message(&e) {
                        Some(message) => ToolError::new(message.to_string()),
                        None => ToolError::new(format!("Path not found: {}", root.display())),
                    },
                )?;
            if !info.is_dir {
                return Err(ToolError::new(format!(
                    "Not a directory: {}",
                    root.display()
                )));
            }
            let (matcher, full_path) = compile_find_pattern(&params.pattern)?;
            // Only the first `limit` paths in path order are kept, so a
            // tree of millions of matches costs memory for `limit` of them.
            let found = std::sync::Mutex::new(Smallest::new(limit));
            let options = WalkOptions {
                root: &root,
                glob: None,
                ordered: false,
            };
            files
                .walk(&options, &|entry: WalkEntry| {
                    if cancel.is_cancelled() {
                        return false;
                    }
                    let wanted = if full_path {
                        entry
                            .path
                            .strip_prefix(&root)
                            .is_ok_and(|rel| matcher.is_match(rel))
                    } else {
                        entry.path.file_name().is_some_and(|n| matcher.is_match(n))
                    };
                    if wanted && let Ok(mut found) = found.lock() {
                        found.offer((entry.path, entry.is_dir));
                    }
                    true
                })
                .map_err(|e| ToolError::new(e.to_string()))?;
            let found = found
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if cancel.is_cancelled() {
                return Err(ToolError::aborted());
            }
            let matched = found.offered();
            // Path order: directories depth first, names sorted (as grep reports).
            let paths: Vec<String> = found
                .into_sorted()
                .into_iter()
                .map(|(path, is_dir)| {
                    let rel = display_relative(&path, &root);
                    if is_dir { format!("{rel}/") } else { rel }
                })
                .collect();
            if paths.is_empty() {
                return Ok(AgentToolResult::text("No files found matching pattern"));
            }
            let limit_reached = matched >= limit;
            let mut listing = Listing::default();
            if limit_reached {
                listing.limit_reached(
                    "resultLimitReached",
                    limit,
                    format!(
                        "{limit} results limit reached. Use limit={} for more, or refine pattern",
                        limit * 2
                    ),
                );
            }
            Ok(listing.finish(&paths, None))
        })
        .await
    }
}

impl FindTool {
    /// The tool with its prompt snippet, guidelines, renderers and
    /// declarations, as a session registers it.
    pub fn definition(self) -> ToolDefinition {
        ToolDefinition::typed(self)
            .with_active_by_default(false)
            .with_prompt_snippet("Find files by glob pattern (honours .gitignore)")
            .with_render_call(render_call)
            .with_render_result(render_result)
            .with_path_argument(PathArgument::read("path"))
            .with_hints(ToolHints::read_only())
    }
}

fn render_call(args: &Value, theme: &Theme, _ctx: &RenderContext) -> Option<StyledText> {
    let pattern = args["pattern"].as_str().unwrap_or("?");
    let rest = match args["path"].as_str() {
        Some(p) => format!("{pattern} in {p}"),
        None => pattern.to_string(),
    };
    Some(header("find", &rest, theme))
}

fn render_result(
    result: &AgentToolResult,
    options: &RenderResultOptions,
    theme: &Theme,
    _ctx: &RenderContext,
) -> Option<StyledText> {
    Some(listing_view(result, options, theme))
}

#[cfg(test)]
mod pattern_tests {
    #[test]
    fn a_pattern_too_large_to_compile_is_an_error_not_a_panic() {
        let huge = "[a-z][0-9]{x,y,z}".repeat(200_000);
        let result = std::panic::catch_unwind(|| super::compile_find_pattern(&huge).map(|_| ()));
        let outcome = result.expect("no panic");
        assert!(outcome.is_err());
        assert!(super::compile_find_pattern("**/*.rs").is_ok());
    }
}
