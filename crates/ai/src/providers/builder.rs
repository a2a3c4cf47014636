//! Assembles a streamed assistant message and emits its events.
//!
//! Streaming must stay linear in the size of the answer. The provider task
//! therefore never copies the partial message: it sends small [`Op`]s (a
//! delta, a new block) over a channel, and the consumer's side of the stream
//! ([`EventStream`]) applies them to its own [`PartialMessage`], whose
//! snapshots cost the size of the change. When the consumer falls behind,
//! consecutive deltas of the same block are merged into one event, so the
//! number of events follows the consumer's pace, not the number of deltas
//! on the wire.

use std::collections::HashMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use serde_json::Value;

use crate::content::{ContentBlock, ThinkingContent, ToolCall};
use crate::message::{AssistantMessage, StopReason, now_millis};
use crate::model::ModelCost;
use crate::partial::{MessageEdit, PartialMessage};
use crate::stream::{AssistantEventStream, AssistantMessageEvent};

/// One change to the message, as sent from the provider task.
enum Op {
    Start,
    /// A new block at the end of `content` (text, thinking or tool call).
    Begin(ContentBlock),
    /// A block changed without an event of its own (tool-call id or name,
    /// thinking signature).
    Replace(usize, ContentBlock),
    /// A thinking block's signature (its text comes through deltas).
    Signature(usize, Option<String>),
    Text(usize, String),
    Thinking(usize, String),
    ToolArgs(usize, String),
    EndText(usize),
    EndThinking(usize),
    EndToolCall(usize, ToolCall),
    Done(StopReason, Box<AssistantMessage>),
    Error(StopReason, Box<AssistantMessage>),
}

/// A message being streamed: the producer half (the builder) and the events
/// stream the consumer polls.
pub(crate) fn message_stream(base: AssistantMessage) -> (MessageBuilder, AssistantEventStream) {
    let (tx, rx) = unbounded();
    let stream = EventStream {
        msg: PartialMessage::new(base.clone()),
        rx,
        lookahead: None,
        done: false,
    };
    (MessageBuilder::new(base, tx), Box::pin(stream))
}

/// The consumer's half: applies ops to its own message and hands out events.
struct EventStream {
    msg: PartialMessage,
    rx: UnboundedReceiver<Op>,
    lookahead: Option<Op>,
    done: bool,
}

impl EventStream {
    /// The next op that is already waiting, without blocking.
    fn ready_op(&mut self, cx: &mut Context<'_>) -> Option<Op> {
        if let Some(op) = self.lookahead.take() {
            return Some(op);
        }
        match Pin::new(&mut self.rx).poll_next(cx) {
            Poll::Ready(op) => op,
            Poll::Pending => None,
        }
    }

    /// Appends to the block's text (or thinking) and merges every delta for
    /// the same block that is already waiting; returns the merged delta.
    fn merge_deltas(&mut self, cx: &mut Context<'_>, first: Op) -> (usize, String, u8) {
        let (index, mut delta, kind) = match first {
            Op::Text(i, d) => (i, d, 0),
            Op::Thinking(i, d) => (i, d, 1),
            Op::ToolArgs(i, d) => (i, d, 2),
            _ => unreachable!("only deltas are merged"),
        };
        loop {
            match self.ready_op(cx) {
                Some(Op::Text(i, d)) if kind == 0 && i == index => delta.push_str(&d),
                Some(Op::Thinking(i, d)) if kind == 1 && i == index => delta.push_str(&d),
                Some(Op::ToolArgs(i, d)) if kind == 2 && i == index => delta.push_str(&d),
                Some(other) => {
                    self.lookahead = Some(other);
                    break;
                }
                None => break,
            }
        }
        match kind {
            0 => self
                .msg
                .apply(MessageEdit::AppendText(index, delta.clone())),
            1 => self
                .msg
                .apply(MessageEdit::AppendThinking(index, delta.clone())),
            _ => {}
        }
        (index, delta, kind)
    }

    /// Applies `op`; returns the event it stands for, if any.
    fn apply(&mut self, cx: &mut Context<'_>, op: Op) -> Option<AssistantMessageEvent> {
        use AssistantMessageEvent as E;
        Some(match op {
            Op::Start => E::Start {
                partial: self.msg.snapshot(),
            },
            Op::Begin(block) => {
                let content_index = self.msg.get().content.len();
                let kind = match &block {
                    ContentBlock::Thinking(_) => 1,
                    ContentBlock::ToolCall(_) => 2,
                    _ => 0,
                };
                self.msg.apply(MessageEdit::Push(block));
                let partial = self.msg.snapshot();
                match kind {
                    0 => E::TextStart {
                        content_index,
                        partial,
                    },
                    1 => E::ThinkingStart {
                        content_index,
                        partial,
                    },
                    _ => E::ToolCallStart {
                        content_index,
                        partial,
                    },
                }
            }
            Op::Replace(index, block) => {
                self.msg.apply(MessageEdit::Set(index, block));
                return None;
            }
            Op::Signature(index, signature) => {
                self.msg.apply(MessageEdit::Signature(index, signature));
                return None;
            }
            delta @ (Op::Text(..) | Op::Thinking(..) | Op::ToolArgs(..)) => {
                let (content_index, delta, kind) = self.merge_deltas(cx, delta);
                let partial = self.msg.snapshot();
                match kind {
                    0 => E::TextDelta {
                        content_index,
                        delta,
                        partial,
                    },
                    1 => E::ThinkingDelta {
                        content_index,
                        delta,
                        partial,
                    },
                    _ => E::ToolCallDelta {
                        content_index,
                        delta,
                        partial,
                    },
                }
            }
            Op::EndText(content_index) => {
                let content = match self.msg.get().content.get(content_index) {
                    Some(ContentBlock::Text(t)) => t.text.clone(),
                    _ => return None,
                };
                E::TextEnd {
                    content_index,
                    content,
                    partial: self.msg.snapshot(),
                }
            }
            Op::EndThinking(content_index) => {
                let content = match self.msg.get().content.get(content_index) {
                    Some(ContentBlock::Thinking(t)) => t.thinking.clone(),
                    _ => return None,
                };
                E::ThinkingEnd {
                    content_index,
                    content,
                    partial: self.msg.snapshot(),
                }
            }
            Op::EndToolCall(content_index, tool_call) => {
                self.msg.apply(MessageEdit::Set(
                    content_index,
                    ContentBlock::ToolCall(tool_call.clone()),
                ));
                E::ToolCallEnd {
                    content_index,
                    tool_call,
                    partial: self.msg.snapshot(),
                }
            }
            Op::Done(reason, message) => {
                self.done = true;
                E::Done {
                    reason,
                    message: *message,
                }
            }
            Op::Error(reason, error) => {
                self.done = true;
                E::Error {
                    reason,
                    error: *error,
                }
            }
        })
    }
}

impl Stream for EventStream {
    type Item = AssistantMessageEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            let op = match this.lookahead.take() {
                Some(op) => op,
                None => match Pin::new(&mut this.rx).poll_next(cx) {
                    Poll::Ready(Some(op)) => op,
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                },
            };
            if let Some(event) = this.apply(cx, op) {
                return Poll::Ready(Some(event));
            }
        }
    }
}

/// Builds the partial message and sends one op per change.
pub(crate) struct MessageBuilder {
    msg: AssistantMessage,
    tx: UnboundedSender<Op>,
    args: HashMap<usize, String>,
    started: bool,
    finished: bool,
    prices: ModelCost,
}

impl MessageBuilder {
    fn new(msg: AssistantMessage, tx: UnboundedSender<Op>) -> Self {
        MessageBuilder {
            msg,
            tx,
            args: HashMap::new(),
            started: false,
            finished: false,
            prices: ModelCost::default(),
        }
    }

    fn send(&self, op: Op) {
        let _ = self.tx.unbounded_send(op);
    }

    pub(crate) fn message(&mut self) -> &mut AssistantMessage {
        &mut self.msg
    }

    pub(crate) fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.send(Op::Start);
        }
    }

    pub(crate) fn begin_text(&mut self) -> usize {
        self.start();
        let index = self.msg.content.len();
        self.msg.content.push(ContentBlock::text(""));
        self.send(Op::Begin(ContentBlock::text("")));
        index
    }

    pub(crate) fn append_text(&mut self, index: usize, delta: &str) {
        if let Some(ContentBlock::Text(t)) = self.msg.content.get_mut(index) {
            t.text.push_str(delta);
        }
        self.send(Op::Text(index, delta.to_string()));
    }

    pub(crate) fn end_text(&mut self, index: usize) {
        if let Some(ContentBlock::Text(_)) = self.msg.content.get(index) {
            self.send(Op::EndText(index));
        }
    }

    pub(crate) fn begin_thinking(&mut self) -> usize {
        self.start();
        let index = self.msg.content.len();
        let block = ContentBlock::Thinking(ThinkingContent {
            thinking: String::new(),
            thinking_signature: None,
        });
        self.msg.content.push(block.clone());
        self.send(Op::Begin(block));
        index
    }

    pub(crate) fn append_thinking(&mut self, index: usize, delta: &str) {
        if let Some(ContentBlock::Thinking(t)) = self.msg.content.get_mut(index) {
            t.thinking.push_str(delta);
        }
        self.send(Op::Thinking(index, delta.to_string()));
    }

    #[cfg_attr(
        not(any(
            feature = "anthropic",
            feature = "openai-responses",
            feature = "bedrock"
        )),
        allow(dead_code)
    )]
    pub(crate) fn append_signature(&mut self, index: usize, delta: &str) {
        if let Some(ContentBlock::Thinking(t)) = self.msg.content.get_mut(index) {
            t.thinking_signature
                .get_or_insert_with(String::new)
                .push_str(delta);
        }
        self.replaced(index);
    }

    /// Tells the consumer about a change that has no event of its own (an
    /// id, a name, a signature). A tool call's arguments stay empty until it
    /// ends, so sending the block whole is cheap; a thinking block sends only
    /// its signature, its text comes through deltas.
    fn replaced(&self, index: usize) {
        match self.msg.content.get(index) {
            Some(ContentBlock::Thinking(t)) => {
                self.send(Op::Signature(index, t.thinking_signature.clone()));
            }
            Some(other) => self.send(Op::Replace(index, other.clone())),
            None => {}
        }
    }

    /// Sets (replaces) a thinking block's signature.
    #[cfg_attr(not(feature = "google"), allow(dead_code))]
    pub(crate) fn set_thinking_signature(&mut self, index: usize, signature: String) {
        if let Some(ContentBlock::Thinking(t)) = self.msg.content.get_mut(index) {
            t.thinking_signature = Some(signature);
            self.replaced(index);
        }
    }

    /// Sets a tool call's `thoughtSignature` (Gemini); it reaches the
    /// consumer with the call's end.
    #[cfg_attr(not(feature = "google"), allow(dead_code))]
    pub(crate) fn set_thought_signature(&mut self, index: usize, signature: String) {
        if let Some(ContentBlock::ToolCall(c)) = self.msg.content.get_mut(index) {
            c.thought_signature = Some(signature);
        }
    }

    /// Sets a text block's signature (a Responses message item's id, a
    /// Gemini `thoughtSignature`).
    #[cfg_attr(
        not(any(feature = "openai-responses", feature = "google")),
        allow(dead_code)
    )]
    pub(crate) fn set_text_signature(&mut self, index: usize, signature: String) {
        if let Some(ContentBlock::Text(t)) = self.msg.content.get_mut(index) {
            t.text_signature = Some(signature);
            self.replaced(index);
        }
    }

    /// The arguments text a tool call received so far.
    #[cfg_attr(not(feature = "openai-responses"), allow(dead_code))]
    pub(crate) fn tool_args(&self, index: usize) -> &str {
        self.args.get(&index).map_or("", String::as_str)
    }

    pub(crate) fn end_thinking(&mut self, index: usize) {
        if let Some(ContentBlock::Thinking(_)) = self.msg.content.get(index) {
            self.send(Op::EndThinking(index));
        }
    }

    pub(crate) fn begin_tool_call(&mut self, id: &str, name: &str) -> usize {
        self.start();
        let index = self.msg.content.len();
        let block =
            ContentBlock::ToolCall(ToolCall::new(id, name, Value::Object(Default::default())));
        self.msg.content.push(block.clone());
        self.args.insert(index, String::new());
        self.send(Op::Begin(block));
        index
    }

    #[cfg_attr(
        not(any(feature = "openai", feature = "openai-responses")),
        allow(dead_code)
    )]
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
            self.replaced(index);
        }
    }

    pub(crate) fn append_tool_args(&mut self, index: usize, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.args.entry(index).or_default().push_str(delta);
        self.send(Op::ToolArgs(index, delta.to_string()));
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
        self.send(Op::EndToolCall(index, call));
    }

    pub(crate) fn has_tool_calls(&self) -> bool {
        self.msg.tool_calls().next().is_some()
    }

    /// The model's prices: the final message's `usage.cost` is computed
    /// from them.
    pub(crate) fn set_prices(&mut self, prices: ModelCost) {
        self.prices = prices;
    }

    pub(crate) fn finish(&mut self, reason: StopReason) {
        if self.finished {
            return;
        }
        self.start();
        self.finished = true;
        self.msg.usage.price(&self.prices);
        self.msg.stop_reason = reason;
        self.msg.timestamp = now_millis();
        self.send(Op::Done(reason, Box::new(self.msg.clone())));
    }

    pub(crate) fn fail(&mut self, reason: StopReason, message: impl Into<String>) {
        if self.finished {
            return;
        }
        self.finished = true;
        // Tokens a failed request used are billed too.
        self.msg.usage.price(&self.prices);
        self.msg.stop_reason = reason;
        self.msg.error_message = Some(message.into());
        self.msg.timestamp = now_millis();
        self.send(Op::Error(reason, Box::new(self.msg.clone())));
    }

    #[cfg_attr(not(feature = "anthropic"), allow(dead_code))]
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
