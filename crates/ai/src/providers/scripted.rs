//! A provider that replays a script instead of calling a model.
//!
//! Tests, examples and the demo use it to drive the agent loop deterministically.
//!
//! # Script format
//!
//! A script is JSON Lines: one assistant turn per line. Blank lines and lines
//! whose first non-blank character is `#` are skipped.
//!
//! ```text
//! # first turn: ask for a tool
//! {"content":[{"type":"text","text":"Let me look."},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.txt"}}],"stopReason":"toolUse"}
//! # second turn: answer
//! {"content":[{"type":"text","text":"Done."}]}
//! ```
//!
//! Fields of a turn:
//! - `content` (required): content blocks as in an assistant message (`text`,
//!   `thinking`, `toolCall`).
//! - `stopReason` (optional): `stop`, `length`, `toolUse`, `error` or `aborted`;
//!   defaults to `toolUse` when the turn has a tool call and `stop` otherwise.
//! - `errorMessage` (optional): set with `stopReason` `error`.
//! - `usage` (optional): token usage to report.
//! - `delayMs` (optional): wait this long before streaming (cancellable), to
//!   imitate a slow model.
//! - `paceMs` (optional): wait this long before each delta (cancellable), so
//!   a turn streams over time as a real model's does; end-to-end tests use
//!   it to act in the middle of a stream, benchmarks to set its rate.
//! - `deltaChars` (optional): the size of each text or argument delta in
//!   characters (default 24, at least 1).
//!
//! Each turn is streamed as events (`start`, block start / deltas / end, `done`),
//! text and argument JSON split into small deltas. A request made after the last
//! turn ends with an error event whose message starts with `script exhausted`.
//! Cancelling a request ends it with `stopReason` `aborted`.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;

use crate::content::ContentBlock;
use crate::context::Context;
use crate::message::{AssistantMessage, StopReason, Usage, now_millis};
use crate::model::Model;
use crate::partial::{MessageEdit, PartialMessage};
use crate::stream::{AssistantEventStream, AssistantMessageEvent, ModelClient, StreamOptions};

/// Size of the pieces text and argument JSON are streamed in.
const DELTA_CHARS: usize = 24;

/// One scripted assistant turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedTurn {
    /// Blocks the turn produces.
    pub content: Vec<ContentBlock>,
    /// Stop reason; derived from the content when absent.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Error message for `error` turns.
    #[serde(default)]
    pub error_message: Option<String>,
    /// Usage to report.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Delay before streaming, in milliseconds.
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// Pause before each delta, in milliseconds.
    #[serde(default)]
    pub pace_ms: Option<u64>,
    /// Characters per delta (default 24).
    #[serde(default)]
    pub delta_chars: Option<usize>,
}

/// A script could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read script {path}: {source}")]
    Io {
        /// The script path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line is not a valid turn.
    #[error("script line {line}: {message}")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
}

/// Replays scripted turns, one per request, and records every request's context.
///
/// ```
/// use agent_ai::providers::scripted::ScriptedClient;
/// let client = ScriptedClient::from_jsonl(r#"{"content":[{"type":"text","text":"hi"}]}"#).unwrap();
/// assert_eq!(client.remaining(), 1);
/// ```
#[derive(Debug, Default)]
pub struct ScriptedClient {
    turns: Vec<ScriptedTurn>,
    next: AtomicUsize,
    record: bool,
    requests: Mutex<Vec<Context>>,
    request_file: Option<std::path::PathBuf>,
}

impl ScriptedClient {
    /// A client replaying the given turns.
    pub fn new(turns: Vec<ScriptedTurn>) -> Self {
        ScriptedClient {
            turns,
            next: AtomicUsize::new(0),
            record: false,
            requests: Mutex::new(Vec::new()),
            request_file: None,
        }
    }

    /// Appends every request's messages to `path`, one JSON array a line
    /// (what a real provider would have received; for tests across
    /// processes and for inspecting a demo).
    pub fn with_request_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.request_file = Some(path.into());
        self
    }

    /// Keeps a copy of every request's context, for [`ScriptedClient::requests`].
    /// Off by default: each copy holds the whole transcript.
    pub fn with_request_log(mut self) -> Self {
        self.record = true;
        self
    }

    /// Parses a JSONL script (see the module docs).
    pub fn from_jsonl(text: &str) -> Result<Self, ScriptError> {
        let mut turns = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let turn: ScriptedTurn =
                serde_json::from_str(trimmed).map_err(|e| ScriptError::Parse {
                    line: i + 1,
                    message: e.to_string(),
                })?;
            turns.push(turn);
        }
        Ok(Self::new(turns))
    }

    /// Reads and parses a JSONL script file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_jsonl(&text)
    }

    /// Turns not yet replayed.
    pub fn remaining(&self) -> usize {
        self.turns
            .len()
            .saturating_sub(self.next.load(Ordering::SeqCst))
    }

    /// The context of every request received so far, in order (empty unless
    /// [`ScriptedClient::with_request_log`] was called).
    pub fn requests(&self) -> Vec<Context> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl ModelClient for ScriptedClient {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantEventStream {
        if self.record {
            self.requests
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(context.clone());
        }
        if let Some(path) = &self.request_file {
            use std::io::Write;
            let line = serde_json::to_string(&context.messages).unwrap_or_default();
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
            if let Err(e) = written {
                tracing::warn!(path = %path.display(), error = %e, "cannot write the request log");
            }
        }
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let turn = self.turns.get(index).cloned();
        let total = self.turns.len();
        let mut base = AssistantMessage::empty(&model.provider, &model.id);
        base.api = Some("scripted".to_string());
        let prices = model.cost;
        let cancel = options.cancel;
        let Some(turn) = turn else {
            base.stop_reason = StopReason::Error;
            base.error_message = Some(format!(
                "script exhausted: all {total} scripted turns were used (request {} has no reply)",
                index + 1
            ));
            return futures::stream::once(async move {
                AssistantMessageEvent::Error {
                    reason: StopReason::Error,
                    error: base,
                }
            })
            .boxed();
        };
        // Events are made lazily, in the consumer's task, as it polls: no task,
        // no channel, and only one snapshot alive at a time.
        let replay = Replay {
            delay: turn.delay_ms.map(Duration::from_millis),
            pace: turn.pace_ms.filter(|&ms| ms > 0).map(Duration::from_millis),
            steps: plan(&turn).into_iter(),
            msg: PartialMessage::new(base),
            turn,
            prices,
            cancel,
            finished: false,
        };
        futures::stream::unfold(replay, |mut r| async move {
            let event = r.next_event().await?;
            Some((event, r))
        })
        .boxed()
    }
}

/// One step of a replayed turn.
enum Step {
    Start,
    Begin(usize),
    Delta(usize, String),
    End(usize),
    Finish,
}

/// The steps of a turn: start, each block's begin / deltas / end, finish.
fn plan(turn: &ScriptedTurn) -> Vec<Step> {
    let mut steps = vec![Step::Start];
    let size = turn.delta_chars.unwrap_or(DELTA_CHARS).max(1);
    for (i, block) in turn.content.iter().enumerate() {
        steps.push(Step::Begin(i));
        let text = match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Thinking(t) => t.thinking.clone(),
            ContentBlock::ToolCall(c) => c.arguments.to_string(),
            ContentBlock::Image(_) => String::new(),
        };
        if !matches!(block, ContentBlock::Image(_)) {
            for piece in chunks(&text, size) {
                steps.push(Step::Delta(i, piece.to_string()));
            }
            steps.push(Step::End(i));
        }
    }
    steps.push(Step::Finish);
    steps
}

struct Replay {
    delay: Option<Duration>,
    /// The pause before each delta.
    pace: Option<Duration>,
    steps: std::vec::IntoIter<Step>,
    msg: PartialMessage,
    turn: ScriptedTurn,
    /// The model's prices, for the reported usage's cost.
    prices: crate::model::ModelCost,
    cancel: tokio_util::sync::CancellationToken,
    finished: bool,
}

impl Replay {
    fn abort(&mut self) -> AssistantMessageEvent {
        self.finished = true;
        let mut msg = self.msg.to_message();
        msg.stop_reason = StopReason::Aborted;
        msg.error_message = Some("Request was aborted".to_string());
        AssistantMessageEvent::Error {
            reason: StopReason::Aborted,
            error: msg,
        }
    }

    async fn next_event(&mut self) -> Option<AssistantMessageEvent> {
        if self.finished {
            return None;
        }
        if let Some(delay) = self.delay.take() {
            tokio::select! {
                _ = self.cancel.cancelled() => {}
                _ = tokio::time::sleep(delay) => {}
            }
        }
        if let Some(pace) = self.pace
            && matches!(self.steps.as_slice().first(), Some(Step::Delta(..)))
        {
            tokio::select! {
                _ = self.cancel.cancelled() => {}
                _ = tokio::time::sleep(pace) => {}
            }
        }
        if self.cancel.is_cancelled() {
            return Some(self.abort());
        }
        let step = self.steps.next()?;
        let msg = &mut self.msg;
        Some(match step {
            Step::Start => AssistantMessageEvent::Start {
                partial: msg.snapshot(),
            },
            Step::Begin(i) => {
                let content_index = msg.get().content.len();
                match &self.turn.content[i] {
                    ContentBlock::Text(_) => {
                        msg.apply(MessageEdit::Push(ContentBlock::text("")));
                        AssistantMessageEvent::TextStart {
                            content_index,
                            partial: msg.snapshot(),
                        }
                    }
                    ContentBlock::Thinking(_) => {
                        msg.apply(MessageEdit::Push(ContentBlock::Thinking(
                            crate::ThinkingContent {
                                thinking: String::new(),
                                thinking_signature: None,
                            },
                        )));
                        AssistantMessageEvent::ThinkingStart {
                            content_index,
                            partial: msg.snapshot(),
                        }
                    }
                    ContentBlock::ToolCall(c) => {
                        let mut streaming = c.clone();
                        streaming.arguments = serde_json::Value::Object(Default::default());
                        msg.apply(MessageEdit::Push(ContentBlock::ToolCall(streaming)));
                        AssistantMessageEvent::ToolCallStart {
                            content_index,
                            partial: msg.snapshot(),
                        }
                    }
                    image @ ContentBlock::Image(_) => {
                        // Images are not streamed; they appear whole in the next snapshot.
                        msg.apply(MessageEdit::Push(image.clone()));
                        return Box::pin(self.next_event()).await;
                    }
                }
            }
            Step::Delta(i, delta) => {
                let content_index = msg.get().content.len() - 1;
                match (&self.turn.content[i], msg.get().content.last()) {
                    (ContentBlock::Text(_), Some(ContentBlock::Text(_))) => {
                        msg.apply(MessageEdit::AppendText(content_index, delta.clone()));
                        AssistantMessageEvent::TextDelta {
                            content_index,
                            delta,
                            partial: msg.snapshot(),
                        }
                    }
                    (ContentBlock::Thinking(_), Some(ContentBlock::Thinking(_))) => {
                        msg.apply(MessageEdit::AppendThinking(content_index, delta.clone()));
                        AssistantMessageEvent::ThinkingDelta {
                            content_index,
                            delta,
                            partial: msg.snapshot(),
                        }
                    }
                    _ => AssistantMessageEvent::ToolCallDelta {
                        content_index,
                        delta,
                        partial: msg.snapshot(),
                    },
                }
            }
            Step::End(i) => {
                let content_index = msg.get().content.len() - 1;
                let block = self.turn.content[i].clone();
                msg.apply(MessageEdit::Set(content_index, block.clone()));
                match block {
                    ContentBlock::Text(t) => AssistantMessageEvent::TextEnd {
                        content_index,
                        content: t.text,
                        partial: msg.snapshot(),
                    },
                    ContentBlock::Thinking(t) => AssistantMessageEvent::ThinkingEnd {
                        content_index,
                        content: t.thinking,
                        partial: msg.snapshot(),
                    },
                    ContentBlock::ToolCall(tool_call) => AssistantMessageEvent::ToolCallEnd {
                        content_index,
                        tool_call,
                        partial: msg.snapshot(),
                    },
                    ContentBlock::Image(_) => return Box::pin(self.next_event()).await,
                }
            }
            Step::Finish => {
                self.finished = true;
                let turn = &self.turn;
                let has_tool_call = turn
                    .content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolCall(_)));
                let reason = turn.stop_reason.unwrap_or(if has_tool_call {
                    StopReason::ToolUse
                } else {
                    StopReason::Stop
                });
                // The final message is owned: one copy per turn.
                let mut msg = msg.to_message();
                if let Some(usage) = turn.usage {
                    msg.usage = usage;
                }
                msg.usage.price(&self.prices);
                msg.stop_reason = reason;
                msg.timestamp = now_millis();
                match reason {
                    StopReason::Error | StopReason::Aborted => {
                        msg.error_message = Some(
                            turn.error_message
                                .clone()
                                .unwrap_or_else(|| "scripted error".to_string()),
                        );
                        AssistantMessageEvent::Error { reason, error: msg }
                    }
                    _ => AssistantMessageEvent::Done {
                        reason,
                        message: msg,
                    },
                }
            }
        })
    }
}

/// Splits text into pieces of at most `size` characters.
fn chunks(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (i, _) in text.char_indices() {
        if count == size {
            out.push(&text[start..i]);
            start = i;
            count = 0;
        }
        count += 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::complete;

    #[tokio::test]
    async fn replays_turns_then_reports_exhaustion() {
        let client = ScriptedClient::from_jsonl(
            "# comment\n{\"content\":[{\"type\":\"text\",\"text\":\"hello there, this is a longer text to split\"}]}\n\n",
        )
        .unwrap()
        .with_request_log();
        let model = Model::new("scripted", "script");
        let mut stream = client.stream(&model, &Context::default(), StreamOptions::default());
        let mut deltas = String::new();
        let mut last = None;
        while let Some(e) = stream.next().await {
            if let AssistantMessageEvent::TextDelta { delta, .. } = &e {
                deltas.push_str(delta);
            }
            last = Some(e);
        }
        assert_eq!(deltas, "hello there, this is a longer text to split");
        let Some(AssistantMessageEvent::Done { reason, message }) = last else {
            panic!("no done event")
        };
        assert_eq!(reason, StopReason::Stop);
        assert_eq!(
            message.text(),
            "hello there, this is a longer text to split"
        );

        let second = complete(
            &client,
            &model,
            &Context::default(),
            StreamOptions::default(),
        )
        .await;
        assert_eq!(second.stop_reason, StopReason::Error);
        assert!(
            second
                .error_message
                .unwrap()
                .starts_with("script exhausted")
        );
        assert_eq!(client.requests().len(), 2);
    }

    #[tokio::test]
    async fn cancellation_during_delay_aborts() {
        let client = ScriptedClient::from_jsonl(
            r#"{"content":[{"type":"text","text":"x"}],"delayMs":5000}"#,
        )
        .unwrap();
        let opts = StreamOptions::default();
        let cancel = opts.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            cancel.cancel();
        });
        let started = std::time::Instant::now();
        let msg = complete(
            &client,
            &Model::new("scripted", "s"),
            &Context::default(),
            opts,
        )
        .await;
        assert_eq!(msg.stop_reason, StopReason::Aborted);
        assert!(started.elapsed() < Duration::from_secs(4)); // hang guard
    }

    #[tokio::test]
    async fn paced_turn_streams_sized_deltas_and_stops_when_cancelled() {
        let client = ScriptedClient::from_jsonl(
            r#"{"content":[{"type":"text","text":"abcdefghij"}],"paceMs":1,"deltaChars":3}"#,
        )
        .unwrap();
        let model = Model::new("scripted", "s");
        let mut stream = client.stream(&model, &Context::default(), StreamOptions::default());
        let mut deltas = Vec::new();
        while let Some(e) = stream.next().await {
            if let AssistantMessageEvent::TextDelta { delta, .. } = e {
                deltas.push(delta);
            }
        }
        assert_eq!(deltas, ["abc", "def", "ghi", "j"]);

        // A long pause is cut short by cancellation: the turn ends aborted
        // with the text streamed so far.
        let client = ScriptedClient::from_jsonl(
            r#"{"content":[{"type":"text","text":"abcdef"}],"paceMs":600000,"deltaChars":3}"#,
        )
        .unwrap();
        let opts = StreamOptions::default();
        let cancel = opts.cancel.clone();
        let mut stream = client.stream(&model, &Context::default(), opts);
        let mut last = None;
        while let Some(e) = stream.next().await {
            if matches!(e, AssistantMessageEvent::TextStart { .. }) {
                cancel.cancel();
            }
            last = Some(e);
        }
        let Some(AssistantMessageEvent::Error { reason, error }) = last else {
            panic!("no error event")
        };
        assert_eq!(reason, StopReason::Aborted);
        assert_eq!(error.text(), "");
    }

    #[test]
    fn parse_errors_name_the_line() {
        let err = ScriptedClient::from_jsonl("\n{\"content\": 5}").unwrap_err();
        assert!(err.to_string().starts_with("script line 2:"), "{err}");
    }

    #[tokio::test]
    async fn tool_call_turn_defaults_to_tool_use() {
        let client = ScriptedClient::from_jsonl(
            r#"{"content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.txt"}}]}"#,
        )
        .unwrap();
        let msg = complete(
            &client,
            &Model::new("scripted", "s"),
            &Context::default(),
            StreamOptions::default(),
        )
        .await;
        assert_eq!(msg.stop_reason, StopReason::ToolUse);
        assert_eq!(msg.tool_calls().count(), 1);
    }
}
