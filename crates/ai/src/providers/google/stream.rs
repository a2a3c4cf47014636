//! The Gemini stream into the message: each chunk is a whole
//! `GenerateContentResponse` whose parts open, fill and close blocks
//! (function calls arrive whole); usage, finish reasons and blocked
//! prompts are read as they come.

use serde::Deserialize;
use serde_json::Value;

use super::new_call_id;
use crate::message::{StopReason, Usage};
use crate::providers::builder::MessageBuilder;
use crate::providers::http::ENDED_EARLY;

/// One `GenerateContentResponse` chunk, as far as it is read. Every field is
/// optional and unknown fields are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Chunk {
    candidates: Vec<Candidate>,
    usage_metadata: Option<UsageMetadata>,
    prompt_feedback: Option<PromptFeedback>,
    error: Option<ApiError>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Candidate {
    content: Option<CandidateContent>,
    finish_reason: Option<String>,
    finish_message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CandidateContent {
    parts: Vec<ResponsePart>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ResponsePart {
    text: Option<String>,
    thought: Option<bool>,
    thought_signature: Option<String>,
    function_call: Option<ResponseCall>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ResponseCall {
    name: String,
    args: Option<Value>,
    id: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct UsageMetadata {
    prompt_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
    total_token_count: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PromptFeedback {
    block_reason: Option<String>,
    block_reason_message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ApiError {
    message: Option<String>,
    status: Option<String>,
}

fn usage_from(u: &UsageMetadata) -> Usage {
    let prompt = u.prompt_token_count.unwrap_or(0);
    let cached = u.cached_content_token_count.unwrap_or(0);
    let output = u.candidates_token_count.unwrap_or(0) + u.thoughts_token_count.unwrap_or(0);
    let input = prompt.saturating_sub(cached);
    Usage {
        // `promptTokenCount` counts the cached tokens too.
        input,
        output,
        cache_read: cached,
        cache_write: 0,
        total_tokens: u.total_token_count.unwrap_or(prompt + output),
        cost: Default::default(),
    }
}

/// The message for a `finishReason` that is not a normal end.
fn finish_error(reason: &str, message: Option<&str>) -> String {
    let what = match reason {
        "SAFETY" => "the response was blocked by the safety filters",
        "RECITATION" => "the response was blocked for reciting training data",
        "BLOCKLIST" => "the response contained blocklisted terms",
        "PROHIBITED_CONTENT" => "the response was blocked for prohibited content",
        "SPII" => "the response was blocked for sensitive personal information",
        "LANGUAGE" => "the response was in an unsupported language",
        "MALFORMED_FUNCTION_CALL" => "the model produced a malformed function call",
        "UNEXPECTED_TOOL_CALL" => "the model called a tool that was not offered",
        _ => "the response stopped for another reason",
    };
    match message.filter(|m| !m.is_empty()) {
        Some(m) => format!("Gemini stopped ({reason}): {what}: {m}"),
        None => format!("Gemini stopped ({reason}): {what}"),
    }
}

/// What a block of the message stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Thinking,
    Text,
}

/// How the response ended, from its `finishReason`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ending {
    Stop,
    Length,
}

/// Streaming state of one response.
pub(super) struct Stream {
    pub(super) b: MessageBuilder,
    /// The text or thinking block parts are appended to.
    open: Option<(usize, Kind)>,
    /// The ids of this message's calls so far (made-up ones included).
    call_ids: Vec<String>,
    ending: Option<Ending>,
}

impl Stream {
    pub(super) fn new(b: MessageBuilder) -> Self {
        Stream {
            b,
            open: None,
            call_ids: Vec::new(),
            ending: None,
        }
    }

    /// Handles one SSE event; never asks to stop early (the stream closes
    /// after the last chunk).
    pub(super) fn event(&mut self, data: &str) -> Result<bool, String> {
        let chunk: Chunk =
            serde_json::from_str(data).map_err(|e| format!("Invalid stream chunk: {e}"))?;
        self.apply(chunk).map(|()| true)
    }

    fn apply(&mut self, chunk: Chunk) -> Result<(), String> {
        if let Some(e) = chunk.error {
            let message = e
                .message
                .unwrap_or_else(|| "the server reported an error".into());
            return Err(match e.status {
                Some(status) => format!("{status}: {message}"),
                None => message,
            });
        }
        self.b.start();
        if let Some(u) = &chunk.usage_metadata {
            self.b.message().usage = usage_from(u);
        }
        if let Some(reason) = chunk
            .prompt_feedback
            .as_ref()
            .and_then(|f| f.block_reason.as_deref())
        {
            let detail = chunk
                .prompt_feedback
                .as_ref()
                .and_then(|f| f.block_reason_message.as_deref())
                .filter(|m| !m.is_empty());
            return Err(match detail {
                Some(m) => format!("Gemini blocked the prompt ({reason}): {m}"),
                None => format!("Gemini blocked the prompt ({reason})"),
            });
        }
        let Some(candidate) = chunk.candidates.into_iter().next() else {
            return Ok(());
        };
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            self.part(part);
        }
        match candidate.finish_reason.as_deref() {
            None | Some("FINISH_REASON_UNSPECIFIED") => Ok(()),
            Some("STOP") => {
                self.ending = Some(Ending::Stop);
                Ok(())
            }
            Some("MAX_TOKENS") => {
                self.ending = Some(Ending::Length);
                Ok(())
            }
            Some(other) => Err(finish_error(other, candidate.finish_message.as_deref())),
        }
    }

    fn part(&mut self, part: ResponsePart) {
        if let Some(call) = part.function_call {
            self.close();
            let id = match call.id.filter(|id| !id.is_empty()) {
                Some(id) if !self.call_ids.contains(&id) => id,
                _ => new_call_id(&call.name),
            };
            self.call_ids.push(id.clone());
            let i = self.b.begin_tool_call(&id, &call.name);
            let args = call
                .args
                .unwrap_or_else(|| Value::Object(Default::default()));
            self.b.append_tool_args(i, &args.to_string());
            if let Some(sig) = part.thought_signature.filter(|s| !s.is_empty()) {
                self.b.set_thought_signature(i, sig);
            }
            self.b.end_tool_call(i);
            return;
        }
        let Some(text) = part.text else {
            // A signature on a part of its own belongs to the block before.
            if let (Some(sig), Some((i, kind))) = (part.thought_signature, self.open) {
                self.sign(i, kind, sig);
            }
            return;
        };
        let kind = if part.thought == Some(true) {
            Kind::Thinking
        } else {
            Kind::Text
        };
        let index = match self.open {
            Some((i, k)) if k == kind => i,
            _ => {
                self.close();
                let i = match kind {
                    Kind::Thinking => self.b.begin_thinking(),
                    Kind::Text => self.b.begin_text(),
                };
                self.open = Some((i, kind));
                i
            }
        };
        if !text.is_empty() {
            match kind {
                Kind::Thinking => self.b.append_thinking(index, &text),
                Kind::Text => self.b.append_text(index, &text),
            }
        }
        if let Some(sig) = part.thought_signature {
            self.sign(index, kind, sig);
        }
    }

    /// Keeps the latest non-empty signature of a block.
    fn sign(&mut self, index: usize, kind: Kind, signature: String) {
        if signature.is_empty() {
            return;
        }
        match kind {
            Kind::Thinking => self.b.set_thinking_signature(index, signature),
            Kind::Text => self.b.set_text_signature(index, signature),
        }
    }

    /// Ends the open text or thinking block.
    pub(super) fn close(&mut self) {
        match self.open.take() {
            Some((i, Kind::Thinking)) => self.b.end_thinking(i),
            Some((i, Kind::Text)) => self.b.end_text(i),
            None => {}
        }
    }

    /// A non-streamed answer: one `GenerateContentResponse`, or the JSON
    /// array of chunks the endpoint sends without `alt=sse`.
    pub(super) fn replay(&mut self, body: Value) -> Result<(), String> {
        let chunks = match body {
            Value::Array(chunks) => chunks,
            one => vec![one],
        };
        for chunk in chunks {
            let chunk = Chunk::deserialize(chunk).map_err(|e| format!("Invalid response: {e}"))?;
            self.apply(chunk)?;
        }
        Ok(())
    }

    /// The stop reason of a response that ended normally, or the error it is.
    pub(super) fn outcome(&mut self) -> Result<StopReason, String> {
        match self.ending {
            Some(_) if self.b.has_tool_calls() => Ok(StopReason::ToolUse),
            Some(Ending::Stop) => Ok(StopReason::Stop),
            Some(Ending::Length) => Ok(StopReason::Length),
            None => Err(ENDED_EARLY.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_subtracts_cached_tokens_and_adds_thoughts() {
        let u = usage_from(&UsageMetadata {
            prompt_token_count: Some(100),
            cached_content_token_count: Some(40),
            candidates_token_count: Some(10),
            thoughts_token_count: Some(5),
            total_token_count: Some(115),
        });
        assert_eq!(
            (u.input, u.cache_read, u.output, u.total_tokens),
            (60, 40, 15, 115)
        );
    }
}
