//! One batch of tool calls: prepare, execute, finalise, in Pi's order.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use agent_ai::{
    AssistantMessage, Message, StopReason, ToolCall, ToolResultMessage, now_millis,
    validate_arguments,
};
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::{
    AgentContext, AgentLoopConfig, UnknownToolMessage, default_max_parallel_tools,
};
use crate::event::{AgentEvent, EventSink};
use crate::extensions::Extensions;
use crate::hook_snapshot::HookSnapshot;
use crate::hooks::{
    AfterToolCallContext, AfterToolCallHook, BeforeToolCallContext, BeforeToolCallHook,
};
use crate::nested::NestedToolCalls;
use crate::tool::{
    ABORTED_MESSAGE, AgentTool, AgentToolResult, ExecutionMode, ToolCallContext, ToolUpdateSink,
};

/// The outcome of a batch.
pub(crate) struct BatchOutcome {
    /// Tool results in the assistant message's call order.
    pub results: Vec<ToolResultMessage>,
    /// Whether every result asked to stop.
    pub terminate: bool,
}

/// A finished call: its result and whether it failed.
pub(crate) struct Finished {
    pub(crate) call: ToolCall,
    pub(crate) result: AgentToolResult,
    pub(crate) is_error: bool,
}

/// A call after preparation: ready to run, or already answered.
pub(crate) enum Prepared {
    Ready {
        tool: Arc<dyn AgentTool>,
        call: ToolCall,
        args: Value,
    },
    Done(Finished),
}

pub(crate) fn failed(call: &ToolCall, message: impl Into<String>, terminate: bool) -> Finished {
    let mut result = AgentToolResult::error(message);
    result.terminate = terminate;
    Finished {
        call: call.clone(),
        result,
        is_error: true,
    }
}

fn length_guard_message(name: &str) -> String {
    format!(
        "Tool call \"{name}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments."
    )
}

/// What every call of a batch shares: the tools, the hooks and the hooks'
/// view of the run, the host's extensions and the event sink. Owned, so a
/// [`NestedToolCalls`] handle can keep it for as long as a tool holds it.
pub(crate) struct Batch {
    /// The assistant message that asked for the calls (hooks see it).
    pub(crate) assistant: Arc<AssistantMessage>,
    /// The run's active tools.
    pub(crate) tools: Vec<Arc<dyn AgentTool>>,
    pub(crate) before: Option<BeforeToolCallHook>,
    pub(crate) after: Option<AfterToolCallHook>,
    pub(crate) unknown: Option<UnknownToolMessage>,
    /// The run as the batch began, for the hooks (built only when a hook is set).
    pub(crate) snapshot: Option<Arc<AgentContext>>,
    /// The host's extensions, without a nested-call handle.
    pub(crate) extensions: Extensions,
    pub(crate) emit: EventSink,
    /// The loop's `max_parallel_tools`, at least 1.
    pub(crate) max_parallel: usize,
    /// Whether the config asks for one call at a time.
    pub(crate) sequential: bool,
}

impl Batch {
    fn of(
        assistant: &Arc<AssistantMessage>,
        context: &AgentContext,
        config: &AgentLoopConfig,
        emit: &EventSink,
        snapshots: &mut HookSnapshot,
    ) -> Self {
        let hooked = config.before_tool_call.is_some() || config.after_tool_call.is_some();
        Batch {
            assistant: assistant.clone(),
            tools: context.tools.clone(),
            before: config.before_tool_call.clone(),
            after: config.after_tool_call.clone(),
            unknown: config.unknown_tool_message.clone(),
            snapshot: hooked.then(|| snapshots.take(context, assistant)),
            extensions: config.tool_extensions.clone(),
            emit: emit.clone(),
            max_parallel: config.max_parallel_tools.max(1),
            sequential: config.tool_execution == ExecutionMode::Sequential,
        }
    }
}

pub(crate) async fn execute_tool_calls(
    assistant: &Arc<AssistantMessage>,
    calls: Vec<ToolCall>,
    context: &AgentContext,
    config: &AgentLoopConfig,
    cancel: &CancellationToken,
    emit: &EventSink,
    snapshots: &mut HookSnapshot,
) -> BatchOutcome {
    // (result message, terminate flag), in source order.
    let mut finished: Vec<(ToolResultMessage, bool)> = Vec::with_capacity(calls.len());

    if assistant.stop_reason == StopReason::Length {
        for call in &calls {
            emit_start(emit, call, None);
            let done = failed(call, length_guard_message(&call.name), false);
            emit_end(emit, &done, None);
            finished.push(emit_result_message(emit, done));
        }
        return outcome(finished, true);
    }

    let batch = Arc::new(Batch::of(assistant, context, config, emit, snapshots));
    let sequential = batch.sequential
        || calls.iter().any(|call| {
            find_tool(&batch.tools, &call.name)
                .is_some_and(|t| t.execution_mode() == Some(ExecutionMode::Sequential))
        });

    // After an abort every remaining call still gets its start, end and
    // toolResult ("Operation aborted"): the assistant message's calls must
    // all be answered, or the next request is refused by the provider.
    if sequential {
        for call in &calls {
            emit_start(emit, call, None);
            let prepared = if cancel.is_cancelled() {
                Prepared::Done(failed(call, ABORTED_MESSAGE, false))
            } else {
                prepare(&batch, &batch.tools, call, None, cancel).await
            };
            let done = match prepared {
                Prepared::Done(done) => done,
                Prepared::Ready { tool, call, args } => {
                    run_prepared(&batch, tool, call, args, None, cancel).await
                }
            };
            emit_end(emit, &done, None);
            finished.push(emit_result_message(emit, done));
        }
        return outcome(finished, false);
    }

    // Parallel: prepare every call first (hooks run one at a time, in order), then
    // run all prepared calls together.
    let mut slots: Vec<Option<Finished>> = Vec::with_capacity(calls.len());
    let mut ready = Vec::new();
    for call in &calls {
        emit_start(emit, call, None);
        let prepared = if cancel.is_cancelled() {
            Prepared::Done(failed(call, ABORTED_MESSAGE, false))
        } else {
            prepare(&batch, &batch.tools, call, None, cancel).await
        };
        match prepared {
            Prepared::Done(done) => {
                emit_end(emit, &done, None);
                slots.push(Some(done));
            }
            Prepared::Ready { tool, call, args } => {
                ready.push((slots.len(), tool, call, args));
                slots.push(None);
            }
        }
    }
    // At most `max_parallel_tools` execute at once; the rest start, in
    // source order, as slots free up.
    let futures: Vec<_> = ready
        .into_iter()
        .map(|(index, tool, call, args)| {
            run_prepared(&batch, tool, call, args, None, cancel).map(move |done| (index, done))
        })
        .collect();
    let mut running = futures::stream::iter(futures).buffer_unordered(batch.max_parallel);
    while let Some((index, done)) = running.next().await {
        emit_end(emit, &done, None);
        slots[index] = Some(done);
    }
    for done in slots.into_iter().flatten() {
        finished.push(emit_result_message(emit, done));
    }
    outcome(finished, false)
}

/// Answers the calls of a response that failed or was aborted while it
/// streamed: none runs, each gets start, end and an error result (`Operation
/// aborted`, or a "not executed" text for a failed response), so the next
/// request has no call without its result.
pub(crate) fn answer_unexecuted(
    assistant: &AssistantMessage,
    emit: &EventSink,
) -> Vec<ToolResultMessage> {
    assistant
        .tool_calls()
        .map(|call| {
            emit_start(emit, call, None);
            let message = if assistant.stop_reason == StopReason::Aborted {
                ABORTED_MESSAGE.to_string()
            } else {
                format!(
                    "Tool call \"{}\" was not executed: the response failed before it was complete.",
                    call.name
                )
            };
            let done = failed(call, message, false);
            emit_end(emit, &done, None);
            emit_result_message(emit, done).0
        })
        .collect()
}

fn outcome(finished: Vec<(ToolResultMessage, bool)>, never_terminate: bool) -> BatchOutcome {
    let terminate = !never_terminate && !finished.is_empty() && finished.iter().all(|(_, t)| *t);
    BatchOutcome {
        results: finished.into_iter().map(|(m, _)| m).collect(),
        terminate,
    }
}

fn find_tool(tools: &[Arc<dyn AgentTool>], name: &str) -> Option<Arc<dyn AgentTool>> {
    tools.iter().find(|t| t.name() == name).cloned()
}

/// Lookup among `tools`, `prepare_arguments`, validation with coercion and
/// `before_tool_call`: the same for the model's calls and for nested ones
/// (`parent` is the calling tool call's id for a nested call; its events
/// carry it).
pub(crate) async fn prepare(
    batch: &Batch,
    tools: &[Arc<dyn AgentTool>],
    call: &ToolCall,
    parent: Option<&str>,
    cancel: &CancellationToken,
) -> Prepared {
    let Some(tool) = find_tool(tools, &call.name) else {
        let message = batch
            .unknown
            .as_ref()
            .and_then(|explain| explain(&call.name))
            .unwrap_or_else(|| format!("Tool {} not found", call.name));
        return Prepared::Done(failed(call, message, false));
    };
    let prepared = match tool.prepare_arguments(call.arguments.clone()) {
        Ok(args) => args,
        Err(e) => return Prepared::Done(failed(call, e.to_string(), false)),
    };
    // A strict schema made the optional arguments nullable: the model's
    // `null` for one it left out means "absent", not a value to coerce.
    let prepared = if tool.constrained_sampling().is_some() {
        agent_ai::providers::lowering::relax_strict_arguments(tool.parameters(), prepared)
    } else {
        prepared
    };
    let mut args = match validate_arguments(tool.name(), tool.parameters(), &prepared) {
        Ok(args) => args,
        Err(e) => return Prepared::Done(failed(call, e.to_string(), false)),
    };
    if let Some(hook) = &batch.before {
        let ctx = BeforeToolCallContext {
            assistant_message: batch.assistant.clone(),
            tool_call: call.clone(),
            args: args.clone(),
            context: batch.snapshot.clone().unwrap_or_default(),
        };
        let decision = AssertUnwindSafe(hook(ctx, cancel.clone()))
            .catch_unwind()
            .await;
        if cancel.is_cancelled() {
            return Prepared::Done(failed(call, ABORTED_MESSAGE, false));
        }
        match decision {
            Err(panic) => {
                return Prepared::Done(failed(
                    call,
                    panic_message("before_tool_call hook", &panic),
                    false,
                ));
            }
            Ok(Err(error)) => return Prepared::Done(failed(call, error.into_message(), false)),
            Ok(Ok(Some(decision))) => {
                if let Some(record) = decision.decision {
                    (batch.emit)(&AgentEvent::ToolCallDecision {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        decision: record,
                        parent_tool_call_id: parent.map(str::to_string),
                    });
                }
                if decision.block {
                    let reason = decision
                        .reason
                        .unwrap_or_else(|| "Tool execution was blocked".to_string());
                    return Prepared::Done(failed(call, reason, decision.terminate));
                }
                if let Some(new_args) = decision.args {
                    args = new_args;
                }
            }
            Ok(Ok(None)) => {}
        }
    }
    if cancel.is_cancelled() {
        return Prepared::Done(failed(call, ABORTED_MESSAGE, false));
    }
    Prepared::Ready {
        tool,
        call: call.clone(),
        args,
    }
}

/// Executes a prepared call, forwarding its progress, then applies
/// `after_tool_call`. A call of the model (`parent` `None`) gets a
/// [`NestedToolCalls`] handle in its extensions; a nested call (`parent`
/// its caller's id) gets none, so nesting stays one level deep.
pub(crate) async fn run_prepared(
    batch: &Arc<Batch>,
    tool: Arc<dyn AgentTool>,
    call: ToolCall,
    args: Value,
    parent: Option<&str>,
    cancel: &CancellationToken,
) -> Finished {
    // A call that had not started when the run was aborted never starts.
    if cancel.is_cancelled() {
        return failed(&call, ABORTED_MESSAGE, false);
    }
    let extensions = match parent {
        None => batch.extensions.clone().with(NestedToolCalls::new(
            batch.clone(),
            &call.id,
            tool.clone(),
            cancel.clone(),
        )),
        Some(_) => batch.extensions.clone(),
    };
    let (tx, mut rx) = futures::channel::mpsc::unbounded::<AgentToolResult>();
    let sink = ToolUpdateSink::new(move |partial| {
        let _ = tx.unbounded_send(partial);
    });
    let forward = |partial: AgentToolResult| {
        (batch.emit)(&AgentEvent::ToolExecutionUpdate {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            partial_result: partial,
            parent_tool_call_id: parent.map(str::to_string),
        })
    };
    let outcome = {
        let execution = AssertUnwindSafe(tool.execute(
            args.clone(),
            ToolCallContext {
                call_id: call.id.clone(),
                cancel: cancel.clone(),
                updates: sink.clone(),
                extensions,
            },
        ))
        .catch_unwind()
        .fuse();
        futures::pin_mut!(execution);
        loop {
            futures::select_biased! {
                partial = rx.next() => if let Some(partial) = partial { forward(partial) },
                done = execution => break done,
            }
        }
    };
    // Updates already queued are delivered; anything sent from now on is dropped.
    sink.close();
    while let Ok(partial) = rx.try_recv() {
        forward(partial);
    }
    let (result, is_error) = match outcome {
        Ok(Ok(result)) => (result, false),
        Ok(Err(e)) => (AgentToolResult::error(e.to_string()), true),
        Err(panic) => (
            AgentToolResult::error(panic_message(&format!("Tool {}", call.name), &panic)),
            true,
        ),
    };
    let mut done = Finished {
        call,
        result,
        is_error,
    };
    if let Some(hook) = &batch.after {
        let ctx = AfterToolCallContext {
            assistant_message: batch.assistant.clone(),
            tool_call: done.call.clone(),
            args,
            result: done.result.clone(),
            is_error: done.is_error,
            context: batch.snapshot.clone().unwrap_or_default(),
        };
        match AssertUnwindSafe(hook(ctx, cancel.clone()))
            .catch_unwind()
            .await
        {
            Ok(Ok(Some(patch))) => {
                if let Some(content) = patch.content {
                    done.result.content = content;
                }
                if let Some(details) = patch.details {
                    done.result.details = details;
                }
                if let Some(usage) = patch.usage {
                    done.result.usage = Some(usage);
                }
                if let Some(terminate) = patch.terminate {
                    done.result.terminate = terminate;
                }
                if let Some(is_error) = patch.is_error {
                    done.is_error = is_error;
                }
            }
            Ok(Ok(None)) => {}
            Ok(Err(error)) => done = failed(&done.call, error.into_message(), false),
            Err(panic) => {
                done = failed(
                    &done.call,
                    panic_message("after_tool_call hook", &panic),
                    false,
                )
            }
        }
    }
    done
}

fn panic_message(what: &str, panic: &Box<dyn std::any::Any + Send>) -> String {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    tracing::error!(%what, %detail, "panic caught during tool call");
    format!("{what} panicked: {detail}")
}

pub(crate) fn emit_start(emit: &EventSink, call: &ToolCall, parent: Option<&str>) {
    emit(&AgentEvent::ToolExecutionStart {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        args: call.arguments.clone(),
        parent_tool_call_id: parent.map(str::to_string),
    });
}

pub(crate) fn emit_end(emit: &EventSink, done: &Finished, parent: Option<&str>) {
    emit(&AgentEvent::ToolExecutionEnd {
        tool_call_id: done.call.id.clone(),
        tool_name: done.call.name.clone(),
        result: done.result.clone(),
        is_error: done.is_error,
        parent_tool_call_id: parent.map(str::to_string),
    });
}

/// Announces the call's toolResult message and returns it with its terminate flag.
fn emit_result_message(emit: &EventSink, done: Finished) -> (ToolResultMessage, bool) {
    let terminate = done.result.terminate;
    let result = ToolResultMessage {
        tool_call_id: done.call.id,
        tool_name: done.call.name,
        content: done.result.content,
        details: done.result.details,
        usage: done.result.usage,
        added_tool_names: done.result.added_tool_names,
        is_error: done.is_error,
        timestamp: now_millis(),
    };
    let message = Message::ToolResult(result.clone());
    emit(&AgentEvent::MessageStart {
        message: message.clone(),
    });
    emit(&AgentEvent::MessageEnd { message });
    (result, terminate)
}

/// Runs one tool call outside the loop with the loop's own preparation:
/// lookup among `tools`, `prepare_arguments`, validation with coercion, then
/// execution (panics caught). No hooks run. Progress goes to `on_update`.
///
/// Returns the result and whether it is an error, exactly as the loop would
/// record it.
pub async fn execute_tool_call(
    tools: &[Arc<dyn AgentTool>],
    call: &ToolCall,
    cancel: &CancellationToken,
    on_update: impl Fn(AgentToolResult) + Send + Sync + 'static,
) -> (AgentToolResult, bool) {
    execute_tool_call_with(tools, call, cancel, None, &Extensions::new(), on_update).await
}

/// [`execute_tool_call`] with a `before_tool_call` hook (for example
/// permission rules) run after validation, as the loop runs it.
///
/// The call gets a [`NestedToolCalls`] handle as in the loop (the other
/// `tools`, the same hook, [`default_max_parallel_tools`] at once); only
/// the call's own progress reaches `on_update`.
pub async fn execute_tool_call_with(
    tools: &[Arc<dyn AgentTool>],
    call: &ToolCall,
    cancel: &CancellationToken,
    before: Option<&BeforeToolCallHook>,
    extensions: &Extensions,
    on_update: impl Fn(AgentToolResult) + Send + Sync + 'static,
) -> (AgentToolResult, bool) {
    let emit: EventSink = Arc::new(move |event: &AgentEvent| {
        if let AgentEvent::ToolExecutionUpdate {
            partial_result,
            parent_tool_call_id: None,
            ..
        } = event
        {
            on_update(partial_result.clone());
        }
    });
    // Outside a run the hooks see the tools and no transcript.
    let snapshot = before.map(|_| {
        Arc::new(AgentContext {
            tools: tools.to_vec(),
            ..Default::default()
        })
    });
    let batch = Arc::new(Batch {
        assistant: Arc::new(AssistantMessage::empty("", "")),
        tools: tools.to_vec(),
        before: before.cloned(),
        after: None,
        unknown: None,
        snapshot,
        extensions: extensions.clone(),
        emit,
        max_parallel: default_max_parallel_tools(),
        sequential: false,
    });
    let done = match prepare(&batch, tools, call, None, cancel).await {
        Prepared::Done(done) => done,
        Prepared::Ready { tool, call, args } => {
            run_prepared(&batch, tool, call, args, None, cancel).await
        }
    };
    (done.result, done.is_error)
}
