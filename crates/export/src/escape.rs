//! Text from a session is data: every byte of it reaches the page escaped,
//! and a link keeps its target only when the target cannot run anything.

/// Appends `text` escaped for element content and quoted attribute values.
///
/// Control characters other than newline and tab are dropped: they have
/// no business on the page and some browsers treat them specially in URLs.
pub(crate) fn push_escaped(out: &mut String, text: &str) {
    let mut start = 0;
    for (i, c) in text.char_indices() {
        let replacement = match c {
            '&' => "&amp;",
            '<' => "&lt;",
            '>' => "&gt;",
            '"' => "&quot;",
            '\'' => "&#39;",
            '\n' | '\t' => continue,
            c if c.is_control() => "",
            // Bidirectional overrides and isolates would show a name like
            // `evil\u{202e}gnp.exe` reversed.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => "",
            _ => continue,
        };
        out.push_str(&text[start..i]);
        out.push_str(replacement);
        start = i + c.len_utf8();
    }
    out.push_str(&text[start..]);
}

/// `text` escaped (see [`push_escaped`]).
pub(crate) fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    push_escaped(&mut out, text);
    out
}

/// The target a link may keep: `http:`, `https:` and `mailto:` URLs and
/// in-page anchors. Anything else (`javascript:`, `data:`, `vbscript:`,
/// `file:`, relative paths that would reach the reader's disk) is `None`,
/// and the caller draws the link as text.
pub(crate) fn safe_href(url: &str) -> Option<&str> {
    // Browsers skip leading spaces and C0 controls and remove tabs and
    // newlines anywhere before parsing a URL ("java\tscript:"), so a target
    // with any control or whitespace inside it is refused outright.
    let url = url.trim_start_matches(|c: char| c <= ' ');
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return None;
    }
    let lower: String = url.chars().take(8).collect::<String>().to_ascii_lowercase();
    let allowed = lower.starts_with("https://")
        || lower.starts_with("http://")
        || lower.starts_with("mailto:")
        || (url.starts_with('#') && url.len() > 1);
    allowed.then_some(url)
}

/// A code block's language as a class-name fragment: letters, digits and
/// `+-_.#` only, at most 32 characters.
pub(crate) fn language_token(info: &str) -> Option<String> {
    let first = info
        .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
        .next()?;
    let token: String = first
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "+-_.#".contains(*c))
        .take(32)
        .collect();
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_becomes_text() {
        assert_eq!(
            escaped("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(escaped("a\u{1b}[2Jb\u{0}c\nd"), "a[2Jbc\nd");
        assert_eq!(escaped("evil\u{202e}gnp.exe\u{2066}"), "evilgnp.exe");
    }

    #[test]
    fn only_inert_link_targets_survive() {
        for bad in [
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            " javascript:alert(1)",
            "java\tscript:alert(1)",
            "\u{1}javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "vbscript:x",
            "file:///etc/passwd",
            "../../etc/passwd",
            "#",
            "https://example.com/a b",
        ] {
            assert_eq!(safe_href(bad), None, "{bad:?}");
        }
        for good in [
            "https://example.com/x?a=1",
            "HTTP://e.org",
            "mailto:a@b.c",
            "#e12",
        ] {
            assert_eq!(safe_href(good), Some(good));
        }
    }

    #[test]
    fn languages_are_tokens() {
        assert_eq!(language_token("rust ignore").as_deref(), Some("rust"));
        assert_eq!(language_token("\"><img src=x>").as_deref(), Some("img"));
        assert_eq!(language_token("").as_deref(), None);
    }
}
