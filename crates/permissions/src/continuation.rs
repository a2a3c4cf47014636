//! Line continuations, removed the way bash removes them before it reads
//! words: a backslash-newline disappears everywhere except inside single
//! quotes, `$'...'` and comments. The splitter then sees the command bash
//! runs: `echo \` + newline + `#'` is `echo #'` (a comment, so the next
//! line is a command of its own), and `$\` + newline + `{x@P}` is an
//! expansion.

/// Where the reader stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    /// Inside `$(...)`, with the number of plain `(` still open in it.
    Substitution(usize),
    /// Inside `${...}`, where `#` starts no comment.
    Parameter,
    Backticks,
    Double,
    Single,
    AnsiC,
    Comment,
}

/// `text` with its line continuations removed.
///
/// ```
/// use agent_permissions::join_continued_lines;
/// assert_eq!(join_continued_lines("echo a\\\nb"), "echo ab");
/// // Single quotes and comments keep them.
/// assert_eq!(join_continued_lines("echo 'a\\\nb'"), "echo 'a\\\nb'");
/// assert_eq!(join_continued_lines("echo # c\\\ntouch x"), "echo # c\\\ntouch x");
/// // A continuation can make a comment where the text shows a quote.
/// assert_eq!(join_continued_lines("echo \\\n#'\ntouch x\n#'"), "echo #'\ntouch x\n#'");
/// // Inside `${...}` a `#` starts no comment.
/// assert_eq!(join_continued_lines("echo ${x:- #\\\n}"), "echo ${x:- #}");
/// ```
pub fn join_continued_lines(text: &str) -> String {
    if !text.contains("\\\n") {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut stack: Vec<Context> = Vec::new();
    // What the last character read means to the next one: an unescaped
    // `$` (so `(` or `'` opens a substitution or `$'...'`), and whether the
    // next character starts a word (so `#` starts a comment). An escaped
    // character is neither.
    let mut dollar = false;
    let mut word_start = true;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match stack.last().copied() {
            Some(Context::Single) => {
                out.push(c);
                if c == '\'' {
                    stack.pop();
                }
                (dollar, word_start) = (false, false);
            }
            Some(Context::AnsiC) => {
                out.push(c);
                if c == '\\' {
                    out.extend(next);
                    i += 1;
                } else if c == '\'' {
                    stack.pop();
                }
                (dollar, word_start) = (false, false);
            }
            Some(Context::Backticks) => {
                // The body is raw text up to the next unescaped backtick:
                // no comments or quotes of its own here.
                if c == '\\' {
                    if next != Some('\n') {
                        out.push(c);
                        out.extend(next);
                    }
                    i += 2;
                    continue;
                }
                out.push(c);
                if c == '`' {
                    stack.pop();
                    word_start = false;
                }
                dollar = false;
            }
            Some(Context::Comment) => {
                out.push(c);
                if c == '\n' {
                    stack.pop();
                    word_start = true;
                }
                dollar = false;
            }
            top => {
                let double = top == Some(Context::Double);
                if c == '\\' {
                    // A continuation vanishes without a trace; any other
                    // escaped character is a plain part of a word.
                    if next != Some('\n') {
                        out.push(c);
                        out.extend(next);
                        (dollar, word_start) = (false, false);
                    }
                    i += 2;
                    continue;
                }
                out.push(c);
                let after_dollar = dollar;
                let at_word_start = word_start;
                dollar = c == '$';
                word_start = !double
                    && (matches!(c, ' ' | '\t' | '\n')
                        || matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '>'));
                match c {
                    '"' if double => {
                        stack.pop();
                    }
                    '"' => stack.push(Context::Double),
                    '\'' if !double => stack.push(if after_dollar {
                        Context::AnsiC
                    } else {
                        Context::Single
                    }),
                    '`' if top == Some(Context::Backticks) => {
                        stack.pop();
                    }
                    '`' => {
                        stack.push(Context::Backticks);
                        word_start = true;
                    }
                    '(' if after_dollar => stack.push(Context::Substitution(0)),
                    '{' if after_dollar => stack.push(Context::Parameter),
                    '}' if top == Some(Context::Parameter) => {
                        stack.pop();
                    }
                    '(' if !double => {
                        if let Some(Context::Substitution(open)) = stack.last_mut() {
                            *open += 1;
                        }
                    }
                    ')' if !double => {
                        if let Some(Context::Substitution(open)) = stack.last_mut() {
                            if *open == 0 {
                                stack.pop();
                                // The word the substitution stands in goes on.
                                word_start = false;
                            } else {
                                *open -= 1;
                            }
                        }
                    }
                    '#' if !double && at_word_start && top != Some(Context::Parameter) => {
                        stack.push(Context::Comment)
                    }
                    _ => {}
                }
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuations_go_where_bash_removes_them() {
        for (text, joined) in [
            ("a \\\n b", "a  b"),
            ("\"x\\\ny\"", "\"xy\""),
            ("echo $\\\n{_@P}", "echo ${_@P}"),
            ("echo $(echo a\\\nb)", "echo $(echo ab)"),
            ("echo \"$(echo 'a\\\nb')\"", "echo \"$(echo 'a\\\nb')\""),
            (
                "echo $(echo x # c\\\ntouch y)",
                "echo $(echo x # c\\\ntouch y)",
            ),
            ("echo $'a\\\nb'", "echo $'a\\\nb'"),
            ("echo a#b\\\nc", "echo a#bc"),
            ("echo `echo a\\\nb`", "echo `echo ab`"),
            ("echo \\\\\ntouch x", "echo \\\\\ntouch x"),
            // Escaped characters open nothing: the fourth review's cases.
            ("echo \"\\$(\" #\\\ntouch x", "echo \"\\$(\" #\\\ntouch x"),
            (
                "echo \\ #'\n' \\\n#'\ntouch x\n#'",
                "echo \\ #'\n' #'\ntouch x\n#'",
            ),
            (
                "echo \\$'a\\' \\\n#'\ntouch x\n#'",
                "echo \\$'a\\' #'\ntouch x\n#'",
            ),
            ("echo $(x)#y\\\nz", "echo $(x)#yz"),
        ] {
            assert_eq!(join_continued_lines(text), joined, "{text:?}");
        }
    }
}
