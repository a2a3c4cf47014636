//! The Responses stream into the message: events (or a whole response,
//! replayed as them) open, fill and close blocks; usage, errors and the
//! stop reason are read from the last one.

use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;
use serde_json::Value;

use super::TextSignature;
use crate::content::ContentBlock;
use crate::message::{StopReason, Usage};
use crate::providers::builder::MessageBuilder;
use crate::providers::http::ENDED_EARLY;

/// One streamed event, as far as it is read. Every field is optional and
/// unknown fields and event types are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    output_index: Option<u64>,
    item_id: Option<String>,
    item: Option<Value>,
    delta: Option<String>,
    arguments: Option<String>,
    response: Option<ResponseObject>,
    code: Option<Value>,
    message: Option<String>,
}

/// The `response` of the final events (and of a non-streamed answer).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ResponseObject {
    status: Option<String>,
    usage: Option<ResponseUsage>,
    error: Option<ApiError>,
    incomplete_details: Option<IncompleteDetails>,
    output: Option<Vec<Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ApiError {
    code: Option<Value>,
    message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct IncompleteDetails {
    reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ResponseUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    total_tokens: Option<u64>,
    input_tokens_details: Option<InputTokensDetails>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InputTokensDetails {
    cached_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
}

/// An output item (`reasoning`, `message`, `function_call`, others ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct OutputItem {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
    content: Option<Vec<OutputContent>>,
    summary: Option<Vec<SummaryPart>>,
    phase: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct OutputContent {
    text: Option<String>,
    refusal: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SummaryPart {
    text: Option<String>,
}

fn usage_from(u: &ResponseUsage) -> Usage {
    let input = u.input_tokens.unwrap_or(0);
    let output = u.output_tokens.unwrap_or(0);
    let details = u.input_tokens_details.as_ref();
    let cached = details.and_then(|d| d.cached_tokens).unwrap_or(0);
    let written = details.and_then(|d| d.cache_write_tokens).unwrap_or(0);
    Usage {
        // `input_tokens_details` is a breakdown of `input_tokens`.
        input: input.saturating_sub(cached).saturating_sub(written),
        // Reasoning tokens are part of `output_tokens` already.
        output,
        cache_read: cached,
        cache_write: written,
        total_tokens: u.total_tokens.unwrap_or(input + output),
        cost: Default::default(),
    }
}

fn code_text(code: Option<&Value>) -> Option<String> {
    match code? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Null | Value::String(_) => None,
        other => Some(other.to_string()),
    }
}

fn error_text(code: Option<&Value>, message: Option<&str>) -> String {
    let message = message.filter(|m| !m.is_empty());
    match (code_text(code), message) {
        (Some(code), Some(m)) => format!("{code}: {m}"),
        (Some(code), None) => code,
        (None, Some(m)) => m.to_string(),
        (None, None) => "the server reported an error without details".into(),
    }
}

/// What a block of the message stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Thinking,
    Text,
    Call,
}

/// How the response ended, from its final event.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ending {
    Completed,
    /// `response.incomplete`, with its reason.
    Incomplete(Option<String>),
}

/// Streaming state of one response.
pub(super) struct Stream {
    pub(super) b: MessageBuilder,
    /// `output_index` -> content index.
    by_index: HashMap<u64, usize>,
    /// Item id -> content index.
    by_id: HashMap<String, usize>,
    /// Blocks still open, by content index.
    open: BTreeSet<usize>,
    kinds: HashMap<usize, Kind>,
    ending: Option<Ending>,
}

impl Stream {
    pub(super) fn new(b: MessageBuilder) -> Self {
        Stream {
            b,
            by_index: HashMap::new(),
            by_id: HashMap::new(),
            open: BTreeSet::new(),
            kinds: HashMap::new(),
            ending: None,
        }
    }

    /// The open block an event is about, of the kind it expects.
    fn block(&self, event: &Event, kind: Kind) -> Option<usize> {
        let index = event
            .output_index
            .and_then(|i| self.by_index.get(&i))
            .or_else(|| event.item_id.as_ref().and_then(|id| self.by_id.get(id)))
            .copied()?;
        (self.open.contains(&index) && self.kinds.get(&index) == Some(&kind)).then_some(index)
    }

    /// Handles one SSE event; `Ok(false)` once the response is complete.
    pub(super) fn event(&mut self, name: Option<&str>, data: &str) -> Result<bool, String> {
        let mut event: Event =
            serde_json::from_str(data).map_err(|e| format!("Invalid stream event: {e}"))?;
        if event.kind.is_empty() {
            event.kind = name.unwrap_or_default().to_string();
        }
        self.apply(event)
    }

    fn apply(&mut self, event: Event) -> Result<bool, String> {
        match event.kind.as_str() {
            "response.created" | "response.in_progress" | "response.queued" => self.b.start(),
            "response.output_item.added" => {
                if let Some(item) = &event.item {
                    self.item_added(event.output_index, item);
                }
            }
            "response.reasoning_summary_part.added" => {
                if let Some(i) = self.block(&event, Kind::Thinking) {
                    let has_text = matches!(self.b.message().content.get(i),
                        Some(ContentBlock::Thinking(t)) if !t.thinking.is_empty());
                    if has_text {
                        self.b.append_thinking(i, "\n\n");
                    }
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let (Some(i), Some(d)) = (self.block(&event, Kind::Thinking), &event.delta) {
                    self.b.append_thinking(i, d);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let (Some(i), Some(d)) = (self.block(&event, Kind::Text), &event.delta) {
                    self.b.append_text(i, d);
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(i), Some(d)) = (self.block(&event, Kind::Call), &event.delta) {
                    self.b.append_tool_args(i, d);
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(i), Some(args)) = (self.block(&event, Kind::Call), &event.arguments)
                    && self.b.tool_args(i).is_empty()
                {
                    self.b.append_tool_args(i, args);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = &event.item {
                    self.item_done(event.output_index, item);
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = event.response.unwrap_or_default();
                if let Some(u) = &response.usage {
                    self.b.message().usage = usage_from(u);
                }
                self.ending = Some(if event.kind == "response.incomplete" {
                    Ending::Incomplete(response.incomplete_details.and_then(|d| d.reason))
                } else {
                    Ending::Completed
                });
                return Ok(false);
            }
            "response.failed" => {
                let response = event.response.unwrap_or_default();
                if let Some(u) = &response.usage {
                    self.b.message().usage = usage_from(u);
                }
                return Err(match (response.error, response.incomplete_details) {
                    (Some(e), _) => error_text(e.code.as_ref(), e.message.as_deref()),
                    (None, Some(IncompleteDetails { reason: Some(r) })) => {
                        format!("incomplete: {r}")
                    }
                    _ => "the response failed without details".into(),
                });
            }
            "error" => {
                return Err(error_text(event.code.as_ref(), event.message.as_deref()));
            }
            _ => {}
        }
        Ok(true)
    }

    fn item_added(&mut self, output_index: Option<u64>, raw: &Value) {
        let Ok(item) = OutputItem::deserialize(raw) else {
            return;
        };
        let (index, kind) = match item.kind.as_str() {
            "reasoning" => (self.b.begin_thinking(), Kind::Thinking),
            "message" => (self.b.begin_text(), Kind::Text),
            "function_call" => {
                let id = call_id(&item);
                let i = self
                    .b
                    .begin_tool_call(&id, item.name.as_deref().unwrap_or(""));
                if let Some(args) = item.arguments.as_deref() {
                    self.b.append_tool_args(i, args);
                }
                (i, Kind::Call)
            }
            // Built-in tools (web search, ...) are not ours to show.
            _ => return,
        };
        if let Some(o) = output_index {
            self.by_index.insert(o, index);
        }
        if let Some(id) = item.id {
            self.by_id.insert(id, index);
        }
        self.open.insert(index);
        self.kinds.insert(index, kind);
    }

    fn item_done(&mut self, output_index: Option<u64>, raw: &Value) {
        let Ok(item) = OutputItem::deserialize(raw) else {
            return;
        };
        let lookup = Event {
            output_index,
            item_id: item.id.clone(),
            ..Default::default()
        };
        let index = match item.kind.as_str() {
            "reasoning" => {
                let Some(i) = self.block(&lookup, Kind::Thinking) else {
                    return;
                };
                let summary: Vec<&str> = item
                    .summary
                    .iter()
                    .flatten()
                    .filter_map(|p| p.text.as_deref())
                    .collect();
                let empty = matches!(self.b.message().content.get(i),
                    Some(ContentBlock::Thinking(t)) if t.thinking.is_empty());
                if empty && !summary.is_empty() {
                    self.b.append_thinking(i, &summary.join("\n\n"));
                }
                // The whole item, to be replayed as it came.
                self.b.append_signature(i, &raw.to_string());
                self.b.end_thinking(i);
                i
            }
            "message" => {
                let Some(i) = self.block(&lookup, Kind::Text) else {
                    return;
                };
                let empty = matches!(self.b.message().content.get(i),
                    Some(ContentBlock::Text(t)) if t.text.is_empty());
                if empty {
                    let text: String = item
                        .content
                        .iter()
                        .flatten()
                        .filter_map(|c| c.text.as_deref().or(c.refusal.as_deref()))
                        .collect();
                    if !text.is_empty() {
                        self.b.append_text(i, &text);
                    }
                }
                if let Some(id) = &item.id {
                    let signature = TextSignature {
                        v: 1,
                        id,
                        phase: item.phase.as_deref(),
                    };
                    // Plain data with string keys: serializing it cannot fail.
                    let signature = serde_json::to_string(&signature).unwrap_or_default();
                    self.b.set_text_signature(i, signature);
                }
                self.b.end_text(i);
                i
            }
            "function_call" => {
                let Some(i) = self.block(&lookup, Kind::Call) else {
                    return;
                };
                if self.b.tool_args(i).is_empty()
                    && let Some(args) = item.arguments.as_deref()
                {
                    self.b.append_tool_args(i, args);
                }
                let id = call_id(&item);
                self.b.set_tool_call_identity(i, Some(&id), None);
                self.b.end_tool_call(i);
                i
            }
            _ => return,
        };
        self.open.remove(&index);
    }

    /// Ends what the stream left open (a broken or cancelled stream).
    pub(super) fn end_blocks(&mut self) {
        for i in std::mem::take(&mut self.open) {
            match self.kinds.get(&i) {
                Some(Kind::Thinking) => self.b.end_thinking(i),
                Some(Kind::Text) => self.b.end_text(i),
                Some(Kind::Call) => self.b.end_tool_call(i),
                None => {}
            }
        }
    }

    /// A non-streamed response (a server that ignored `stream: true`),
    /// replayed as the events it stands for.
    pub(super) fn replay(&mut self, response: &Value) -> Result<(), String> {
        if let Some(e) = response.get("error").filter(|e| !e.is_null()) {
            return Err(error_text(e.get("code"), e["message"].as_str()));
        }
        self.b.start();
        let output = response["output"].as_array().cloned().unwrap_or_default();
        for (i, item) in output.iter().enumerate() {
            self.item_added(Some(i as u64), item);
            self.item_done(Some(i as u64), item);
        }
        let status = response["status"].as_str().unwrap_or("completed");
        let kind = if status == "incomplete" {
            "response.incomplete"
        } else if status == "failed" {
            "response.failed"
        } else {
            "response.completed"
        };
        let event = Event {
            kind: kind.to_string(),
            response: ResponseObject::deserialize(response).ok(),
            ..Default::default()
        };
        self.apply(event).map(|_| ())
    }

    /// The stop reason of a response that ended normally, or the error it
    /// is.
    pub(super) fn outcome(&mut self) -> Result<StopReason, String> {
        let has_calls = self.b.has_tool_calls();
        match &self.ending {
            Some(Ending::Completed) if has_calls => Ok(StopReason::ToolUse),
            Some(Ending::Completed) => Ok(StopReason::Stop),
            Some(Ending::Incomplete(Some(reason))) if reason == "content_filter" => Err(
                "The response was cut short by the server's content filter (incomplete: content_filter)"
                    .into(),
            ),
            Some(Ending::Incomplete(_)) => Ok(StopReason::Length),
            None => Err(ENDED_EARLY.into()),
        }
    }
}

/// Our id of a function call: `call_id|item_id` (just the call id when the
/// item has no id).
fn call_id(item: &OutputItem) -> String {
    let call = item.call_id.as_deref().unwrap_or("");
    match item.id.as_deref().filter(|s| !s.is_empty()) {
        Some(id) => format!("{call}|{id}"),
        None => call.to_string(),
    }
}
