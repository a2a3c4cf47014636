//! `ls`: list one directory, sorted the way people read names.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::Arc;

use agent_tool::{AgentToolResult, ToolError};
use agent_tool::{
    PathArgument, RenderContext, RenderResultOptions, StyledText, Theme, ToolCallContext,
    ToolDefinition, ToolHints, TypedTool,
};
use serde::Deserialize;
use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

use crate::blocking::blocking;
use crate::listing::{Listing, listing_view};
use crate::smallest::Smallest;
use crate::view::header;
use agent_tool::ops::FileOps;
use agent_tool::path::resolve_to_cwd;

/// Arguments of `ls`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct LsParams {
    /// Directory to list (default: the working directory).
    pub path: Option<String>,
    /// Most entries to return (default: 500).
    pub limit: Option<i64>,
}

/// Default entry limit.
pub const DEFAULT_LS_LIMIT: usize = 500;

/// The `ls` tool.
pub struct LsTool {
    cwd: PathBuf,
    files: Arc<dyn FileOps>,
}

impl LsTool {
    /// An ls tool for `cwd`.
    pub fn new(cwd: impl Into<PathBuf>, files: Arc<dyn FileOps>) -> Self {
        LsTool {
            cwd: cwd.into(),
            files,
        }
    }
}

/// ASCII spaces, punctuation and symbols in ICU root collation order.
const ICU_ASCII_SYMBOLS: &str = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";

/// Collation key close to ICU's root order on lower-cased names: spaces,
/// punctuation and symbols (in ICU's order), then digits, then letters; accents
/// sort next to their base letter.
fn collation_key(name: &str) -> Vec<(u8, u32)> {
    name.to_lowercase()
        .nfd()
        .filter(|c| unicode_normalization::char::canonical_combining_class(*c) == 0)
        .map(|c| {
            if c.is_alphabetic() {
                (3, c as u32)
            } else if c.is_numeric() {
                (2, c as u32)
            } else if let Some(rank) = ICU_ASCII_SYMBOLS.find(c) {
                (0, rank as u32)
            } else {
                (1, c as u32)
            }
        })
        .collect()
}

/// Orders names for display (punctuation, then digits, then letters; accents
/// next to their base letter), ties broken by the raw name.
pub fn compare_names(a: &str, b: &str) -> Ordering {
    collation_key(a)
        .cmp(&collation_key(b))
        .then_with(|| a.to_lowercase().cmp(&b.to_lowercase()))
        .then_with(|| a.cmp(b))
}

impl TypedTool for LsTool {
    type Params = LsParams;

    fn name(&self) -> &str {
        "ls"
    }

    fn label(&self) -> &str {
        "List"
    }

    fn description(&self) -> &str {
        "List a directory's entries in alphabetical order, dotfiles included, with '/' after directory names. Output stops after 500 entries or 50KB, whichever comes first."
    }

    async fn execute(
        &self,
        params: LsParams,
        cx: ToolCallContext,
    ) -> Result<AgentToolResult, ToolError> {
        let ctx = &cx;
        let limit = match params.limit {
            Some(l) if l < 0 => {
                return Err(ToolError::new(format!(
                    "Invalid limit {l}: limit must be 0 or more"
                )));
            }
            Some(l) => l as usize,
            None => DEFAULT_LS_LIMIT,
        };
        let dir = resolve_to_cwd(params.path.as_deref().unwrap_or("."), &self.cwd);
        let files = self.files.clone();
        blocking(&ctx.cancel, move || {
            let info = files.metadata(&dir).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    ToolError::new(format!("Path not found: {}", dir.display()))
                }
                _ => ToolError::new(format!("Cannot read directory: {e}")),
            })?;
            if !info.is_dir {
                return Err(ToolError::new(format!(
                    "Not a directory: {}",
                    dir.display()
                )));
            }
            let entries = files
                .read_dir(&dir)
                .map_err(|e| ToolError::new(format!("Cannot read directory: {e}")))?;
            // Only the first `limit` names in reading order are kept with
            // their sort keys: a directory of millions of names costs memory
            // for `limit` of them.
            let mut first = Smallest::new(limit);
            for entry in entries {
                let Some(is_dir) = entry.is_dir else {
                    continue;
                };
                let key = (collation_key(&entry.name), entry.name.to_lowercase());
                first.offer((key, entry.name, is_dir));
            }
            let limit_reached = first.offered() > limit;
            let lines: Vec<String> = first
                .into_sorted()
                .into_iter()
                .map(|(_, name, is_dir)| if is_dir { format!("{name}/") } else { name })
                .collect();
            if lines.is_empty() {
                return Ok(AgentToolResult::text("(empty directory)"));
            }
            let mut listing = Listing::default();
            if limit_reached {
                listing.limit_reached(
                    "entryLimitReached",
                    limit,
                    format!(
                        "{limit} entries limit reached. Use limit={} for more",
                        limit * 2
                    ),
                );
            }
            Ok(listing.finish(&lines, None))
        })
        .await
    }
}

impl LsTool {
    /// The tool with its prompt snippet, guidelines, renderers and
    /// declarations, as a session registers it.
    pub fn definition(self) -> ToolDefinition {
        ToolDefinition::typed(self)
            .with_active_by_default(false)
            .with_prompt_snippet("List the entries of a directory")
            .with_render_call(render_call)
            .with_render_result(render_result)
            .with_path_argument(PathArgument::read("path"))
            .with_hints(ToolHints::read_only())
    }
}

fn render_call(args: &Value, theme: &Theme, _ctx: &RenderContext) -> Option<StyledText> {
    Some(header("ls", args["path"].as_str().unwrap_or("."), theme))
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
mod tests {
    use super::*;

    #[test]
    fn collation_order() {
        let mut names = vec![
            "b.txt", "A.txt", "_x", "10", "2", "é", "e", "f", ".hidden", "Zed", "a-b", "a_b", "éa",
            "eb",
        ];
        names.sort_by(|a, b| compare_names(a, b));
        assert_eq!(
            names,
            [
                "_x", ".hidden", "10", "2", "a_b", "a-b", "A.txt", "b.txt", "e", "é", "éa", "eb",
                "f", "Zed"
            ]
        );
    }
}
