//! Pasted text: line endings normalised, control bytes dropped, and a
//! big paste folded into one atomic marker expanded when sent.

/// A paste with more lines than this becomes a marker.
pub const MARKER_LINES: usize = 10;
/// A paste with more characters than this becomes a marker.
pub const MARKER_CHARS: usize = 1000;

/// `\r\n` and lone `\r` become `\n`, tabs four spaces; every other control
/// character (escape sequences' introducers included) is dropped.
///
/// ```
/// assert_eq!(agent_tui::paste::normalize("a\r\nb\rc\x1b[31m\td\0"), "a\nb\nc[31m    d");
/// ```
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('\n');
            }
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            c if c.is_control() => {}
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => {}
            c => out.push(c),
        }
    }
    out
}

/// Whether a (normalised) paste is big enough for a marker.
pub fn needs_marker(text: &str) -> bool {
    text.split('\n').count() > MARKER_LINES || text.chars().count() > MARKER_CHARS
}

/// The marker of paste number `n`: `[paste #n +L lines]`, or
/// `[paste #n C chars]` for few long lines.
///
/// ```
/// assert_eq!(agent_tui::paste::marker(1, &"x\n".repeat(12)), "[paste #1 +13 lines]");
/// assert_eq!(agent_tui::paste::marker(2, &"y".repeat(1500)), "[paste #2 1500 chars]");
/// ```
pub fn marker(n: usize, text: &str) -> String {
    let lines = text.split('\n').count();
    if lines > MARKER_LINES {
        format!("[paste #{n} +{lines} lines]")
    } else {
        format!("[paste #{n} {} chars]", text.chars().count())
    }
}
