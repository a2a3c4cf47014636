//! MCP content blocks as ours, kept within every tool's output limits.

use super::*;

/// MCP content as ours: text, images, embedded text resources (binary ones
/// and links are described in a line).
pub(super) fn our_content(content: &[McpContent]) -> Vec<ContentBlock> {
    content
        .iter()
        .map(|c| match c {
            McpContent::Text(t) => ContentBlock::text(t.text.clone()),
            McpContent::Image(i) => ContentBlock::Image(ImageContent {
                data: i.data.clone(),
                mime_type: i.mime_type.clone(),
            }),
            McpContent::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { text, .. } => {
                    ContentBlock::text(text.clone())
                }
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    ContentBlock::text(format!(
                        "[binary resource {uri} ({})]",
                        mime_type.as_deref().unwrap_or("unknown type")
                    ))
                }
                _ => ContentBlock::text("[resource of an unknown kind]"),
            },
            McpContent::ResourceLink(link) => {
                ContentBlock::text(format!("[resource {}]", link.uri))
            }
            McpContent::Audio(a) => ContentBlock::text(format!("[audio ({})]", a.mime_type)),
            _ => ContentBlock::text("[content of an unknown kind]"),
        })
        .collect()
}

/// A server's text as every built-in tool's output is kept: the first
/// 2,000 lines or 50 KB, whichever comes first, with a notice saying what
/// was cut (an extension or server answering with megabytes would
/// otherwise fill the model's context). Images are kept. The truncation
/// facts, for `details`, when something was cut.
pub(super) fn limit_output(content: Vec<ContentBlock>) -> (Vec<ContentBlock>, Option<Value>) {
    use agent_tool::{TruncationOptions, format_size, truncate_head};
    let text: Vec<&str> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let joined = text.join("\n");
    let limits = TruncationOptions::default();
    let cut = truncate_head(&joined, limits);
    if !cut.truncated {
        return (content, None);
    }
    let notice = format!(
        "[Output truncated: {} of {} lines shown ({} of {}; the limit is {} lines or {}).]",
        cut.output_lines,
        cut.total_lines,
        format_size(cut.output_bytes as u64),
        format_size(cut.total_bytes as u64),
        limits.max_lines,
        format_size(limits.max_bytes as u64),
    );
    let kept = if cut.content.is_empty() {
        notice
    } else {
        format!("{}\n\n{notice}", cut.content)
    };
    let facts = serde_json::to_value(&cut).ok().map(|mut v| {
        if let Value::Object(map) = &mut v {
            // The kept text is in the content already.
            map.remove("content");
        }
        v
    });
    let mut out = vec![ContentBlock::text(kept)];
    out.extend(
        content
            .into_iter()
            .filter(|b| !matches!(b, ContentBlock::Text(_))),
    );
    (out, facts)
}
