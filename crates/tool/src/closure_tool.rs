//! [`tool`]: a [`ToolDefinition`] from a name, a description and an async
//! closure, for the common case where a whole trait impl is too much.

use std::future::Future;
use std::sync::Arc;

use agent_core::{AgentToolResult, ExecutionMode, ToolCallContext, ToolError, ToolMeta};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::definition::{PathArgument, ToolDefinition, ToolHints};
use crate::typed::object_params_schema;

/// Starts a closure tool named `name`; finish it with [`ToolBuilder::execute`].
///
/// ```
/// use agent_tool::{AgentToolResult, tool};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Params {
///     /// Text whose words to count.
///     text: String,
/// }
///
/// let word_count = tool("word_count")
///     .description("Counts the words in a text.")
///     .prompt_snippet("Count words in a text")
///     .execute(|p: Params, _cx| async move {
///         Ok(AgentToolResult::text(p.text.split_whitespace().count().to_string()))
///     });
/// assert_eq!(word_count.name(), "word_count");
/// assert_eq!(word_count.parameters()["required"], serde_json::json!(["text"]));
/// ```
pub fn tool(name: impl Into<String>) -> ToolBuilder {
    ToolBuilder {
        meta: ToolMeta::new(name, ""),
        parameters: None,
        prompt_snippet: None,
        prompt_guidelines: Vec::new(),
        path_arguments: Vec::new(),
        command_argument: None,
        hints: ToolHints::default(),
    }
}

/// The metadata of a closure tool being built (see [`tool`]).
#[derive(Debug, Clone)]
pub struct ToolBuilder {
    meta: ToolMeta,
    parameters: Option<Value>,
    prompt_snippet: Option<String>,
    prompt_guidelines: Vec<String>,
    path_arguments: Vec<PathArgument>,
    command_argument: Option<String>,
    hints: ToolHints,
}

impl ToolBuilder {
    /// Short human-readable label (default: the name).
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.meta.label = label.into();
        self
    }

    /// What the tool does, written for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.meta.description = description.into();
        self
    }

    /// The line for the system prompt's "Available tools" list (without one
    /// the tool is callable but not listed there).
    pub fn prompt_snippet(mut self, snippet: impl Into<String>) -> Self {
        self.prompt_snippet = Some(snippet.into());
        self
    }

    /// Adds a bullet to the system prompt's "Guidelines".
    pub fn guideline(mut self, guideline: impl Into<String>) -> Self {
        self.prompt_guidelines.push(guideline.into());
        self
    }

    /// Asks the provider to constrain the model's arguments to the schema
    /// (OpenAI's and Anthropic's strict tools).
    pub fn constrained_sampling(mut self, constrained: agent_core::ConstrainedSampling) -> Self {
        self.meta.constrained_sampling = Some(constrained);
        self
    }

    /// Runs a batch holding a call of this tool one call at a time.
    pub fn sequential(mut self) -> Self {
        self.meta.execution_mode = Some(ExecutionMode::Sequential);
        self
    }

    /// Uses this JSON Schema instead of the one derived from the closure's
    /// parameter type.
    pub fn parameters(mut self, schema: Value) -> Self {
        self.parameters = Some(schema);
        self
    }

    /// Declares that argument `name` is a path the tool reads or writes, so
    /// `Read(...)` and `Edit(...)` permission rules cover it (see
    /// [`PathArgument`]).
    pub fn path_argument(mut self, argument: PathArgument) -> Self {
        self.path_arguments.push(argument);
        self
    }

    /// Declares that argument `name` is a shell command line the tool runs,
    /// so `Bash(...)` permission rules judge it.
    pub fn command_argument(mut self, name: impl Into<String>) -> Self {
        self.command_argument = Some(name.into());
        self
    }

    /// Behaviour hints (read-only, destructive, open world).
    pub fn hints(mut self, hints: ToolHints) -> Self {
        self.hints = hints;
        self
    }

    /// Finishes the tool: `run` gets the validated, deserialized arguments and
    /// the call's [`ToolCallContext`]. An `Err` reaches the model as an error
    /// result.
    ///
    /// With `P = serde_json::Value` the tool takes any JSON object.
    pub fn execute<P, F, Fut>(self, run: F) -> ToolDefinition
    where
        P: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(P, ToolCallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
    {
        let mut meta = self.meta;
        meta.parameters = self.parameters.unwrap_or_else(object_params_schema::<P>);
        // Arguments that validate but do not deserialize into `P` (a
        // schema looser than the type) are the model's error, named.
        let name = meta.name.clone();
        let tool = agent_core::FnTool::new(meta, move |params: Value, cx| {
            let call = serde_json::from_value::<P>(params).map(|p| run(p, cx));
            let name = name.clone();
            async move {
                match call {
                    Ok(running) => running.await,
                    Err(e) => Err(ToolError::invalid_arguments(&name, e)),
                }
            }
        });
        let mut definition = ToolDefinition::new(Arc::new(tool))
            .with_guidelines(self.prompt_guidelines)
            .with_hints(self.hints);
        if let Some(snippet) = self.prompt_snippet {
            definition = definition.with_prompt_snippet(snippet);
        }
        for argument in self.path_arguments {
            definition = definition.with_path_argument(argument);
        }
        if let Some(argument) = self.command_argument {
            definition = definition.with_command_argument(argument);
        }
        definition
    }
}
