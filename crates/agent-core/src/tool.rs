//! The tool contract the loop executes: [`AgentTool`] and what it returns.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_ai::{ConstrainedSampling, ContentBlock, Tool, Usage};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::extensions::Extensions;

/// How a tool wants to be scheduled relative to the other calls of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionMode {
    /// The whole batch runs one call at a time if any of its tools asks for this.
    Sequential,
    /// May run concurrently with the other calls of its batch (the default).
    #[default]
    Parallel,
}

/// What a tool returns: content for the model plus data for people and programs.
///
/// ```
/// use agent_core::AgentToolResult;
/// let r = AgentToolResult::text("3 files").with_details(serde_json::json!({"count": 3}));
/// assert_eq!(r.text_content(), "3 files");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentToolResult {
    /// What the model sees: text and image blocks.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Structured data for UIs and logs; never sent to the model. `null` when absent.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
    /// Tokens used by work inside the tool (not counted as context).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Names of tools this result introduced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_tool_names: Vec<String>,
    /// Asks the loop to stop after this batch (honoured only if every result asks).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terminate: bool,
}

impl AgentToolResult {
    /// A result with one text block and no details.
    pub fn text(text: impl Into<String>) -> Self {
        AgentToolResult {
            content: vec![ContentBlock::text(text)],
            ..Default::default()
        }
    }

    /// The same result with `details` set.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// The shape every failure takes: one text block, `details` `{}`.
    pub fn error(message: impl Into<String>) -> Self {
        AgentToolResult {
            content: vec![ContentBlock::text(message)],
            details: Value::Object(Default::default()),
            ..Default::default()
        }
    }

    /// All text blocks joined with newlines.
    pub fn text_content(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A tool failure. The loop turns it into an error result the model can read.
///
/// ```
/// use agent_core::ToolError;
/// let e: ToolError = "Path not found: /x".into();
/// assert_eq!(e.to_string(), "Path not found: /x");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// An error with the given model-facing message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
        }
    }

    /// The standard cancellation error, `Operation aborted`.
    pub fn aborted() -> Self {
        ToolError::new(ABORTED_MESSAGE)
    }

    /// Validated arguments that still do not deserialize into the tool's
    /// parameter type (a schema looser than the type).
    pub fn invalid_arguments(tool: &str, error: impl std::fmt::Display) -> Self {
        ToolError::new(format!("Invalid arguments for tool \"{tool}\": {error}"))
    }

    /// A file-system error that names the path it happened on, which the
    /// bare `io::Error` text ("No such file or directory (os error 2)")
    /// does not.
    ///
    /// ```
    /// use agent_core::ToolError;
    /// let e = std::io::Error::from(std::io::ErrorKind::NotFound);
    /// let err = ToolError::io(std::path::Path::new("/srv/app/notes.txt"), &e);
    /// assert_eq!(err.message(), "/srv/app/notes.txt: entity not found");
    /// ```
    pub fn io(path: &std::path::Path, error: &std::io::Error) -> Self {
        ToolError::new(format!("{}: {error}", path.display()))
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Text of the error a cancelled operation reports.
pub const ABORTED_MESSAGE: &str = "Operation aborted";

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::new(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::new(message)
    }
}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError::new(e.to_string())
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        ToolError::new(e.to_string())
    }
}

impl From<agent_ai::ValidationError> for ToolError {
    fn from(e: agent_ai::ValidationError) -> Self {
        ToolError::new(e.to_string())
    }
}

type UpdateFn = dyn Fn(AgentToolResult) + Send + Sync;

/// Where a running tool sends partial results (progress).
///
/// Cheap to clone. Once the loop has finalised the call the sink is closed and
/// further updates are silently dropped, so a tool never has to track that.
#[derive(Clone)]
pub struct ToolUpdateSink {
    send: Option<Arc<UpdateFn>>,
    closed: Arc<AtomicBool>,
}

impl std::fmt::Debug for ToolUpdateSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolUpdateSink")
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl ToolUpdateSink {
    /// A sink that calls `f` for every update until closed.
    pub fn new(f: impl Fn(AgentToolResult) + Send + Sync + 'static) -> Self {
        ToolUpdateSink {
            send: Some(Arc::new(f)),
            closed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A sink that drops everything (for running a tool outside the loop).
    pub fn noop() -> Self {
        ToolUpdateSink {
            send: None,
            closed: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Sends a partial result; dropped when the sink is closed.
    pub fn send(&self, partial: AgentToolResult) {
        if self.is_closed() {
            return;
        }
        if let Some(f) = &self.send {
            f(partial);
        }
    }

    /// Stops delivery of any later update.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Whether updates are still delivered.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

/// A tool the agent loop can run.
///
/// The trait is object safe: the loop holds `Arc<dyn AgentTool>`. `execute`
/// returns a boxed future; most tools are easier to write with `agent-tool`'s
/// `TypedTool`, which derives the schema and parses arguments.
///
/// `execute` reports failure with `Err(ToolError)`: never encode an error in the
/// content of an `Ok` result. Tools should watch `cancel` and return
/// [`ToolError::aborted`] promptly when it fires.
pub trait AgentTool: Send + Sync {
    /// Everything that describes the tool, in one value.
    fn meta(&self) -> &ToolMeta;

    /// Name the model calls the tool by (from [`AgentTool::meta`]).
    fn name(&self) -> &str {
        &self.meta().name
    }

    /// Short human-readable label for UIs (from [`AgentTool::meta`]).
    fn label(&self) -> &str {
        &self.meta().label
    }

    /// What the tool does, written for the model (from [`AgentTool::meta`]).
    fn description(&self) -> &str {
        &self.meta().description
    }

    /// JSON Schema of the arguments (from [`AgentTool::meta`]).
    fn parameters(&self) -> &Value {
        &self.meta().parameters
    }

    /// Scheduling preference (from [`AgentTool::meta`]); `None` means parallel.
    fn execution_mode(&self) -> Option<ExecutionMode> {
        self.meta().execution_mode
    }

    /// Whether the provider should constrain the model's arguments to the
    /// schema (from [`AgentTool::meta`]); `None` means not asked.
    fn constrained_sampling(&self) -> Option<ConstrainedSampling> {
        self.meta().constrained_sampling
    }

    /// Repairs raw arguments before validation (e.g. legacy shapes). Default: unchanged.
    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        Ok(args)
    }

    /// Runs one call: the validated arguments, then the call's context (id,
    /// cancellation token, update sink).
    fn execute(
        &self,
        params: Value,
        cx: ToolCallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>>;

    /// The model-facing description of this tool.
    fn to_tool(&self) -> Tool {
        Tool {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters().clone(),
            constrained_sampling: self.constrained_sampling(),
        }
    }
}

/// What describes a tool: name, label, description, argument schema and
/// scheduling preference. One value instead of a getter per field, so a
/// wrapper forwards it whole.
///
/// ```
/// use agent_core::ToolMeta;
/// let meta = ToolMeta::new("shout", "Upper-cases text.")
///     .with_parameters(serde_json::json!({"type": "object"}))
///     .sequential();
/// assert_eq!(meta.label, "shout");
/// assert_eq!(meta.execution_mode, Some(agent_core::ExecutionMode::Sequential));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolMeta {
    /// Name the model calls the tool by.
    pub name: String,
    /// Short human-readable label (the name unless set).
    pub label: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
    /// Scheduling preference; `None` means parallel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<ExecutionMode>,
    /// Asks the provider to constrain the model's arguments to
    /// `parameters` (strict tools); `None` means not asked. With it set,
    /// a `null` the model sends for an optional argument whose schema does
    /// not allow `null` is taken as absent (strict mode makes optional
    /// arguments nullable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained_sampling: Option<ConstrainedSampling>,
}

impl ToolMeta {
    /// A tool taking any object, labelled with its name, scheduled in parallel.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        let name = name.into();
        ToolMeta {
            label: name.clone(),
            name,
            description: description.into(),
            parameters: serde_json::json!({"type": "object"}),
            execution_mode: None,
            constrained_sampling: None,
        }
    }

    /// The same with this label.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// The same with this argument schema.
    pub fn with_parameters(mut self, parameters: Value) -> Self {
        self.parameters = parameters;
        self
    }

    /// The same, asking the provider to constrain the model's arguments to
    /// the schema.
    ///
    /// ```
    /// use agent_ai::ConstrainedSampling;
    /// let meta = agent_core::ToolMeta::new("todo", "Adds a todo.")
    ///     .with_constrained_sampling(ConstrainedSampling::prefer());
    /// assert_eq!(meta.constrained_sampling, Some(ConstrainedSampling::prefer()));
    /// ```
    pub fn with_constrained_sampling(mut self, constrained: ConstrainedSampling) -> Self {
        self.constrained_sampling = Some(constrained);
        self
    }

    /// The same, asking for its batch to run one call at a time.
    pub fn sequential(mut self) -> Self {
        self.execution_mode = Some(ExecutionMode::Sequential);
        self
    }
}

/// What a call gets besides its arguments: its id, its cancellation token,
/// the sink for progress updates, and the host's typed [`Extensions`]
/// (a session puts its working directory, operations, mutation queue and
/// settings there).
///
/// ```
/// use agent_core::{Extensions, ToolCallContext};
///
/// struct ProjectName(String);
///
/// let cx = ToolCallContext::new("call-1")
///     .with_extensions(Extensions::new().with(ProjectName("demo".into())));
/// assert_eq!(cx.get::<ProjectName>().map(|p| p.0.as_str()), Some("demo"));
/// ```
#[derive(Clone)]
pub struct ToolCallContext {
    /// The id the model gave this call.
    pub call_id: String,
    /// Fires when the call is cancelled.
    pub cancel: CancellationToken,
    /// Sends partial results while the call runs.
    pub updates: ToolUpdateSink,
    /// Typed values from the host (see [`AgentLoopConfig::tool_extensions`](crate::AgentLoopConfig::tool_extensions)).
    pub extensions: Extensions,
}

impl ToolCallContext {
    /// A context for one call with id `call_id`, a fresh cancellation token
    /// and no progress receiver (for running a tool outside the loop).
    pub fn new(call_id: impl Into<String>) -> Self {
        ToolCallContext {
            call_id: call_id.into(),
            cancel: CancellationToken::new(),
            updates: ToolUpdateSink::noop(),
            extensions: Extensions::new(),
        }
    }

    /// The same context with these extensions.
    pub fn with_extensions(mut self, extensions: Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// The extension of type `T`, if the host provided one.
    pub fn get<T: std::any::Any + Send + Sync>(&self) -> Option<&T> {
        self.extensions.get::<T>()
    }
}

impl std::fmt::Debug for ToolCallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCallContext")
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}
