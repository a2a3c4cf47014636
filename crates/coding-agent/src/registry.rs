//! The tool registry: which tools exist, which may be used, which are active.

use std::sync::Arc;

use agent_core::{AgentTool, AgentToolResult};
use serde_json::Value;

use agent_tool::{
    RenderContext, RenderResultOptions, StyledText, Theme, ToolDefinition, default_render_call,
    default_render_result,
};

/// Lines of a result the generic renderer shows before "... (N more lines)".
const DEFAULT_PREVIEW_LINES: usize = 10;

/// Tool selection with the meaning of Pi's command-line flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSelection {
    /// `--tools a,b`: the allowlist and the initial active list (any kind of tool).
    /// A list of only `+name` and `-name` entries (Pi's form, `--tools +codemode`)
    /// is no allowlist: it adds tools to the default active set and removes them
    /// from it.
    pub tools: Option<Vec<String>>,
    /// `--exclude-tools a,b`: a denylist applied after `tools`.
    pub exclude_tools: Vec<String>,
    /// `--no-tools`: an empty allowlist, no tools at all.
    pub no_tools: bool,
    /// `--no-builtin-tools`: no built-in active by default; extension and SDK tools stay active.
    pub no_builtin_tools: bool,
}

impl ToolSelection {
    /// The `+name`/`-name` changes when [`ToolSelection::tools`] holds only
    /// those, else `None` (an allowlist).
    ///
    /// ```
    /// use coding_agent::ToolSelection;
    /// let s = ToolSelection { tools: Some(vec!["+codemode".into(), "-bash".into()]), ..Default::default() };
    /// assert_eq!(s.changes(), Some((vec!["codemode"], vec!["bash"])));
    /// let s = ToolSelection { tools: Some(vec!["read".into()]), ..Default::default() };
    /// assert_eq!(s.changes(), None);
    /// ```
    pub fn changes(&self) -> Option<(Vec<&str>, Vec<&str>)> {
        let list = self.tools.as_ref()?;
        if list.is_empty()
            || !list
                .iter()
                .all(|n| n.starts_with('+') || n.starts_with('-'))
        {
            return None;
        }
        let pick = |sign: char| {
            list.iter()
                .filter_map(|n| n.strip_prefix(sign))
                .filter(|n| !n.is_empty())
                .collect::<Vec<_>>()
        };
        Some((pick('+'), pick('-')))
    }

    /// The allowlist, if [`ToolSelection::tools`] is one.
    fn allowlist(&self) -> Option<&[String]> {
        if self.changes().is_some() {
            return None;
        }
        self.tools.as_deref()
    }

    /// Parses a comma-separated flag value, trimming and dropping empty names.
    pub fn parse_list(value: &str) -> Vec<String> {
        value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// Where a tool came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolSource {
    /// A built-in tool.
    Builtin,
    /// Registered by the named extension.
    Extension(String),
    /// Supplied by the program assembling the agent.
    Sdk,
}

/// Definition-first tool registry.
///
/// Built-ins come first, then extension tools (the first extension to register a
/// name wins among extensions), then SDK tools; a custom tool with a built-in's
/// name overrides it (keeping the built-in's position). Overrides inherit
/// `render_call` / `render_result` per slot from the built-in they replace when
/// they have none; they never inherit prompt snippet or guidelines.
///
/// Three sets, each inside the one before:
///
/// - **registered**: every tool given to the registry;
/// - **allowed**: registered, in the `--tools` allowlist ([`ToolSelection::tools`])
///   if there is one, not in the denylist, and in the settings' `allowedTools`
///   if present. Naming tools in [`ToolSelection::tools`] therefore drops every
///   tool not named, custom tools included. Only allowed tools are listed,
///   activated, offered to the model or executed;
/// - **active**: the allowed tools offered to the model right now. Without an
///   explicit list ([`ToolRegistry::set_active_tools`],
///   `AgentSessionBuilder::active_tools`) that is Pi's default: the
///   built-ins that are [active by default](ToolDefinition::active_by_default)
///   (of the seven: `read`, `bash`, `edit`, `write`) plus every extension and
///   SDK tool (or every allowed tool when an allowlist is set). A call to a registered tool that
///   is not active gets an error saying so ([`ToolRegistry::inactive_reason`]).
///
/// ```
/// use coding_agent::{ToolRegistry, ToolSelection};
/// let mut registry = ToolRegistry::new(Vec::new());
/// registry.apply_selection(ToolSelection { no_tools: true, ..Default::default() });
/// assert!(registry.active_names().is_empty());
/// ```
#[derive(Clone, Default)]
pub struct ToolRegistry {
    builtins: Vec<ToolDefinition>,
    extension_tools: Vec<(String, ToolDefinition)>,
    sdk_tools: Vec<ToolDefinition>,
    selection: ToolSelection,
    settings_allowed: Option<Vec<String>>,
    explicit_active: Option<Vec<String>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names())
            .field("active", &self.active_names())
            .finish()
    }
}

impl ToolRegistry {
    /// A registry of the given built-ins, with the default selection.
    pub fn new(builtins: Vec<ToolDefinition>) -> Self {
        ToolRegistry {
            builtins,
            ..Default::default()
        }
    }

    /// Adds a tool registered by an extension. Ignored (with a warning) when an
    /// earlier extension already registered the name.
    pub fn register_extension_tool(&mut self, extension: &str, definition: ToolDefinition) {
        if let Some((owner, _)) = self
            .extension_tools
            .iter()
            .find(|(_, d)| d.name() == definition.name())
        {
            tracing::warn!(
                tool = definition.name(),
                first = %owner,
                ignored = extension,
                "tool already registered by an earlier extension"
            );
            return;
        }
        if self.builtins.iter().any(|b| b.name() == definition.name()) {
            tracing::info!(
                tool = definition.name(),
                extension,
                "extension overrides a built-in tool"
            );
        }
        self.extension_tools
            .push((extension.to_string(), definition));
    }

    /// Adds a tool supplied by the program; replaces an earlier SDK tool of the same name.
    pub fn register_tool(&mut self, definition: ToolDefinition) {
        self.sdk_tools.retain(|d| d.name() != definition.name());
        self.sdk_tools.push(definition);
    }

    /// Removes a tool supplied by the program (not a built-in or an
    /// extension's); returns whether there was one.
    pub fn unregister_tool(&mut self, name: &str) -> bool {
        let before = self.sdk_tools.len();
        self.sdk_tools.retain(|d| d.name() != name);
        self.sdk_tools.len() != before
    }

    /// Applies command-line style selection; resets any explicit active list.
    pub fn apply_selection(&mut self, selection: ToolSelection) {
        self.selection = selection;
        self.explicit_active = None;
    }

    /// Sets the settings' `allowedTools` whitelist (`None` removes it).
    pub fn set_settings_allowed_tools(&mut self, allowed: Option<Vec<String>>) {
        self.settings_allowed = allowed;
    }

    /// Whether the name passes the allowlist, denylist and `allowedTools`.
    pub fn is_allowed(&self, name: &str) -> bool {
        let allowlist = if self.selection.no_tools {
            Some(&[][..])
        } else {
            self.selection.allowlist()
        };
        allowlist.is_none_or(|a| a.iter().any(|n| n == name))
            && !self.selection.exclude_tools.iter().any(|n| n == name)
            && self
                .settings_allowed
                .as_ref()
                .is_none_or(|a| a.iter().any(|n| n == name))
    }

    /// Every allowed definition in registry order, overrides applied.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.entries()
            .into_iter()
            .filter(|(d, _)| self.is_allowed(d.name()))
            .map(|(d, _)| d)
            .collect()
    }

    /// Names of every allowed tool, in registry order.
    pub fn names(&self) -> Vec<String> {
        self.definitions()
            .iter()
            .map(|d| d.name().to_string())
            .collect()
    }

    /// Where an allowed tool came from.
    pub fn source(&self, name: &str) -> Option<ToolSource> {
        if !self.is_allowed(name) {
            return None;
        }
        self.entries()
            .into_iter()
            .find(|(d, _)| d.name() == name)
            .map(|(_, s)| s)
    }

    /// An allowed definition by name.
    pub fn get(&self, name: &str) -> Option<ToolDefinition> {
        self.definitions().into_iter().find(|d| d.name() == name)
    }

    /// The built-in of this name, even when overridden.
    pub fn builtin(&self, name: &str) -> Option<ToolDefinition> {
        self.builtins.iter().find(|d| d.name() == name).cloned()
    }

    /// All definitions with overrides applied, allowed or not.
    fn entries(&self) -> Vec<(ToolDefinition, ToolSource)> {
        let mut out: Vec<(ToolDefinition, ToolSource)> = self
            .builtins
            .iter()
            .map(|d| (d.clone(), ToolSource::Builtin))
            .collect();
        let custom = self
            .extension_tools
            .iter()
            .map(|(e, d)| (d.clone(), ToolSource::Extension(e.clone())))
            .chain(self.sdk_tools.iter().map(|d| (d.clone(), ToolSource::Sdk)));
        for (definition, source) in custom {
            match out.iter_mut().find(|(d, _)| d.name() == definition.name()) {
                Some(slot) => *slot = (definition, source),
                None => out.push((definition, source)),
            }
        }
        out
    }

    /// The active tool names, in order.
    pub fn active_names(&self) -> Vec<String> {
        let exists_and_allowed = |name: &str| {
            self.is_allowed(name) && self.entries().iter().any(|(d, _)| d.name() == name)
        };
        let mut active: Vec<String> = Vec::new();
        let add = |name: &str, active: &mut Vec<String>| {
            if exists_and_allowed(name) && !active.iter().any(|n| n == name) {
                active.push(name.to_string());
            }
        };
        if let Some(explicit) = &self.explicit_active {
            for name in explicit {
                add(name, &mut active);
            }
            return active;
        }
        let initial: Vec<String> = match self.selection.allowlist() {
            Some(list) => list.to_vec(),
            None if self.selection.no_tools || self.selection.no_builtin_tools => Vec::new(),
            // The built-ins that ask to be active by default (Pi's read,
            // bash, edit, write), in registry order.
            None => self
                .builtins
                .iter()
                .filter(|d| d.active_by_default())
                .map(|d| d.name().to_string())
                .collect(),
        };
        for name in &initial {
            add(name, &mut active);
        }
        // With an allowlist (`--tools`, `--no-tools` or `allowedTools`) every allowed
        // tool is active; otherwise every extension and SDK tool joins the defaults.
        let has_allowlist = self.selection.allowlist().is_some()
            || self.selection.no_tools
            || self.settings_allowed.is_some();
        for (definition, source) in self.entries() {
            if has_allowlist || source != ToolSource::Builtin {
                add(definition.name(), &mut active);
            }
        }
        if let Some((plus, minus)) = self.selection.changes() {
            for name in plus {
                add(name, &mut active);
            }
            active.retain(|n| !minus.contains(&n.as_str()));
        }
        active
    }

    /// Why `name` cannot be called though it is registered and allowed: it is
    /// not active. `None` otherwise; the loop then says Pi's
    /// `Tool <name> not found` (also for tools that are not allowed, which a
    /// model is not told about).
    ///
    /// ```
    /// use coding_agent::{ToolRegistry, tool};
    /// let grep = tool("grep").description("Search").execute(|_: serde_json::Value, _| async {
    ///     Ok(coding_agent::AgentToolResult::text("none"))
    /// });
    /// let mut registry = ToolRegistry::new(vec![grep]);
    /// registry.set_active_tools(&[] as &[&str]);
    /// let why = registry.inactive_reason("grep").unwrap();
    /// assert!(why.contains("registered but not active"), "{why}");
    /// assert_eq!(registry.inactive_reason("nope"), None);
    /// ```
    pub fn inactive_reason(&self, name: &str) -> Option<String> {
        if !self.is_allowed(name) || !self.entries().iter().any(|(d, _)| d.name() == name) {
            return None;
        }
        let active = self.active_names();
        if active.iter().any(|n| n == name) {
            return None;
        }
        Some(format!(
            "Tool {name} is registered but not active in this session. Active tools: {}",
            if active.is_empty() {
                "(none)".to_string()
            } else {
                active.join(", ")
            }
        ))
    }

    /// Sets the active tools: keeps the given order, ignores unknown or disallowed names.
    pub fn set_active_tools<S: AsRef<str>>(&mut self, names: &[S]) {
        self.explicit_active = Some(names.iter().map(|s| s.as_ref().to_string()).collect());
    }

    /// The active definitions, in order.
    pub fn active_definitions(&self) -> Vec<ToolDefinition> {
        let all = self.definitions();
        self.active_names()
            .iter()
            .filter_map(|n| all.iter().find(|d| d.name() == n).cloned())
            .collect()
    }

    /// The active tools as the loop runs them.
    pub fn active_agent_tools(&self) -> Vec<Arc<dyn AgentTool>> {
        self.active_definitions()
            .iter()
            .map(ToolDefinition::tool)
            .collect()
    }

    /// Draws a call: the tool's renderer, else the overridden built-in's,
    /// else the generic one headed by the tool's label.
    pub fn render_call(
        &self,
        name: &str,
        args: &Value,
        theme: &Theme,
        ctx: &RenderContext,
    ) -> StyledText {
        let entries = self.entries();
        let definition = entries.iter().find(|(d, _)| d.name() == name);
        definition
            .and_then(|(d, _)| d.render_call(args, theme, ctx))
            .or_else(|| {
                self.builtin(name)
                    .and_then(|b| b.render_call(args, theme, ctx))
            })
            .unwrap_or_else(|| {
                let label = definition.map_or(name, |(d, _)| d.label());
                default_render_call(label, args, theme)
            })
    }

    /// Who draws the frame around `name`'s output (the host unless the
    /// tool says it draws everything itself).
    pub fn render_shell(&self, name: &str) -> agent_tool::RenderShell {
        self.get(name).map(|d| d.render_shell()).unwrap_or_default()
    }

    /// Draws a result: the tool's renderer, else the overridden built-in's, else generic.
    pub fn render_result(
        &self,
        name: &str,
        result: &AgentToolResult,
        options: &RenderResultOptions,
        theme: &Theme,
        ctx: &RenderContext,
    ) -> StyledText {
        self.entries()
            .iter()
            .find(|(d, _)| d.name() == name)
            .and_then(|(d, _)| d.render_result(result, options, theme, ctx))
            .or_else(|| {
                self.builtin(name)
                    .and_then(|b| b.render_result(result, options, theme, ctx))
            })
            .unwrap_or_else(|| default_render_result(result, options, theme, DEFAULT_PREVIEW_LINES))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generic_call_line_is_headed_by_the_label() {
        let tool = agent_tool::tool("word_count")
            .label("Word Count")
            .execute(|_: Value, _| async { Ok(AgentToolResult::text("")) });
        let registry = ToolRegistry::new(vec![tool]);
        let line = registry
            .render_call(
                "word_count",
                &serde_json::json!({"text": "a"}),
                &Theme::plain(),
                &RenderContext::default(),
            )
            .to_plain();
        assert!(line.starts_with("Word Count "), "{line}");
        // A name no tool has is shown as it is.
        let line = registry
            .render_call(
                "nope",
                &serde_json::json!({}),
                &Theme::plain(),
                &RenderContext::default(),
            )
            .to_plain();
        assert!(line.starts_with("nope"), "{line}");
    }

    #[test]
    fn a_partial_result_shows_its_latest_lines() {
        let text = (1..=30)
            .map(|n| format!("line {n}"))
            .collect::<Vec<_>>()
            .join("\n");
        let options = RenderResultOptions {
            is_partial: true,
            ..Default::default()
        };
        let view =
            default_render_result(&AgentToolResult::text(text), &options, &Theme::plain(), 10)
                .to_plain();
        assert!(view.starts_with("... (20 earlier lines)"), "{view}");
        assert!(view.trim_end().ends_with("line 30"), "{view}");
    }
}
