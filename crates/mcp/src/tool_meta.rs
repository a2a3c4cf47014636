//! What a tool declares beyond its MCP description, carried in the tool's
//! `_meta`: so a tool served by one agent (or an extension) keeps its prompt
//! integration, scheduling and the arguments permission rules judge when
//! another agent mounts it.
//!
//! | key | value | our field |
//! |---|---|---|
//! | [`META_PROMPT_SNIPPET`] | string | `ToolDefinition::prompt_snippet` (the tool's line under "Available tools") |
//! | [`META_PROMPT_GUIDELINES`] | array of strings | `ToolDefinition::prompt_guidelines` |
//! | [`META_EXECUTION_MODE`] | `"sequential"` or `"parallel"` | `ToolMeta::execution_mode` |
//! | [`META_PATH_ARGUMENTS`] | array: a name (a path the tool reads) or `{"name", "access": "read"\|"write"}` | `ToolDefinition::path_arguments` |
//! | [`META_COMMAND_ARGUMENT`] | string | `ToolDefinition::command_argument` |
//! | [`META_CONSTRAINED_SAMPLING`] | `"prefer"` or `"require"` | `ToolMeta::constrained_sampling` |
//! | [`META_RENDER_SHELL`] | `"self"` or `"default"` | `ToolDefinition::render_shell` |
//!
//! Values of another type are ignored, and so is an array entry that is
//! neither a name nor such an object.

use agent_core::{ConstrainedSampling, ExecutionMode, StrictMode, ToolMeta};
use agent_tool::{PathAccess, PathArgument, RenderShell, ToolDefinition};
use serde_json::{Map, Value, json};

/// `_meta` key of the prompt snippet.
pub const META_PROMPT_SNIPPET: &str = "coding-agent/promptSnippet";
/// `_meta` key of the prompt guidelines.
pub const META_PROMPT_GUIDELINES: &str = "coding-agent/promptGuidelines";
/// `_meta` key of the execution mode.
pub const META_EXECUTION_MODE: &str = "coding-agent/executionMode";
/// `_meta` key of the arguments that hold paths, so `Read(...)` and
/// `Edit(...)` permission rules judge them.
pub const META_PATH_ARGUMENTS: &str = "coding-agent/pathArguments";
/// `_meta` key of the argument that holds a shell command line, so
/// `Bash(...)` permission rules judge it.
pub const META_COMMAND_ARGUMENT: &str = "coding-agent/commandArgument";
/// `_meta` key asking the provider to constrain the model's arguments to
/// the tool's schema.
pub const META_CONSTRAINED_SAMPLING: &str = "coding-agent/constrainedSampling";
/// `_meta` key saying who draws the frame around the tool's output.
pub const META_RENDER_SHELL: &str = "coding-agent/renderShell";

/// The `_meta` entries for `definition` (empty when it has nothing to say).
///
/// ```
/// use agent_mcp::{META_PATH_ARGUMENTS, META_PROMPT_SNIPPET, tool_meta};
/// use agent_tool::PathArgument;
/// let def = agent_tool::tool("greet")
///     .description("Greets.")
///     .prompt_snippet("Greet people")
///     .execute(|_: serde_json::Value, _cx| async { Ok(agent_core::AgentToolResult::text("hi")) })
///     .with_path_argument(PathArgument::read("file"))
///     .with_path_argument(PathArgument::write("out"));
/// let meta = tool_meta(&def);
/// assert_eq!(meta[META_PROMPT_SNIPPET], "Greet people");
/// assert_eq!(meta[META_PATH_ARGUMENTS], serde_json::json!(["file", {"name": "out", "access": "write"}]));
/// ```
pub fn tool_meta(definition: &ToolDefinition) -> Map<String, Value> {
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
    if !definition.path_arguments().is_empty() {
        let paths = definition
            .path_arguments()
            .iter()
            .map(|p| match p.access {
                PathAccess::Write => json!({"name": p.name, "access": "write"}),
                // A bare name is a path the tool reads, the form a person
                // writes by hand.
                _ => Value::from(p.name.clone()),
            })
            .collect();
        meta.insert(META_PATH_ARGUMENTS.into(), Value::Array(paths));
    }
    if let Some(command) = definition.command_argument() {
        meta.insert(META_COMMAND_ARGUMENT.into(), Value::from(command));
    }
    if let Some(constrained) = definition.constrained_sampling() {
        let strict = match constrained.strict() {
            StrictMode::Require => "require",
            StrictMode::Prefer => "prefer",
        };
        meta.insert(META_CONSTRAINED_SAMPLING.into(), Value::from(strict));
    }
    if definition.render_shell() == RenderShell::SelfDrawn {
        meta.insert(META_RENDER_SHELL.into(), Value::from("self"));
    }
    meta
}

/// Applies the `_meta` entries to a tool being built from an MCP listing.
pub(crate) fn apply_to_meta(mut meta: ToolMeta, entries: Option<&Map<String, Value>>) -> ToolMeta {
    let Some(entries) = entries else {
        return meta;
    };
    if entries.get(META_EXECUTION_MODE).and_then(Value::as_str) == Some("sequential") {
        meta = meta.sequential();
    }
    match entries
        .get(META_CONSTRAINED_SAMPLING)
        .and_then(Value::as_str)
    {
        Some("prefer") => meta = meta.with_constrained_sampling(ConstrainedSampling::prefer()),
        Some("require") => meta = meta.with_constrained_sampling(ConstrainedSampling::require()),
        _ => {}
    }
    meta
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
    for argument in entries
        .get(META_PATH_ARGUMENTS)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(path_argument)
    {
        definition = definition.with_path_argument(argument);
    }
    if let Some(command) = entries.get(META_COMMAND_ARGUMENT).and_then(Value::as_str) {
        definition = definition.with_command_argument(command);
    }
    match entries.get(META_RENDER_SHELL).and_then(Value::as_str) {
        Some("self") => definition = definition.with_render_shell(RenderShell::SelfDrawn),
        Some("default") => definition = definition.with_render_shell(RenderShell::Default),
        _ => {}
    }
    definition
}

/// One entry of [`META_PATH_ARGUMENTS`]: a name (read), or an object naming
/// its access. An unknown access is taken as a write: the rules that cover
/// writes (`Edit(...)`, and `Read(...)` deny and ask rules) are the wider
/// set, so a misspelt declaration never covers less.
fn path_argument(entry: &Value) -> Option<PathArgument> {
    match entry {
        Value::String(name) if !name.is_empty() => Some(PathArgument::read(name.clone())),
        Value::Object(map) => {
            let name = map.get("name").and_then(Value::as_str)?;
            if name.is_empty() {
                return None;
            }
            Some(match map.get("access").and_then(Value::as_str) {
                None | Some("read") => PathArgument::read(name),
                Some(_) => PathArgument::write(name),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every built-in's declarations survive the trip through `_meta`.
    #[test]
    fn the_built_ins_declarations_travel_through_meta() {
        let dir = std::env::temp_dir();
        for served in tools_builtin::all_tools(&dir) {
            let meta = tool_meta(&served);
            let bare = agent_tool::tool(served.name())
                .execute(|_: Value, _cx| async { Ok(agent_core::AgentToolResult::text("")) });
            let mounted = apply_to_definition(bare, Some(&meta));
            assert_eq!(
                mounted.path_arguments(),
                served.path_arguments(),
                "{}",
                served.name()
            );
            assert_eq!(
                mounted.command_argument(),
                served.command_argument(),
                "{}",
                served.name()
            );
            assert_eq!(
                mounted.render_shell(),
                served.render_shell(),
                "{}",
                served.name()
            );
            assert_eq!(
                mounted.prompt_snippet(),
                served.prompt_snippet(),
                "{}",
                served.name()
            );
        }
    }

    #[test]
    fn path_arguments_take_names_and_objects_and_skip_the_rest() {
        let entries = json!({META_PATH_ARGUMENTS: [
            "file", {"name": "out", "access": "write"}, {"name": "odd", "access": "wrte"},
            {"name": "in", "access": "read"}, 3, "", {"access": "read"}
        ], META_COMMAND_ARGUMENT: "line", META_RENDER_SHELL: "self"});
        let bare = agent_tool::tool("t")
            .execute(|_: Value, _cx| async { Ok(agent_core::AgentToolResult::text("")) });
        let def = apply_to_definition(bare, entries.as_object());
        assert_eq!(
            def.path_arguments(),
            [
                PathArgument::read("file"),
                PathArgument::write("out"),
                PathArgument::write("odd"),
                PathArgument::read("in"),
            ]
        );
        assert_eq!(def.command_argument(), Some("line"));
        assert_eq!(def.render_shell(), RenderShell::SelfDrawn);
        let meta = apply_to_meta(
            ToolMeta::new("t", ""),
            json!({META_CONSTRAINED_SAMPLING: "require"}).as_object(),
        );
        assert_eq!(
            meta.constrained_sampling,
            Some(ConstrainedSampling::require())
        );
    }
}
