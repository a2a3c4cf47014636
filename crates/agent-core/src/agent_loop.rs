//! The agent loop: stream a response, run its tool calls, repeat.

use std::sync::Arc;

use agent_ai::{
    AssistantMessage, AssistantMessageEvent, Context, Message, StopReason, StreamOptions,
};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::compaction::CompactionReason;
use crate::config::{AgentContext, AgentLoopConfig, MessageSource};
use crate::event::{AgentEvent, EventSink};
use crate::tool_execution::execute_tool_calls;

/// Runs the loop for new `prompts` until the model stops asking for tools.
///
/// Prompts and every produced message are appended to `context.messages`; the
/// messages this run added are returned (and sent in `agent_end`). The loop never
/// fails: model errors end the run with an assistant message whose `stopReason`
/// is `error` or `aborted`, tool failures become error results.
pub async fn run_agent_loop(
    prompts: Vec<Message>,
    context: &mut AgentContext,
    config: &AgentLoopConfig,
    cancel: CancellationToken,
    emit: &EventSink,
) -> Vec<Message> {
    let mut added = Vec::new();
    emit(&AgentEvent::AgentStart);
    emit(&AgentEvent::TurnStart);
    for prompt in prompts {
        emit(&AgentEvent::MessageStart {
            message: prompt.clone(),
        });
        emit(&AgentEvent::MessageEnd {
            message: prompt.clone(),
        });
        context.messages.push(prompt.clone());
        added.push(prompt);
    }
    run_turns(context, config, cancel, emit, &mut added, true).await;
    emit(&AgentEvent::AgentEnd {
        messages: added.clone(),
    });
    added
}

/// Continues from the current transcript without a new prompt (e.g. after an
/// error or to answer pending tool results). Emits the same events as
/// [`run_agent_loop`], minus the prompt messages.
pub async fn run_agent_loop_continue(
    context: &mut AgentContext,
    config: &AgentLoopConfig,
    cancel: CancellationToken,
    emit: &EventSink,
) -> Vec<Message> {
    let mut added = Vec::new();
    emit(&AgentEvent::AgentStart);
    emit(&AgentEvent::TurnStart);
    run_turns(context, config, cancel, emit, &mut added, true).await;
    emit(&AgentEvent::AgentEnd {
        messages: added.clone(),
    });
    added
}

/// Runs the loop in a task and returns its events as a stream.
///
/// The stream ends after `agent_end`. The final context is discarded; use
/// [`run_agent_loop`] to keep it.
pub fn agent_loop(
    prompts: Vec<Message>,
    mut context: AgentContext,
    config: AgentLoopConfig,
    cancel: CancellationToken,
) -> futures::stream::BoxStream<'static, AgentEvent> {
    let (tx, rx) = futures::channel::mpsc::unbounded();
    let emit: EventSink = Arc::new(move |e: &AgentEvent| {
        let _ = tx.unbounded_send(e.clone());
    });
    tokio::spawn(async move {
        run_agent_loop(prompts, &mut context, &config, cancel, &emit).await;
    });
    rx.boxed()
}

async fn run_turns(
    context: &mut AgentContext,
    config: &AgentLoopConfig,
    cancel: CancellationToken,
    emit: &EventSink,
    added: &mut Vec<Message>,
    mut first_turn: bool,
) {
    let poll = |source: &Option<MessageSource>| source.as_ref().map(|f| f()).unwrap_or_default();
    let mut pending = poll(&config.steering_messages);
    let mut snapshots = crate::hook_snapshot::HookSnapshot::default();
    loop {
        let mut more_tool_calls = true;
        while more_tool_calls || !pending.is_empty() {
            if !first_turn {
                emit(&AgentEvent::TurnStart);
            }
            first_turn = false;
            for message in pending.drain(..) {
                emit(&AgentEvent::MessageStart {
                    message: message.clone(),
                });
                emit(&AgentEvent::MessageEnd {
                    message: message.clone(),
                });
                context.messages.push(message.clone());
                added.push(message);
            }

            if let Some(refresh) = &config.refresh_context {
                refresh(context);
            }
            if let Some(compactor) = &config.compactor
                && compactor.needs_compaction(&context.messages)
            {
                compact(
                    context,
                    compactor.as_ref(),
                    CompactionReason::Threshold,
                    &cancel,
                    emit,
                )
                .await;
            }
            let mut assistant = stream_assistant_response(context, config, &cancel, emit).await;
            if let Some(compactor) = &config.compactor
                && assistant.stop_reason == StopReason::Error
                && compactor.is_overflow(&assistant)
                && compact(
                    context,
                    compactor.as_ref(),
                    CompactionReason::Overflow,
                    &cancel,
                    emit,
                )
                .await
            {
                // The failed response stays in the run's record; the
                // compacted transcript is asked again, once.
                added.push(Message::Assistant(assistant.clone()));
                assistant = stream_assistant_response(context, config, &cancel, emit).await;
            }
            context.messages.push(Message::Assistant(assistant.clone()));
            added.push(Message::Assistant(assistant.clone()));

            if matches!(
                assistant.stop_reason,
                StopReason::Error | StopReason::Aborted
            ) {
                // Calls of a cut-off response never run, but are answered.
                let results = crate::tool_execution::answer_unexecuted(&assistant, emit);
                for result in &results {
                    context.messages.push(Message::ToolResult(result.clone()));
                    added.push(Message::ToolResult(result.clone()));
                }
                emit(&AgentEvent::TurnEnd {
                    message: Message::Assistant(assistant),
                    tool_results: results,
                });
                return;
            }

            let calls: Vec<_> = assistant.tool_calls().cloned().collect();
            more_tool_calls = !calls.is_empty();
            let mut results = Vec::new();
            // Shared with the batch (its hooks and nested-call handles).
            let assistant = Arc::new(assistant);
            if more_tool_calls {
                let batch = execute_tool_calls(
                    &assistant,
                    calls,
                    context,
                    config,
                    &cancel,
                    emit,
                    &mut snapshots,
                )
                .await;
                more_tool_calls = !batch.terminate;
                for result in &batch.results {
                    context.messages.push(Message::ToolResult(result.clone()));
                    added.push(Message::ToolResult(result.clone()));
                }
                results = batch.results;
            }
            emit(&AgentEvent::TurnEnd {
                // A copy only if a tool kept a nested-call handle.
                message: Message::Assistant(Arc::unwrap_or_clone(assistant)),
                tool_results: results,
            });
            pending = poll(&config.steering_messages);
        }
        let follow_ups = poll(&config.follow_up_messages);
        if follow_ups.is_empty() {
            return;
        }
        pending = follow_ups;
    }
}

/// Runs the compactor, with its events; whether the transcript was replaced.
async fn compact(
    context: &mut AgentContext,
    compactor: &dyn crate::ContextCompactor,
    reason: CompactionReason,
    cancel: &CancellationToken,
    emit: &EventSink,
) -> bool {
    emit(&AgentEvent::AutoCompactionStart {
        reason: reason.as_str().to_string(),
    });
    let outcome = compactor
        .compact(context.messages.clone(), reason, cancel.clone())
        .await;
    let aborted = cancel.is_cancelled();
    match outcome {
        Ok(done) if !aborted => {
            context.messages = done.messages;
            emit(&AgentEvent::AutoCompactionEnd {
                result: Some(done.record),
                aborted: false,
                will_retry: reason == CompactionReason::Overflow,
                error_message: None,
            });
            true
        }
        Ok(_) => {
            emit(&AgentEvent::AutoCompactionEnd {
                result: None,
                aborted: true,
                will_retry: false,
                error_message: None,
            });
            false
        }
        Err(message) => {
            tracing::warn!(error = %message, "compaction failed");
            emit(&AgentEvent::AutoCompactionEnd {
                result: None,
                aborted,
                will_retry: false,
                error_message: Some(message.to_string()),
            });
            false
        }
    }
}

/// Streams one model response, emitting `message_start` / `message_update` /
/// `message_end`, and returns the final message.
async fn stream_assistant_response(
    context: &mut AgentContext,
    config: &AgentLoopConfig,
    cancel: &CancellationToken,
    emit: &EventSink,
) -> AssistantMessage {
    let model = &config.model;
    let aborted = |partial: Option<AssistantMessage>| {
        let mut msg =
            partial.unwrap_or_else(|| AssistantMessage::empty(&model.provider, &model.id));
        msg.stop_reason = StopReason::Aborted;
        msg.error_message = Some("Request was aborted".to_string());
        msg
    };
    let finish = |msg: AssistantMessage, started: bool| {
        if !started {
            emit(&AgentEvent::MessageStart {
                message: Message::Assistant(msg.clone()),
            });
        }
        emit(&AgentEvent::MessageEnd {
            message: Message::Assistant(msg.clone()),
        });
        msg
    };
    if cancel.is_cancelled() {
        return finish(aborted(None), false);
    }
    // Without a transform the transcript moves into the request and back: no
    // copy per turn.
    let messages = match &config.transform_context {
        Some(transform) => transform(&context.messages),
        None => std::mem::take(&mut context.messages),
    };
    let mut request = Context {
        system_prompt: (!context.system_prompt.is_empty()).then(|| context.system_prompt.clone()),
        messages,
        tools: context.tools.iter().map(|t| t.to_tool()).collect(),
    };
    let options = StreamOptions {
        cancel: cancel.clone(),
        max_tokens: config.max_tokens,
        temperature: config.temperature,
        reasoning: config.reasoning,
        thinking_budgets: config.thinking_budgets,
        session_id: config.session_id.clone(),
        cache_retention: config.cache_retention,
    };
    let mut stream = config.client.stream(model, &request, options);
    if config.transform_context.is_none() {
        context.messages = std::mem::take(&mut request.messages);
    }
    let mut started = false;
    // The newest snapshot, shared with the provider: keeping only this one
    // lets the provider reuse the previous one's buffer for the next event.
    let mut last: Option<Arc<AssistantMessage>> = None;
    let owned = |last: Option<Arc<AssistantMessage>>| last.map(Arc::unwrap_or_clone);
    loop {
        // A client that ignores cancellation must not keep the loop waiting.
        let next = tokio::select! {
            biased;
            event = stream.next() => event,
            _ = cancel.cancelled() => return finish(aborted(owned(last)), started),
        };
        let Some(event) = next else {
            let mut msg =
                owned(last).unwrap_or_else(|| AssistantMessage::empty(&model.provider, &model.id));
            msg.stop_reason = StopReason::Error;
            msg.error_message = Some("model stream ended without a final event".to_string());
            return finish(msg, started);
        };
        match event {
            AssistantMessageEvent::Done { message, .. } => return finish(message, started),
            AssistantMessageEvent::Error { error, .. } => return finish(error, started),
            AssistantMessageEvent::Start { partial } => {
                if !started {
                    started = true;
                    emit(&AgentEvent::MessageStart {
                        message: Message::Assistant(AssistantMessage::clone(&partial)),
                    });
                }
                last = Some(partial);
            }
            delta => {
                let Some(partial) = delta.partial().cloned() else {
                    continue;
                };
                if !started {
                    started = true;
                    emit(&AgentEvent::MessageStart {
                        message: Message::Assistant(AssistantMessage::clone(&partial)),
                    });
                }
                let event = AgentEvent::MessageUpdate {
                    message: partial,
                    assistant_message_event: delta,
                };
                emit(&event);
                if let AgentEvent::MessageUpdate { message, .. } = event {
                    last = Some(message);
                }
            }
        }
    }
}
