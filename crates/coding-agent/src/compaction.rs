//! Compaction: when the conversation nears the context window, the older
//! part is summarised by the model and replaced by the summary; the most
//! recent part is kept as it is.
//!
//! Settings: `compaction.enabled` (default true), `compaction.reserveTokens`
//! (16384: room left for the answer), `compaction.keepRecentTokens` (20000:
//! how much recent conversation survives verbatim). The window comes from
//! the model (`contextWindow`) or is set by the program.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_ai::{
    ContentBlock, Context, Message, Model, ModelClient, StopReason, StreamOptions, UserContent,
};
use agent_core::{
    CancellationToken, CompactedContext, CompactionError, CompactionReason, ContextCompactor,
};
use agent_tool::{PathAccess, ToolLookup};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use agent_sessions::{COMPACTION_SUMMARY_INTRO, COMPACTION_SUMMARY_OUTRO, SessionManager};

/// Compaction settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSettings {
    /// Compact automatically.
    pub enabled: bool,
    /// Tokens kept free for the model's answer.
    pub reserve_tokens: u64,
    /// Recent tokens kept verbatim.
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

impl CompactionSettings {
    /// `compaction.*` from the settings, defaults where absent.
    pub fn from_settings(settings: &crate::Settings) -> Self {
        let defaults = Self::default();
        let given = &settings.known().compaction;
        CompactionSettings {
            enabled: given.enabled.unwrap_or(defaults.enabled),
            reserve_tokens: given.reserve_tokens.unwrap_or(defaults.reserve_tokens),
            keep_recent_tokens: given
                .keep_recent_tokens
                .map_or(defaults.keep_recent_tokens, |n| n.max(1)),
        }
    }
}

/// A rough token count: four characters a token (what the summariser and
/// the cut point need, not billing).
pub fn estimate_tokens(message: &Message) -> u64 {
    let chars: usize = match message {
        Message::User(u) => match &u.content {
            UserContent::Text(t) => t.len(),
            UserContent::Blocks(b) => b.iter().map(block_chars).sum(),
        },
        Message::Assistant(a) => a.content.iter().map(block_chars).sum(),
        Message::ToolResult(r) => r.content.iter().map(block_chars).sum(),
    };
    (chars as u64).div_ceil(4)
}

fn block_chars(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text(t) => t.text.len(),
        ContentBlock::Thinking(t) => t.thinking.len(),
        ContentBlock::ToolCall(c) => c.name.len() + c.arguments.to_string().len(),
        // An image costs about as much as a page of text.
        ContentBlock::Image(_) => 4800,
    }
}

/// The context size: the last response's reported usage plus an estimate
/// of what came after it.
pub fn context_tokens(messages: &[Message]) -> u64 {
    let last = messages.iter().rposition(|m| {
        matches!(m, Message::Assistant(a) if a.stop_reason != StopReason::Error && a.usage.input + a.usage.output + a.usage.cache_read > 0)
    });
    match last {
        Some(i) => {
            let Message::Assistant(a) = &messages[i] else {
                unreachable!("an assistant index")
            };
            let u = &a.usage;
            let reported = u.input + u.output + u.cache_read + u.cache_write;
            reported + messages[i + 1..].iter().map(estimate_tokens).sum::<u64>()
        }
        None => messages.iter().map(estimate_tokens).sum(),
    }
}

/// Where to cut: the index of the first kept message, so that about
/// `keep_recent` tokens stay, never separating a tool call from its results
/// (a cut is made only before a user or an assistant message). `None` when
/// nothing older would remain to summarise.
pub fn cut_point(messages: &[Message], keep_recent: u64) -> Option<usize> {
    let mut kept = 0u64;
    let mut cut = messages.len();
    for (i, message) in messages.iter().enumerate().rev() {
        kept += estimate_tokens(message);
        cut = i;
        if kept >= keep_recent {
            break;
        }
    }
    // Move back to a boundary a turn can start at.
    while cut > 0 && matches!(messages[cut], Message::ToolResult(_)) {
        cut -= 1;
    }
    (cut > 0).then_some(cut)
}

/// Files the older part read and changed (from tool calls), for the
/// summary and the compaction entry's `details`: the path arguments each
/// tool declares (see [`agent_tool::PathArgument`]), as the model wrote
/// them. An argument left out (a search of the working directory) names
/// no file.
fn file_activity(messages: &[Message], tools: &ToolLookup) -> (Vec<String>, Vec<String>) {
    let mut read = Vec::new();
    let mut modified = Vec::new();
    for message in messages {
        let Message::Assistant(a) = message else {
            continue;
        };
        for call in a.tool_calls() {
            let Some(definition) = tools(&call.name) else {
                continue;
            };
            for argument in definition.path_arguments() {
                let Some(path) = call.arguments.get(&argument.name).and_then(Value::as_str) else {
                    continue;
                };
                let list = match argument.access {
                    PathAccess::Write => &mut modified,
                    _ => &mut read,
                };
                if !list.iter().any(|p| p == path) {
                    list.push(path.to_string());
                }
            }
        }
    }
    read.retain(|p| !modified.contains(p));
    (read, modified)
}

/// The older conversation as text for the summariser.
/// Skill blocks (`/skill:name` messages) kept verbatim through compaction.
const MAX_KEPT_SKILL_BYTES: usize = 1024 * 1024;

/// The skill blocks the summarized messages carry, each once, verbatim, up
/// to [`MAX_KEPT_SKILL_BYTES`] in all (later ones beyond that are dropped
/// with a warning): a summary would paraphrase instructions the user asked
/// to be followed.
fn skill_blocks(messages: &[Message]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut bytes = 0;
    for message in messages {
        let Message::User(u) = message else { continue };
        let text = u.text();
        let Some(block) = agent_skills::skill_block_of(&text) else {
            continue;
        };
        if out.iter().any(|b| b == block) {
            continue;
        }
        if bytes + block.len() > MAX_KEPT_SKILL_BYTES {
            tracing::warn!("a skill block is left to the summary: kept skills exceed 1 MiB");
            continue;
        }
        bytes += block.len();
        out.push(block.to_string());
    }
    out
}

fn transcript(messages: &[Message]) -> String {
    let clip = |s: &str, n: usize| {
        if s.len() <= n {
            s.to_string()
        } else {
            let mut end = n;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}... [{} more characters]", &s[..end], s.len() - end)
        }
    };
    let mut out = String::new();
    for message in messages {
        match message {
            Message::User(u) => out.push_str(&format!("[User]\n{}\n\n", u.text())),
            Message::Assistant(a) => {
                let text = a.text();
                if !text.is_empty() {
                    out.push_str(&format!("[Assistant]\n{text}\n\n"));
                }
                for call in a.tool_calls() {
                    out.push_str(&format!(
                        "[Tool call {}] {}\n\n",
                        call.name,
                        clip(&call.arguments.to_string(), 2000)
                    ));
                }
            }
            Message::ToolResult(r) => {
                let label = if r.is_error {
                    "Tool error"
                } else {
                    "Tool result"
                };
                out.push_str(&format!(
                    "[{label} {}]\n{}\n\n",
                    r.tool_name,
                    clip(&r.text(), 2000)
                ));
            }
        }
    }
    out
}

const SUMMARY_SYSTEM_PROMPT: &str = "You condense a coding agent's conversation so the work can go on \
with only your summary and the most recent messages. Be exact about names, paths, commands and \
decisions; leave out pleasantries. Do not call tools.";

const SUMMARY_REQUEST: &str = "Summarise the conversation above for the agent that continues it. \
Use these sections, in this order, as Markdown headings:\n\
## Goal\nWhat the user wants, in their terms.\n\
## Constraints and preferences\nRequirements, conventions, things to avoid.\n\
## Progress\nDone, in progress, blocked.\n\
## Key decisions\nChoices made and why.\n\
## Next steps\nWhat to do next, in order.\n\
## Critical context\nErrors, values, snippets the next steps need.";

/// A summary for `older`, from the model.
///
/// # Errors
/// The model's error, or an empty answer.
pub async fn summarize(
    client: &dyn ModelClient,
    model: &Model,
    older: &[Message],
    instructions: Option<&str>,
    cancel: CancellationToken,
) -> Result<String, CompactionError> {
    let mut request = format!(
        "<conversation>\n{}</conversation>\n\n{SUMMARY_REQUEST}",
        transcript(older)
    );
    if let Some(extra) = instructions.filter(|s| !s.trim().is_empty()) {
        request.push_str(&format!("\n\nAlso: {extra}"));
    }
    let context = Context {
        system_prompt: Some(SUMMARY_SYSTEM_PROMPT.to_string()),
        messages: vec![Message::user(request)],
        tools: Vec::new(),
    };
    let options = StreamOptions {
        cancel,
        ..Default::default()
    };
    let answer = agent_ai::complete(client, model, &context, options).await;
    if matches!(answer.stop_reason, StopReason::Error | StopReason::Aborted) {
        return Err(CompactionError::Summary(
            answer
                .error_message
                .unwrap_or_else(|| "the summary request failed".to_string()),
        ));
    }
    let text = answer.text();
    if text.trim().is_empty() {
        return Err(CompactionError::Summary(
            "the model returned an empty summary".into(),
        ));
    }
    Ok(text)
}

/// The outcome of one compaction.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionResult {
    /// The summary text (with the file lists appended).
    pub summary: String,
    /// The session entry the kept part starts at, when recorded.
    pub first_kept_entry_id: Option<String>,
    /// Context size before, in tokens.
    pub tokens_before: u64,
    /// `{readFiles, modifiedFiles}`.
    pub details: Value,
    /// The new transcript: the summary message, then the kept messages.
    pub messages: Vec<Message>,
}

impl CompactionResult {
    /// `{summary, firstKeptEntryId, tokensBefore, details}`, as events and
    /// RPC responses show it.
    pub fn to_json(&self) -> Value {
        json!({
            "summary": self.summary,
            "firstKeptEntryId": self.first_kept_entry_id,
            "tokensBefore": self.tokens_before,
            "details": self.details,
        })
    }
}

/// Compacts the conversation of one session (the session's
/// [`ContextCompactor`]; also run by `/compact` and RPC `compact`).
pub struct SessionCompactor {
    client: Mutex<Arc<dyn ModelClient>>,
    model: Mutex<Model>,
    settings: CompactionSettings,
    /// The window when it is not the model's (`--context-window`).
    context_window: Option<u64>,
    auto: AtomicBool,
    running: AtomicBool,
    store: Arc<Mutex<Option<Arc<Mutex<SessionManager>>>>>,
    tools: ToolLookup,
}

impl std::fmt::Debug for SessionCompactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCompactor")
            .field("settings", &self.settings)
            .field("context_window", &self.context_window())
            .finish_non_exhaustive()
    }
}

impl SessionCompactor {
    pub(crate) fn new(
        client: Arc<dyn ModelClient>,
        model: Model,
        settings: CompactionSettings,
        context_window: Option<u64>,
        store: Arc<Mutex<Option<Arc<Mutex<SessionManager>>>>>,
        tools: ToolLookup,
    ) -> Self {
        SessionCompactor {
            tools,
            client: Mutex::new(client),
            model: Mutex::new(model),
            auto: AtomicBool::new(settings.enabled),
            settings,
            context_window,
            running: AtomicBool::new(false),
            store,
        }
    }

    /// Whether automatic compaction is on.
    pub fn auto_enabled(&self) -> bool {
        self.auto.load(Ordering::Relaxed)
    }

    /// Turns automatic compaction on or off.
    pub fn set_auto(&self, on: bool) {
        self.auto.store(on, Ordering::Relaxed);
    }

    /// Whether a compaction is running.
    pub fn is_compacting(&self) -> bool {
        self.running.load(Ordering::Relaxed)
    }

    pub(crate) fn set_model(&self, model: Model, client: Option<Arc<dyn ModelClient>>) {
        *self.model.lock().unwrap_or_else(|p| p.into_inner()) = model;
        if let Some(client) = client {
            *self.client.lock().unwrap_or_else(|p| p.into_inner()) = client;
        }
    }

    /// The window in tokens (0: unknown, no automatic compaction): the
    /// current model's, unless the session was given one.
    pub fn context_window(&self) -> u64 {
        self.context_window.unwrap_or_else(|| {
            self.model
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .context_window
        })
    }

    /// Summarises the older part of `messages`, records a compaction entry
    /// in the session file and returns the new transcript.
    ///
    /// # Errors
    /// Nothing old enough to summarise, or the model failed.
    pub async fn run(
        &self,
        messages: Vec<Message>,
        instructions: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<CompactionResult, CompactionError> {
        let cut = cut_point(&messages, self.settings.keep_recent_tokens).ok_or_else(|| {
            CompactionError::NothingToCompact(
                "the conversation is shorter than compaction.keepRecentTokens".into(),
            )
        })?;
        self.running.store(true, Ordering::Relaxed);
        let model = self.model.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let client = self
            .client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let tokens_before = context_tokens(&messages);
        let summary = summarize(
            client.as_ref(),
            &model,
            &messages[..cut],
            instructions,
            cancel,
        )
        .await;
        self.running.store(false, Ordering::Relaxed);
        let mut summary = summary?;
        let (read, modified) = file_activity(&messages[..cut], &self.tools);
        if !read.is_empty() {
            summary.push_str(&format!(
                "\n\n<read-files>\n{}\n</read-files>",
                read.join("\n")
            ));
        }
        if !modified.is_empty() {
            summary.push_str(&format!(
                "\n\n<modified-files>\n{}\n</modified-files>",
                modified.join("\n")
            ));
        }
        let skills = skill_blocks(&messages[..cut]);
        if !skills.is_empty() {
            summary.push_str(&format!(
                "\n\n<loaded-skills>\n{}\n</loaded-skills>",
                skills.join("\n\n")
            ));
        }
        let details = json!({"readFiles": read, "modifiedFiles": modified});
        let kept = messages.len() - cut;
        let first_kept_entry_id = self.record(&summary, kept, tokens_before, &details);
        let mut out = vec![Message::user(format!(
            "{COMPACTION_SUMMARY_INTRO}{summary}{COMPACTION_SUMMARY_OUTRO}"
        ))];
        out.extend(messages.into_iter().skip(cut));
        Ok(CompactionResult {
            summary,
            first_kept_entry_id,
            tokens_before,
            details,
            messages: out,
        })
    }

    /// Appends the compaction entry; the first kept entry is found by
    /// counting `kept` messages back from the leaf.
    fn record(
        &self,
        summary: &str,
        kept: usize,
        tokens_before: u64,
        details: &Value,
    ) -> Option<String> {
        let store = self
            .store
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()?;
        let mut manager = store.lock().unwrap_or_else(|p| p.into_inner());
        let ids = manager.context().entry_ids;
        let start = ids.len().checked_sub(kept)?;
        let first = ids[start..].iter().flatten().next()?.clone();
        match manager.append_compaction(summary, &first, tokens_before, Some(details.clone())) {
            Ok(_) => Some(first),
            Err(e) => {
                tracing::warn!(error = %e, "cannot record the compaction");
                Some(first)
            }
        }
    }
}

impl ContextCompactor for SessionCompactor {
    fn needs_compaction(&self, messages: &[Message]) -> bool {
        self.auto_enabled()
            && self.context_window() > 0
            && context_tokens(messages)
                > self
                    .context_window()
                    .saturating_sub(self.settings.reserve_tokens)
    }

    fn is_overflow(&self, failed: &agent_ai::AssistantMessage) -> bool {
        self.auto_enabled()
            && failed
                .error_message
                .as_deref()
                .is_some_and(agent_core::is_context_overflow_message)
    }

    fn compact(
        &self,
        messages: Vec<Message>,
        _reason: CompactionReason,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<CompactedContext, CompactionError>> {
        // 'static: the work runs on clones, not on `self`.
        let this = SessionCompactor {
            client: Mutex::new(
                self.client
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
            ),
            model: Mutex::new(self.model.lock().unwrap_or_else(|p| p.into_inner()).clone()),
            settings: self.settings,
            context_window: self.context_window,
            auto: AtomicBool::new(true),
            running: AtomicBool::new(false),
            store: self.store.clone(),
            tools: self.tools.clone(),
        };
        async move {
            let result = this.run(messages, None, cancel).await?;
            Ok(CompactedContext {
                record: result.to_json(),
                messages: result.messages,
            })
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_ai::{AssistantMessage, ToolCall, ToolResultMessage};

    fn assistant_call(id: &str) -> Message {
        let mut a = AssistantMessage::empty("p", "m");
        a.content = vec![ContentBlock::ToolCall(ToolCall::new(
            id,
            "read",
            json!({"path": "a.rs"}),
        ))];
        Message::Assistant(a)
    }

    fn result(id: &str, text: &str) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text(text)],
            details: Value::Null,
            usage: None,
            added_tool_names: Vec::new(),
            is_error: false,
            timestamp: 0,
        })
    }

    #[test]
    fn skill_blocks_are_kept_verbatim_once() {
        let block = "<skill name=\"lint\" location=\"/s/lint/SKILL.md\">\nReferences are relative to /s/lint.\n\nRun it.\n</skill>";
        let messages = vec![
            Message::user(format!("{block}\n\nsrc/")),
            Message::user("plain"),
            Message::user(block),
        ];
        assert_eq!(skill_blocks(&messages), vec![block.to_string()]);
    }

    #[test]
    fn never_cuts_between_a_call_and_its_result() {
        let big = "x".repeat(4000);
        let messages = vec![
            Message::user("start"),
            assistant_call("c1"),
            result("c1", &big),
            assistant_call("c2"),
            result("c2", &big),
        ];
        // Keeping ~1000 tokens would start at the last result: moved back to its call.
        assert_eq!(cut_point(&messages, 1000), Some(3));
        assert!(cut_point(&messages, 1_000_000).is_none());
        // What counts as read comes from the tool's declaration, not its name.
        let tools: ToolLookup = Arc::new(|name: &str| {
            (name == "read").then(|| {
                agent_tool::tool("read")
                    .path_argument(agent_tool::PathArgument::read("path"))
                    .execute(|_: Value, _| async { Ok(agent_core::AgentToolResult::text("")) })
            })
        });
        let (read, modified) = file_activity(&messages[..3], &tools);
        assert_eq!((read, modified), (vec!["a.rs".to_string()], vec![]));
        let nothing: ToolLookup = Arc::new(|_: &str| None);
        let (read, _) = file_activity(&messages[..3], &nothing);
        assert!(read.is_empty());
    }
}
