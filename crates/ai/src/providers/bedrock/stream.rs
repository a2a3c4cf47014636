//! Reading a ConverseStream answer: event-stream frames to message events.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::eventstream::{Frame, FrameDecoder};
use crate::message::{StopReason, Usage};
use crate::providers::builder::MessageBuilder;
use crate::providers::http::{ENDED_EARLY, content_type, idle_message, within};

/// One event's JSON payload, as far as it is read; every field optional,
/// unknown ones ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Payload {
    content_block_index: Option<u64>,
    start: Option<BlockStart>,
    delta: Option<Delta>,
    stop_reason: Option<String>,
    usage: Option<TokenUsage>,
    message: Option<String>,
    #[serde(rename = "Message")]
    message_upper: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct BlockStart {
    tool_use: Option<ToolUseStart>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ToolUseStart {
    tool_use_id: String,
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Delta {
    text: Option<String>,
    tool_use: Option<ToolUseDelta>,
    reasoning_content: Option<ReasoningDelta>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ToolUseDelta {
    input: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ReasoningDelta {
    text: Option<String>,
    signature: Option<String>,
    redacted_content: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct TokenUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_read_input_tokens: u64,
    cache_write_input_tokens: u64,
}

#[derive(Debug, Clone, Copy)]
enum Open {
    Text(usize),
    Thinking(usize),
    Tool(usize),
}

/// The message for a `stopReason` that is not a normal end.
fn stop_error(reason: &str) -> String {
    let what = match reason {
        "guardrail_intervened" => "a guardrail blocked the response",
        "content_filtered" => "the content filter blocked the response",
        "model_context_window_exceeded" => "the conversation exceeds the model's context window",
        _ => "the response stopped for an unknown reason",
    };
    format!("Bedrock stopped ({reason}): {what}")
}

/// Streaming state of one response.
pub(super) struct Stream {
    pub(super) b: MessageBuilder,
    open: HashMap<u64, Open>,
    stop: Option<String>,
}

impl Stream {
    pub(super) fn new(b: MessageBuilder) -> Self {
        Stream {
            b,
            open: HashMap::new(),
            stop: None,
        }
    }

    /// Handles one frame; an exception frame is an error naming it.
    pub(super) fn frame(&mut self, frame: &Frame) -> Result<(), String> {
        let payload: Payload = if frame.payload.is_empty() {
            Payload::default()
        } else {
            serde_json::from_slice(&frame.payload)
                .map_err(|e| format!("Invalid Bedrock stream event: {e}"))?
        };
        match frame.header(":message-type") {
            Some("event") | None => {}
            Some("exception") => {
                let kind = frame.header(":exception-type").unwrap_or("exception");
                let message = payload
                    .message
                    .or(payload.message_upper)
                    .unwrap_or_default();
                tracing::warn!(kind, %message, "Bedrock stream exception");
                return Err(format!("Bedrock {kind}: {message}"));
            }
            Some(other) => {
                let code = frame.header(":error-code").unwrap_or(other);
                let message = frame.header(":error-message").unwrap_or("");
                return Err(format!("Bedrock stream error {code}: {message}"));
            }
        }
        let index = payload.content_block_index.unwrap_or(0);
        match frame.header(":event-type").unwrap_or("") {
            "messageStart" => self.b.start(),
            "contentBlockStart" => {
                self.b.start();
                if let Some(t) = payload.start.and_then(|s| s.tool_use) {
                    self.close(index);
                    let i = self.b.begin_tool_call(&t.tool_use_id, &t.name);
                    self.open.insert(index, Open::Tool(i));
                }
            }
            "contentBlockDelta" => {
                self.b.start();
                self.delta(index, payload.delta.unwrap_or_default());
            }
            "contentBlockStop" => self.close(index),
            "messageStop" => self.stop = Some(payload.stop_reason.unwrap_or_default()),
            "metadata" => {
                if let Some(u) = payload.usage {
                    self.b.message().usage = Usage {
                        input: u.input_tokens,
                        output: u.output_tokens,
                        cache_read: u.cache_read_input_tokens,
                        cache_write: u.cache_write_input_tokens,
                        total_tokens: u.input_tokens
                            + u.output_tokens
                            + u.cache_read_input_tokens
                            + u.cache_write_input_tokens,
                        cost: Default::default(),
                    };
                }
            }
            other => tracing::debug!(event = other, "ignoring a Bedrock stream event"),
        }
        Ok(())
    }

    fn delta(&mut self, index: u64, delta: Delta) {
        if let Some(text) = delta.text {
            let i = match self.open.get(&index) {
                Some(Open::Text(i)) => *i,
                _ => {
                    self.close(index);
                    let i = self.b.begin_text();
                    self.open.insert(index, Open::Text(i));
                    i
                }
            };
            self.b.append_text(i, &text);
        }
        if let Some(input) = delta.tool_use.and_then(|t| t.input)
            && let Some(Open::Tool(i)) = self.open.get(&index)
        {
            let i = *i;
            self.b.append_tool_args(i, &input);
        }
        if let Some(r) = delta.reasoning_content {
            let i = match self.open.get(&index) {
                Some(Open::Thinking(i)) => *i,
                _ => {
                    self.close(index);
                    let i = self.b.begin_thinking();
                    self.open.insert(index, Open::Thinking(i));
                    i
                }
            };
            if let Some(text) = r.text {
                self.b.append_thinking(i, &text);
            }
            if let Some(sig) = r.signature {
                self.b.append_signature(i, &sig);
            }
            if r.redacted_content.is_some() {
                tracing::debug!("Bedrock sent redacted reasoning; it is not kept");
            }
        }
    }

    fn close(&mut self, index: u64) {
        match self.open.remove(&index) {
            Some(Open::Text(i)) => self.b.end_text(i),
            Some(Open::Thinking(i)) => self.b.end_thinking(i),
            Some(Open::Tool(i)) => self.b.end_tool_call(i),
            None => {}
        }
    }

    pub(super) fn close_all(&mut self) {
        let mut open: Vec<u64> = self.open.keys().copied().collect();
        open.sort_unstable();
        for index in open {
            self.close(index);
        }
    }

    /// The stop reason of a stream that closed, or the error it is.
    pub(super) fn outcome(&self) -> Result<StopReason, String> {
        match self.stop.as_deref() {
            None => Err(ENDED_EARLY.into()),
            Some("tool_use") => Ok(StopReason::ToolUse),
            Some(_) if self.b.has_tool_calls() => Ok(StopReason::ToolUse),
            Some("max_tokens") => Ok(StopReason::Length),
            Some("end_turn" | "stop_sequence" | "") => Ok(StopReason::Stop),
            Some(other) => Err(stop_error(other)),
        }
    }
}

/// Reads the frames of `response` into the message and ends it.
pub(super) async fn run(
    builder: MessageBuilder,
    response: reqwest::Response,
    idle: Option<Duration>,
    cancel: &CancellationToken,
) {
    let content_type = content_type(&response);
    let mut state = Stream::new(builder);
    let end = if content_type.contains("json") || content_type.starts_with("text/") {
        // Not an event stream: a proxy's or gateway's answer.
        let text = within(idle, response.text()).await;
        let text = text.ok().and_then(Result::ok).unwrap_or_default();
        let excerpt: String = text.trim().chars().take(300).collect();
        Err((
            StopReason::Error,
            format!(
                "Unexpected Bedrock response ({content_type}) instead of an event stream: {excerpt}"
            ),
        ))
    } else {
        read_frames(response, idle, cancel, |frame| state.frame(&frame)).await
    };
    state.close_all();
    match end.and_then(|()| state.outcome().map_err(|e| (StopReason::Error, e))) {
        Ok(reason) => state.b.finish(reason),
        Err((reason, e)) => state.b.fail(reason, e),
    }
}

/// Feeds each frame of the body to `handle` until the stream ends, a
/// frame is bad, `handle` fails, the server stays silent too long or
/// `cancel` fires.
pub(super) async fn read_frames(
    response: reqwest::Response,
    idle: Option<Duration>,
    cancel: &CancellationToken,
    mut handle: impl FnMut(Frame) -> Result<(), String>,
) -> Result<(), (StopReason, String)> {
    let mut decoder = FrameDecoder::default();
    let mut body = response.bytes_stream();
    loop {
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err((StopReason::Aborted, "Request was aborted".into())),
            n = within(idle, body.next()) => match n {
                Ok(n) => n,
                Err(()) => return Err((StopReason::Error, idle_message("data", idle.unwrap_or_default()))),
            },
        };
        match next {
            Some(Ok(bytes)) => {
                let frames = decoder
                    .push(&bytes)
                    .map_err(|e| (StopReason::Error, format!("Bedrock: {e}")))?;
                for frame in frames {
                    handle(frame).map_err(|e| (StopReason::Error, e))?;
                }
            }
            Some(Err(e)) => {
                return Err((
                    StopReason::Error,
                    format!("Connection lost while streaming: {e}"),
                ));
            }
            None => {
                if let Err(e) = decoder.finish() {
                    tracing::warn!(error = %e, "Bedrock stream cut inside a frame");
                }
                return Ok(());
            }
        }
    }
}
