//! Model text as Markdown, written out as HTML by us rather than by a
//! generic renderer: raw HTML in the Markdown is shown as text, links keep
//! only inert targets, and images are never fetched.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::escape::{language_token, push_escaped, safe_href};
use crate::highlight::push_code;

/// Appends `markdown` rendered as HTML.
pub(crate) fn push_markdown(out: &mut String, markdown: &str) {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut code: Option<(Option<String>, String)> = None;
    // Whether each open link got an `<a>` (a refused target gets a `<span>`).
    let mut links: Vec<bool> = Vec::new();
    let mut table_head = false;
    for event in Parser::new_ext(markdown, options) {
        if let Some((_, buffer)) = code.as_mut() {
            match event {
                Event::Text(t) => buffer.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    if let Some((language, buffer)) = code.take() {
                        out.push_str("<pre class=\"code\"><code>");
                        push_code(out, &buffer, language.as_deref());
                        out.push_str("</code></pre>\n");
                    }
                }
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(tag) => match tag {
                Tag::Paragraph => out.push_str("<p>"),
                Tag::Heading { level, .. } => {
                    out.push('<');
                    out.push_str(heading(level));
                    out.push('>');
                }
                Tag::BlockQuote(_) => out.push_str("<blockquote>"),
                Tag::CodeBlock(kind) => {
                    let language = match kind {
                        CodeBlockKind::Fenced(info) => language_token(&info),
                        CodeBlockKind::Indented => None,
                    };
                    code = Some((language, String::new()));
                }
                Tag::List(Some(start)) => {
                    out.push_str("<ol start=\"");
                    out.push_str(&start.to_string());
                    out.push_str("\">");
                }
                Tag::List(None) => out.push_str("<ul>"),
                Tag::Item => out.push_str("<li>"),
                Tag::Emphasis => out.push_str("<em>"),
                Tag::Strong => out.push_str("<strong>"),
                Tag::Strikethrough => out.push_str("<del>"),
                Tag::Table(_) => out.push_str("<table>"),
                Tag::TableHead => {
                    table_head = true;
                    out.push_str("<thead><tr>");
                }
                Tag::TableRow => out.push_str("<tr>"),
                Tag::TableCell => out.push_str(if table_head { "<th>" } else { "<td>" }),
                Tag::Link { dest_url, .. } => match safe_href(&dest_url) {
                    Some(href) => {
                        out.push_str("<a href=\"");
                        push_escaped(out, href);
                        out.push_str("\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">");
                        links.push(true);
                    }
                    None => {
                        out.push_str("<span class=\"link\" title=\"");
                        push_escaped(out, &dest_url);
                        out.push_str("\">");
                        links.push(false);
                    }
                },
                Tag::Image { dest_url, .. } => {
                    // Never an <img>: loading it would be a network request.
                    out.push_str("<span class=\"image\" title=\"");
                    push_escaped(out, &dest_url);
                    out.push_str("\">[image: ");
                }
                _ => {}
            },
            Event::End(tag) => match tag {
                TagEnd::Paragraph => out.push_str("</p>\n"),
                TagEnd::Heading(level) => {
                    out.push_str("</");
                    out.push_str(heading(level));
                    out.push_str(">\n");
                }
                TagEnd::BlockQuote(_) => out.push_str("</blockquote>\n"),
                TagEnd::List(true) => out.push_str("</ol>\n"),
                TagEnd::List(false) => out.push_str("</ul>\n"),
                TagEnd::Item => out.push_str("</li>\n"),
                TagEnd::Emphasis => out.push_str("</em>"),
                TagEnd::Strong => out.push_str("</strong>"),
                TagEnd::Strikethrough => out.push_str("</del>"),
                TagEnd::Table => out.push_str("</tbody></table>\n"),
                TagEnd::TableHead => {
                    table_head = false;
                    out.push_str("</tr></thead><tbody>");
                }
                TagEnd::TableRow => out.push_str("</tr>"),
                TagEnd::TableCell => out.push_str(if table_head { "</th>" } else { "</td>" }),
                TagEnd::Link => {
                    out.push_str(if links.pop().unwrap_or(false) {
                        "</a>"
                    } else {
                        "</span>"
                    });
                }
                TagEnd::Image => {
                    out.push_str("]</span>");
                }
                _ => {}
            },
            Event::Text(text) => push_escaped(out, &text),
            Event::Code(text) => {
                out.push_str("<code>");
                push_escaped(out, &text);
                out.push_str("</code>");
            }
            // Raw HTML in model text is shown, never interpreted.
            Event::Html(text) | Event::InlineHtml(text) => {
                out.push_str("<span class=\"raw-html\">");
                push_escaped(out, &text);
                out.push_str("</span>");
            }
            Event::SoftBreak => out.push('\n'),
            Event::HardBreak => out.push_str("<br>\n"),
            Event::Rule => out.push_str("<hr>\n"),
            Event::TaskListMarker(done) => out.push_str(if done { "☑ " } else { "☐ " }),
            _ => {}
        }
    }
    // A stream cut inside a fence still shows what arrived.
    if let Some((language, buffer)) = code.take() {
        out.push_str("<pre class=\"code\"><code>");
        push_code(out, &buffer, language.as_deref());
        out.push_str("</code></pre>\n");
    }
}

fn heading(level: HeadingLevel) -> &'static str {
    match level {
        HeadingLevel::H1 => "h1",
        HeadingLevel::H2 => "h2",
        HeadingLevel::H3 => "h3",
        HeadingLevel::H4 => "h4",
        HeadingLevel::H5 => "h5",
        HeadingLevel::H6 => "h6",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(md: &str) -> String {
        let mut out = String::new();
        push_markdown(&mut out, md);
        out
    }

    #[test]
    fn markdown_is_rendered() {
        let out = html(
            "# Title\n\nSome **bold** and `code`.\n\n- a\n- b\n\n| x | y |\n|---|---|\n| 1 | 2 |\n",
        );
        assert!(out.contains("<h1>Title</h1>"), "{out}");
        assert!(out.contains("<strong>bold</strong>"));
        assert!(out.contains("<code>code</code>"));
        assert!(out.contains("<ul><li>a</li>"));
        assert!(
            out.contains("<th>x</th>") && out.contains("<td>2</td>"),
            "{out}"
        );
    }

    #[test]
    fn hostile_markdown_runs_nothing() {
        let out = html(
            "<script>window.pwned=1</script>\n\nhi <img src=x onerror=alert(1)> \
             [click](javascript:alert(1)) ![x](https://evil.example/t.png) \
             [ok](https://example.com) </textarea><svg onload=alert(1)>\n",
        );
        for bad in [
            "<script",
            "<img",
            "<svg",
            "</textarea>",
            "href=\"javascript",
        ] {
            assert!(!out.contains(bad), "{bad} in {out}");
        }
        assert!(out.contains("href=\"https://example.com\""), "{out}");
        assert!(out.contains("&lt;script&gt;"), "{out}");
    }

    #[test]
    fn fenced_code_is_highlighted_and_an_open_fence_still_shows() {
        let out = html("```rust\nfn main() {}\n```\n");
        assert!(
            out.contains("<pre class=\"code\"><code>") && out.contains("hl-"),
            "{out}"
        );
        let open = html("```python\nprint(1)\n");
        assert!(open.contains("print"), "{open}");
    }
}
