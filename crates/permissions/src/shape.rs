//! [`ToolShape`]: what the rules know about a tool, from its declarations.

/// What the rules know about a tool: its name and what its arguments
/// mean, as the tool declares them.
///
/// ```
/// use agent_permissions::{Permission, PermissionRules, ToolShape};
/// use agent_tool::PathArgument;
/// use serde_json::json;
/// let rules = PermissionRules::from_lists(&[], &[], &["Read(./.env)"], "/w".as_ref()).unwrap();
/// // A custom tool that declares its `file` argument a path it reads is covered.
/// let viewer = ToolShape::named("viewer").with_path(PathArgument::read("file"));
/// let decision = rules.decide(&viewer, &json!({"file": ".env"}), "/w".as_ref());
/// assert_eq!(decision.permission, Permission::Deny);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolShape {
    /// The tool's name.
    pub name: String,
    /// The arguments it declares as paths.
    pub paths: Vec<agent_tool::PathArgument>,
    /// The argument it declares as a shell command line.
    pub command: Option<String>,
}

impl ToolShape {
    /// A tool that declares nothing.
    pub fn named(name: impl Into<String>) -> Self {
        ToolShape {
            name: name.into(),
            ..Default::default()
        }
    }

    /// What `definition` declares.
    pub fn of(definition: &agent_tool::ToolDefinition) -> Self {
        ToolShape {
            name: definition.name().to_string(),
            paths: definition.path_arguments().to_vec(),
            command: definition.command_argument().map(str::to_string),
        }
    }

    /// The same shape with one more path argument.
    pub fn with_path(mut self, argument: agent_tool::PathArgument) -> Self {
        self.paths.push(argument);
        self
    }

    /// The same shape with this command argument.
    pub fn with_command(mut self, argument: impl Into<String>) -> Self {
        self.command = Some(argument.into());
        self
    }

    /// Whether the tool declares an argument of this access.
    pub(super) fn touches(&self, access: agent_tool::PathAccess) -> bool {
        self.paths.iter().any(|p| p.access == access)
    }
}

/// The shapes the built-in tools declare, for tests of the rules.
#[cfg(test)]
pub(crate) fn shape(name: &str) -> ToolShape {
    use agent_tool::PathArgument;
    let shape = ToolShape::named(name);
    match name {
        "bash" => shape.with_command("command"),
        "read" | "grep" | "find" | "ls" => shape.with_path(PathArgument::read("path")),
        "edit" | "write" => shape.with_path(PathArgument::write("path")),
        _ => shape,
    }
}
