//! `edit`: exact text replacement, several disjoint edits per call.

use std::path::PathBuf;
use std::sync::Arc;

use agent_tool::{AgentToolResult, FileMutationQueue, ToolError};
use agent_tool::{
    PathArgument, RenderContext, RenderResultOptions, StyledLine, StyledText, Theme,
    ToolCallContext, ToolDefinition, ToolHints, TypedTool,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::edit_core::{Edit, apply_edits, diff_outputs, normalize_line_endings};
use agent_tool::ops::{FileOps, WriteConflict};

/// How often an edit is re-applied when another process wrote the file
/// between its read and its write.
const MAX_CONFLICT_RETRIES: usize = 20;

/// Waits before re-applying an edit that lost a race: longer after each
/// loss, and by a varying amount, so two writers retrying in step do not
/// keep colliding (without it, one of two processes editing a file in a
/// tight loop could lose every one of its retries). At most 3 ms per
/// attempt; runs on the blocking thread of the edit.
fn conflict_backoff(attempt: usize) {
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos() % 1_000));
    let micros = (100 * (attempt as u64 + 1)).min(2_000) + jitter;
    std::thread::sleep(std::time::Duration::from_micros(micros));
}

/// The largest file `edit` takes on (64 MiB): it holds the file and a few
/// views of it in memory, so a huge (or sparse) file is refused up front.
pub const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;
use crate::view::{PREVIEW_LINES, header, preview};
use crate::write::run_in_queue;
use agent_tool::path::resolve_to_cwd;

/// One replacement of an `edit` call.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditItem {
    /// Exact text to replace. It must occur exactly once in the original file and must not overlap any other edits[].oldText of this call.
    pub old_text: String,
    /// The text to put in its place.
    pub new_text: String,
}

/// Arguments of `edit`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct EditParams {
    /// Path of the file to edit, relative to the working directory or absolute.
    pub path: String,
    /// One or more replacements. Every oldText is matched against the original file, not against the result of earlier edits. Edits must not overlap or nest; merge changes that touch the same or nearby lines into one edit.
    pub edits: Vec<EditItem>,
}

/// The `edit` tool.
pub struct EditTool {
    cwd: PathBuf,
    files: Arc<dyn FileOps>,
    queue: FileMutationQueue,
}

impl EditTool {
    /// An edit tool for `cwd`, sharing `queue` with the other mutating tools.
    pub fn new(cwd: impl Into<PathBuf>, files: Arc<dyn FileOps>, queue: FileMutationQueue) -> Self {
        EditTool {
            cwd: cwd.into(),
            files,
            queue,
        }
    }
}

/// Accepts `edits` sent as a JSON string, and the legacy single-edit shape
/// (top-level `oldText` / `newText`), appending it to `edits`.
pub fn prepare_edit_arguments(mut args: Value) -> Value {
    let Some(obj) = args.as_object_mut() else {
        return args;
    };
    if let Some(Value::String(s)) = obj.get("edits")
        && let Ok(parsed @ Value::Array(_)) = serde_json::from_str::<Value>(s)
    {
        obj.insert("edits".into(), parsed);
    }
    if let (Some(Value::String(_)), Some(Value::String(_))) =
        (obj.get("oldText"), obj.get("newText"))
    {
        let old = obj.remove("oldText").unwrap_or_default();
        let new = obj.remove("newText").unwrap_or_default();
        let item = json!({"oldText": old, "newText": new});
        match obj.get_mut("edits") {
            Some(Value::Array(list)) => list.push(item),
            _ => {
                obj.insert("edits".into(), Value::Array(vec![item]));
            }
        }
    }
    args
}

fn edit_access_error(e: &std::io::Error, raw: &str) -> ToolError {
    use std::io::ErrorKind::*;
    if let Some(message) = agent_tool::ops::SandboxDenied::message(e) {
        return ToolError::new(format!("Could not edit file: {raw}. {message}"));
    }
    let code = match e.kind() {
        NotFound => "ENOENT".to_string(),
        PermissionDenied => "EACCES".to_string(),
        NotADirectory => "ENOTDIR".to_string(),
        _ => match e.raw_os_error() {
            Some(n) => format!("errno {n}"),
            None => return ToolError::new(format!("Could not edit file: {raw}. {e}.")),
        },
    };
    ToolError::new(format!("Could not edit file: {raw}. Error code: {code}."))
}

impl TypedTool for EditTool {
    type Params = EditParams;

    fn name(&self) -> &str {
        "edit"
    }

    fn label(&self) -> &str {
        "Edit"
    }

    fn description(&self) -> &str {
        "Edit one file by exact text replacement. Each edits[].oldText must match a unique region of the original file, and the regions must not overlap. When two changes touch the same block or nearby lines, make them one edit. Keep oldText short: do not include large unchanged regions just to join distant changes."
    }

    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        Ok(prepare_edit_arguments(args))
    }

    async fn execute(
        &self,
        params: EditParams,
        cx: ToolCallContext,
    ) -> Result<AgentToolResult, ToolError> {
        let ctx = &cx;
        if params.edits.is_empty() {
            return Err(ToolError::new(
                "Edit tool input is invalid. edits must contain at least one replacement.",
            ));
        }
        let path = resolve_to_cwd(&params.path, &self.cwd);
        let files = self.files.clone();
        let raw = params.path.clone();
        let target = path.clone();
        let edits: Vec<Edit> = params
            .edits
            .into_iter()
            .map(|e| Edit {
                old_text: e.old_text,
                new_text: e.new_text,
            })
            .collect();
        let count = edits.len();
        let cancel = ctx.cancel.clone();
        let details = run_in_queue(ctx.get::<FileMutationQueue>().unwrap_or(&self.queue), &path, &ctx.cancel, move || {
            let info = files.metadata(&target).map_err(|e| edit_access_error(&e, &raw))?;
            if info.is_dir {
                return Err(ToolError::new(format!("Could not edit file: {raw}. Path is a directory.")));
            }
            if !info.is_file {
                return Err(ToolError::new(format!("Could not edit file: {raw}. Not a regular file.")));
            }
            if info.len > MAX_EDIT_BYTES {
                return Err(ToolError::new(format!(
                    "Could not edit file: {raw}. The file is {}, more than edit handles ({}); change it with a command (sed, a script) instead.",
                    agent_tool::format_size(info.len),
                    agent_tool::format_size(MAX_EDIT_BYTES)
                )));
            }
            files
                .check_access(&target, true)
                .map_err(|e| edit_access_error(&e, &raw))?;
            // Read, apply, and write only if the file still holds what was
            // read (checked under the file's lock). When another process
            // wrote in between, apply the edits to its result instead.
            let mut attempt = 0;
            let (text, bom_len, applied, outcome) = loop {
                attempt += 1;
                let bytes = files.read_file(&target).map_err(|e| edit_access_error(&e, &raw))?;
                let text = String::from_utf8(bytes).map_err(|_| {
                    ToolError::new(format!(
                        "Could not edit file: {raw}. The file is not valid UTF-8 text; edit would corrupt it."
                    ))
                })?;
                let (bom, body) = match text.strip_prefix('\u{FEFF}') {
                    Some(rest) => ("\u{FEFF}", rest),
                    None => ("", text.as_str()),
                };
                let applied =
                    apply_edits(body, &edits, &raw).map_err(|e| ToolError::new(e.to_string()))?;
                if cancel.is_cancelled() {
                    return Err(ToolError::aborted());
                }
                let written = if bom.is_empty() {
                    files.write_file_if_unchanged(&target, text.as_bytes(), applied.content.as_bytes())
                } else {
                    let mut out = String::with_capacity(bom.len() + applied.content.len());
                    out.push_str(bom);
                    out.push_str(&applied.content);
                    files.write_file_if_unchanged(&target, text.as_bytes(), out.as_bytes())
                };
                match written {
                    Ok(outcome) => break (text, bom.len(), applied, outcome),
                    Err(e) if WriteConflict::is(&e) && attempt < MAX_CONFLICT_RETRIES => {
                        tracing::debug!(path = %target.display(), attempt, "file changed while editing; retrying");
                        conflict_backoff(attempt);
                    }
                    Err(e) if WriteConflict::is(&e) => {
                        return Err(ToolError::new(format!(
                            "Could not edit file: {raw}. It kept changing on disk while the edit was being written (another process is writing it); the edit was not applied. Read the file again and retry."
                        )));
                    }
                    Err(e) => return Err(ToolError::new(format!("Could not write {raw}: {e}"))),
                }
            };
            let body = &text[bom_len..];
            // The diff is over LF text; without CRs the texts are used as they are.
            let old_lf: std::borrow::Cow<'_, str> = if body.contains('\r') {
                normalize_line_endings(body).into()
            } else {
                body.into()
            };
            let new_lf = if applied.content.contains('\r') {
                normalize_line_endings(&applied.content)
            } else {
                applied.content
            };
            let (diff, patch, first) = diff_outputs(&old_lf, &new_lf, &raw);
            Ok(json!({"diff": diff, "patch": patch, "firstChangedLine": first, "write": outcome}))
        })
        .await?;
        Ok(AgentToolResult::text(format!(
            "Successfully replaced {count} block(s) in {}.",
            params.path
        ))
        .with_details(details))
    }
}

impl EditTool {
    /// The tool with its prompt snippet, guidelines, renderers and
    /// declarations, as a session registers it.
    pub fn definition(self) -> ToolDefinition {
        ToolDefinition::typed(self)
            .with_prompt_snippet(
                "Change files by exact text replacement, several separate edits per call if needed",
            )
            .with_guidelines(guidelines())
            .with_render_call(render_call)
            .with_render_result(render_result)
            .with_path_argument(PathArgument::write("path"))
            .with_hints(ToolHints::writes(true))
    }
}

fn guidelines() -> Vec<String> {
    vec![
        "Use edit for targeted changes; edits[].oldText must match the file exactly".to_string(),
        "To change several places in one file, send one edit call with several entries in edits[] rather than several calls".to_string(),
        "Every edits[].oldText is matched against the original file, not the result of earlier edits; never send overlapping or nested edits, merge nearby changes into one".to_string(),
        "Keep each edits[].oldText as short as it can be while still unique in the file".to_string(),
    ]
}

fn render_call(args: &Value, theme: &Theme, _ctx: &RenderContext) -> Option<StyledText> {
    let path = args["path"].as_str().unwrap_or("?");
    let n = args["edits"].as_array().map(|a| a.len()).unwrap_or(1);
    let suffix = if n == 1 {
        String::new()
    } else {
        format!(" ({n} edits)")
    };
    Some(header("edit", &format!("{path}{suffix}"), theme))
}

fn render_result(
    result: &AgentToolResult,
    options: &RenderResultOptions,
    theme: &Theme,
    _ctx: &RenderContext,
) -> Option<StyledText> {
    if options.is_error {
        return Some(StyledText::from_text(&result.text_content(), theme.error));
    }
    let Some(diff) = result.details["diff"].as_str() else {
        return Some(preview(
            &result.text_content(),
            PREVIEW_LINES,
            false,
            theme.muted,
            theme,
        ));
    };
    let mut out = StyledText::new();
    for line in diff.lines() {
        let style = match line.as_bytes().first() {
            Some(b'+') => theme.diff_added,
            Some(b'-') => theme.diff_removed,
            _ => theme.diff_context,
        };
        out.push(StyledLine::styled(line, style));
    }
    Some(out)
}
