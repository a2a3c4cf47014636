//! Fitting a transcript to the model it is sent to next.
//!
//! A session may change model halfway (`/model`, `--model` on `-c`, a
//! fallback), so the transcript a provider is asked to send can hold other
//! models' answers. Those carry things only their author accepts back:
//! signed or encrypted thinking, tool-call ids in another vendor's format,
//! signatures on calls. Sent as they are, they are refused (Anthropic
//! answers 400 to another model's thinking signature or to a Responses
//! call id with a `|` in it). [`fit_transcript`] is the one pass every HTTP
//! provider runs before it builds its request; the providers then only
//! decide how each kept block is spelled on their wire.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::content::{ContentBlock, TextContent, ToolCall};
use crate::message::{AssistantMessage, Message, StopReason, ToolResultMessage};
use crate::model::Model;

/// What a synthetic result says for a call that never got one.
pub const NO_RESULT: &str = "No result provided";

/// Whether `message` was written by this very model through this API: only
/// then may its signatures, encrypted reasoning and item ids go back.
///
/// ```
/// use agent_ai::{AssistantMessage, Model, handoff::same_model};
/// let model = Model::new("anthropic", "claude-sonnet-4-5");
/// let mut msg = AssistantMessage::empty("anthropic", "claude-sonnet-4-5");
/// msg.api = Some("anthropic-messages".into());
/// assert!(same_model(&msg, &model, "anthropic-messages"));
/// assert!(!same_model(&msg, &model, "bedrock-converse-stream"));
/// ```
pub fn same_model(message: &AssistantMessage, model: &Model, api: &str) -> bool {
    message.provider == model.provider
        && message.api.as_deref() == Some(api)
        && message.model == model.id
}

/// The transcript as `target`, spoken to through `api`, may see it:
///
/// - An assistant message that failed or was cancelled (`stopReason` error
///   or aborted) is left out, and so are tool results whose call is not in
///   the transcript any more.
/// - Another model's thinking becomes plain text (empty thinking is
///   dropped); its text signatures and call signatures are removed. The
///   same model's messages pass unchanged.
/// - Tool-call ids that the target's API would refuse are rewritten (the
///   same way in the call and in its result), without two calls ever
///   sharing an id: Anthropic and Bedrock take `[A-Za-z0-9_-]`, at most 64
///   characters; Chat Completions at most 40, and only the call part of a
///   Responses `call_id|item_id`.
/// - A call left without a result gets one, an error saying
///   [`NO_RESULT`], right after the results it has.
///
/// Messages that need no change are borrowed, not copied.
///
/// ```
/// use agent_ai::{AssistantMessage, ContentBlock, Message, Model, ThinkingContent, ToolCall};
/// use agent_ai::handoff::fit_transcript;
/// let mut answer = AssistantMessage::empty("openai", "gpt-5");
/// answer.api = Some("openai-responses".into());
/// answer.content = vec![
///     ContentBlock::Thinking(ThinkingContent { thinking: "look first".into(), thinking_signature: Some("{}".into()) }),
///     ContentBlock::ToolCall(ToolCall::new("call_1|fc_1", "ls", serde_json::json!({}))),
/// ];
/// let transcript = vec![Message::user("hi"), Message::Assistant(answer)];
/// let claude = Model::new("anthropic", "claude-sonnet-4-5");
/// let fitted = fit_transcript(&transcript, &claude, "anthropic-messages");
/// let Message::Assistant(a) = fitted[1].as_ref() else { unreachable!() };
/// assert_eq!(a.content[0].as_text(), Some("look first"));
/// assert_eq!(a.tool_calls().next().unwrap().id, "call_1_fc_1");
/// let Message::ToolResult(r) = fitted[2].as_ref() else { unreachable!() };
/// assert_eq!((r.tool_call_id.as_str(), r.is_error), ("call_1_fc_1", true));
/// ```
pub fn fit_transcript<'a>(
    messages: &'a [Message],
    target: &Model,
    api: &str,
) -> Vec<Cow<'a, Message>> {
    let mut ids = IdMap::new(IdRule::for_api(api));
    let mut out: Vec<Cow<'a, Message>> = Vec::with_capacity(messages.len());
    // Calls of the last kept assistant message still waiting for a result.
    let mut open: Vec<(String, String)> = Vec::new();
    for message in messages {
        match message {
            Message::User(_) => {
                close(&mut open, &mut out);
                out.push(Cow::Borrowed(message));
            }
            Message::Assistant(a) => {
                close(&mut open, &mut out);
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    continue;
                }
                let fitted = fit_assistant(a, target, api, &mut ids);
                let calls = match &fitted {
                    Some(f) => f
                        .tool_calls()
                        .map(|c| (c.id.clone(), c.name.clone()))
                        .collect(),
                    None => a
                        .tool_calls()
                        .map(|c| (c.id.clone(), c.name.clone()))
                        .collect(),
                };
                open = calls;
                out.push(match fitted {
                    Some(f) => Cow::Owned(Message::Assistant(f)),
                    None => Cow::Borrowed(message),
                });
            }
            Message::ToolResult(r) => {
                let id = ids.get(&r.tool_call_id);
                let Some(at) = open.iter().position(|(open_id, _)| *open_id == id) else {
                    tracing::debug!(call = %r.tool_call_id, "tool result without its call left out");
                    continue;
                };
                open.remove(at);
                out.push(if id == r.tool_call_id {
                    Cow::Borrowed(message)
                } else {
                    Cow::Owned(Message::ToolResult(ToolResultMessage {
                        tool_call_id: id,
                        ..r.clone()
                    }))
                });
            }
        }
    }
    close(&mut open, &mut out);
    out
}

/// Answers every call still open with [`NO_RESULT`].
fn close(open: &mut Vec<(String, String)>, out: &mut Vec<Cow<'_, Message>>) {
    for (id, name) in open.drain(..) {
        let mut result = ToolResultMessage::new(id, name, vec![ContentBlock::text(NO_RESULT)]);
        result.is_error = true;
        out.push(Cow::Owned(Message::ToolResult(result)));
    }
}

/// The assistant message as the target may see it, or `None` when it can
/// go unchanged.
fn fit_assistant(
    a: &AssistantMessage,
    target: &Model,
    api: &str,
    ids: &mut IdMap,
) -> Option<AssistantMessage> {
    let same = same_model(a, target, api);
    // Every call gets its id now, in order, changed or not: a later call
    // may not take it.
    let new_ids: Vec<String> = a.tool_calls().map(|c| ids.assign(&c.id)).collect();
    let needs_change = a.tool_calls().zip(&new_ids).any(|(c, new)| c.id != *new)
        || a.content.iter().any(|block| match block {
            ContentBlock::Thinking(_) => !same,
            ContentBlock::Text(t) => !same && t.text_signature.is_some(),
            ContentBlock::ToolCall(c) => !same && c.thought_signature.is_some(),
            ContentBlock::Image(_) => false,
        });
    if !needs_change {
        return None;
    }
    let mut new_ids = new_ids.into_iter();
    let content = a
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Thinking(t) if !same => (!t.thinking.trim().is_empty()).then(|| {
                ContentBlock::Text(TextContent {
                    text: t.thinking.clone(),
                    text_signature: None,
                })
            }),
            ContentBlock::Text(t) if !same => Some(ContentBlock::Text(TextContent {
                text: t.text.clone(),
                text_signature: None,
            })),
            ContentBlock::ToolCall(c) => Some(ContentBlock::ToolCall(ToolCall {
                id: new_ids.next().unwrap_or_else(|| c.id.clone()),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
                thought_signature: c.thought_signature.clone().filter(|_| same),
            })),
            other => Some(other.clone()),
        })
        .collect();
    Some(AssistantMessage {
        content,
        api: a.api.clone(),
        provider: a.provider.clone(),
        model: a.model.clone(),
        usage: a.usage,
        stop_reason: a.stop_reason,
        error_message: a.error_message.clone(),
        timestamp: a.timestamp,
    })
}

/// The shape a target API requires of tool-call ids.
#[derive(Debug, Clone, Copy)]
struct IdRule {
    /// Longest id accepted.
    max_len: usize,
    /// Keep only the part before `|` (a Responses `call_id|item_id`).
    call_part_only: bool,
}

impl IdRule {
    /// The rule of `api`, `None` where any id goes (the Responses provider
    /// splits and cleans ids itself; Gemini's ids are optional).
    fn for_api(api: &str) -> Option<IdRule> {
        match api {
            "anthropic-messages" | "bedrock-converse-stream" => Some(IdRule {
                max_len: 64,
                call_part_only: false,
            }),
            "openai-completions" => Some(IdRule {
                max_len: 40,
                call_part_only: true,
            }),
            _ => None,
        }
    }

    fn accepts(&self, id: &str) -> bool {
        !id.is_empty()
            && id.len() <= self.max_len
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }

    /// `id` cleaned to the rule, possibly empty.
    fn clean(&self, id: &str) -> String {
        let id = if self.call_part_only {
            id.split('|').next().unwrap_or(id)
        } else {
            id
        };
        let cleaned: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(self.max_len)
            .collect();
        cleaned.trim_end_matches('_').to_string()
    }
}

/// Old ids to new ones, so that a call and its result agree and no two
/// calls end up with the same id.
struct IdMap {
    rule: Option<IdRule>,
    map: HashMap<String, String>,
    taken: HashSet<String>,
}

impl IdMap {
    fn new(rule: Option<IdRule>) -> Self {
        IdMap {
            rule,
            map: HashMap::new(),
            taken: HashSet::new(),
        }
    }

    /// The id a call with `id` is sent as. Each call takes a fresh one,
    /// so a server that reuses ids across turns (`call_0` every time)
    /// still gets distinct ones; later results for `id` follow this call.
    fn assign(&mut self, id: &str) -> String {
        let Some(rule) = self.rule else {
            return id.to_string();
        };
        let new = if rule.accepts(id) && !self.taken.contains(id) {
            id.to_string()
        } else {
            let mut base = rule.clean(id);
            if base.is_empty() {
                base = "call".into();
            }
            let mut candidate = base.clone();
            let mut n = 1u32;
            while self.taken.contains(&candidate) {
                n += 1;
                let suffix = format!("_{n}");
                // `base` is ASCII: any byte is a char boundary.
                let keep = rule.max_len.saturating_sub(suffix.len()).min(base.len());
                candidate = format!("{}{suffix}", &base[..keep]);
            }
            candidate
        };
        self.taken.insert(new.clone());
        self.map.insert(id.to_string(), new.clone());
        new
    }

    /// The id the result of the call `id` is sent with: that of the last
    /// call with this id.
    fn get(&self, id: &str) -> String {
        self.map.get(id).cloned().unwrap_or_else(|| id.to_string())
    }
}

#[cfg(test)]
mod tests;
