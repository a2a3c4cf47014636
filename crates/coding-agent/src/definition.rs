//! [`ToolDefinition`]: a tool as a product feature, and the conversions to and
//! from the loop's lean [`AgentTool`].

use std::future::Future;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::Arc;

use agent_ai::Model;
use agent_core::{
    AgentTool, AgentToolResult, CancellationToken, ExecutionMode, ToolCallContext, ToolError,
    ToolMeta, ToolUpdateSink, params_schema,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::render::{RenderContext, RenderResultOptions, RenderShell, StyledText, Theme};
use crate::settings::Settings;

/// What a tool definition's `execute` gets to know about its environment.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// Working directory of the session.
    pub cwd: PathBuf,
    /// The model the session is talking to, if known.
    pub model: Option<Model>,
    /// Merged settings.
    pub settings: Arc<Settings>,
    /// Fires when the call is cancelled.
    pub cancel: CancellationToken,
}

impl ToolContext {
    /// A context for `cwd` with default settings and no model.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        ToolContext {
            cwd: cwd.into(),
            model: None,
            settings: Arc::new(Settings::default()),
            cancel: CancellationToken::new(),
        }
    }
}

/// What a call gets besides its arguments, in the product layer: the second
/// argument of [`TypedToolDefinition::execute`] and of [`tool`](crate::tool)
/// closures. Its id, the sink for progress
/// updates, and (through `Deref`) the session's [`ToolContext`]: `cwd`,
/// `settings`, `model` and the `cancel` token.
#[derive(Clone)]
pub struct CallContext {
    /// The id the model gave this call.
    pub call_id: String,
    /// Sends partial results while the call runs (shown as progress).
    pub updates: ToolUpdateSink,
    /// The session's context for tools.
    pub tool: ToolContext,
}

impl CallContext {
    /// A context for one call with id `call_id`, no progress receiver, and the
    /// session context `tool` (for running a definition outside the loop).
    pub fn new(call_id: impl Into<String>, tool: ToolContext) -> Self {
        CallContext {
            call_id: call_id.into(),
            updates: ToolUpdateSink::noop(),
            tool,
        }
    }
}

impl Deref for CallContext {
    type Target = ToolContext;
    fn deref(&self) -> &ToolContext {
        &self.tool
    }
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("call_id", &self.call_id)
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

/// Builds a [`ToolContext`] for each call of a wrapped definition.
pub type ToolContextFactory = Arc<dyn Fn() -> ToolContext + Send + Sync>;

/// A tool with everything a product needs: the loop's fields plus a prompt
/// snippet, prompt guidelines and terminal renderers.
///
/// Object safe; registries hold `Arc<dyn ToolDefinition>`. Implement it directly,
/// or implement [`TypedToolDefinition`] and wrap it with [`typed_definition`].
///
/// Renderers return `None` to mean "no renderer of my own for this slot": the
/// registry then falls back to the built-in it overrides, if any, and finally to
/// a generic renderer.
pub trait ToolDefinition: Send + Sync {
    /// Name, label, description, argument schema and execution mode, in one value.
    fn meta(&self) -> &ToolMeta;
    /// Name the model calls the tool by (from [`ToolDefinition::meta`]).
    fn name(&self) -> &str {
        &self.meta().name
    }
    /// Short human-readable label (from [`ToolDefinition::meta`]).
    fn label(&self) -> &str {
        &self.meta().label
    }
    /// What the tool does, written for the model (from [`ToolDefinition::meta`]).
    fn description(&self) -> &str {
        &self.meta().description
    }
    /// JSON Schema of the arguments (from [`ToolDefinition::meta`]).
    fn parameters(&self) -> &Value {
        &self.meta().parameters
    }
    /// One line for the system prompt's "Available tools" list. Without it the
    /// tool is callable but not listed there.
    fn prompt_snippet(&self) -> Option<&str> {
        None
    }
    /// Bullets for the system prompt's "Guidelines" section.
    fn prompt_guidelines(&self) -> Vec<String> {
        Vec::new()
    }
    /// Scheduling preference (from [`ToolDefinition::meta`]); `None` means parallel.
    fn execution_mode(&self) -> Option<ExecutionMode> {
        self.meta().execution_mode
    }
    /// Repairs raw arguments before validation. Default: unchanged.
    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        Ok(args)
    }
    /// Who draws the frame around this tool's output.
    fn render_shell(&self) -> RenderShell {
        RenderShell::Default
    }
    /// Draws the call (before and while it runs).
    fn render_call(
        &self,
        _args: &Value,
        _theme: &Theme,
        _ctx: &RenderContext,
    ) -> Option<StyledText> {
        None
    }
    /// Draws a (partial or final) result.
    fn render_result(
        &self,
        _result: &AgentToolResult,
        _options: &RenderResultOptions,
        _theme: &Theme,
        _ctx: &RenderContext,
    ) -> Option<StyledText> {
        None
    }
    /// Runs one call: the validated arguments, then the call's context (id,
    /// update sink, and through `Deref` cwd, settings, model, cancellation).
    fn execute(
        &self,
        params: Value,
        cx: CallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>>;
}

/// Rich -> lean: an [`AgentTool`] that keeps only name, label, description,
/// parameters, `prepare_arguments` and execution mode, and runs the definition
/// with a context from `context` (its `cancel` replaced by the loop's token).
/// Prompt metadata and renderers are dropped.
pub fn wrap_tool_definition(
    definition: Arc<dyn ToolDefinition>,
    context: ToolContextFactory,
) -> Arc<dyn AgentTool> {
    Arc::new(WrappedDefinition {
        definition,
        context,
    })
}

struct WrappedDefinition {
    definition: Arc<dyn ToolDefinition>,
    context: ToolContextFactory,
}

impl AgentTool for WrappedDefinition {
    fn meta(&self) -> &ToolMeta {
        self.definition.meta()
    }
    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        self.definition.prepare_arguments(args)
    }
    fn execute(
        &self,
        params: Value,
        cx: ToolCallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>> {
        let mut tool = (self.context)();
        tool.cancel = cx.cancel;
        self.definition.execute(
            params,
            CallContext {
                call_id: cx.call_id,
                updates: cx.updates,
                tool,
            },
        )
    }
}

/// Lean -> rich: a [`ToolDefinition`] with the tool's core fields, no prompt
/// metadata and no renderers. Its `execute` ignores the context except for the
/// cancellation token.
pub fn tool_definition_from_agent_tool(tool: Arc<dyn AgentTool>) -> Arc<dyn ToolDefinition> {
    Arc::new(FromAgentTool { tool })
}

struct FromAgentTool {
    tool: Arc<dyn AgentTool>,
}

impl ToolDefinition for FromAgentTool {
    fn meta(&self) -> &ToolMeta {
        self.tool.meta()
    }
    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        self.tool.prepare_arguments(args)
    }
    fn execute(
        &self,
        params: Value,
        cx: CallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>> {
        self.tool.execute(
            params,
            ToolCallContext {
                call_id: cx.call_id,
                cancel: cx.tool.cancel,
                updates: cx.updates,
            },
        )
    }
}

/// A [`ToolDefinition`] with typed parameters; the schema is derived from
/// [`TypedToolDefinition::Params`] (see [`agent_core::params_schema`]).
///
/// ```
/// use coding_agent::{AgentToolResult, CallContext, ToolError, TypedToolDefinition, typed_definition};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Params {
///     /// Who to greet.
///     name: String,
/// }
///
/// struct Greet;
///
/// impl TypedToolDefinition for Greet {
///     type Params = Params;
///     fn name(&self) -> &str { "greet" }
///     fn description(&self) -> &str { "Greets someone." }
///     fn prompt_snippet(&self) -> Option<&str> { Some("Greet people by name") }
///     async fn execute(&self, p: Params, _cx: CallContext) -> Result<AgentToolResult, ToolError> {
///         Ok(AgentToolResult::text(format!("Hello, {}!", p.name)))
///     }
/// }
///
/// let def = typed_definition(Greet);
/// assert_eq!(def.prompt_snippet(), Some("Greet people by name"));
/// assert_eq!(def.parameters()["required"], serde_json::json!(["name"]));
/// ```
pub trait TypedToolDefinition: Send + Sync + 'static {
    /// The arguments.
    type Params: DeserializeOwned + JsonSchema + Send;
    /// Name the model calls the tool by.
    fn name(&self) -> &str;
    /// Short human-readable label.
    fn label(&self) -> &str {
        self.name()
    }
    /// What the tool does, written for the model.
    fn description(&self) -> &str;
    /// One line for "Available tools".
    fn prompt_snippet(&self) -> Option<&str> {
        None
    }
    /// Bullets for "Guidelines".
    fn prompt_guidelines(&self) -> Vec<String> {
        Vec::new()
    }
    /// Scheduling preference.
    fn execution_mode(&self) -> Option<ExecutionMode> {
        None
    }
    /// Repairs raw arguments before validation.
    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        Ok(args)
    }
    /// Who draws the frame.
    fn render_shell(&self) -> RenderShell {
        RenderShell::Default
    }
    /// Draws the call.
    fn render_call(
        &self,
        _args: &Value,
        _theme: &Theme,
        _ctx: &RenderContext,
    ) -> Option<StyledText> {
        None
    }
    /// Draws a result.
    fn render_result(
        &self,
        _result: &AgentToolResult,
        _options: &RenderResultOptions,
        _theme: &Theme,
        _ctx: &RenderContext,
    ) -> Option<StyledText> {
        None
    }
    /// Runs one call: the arguments, then the call's context (id, update
    /// sink, and through `Deref` cwd, settings, model and cancellation).
    fn execute(
        &self,
        params: Self::Params,
        cx: CallContext,
    ) -> impl Future<Output = Result<AgentToolResult, ToolError>> + Send;
}

/// A [`TypedToolDefinition`] with its schema generated once.
pub struct TypedDefinition<T: TypedToolDefinition> {
    inner: T,
    meta: ToolMeta,
}

impl<T: TypedToolDefinition> TypedDefinition<T> {
    /// Generates the schema and wraps the definition.
    pub fn new(inner: T) -> Self {
        let meta = ToolMeta {
            name: inner.name().to_string(),
            label: inner.label().to_string(),
            description: inner.description().to_string(),
            parameters: params_schema::<T::Params>(),
            execution_mode: inner.execution_mode(),
        };
        TypedDefinition { inner, meta }
    }

    /// The wrapped definition.
    pub fn inner(&self) -> &T {
        &self.inner
    }
}

/// Wraps a typed definition as `Arc<dyn ToolDefinition>`.
pub fn typed_definition<T: TypedToolDefinition>(definition: T) -> Arc<dyn ToolDefinition> {
    Arc::new(TypedDefinition::new(definition))
}

impl<T: TypedToolDefinition> ToolDefinition for TypedDefinition<T> {
    fn meta(&self) -> &ToolMeta {
        &self.meta
    }
    fn prompt_snippet(&self) -> Option<&str> {
        self.inner.prompt_snippet()
    }
    fn prompt_guidelines(&self) -> Vec<String> {
        self.inner.prompt_guidelines()
    }
    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        self.inner.prepare_arguments(args)
    }
    fn render_shell(&self) -> RenderShell {
        self.inner.render_shell()
    }
    fn render_call(&self, args: &Value, theme: &Theme, ctx: &RenderContext) -> Option<StyledText> {
        self.inner.render_call(args, theme, ctx)
    }
    fn render_result(
        &self,
        result: &AgentToolResult,
        options: &RenderResultOptions,
        theme: &Theme,
        ctx: &RenderContext,
    ) -> Option<StyledText> {
        self.inner.render_result(result, options, theme, ctx)
    }
    fn execute(
        &self,
        params: Value,
        cx: CallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>> {
        match serde_json::from_value::<T::Params>(params) {
            Ok(p) => self.inner.execute(p, cx).boxed(),
            Err(e) => {
                futures::future::ready(Err(ToolError::invalid_arguments(self.inner.name(), e)))
                    .boxed()
            }
        }
    }
}
