//! [`tool`]: a [`ToolDefinition`] from a name, a description and an async
//! closure, for the common case where a whole trait impl is too much.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use agent_core::{AgentToolResult, ToolError, ToolMeta};
use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::definition::{CallContext, ToolDefinition};

/// Starts a closure tool named `name`; finish it with [`ToolBuilder::execute`].
///
/// ```
/// use coding_agent::{AgentToolResult, ToolDefinition, tool};
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
        core: agent_core::fn_tool(name),
        prompt_snippet: None,
        prompt_guidelines: Vec::new(),
    }
}

/// The metadata of a closure tool being built (see [`tool`]).
#[derive(Debug, Clone)]
pub struct ToolBuilder {
    /// The loop layer's builder holds the metadata both layers share.
    core: agent_core::FnToolBuilder,
    prompt_snippet: Option<String>,
    prompt_guidelines: Vec<String>,
}

impl ToolBuilder {
    /// Short human-readable label (default: the name).
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.core = self.core.label(label);
        self
    }

    /// What the tool does, written for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.core = self.core.description(description);
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

    /// Runs a batch holding a call of this tool one call at a time.
    pub fn sequential(mut self) -> Self {
        self.core = self.core.sequential();
        self
    }

    /// Uses this JSON Schema instead of the one derived from the closure's
    /// parameter type.
    pub fn parameters(mut self, schema: Value) -> Self {
        self.core = self.core.parameters(schema);
        self
    }

    /// Finishes the tool: `run` gets the validated, deserialized arguments and
    /// a [`CallContext`]. An `Err` reaches the model as an error result.
    ///
    /// With `P = serde_json::Value` the tool takes any JSON object.
    pub fn execute<P, F, Fut>(self, run: F) -> Arc<dyn ToolDefinition>
    where
        P: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(P, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
    {
        Arc::new(ClosureTool {
            meta: self.core.into_meta::<P>(),
            prompt_snippet: self.prompt_snippet,
            prompt_guidelines: self.prompt_guidelines,
            run,
            params: PhantomData,
        })
    }
}

struct ClosureTool<P, F> {
    meta: ToolMeta,
    prompt_snippet: Option<String>,
    prompt_guidelines: Vec<String>,
    run: F,
    params: PhantomData<fn() -> P>,
}

impl<P, F, Fut> ToolDefinition for ClosureTool<P, F>
where
    P: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(P, CallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
{
    fn meta(&self) -> &ToolMeta {
        &self.meta
    }
    fn prompt_snippet(&self) -> Option<&str> {
        self.prompt_snippet.as_deref()
    }
    fn prompt_guidelines(&self) -> Vec<String> {
        self.prompt_guidelines.clone()
    }
    fn execute(
        &self,
        params: Value,
        cx: CallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>> {
        match serde_json::from_value::<P>(params) {
            Ok(p) => (self.run)(p, cx).boxed(),
            Err(e) => futures::future::ready(Err(ToolError::invalid_arguments(&self.meta.name, e)))
                .boxed(),
        }
    }
}
