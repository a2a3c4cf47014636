//! [`fn_tool`]: an [`AgentTool`] from a name, a description and an async
//! closure, for programs that use the loop without the product layer.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tool::{
    AgentTool, AgentToolResult, ExecutionMode, ToolCallContext, ToolError, ToolMeta,
};
use crate::typed::object_params_schema;

/// Starts a closure tool for the bare loop; finish it with
/// [`FnToolBuilder::execute`]. (The product layer's `coding_agent::tool` is
/// the same with prompt metadata and the session's context.)
///
/// ```
/// use agent_core::{AgentTool, AgentToolResult, fn_tool};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Params {
///     /// Text to shout.
///     text: String,
/// }
///
/// let shout = fn_tool("shout")
///     .description("Upper-cases text.")
///     .execute(|p: Params, _cx| async move { Ok(AgentToolResult::text(p.text.to_uppercase())) });
/// assert_eq!(shout.name(), "shout");
/// assert_eq!(shout.parameters()["required"], serde_json::json!(["text"]));
/// ```
pub fn fn_tool(name: impl Into<String>) -> FnToolBuilder {
    FnToolBuilder {
        meta: ToolMeta::new(name, ""),
        parameters: None,
    }
}

/// A closure tool being built (see [`fn_tool`]).
#[derive(Debug, Clone)]
pub struct FnToolBuilder {
    meta: ToolMeta,
    parameters: Option<Value>,
}

impl FnToolBuilder {
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

    /// Runs a batch holding a call of this tool one call at a time.
    pub fn sequential(mut self) -> Self {
        self.meta.execution_mode = Some(ExecutionMode::Sequential);
        self
    }

    /// Uses this JSON Schema instead of the one derived from the parameter type.
    pub fn parameters(mut self, schema: Value) -> Self {
        self.parameters = Some(schema);
        self
    }

    /// The finished metadata for parameter type `P`: the schema set with
    /// [`FnToolBuilder::parameters`], else the one derived from `P`. (The
    /// product layer's closure builder finishes its tools with this too.)
    pub fn into_meta<P: JsonSchema>(self) -> ToolMeta {
        let mut meta = self.meta;
        meta.parameters = self.parameters.unwrap_or_else(object_params_schema::<P>);
        meta
    }

    /// Finishes the tool: `run` gets the validated, deserialized arguments
    /// and a [`ToolCallContext`]; an `Err` reaches the model as an error result.
    pub fn execute<P, F, Fut>(self, run: F) -> Arc<dyn AgentTool>
    where
        P: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(P, ToolCallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
    {
        let mut meta = self.meta;
        meta.parameters = self.parameters.unwrap_or_else(object_params_schema::<P>);
        Arc::new(FnTool {
            meta,
            run,
            params: PhantomData,
        })
    }
}

struct FnTool<P, F> {
    meta: ToolMeta,
    run: F,
    params: PhantomData<fn() -> P>,
}

impl<P, F, Fut> AgentTool for FnTool<P, F>
where
    P: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(P, ToolCallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
{
    fn meta(&self) -> &ToolMeta {
        &self.meta
    }
    fn execute(
        &self,
        params: Value,
        cx: ToolCallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>> {
        match serde_json::from_value::<P>(params) {
            Ok(p) => (self.run)(p, cx).boxed(),
            Err(e) => futures::future::ready(Err(ToolError::invalid_arguments(&self.meta.name, e)))
                .boxed(),
        }
    }
}
