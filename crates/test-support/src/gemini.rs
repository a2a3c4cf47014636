//! A fake Gemini API: scripted `streamGenerateContent?alt=sse` answers in
//! the shapes Google streams (each `data:` line a whole
//! `GenerateContentResponse`), served by [`crate::http_server`], plus the
//! checks the real service makes on a request ([`check_request`]).
//!
//! The chunk shapes are refereed by the `google-genai` Python SDK in the
//! integration tests (`tests/tests/it/gemini_sdk.rs`).
//!
//! ```
//! use test_support::gemini::{GeminiScript, Usage};
//! let reply = GeminiScript::new().text(&["Hel", "lo"]).stop(Usage::default());
//! assert_eq!(reply.status, 200);
//! ```

use serde_json::{Value, json};

use crate::http_server::Reply;

/// Token counts for `usageMetadata`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// `promptTokenCount` (cached tokens included, as Google counts).
    pub prompt: u64,
    /// `cachedContentTokenCount`.
    pub cached: u64,
    /// `candidatesTokenCount`.
    pub candidates: u64,
    /// `thoughtsTokenCount`.
    pub thoughts: u64,
}

/// The chunks of one streamed response.
#[derive(Clone, Debug, Default)]
pub struct GeminiScript {
    chunks: Vec<Value>,
}

impl GeminiScript {
    /// A response with no chunk yet.
    pub fn new() -> Self {
        GeminiScript::default()
    }

    fn parts(mut self, parts: Vec<Value>) -> Self {
        self.chunks.push(json!({
            "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
            "modelVersion": "gemini-fake",
            "responseId": "resp-1",
        }));
        self
    }

    /// Thought parts, one chunk each; the last carries `signature`.
    pub fn thinking(mut self, pieces: &[&str], signature: &str) -> Self {
        for (n, piece) in pieces.iter().enumerate() {
            let mut part = json!({"text": piece, "thought": true});
            if n + 1 == pieces.len() {
                part["thoughtSignature"] = json!(signature);
            }
            self = self.parts(vec![part]);
        }
        self
    }

    /// Text parts, one chunk each.
    pub fn text(mut self, pieces: &[&str]) -> Self {
        for piece in pieces {
            self = self.parts(vec![json!({ "text": piece })]);
        }
        self
    }

    /// Function calls, all in one chunk as Gemini sends parallel calls:
    /// `(name, args, id, thoughtSignature)`.
    pub fn calls(self, calls: &[(&str, Value, Option<&str>, Option<&str>)]) -> Self {
        let parts = calls
            .iter()
            .map(|(name, args, id, sig)| {
                let mut call = json!({"name": name, "args": args});
                if let Some(id) = id {
                    call["id"] = json!(id);
                }
                let mut part = json!({ "functionCall": call });
                if let Some(sig) = sig {
                    part["thoughtSignature"] = json!(sig);
                }
                part
            })
            .collect();
        self.parts(parts)
    }

    fn usage(u: Usage) -> Value {
        json!({
            "promptTokenCount": u.prompt,
            "cachedContentTokenCount": u.cached,
            "candidatesTokenCount": u.candidates,
            "thoughtsTokenCount": u.thoughts,
            "totalTokenCount": u.prompt + u.candidates + u.thoughts,
        })
    }

    /// Ends with a chunk carrying `finishReason` (`STOP`, `MAX_TOKENS`,
    /// `SAFETY`, `MALFORMED_FUNCTION_CALL`, ...) and the usage.
    pub fn finish(mut self, reason: &str, usage: Usage) -> Reply {
        let mut candidate =
            json!({"content": {"role": "model", "parts": []}, "finishReason": reason, "index": 0});
        if reason == "SAFETY" {
            candidate["safetyRatings"] = json!([{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}]);
        }
        if reason == "MALFORMED_FUNCTION_CALL" {
            candidate["finishMessage"] =
                json!("Malformed function call: print(default_api.read(path=))");
        }
        self.chunks.push(json!({
            "candidates": [candidate],
            "usageMetadata": Self::usage(usage),
            "modelVersion": "gemini-fake",
            "responseId": "resp-1",
        }));
        self.reply()
    }

    /// Ends normally (`finishReason: STOP`).
    pub fn stop(self, usage: Usage) -> Reply {
        self.finish("STOP", usage)
    }

    /// Ends without a finishing chunk: the connection closes mid-stream.
    pub fn cut(self) -> Reply {
        self.reply()
    }

    /// The chunks so far, as JSON.
    pub fn chunks(&self) -> &[Value] {
        &self.chunks
    }

    /// The chunks as an SSE reply (`data:` lines only, as Google sends them).
    pub fn reply(self) -> Reply {
        let lines: Vec<String> = self.chunks.iter().map(|c| format!("data: {c}")).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        Reply::sse(&refs)
    }
}

/// A prompt blocked before any candidate: `promptFeedback.blockReason`.
pub fn prompt_blocked(reason: &str) -> Reply {
    let chunk = json!({
        "promptFeedback": {"blockReason": reason, "safetyRatings": []},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
        "modelVersion": "gemini-fake",
    });
    Reply::sse(&[&format!("data: {chunk}")])
}

/// 429 `RESOURCE_EXHAUSTED` with a `RetryInfo` asking for `retry_delay`
/// (`"12s"`), as Google answers a rate-limited request (no `Retry-After`).
pub fn rate_limited(retry_delay: &str) -> Reply {
    let body = json!({"error": {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay},
        ],
    }});
    Reply::status(429, &body.to_string())
}

/// A Google error body with `code`, `status` and `message`.
pub fn error(code: u16, status: &str, message: &str) -> Reply {
    let body = json!({"error": {"code": code, "message": message, "status": status}});
    Reply::status(code, &body.to_string())
}

/// What the real service would refuse in a request body: no `contents`, a
/// role other than `user`/`model`, a part with no data or with two kinds
/// of data, a `functionResponse` that answers no call of the model turn
/// before it (by name, and by id when the call had one), a model turn's
/// calls left unanswered by the next turn, and a tool with both
/// `parameters` and `parametersJsonSchema`.
///
/// # Errors
/// The first problem found, in words.
pub fn check_request(body: &Value) -> Result<(), String> {
    let Some(contents) = body["contents"].as_array().filter(|c| !c.is_empty()) else {
        return Err("* GenerateContentRequest.contents: contents is not specified".into());
    };
    let mut open: Vec<(String, Option<String>)> = Vec::new();
    for (n, content) in contents.iter().enumerate() {
        let role = content["role"].as_str().unwrap_or("");
        if role != "user" && role != "model" {
            return Err(format!(
                "contents[{n}]: Please use a valid role: user, model."
            ));
        }
        let Some(parts) = content["parts"].as_array().filter(|p| !p.is_empty()) else {
            return Err(format!("contents[{n}].parts must not be empty"));
        };
        let mut answered = false;
        for (p, part) in parts.iter().enumerate() {
            let kinds = ["text", "inlineData", "functionCall", "functionResponse"]
                .iter()
                .filter(|k| part.get(**k).is_some())
                .count();
            if kinds != 1 {
                return Err(format!(
                    "contents[{n}].parts[{p}]: a part holds exactly one kind of data: {part}"
                ));
            }
            if let Some(call) = part.get("functionCall") {
                open.push((
                    call["name"].as_str().unwrap_or("").to_string(),
                    call["id"].as_str().map(str::to_string),
                ));
            }
            if let Some(response) = part.get("functionResponse") {
                let name = response["name"].as_str().unwrap_or("");
                let id = response["id"].as_str();
                let Some(at) = open
                    .iter()
                    .position(|(n, i)| n == name && (i.is_none() || i.as_deref() == id))
                else {
                    return Err(format!(
                        "contents[{n}].parts[{p}]: function response {name} (id {id:?}) answers no function call"
                    ));
                };
                open.remove(at);
                answered = true;
            }
        }
        if role == "user" && !answered && !open.is_empty() {
            return Err(format!(
                "contents[{n}]: function calls {open:?} have no function response; please ensure that the number of function response parts is equal to the number of function call parts"
            ));
        }
    }
    for decl in body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
    {
        if decl.get("parameters").is_some() && decl.get("parametersJsonSchema").is_some() {
            return Err(format!(
                "tool {}: parameters and parametersJsonSchema are exclusive",
                decl["name"]
            ));
        }
    }
    Ok(())
}
