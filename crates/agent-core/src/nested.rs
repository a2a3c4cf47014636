//! Tool calls made by a running tool (a script tool's `tools.read(...)`),
//! through the loop's own pipeline: [`NestedToolCalls`].

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use agent_ai::ToolCall;
use futures::future::Either;
use serde_json::Value;
use tokio::sync::{Mutex, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::tool::{ABORTED_MESSAGE, AgentTool, AgentToolResult, ExecutionMode, ToolCallContext};
use crate::tool_execution::{
    Batch, Finished, Prepared, emit_end, emit_start, failed, prepare, run_prepared,
};

/// Runs tool calls on behalf of a running tool, through the loop's own
/// pipeline: lookup, `prepare_arguments`, validation with coercion,
/// `before_tool_call` (so a permission rule that refuses a direct call
/// refuses the same call made by a script), execution with panics caught,
/// `after_tool_call`.
///
/// The loop puts one handle into the [`ToolCallContext::extensions`] of each
/// call it runs; [`NestedToolCalls::of`] finds it. Nested calls are
/// announced with `tool_execution_start` / `tool_call_decision` /
/// `tool_execution_update` / `tool_execution_end` carrying
/// `parentToolCallId`, but are no messages: only the calling tool's result
/// reaches the transcript. A nested call gets no handle of its own, so
/// nesting is one level deep.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::{Arc, Mutex};
/// use agent_ai::{Message, Model, providers::scripted::ScriptedClient};
/// use agent_core::{
///     AgentContext, AgentEvent, AgentLoopConfig, AgentTool, AgentToolResult, CancellationToken,
///     FnTool, NestedToolCalls, ToolMeta, run_agent_loop,
/// };
/// use serde_json::json;
///
/// let echo = FnTool::new(ToolMeta::new("echo", "Echoes `text`."), |args, _cx| async move {
///     Ok(AgentToolResult::text(args["text"].as_str().unwrap_or_default()))
/// });
/// // A tool that runs two tools of the run and joins their answers.
/// let twice = FnTool::new(ToolMeta::new("twice", "Echoes twice."), |_args, cx| async move {
///     let nested = NestedToolCalls::of(&cx).ok_or("not run by the loop")?;
///     assert_eq!(nested.parent_call_id(), "c1");
///     // Every tool of the run but the caller itself.
///     assert_eq!(nested.tools().iter().map(|t| t.name()).collect::<Vec<_>>(), ["echo"]);
///     let a = nested.call("echo", json!({"text": "a"}), &cx.cancel).await;
///     let b = nested.call("echo", json!({"text": "b"}), &cx.cancel).await;
///     assert_eq!((a.call_id.as_str(), b.call_id.as_str()), ("c1/1", "c1/2"));
///     assert!(!a.is_error && !b.is_error);
///     let again = nested.call("twice", json!({}), &cx.cancel).await;
///     assert!(again.is_error, "a tool cannot call itself");
///     Ok::<_, agent_core::ToolError>(AgentToolResult::text(
///         a.result.text_content() + &b.result.text_content(),
///     ))
/// });
/// let client = ScriptedClient::from_jsonl(concat!(
///     r#"{"content":[{"type":"toolCall","id":"c1","name":"twice","arguments":{}}]}"#, "\n",
///     r#"{"content":[{"type":"text","text":"done"}]}"#,
/// )).unwrap();
/// let config = AgentLoopConfig::new(Model::new("scripted", "demo"), Arc::new(client));
/// let tools: Vec<Arc<dyn AgentTool>> = vec![Arc::new(echo), Arc::new(twice)];
/// let mut context = AgentContext { tools, ..Default::default() };
/// let events = Arc::new(Mutex::new(Vec::new()));
/// let sink = events.clone();
/// run_agent_loop(
///     vec![Message::user("go")],
///     &mut context,
///     &config,
///     CancellationToken::new(),
///     &(Arc::new(move |e: &AgentEvent| sink.lock().unwrap().push(e.clone())) as agent_core::EventSink),
/// )
/// .await;
/// // Only the model's call has a result message; the nested ones are events.
/// let results: Vec<_> = context.messages.iter().filter_map(|m| m.as_tool_result()).collect();
/// assert_eq!(results.len(), 1);
/// assert_eq!(results[0].text(), "ab");
/// let nested_ends = events.lock().unwrap().iter().filter(|e| {
///     e.kind() == "tool_execution_end" && e.parent_tool_call_id() == Some("c1")
/// }).count();
/// assert_eq!(nested_ends, 3);
/// # });
/// ```
#[derive(Clone)]
pub struct NestedToolCalls {
    inner: Arc<Inner>,
}

/// One parent call's state, shared by the clones of its handle.
struct Inner {
    batch: Arc<Batch>,
    parent_id: String,
    /// The calling tool, left out of `tools`.
    parent_tool: Arc<dyn AgentTool>,
    /// The token the parent call runs with: the run's.
    parent_cancel: CancellationToken,
    /// The run's tools without the parent, made on first use (most calls
    /// never make a nested call).
    tools: OnceLock<Vec<Arc<dyn AgentTool>>>,
    /// The number of the last nested call.
    counter: AtomicUsize,
    /// Taken while a call is prepared: hooks see the calls one at a time,
    /// in call order, as they see a batch's (tokio's mutex is fair).
    preparing: Mutex<()>,
    /// One permit per executing call, every permit for a call that runs
    /// alone. One fair queue for both, so waiting calls start in call order
    /// and a sequential call waits for the calls before it and holds back
    /// those after it.
    slots: Semaphore,
    /// How many permits `slots` has: the loop's `max_parallel_tools`.
    permits: u32,
}

/// The outcome of one nested call.
#[derive(Debug, Clone)]
pub struct NestedOutcome {
    /// The nested call's id, `<parent id>/<n>`.
    pub call_id: String,
    /// Its result, after `after_tool_call`; an error result on failure.
    pub result: AgentToolResult,
    /// Whether it failed (unknown tool, invalid arguments, blocked, the
    /// tool's error or panic, aborted).
    pub is_error: bool,
}

impl NestedToolCalls {
    pub(crate) fn new(
        batch: Arc<Batch>,
        parent_id: &str,
        parent_tool: Arc<dyn AgentTool>,
        parent_cancel: CancellationToken,
    ) -> Self {
        // `acquire_many` counts in u32; no machine runs 4 billion calls at once.
        let permits = batch
            .max_parallel
            .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        NestedToolCalls {
            inner: Arc::new(Inner {
                batch,
                parent_id: parent_id.to_string(),
                parent_tool,
                parent_cancel,
                tools: OnceLock::new(),
                counter: AtomicUsize::new(0),
                preparing: Mutex::new(()),
                slots: Semaphore::new(permits),
                permits: u32::try_from(permits).unwrap_or(u32::MAX),
            }),
        }
    }

    /// The handle the loop gave this call, if it runs inside the loop (None
    /// from `ToolCallContext::new`, and inside a nested call).
    pub fn of(cx: &ToolCallContext) -> Option<&NestedToolCalls> {
        cx.get::<NestedToolCalls>()
    }

    /// The tools a nested call may name: the run's tools except the calling
    /// tool itself (a tool can never call itself, so a script cannot start a
    /// script).
    pub fn tools(&self) -> &[Arc<dyn AgentTool>] {
        let inner = &*self.inner;
        inner.tools.get_or_init(|| {
            inner
                .batch
                .tools
                .iter()
                .filter(|t| t.name() != inner.parent_tool.name())
                .cloned()
                .collect()
        })
    }

    /// The id of the calling (parent) tool call.
    pub fn parent_call_id(&self) -> &str {
        &self.inner.parent_id
    }

    /// At most this many nested calls of this parent execute at once (the
    /// loop's `max_parallel_tools`, min 1).
    pub fn max_parallel(&self) -> usize {
        self.inner.permits as usize
    }

    /// Runs one nested call: lookup among [`tools`](Self::tools) (an unknown
    /// name gets an error result naming it, from the config's
    /// `unknown_tool_message` like the loop's), `prepare_arguments`,
    /// validation, `before_tool_call`, execute, `after_tool_call`.
    ///
    /// Emits `tool_execution_start` / (`tool_call_decision`) / `update` /
    /// `end` with `parent_tool_call_id: Some(parent)` through the run's
    /// event sink, but no `message_start`/`message_end` (nested results are
    /// not messages). Call ids are `<parent>/<n>`, `n` counting from 1 per
    /// parent.
    ///
    /// Calls are prepared one at a time in call order; at most
    /// [`max_parallel`](Self::max_parallel) calls of one parent execute at
    /// once, the rest wait in call order. A call of a tool with
    /// [`ExecutionMode::Sequential`] (every call under a sequential config)
    /// runs alone among this parent's nested calls.
    ///
    /// `cancel` is the caller's token: cancelling it aborts the nested call
    /// exactly as an abort aborts a direct call (an `Operation aborted`
    /// result, whether the call waits or runs). The call is also cancelled
    /// when the parent's token fires.
    pub async fn call(&self, name: &str, args: Value, cancel: &CancellationToken) -> NestedOutcome {
        let inner = &*self.inner;
        let n = inner.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let call = ToolCall {
            id: format!("{}/{n}", inner.parent_id),
            name: name.to_string(),
            arguments: args,
            thought_signature: None,
        };
        let parent = Some(inner.parent_id.as_str());
        let emit = &inner.batch.emit;
        emit_start(emit, &call, parent);
        // The call's token fires with the caller's token (its parent) or
        // with the parent call's: the tool sees one token, as a direct call
        // does, and answers it itself.
        let token = cancel.child_token();
        let link = async {
            inner.parent_cancel.cancelled().await;
            token.cancel();
            std::future::pending::<Infallible>().await
        };
        let work = self.run(&call, &token);
        futures::pin_mut!(work, link);
        let done = match futures::future::select(work, link).await {
            Either::Left((done, _)) => done,
            Either::Right((never, _)) => match never {},
        };
        emit_end(emit, &done, parent);
        NestedOutcome {
            call_id: done.call.id,
            result: done.result,
            is_error: done.is_error,
        }
    }

    /// Prepares, waits for a slot, then executes.
    async fn run(&self, call: &ToolCall, cancel: &CancellationToken) -> Finished {
        let inner = &*self.inner;
        let batch = &inner.batch;
        let parent = Some(inner.parent_id.as_str());
        let aborted = || failed(call, ABORTED_MESSAGE, false);
        let prepared = {
            let Some(_preparing) = cancel
                .run_until_cancelled(in_order(inner.preparing.lock()))
                .await
            else {
                return aborted();
            };
            if cancel.is_cancelled() {
                return aborted();
            }
            prepare(batch, self.tools(), call, parent, cancel).await
        };
        let (tool, call, args) = match prepared {
            Prepared::Done(done) => return done,
            Prepared::Ready { tool, call, args } => (tool, call, args),
        };
        let alone = batch.sequential || tool.execution_mode() == Some(ExecutionMode::Sequential);
        let wanted = if alone { inner.permits } else { 1 };
        // The semaphore is never closed; a closed one would mean no slot.
        let Some(Ok(_slots)) = cancel
            .run_until_cancelled(in_order(inner.slots.acquire_many(wanted)))
            .await
        else {
            return failed(&call, ABORTED_MESSAGE, false);
        };
        run_prepared(batch, tool, call, args, parent, cancel).await
    }
}

/// A wait in one of tokio's fair queues that joins the queue on its first
/// poll. Under tokio's cooperative budget a wait may instead return
/// `Pending` without queueing, and be polled again after a later call
/// queued: the calls would no longer be served in call order.
fn in_order<F: std::future::Future>(wait: F) -> tokio::task::Unconstrained<F> {
    tokio::task::unconstrained(wait)
}

impl std::fmt::Debug for NestedToolCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NestedToolCalls")
            .field("parent_call_id", &self.inner.parent_id)
            .field("max_parallel", &self.inner.permits)
            .finish_non_exhaustive()
    }
}
