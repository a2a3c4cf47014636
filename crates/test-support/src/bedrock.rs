//! A fake Amazon Bedrock runtime: scripted `ConverseStream` answers as AWS
//! event-stream frames (with correct CRCs) served by [`crate::http_server`],
//! error answers in Bedrock's shape, and the checks the real service makes
//! on a request body ([`check_request`]).
//!
//! The frames are refereed by boto3 in the integration tests
//! (`tests/tests/it/bedrock_sdk.rs`), which also validate our bodies with
//! botocore's service model and re-sign our requests.
//!
//! ```
//! use test_support::bedrock::{BedrockScript, Usage};
//! let reply = BedrockScript::new().text(&["Hel", "lo"]).stop("end_turn", Usage::default());
//! assert_eq!(reply.status, 200);
//! ```

use std::time::Duration;

use serde_json::{Value, json};

use crate::http_server::Reply;

/// The content type of an event stream.
pub const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// Encodes one event-stream frame with string headers (type 7).
pub fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in headers {
        block.push(u8::try_from(name.len()).expect("header name under 256 bytes"));
        block.extend_from_slice(name.as_bytes());
        block.push(7);
        let len = u16::try_from(value.len()).expect("header value under 64 KiB");
        block.extend_from_slice(&len.to_be_bytes());
        block.extend_from_slice(value.as_bytes());
    }
    let total = u32::try_from(16 + block.len() + payload.len()).expect("frame under 4 GiB");
    let headers_len = u32::try_from(block.len()).expect("headers under 4 GiB");
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&headers_len.to_be_bytes());
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&block);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// An `event` frame of type `kind` with a JSON payload.
pub fn event(kind: &str, payload: &Value) -> Vec<u8> {
    frame(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// An `exception` frame (`throttlingException`, `validationException`,
/// `modelStreamErrorException`, ...) with its message.
pub fn exception_frame(kind: &str, message: &str) -> Vec<u8> {
    frame(
        &[
            (":exception-type", kind),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        json!({ "message": message }).to_string().as_bytes(),
    )
}

/// Token counts for the `metadata` event (`inputTokens` excludes the cached
/// tokens, as Bedrock counts).
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// `inputTokens`.
    pub input: u64,
    /// `outputTokens`.
    pub output: u64,
    /// `cacheReadInputTokens`.
    pub cache_read: u64,
    /// `cacheWriteInputTokens`.
    pub cache_write: u64,
}

/// The frames of one streamed response; starts with `messageStart`.
#[derive(Clone, Debug)]
pub struct BedrockScript {
    frames: Vec<Vec<u8>>,
    next_block: u64,
}

impl Default for BedrockScript {
    fn default() -> Self {
        Self::new()
    }
}

impl BedrockScript {
    /// A response with only its `messageStart`.
    pub fn new() -> Self {
        BedrockScript {
            frames: vec![event("messageStart", &json!({"role": "assistant"}))],
            next_block: 0,
        }
    }

    fn block(mut self, start: Option<Value>, deltas: Vec<Value>) -> Self {
        let index = self.next_block;
        self.next_block += 1;
        if let Some(start) = start {
            self.frames.push(event(
                "contentBlockStart",
                &json!({"contentBlockIndex": index, "start": start}),
            ));
        }
        for delta in deltas {
            self.frames.push(event(
                "contentBlockDelta",
                &json!({"contentBlockIndex": index, "delta": delta}),
            ));
        }
        self.frames.push(event(
            "contentBlockStop",
            &json!({ "contentBlockIndex": index }),
        ));
        self
    }

    /// A reasoning block: its text in pieces, then its signature.
    pub fn thinking(self, pieces: &[&str], signature: &str) -> Self {
        let mut deltas: Vec<Value> = pieces
            .iter()
            .map(|p| json!({"reasoningContent": {"text": p}}))
            .collect();
        deltas.push(json!({"reasoningContent": {"signature": signature}}));
        self.block(None, deltas)
    }

    /// A text block in pieces.
    pub fn text(self, pieces: &[&str]) -> Self {
        let deltas = pieces.iter().map(|p| json!({ "text": p })).collect();
        self.block(None, deltas)
    }

    /// Tool calls one after the other, as Bedrock streams parallel calls:
    /// `(toolUseId, name, input JSON in pieces)`.
    pub fn calls(mut self, calls: &[(&str, &str, &[&str])]) -> Self {
        for (id, name, pieces) in calls {
            let deltas = pieces
                .iter()
                .map(|p| json!({"toolUse": {"input": p}}))
                .collect();
            self = self.block(
                Some(json!({"toolUse": {"toolUseId": id, "name": name}})),
                deltas,
            );
        }
        self
    }

    /// Ends with `messageStop` (`end_turn`, `tool_use`, `max_tokens`,
    /// `guardrail_intervened`, ...) and the `metadata` usage.
    pub fn stop(mut self, reason: &str, usage: Usage) -> Reply {
        self.frames
            .push(event("messageStop", &json!({ "stopReason": reason })));
        self.frames.push(event(
            "metadata",
            &json!({
                "usage": {
                    "inputTokens": usage.input,
                    "outputTokens": usage.output,
                    "totalTokens": usage.input + usage.output + usage.cache_read + usage.cache_write,
                    "cacheReadInputTokens": usage.cache_read,
                    "cacheWriteInputTokens": usage.cache_write,
                },
                "metrics": {"latencyMs": 42},
            }),
        ));
        self.reply()
    }

    /// Ends with an exception frame after what was sent so far.
    pub fn exception(mut self, kind: &str, message: &str) -> Reply {
        self.frames.push(exception_frame(kind, message));
        self.reply()
    }

    /// Ends without `messageStop`: the connection closes mid-stream (the
    /// last frame is cut in half too).
    pub fn cut(mut self) -> Reply {
        let text = event(
            "contentBlockDelta",
            &json!({"contentBlockIndex": self.next_block, "delta": {"text": "lost"}}),
        );
        self.frames.push(text[..text.len() / 2].to_vec());
        self.reply()
    }

    /// The frames so far.
    pub fn frames(&self) -> &[Vec<u8>] {
        &self.frames
    }

    /// The frames as a 200 event-stream reply, each frame split in two
    /// pieces so that a reader must join them.
    pub fn reply(self) -> Reply {
        let mut chunks = Vec::new();
        for f in self.frames {
            let (a, b) = f.split_at(f.len() / 3);
            chunks.push((Duration::from_millis(1), a.to_vec()));
            chunks.push((Duration::from_millis(1), b.to_vec()));
        }
        Reply {
            status: 200,
            headers: vec![
                ("content-type".into(), EVENT_STREAM.into()),
                ("x-amzn-requestid".into(), "fake-request-1".into()),
            ],
            chunks,
        }
    }
}

/// An error answer as Bedrock sends it: a JSON `{message}` body and the
/// `x-amzn-errortype` header (`ValidationException`,
/// `AccessDeniedException`, `ThrottlingException`, ...).
pub fn error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::status(status, &json!({ "message": message }).to_string())
        .header(
            "x-amzn-errortype",
            &format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
        )
        .header("x-amzn-requestid", "fake-request-2")
}

/// 429 `ThrottlingException` with `Retry-After: seconds`.
pub fn rate_limited(seconds: u64) -> Reply {
    error(
        429,
        "ThrottlingException",
        "Too many requests, please wait before trying again.",
    )
    .header("retry-after", &seconds.to_string())
}

/// What the real service would refuse in a request body: no `messages`,
/// a first turn that is not the user's, two turns of one role in a row, a
/// content block with no kind or two, blank text, a tool-use id outside
/// `[a-zA-Z0-9_-]{1,64}`, a tool result that answers no tool use of the
/// turn before or a tool use left unanswered, tool blocks without
/// `toolConfig`, and more than four cache points.
///
/// # Errors
/// The first problem found, in words.
pub fn check_request(body: &Value) -> Result<(), String> {
    let Some(messages) = body["messages"].as_array().filter(|m| !m.is_empty()) else {
        return Err("ValidationException: messages must not be empty".into());
    };
    let mut pending: Vec<String> = Vec::new();
    let mut previous = "";
    let mut tool_blocks = false;
    let mut cache_points = body["system"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b.get("cachePoint").is_some())
        .count();
    for (n, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        if !matches!(role, "user" | "assistant") || (n == 0 && role != "user") {
            return Err(format!(
                "messages.{n}.role: must start with user and be user or assistant, not {role:?}"
            ));
        }
        if role == previous {
            return Err(format!(
                "messages.{n}: a conversation must alternate between user and assistant roles"
            ));
        }
        previous = role;
        let Some(content) = message["content"].as_array().filter(|c| !c.is_empty()) else {
            return Err(format!("messages.{n}.content must not be empty"));
        };
        let mut answered = Vec::new();
        let mut uses = Vec::new();
        for (b, block) in content.iter().enumerate() {
            let kinds = [
                "text",
                "image",
                "toolUse",
                "toolResult",
                "reasoningContent",
                "cachePoint",
            ];
            let present: Vec<&str> = kinds
                .iter()
                .copied()
                .filter(|k| block.get(*k).is_some())
                .collect();
            if present.len() != 1 || block.as_object().is_none_or(|o| o.len() != 1) {
                return Err(format!(
                    "messages.{n}.content.{b}: a block holds exactly one member: {block}"
                ));
            }
            let id_ok = |id: &str| {
                !id.is_empty()
                    && id.len() <= 64
                    && id
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
            };
            match present[0] {
                "text" if block["text"].as_str().is_none_or(|t| t.trim().is_empty()) => {
                    return Err(format!(
                        "messages.{n}.content.{b}: The text field in the ContentBlock object is blank"
                    ));
                }
                "toolUse" | "toolResult" => {
                    tool_blocks = true;
                    let id = block[present[0]]["toolUseId"].as_str().unwrap_or("");
                    if !id_ok(id) {
                        return Err(format!(
                            "messages.{n}.content.{b}: toolUseId {id:?} does not match [a-zA-Z0-9_-]+ (at most 64)"
                        ));
                    }
                    if present[0] == "toolUse" {
                        uses.push(id.to_string());
                    } else {
                        answered.push(id.to_string());
                    }
                }
                "cachePoint" => cache_points += 1,
                _ => {}
            }
        }
        if role == "user" {
            for id in &answered {
                let Some(at) = pending.iter().position(|p| p == id) else {
                    return Err(format!(
                        "messages.{n}: the toolResult {id} answers no toolUse of the previous turn"
                    ));
                };
                pending.remove(at);
            }
            if !pending.is_empty() {
                return Err(format!(
                    "messages.{n}: Expected toolResult blocks for the following Ids: {}",
                    pending.join(", ")
                ));
            }
        }
        pending = uses;
    }
    if tool_blocks && body.get("toolConfig").is_none() {
        return Err("The toolConfig field must be defined when using toolUse and toolResult content blocks.".into());
    }
    if cache_points > 4 {
        return Err(format!(
            "at most 4 cache points are allowed, got {cache_points}"
        ));
    }
    Ok(())
}
