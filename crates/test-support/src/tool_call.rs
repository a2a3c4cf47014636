//! Running a built-in tool the way the loop does: prepare, validate, execute.

use std::path::Path;
use std::sync::Arc;

use agent_ai::{ToolCall, validate_tool_arguments};
use agent_core::{AgentTool, AgentToolResult, CancellationToken, ToolCallContext, ToolUpdateSink};
use agent_tool::{FileMutationQueue, ToolDefinition, ToolSettings, WorkingDir};
use serde_json::Value;

/// Outcome of one call.
pub struct Outcome {
    /// The result's text.
    pub text: String,
    /// The result (an error's message as an error result).
    pub result: AgentToolResult,
    /// Whether preparing, validating or running the call failed.
    pub is_error: bool,
}

/// Calls `tool` in `cwd` with `settings`, as the loop would, with the
/// extensions a session gives its tools: the working directory, the
/// settings and a fresh mutation queue.
pub async fn call_with(
    tool: &ToolDefinition,
    cwd: &Path,
    args: Value,
    settings: ToolSettings,
    cancel: CancellationToken,
    updates: ToolUpdateSink,
) -> Outcome {
    let schema = tool.tool().to_tool();
    let prepared = match tool.prepare_arguments(args) {
        Ok(a) => a,
        Err(e) => return failed(e.to_string()),
    };
    let args = match validate_tool_arguments(&schema, &prepared) {
        Ok(a) => a,
        Err(e) => return failed(e.to_string()),
    };
    let cx = ToolCallContext {
        call_id: "call".into(),
        cancel,
        updates,
        extensions: {
            let mut extensions = agent_core::Extensions::new();
            extensions.insert(WorkingDir::new(cwd));
            extensions.insert(settings);
            extensions.insert(FileMutationQueue::new());
            extensions
        },
    };
    match tool.execute(args, cx).await {
        Ok(result) => Outcome {
            text: result.text_content(),
            result,
            is_error: false,
        },
        Err(e) => failed(e.to_string()),
    }
}

fn failed(message: String) -> Outcome {
    Outcome {
        text: message.clone(),
        result: AgentToolResult::error(message),
        is_error: true,
    }
}

/// Runs `call` of `tool` the way the MCP server and `coding-agent tool` do
/// (`agent_core::execute_tool_call_with`: lookup, preparation, validation,
/// execution), with no hook, no extensions and updates dropped; the result
/// and whether it is an error.
pub async fn execute_one(
    tool: &Arc<dyn AgentTool>,
    call: &ToolCall,
    cancel: &CancellationToken,
) -> (AgentToolResult, bool) {
    agent_core::execute_tool_call_with(
        std::slice::from_ref(tool),
        call,
        cancel,
        None,
        &agent_core::Extensions::default(),
        |_| {},
    )
    .await
}

/// Calls the built-in `name` in `cwd` with default settings.
///
/// # Panics
/// When no built-in has that name.
pub async fn call(name: &str, cwd: &Path, args: Value) -> Outcome {
    let tool = tools_builtin::tool_by_name(name, cwd).expect("built-in");
    call_with(
        &tool,
        cwd,
        args,
        ToolSettings::default(),
        CancellationToken::new(),
        ToolUpdateSink::noop(),
    )
    .await
}
