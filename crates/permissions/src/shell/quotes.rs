//! Reading quoted and bracketed text as bash does: where a `$(...)`,
//! `${...}` or `$[...]` ends, and what a `$'...'` string holds.

use super::knowledge::is_blank;

/// The text between an opening bracket at `open` and its match (quotes and
/// nesting respected); `None` when unbalanced.
pub(super) fn matching(chars: &[char], open: usize, left: char, right: char) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            // A nested `${...}`: no comments inside it, whatever encloses it.
            '$' if chars.get(i + 1) == Some(&'{') && i > open => {
                i = matching(chars, i + 1, '{', '}')?;
            }
            // A comment runs to the end of the line, quotes and all; only
            // where bash reads commands (`$(...)`), never inside `${...}`.
            '#' if left == '('
                && i > open
                && (is_blank(chars[i - 1])
                    || matches!(chars[i - 1], ';' | '&' | '|' | '(' | ')' | '<' | '>'))
                && chars[..i - 1]
                    .iter()
                    .rev()
                    .take_while(|&&b| b == '\\')
                    .count()
                    % 2
                    == 0 =>
            {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '$' if chars.get(i + 1) == Some(&'\'') => {
                // `$'...'`: a backslash escapes the quote.
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    } else if chars[i] == '$' && chars.get(i + 1) == Some(&'(') {
                        // A substitution inside the quotes has quotes of
                        // its own.
                        i = matching(chars, i + 1, '(', ')')?;
                    } else if chars[i] == '$' && chars.get(i + 1) == Some(&'{') {
                        i = matching(chars, i + 1, '{', '}')?;
                    }
                    i += 1;
                }
            }
            // Inside `${...}` only a nested `${` (above) nests: bash ends
            // the expansion at the first `}`.
            c if c == left && (left != '{' || i == open) => depth += 1,
            c if c == right => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Decodes the body of `$'...'`.
pub(super) fn ansi_c(body: &str) -> String {
    let chars: Vec<char> = body.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '\\' || i + 1 == chars.len() {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        i += 1;
        let c = chars[i];
        let digits = |from: usize, radix: u32, max: usize| -> (u32, usize) {
            let mut value = 0;
            let mut n = 0;
            while n < max && from + n < chars.len() && chars[from + n].is_digit(radix) {
                value = value * radix + chars[from + n].to_digit(radix).unwrap_or(0);
                n += 1;
            }
            (value, n)
        };
        match c {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(c),
            // `\cX`: the control character of X (`\cj` is a newline).
            'c' if i + 1 < chars.len() => {
                i += 1;
                let x = chars[i];
                out.push(if x == '?' {
                    '\x7f'
                } else {
                    char::from((u32::from(x.to_ascii_uppercase()) & 0x1f) as u8)
                });
            }
            // `\x{HH...}` (bash 5.2): any number of digits in braces.
            'x' if chars.get(i + 1) == Some(&'{') => {
                let (v, n) = digits(i + 2, 16, 8);
                if chars.get(i + 2 + n) == Some(&'}') {
                    out.extend(char::from_u32(v & 0xff));
                    i += n + 2;
                } else {
                    out.push('\\');
                    out.push('x');
                }
            }
            'x' => {
                let (v, n) = digits(i + 1, 16, 2);
                if n == 0 {
                    // No digit: bash keeps `\x` as written.
                    out.push('\\');
                    out.push('x');
                } else {
                    out.extend(char::from_u32(v));
                    i += n;
                }
            }
            'u' | 'U' => {
                let (v, n) = digits(i + 1, 16, if c == 'u' { 4 } else { 8 });
                if n == 0 {
                    out.push('\\');
                    out.push(c);
                } else {
                    // Bash writes the bytes of what is no character; nothing
                    // here may vanish (`/dev/nu\U110000ll` is not /dev/null).
                    out.push(char::from_u32(v).unwrap_or('\u{FFFD}'));
                    i += n;
                }
            }
            '0'..='7' => {
                // A byte: bash keeps the low eight bits (`\562` is `r`).
                let (v, n) = digits(i, 8, 3);
                out.extend(char::from_u32(v & 0xff));
                i += n - 1;
            }
            // Any other escape stays as written, backslash and all.
            other => {
                out.push('\\');
                out.push(other);
            }
        }
        i += 1;
    }
    // Bash's strings end at a NUL: `r$'\0'm` is `rm`.
    if let Some(nul) = out.find('\0') {
        out.truncate(nul);
    }
    out
}
