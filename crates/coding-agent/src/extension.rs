//! Extensions: Rust code that registers tools and intercepts tool calls.

use std::sync::Arc;

use agent_ai::{ContentBlock, Usage};
use agent_core::{
    AfterToolCallHook, AfterToolCallResult, AgentContext, BeforeToolCallHook, BeforeToolCallResult,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use agent_tool::ToolDefinition;

/// A `tool_call` event: a call about to run.
#[derive(Debug, Clone)]
pub struct ToolCallEvent {
    /// Tool name.
    pub tool_name: String,
    /// Tool call id.
    pub tool_call_id: String,
    /// Validated arguments (as rewritten by earlier handlers).
    pub input: Value,
    /// The run as the batch of calls began: `system_prompt`, `messages`
    /// (the transcript up to and including the assistant message that asked
    /// for this call) and the active `tools` (see
    /// [`AgentContext::tool_names`]). One snapshot shared by every call and
    /// handler of the batch, so reading it copies nothing.
    pub context: Arc<AgentContext>,
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
#[derive(Debug, Clone)]
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
    /// The run as the batch of calls began (see [`ToolCallEvent::context`]);
    /// the results of the batch's other calls are not in it yet.
    pub context: Arc<AgentContext>,
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

/// What a handler's `Err` carries: any error of the extension's own, so a
/// handler can use `?` on what it calls. Its text is what the model or the
/// log sees.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// Handles `tool_call` events. An `Err` blocks the call.
pub type ToolCallHandler = Arc<
    dyn Fn(ToolCallEvent) -> BoxFuture<'static, Result<Option<ToolCallDecision>, HandlerError>>
        + Send
        + Sync,
>;

/// Handles `tool_result` events. An `Err` is logged and ignored.
pub type ToolResultHandler = Arc<
    dyn Fn(ToolResultEvent) -> BoxFuture<'static, Result<Option<ToolResultPatch>, HandlerError>>
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

    /// Adds a `tool_call` handler (may block, or rewrite arguments). The
    /// event's [`context`](ToolCallEvent::context) shows the transcript,
    /// the active tools and the system prompt.
    ///
    /// ```
    /// use coding_agent::{ExtensionApi, ToolCallDecision};
    ///
    /// let mut api = ExtensionApi::default();
    /// // Refuse a write when the conversation already asked for another one.
    /// api.on_tool_call(|event| async move {
    ///     let earlier_writes = event
    ///         .context
    ///         .messages
    ///         .iter()
    ///         .filter_map(|m| m.as_assistant())
    ///         .flat_map(|a| a.tool_calls())
    ///         .filter(|c| c.name == "write" && c.id != event.tool_call_id)
    ///         .count();
    ///     Ok((event.tool_name == "write" && earlier_writes > 0)
    ///         .then(|| ToolCallDecision::block("one write per conversation")))
    /// });
    /// assert!(api.before_tool_call_hook().is_some());
    /// ```
    pub fn on_tool_call<F, Fut>(&mut self, handler: F)
    where
        F: Fn(ToolCallEvent) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Option<ToolCallDecision>, HandlerError>>
            + Send
            + 'static,
    {
        let handler: ToolCallHandler = Arc::new(move |e| handler(e).boxed());
        self.tool_call.push((self.extension.clone(), handler));
    }

    /// Adds a `tool_result` handler (may patch content, details, isError).
    /// The event's [`context`](ToolResultEvent::context) is the run as the
    /// batch began, as for `on_tool_call`.
    pub fn on_tool_result<F, Fut>(&mut self, handler: F)
    where
        F: Fn(ToolResultEvent) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Option<ToolResultPatch>, HandlerError>>
            + Send
            + 'static,
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
                        context: ctx.context.clone(),
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
                    context: ctx.context.clone(),
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

/// The executables in `dir`, by name: regular files (links followed) with
/// an execute bit, not hidden: the extensions of an extensions directory
/// (`<agent dir>/extensions/`, a project's `.pi/extensions/`). A missing
/// directory has none.
///
/// ```
/// let dir = std::env::temp_dir().join("no-such-extensions-dir");
/// assert!(coding_agent::discover_extensions(&dir).is_empty());
/// ```
pub fn discover_extensions(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<std::path::PathBuf> = entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .collect();
    found.sort();
    found
}

/// The files in `dir` that look meant as extensions but cannot be one:
/// visible regular files without an execute bit (a `weather-tool.ts`
/// copied from a Pi setup), notes (`.md`, `.txt`) aside. Worth a warning:
/// [`discover_extensions`] skips them.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("weather-tool.ts"), "export default {}").unwrap();
/// std::fs::write(dir.path().join("README.md"), "notes").unwrap();
/// let skipped = coding_agent::non_executable_extension_files(dir.path());
/// assert_eq!(skipped, [dir.path().join("weather-tool.ts")]);
/// ```
pub fn non_executable_extension_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<std::path::PathBuf> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            !name.starts_with('.') && !name.ends_with(".md") && !name.ends_with(".txt")
        })
        .map(|e| e.path())
        .filter(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 == 0)
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod discovery_tests {
    #[test]
    fn discovery_lists_visible_executables_by_name() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for (name, mode) in [
            ("b-tool", 0o755),
            ("a-tool", 0o700),
            ("notes.md", 0o644),
            (".hidden", 0o755),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        std::fs::create_dir(dir.path().join("subdir")).unwrap();
        let names: Vec<String> = super::discover_extensions(dir.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a-tool", "b-tool"]);
    }
}
