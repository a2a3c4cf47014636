//! What a tool says to the model's system prompt, carried over MCP in the
//! tool's `_meta`: so a tool served by one agent (or an extension) keeps its
//! prompt snippet, guidelines and scheduling when another agent mounts it.
//!
//! | key | value | our field |
//! |---|---|---|
//! | [`META_PROMPT_SNIPPET`] | string | `ToolDefinition::prompt_snippet` (the tool's line under "Available tools") |
//! | [`META_PROMPT_GUIDELINES`] | array of strings | `ToolDefinition::prompt_guidelines` |
//! | [`META_EXECUTION_MODE`] | `"sequential"` or `"parallel"` | `ToolMeta::execution_mode` |
//!
//! Values of another type are ignored.

use agent_core::{ExecutionMode, ToolMeta};
use agent_tool::ToolDefinition;
use serde_json::{Map, Value};

/// `_meta` key of the prompt snippet.
pub const META_PROMPT_SNIPPET: &str = "coding-agent/promptSnippet";
/// `_meta` key of the prompt guidelines.
pub const META_PROMPT_GUIDELINES: &str = "coding-agent/promptGuidelines";
/// `_meta` key of the execution mode.
pub const META_EXECUTION_MODE: &str = "coding-agent/executionMode";

/// The `_meta` entries for `definition` (empty when it has nothing to say).
///
/// ```
/// use agent_mcp::{META_PROMPT_SNIPPET, prompt_meta};
/// let def = agent_tool::tool("greet")
///     .description("Greets.")
///     .prompt_snippet("Greet people")
///     .execute(|_: serde_json::Value, _cx| async { Ok(agent_core::AgentToolResult::text("hi")) });
/// assert_eq!(prompt_meta(&def)[META_PROMPT_SNIPPET], "Greet people");
/// ```
pub fn prompt_meta(definition: &ToolDefinition) -> Map<String, Value> {
    let mut meta = Map::new();
    if let Some(snippet) = definition.prompt_snippet() {
        meta.insert(META_PROMPT_SNIPPET.into(), Value::from(snippet));
    }
    if !definition.prompt_guidelines().is_empty() {
        meta.insert(
            META_PROMPT_GUIDELINES.into(),
            Value::from(definition.prompt_guidelines().to_vec()),
        );
    }
    if definition.tool().execution_mode() == Some(ExecutionMode::Sequential) {
        meta.insert(META_EXECUTION_MODE.into(), Value::from("sequential"));
    }
    meta
}

/// Applies the `_meta` entries to a tool being built from an MCP listing.
pub(crate) fn apply_to_meta(meta: ToolMeta, entries: Option<&Map<String, Value>>) -> ToolMeta {
    match entries
        .and_then(|m| m.get(META_EXECUTION_MODE))
        .and_then(Value::as_str)
    {
        Some("sequential") => meta.sequential(),
        _ => meta,
    }
}

/// Applies the `_meta` entries to the finished definition.
pub(crate) fn apply_to_definition(
    mut definition: ToolDefinition,
    entries: Option<&Map<String, Value>>,
) -> ToolDefinition {
    let Some(entries) = entries else {
        return definition;
    };
    if let Some(snippet) = entries.get(META_PROMPT_SNIPPET).and_then(Value::as_str) {
        definition = definition.with_prompt_snippet(snippet);
    }
    if let Some(lines) = entries
        .get(META_PROMPT_GUIDELINES)
        .and_then(Value::as_array)
    {
        definition = definition.with_guidelines(
            lines
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect::<Vec<_>>(),
        );
    }
    definition
}
