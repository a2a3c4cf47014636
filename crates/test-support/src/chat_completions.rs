//! A fake Chat Completions server: scripted streamed chunks in OpenAI's
//! shapes, served by [`crate::http_server`], plus the checks OpenAI makes
//! on a request ([`check_request`]).
//!
//! ```
//! use test_support::chat_completions::ChatScript;
//! let reply = ChatScript::new().content("Hello").finish("stop");
//! assert_eq!(reply.status, 200);
//! ```

use serde_json::{Value, json};

use crate::http_server::Reply;

/// The longest tool-call id OpenAI accepts back.
pub const MAX_CALL_ID: usize = 40;

/// The chunks of one streamed completion.
#[derive(Clone, Debug, Default)]
pub struct ChatScript {
    chunks: Vec<Value>,
    calls: usize,
}

impl ChatScript {
    /// A completion with no chunk yet.
    pub fn new() -> Self {
        ChatScript::default()
    }

    fn delta(mut self, delta: Value, finish: Option<&str>) -> Self {
        self.chunks.push(json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
            "model": "fake", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        }));
        self
    }

    /// Reasoning text, as DeepSeek and vLLM stream it (`reasoning_content`).
    pub fn reasoning(self, text: &str) -> Self {
        self.delta(
            json!({"role": "assistant", "reasoning_content": text}),
            None,
        )
    }

    /// Answer text.
    pub fn content(self, text: &str) -> Self {
        self.delta(json!({"role": "assistant", "content": text}), None)
    }

    /// A whole tool call in one chunk.
    pub fn call(mut self, id: &str, name: &str, arguments: &Value) -> Self {
        let index = self.calls;
        self.calls += 1;
        self.delta(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}}]}),
            None,
        )
    }

    /// The reply: a last chunk with `finish_reason`, usage, and `[DONE]`.
    pub fn finish(self, reason: &str) -> Reply {
        let mut me = self.delta(json!({}), Some(reason));
        me.chunks.push(json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
            "model": "fake", "choices": [],
            "usage": {"prompt_tokens": 20, "completion_tokens": 30, "total_tokens": 50}
        }));
        let mut lines: Vec<String> = me.chunks.iter().map(Value::to_string).collect();
        lines.push("[DONE]".into());
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        Reply::sse(&refs)
    }
}

/// What OpenAI refuses in a Chat Completions body, as far as a replayed
/// transcript goes: a tool-call id longer than [`MAX_CALL_ID`], an
/// assistant's tool calls not each answered by a `tool` message before the
/// next other message, and a `tool` message that answers no call.
///
/// # Errors
/// The first problem found, in words.
pub fn check_request(body: &Value) -> Result<(), String> {
    let Some(messages) = body["messages"].as_array() else {
        return Err("messages is not an array".into());
    };
    let mut open: Vec<String> = Vec::new();
    for (n, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        if role == "tool" {
            let id = message["tool_call_id"].as_str().unwrap_or("");
            let Some(at) = open.iter().position(|o| o == id) else {
                return Err(format!(
                    "messages.[{n}].role: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (id {id:?})"
                ));
            };
            open.remove(at);
            continue;
        }
        if !open.is_empty() {
            return Err(format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                open.join(", ")
            ));
        }
        for (c, call) in message["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let id = call["id"].as_str().unwrap_or("");
            if id.is_empty() || id.len() > MAX_CALL_ID {
                return Err(format!(
                    "Invalid 'messages[{n}].tool_calls[{c}].id': string too long. Expected a string with maximum length {MAX_CALL_ID}, but got a string with length {}.",
                    id.len()
                ));
            }
            open.push(id.to_string());
        }
    }
    if !open.is_empty() {
        return Err(format!(
            "tool_call_ids without response messages: {}",
            open.join(", ")
        ));
    }
    Ok(())
}
