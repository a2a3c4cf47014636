//! [`ToolDefinition`]: a tool as a product feature. The executable part is
//! an `Arc<dyn AgentTool>`; the definition adds what a product shows around
//! it (prompt snippet, guidelines, renderers) and what it declares about
//! itself (the paths it touches, behaviour hints).

use std::sync::Arc;

use agent_core::{AgentTool, AgentToolResult, ExecutionMode, ToolCallContext, ToolError, ToolMeta};
use futures::future::BoxFuture;
use serde_json::Value;

use crate::render::{RenderContext, RenderResultOptions, RenderShell, StyledText, Theme};
use crate::restore::{EarlierResult, RestoreFn};
use crate::typed::{TypedTool, typed_tool};

/// Draws a call (before and while it runs): arguments, theme, context.
pub type RenderCallFn =
    Arc<dyn Fn(&Value, &Theme, &RenderContext) -> Option<StyledText> + Send + Sync>;

/// Draws a (partial or final) result.
pub type RenderResultFn = Arc<
    dyn Fn(&AgentToolResult, &RenderResultOptions, &Theme, &RenderContext) -> Option<StyledText>
        + Send
        + Sync,
>;

/// Whether a tool reads or changes the file a path argument names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PathAccess {
    /// Reads, lists or searches it (covered by `Read(...)` rules).
    Read,
    /// Creates, replaces or edits it (covered by `Edit(...)` rules, and by
    /// `Read(...)` deny and ask rules too: a file the agent may not read is
    /// not one it should replace).
    Write,
}

/// A declaration that one argument of a tool is a path, and how the tool
/// uses the file it names. Permission rules and compaction read these
/// declarations instead of knowing tool names, so a custom file tool is
/// covered by `Read(...)` and `Edit(...)` rules with no change elsewhere.
///
/// An absent or non-string argument means the working directory (`.`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PathArgument {
    /// The argument's name in the tool's JSON arguments (`"path"`).
    pub name: String,
    /// What the tool does with the file.
    pub access: PathAccess,
}

impl PathArgument {
    /// A path argument the tool reads.
    pub fn read(name: impl Into<String>) -> Self {
        PathArgument {
            name: name.into(),
            access: PathAccess::Read,
        }
    }

    /// A path argument the tool writes.
    pub fn write(name: impl Into<String>) -> Self {
        PathArgument {
            name: name.into(),
            access: PathAccess::Write,
        }
    }

    /// The argument's value in `args`, or `"."` when it is absent.
    pub fn value<'a>(&self, args: &'a Value) -> &'a str {
        args.get(&self.name).and_then(Value::as_str).unwrap_or(".")
    }
}

/// What a tool says about its behaviour, for clients that label tools (the
/// MCP server turns these into tool annotations). `None` means "not said".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolHints {
    /// Changes nothing in its environment.
    pub read_only: Option<bool>,
    /// May destroy or overwrite data (meaningful when not read-only).
    pub destructive: Option<bool>,
    /// Calling it twice with the same arguments has no further effect.
    pub idempotent: Option<bool>,
    /// Reaches beyond the local environment (network, other systems).
    pub open_world: Option<bool>,
}

impl ToolHints {
    /// Hints of a tool that only reads local data.
    pub fn read_only() -> Self {
        ToolHints {
            read_only: Some(true),
            destructive: Some(false),
            idempotent: Some(true),
            open_world: Some(false),
        }
    }

    /// Hints of a tool that changes local files.
    pub fn writes(destructive: bool) -> Self {
        ToolHints {
            read_only: Some(false),
            destructive: Some(destructive),
            idempotent: None,
            open_world: Some(false),
        }
    }
}

/// A tool with everything a product needs: the loop's [`AgentTool`] plus a
/// prompt snippet, prompt guidelines, terminal renderers, the path
/// arguments it touches and behaviour hints.
///
/// A plain struct: build one from any `Arc<dyn AgentTool>` with
/// [`ToolDefinition::new`] (or from a [`TypedTool`] with
/// [`ToolDefinition::typed`], or with the [`tool`](crate::tool) closure
/// builder), and hand the loop [`ToolDefinition::tool`]. Cheap to clone.
///
/// ```
/// use agent_tool::{AgentToolResult, PathArgument, ToolCallContext, ToolDefinition, ToolError, TypedTool};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Params {
///     /// File to count the lines of.
///     path: String,
/// }
///
/// struct LineCount;
///
/// impl TypedTool for LineCount {
///     type Params = Params;
///     fn name(&self) -> &str { "line_count" }
///     fn description(&self) -> &str { "Counts the lines of a file." }
///     async fn execute(&self, p: Params, _cx: ToolCallContext) -> Result<AgentToolResult, ToolError> {
///         let text = std::fs::read_to_string(&p.path)?;
///         Ok(AgentToolResult::text(text.lines().count().to_string()))
///     }
/// }
///
/// let def = ToolDefinition::typed(LineCount)
///     .with_prompt_snippet("Count the lines of a file")
///     .with_path_argument(PathArgument::read("path"));
/// assert_eq!(def.prompt_snippet(), Some("Count the lines of a file"));
/// assert_eq!(def.parameters()["required"], serde_json::json!(["path"]));
/// let lean = def.tool(); // what the loop runs
/// assert_eq!(lean.name(), "line_count");
/// ```
#[derive(Clone)]
pub struct ToolDefinition {
    tool: Arc<dyn AgentTool>,
    prompt_snippet: Option<String>,
    prompt_guidelines: Vec<String>,
    render_shell: RenderShell,
    render_call: Option<RenderCallFn>,
    render_result: Option<RenderResultFn>,
    path_arguments: Vec<PathArgument>,
    command_argument: Option<String>,
    hints: ToolHints,
    active_by_default: bool,
    restore: Option<RestoreFn>,
}

/// Looks a tool up by name: how permission rules and compaction learn what
/// the tools of a session declare. `None` for a name that is no tool.
pub type ToolLookup = Arc<dyn Fn(&str) -> Option<ToolDefinition> + Send + Sync>;

impl ToolDefinition {
    /// A definition of `tool` with no prompt metadata, renderers or declarations.
    pub fn new(tool: Arc<dyn AgentTool>) -> Self {
        ToolDefinition {
            tool,
            prompt_snippet: None,
            prompt_guidelines: Vec::new(),
            render_shell: RenderShell::Default,
            render_call: None,
            render_result: None,
            path_arguments: Vec::new(),
            command_argument: None,
            hints: ToolHints::default(),
            active_by_default: true,
            restore: None,
        }
    }

    /// A definition of a [`TypedTool`] (its schema generated once).
    pub fn typed<T: TypedTool>(tool: T) -> Self {
        Self::new(typed_tool(tool))
    }

    /// The same definition with this line in the system prompt's "Available
    /// tools" list. Without one the tool is callable but not listed there.
    pub fn with_prompt_snippet(mut self, snippet: impl Into<String>) -> Self {
        self.prompt_snippet = Some(snippet.into());
        self
    }

    /// The same definition with one more bullet for the system prompt's
    /// "Guidelines" section.
    pub fn with_guideline(mut self, guideline: impl Into<String>) -> Self {
        self.prompt_guidelines.push(guideline.into());
        self
    }

    /// The same definition with these guideline bullets instead of its own.
    pub fn with_guidelines(mut self, guidelines: impl IntoIterator<Item = String>) -> Self {
        self.prompt_guidelines = guidelines.into_iter().collect();
        self
    }

    /// The same definition with no prompt snippet and no guidelines (what an
    /// override keeps of the tool it replaces).
    pub fn without_prompt(mut self) -> Self {
        self.prompt_snippet = None;
        self.prompt_guidelines.clear();
        self
    }

    /// The same definition drawing its calls with `render`.
    pub fn with_render_call(
        mut self,
        render: impl Fn(&Value, &Theme, &RenderContext) -> Option<StyledText> + Send + Sync + 'static,
    ) -> Self {
        self.render_call = Some(Arc::new(render));
        self
    }

    /// The same definition drawing its (partial and final) results with `render`.
    pub fn with_render_result(
        mut self,
        render: impl Fn(
            &AgentToolResult,
            &RenderResultOptions,
            &Theme,
            &RenderContext,
        ) -> Option<StyledText>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.render_result = Some(Arc::new(render));
        self
    }

    /// The same definition with this frame choice.
    pub fn with_render_shell(mut self, shell: RenderShell) -> Self {
        self.render_shell = shell;
        self
    }

    /// The same definition with the renderers `other` has and this one
    /// lacks (an override inherits the renderers of the tool it replaces).
    pub fn with_renderers_from(mut self, other: &ToolDefinition) -> Self {
        if self.render_call.is_none() {
            self.render_call = other.render_call.clone();
        }
        if self.render_result.is_none() {
            self.render_result = other.render_result.clone();
        }
        self
    }

    /// The same definition declaring that argument `argument` is a path the
    /// tool reads or writes (see [`PathArgument`]).
    pub fn with_path_argument(mut self, argument: PathArgument) -> Self {
        self.path_arguments.push(argument);
        self
    }

    /// The same definition declaring that argument `argument` is a shell
    /// command line the tool runs, so `Bash(...)` permission rules judge it.
    pub fn with_command_argument(mut self, argument: impl Into<String>) -> Self {
        self.command_argument = Some(argument.into());
        self
    }

    /// The same definition, offered to the model only when asked for
    /// (`false`) or whenever it is allowed (`true`, the default). Pi keeps
    /// its search tools (grep, find, ls) registered but inactive until a
    /// selection names them; built-in tool sets say so here.
    pub fn with_active_by_default(mut self, active: bool) -> Self {
        self.active_by_default = active;
        self
    }

    /// The same definition with these behaviour hints.
    pub fn with_hints(mut self, hints: ToolHints) -> Self {
        self.hints = hints;
        self
    }

    /// The same definition rebuilding its state with `restore` whenever a
    /// session is built, resumed, forked or switched to another branch:
    /// `restore` gets the tool's own earlier results on the branch now
    /// current, root first (none for a new session, so state from another
    /// session is cleared). Keep the state a tool needs in its results'
    /// `details`, and the state follows the conversation.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use agent_tool::{AgentToolResult, EarlierResult, tool};
    /// use serde_json::{Value, json};
    ///
    /// let todos = Arc::new(Mutex::new(Vec::<String>::new()));
    /// let (run, restore) = (todos.clone(), todos.clone());
    /// let todo = tool("todo")
    ///     .description("Adds an item to the todo list.")
    ///     .execute(move |args: Value, _cx| {
    ///         let todos = run.clone();
    ///         async move {
    ///             let mut list = todos.lock().unwrap();
    ///             list.push(args["item"].as_str().unwrap_or_default().to_string());
    ///             Ok(AgentToolResult::text(format!("{} open", list.len()))
    ///                 .with_details(json!({"todos": *list})))
    ///         }
    ///     })
    ///     .with_restore(move |earlier: &[EarlierResult]| {
    ///         // The latest successful result holds the whole list.
    ///         let latest = earlier.iter().rev().find(|r| !r.is_error);
    ///         *restore.lock().unwrap() = latest
    ///             .and_then(|r| serde_json::from_value(r.details["todos"].clone()).ok())
    ///             .unwrap_or_default();
    ///     });
    ///
    /// todo.restore(&[EarlierResult {
    ///     tool_call_id: "c1".into(),
    ///     arguments: json!({"item": "milk"}),
    ///     details: json!({"todos": ["milk"]}),
    ///     is_error: false,
    /// }]);
    /// assert_eq!(*todos.lock().unwrap(), ["milk"]);
    /// ```
    pub fn with_restore(
        mut self,
        restore: impl Fn(&[EarlierResult]) + Send + Sync + 'static,
    ) -> Self {
        self.restore = Some(Arc::new(restore));
        self
    }

    /// Hands the tool its earlier results (see
    /// [`ToolDefinition::with_restore`]); nothing happens for a tool
    /// without a restore function.
    pub fn restore(&self, earlier: &[EarlierResult]) {
        if let Some(restore) = &self.restore {
            restore(earlier);
        }
    }

    /// Whether the tool rebuilds state from earlier results.
    pub fn restores_state(&self) -> bool {
        self.restore.is_some()
    }

    /// The same definition running `tool` instead (metadata, prompt and
    /// renderers kept as they are).
    pub fn with_tool(mut self, tool: Arc<dyn AgentTool>) -> Self {
        self.tool = tool;
        self
    }

    /// The executable tool, as the loop runs it.
    pub fn tool(&self) -> Arc<dyn AgentTool> {
        self.tool.clone()
    }

    /// Name, label, description, argument schema and execution mode.
    pub fn meta(&self) -> &ToolMeta {
        self.tool.meta()
    }

    /// Name the model calls the tool by.
    pub fn name(&self) -> &str {
        self.tool.name()
    }

    /// Short human-readable label.
    pub fn label(&self) -> &str {
        self.tool.label()
    }

    /// What the tool does, written for the model.
    pub fn description(&self) -> &str {
        self.tool.description()
    }

    /// JSON Schema of the arguments.
    pub fn parameters(&self) -> &Value {
        self.tool.parameters()
    }

    /// Scheduling preference; `None` means parallel.
    pub fn execution_mode(&self) -> Option<ExecutionMode> {
        self.tool.execution_mode()
    }

    /// Whether the provider is asked to constrain the model's arguments to
    /// the schema.
    pub fn constrained_sampling(&self) -> Option<agent_core::ConstrainedSampling> {
        self.tool.constrained_sampling()
    }

    /// The same definition asking for constrained sampling (`None`: not
    /// asked); everything else kept.
    ///
    /// ```
    /// use agent_tool::{AgentToolResult, ConstrainedSampling, tool};
    /// let todo = tool("todo")
    ///     .execute(|_: serde_json::Value, _cx| async { Ok(AgentToolResult::text("ok")) })
    ///     .with_constrained_sampling(Some(ConstrainedSampling::require()));
    /// assert_eq!(todo.tool().to_tool().constrained_sampling, Some(ConstrainedSampling::require()));
    /// ```
    pub fn with_constrained_sampling(
        self,
        constrained: Option<agent_core::ConstrainedSampling>,
    ) -> Self {
        if self.constrained_sampling() == constrained {
            return self;
        }
        crate::decorate(self)
            .constrained_sampling(constrained)
            .build()
    }

    /// The line for "Available tools", if any.
    pub fn prompt_snippet(&self) -> Option<&str> {
        self.prompt_snippet.as_deref()
    }

    /// The bullets for "Guidelines".
    pub fn prompt_guidelines(&self) -> &[String] {
        &self.prompt_guidelines
    }

    /// Who draws the frame around this tool's output.
    pub fn render_shell(&self) -> RenderShell {
        self.render_shell
    }

    /// The tool's own drawing of a call; `None` when it has no call renderer
    /// (the host then uses a generic one).
    pub fn render_call(
        &self,
        args: &Value,
        theme: &Theme,
        ctx: &RenderContext,
    ) -> Option<StyledText> {
        self.render_call.as_ref().and_then(|f| f(args, theme, ctx))
    }

    /// The tool's own drawing of a result; `None` when it has no result renderer.
    pub fn render_result(
        &self,
        result: &AgentToolResult,
        options: &RenderResultOptions,
        theme: &Theme,
        ctx: &RenderContext,
    ) -> Option<StyledText> {
        self.render_result
            .as_ref()
            .and_then(|f| f(result, options, theme, ctx))
    }

    /// Whether the tool brings its own call or result renderer.
    pub fn has_renderers(&self) -> bool {
        self.render_call.is_some() || self.render_result.is_some()
    }

    /// The arguments this tool declares as paths.
    pub fn path_arguments(&self) -> &[PathArgument] {
        &self.path_arguments
    }

    /// The argument this tool declares as a shell command line, if any.
    pub fn command_argument(&self) -> Option<&str> {
        self.command_argument.as_deref()
    }

    /// Whether the tool is active when no selection names the active tools.
    pub fn active_by_default(&self) -> bool {
        self.active_by_default
    }

    /// The tool's behaviour hints.
    pub fn hints(&self) -> ToolHints {
        self.hints
    }

    /// Repairs raw arguments before validation (the tool's own repair).
    ///
    /// # Errors
    /// Whatever the tool's `prepare_arguments` refuses.
    pub fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        self.tool.prepare_arguments(args)
    }

    /// Runs one call of the tool.
    pub fn execute(
        &self,
        params: Value,
        cx: ToolCallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>> {
        self.tool.execute(params, cx)
    }
}

impl From<Arc<dyn AgentTool>> for ToolDefinition {
    fn from(tool: Arc<dyn AgentTool>) -> Self {
        ToolDefinition::new(tool)
    }
}

impl From<ToolDefinition> for Arc<dyn AgentTool> {
    fn from(definition: ToolDefinition) -> Self {
        definition.tool
    }
}

impl std::fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("name", &self.name())
            .field("prompt_snippet", &self.prompt_snippet)
            .field("path_arguments", &self.path_arguments)
            .field("command_argument", &self.command_argument)
            .finish_non_exhaustive()
    }
}
