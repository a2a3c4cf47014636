//! Extensions: Rust code that registers tools and intercepts tool calls.

use std::sync::Arc;

use agent_ai::{ContentBlock, Usage};
use agent_core::{
    AfterToolCallHook, AfterToolCallResult, BeforeToolCallHook, BeforeToolCallResult,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use agent_tool::ToolDefinition;

/// A `tool_call` event: a call about to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallEvent {
    /// Tool name.
    pub tool_name: String,
    /// Tool call id.
    pub tool_call_id: String,
    /// Validated arguments (as rewritten by earlier handlers).
    pub input: Value,
}

/// A `tool_call` handler's decision. The default lets the call run unchanged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCallDecision {
    /// Refuse the call.
    pub block: bool,
    /// Why (shown to the model).
    pub reason: Option<String>,
    /// New arguments for the call (seen by later handlers too).
    pub input: Option<Value>,
}

impl ToolCallDecision {
    /// Refuses the call.
    pub fn block(reason: impl Into<String>) -> Self {
        ToolCallDecision {
            block: true,
            reason: Some(reason.into()),
            input: None,
        }
    }

    /// Runs the call with other arguments.
    pub fn rewrite(input: Value) -> Self {
        ToolCallDecision {
            input: Some(input),
            ..Default::default()
        }
    }
}

/// A `tool_result` event: a call has finished (fields reflect earlier patches).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultEvent {
    /// Tool name.
    pub tool_name: String,
    /// Tool call id.
    pub tool_call_id: String,
    /// Arguments the tool ran with.
    pub input: Value,
    /// Result content.
    pub content: Vec<ContentBlock>,
    /// Result details.
    pub details: Value,
    /// Whether the call failed.
    pub is_error: bool,
    /// Tool-internal usage.
    pub usage: Option<Usage>,
}

/// A `tool_result` handler's patch; `Some` fields replace, patches chain.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResultPatch {
    /// New content.
    pub content: Option<Vec<ContentBlock>>,
    /// New details.
    pub details: Option<Value>,
    /// New error flag.
    pub is_error: Option<bool>,
}

/// Handles `tool_call` events. An `Err` blocks the call.
pub type ToolCallHandler = Arc<
    dyn Fn(ToolCallEvent) -> BoxFuture<'static, Result<Option<ToolCallDecision>, String>>
        + Send
        + Sync,
>;

/// Handles `tool_result` events. An `Err` is logged and ignored.
pub type ToolResultHandler = Arc<
    dyn Fn(ToolResultEvent) -> BoxFuture<'static, Result<Option<ToolResultPatch>, String>>
        + Send
        + Sync,
>;

/// What an extension registers into.
#[derive(Default)]
pub struct ExtensionApi {
    extension: String,
    tools: Vec<(String, ToolDefinition)>,
    tool_call: Vec<(String, ToolCallHandler)>,
    tool_result: Vec<(String, ToolResultHandler)>,
}

impl std::fmt::Debug for ExtensionApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionApi")
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|(e, d)| (e.clone(), d.name().to_string()))
                    .collect::<Vec<_>>(),
            )
            .field("tool_call_handlers", &self.tool_call.len())
            .field("tool_result_handlers", &self.tool_result.len())
            .finish()
    }
}

impl ExtensionApi {
    /// Registers a tool; a built-in of the same name is overridden.
    pub fn register_tool(&mut self, definition: ToolDefinition) {
        self.tools.push((self.extension.clone(), definition));
    }

    /// Adds a `tool_call` handler (may block, or rewrite arguments).
    pub fn on_tool_call<F, Fut>(&mut self, handler: F)
    where
        F: Fn(ToolCallEvent) -> Fut + Send + Sync + 'static,
        Fut:
            std::future::Future<Output = Result<Option<ToolCallDecision>, String>> + Send + 'static,
    {
        let handler: ToolCallHandler = Arc::new(move |e| handler(e).boxed());
        self.tool_call.push((self.extension.clone(), handler));
    }

    /// Adds a `tool_result` handler (may patch content, details, isError).
    pub fn on_tool_result<F, Fut>(&mut self, handler: F)
    where
        F: Fn(ToolResultEvent) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Option<ToolResultPatch>, String>> + Send + 'static,
    {
        let handler: ToolResultHandler = Arc::new(move |e| handler(e).boxed());
        self.tool_result.push((self.extension.clone(), handler));
    }

    /// Tools registered so far, with the extension that registered each.
    pub fn tools(&self) -> &[(String, ToolDefinition)] {
        &self.tools
    }

    /// Loads extensions in order: each one's `register` runs with its name attached.
    pub fn load(extensions: &[Arc<dyn Extension>]) -> Self {
        let mut api = ExtensionApi::default();
        for extension in extensions {
            api.extension = extension.name().to_string();
            extension.register(&mut api);
        }
        api.extension.clear();
        api
    }

    /// The loop hook running every `tool_call` handler in load order: the first
    /// block wins; rewrites chain; a failing handler blocks the call with a message
    /// naming its extension. `None` when no handler is registered.
    pub fn before_tool_call_hook(&self) -> Option<BeforeToolCallHook> {
        if self.tool_call.is_empty() {
            return None;
        }
        let handlers = self.tool_call.clone();
        Some(Arc::new(move |ctx, _cancel| {
            let handlers = handlers.clone();
            async move {
                let mut input = ctx.args.clone();
                let mut rewritten = false;
                for (extension, handler) in handlers {
                    let event = ToolCallEvent {
                        tool_name: ctx.tool_call.name.clone(),
                        tool_call_id: ctx.tool_call.id.clone(),
                        input: input.clone(),
                    };
                    match handler(event).await {
                        Err(e) => {
                            return Ok(Some(BeforeToolCallResult::block(format!(
                                "Extension \"{extension}\" failed, blocking execution: {e}"
                            ))));
                        }
                        Ok(Some(decision)) if decision.block => {
                            return Ok(Some(BeforeToolCallResult {
                                block: true,
                                reason: decision.reason,
                                ..Default::default()
                            }));
                        }
                        Ok(Some(decision)) => {
                            if let Some(new_input) = decision.input {
                                input = new_input;
                                rewritten = true;
                            }
                        }
                        Ok(None) => {}
                    }
                }
                Ok(rewritten.then(|| BeforeToolCallResult::rewrite(input)))
            }
            .boxed()
        }))
    }

    /// The loop hook running every `tool_result` handler in load order, each
    /// seeing the previous patches; handler errors are logged and ignored. `None`
    /// when no handler is registered.
    pub fn after_tool_call_hook(&self) -> Option<AfterToolCallHook> {
        if self.tool_result.is_empty() {
            return None;
        }
        let handlers = self.tool_result.clone();
        Some(Arc::new(move |ctx, _cancel| {
            let handlers = handlers.clone();
            async move {
                let mut event = ToolResultEvent {
                    tool_name: ctx.tool_call.name.clone(),
                    tool_call_id: ctx.tool_call.id.clone(),
                    input: ctx.args.clone(),
                    content: ctx.result.content.clone(),
                    details: ctx.result.details.clone(),
                    is_error: ctx.is_error,
                    usage: ctx.result.usage,
                };
                let mut changed = AfterToolCallResult::default();
                for (extension, handler) in handlers {
                    match handler(event.clone()).await {
                        Ok(Some(patch)) => {
                            if let Some(content) = patch.content {
                                event.content = content.clone();
                                changed.content = Some(content);
                            }
                            if let Some(details) = patch.details {
                                event.details = details.clone();
                                changed.details = Some(details);
                            }
                            if let Some(is_error) = patch.is_error {
                                event.is_error = is_error;
                                changed.is_error = Some(is_error);
                            }
                        }
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(%extension, error = %e, "tool_result handler failed; ignored");
                        }
                    }
                }
                Ok((changed != AfterToolCallResult::default()).then_some(changed))
            }
            .boxed()
        }))
    }
}

/// An extension: registers tools and handlers when loaded.
///
/// ```
/// use std::sync::Arc;
/// use coding_agent::{Extension, ExtensionApi, ToolCallDecision};
///
/// struct NoRm;
/// impl Extension for NoRm {
///     fn name(&self) -> &str { "no-rm" }
///     fn register(&self, api: &mut ExtensionApi) {
///         api.on_tool_call(|event| async move {
///             let cmd = event.input["command"].as_str().unwrap_or_default().to_string();
///             Ok((event.tool_name == "bash" && cmd.contains("rm -rf"))
///                 .then(|| ToolCallDecision::block("rm -rf is not allowed")))
///         });
///     }
/// }
/// let api = ExtensionApi::load(&[Arc::new(NoRm) as Arc<dyn Extension>]);
/// assert!(api.before_tool_call_hook().is_some());
/// ```
pub trait Extension: Send + Sync {
    /// Name used in messages and logs.
    fn name(&self) -> &str;
    /// Registers tools and handlers.
    fn register(&self, api: &mut ExtensionApi);
}
