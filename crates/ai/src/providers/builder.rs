//! Assembles a streamed assistant message and emits its events.

use std::collections::HashMap;

use futures::channel::mpsc::UnboundedSender;
use serde_json::Value;

use crate::content::{ContentBlock, ThinkingContent, ToolCall};
use crate::message::{AssistantMessage, StopReason, now_millis};
use crate::stream::AssistantMessageEvent;

/// Builds the partial message and sends one event per change.
pub(crate) struct MessageBuilder {
    msg: AssistantMessage,
    tx: UnboundedSender<AssistantMessageEvent>,
    args: HashMap<usize, String>,
    started: bool,
    finished: bool,
}

impl MessageBuilder {
    pub(crate) fn new(msg: AssistantMessage, tx: UnboundedSender<AssistantMessageEvent>) -> Self {
        MessageBuilder {
            msg,
            tx,
            args: HashMap::new(),
            started: false,
            finished: false,
        }
    }

    fn send(&self, e: AssistantMessageEvent) {
        let _ = self.tx.unbounded_send(e);
    }

    pub(crate) fn message(&mut self) -> &mut AssistantMessage {
        &mut self.msg
    }

    pub(crate) fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.send(AssistantMessageEvent::Start {
                partial: self.msg.clone(),
            });
        }
    }

    pub(crate) fn begin_text(&mut self) -> usize {
        self.start();
        let index = self.msg.content.len();
        self.msg.content.push(ContentBlock::text(""));
        self.send(AssistantMessageEvent::TextStart {
            content_index: index,
            partial: self.msg.clone(),
        });
        index
    }

    pub(crate) fn append_text(&mut self, index: usize, delta: &str) {
        if let Some(ContentBlock::Text(t)) = self.msg.content.get_mut(index) {
            t.text.push_str(delta);
        }
        self.send(AssistantMessageEvent::TextDelta {
            content_index: index,
            delta: delta.to_string(),
            partial: self.msg.clone(),
        });
    }

    pub(crate) fn end_text(&mut self, index: usize) {
        let content = match self.msg.content.get(index) {
            Some(ContentBlock::Text(t)) => t.text.clone(),
            _ => return,
        };
        self.send(AssistantMessageEvent::TextEnd {
            content_index: index,
            content,
            partial: self.msg.clone(),
        });
    }

    pub(crate) fn begin_thinking(&mut self) -> usize {
        self.start();
        let index = self.msg.content.len();
        self.msg
            .content
            .push(ContentBlock::Thinking(ThinkingContent {
                thinking: String::new(),
                thinking_signature: None,
            }));
        self.send(AssistantMessageEvent::ThinkingStart {
            content_index: index,
            partial: self.msg.clone(),
        });
        index
    }

    pub(crate) fn append_thinking(&mut self, index: usize, delta: &str) {
        if let Some(ContentBlock::Thinking(t)) = self.msg.content.get_mut(index) {
            t.thinking.push_str(delta);
        }
        self.send(AssistantMessageEvent::ThinkingDelta {
            content_index: index,
            delta: delta.to_string(),
            partial: self.msg.clone(),
        });
    }

    pub(crate) fn append_signature(&mut self, index: usize, delta: &str) {
        if let Some(ContentBlock::Thinking(t)) = self.msg.content.get_mut(index) {
            t.thinking_signature
                .get_or_insert_with(String::new)
                .push_str(delta);
        }
    }

    pub(crate) fn end_thinking(&mut self, index: usize) {
        let content = match self.msg.content.get(index) {
            Some(ContentBlock::Thinking(t)) => t.thinking.clone(),
            _ => return,
        };
        self.send(AssistantMessageEvent::ThinkingEnd {
            content_index: index,
            content,
            partial: self.msg.clone(),
        });
    }

    pub(crate) fn begin_tool_call(&mut self, id: &str, name: &str) -> usize {
        self.start();
        let index = self.msg.content.len();
        self.msg.content.push(ContentBlock::ToolCall(ToolCall::new(
            id,
            name,
            Value::Object(Default::default()),
        )));
        self.args.insert(index, String::new());
        self.send(AssistantMessageEvent::ToolCallStart {
            content_index: index,
            partial: self.msg.clone(),
        });
        index
    }

    pub(crate) fn set_tool_call_identity(
        &mut self,
        index: usize,
        id: Option<&str>,
        name: Option<&str>,
    ) {
        if let Some(ContentBlock::ToolCall(c)) = self.msg.content.get_mut(index) {
            if let Some(id) = id.filter(|s| !s.is_empty()) {
                c.id = id.to_string();
            }
            if let Some(name) = name.filter(|s| !s.is_empty()) {
                c.name.push_str(name);
            }
        }
    }

    pub(crate) fn append_tool_args(&mut self, index: usize, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.args.entry(index).or_default().push_str(delta);
        self.send(AssistantMessageEvent::ToolCallDelta {
            content_index: index,
            delta: delta.to_string(),
            partial: self.msg.clone(),
        });
    }

    pub(crate) fn end_tool_call(&mut self, index: usize) {
        let raw = self.args.remove(&index).unwrap_or_default();
        let parsed = parse_arguments(&raw);
        let call = match self.msg.content.get_mut(index) {
            Some(ContentBlock::ToolCall(c)) => {
                c.arguments = parsed;
                c.clone()
            }
            _ => return,
        };
        self.send(AssistantMessageEvent::ToolCallEnd {
            content_index: index,
            tool_call: call,
            partial: self.msg.clone(),
        });
    }

    pub(crate) fn has_tool_calls(&self) -> bool {
        self.msg.tool_calls().next().is_some()
    }

    pub(crate) fn finish(&mut self, reason: StopReason) {
        if self.finished {
            return;
        }
        self.start();
        self.finished = true;
        self.msg.stop_reason = reason;
        self.msg.timestamp = now_millis();
        self.send(AssistantMessageEvent::Done {
            reason,
            message: self.msg.clone(),
        });
    }

    pub(crate) fn fail(&mut self, reason: StopReason, message: impl Into<String>) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.msg.stop_reason = reason;
        self.msg.error_message = Some(message.into());
        self.msg.timestamp = now_millis();
        self.send(AssistantMessageEvent::Error {
            reason,
            error: self.msg.clone(),
        });
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }
}

/// Parses tool-call arguments; empty means `{}`; unparseable text is kept
/// under `_raw` so validation reports it instead of silently losing it.
pub(crate) fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => v,
        Err(_) => serde_json::json!({ "_raw": raw }),
    }
}
