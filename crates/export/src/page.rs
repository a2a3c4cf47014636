//! The page around the entries: head and policy, the summary at the top,
//! the tree, the active branch, then the other branches.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use agent_sessions::{EntryKind, SessionManager};
use base64::Engine;
use coding_agent::agent_ai::Message;
use coding_agent::serde_json::Value;
use coding_agent::{RenderContext, Theme};
use sha2::{Digest, Sha256};

use crate::ExportOptions;
use crate::escape::{escaped, push_escaped};
use crate::highlight;
use crate::render::Renderer;
use crate::tree::Tree;

const SCRIPT: &str = include_str!("../assets/page.js");
const STYLE: &str = include_str!("../assets/page.css");

/// Characters of a message shown in the tree.
const TREE_LABEL_CHARS: usize = 60;

/// The whole page.
pub(crate) fn page(session: &SessionManager, options: &ExportOptions<'_>) -> String {
    highlight::start_page();
    let entries = session.entries();
    let tree = Tree::new(entries, session.leaf_id());
    let mut results: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut labels: HashMap<&str, Option<&str>> = HashMap::new();
    for (i, entry) in entries.iter().enumerate() {
        match &entry.kind {
            // Only a tool result answers a call (any other role carrying
            // the field is ignored); which one is decided when the call is
            // drawn.
            EntryKind::Message {
                message: Message::ToolResult(result),
            } => results
                .entry(result.tool_call_id.as_str())
                .or_default()
                .push(i),
            EntryKind::OtherMessage { message } => {
                if message.get("role").and_then(Value::as_str) == Some("toolResult")
                    && let Some(id) = message.get("toolCallId").and_then(Value::as_str)
                {
                    results.entry(id).or_default().push(i);
                }
            }
            EntryKind::Label { target_id, label } => {
                labels.insert(target_id.as_str(), label.as_deref());
            }
            _ => {}
        }
    }
    let renderer = Renderer {
        registry: options.registry,
        context: RenderContext {
            cwd: session.cwd().to_path_buf(),
            width: 120,
        },
        theme: Theme::default(),
        visible_lines: options.visible_output_lines.max(1),
        results,
        parents: &tree.parent,
        drawn: RefCell::new(HashSet::new()),
        entries,
    };

    let style = format!("{STYLE}\n{}", highlight::style_sheet());
    let title = session.name().unwrap_or_else(|| "Session".to_string());
    // Generous: most of a page is the entries' own text.
    let mut out = String::with_capacity(entries.len() * 512 + 64 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    out.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; \
         style-src '{}'; script-src '{}'; base-uri 'none'; form-action 'none'\">\n",
        sha256_source(&style),
        sha256_source(SCRIPT)
    ));
    out.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!("<title>{}</title>\n", escaped(&title)));
    out.push_str(&format!("<style>{style}</style></head><body>\n"));
    push_summary(&mut out, session, &title);
    out.push_str(
        "<div class=\"layout\"><nav class=\"tree\" aria-label=\"Session tree\"><h2>Tree</h2>",
    );
    push_tree(&mut out, &tree, &labels);
    out.push_str("</nav><main>\n<section class=\"active-branch\"><h2>Current branch</h2>\n");
    for &i in &tree.active {
        renderer.push_entry(&mut out, i);
    }
    out.push_str("</section>\n");
    if !tree.branches.is_empty() {
        out.push_str("<section class=\"other-branches\"><h2>Other branches</h2>\n");
        for (n, branch) in tree.branches.iter().enumerate() {
            out.push_str(&format!("<details class=\"branch\" id=\"b{n}\"><summary>"));
            let from = branch
                .from
                .map(|f| format!("Branch from entry {f}"))
                .unwrap_or_else(|| "A separate root".to_string());
            push_escaped(
                &mut out,
                &format!("{from} ({} entries)", branch.entries.len()),
            );
            out.push_str("</summary>\n");
            for &i in &branch.entries {
                renderer.push_entry(&mut out, i);
            }
            out.push_str("</details>\n");
        }
        out.push_str("</section>\n");
    }
    out.push_str("</main></div>\n");
    out.push_str(&format!("<script>{SCRIPT}</script>\n</body></html>\n"));
    out
}

/// A CSP source for an inline element's exact text.
fn sha256_source(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// Name, id, directory, models, and the totals of every answer in the file.
fn push_summary(out: &mut String, session: &SessionManager, title: &str) {
    let header = session.header();
    let (mut input, mut output, mut read, mut write, mut cost) = (0u64, 0u64, 0u64, 0u64, 0f64);
    let mut messages = 0usize;
    let mut models: Vec<String> = Vec::new();
    for entry in session.entries() {
        let Some(message) = entry.kind.message_json() else {
            continue;
        };
        messages += 1;
        if message.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        if let Some(model) = message.get("model").and_then(Value::as_str)
            && !models.iter().any(|m| m == model)
        {
            models.push(model.to_string());
        }
        if let Some(usage) = message.get("usage") {
            let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
            input = input.saturating_add(n("input"));
            output = output.saturating_add(n("output"));
            read = read.saturating_add(n("cacheRead"));
            write = write.saturating_add(n("cacheWrite"));
            let c = usage
                .get("cost")
                .and_then(|c| c.get("total"))
                .and_then(Value::as_f64)
                .filter(|c| c.is_finite())
                .unwrap_or(0.0);
            cost += c;
        }
    }
    out.push_str("<header class=\"top\"><h1>");
    push_escaped(out, title);
    out.push_str("</h1><dl>");
    let mut row = |key: &str, value: &str, id: Option<&str>| {
        out.push_str("<dt>");
        push_escaped(out, key);
        match id {
            Some(id) => out.push_str(&format!("</dt><dd id=\"{id}\">")),
            None => out.push_str("</dt><dd>"),
        }
        push_escaped(out, value);
        out.push_str("</dd>");
    };
    row("Session", &header.id, None);
    row("Directory", &header.cwd, None);
    row("Started", &header.timestamp, None);
    if !models.is_empty() {
        row("Models", &models.join(", "), None);
    }
    row("Messages", &messages.to_string(), None);
    row(
        "Tokens",
        &format!("in {input} · out {output} · cache read {read} · cache write {write}"),
        Some("total-tokens"),
    );
    row("Cost", &format!("${cost:.4}"), Some("total-cost"));
    out.push_str(
        "</dl><div class=\"actions\"><button type=\"button\" id=\"expand-all\">Expand all</button> \
         <button type=\"button\" id=\"collapse-all\">Collapse all</button></div></header>\n",
    );
}

enum NavItem {
    Chain(usize),
    Fork(usize),
    Close,
}

/// The tree as nested lists: a chain of single children stays one flat
/// list; a fork opens one nested list per child, the active one first.
fn push_tree(out: &mut String, tree: &Tree<'_>, labels: &HashMap<&str, Option<&str>>) {
    out.push_str("<ul>");
    let mut stack: Vec<NavItem> = Vec::new();
    let roots = tree.ordered_children(None);
    push_children(&mut stack, &roots);
    while let Some(item) = stack.pop() {
        match item {
            NavItem::Close => out.push_str("</ul></li>"),
            NavItem::Fork(i) => {
                out.push_str("<li class=\"fork\"><ul>");
                stack.push(NavItem::Close);
                stack.push(NavItem::Chain(i));
            }
            NavItem::Chain(i) => {
                push_tree_item(out, tree, i, labels);
                let kids = tree.ordered_children(Some(i));
                push_children(&mut stack, &kids);
            }
        }
    }
    out.push_str("</ul>");
}

fn push_children(stack: &mut Vec<NavItem>, kids: &[usize]) {
    match kids {
        [] => {}
        [only] => stack.push(NavItem::Chain(*only)),
        many => stack.extend(many.iter().rev().map(|&k| NavItem::Fork(k))),
    }
}

fn push_tree_item(
    out: &mut String,
    tree: &Tree<'_>,
    i: usize,
    labels: &HashMap<&str, Option<&str>>,
) {
    let entry = &tree.entries[i];
    let label = labels.get(entry.id.as_str()).copied().flatten();
    let text = match &entry.kind {
        EntryKind::Message { .. } | EntryKind::OtherMessage { .. } => {
            entry.kind.message_json().and_then(|m| message_label(&m))
        }
        EntryKind::Compaction { .. } => Some("▣ compaction".to_string()),
        EntryKind::BranchSummary { .. } => Some("▣ branch summary".to_string()),
        _ => None,
    };
    let Some(text) = text.or_else(|| label.map(|_| String::new())) else {
        return;
    };
    let class = if tree.is_active(i) {
        " class=\"active\""
    } else {
        ""
    };
    out.push_str(&format!("<li{class}><a href=\"#e{i}\">"));
    if let Some(label) = label {
        out.push_str("<span class=\"label\">");
        push_escaped(out, label);
        out.push_str("</span> ");
    }
    push_escaped(out, &text);
    out.push_str("</a></li>");
}

fn message_label(message: &Value) -> Option<String> {
    let role = message.get("role").and_then(Value::as_str)?;
    let content = message.get("content");
    let first_text = || match content {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .find_map(|b| b.get("text").and_then(Value::as_str).map(str::to_string)),
        _ => None,
    };
    let (mark, text) = match role {
        "user" => ("›", first_text().unwrap_or_default()),
        "assistant" => {
            let tools: Vec<&str> = content
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
                .filter_map(|b| b.get("name").and_then(Value::as_str))
                .collect();
            let text = first_text().filter(|t| !t.trim().is_empty());
            match (text, tools.is_empty()) {
                (Some(t), _) => ("•", t),
                (None, false) => ("⚙", tools.join(", ")),
                (None, true) => ("•", String::new()),
            }
        }
        "bashExecution" => (
            "$",
            message
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        ),
        _ => return None,
    };
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut short: String = one_line.chars().take(TREE_LABEL_CHARS).collect();
    if one_line.chars().count() > TREE_LABEL_CHARS {
        short.push('…');
    }
    Some(format!("{mark} {short}"))
}
