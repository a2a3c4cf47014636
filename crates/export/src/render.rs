//! One entry of the session as HTML: messages, tool cards, thinking,
//! images, summaries, and the usage line of each answer.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use agent_sessions::{EntryKind, SessionEntry};
use coding_agent::agent_ai::ContentBlock;
use coding_agent::serde_json::Value;
use coding_agent::{
    AgentToolResult, RenderContext, RenderResultOptions, StyledText, Theme, ToolRegistry,
    default_render_call, default_render_result,
};

use crate::escape::push_escaped;
use crate::markdown::push_markdown;
use crate::styled::push_styled;

/// Raster image types shown inline; anything else (SVG among them) is
/// named, not drawn.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// What every entry is drawn with.
pub(crate) struct Renderer<'a> {
    pub registry: Option<&'a ToolRegistry>,
    pub context: RenderContext,
    pub theme: Theme,
    /// Lines of a tool result shown before "show all".
    pub visible_lines: usize,
    /// Tool result entries by call id, in file order.
    pub results: HashMap<&'a str, Vec<usize>>,
    /// Each entry's parent (see [`crate::tree::Tree`]).
    pub parents: &'a [Option<usize>],
    /// Results already drawn inside a call's card: drawn once, and not
    /// again as an entry of their own.
    pub drawn: RefCell<HashSet<usize>>,
    pub entries: &'a [SessionEntry],
}

impl Renderer<'_> {
    /// Appends entry `i` (nothing for entries that show nothing).
    pub fn push_entry(&self, out: &mut String, i: usize) {
        let entry = &self.entries[i];
        match &entry.kind {
            EntryKind::Message { .. } | EntryKind::OtherMessage { .. } => {
                if let Some(message) = entry.kind.message_json() {
                    self.push_message(out, i, &message);
                }
            }
            EntryKind::ModelChange { provider, model_id } => {
                push_note(
                    out,
                    i,
                    entry,
                    "model",
                    &format!("Model: {provider}/{model_id}"),
                );
            }
            EntryKind::ThinkingLevelChange { thinking_level } => {
                push_note(
                    out,
                    i,
                    entry,
                    "model",
                    &format!("Thinking: {thinking_level}"),
                );
            }
            EntryKind::Compaction {
                summary,
                tokens_before,
                ..
            } => push_summary(
                out,
                i,
                &format!("Compacted ({tokens_before} tokens before)"),
                summary,
            ),
            EntryKind::BranchSummary { summary, .. } => {
                push_summary(out, i, "Summary of a branch left behind", summary);
            }
            EntryKind::CustomMessage {
                content,
                display: true,
                custom_type,
                ..
            } => {
                open_article(out, i, entry, "custom", custom_type);
                push_content(out, content, true);
                out.push_str("</article>\n");
            }
            _ => {}
        }
    }

    fn push_message(&self, out: &mut String, i: usize, message: &Value) {
        let entry = &self.entries[i];
        match message.get("role").and_then(Value::as_str).unwrap_or("") {
            "user" => {
                open_article(out, i, entry, "user", "You");
                if let Some(content) = message.get("content") {
                    push_content(out, content, false);
                }
                out.push_str("</article>\n");
            }
            "assistant" => self.push_assistant(out, i, message),
            // Drawn inside its call's card; one no call claimed gets a card
            // of its own.
            "toolResult" if !self.drawn.borrow().contains(&i) => {
                let name = message
                    .get("toolName")
                    .and_then(Value::as_str)
                    .unwrap_or("tool");
                self.push_card(out, name, &Value::Null, Some(message));
            }
            "bashExecution" => {
                open_article(out, i, entry, "shell", "Shell");
                let command = message.get("command").and_then(Value::as_str).unwrap_or("");
                let output = message.get("output").and_then(Value::as_str).unwrap_or("");
                out.push_str("<pre class=\"command\">$ ");
                push_escaped(out, command);
                out.push_str("</pre>");
                self.push_long_text(out, output);
                if let Some(code) = message.get("exitCode").and_then(Value::as_i64) {
                    out.push_str(&format!("<div class=\"usage\">exit code {code}</div>"));
                }
                out.push_str("</article>\n");
            }
            "custom" => {
                if message.get("display").and_then(Value::as_bool) != Some(false)
                    && let Some(content) = message.get("content")
                {
                    open_article(out, i, entry, "custom", "Extension");
                    push_content(out, content, true);
                    out.push_str("</article>\n");
                }
            }
            "branchSummary" | "compactionSummary" => {
                let summary = message.get("summary").and_then(Value::as_str).unwrap_or("");
                push_summary(out, i, "Summary", summary);
            }
            _ => {}
        }
    }

    /// The result of the call with `id` made in entry `call`: the first
    /// tool result for that id that descends from the call (a result on
    /// another branch, or one written before the call, cannot answer it)
    /// and has not been drawn yet. Marked as drawn.
    fn claim_result(&self, call: usize, id: &str) -> Option<usize> {
        /// How far up a result may sit from its call (a result follows
        /// its call's message, after at most a few other entries).
        const MAX_DISTANCE: usize = 64;
        let candidates = self.results.get(id)?;
        let mut drawn = self.drawn.borrow_mut();
        let found = candidates.iter().copied().find(|&r| {
            if r <= call || drawn.contains(&r) {
                return false;
            }
            let mut at = self.parents.get(r).copied().flatten();
            for _ in 0..MAX_DISTANCE {
                match at {
                    Some(p) if p == call => return true,
                    Some(p) => at = self.parents.get(p).copied().flatten(),
                    None => return false,
                }
            }
            false
        })?;
        drawn.insert(found);
        Some(found)
    }

    fn push_assistant(&self, out: &mut String, i: usize, message: &Value) {
        let entry = &self.entries[i];
        open_article(out, i, entry, "assistant", "Assistant");
        let blocks = message.get("content").and_then(Value::as_array);
        for block in blocks.into_iter().flatten() {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                    out.push_str("<div class=\"md\">");
                    push_markdown(out, text);
                    out.push_str("</div>");
                }
                Some("thinking") => {
                    let text = block.get("thinking").and_then(Value::as_str).unwrap_or("");
                    if !text.trim().is_empty() {
                        out.push_str("<details class=\"thinking\"><summary>Thinking</summary><div class=\"md\">");
                        push_markdown(out, text);
                        out.push_str("</div></details>");
                    }
                }
                Some("toolCall") => {
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let args = block.get("arguments").unwrap_or(&Value::Null);
                    let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                    let result = self
                        .claim_result(i, id)
                        .and_then(|r| self.entries[r].kind.message_json());
                    self.push_card(out, name, args, result.as_deref());
                }
                Some("image") => push_image(out, block),
                _ => {}
            }
        }
        if let Some(error) = message.get("errorMessage").and_then(Value::as_str) {
            out.push_str("<div class=\"error\">");
            push_escaped(out, error);
            out.push_str("</div>");
        }
        push_usage(out, message);
        out.push_str("</article>\n");
    }

    /// A tool call and its result, drawn by the tool's own renderers when
    /// the registry knows the tool (a renderer that panics falls back to
    /// the default drawing).
    fn push_card(&self, out: &mut String, name: &str, args: &Value, result: Option<&Value>) {
        let is_error = result
            .and_then(|r| r.get("isError"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let state = match (result, is_error) {
            (None, _) => "pending",
            (Some(_), true) => "error",
            (Some(_), false) => "ok",
        };
        out.push_str(&format!(
            "<details class=\"tool {state}\"><summary><pre class=\"call\">"
        ));
        let call = self
            .registry
            .and_then(|registry| {
                catch_unwind(AssertUnwindSafe(|| {
                    registry.render_call(name, args, &self.theme, &self.context)
                }))
                .ok()
            })
            .unwrap_or_else(|| default_render_call(name, args, &self.theme));
        push_styled(out, &first_lines(call, 3));
        out.push_str("</pre></summary>");
        match result {
            Some(message) => {
                let result = AgentToolResult {
                    content: message
                        .get("content")
                        .and_then(|c| {
                            coding_agent::serde_json::from_value::<Vec<ContentBlock>>(c.clone())
                                .ok()
                        })
                        .unwrap_or_default(),
                    details: message.get("details").cloned().unwrap_or(Value::Null),
                    ..Default::default()
                };
                let options = RenderResultOptions {
                    expanded: true,
                    is_partial: false,
                    is_error,
                };
                let drawn = self
                    .registry
                    .and_then(|registry| {
                        catch_unwind(AssertUnwindSafe(|| {
                            registry.render_result(
                                name,
                                &result,
                                &options,
                                &self.theme,
                                &self.context,
                            )
                        }))
                        .ok()
                    })
                    .unwrap_or_else(|| {
                        default_render_result(&result, &options, &self.theme, usize::MAX)
                    });
                self.push_long_styled(out, &drawn);
                for block in message
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if block.get("type").and_then(Value::as_str) == Some("image") {
                        push_image(out, block);
                    }
                }
            }
            None => out.push_str("<div class=\"usage\">no result recorded</div>"),
        }
        out.push_str("</details>\n");
    }

    /// Styled lines, the first `visible_lines` shown; the rest is kept in
    /// the file as a JSON string in a data block (parsed by the browser as
    /// raw text, no nodes) that the page's script inserts on request.
    fn push_long_styled(&self, out: &mut String, text: &StyledText) {
        let total = text.lines.len();
        if total <= self.visible_lines {
            out.push_str("<pre class=\"output\">");
            push_styled(out, text);
            out.push_str("</pre>");
            return;
        }
        let (head, rest) = text.lines.split_at(self.visible_lines);
        out.push_str("<pre class=\"output\">");
        push_styled(
            out,
            &StyledText {
                lines: head.to_vec(),
            },
        );
        out.push_str("</pre><script type=\"application/json\" class=\"rest\">");
        let mut html = String::from("\n");
        push_styled(
            &mut html,
            &StyledText {
                lines: rest.to_vec(),
            },
        );
        push_json_string(out, &html);
        out.push_str(&format!(
            "</script><button type=\"button\" class=\"more\">Show all {total} lines</button>"
        ));
    }

    fn push_long_text(&self, out: &mut String, text: &str) {
        self.push_long_styled(out, &StyledText::plain(text));
    }
}

/// `text` as a JSON string that is safe inside a `<script>` data block:
/// `<`, `>` and `&` are written as `\u003c`, `\u003e`, `\u0026`, so no
/// `</script>` or `<!--` can appear in it.
fn push_json_string(out: &mut String, text: &str) {
    let json = coding_agent::serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            // JavaScript before ES2019 ended strings at these.
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
}

/// At most `n` lines of `text`, with a mark when some were left out.
fn first_lines(mut text: StyledText, n: usize) -> StyledText {
    if text.lines.len() > n {
        text.lines.truncate(n);
        if let Some(last) = text.lines.last_mut() {
            *last = last.clone().push(" …", Default::default());
        }
    }
    text
}

fn open_article(out: &mut String, i: usize, entry: &SessionEntry, class: &str, who: &str) {
    out.push_str(&format!(
        "<article class=\"msg {class}\" id=\"e{i}\"><header>"
    ));
    push_escaped(out, who);
    out.push_str("<time>");
    push_escaped(out, &entry.timestamp);
    out.push_str("</time></header>");
}

fn push_note(out: &mut String, i: usize, entry: &SessionEntry, class: &str, text: &str) {
    out.push_str(&format!("<div class=\"note {class}\" id=\"e{i}\" title=\""));
    push_escaped(out, &entry.timestamp);
    out.push_str("\">");
    push_escaped(out, text);
    out.push_str("</div>\n");
}

fn push_summary(out: &mut String, i: usize, title: &str, summary: &str) {
    out.push_str(&format!("<details class=\"summary\" id=\"e{i}\"><summary>"));
    push_escaped(out, title);
    out.push_str("</summary><div class=\"md\">");
    push_markdown(out, summary);
    out.push_str("</div></details>\n");
}

/// A message's content: a string or blocks. User text is shown as typed;
/// extension text as Markdown.
fn push_content(out: &mut String, content: &Value, markdown: bool) {
    let text = |out: &mut String, t: &str| {
        if markdown {
            out.push_str("<div class=\"md\">");
            push_markdown(out, t);
            out.push_str("</div>");
        } else {
            out.push_str("<div class=\"text\">");
            push_escaped(out, t);
            out.push_str("</div>");
        }
    };
    match content {
        Value::String(s) => text(out, s),
        Value::Array(blocks) => {
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        text(out, block.get("text").and_then(Value::as_str).unwrap_or(""))
                    }
                    Some("image") => push_image(out, block),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// An image block as a `data:` URL, only for raster types and only when
/// the data is base64 (nothing in it can close the attribute).
fn push_image(out: &mut String, block: &Value) {
    let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("");
    let data = block.get("data").and_then(Value::as_str).unwrap_or("");
    let base64 = !data.is_empty()
        && data
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=');
    if IMAGE_TYPES.contains(&mime) && base64 {
        out.push_str(&format!(
            "<img class=\"image\" alt=\"image\" src=\"data:{mime};base64,{data}\">"
        ));
    } else {
        out.push_str("<div class=\"usage\">[image: ");
        push_escaped(out, mime);
        out.push_str(" not shown]</div>");
    }
}

fn push_usage(out: &mut String, message: &Value) {
    let Some(usage) = message.get("usage") else {
        return;
    };
    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    let cost = usage
        .get("cost")
        .and_then(|c| c.get("total"))
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let model = message.get("model").and_then(Value::as_str).unwrap_or("");
    out.push_str("<div class=\"usage\">");
    push_escaped(out, model);
    out.push_str(&format!(
        " · in {} · out {} · cache read {} · cache write {} · ${cost:.4}</div>",
        n("input"),
        n("output"),
        n("cacheRead"),
        n("cacheWrite")
    ));
}
