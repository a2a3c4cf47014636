//! Output truncation with Pi's semantics: keep the head or the tail of a text
//! within a line and a byte budget, and say exactly what was kept.

use serde::{Deserialize, Serialize};

/// Default line budget of tool output.
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Default byte budget of tool output (50 KB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Longest grep line shown, in characters.
pub const GREP_MAX_LINE_LENGTH: usize = 500;
/// The "no line limit" value Pi reports for byte-only truncation (2^53 - 1).
pub const NO_LINE_LIMIT: usize = 9_007_199_254_740_991;

/// Which budget cut the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    /// The line budget.
    Lines,
    /// The byte budget.
    Bytes,
}

/// Budgets for a truncation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncationOptions {
    /// Maximum lines kept.
    pub max_lines: usize,
    /// Maximum UTF-8 bytes kept.
    pub max_bytes: usize,
}

impl Default for TruncationOptions {
    fn default() -> Self {
        TruncationOptions {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl TruncationOptions {
    /// Only a byte budget (what grep, find and ls use).
    pub fn bytes_only(max_bytes: usize) -> Self {
        TruncationOptions {
            max_lines: NO_LINE_LIMIT,
            max_bytes,
        }
    }
}

/// What a truncation kept, with Pi's camelCase field names on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TruncationResult {
    /// The kept text.
    pub content: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Which budget cut it (`null` when nothing was cut).
    pub truncated_by: Option<TruncatedBy>,
    /// Lines in the input.
    pub total_lines: usize,
    /// Bytes in the input.
    pub total_bytes: usize,
    /// Lines kept.
    pub output_lines: usize,
    /// Bytes kept.
    pub output_bytes: usize,
    /// The kept text ends with part of a line (tail truncation of a huge last line).
    pub last_line_partial: bool,
    /// The first line alone is over the byte budget, so nothing was kept (head).
    pub first_line_exceeds_limit: bool,
    /// The line budget used.
    pub max_lines: usize,
    /// The byte budget used.
    pub max_bytes: usize,
}

/// Lines of `text` the way Pi counts them: split on `\n`, ignoring the empty piece
/// after a trailing newline. `""` has 0 lines, `"\n"` has 1, `"a\nb\n"` has 2.
pub fn split_lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').collect()
}

/// Number of lines in `text` as [`split_lines`] counts them.
pub fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.bytes().filter(|&b| b == b'\n').count() + 1
}

fn untouched(text: &str, total_lines: usize, options: TruncationOptions) -> TruncationResult {
    TruncationResult {
        content: text.to_string(),
        truncated: false,
        truncated_by: None,
        total_lines,
        total_bytes: text.len(),
        output_lines: total_lines,
        output_bytes: text.len(),
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines: options.max_lines,
        max_bytes: options.max_bytes,
    }
}

/// Keeps whole lines from the start of `text` within the budgets.
///
/// Text within both budgets is returned unchanged (trailing newline kept).
/// Otherwise the kept lines are joined with `\n` without a trailing newline; if
/// the first line alone is over the byte budget nothing is kept and
/// `first_line_exceeds_limit` is set.
///
/// ```
/// use agent_tool::{truncate_head, TruncationOptions, TruncatedBy};
/// let r = truncate_head("a\nb\nc\n", TruncationOptions { max_lines: 2, max_bytes: 100 });
/// assert_eq!(r.content, "a\nb");
/// assert_eq!(r.truncated_by, Some(TruncatedBy::Lines));
/// assert_eq!(r.total_lines, 3);
/// ```
pub fn truncate_head(text: &str, options: TruncationOptions) -> TruncationResult {
    let lines = split_lines(text);
    let total_lines = lines.len();
    let total_bytes = text.len();
    if total_lines <= options.max_lines && total_bytes <= options.max_bytes {
        return untouched(text, total_lines, options);
    }
    let mut result = untouched("", total_lines, options);
    result.total_bytes = total_bytes;
    result.truncated = true;
    if lines.first().is_some_and(|l| l.len() > options.max_bytes) {
        result.truncated_by = Some(TruncatedBy::Bytes);
        result.output_lines = 0;
        result.output_bytes = 0;
        result.first_line_exceeds_limit = true;
        return result;
    }
    let mut by = TruncatedBy::Lines;
    let mut bytes = 0usize;
    let mut kept = 0usize;
    for (i, line) in lines.iter().enumerate().take(options.max_lines) {
        let cost = line.len() + usize::from(i > 0);
        if bytes + cost > options.max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        bytes += cost;
        kept += 1;
    }
    let content = lines[..kept].join("\n");
    result.output_lines = kept;
    result.output_bytes = content.len();
    result.content = content;
    result.truncated_by = Some(by);
    result
}

/// Keeps whole lines from the end of `text` within the budgets.
///
/// If the last line alone is over the byte budget, its last `max_bytes` bytes are
/// kept (moved forward to a character boundary, never splitting a UTF-8
/// character) and `last_line_partial` is set.
///
/// ```
/// use agent_tool::{truncate_tail, TruncationOptions};
/// let r = truncate_tail("1\n2\n3\n", TruncationOptions { max_lines: 2, max_bytes: 100 });
/// assert_eq!(r.content, "2\n3");
/// ```
pub fn truncate_tail(text: &str, options: TruncationOptions) -> TruncationResult {
    let lines = split_lines(text);
    let total_lines = lines.len();
    let total_bytes = text.len();
    if total_lines <= options.max_lines && total_bytes <= options.max_bytes {
        return untouched(text, total_lines, options);
    }
    let mut result = untouched("", total_lines, options);
    result.total_bytes = total_bytes;
    result.truncated = true;
    let mut by = TruncatedBy::Lines;
    let mut bytes = 0usize;
    let mut kept = 0usize;
    for (i, line) in lines.iter().rev().enumerate().take(options.max_lines) {
        let cost = line.len() + usize::from(i > 0);
        if bytes + cost > options.max_bytes {
            by = TruncatedBy::Bytes;
            if kept == 0 {
                let tail = tail_at_char_boundary(line, options.max_bytes);
                result.content = tail.to_string();
                result.output_lines = 1;
                result.output_bytes = tail.len();
                result.last_line_partial = true;
                result.truncated_by = Some(TruncatedBy::Bytes);
                return result;
            }
            break;
        }
        bytes += cost;
        kept += 1;
    }
    let content = lines[total_lines - kept..].join("\n");
    result.output_lines = kept;
    result.output_bytes = content.len();
    result.content = content;
    result.truncated_by = Some(by);
    result
}

/// The longest suffix of `s` of at most `max_bytes` bytes that starts on a
/// character boundary.
pub fn tail_at_char_boundary(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut start = s.len() - max_bytes;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// The longest prefix of `s` of at most `max_bytes` bytes that ends on a
/// character boundary.
pub fn head_at_char_boundary(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut end = max_bytes;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Shortens one line to `max_chars` characters plus `... [truncated]`.
///
/// Returns the line and whether it was cut. Characters are Unicode scalar values
/// (Pi counts UTF-16 units; the two agree outside astral-plane characters).
///
/// ```
/// let (line, cut) = agent_tool::truncate_line("abcdef", 3);
/// assert_eq!(line, "abc... [truncated]");
/// assert!(cut);
/// ```
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    match line.char_indices().nth(max_chars) {
        None => (line.to_string(), false),
        Some((cut, _)) => (format!("{}... [truncated]", &line[..cut]), true),
    }
}

/// Formats a byte count the way Pi does: `512B`, `1.5KB`, `50.0KB`, `1.0MB`.
///
/// One decimal, rounded half up like JavaScript's `toFixed(1)` on these exact values.
///
/// ```
/// assert_eq!(agent_tool::format_size(1023), "1023B");
/// assert_eq!(agent_tool::format_size(1280), "1.3KB");
/// assert_eq!(agent_tool::format_size(51200), "50.0KB");
/// assert_eq!(agent_tool::format_size(1048576), "1.0MB");
/// ```
pub fn format_size(bytes: u64) -> String {
    const KB: u64 = 1024;
    const MB: u64 = 1024 * 1024;
    let one_decimal = |unit: u64| {
        let tenths = (bytes as u128 * 20 + unit as u128) / (unit as u128 * 2);
        format!("{}.{}", tenths / 10, tenths % 10)
    };
    if bytes < KB {
        format!("{bytes}B")
    } else if bytes < MB {
        format!("{}KB", one_decimal(KB))
    } else {
        format!("{}MB", one_decimal(MB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(max_lines: usize, max_bytes: usize) -> TruncationOptions {
        TruncationOptions {
            max_lines,
            max_bytes,
        }
    }

    #[test]
    fn line_counting_ignores_one_trailing_newline() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
        assert_eq!(count_lines("a\nb\n"), 2);
        assert_eq!(count_lines("a\n\n"), 2);
        assert_eq!(split_lines("a\n\n"), vec!["a", ""]);
    }

    #[test]
    fn empty_text_is_untouched() {
        let r = truncate_head("", opts(10, 10));
        assert!(!r.truncated);
        assert_eq!(r.truncated_by, None);
        assert_eq!((r.total_lines, r.output_lines, r.output_bytes), (0, 0, 0));
        let r = truncate_tail("", opts(10, 10));
        assert!(!r.truncated);
    }

    #[test]
    fn untruncated_text_keeps_trailing_newline() {
        let r = truncate_head("a\nb\n", opts(2, 100));
        assert_eq!(r.content, "a\nb\n");
        assert!(!r.truncated);
        assert_eq!(r.output_bytes, 4);
        let r = truncate_tail("a\nb\n", opts(2, 100));
        assert_eq!(r.content, "a\nb\n");
    }

    #[test]
    fn head_cut_by_bytes_keeps_whole_lines() {
        let r = truncate_head("aaaa\nbbbb\ncccc\n", opts(100, 9));
        assert_eq!(r.content, "aaaa\nbbbb");
        assert_eq!(r.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!((r.output_lines, r.output_bytes, r.total_lines), (2, 9, 3));
    }

    #[test]
    fn head_first_line_over_byte_limit() {
        let r = truncate_head("0123456789\nx", opts(100, 5));
        assert!(r.first_line_exceeds_limit);
        assert_eq!(r.content, "");
        assert_eq!((r.output_lines, r.output_bytes), (0, 0));
        assert_eq!(r.truncated_by, Some(TruncatedBy::Bytes));
    }

    #[test]
    fn tail_partial_last_line_never_splits_a_character() {
        // "é" is 2 bytes; a 5-byte budget over "éééé" must keep 2 characters (4 bytes).
        let r = truncate_tail("x\néééé", opts(100, 5));
        assert!(r.last_line_partial);
        assert_eq!(r.content, "éé");
        assert_eq!(r.output_bytes, 4);
        assert_eq!(r.output_lines, 1);
        assert!(!r.first_line_exceeds_limit);
    }

    #[test]
    fn tail_cut_by_lines() {
        let r = truncate_tail("1\n2\n3\n4", opts(2, 100));
        assert_eq!(r.content, "3\n4");
        assert_eq!(r.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!(r.total_lines, 4);
    }

    #[test]
    fn serializes_with_pi_field_names() {
        let r = truncate_head("a\nb", opts(1, 100));
        let v = serde_json::to_value(&r).unwrap();
        for key in [
            "content",
            "truncated",
            "truncatedBy",
            "totalLines",
            "totalBytes",
            "outputLines",
            "outputBytes",
            "lastLinePartial",
            "firstLineExceedsLimit",
            "maxLines",
            "maxBytes",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert_eq!(v["truncatedBy"], "lines");
    }

    #[test]
    fn format_size_matches_pi() {
        assert_eq!(format_size(0), "0B");
        assert_eq!(format_size(1024), "1.0KB");
        assert_eq!(format_size(1536), "1.5KB");
        assert_eq!(format_size(1048575), "1024.0KB");
        assert_eq!(format_size(1048576 + 104858), "1.1MB");
    }

    #[test]
    fn truncate_line_counts_characters() {
        assert_eq!(truncate_line("ééé", 3), ("ééé".to_string(), false));
        assert_eq!(truncate_line("éééé", 3).0, "ééé... [truncated]");
    }
}
