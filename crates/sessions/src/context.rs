//! From the path root → leaf to the messages the model sees.

use std::collections::{HashMap, HashSet};

use agent_ai::{ContentBlock, Message, ToolResultMessage, UserContent, UserMessage};
use serde_json::Value;

use crate::entry::{EntryKind, SessionEntry, parse_iso_millis};

/// What a session's current branch amounts to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionContext {
    /// The messages for the model, in order.
    pub messages: Vec<Message>,
    /// For each message, the entry it comes from (`None` for the aborted
    /// results added for tool calls that never got one).
    pub entry_ids: Vec<Option<String>>,
    /// The last model on the path: (provider, model id).
    pub model: Option<(String, String)>,
    /// The last thinking level on the path (`off` when none).
    pub thinking_level: String,
}

/// Opens the summary message that replaces compacted history.
pub const COMPACTION_SUMMARY_INTRO: &str =
    "Earlier parts of this conversation were condensed into the summary below.\n\n<summary>\n";
/// Closes it.
pub const COMPACTION_SUMMARY_OUTRO: &str = "\n</summary>";
/// Opens the summary of a branch the conversation came back from.
pub const BRANCH_SUMMARY_INTRO: &str = "This conversation returned from another branch; what happened there is summarised below.\n\n<summary>\n";
/// Closes it.
pub const BRANCH_SUMMARY_OUTRO: &str = "</summary>";
/// The text of a result added for a tool call whose run was cut short.
pub const ABORTED_TOOL_RESULT: &str =
    "Tool execution was aborted: the session ended before this call finished.";

fn user_text(text: String, timestamp: i64) -> Message {
    Message::User(UserMessage {
        content: UserContent::Blocks(vec![ContentBlock::text(text)]),
        timestamp,
    })
}

/// A stored message kept as JSON (any of Pi's roles; see
/// [`EntryKind::OtherMessage`](crate::EntryKind::OtherMessage)) as a message
/// for the model: Pi's own roles become user text, and a user, assistant
/// or tool result message is read for what agent-ai can use of it.
pub fn message_from_json(message: &Value) -> Option<Message> {
    let timestamp = message
        .get("timestamp")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    match message.get("role").and_then(Value::as_str)? {
        "user" | "assistant" | "toolResult" => {
            match <Message as serde::Deserialize>::deserialize(message) {
                Ok(m) => Some(m),
                Err(e) => {
                    tracing::warn!(error = %e, "a stored message does not parse; left out");
                    None
                }
            }
        }
        "bashExecution" => {
            if message.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                return None;
            }
            Some(user_text(bash_execution_text(message), timestamp))
        }
        "custom" => content_message(message.get("content")?, timestamp),
        "branchSummary" => Some(user_text(
            format!(
                "{BRANCH_SUMMARY_INTRO}{}{BRANCH_SUMMARY_OUTRO}",
                message.get("summary")?.as_str()?
            ),
            timestamp,
        )),
        "compactionSummary" => Some(user_text(
            format!(
                "{COMPACTION_SUMMARY_INTRO}{}{COMPACTION_SUMMARY_OUTRO}",
                message.get("summary")?.as_str()?
            ),
            timestamp,
        )),
        other => {
            tracing::warn!(
                role = other,
                "a stored message of an unknown role; left out"
            );
            None
        }
    }
}

fn content_message(content: &Value, timestamp: i64) -> Option<Message> {
    let content = <UserContent as serde::Deserialize>::deserialize(content).ok()?;
    Some(Message::User(UserMessage { content, timestamp }))
}

/// How a command the user ran (not the model) reads in the context.
pub fn bash_execution_text(message: &Value) -> String {
    let command = message.get("command").and_then(Value::as_str).unwrap_or("");
    let output = message.get("output").and_then(Value::as_str).unwrap_or("");
    let mut text = format!("The user ran `{command}`\n");
    if output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{output}\n```"));
    }
    if message.get("cancelled").and_then(Value::as_bool) == Some(true) {
        text.push_str("\n\n(the command was cancelled)");
    } else if let Some(code) = message
        .get("exitCode")
        .and_then(Value::as_i64)
        .filter(|c| *c != 0)
    {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if message.get("truncated").and_then(Value::as_bool) == Some(true)
        && let Some(path) = message.get("fullOutputPath").and_then(Value::as_str)
    {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

/// The messages of `path` (root first), with compaction applied and
/// unanswered tool calls given aborted results.
pub fn build_context(path: &[&SessionEntry]) -> SessionContext {
    let mut ctx = SessionContext {
        thinking_level: "off".into(),
        ..Default::default()
    };
    let mut compaction = None;
    for (i, entry) in path.iter().enumerate() {
        match &entry.kind {
            EntryKind::ThinkingLevelChange { thinking_level } => {
                ctx.thinking_level = thinking_level.clone()
            }
            EntryKind::ModelChange { provider, model_id } => {
                ctx.model = Some((provider.clone(), model_id.clone()))
            }
            EntryKind::Message {
                message: Message::Assistant(a),
            } => ctx.model = Some((a.provider.clone(), a.model.clone())),
            EntryKind::OtherMessage { message }
                if message.get("role").and_then(Value::as_str) == Some("assistant") =>
            {
                let field = |k: &str| {
                    message
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                ctx.model = Some((field("provider"), field("model")));
            }
            EntryKind::Compaction { .. } => compaction = Some(i),
            _ => {}
        }
    }
    let push = |ctx: &mut SessionContext, entry: &SessionEntry| {
        let message = match &entry.kind {
            EntryKind::Message { message } => Some(message.clone()),
            EntryKind::OtherMessage { message } => message_from_json(message),
            EntryKind::CustomMessage { content, .. } => {
                content_message(content, parse_iso_millis(&entry.timestamp))
            }
            EntryKind::BranchSummary { summary, .. } if !summary.is_empty() => Some(user_text(
                format!("{BRANCH_SUMMARY_INTRO}{summary}{BRANCH_SUMMARY_OUTRO}"),
                parse_iso_millis(&entry.timestamp),
            )),
            EntryKind::Compaction { summary, .. } => Some(user_text(
                format!("{COMPACTION_SUMMARY_INTRO}{summary}{COMPACTION_SUMMARY_OUTRO}"),
                parse_iso_millis(&entry.timestamp),
            )),
            _ => None,
        };
        // A failed response with nothing in it (an overflow, a lost
        // connection) says nothing the model needs.
        let message = message.filter(|m| {
            !matches!(m, Message::Assistant(a)
                if matches!(a.stop_reason, agent_ai::StopReason::Error | agent_ai::StopReason::Aborted) && a.content.is_empty())
        });
        if let Some(message) = message {
            ctx.messages.push(message);
            ctx.entry_ids.push(Some(entry.id.clone()));
        }
    };
    match compaction {
        Some(at) => {
            let EntryKind::Compaction {
                first_kept_entry_id,
                ..
            } = &path[at].kind
            else {
                unreachable!("index of a compaction entry")
            };
            push(&mut ctx, path[at]);
            let kept_from = path[..at].iter().position(|e| &e.id == first_kept_entry_id);
            if let Some(from) = kept_from {
                for entry in &path[from..at] {
                    push(&mut ctx, entry);
                }
            }
            for entry in &path[at + 1..] {
                push(&mut ctx, entry);
            }
        }
        None => {
            for entry in path {
                push(&mut ctx, entry);
            }
        }
    }
    repair_tool_calls(&mut ctx);
    ctx
}

/// Every tool call gets a result right after its assistant message (an
/// aborted one when the run was killed), and results without a call go: the
/// providers refuse anything else.
fn repair_tool_calls(ctx: &mut SessionContext) {
    let mut messages = Vec::with_capacity(ctx.messages.len());
    let mut ids = Vec::with_capacity(ctx.entry_ids.len());
    let old_messages = std::mem::take(&mut ctx.messages);
    let old_ids = std::mem::take(&mut ctx.entry_ids);
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let flush = |pending: &mut Vec<(String, String)>,
                 answered: &mut HashSet<String>,
                 messages: &mut Vec<Message>,
                 ids: &mut Vec<Option<String>>| {
        for (id, name) in pending.drain(..) {
            if !answered.contains(&id) {
                messages.push(Message::ToolResult(ToolResultMessage {
                    tool_call_id: id,
                    tool_name: name,
                    content: vec![ContentBlock::text(ABORTED_TOOL_RESULT)],
                    details: Value::Null,
                    usage: None,
                    added_tool_names: Vec::new(),
                    is_error: true,
                    timestamp: agent_ai::now_millis(),
                }));
                ids.push(None);
            }
        }
        answered.clear();
    };
    for (message, id) in old_messages.into_iter().zip(old_ids) {
        match &message {
            Message::ToolResult(r) => {
                let expected: HashMap<&str, ()> =
                    pending.iter().map(|(i, _)| (i.as_str(), ())).collect();
                if !expected.contains_key(r.tool_call_id.as_str())
                    || answered.contains(&r.tool_call_id)
                {
                    tracing::warn!(call = %r.tool_call_id, "a tool result without its call; left out");
                    continue;
                }
                answered.insert(r.tool_call_id.clone());
            }
            Message::Assistant(a) => {
                flush(&mut pending, &mut answered, &mut messages, &mut ids);
                pending = a
                    .tool_calls()
                    .map(|c| (c.id.clone(), c.name.clone()))
                    .collect();
            }
            _ => flush(&mut pending, &mut answered, &mut messages, &mut ids),
        }
        messages.push(message);
        ids.push(id);
    }
    flush(&mut pending, &mut answered, &mut messages, &mut ids);
    ctx.messages = messages;
    ctx.entry_ids = ids;
}
