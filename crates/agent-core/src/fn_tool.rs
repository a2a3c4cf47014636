//! A tool made of a [`ToolMeta`] and an async closure, for programs that
//! use agent-core alone.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::tool::{AgentTool, AgentToolResult, ToolCallContext, ToolError, ToolMeta};

/// A tool whose call is an async closure over the validated arguments and
/// the call's context: no `impl AgentTool` to write.
///
/// ```
/// use agent_core::{AgentToolResult, FnTool, ToolMeta};
/// use serde_json::json;
///
/// let shout = FnTool::new(
///     ToolMeta::new("shout", "Upper-cases `text`.").with_parameters(json!({
///         "type": "object",
///         "properties": {"text": {"type": "string"}},
///         "required": ["text"]
///     })),
///     |args, _cx| async move {
///         let text = args["text"].as_str().unwrap_or_default().to_uppercase();
///         Ok(AgentToolResult::text(text))
///     },
/// );
/// // Any mix of tools goes into the options as they are.
/// let options = agent_core::AgentOptions::new(
///     agent_ai::Model::new("scripted", "demo"),
///     std::sync::Arc::new(agent_ai::providers::scripted::ScriptedClient::from_jsonl("").unwrap()),
/// )
/// .with_tools([shout]);
/// assert_eq!(options.tools[0].name(), "shout");
/// ```
pub struct FnTool<F> {
    meta: ToolMeta,
    call: F,
}

impl<F, Fut> FnTool<F>
where
    F: Fn(Value, ToolCallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
{
    /// A tool described by `meta` that runs `call`.
    pub fn new(meta: ToolMeta, call: F) -> Self {
        FnTool { meta, call }
    }
}

impl<F> std::fmt::Debug for FnTool<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool").field("meta", &self.meta).finish()
    }
}

impl<F, Fut> AgentTool for FnTool<F>
where
    F: Fn(Value, ToolCallContext) -> Fut + Send + Sync + 'static,
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
        (self.call)(params, cx).boxed()
    }
}

/// Anything [`AgentOptions::with_tools`](crate::AgentOptions::with_tools)
/// takes as a tool: an `Arc<dyn AgentTool>`, an `Arc` of a concrete tool,
/// or a [`FnTool`] by value.
pub trait IntoAgentTool {
    /// The tool, shared.
    fn into_agent_tool(self) -> Arc<dyn AgentTool>;
}

impl IntoAgentTool for Arc<dyn AgentTool> {
    fn into_agent_tool(self) -> Arc<dyn AgentTool> {
        self
    }
}

impl<T: AgentTool + 'static> IntoAgentTool for Arc<T> {
    fn into_agent_tool(self) -> Arc<dyn AgentTool> {
        self
    }
}

impl<F, Fut> IntoAgentTool for FnTool<F>
where
    F: Fn(Value, ToolCallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
{
    fn into_agent_tool(self) -> Arc<dyn AgentTool> {
        Arc::new(self)
    }
}
