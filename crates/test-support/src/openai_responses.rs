//! A fake OpenAI Responses API: scripted SSE answers in the shapes OpenAI
//! streams (every event with its `sequence_number`, `output_index`,
//! `item_id` and the fields the official SDK's types require), served by
//! [`crate::http_server`], plus the checks the real service makes on a
//! `store: false` request ([`check_request`]).
//!
//! The event shapes are refereed by the `openai` Python SDK in the
//! integration tests (`tests/tests/it/openai_sdk.rs`): the SDK parses every
//! event into its own types, and strictly validates them.
//!
//! ```
//! use test_support::openai_responses::{ResponseScript, Usage};
//! let reply = ResponseScript::new("resp_1")
//!     .text("msg_1", &["Hel", "lo"])
//!     .completed(Usage { input: 10, output: 2, ..Usage::default() });
//! assert_eq!(reply.status, 200);
//! ```

use serde_json::{Value, json};

use crate::http_server::Reply;

/// Token counts for `response.completed`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// `input_tokens` (cached ones included, as OpenAI counts).
    pub input: u64,
    /// `input_tokens_details.cached_tokens`.
    pub cached: u64,
    /// `input_tokens_details.cache_write_tokens`.
    pub cache_write: u64,
    /// `output_tokens` (reasoning included, as OpenAI counts).
    pub output: u64,
    /// `output_tokens_details.reasoning_tokens`.
    pub reasoning: u64,
}

/// One function call of [`ResponseScript::parallel_calls`].
#[derive(Clone, Debug)]
pub struct Call<'a> {
    /// The item id (`fc_...`).
    pub id: &'a str,
    /// The call id (`call_...`).
    pub call_id: &'a str,
    /// The tool name.
    pub name: &'a str,
    /// The arguments' JSON text, in the pieces it is streamed in.
    pub pieces: &'a [&'a str],
}

/// The events of one streamed response, built item by item.
#[derive(Clone, Debug)]
pub struct ResponseScript {
    id: String,
    events: Vec<Value>,
    output: Vec<Value>,
}

impl ResponseScript {
    /// A response that has started (`response.created`, `response.in_progress`).
    pub fn new(id: &str) -> Self {
        let mut script = ResponseScript {
            id: id.to_string(),
            events: Vec::new(),
            output: Vec::new(),
        };
        let created = script.response("in_progress", json!({}));
        script.push("response.created", json!({ "response": created }));
        let progress = script.response("in_progress", json!({}));
        script.push("response.in_progress", json!({ "response": progress }));
        script
    }

    fn response(&self, status: &str, extra: Value) -> Value {
        let mut r = json!({
            "id": self.id, "object": "response", "created_at": 1_764_000_000,
            "status": status, "model": "gpt-fake", "output": self.output,
            "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
            "error": null, "incomplete_details": null, "instructions": null,
            "metadata": {}, "temperature": 1.0, "top_p": 1.0, "usage": null,
        });
        if let (Some(r), Some(extra)) = (r.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                r.insert(k.clone(), v.clone());
            }
        }
        r
    }

    fn push(&mut self, kind: &str, mut fields: Value) {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.events.len());
        self.events.push(fields);
    }

    /// A reasoning item whose summary streams in `pieces` (one summary
    /// part) and which carries `encrypted`.
    pub fn reasoning(mut self, id: &str, pieces: &[&str], encrypted: &str) -> Self {
        let index = self.output.len();
        let at = json!({"output_index": index, "item_id": id, "summary_index": 0});
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"type": "reasoning", "id": id, "summary": []}}),
        );
        let text: String = pieces.concat();
        let mut part = at.clone();
        part["part"] = json!({"type": "summary_text", "text": ""});
        self.push("response.reasoning_summary_part.added", part);
        for piece in pieces {
            let mut delta = at.clone();
            delta["delta"] = json!(piece);
            self.push("response.reasoning_summary_text.delta", delta);
        }
        let mut done = at.clone();
        done["text"] = json!(text);
        self.push("response.reasoning_summary_text.done", done);
        let mut part = at;
        part["part"] = json!({"type": "summary_text", "text": text});
        self.push("response.reasoning_summary_part.done", part);
        let item = json!({"type": "reasoning", "id": id,
            "summary": [{"type": "summary_text", "text": text}], "encrypted_content": encrypted});
        self.item_done(index, item);
        self
    }

    /// An assistant message item whose text streams in `pieces`.
    pub fn text(mut self, id: &str, pieces: &[&str]) -> Self {
        let index = self.output.len();
        let at = json!({"output_index": index, "item_id": id, "content_index": 0});
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"type": "message", "id": id, "role": "assistant",
                "status": "in_progress", "content": []}}),
        );
        let mut part = at.clone();
        part["part"] = json!({"type": "output_text", "text": "", "annotations": []});
        self.push("response.content_part.added", part);
        for piece in pieces {
            let mut delta = at.clone();
            delta["delta"] = json!(piece);
            delta["logprobs"] = json!([]);
            self.push("response.output_text.delta", delta);
        }
        let text: String = pieces.concat();
        let mut done = at.clone();
        done["text"] = json!(text);
        done["logprobs"] = json!([]);
        self.push("response.output_text.done", done);
        let part_value = json!({"type": "output_text", "text": text, "annotations": []});
        let mut part = at;
        part["part"] = part_value.clone();
        self.push("response.content_part.done", part);
        let item = json!({"type": "message", "id": id, "role": "assistant", "status": "completed",
            "content": [part_value]});
        self.item_done(index, item);
        self
    }

    /// Function calls whose items all start before any argument streams;
    /// their argument pieces then alternate between the calls (one piece
    /// of each in turn), and the items end in order.
    pub fn parallel_calls(mut self, calls: &[Call<'_>]) -> Self {
        let first = self.output.len();
        for (n, call) in calls.iter().enumerate() {
            self.push(
                "response.output_item.added",
                json!({"output_index": first + n, "item": {"type": "function_call", "id": call.id,
                    "call_id": call.call_id, "name": call.name, "arguments": "", "status": "in_progress"}}),
            );
            // Reserve the output slot so indexes stay in step.
            self.output.push(Value::Null);
        }
        let longest = calls.iter().map(|c| c.pieces.len()).max().unwrap_or(0);
        for step in 0..longest {
            for (n, call) in calls.iter().enumerate() {
                if let Some(piece) = call.pieces.get(step) {
                    self.push(
                        "response.function_call_arguments.delta",
                        json!({"output_index": first + n, "item_id": call.id, "delta": piece}),
                    );
                }
            }
        }
        for (n, call) in calls.iter().enumerate() {
            let arguments: String = call.pieces.concat();
            self.push(
                "response.function_call_arguments.done",
                json!({"output_index": first + n, "item_id": call.id, "arguments": arguments, "name": call.name}),
            );
            let item = json!({"type": "function_call", "id": call.id, "call_id": call.call_id,
                "name": call.name, "arguments": arguments, "status": "completed"});
            self.output[first + n] = item.clone();
            self.push(
                "response.output_item.done",
                json!({"output_index": first + n, "item": item}),
            );
        }
        self
    }

    fn item_done(&mut self, index: usize, item: Value) {
        self.output.push(item.clone());
        self.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }

    /// The events so far, as JSON.
    pub fn events(&self) -> &[Value] {
        &self.events
    }

    /// Ends with `response.completed` and its usage.
    pub fn completed(mut self, usage: Usage) -> Reply {
        let usage = json!({
            "input_tokens": usage.input,
            "input_tokens_details": {"cached_tokens": usage.cached, "cache_write_tokens": usage.cache_write},
            "output_tokens": usage.output,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning},
            "total_tokens": usage.input + usage.output,
        });
        let response = self.response("completed", json!({ "usage": usage }));
        self.push("response.completed", json!({ "response": response }));
        self.reply()
    }

    /// Ends with `response.incomplete` for `reason` (`max_output_tokens`,
    /// `content_filter`).
    pub fn incomplete(mut self, reason: &str) -> Reply {
        let response = self.response(
            "incomplete",
            json!({"incomplete_details": {"reason": reason}}),
        );
        self.push("response.incomplete", json!({ "response": response }));
        self.reply()
    }

    /// Ends with `response.failed` carrying `code` and `message`.
    pub fn failed(mut self, code: &str, message: &str) -> Reply {
        let response = self.response(
            "failed",
            json!({"error": {"code": code, "message": message}}),
        );
        self.push("response.failed", json!({ "response": response }));
        self.reply()
    }

    /// Ends with an `error` event.
    pub fn error(mut self, code: &str, message: &str) -> Reply {
        self.push(
            "error",
            json!({"code": code, "message": message, "param": null}),
        );
        self.reply()
    }

    /// Ends without a final event: the connection closes mid-stream.
    pub fn cut(self) -> Reply {
        self.reply()
    }

    /// The events as an SSE reply (`event:` and `data:` lines, as OpenAI
    /// sends them).
    pub fn reply(self) -> Reply {
        Reply::typed_sse(&self.events)
    }
}

/// 429 with `Retry-After` (seconds or an HTTP date), as OpenAI answers a
/// rate-limited request.
pub fn rate_limited(retry_after: &str) -> Reply {
    Reply::status(
        429,
        r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded","param":null}}"#,
    )
    .header("retry-after", retry_after)
}

/// What the real service would refuse in a `store: false` request body:
/// a replayed reasoning item without `encrypted_content` (404 "Items are
/// not persisted when store is set to false"), a function call item id
/// not starting with `fc`, an output for a call the input never made, a
/// call without an output, or a tool without `parameters`.
///
/// # Errors
/// The first problem found, in words.
pub fn check_request(body: &Value) -> Result<(), String> {
    if body["stream"] != true || body["store"] != false {
        return Err(format!(
            "expected stream: true and store: false, got stream {} and store {}",
            body["stream"], body["store"]
        ));
    }
    let Some(items) = body["input"].as_array() else {
        return Err("input is not an array".into());
    };
    let mut calls = Vec::new();
    let mut outputs = Vec::new();
    for item in items {
        match item["type"].as_str() {
            Some("reasoning") if item["encrypted_content"].as_str().is_none_or(str::is_empty) => {
                return Err(format!(
                    "Item with id '{}' not found. Items are not persisted when `store` is set to false.",
                    item["id"].as_str().unwrap_or("")
                ));
            }
            Some("function_call") => {
                if let Some(id) = item.get("id")
                    && !id.as_str().is_some_and(|s| s.starts_with("fc"))
                {
                    return Err(format!(
                        "Invalid function call item id {id}: expected an id starting with 'fc'"
                    ));
                }
                calls.push(item["call_id"].as_str().unwrap_or("").to_string());
            }
            Some("function_call_output") => {
                let id = item["call_id"].as_str().unwrap_or("").to_string();
                if !calls.contains(&id) {
                    return Err(format!(
                        "No tool call found for function call output with call_id {id}."
                    ));
                }
                outputs.push(id);
            }
            _ => {}
        }
    }
    if let Some(open) = calls.iter().find(|c| !outputs.contains(c)) {
        return Err(format!("No tool output found for function call {open}."));
    }
    for tool in body["tools"].as_array().into_iter().flatten() {
        if tool["type"] != "function" || !tool["parameters"].is_object() {
            return Err(format!("Invalid tool: {tool}"));
        }
    }
    Ok(())
}
