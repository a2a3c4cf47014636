//! `write`: create or replace a file atomically.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_tool::{AgentToolResult, FileMutationQueue, ToolError};
use agent_tool::{
    PathArgument, RenderContext, RenderResultOptions, StyledText, Theme, ToolCallContext,
    ToolDefinition, ToolHints, TypedTool,
};
use serde::Deserialize;
use serde_json::Value;

use crate::blocking::describe_io_error;
use crate::view::{PREVIEW_LINES, header, preview};
use agent_tool::ops::FileOps;
use agent_tool::path::resolve_to_cwd;

/// Arguments of `write`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct WriteParams {
    /// Path of the file to write, relative to the working directory or absolute.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// The `write` tool.
pub struct WriteTool {
    cwd: PathBuf,
    files: Arc<dyn FileOps>,
    queue: FileMutationQueue,
}

impl WriteTool {
    /// A write tool for `cwd`, sharing `queue` with the other mutating tools.
    pub fn new(cwd: impl Into<PathBuf>, files: Arc<dyn FileOps>, queue: FileMutationQueue) -> Self {
        WriteTool {
            cwd: cwd.into(),
            files,
            queue,
        }
    }
}

/// Runs blocking file work inside the mutation queue. The work is awaited to
/// the end even when the call is cancelled, so the queue is never released
/// while a file-system call is still in flight.
pub(crate) async fn run_in_queue<T, F>(
    queue: &FileMutationQueue,
    path: &Path,
    cancel: &agent_tool::CancellationToken,
    work: F,
) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    let joined = queue
        .run(path, async {
            if cancel.is_cancelled() {
                return Err(ToolError::aborted());
            }
            match tokio::task::spawn_blocking(work).await {
                Ok(r) => r,
                Err(e) => Err(ToolError::new(format!(
                    "internal error: tool task failed: {e}"
                ))),
            }
        })
        .await;
    match joined {
        Ok(r) => r,
        Err(e) => Err(ToolError::new(describe_io_error(&e, path))),
    }
}

impl TypedTool for WriteTool {
    type Params = WriteParams;

    fn name(&self) -> &str {
        "write"
    }

    fn label(&self) -> &str {
        "Write"
    }

    fn description(&self) -> &str {
        "Write a file with the given content: creates it if missing (with any missing parent directories) and replaces it completely if it exists."
    }

    async fn execute(
        &self,
        params: WriteParams,
        cx: ToolCallContext,
    ) -> Result<AgentToolResult, ToolError> {
        let ctx = &cx;
        let path = resolve_to_cwd(&params.path, &self.cwd);
        let files = self.files.clone();
        let target = path.clone();
        let bytes = params.content.len();
        let outcome = run_in_queue(
            ctx.get::<FileMutationQueue>().unwrap_or(&self.queue),
            &path,
            &ctx.cancel,
            move || {
                if let Some(parent) = target.parent() {
                    files.create_dir_all(parent).map_err(|e| {
                        ToolError::new(format!(
                            "Cannot create the parent directories of {}: {}",
                            target.display(),
                            describe_io_error(&e, parent)
                        ))
                    })?;
                }
                files
                    .write_file(&target, params.content.as_bytes())
                    .map_err(|e| ToolError::new(describe_io_error(&e, &target)))
            },
        )
        .await?;
        Ok(AgentToolResult::text(format!(
            "Successfully wrote {bytes} bytes to {}",
            params.path
        ))
        .with_details(serde_json::json!({ "write": outcome })))
    }
}

impl WriteTool {
    /// The tool with its prompt snippet, guidelines, renderers and
    /// declarations, as a session registers it.
    pub fn definition(self) -> ToolDefinition {
        ToolDefinition::typed(self)
            .with_prompt_snippet("Create new files or rewrite files completely")
            .with_guidelines(guidelines())
            .with_render_call(render_call)
            .with_render_result(render_result)
            .with_path_argument(PathArgument::write("path"))
            .with_hints(ToolHints::writes(true))
    }
}

fn guidelines() -> Vec<String> {
    vec![
        "Use write only for new files or full rewrites; use edit to change part of a file"
            .to_string(),
    ]
}

fn render_call(args: &Value, theme: &Theme, _ctx: &RenderContext) -> Option<StyledText> {
    let path = args["path"].as_str().unwrap_or("?");
    let content = args["content"].as_str().unwrap_or("");
    let mut text = header("write", path, theme);
    let mut body = preview(content, PREVIEW_LINES, false, theme.muted, theme);
    for line in &mut body.lines {
        line.spans.insert(0, agent_tool::Span::default());
        line.spans[0].text = "  ".to_string();
    }
    text.extend(body);
    Some(text)
}

fn render_result(
    result: &AgentToolResult,
    options: &RenderResultOptions,
    theme: &Theme,
    _ctx: &RenderContext,
) -> Option<StyledText> {
    let style = if options.is_error {
        theme.error
    } else {
        theme.success
    };
    Some(StyledText::from_text(&result.text_content(), style))
}
