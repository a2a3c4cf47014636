//! A fake Anthropic Messages API: scripted streamed answers in the event
//! shapes Anthropic sends, served by [`crate::http_server`], plus the checks
//! the real service makes on a request ([`check_request`]).
//!
//! ```
//! use test_support::anthropic::AnthropicScript;
//! let reply = AnthropicScript::new().text("Hello").stop("end_turn");
//! assert_eq!(reply.status, 200);
//! ```

use serde_json::{Value, json};

use crate::http_server::Reply;

/// The events of one streamed message.
#[derive(Clone, Debug)]
pub struct AnthropicScript {
    events: Vec<Value>,
    blocks: usize,
}

impl Default for AnthropicScript {
    fn default() -> Self {
        AnthropicScript::new()
    }
}

impl AnthropicScript {
    /// A message that has started (`message_start` with some usage).
    pub fn new() -> Self {
        AnthropicScript {
            events: vec![json!({"type": "message_start", "message": {
                "id": "msg_fake", "type": "message", "role": "assistant", "content": [],
                "model": "claude-fake", "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 20, "output_tokens": 1}
            }})],
            blocks: 0,
        }
    }

    fn block(mut self, start: Value, deltas: Vec<Value>) -> Self {
        let index = self.blocks;
        self.blocks += 1;
        self.events
            .push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        for delta in deltas {
            self.events
                .push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        }
        self.events
            .push(json!({"type": "content_block_stop", "index": index}));
        self
    }

    /// A thinking block with its signature.
    pub fn thinking(self, text: &str, signature: &str) -> Self {
        self.block(
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            vec![
                json!({"type": "thinking_delta", "thinking": text}),
                json!({"type": "signature_delta", "signature": signature}),
            ],
        )
    }

    /// A text block.
    pub fn text(self, text: &str) -> Self {
        self.text_in(&[text])
    }

    /// A text block streamed in `pieces`, one delta each.
    pub fn text_in(self, pieces: &[&str]) -> Self {
        self.block(
            json!({"type": "text", "text": ""}),
            pieces
                .iter()
                .map(|p| json!({"type": "text_delta", "text": p}))
                .collect(),
        )
    }

    /// A tool-use block whose input arrives as one JSON delta.
    pub fn tool_use(self, id: &str, name: &str, input: &Value) -> Self {
        self.block(
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
            vec![json!({"type": "input_json_delta", "partial_json": input.to_string()})],
        )
    }

    /// The reply: the message ends with `stop_reason`.
    pub fn stop(mut self, stop_reason: &str) -> Reply {
        self.events.push(json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": 30}}));
        self.events.push(json!({"type": "message_stop"}));
        Reply::typed_sse(&self.events)
    }
}

/// What the Messages API refuses in a request body, as far as a replayed
/// transcript goes: a thinking block whose signature this server did not
/// issue for this model (`signatures` holds the ones it did), a tool-use id
/// outside `^[a-zA-Z0-9_-]{1,64}$`, a tool use not answered by a
/// tool result in the very next user message, a tool result that answers
/// nothing, empty text blocks, and a transcript that does not start with
/// the user.
///
/// # Errors
/// The first problem found, in words.
pub fn check_request(body: &Value, signatures: &[&str]) -> Result<(), String> {
    let Some(messages) = body["messages"].as_array().filter(|m| !m.is_empty()) else {
        return Err("messages: at least one message is required".into());
    };
    if messages[0]["role"] != "user" {
        return Err("messages: the first message must use the \"user\" role".into());
    }
    let mut open: Vec<String> = Vec::new();
    for (n, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        let blocks: Vec<Value> = match &message["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            other => return Err(format!("messages.{n}.content: invalid {other}")),
        };
        if role == "user" {
            for (b, block) in blocks.iter().enumerate() {
                if block["type"] == "tool_result" {
                    let id = block["tool_use_id"].as_str().unwrap_or("");
                    let Some(at) = open.iter().position(|o| o == id) else {
                        return Err(format!(
                            "messages.{n}.content.{b}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        ));
                    };
                    open.remove(at);
                }
            }
        }
        if !open.is_empty() {
            return Err(format!(
                "messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: {}",
                open.join(", ")
            ));
        }
        for (b, block) in blocks.iter().enumerate() {
            let at = format!("messages.{n}.content.{b}");
            match block["type"].as_str().unwrap_or("") {
                "text" if block["text"].as_str().is_none_or(str::is_empty) => {
                    return Err(format!("{at}: text content blocks must be non-empty"));
                }
                "thinking" | "redacted_thinking" if role == "assistant" => {
                    let sig = block["signature"].as_str().unwrap_or("");
                    if !signatures.contains(&sig) {
                        return Err(format!("{at}: Invalid `signature` in `thinking` block"));
                    }
                }
                "tool_use" if role == "assistant" => {
                    let id = block["id"].as_str().unwrap_or("");
                    let ok = !id.is_empty()
                        && id.len() <= 64
                        && id
                            .bytes()
                            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
                    if !ok {
                        return Err(format!(
                            "{at}.id: String should match pattern '^[a-zA-Z0-9_-]+$' (got {id:?})"
                        ));
                    }
                    open.push(id.to_string());
                }
                _ => {}
            }
        }
    }
    if !open.is_empty() {
        return Err(format!(
            "`tool_use` ids were found without `tool_result` blocks immediately after: {}",
            open.join(", ")
        ));
    }
    Ok(())
}
