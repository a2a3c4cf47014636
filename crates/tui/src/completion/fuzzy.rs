//! A small fuzzy matcher for completion menus: the query's characters in
//! order, case ignored, scored so that runs, word starts and matches in
//! the last path component come first.

/// The score of `text` for `query` (higher is better), `None` when the
/// query's characters are not all in it in order. An empty query matches
/// everything with 0.
///
/// ```
/// use agent_tui::completion::fuzzy::score;
/// assert!(score("edr", "src/editor.rs").is_some());
/// assert!(score("xyz", "src/editor.rs").is_none());
/// assert!(score("edit", "src/editor.rs") > score("edit", "docs/e_d_i_t.md"));
/// ```
pub fn score(query: &str, text: &str) -> Option<i64> {
    if query.is_empty() {
        return Some(0);
    }
    // Most candidates fail: reject them before allocating anything (bytes
    // for ASCII, which nearly every path is).
    if query.is_ascii() && text.is_ascii() {
        if !ascii_subsequence(query.as_bytes(), text.as_bytes()) {
            return None;
        }
    } else {
        let mut wanted = query.chars().flat_map(char::to_lowercase).peekable();
        for c in text.chars().flat_map(char::to_lowercase) {
            if wanted.peek() == Some(&c) {
                wanted.next();
            }
        }
        if wanted.peek().is_some() {
            return None;
        }
    }
    let text_chars: Vec<char> = text.chars().flat_map(char::to_lowercase).collect();
    let query: Vec<char> = query.chars().flat_map(char::to_lowercase).collect();
    if query.len() > text_chars.len() {
        return None;
    }
    let base_start = text_chars
        .iter()
        .rposition(|c| *c == '/')
        .map_or(0, |i| i + 1);
    let mut total: i64 = 0;
    let mut last: Option<usize> = None;
    let mut run: i64 = 0;
    let mut from = 0;
    for q in &query {
        let i = from + text_chars[from..].iter().position(|c| c == q)?;
        match last {
            Some(l) if l + 1 == i => {
                run += 1;
                total += 5 * run;
            }
            Some(l) => {
                run = 0;
                total -= i64::try_from(i - l - 1).unwrap_or(i64::MAX / 4).min(20);
            }
            None => {}
        }
        let boundary = i == 0 || matches!(text_chars[i - 1], '/' | '-' | '_' | '.' | ' ' | ':');
        if boundary {
            total += 10;
        }
        if i >= base_start {
            total += 3;
        }
        last = Some(i);
        from = i + 1;
    }
    if text_chars[base_start..].starts_with(&query) {
        total += 25;
    }
    Some(total)
}

fn ascii_subsequence(query: &[u8], text: &[u8]) -> bool {
    let mut q = 0;
    for &b in text {
        if q < query.len() && b.eq_ignore_ascii_case(&query[q]) {
            q += 1;
        }
    }
    q == query.len()
}

/// Which characters of `text` (indices in `text.chars()`) the query
/// matched, found the way [`score`] finds them (each query character at
/// its first place after the previous one, case ignored): what a list
/// highlights. `None` when the query does not match; empty for an empty
/// query.
///
/// ```
/// use agent_tui::completion::fuzzy::positions;
/// assert_eq!(positions("gpt", "openai/gpt-5"), Some(vec![7, 8, 9]));
/// assert_eq!(positions("os", "Opus"), Some(vec![0, 3]));
/// assert_eq!(positions("zz", "Opus"), None);
/// ```
pub fn positions(query: &str, text: &str) -> Option<Vec<usize>> {
    let wanted: Vec<char> = query.chars().flat_map(char::to_lowercase).collect();
    let mut found = Vec::with_capacity(wanted.len());
    let mut next = 0;
    for (i, c) in text.chars().enumerate() {
        if next == wanted.len() {
            break;
        }
        // A character whose lower case is several (`İ`) may match several
        // query characters in a row; it is marked once.
        let mut hit = false;
        for lower in c.to_lowercase() {
            if next < wanted.len() && wanted[next] == lower {
                next += 1;
                hit = true;
            }
        }
        if hit {
            found.push(i);
        }
    }
    (next == wanted.len()).then_some(found)
}
