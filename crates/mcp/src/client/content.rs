//! MCP content blocks as ours.

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
