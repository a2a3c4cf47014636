//! [`decorate`]: change one thing about an existing tool (a rewrite of its
//! arguments, a check before it runs, a different `execute`, another
//! description or schema) and keep
//! everything else: prompt snippet, guidelines, renderers, declarations,
//! argument repair, execution mode.

use std::future::Future;
use std::sync::Arc;

use agent_core::{AgentTool, AgentToolResult, ToolCallContext, ToolError, ToolMeta};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::definition::ToolDefinition;

type Check = Arc<dyn Fn(&Value, &ToolCallContext) -> Result<(), ToolError> + Send + Sync>;
type Prepare = Arc<dyn Fn(Value) -> Result<Value, ToolError> + Send + Sync>;
type Replacement = Arc<
    dyn Fn(
            Value,
            ToolCallContext,
            Arc<dyn AgentTool>,
        ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>>
        + Send
        + Sync,
>;

/// Starts decorating `inner`; finish with [`Decorated::build`].
///
/// A `before` check sees the arguments as the model wrote them: a symlink
/// named `notes.txt` that points at `.env` passes the check below. For
/// anything that protects data, use path permission rules (`Read(./.env)`
/// deny) or the sandbox's deny globs, which judge the file actually opened.
/// With the `agent-permissions` and `coding-agent` crates, that is:
///
/// ```text
/// use agent_permissions::{PermissionGate, PermissionRules};
/// let rules = PermissionRules::from_lists(&[], &[], &["Read(./.env)", "Edit(./.env)"], &cwd)?;
/// let gate = PermissionGate::new(rules, None, &cwd, "this program");
/// let session = AgentSessionBuilder::new(model, client).permissions(gate).cwd(&cwd).build()?;
/// ```
///
/// (the rules follow symlinks and cover every tool that declares path
/// arguments; `agent-permissions`' `PermissionGate` docs have a compiled
/// example).
///
/// ```
/// use agent_tool::{AgentToolResult, ToolError, decorate, tool};
/// # let read = tool("read").prompt_snippet("Read files").execute(|_: serde_json::Value, _| async {
/// #     Ok(AgentToolResult::text("content"))
/// # });
/// // A `read` that refuses paths ending in `.env`, with its snippet,
/// // guidelines and renderers kept.
/// let guarded = decorate(read)
///     .before(|args, _cx| match args["path"].as_str() {
///         Some(p) if p.ends_with(".env") => Err(ToolError::new("Reading .env files is not allowed")),
///         _ => Ok(()),
///     })
///     .build();
/// assert_eq!(guarded.prompt_snippet(), Some("Read files"));
/// ```
pub fn decorate(inner: ToolDefinition) -> Decorated {
    Decorated {
        meta: inner.meta().clone(),
        inner,
        checks: Vec::new(),
        prepares: Vec::new(),
        replacement: None,
    }
}

/// A tool being decorated (see [`decorate`]).
pub struct Decorated {
    inner: ToolDefinition,
    /// The inner tool's metadata with the decorator's changes.
    meta: ToolMeta,
    checks: Vec<Check>,
    prepares: Vec<Prepare>,
    replacement: Option<Replacement>,
}

impl Decorated {
    /// Rewrites the raw arguments before the tool's own argument repair,
    /// validation and every hook (a permission gate included), so all of
    /// them see the rewritten call. Rewrites run in the order added.
    ///
    /// ```
    /// use agent_tool::{AgentToolResult, decorate, tool};
    /// # let read = tool("read").execute(|_: serde_json::Value, _| async { Ok(AgentToolResult::text("")) });
    /// let rooted = decorate(read)
    ///     .prepare(|mut args| {
    ///         if args["path"] == "~" {
    ///             args["path"] = "/home/remote".into();
    ///         }
    ///         Ok(args)
    ///     })
    ///     .build();
    /// let prepared = rooted.tool().prepare_arguments(serde_json::json!({"path": "~"})).unwrap();
    /// assert_eq!(prepared["path"], "/home/remote");
    /// ```
    pub fn prepare(
        mut self,
        rewrite: impl Fn(Value) -> Result<Value, ToolError> + Send + Sync + 'static,
    ) -> Self {
        self.prepares.push(Arc::new(rewrite));
        self
    }

    /// Replaces the description the model reads.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.meta.description = description.into();
        self
    }

    /// Replaces the tool's constrained-sampling request (`None`: send the
    /// schema unconstrained).
    pub fn constrained_sampling(
        mut self,
        constrained: Option<agent_core::ConstrainedSampling>,
    ) -> Self {
        self.meta.constrained_sampling = constrained;
        self
    }

    /// Replaces the JSON Schema of the arguments.
    pub fn parameters(mut self, schema: Value) -> Self {
        self.meta.parameters = schema;
        self
    }

    /// Runs `check` on the validated arguments before every call; an `Err`
    /// is the call's result and the tool does not run. Checks run in the
    /// order added.
    pub fn before(
        mut self,
        check: impl Fn(&Value, &ToolCallContext) -> Result<(), ToolError> + Send + Sync + 'static,
    ) -> Self {
        self.checks.push(Arc::new(check));
        self
    }

    /// Replaces `execute`. `run` gets the arguments, the call's context and
    /// the original tool (to delegate to, before or after its own work).
    pub fn execute<F, Fut>(mut self, run: F) -> Self
    where
        F: Fn(Value, ToolCallContext, Arc<dyn AgentTool>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static,
    {
        self.replacement = Some(Arc::new(move |args, cx, inner| {
            run(args, cx, inner).boxed()
        }));
        self
    }

    /// The decorated tool.
    pub fn build(self) -> ToolDefinition {
        let tool = Arc::new(DecoratedTool {
            inner: self.inner.tool(),
            meta: self.meta,
            checks: self.checks,
            prepares: self.prepares,
            replacement: self.replacement,
        });
        self.inner.with_tool(tool)
    }
}

struct DecoratedTool {
    inner: Arc<dyn AgentTool>,
    meta: ToolMeta,
    checks: Vec<Check>,
    prepares: Vec<Prepare>,
    replacement: Option<Replacement>,
}

impl AgentTool for DecoratedTool {
    fn meta(&self) -> &ToolMeta {
        &self.meta
    }
    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        let mut args = args;
        for rewrite in &self.prepares {
            args = rewrite(args)?;
        }
        self.inner.prepare_arguments(args)
    }
    fn execute(
        &self,
        params: Value,
        cx: ToolCallContext,
    ) -> BoxFuture<'_, Result<AgentToolResult, ToolError>> {
        for check in &self.checks {
            if let Err(e) = check(&params, &cx) {
                return futures::future::ready(Err(e)).boxed();
            }
        }
        match &self.replacement {
            Some(run) => run(params, cx, self.inner.clone()),
            None => self.inner.execute(params, cx),
        }
    }
}
