//! Splits a shell command line into the simple commands it would run, for
//! permission rules: `git diff; rm -rf ~` is two commands, and `rm -rf ~`
//! is judged on its own.
//!
//! The splitter knows what bash does with quotes (`'...'`, `"..."`,
//! `$'...'`, backslashes), operators (`;`, `&`, `&&`, `||`, `|`, `|&`,
//! newlines), subshells and groups, command and process substitution
//! (`$(...)`, backticks, `<(...)`), redirections, comments, keywords
//! (`if`, `then`, `while`, `do`, ...), environment assignments, wrappers
//! that run their arguments as a command (`env`, `sudo`, `xargs`,
//! `timeout`, `nohup`, `find -exec`, ...) and `sh -c` / `bash -c` strings,
//! each taken apart recursively.
//!
//! What it cannot know statically (a command name from a variable, `eval`,
//! `source`, here-documents, `case`, function definitions, unbalanced
//! quotes) marks the result [`opaque`](ShellCommands::opaque): such a
//! command is never allowed by a rule, only by the default.

/// The simple commands of a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellCommands {
    /// Each simple command's words, quotes removed, assignments, keywords
    /// and redirections dropped; wrappers appear both whole and unwrapped.
    pub commands: Vec<Vec<String>>,
    /// Something could not be resolved statically.
    pub opaque: bool,
}

impl ShellCommands {
    /// Each command as one string (words joined by single spaces).
    pub fn lines(&self) -> Vec<String> {
        self.commands.iter().map(|c| c.join(" ")).collect()
    }
}

/// Splits `text`; see the module docs.
///
/// ```
/// use coding_agent::permissions::split_commands;
/// let parts = split_commands("git diff; FOO=1 sudo rm -rf ~ && echo \"$(whoami)\"");
/// // Substitutions come first: they run before the command that uses them.
/// assert_eq!(parts.lines(), ["whoami", "git diff", "sudo rm -rf ~", "rm -rf ~", "echo $(..)"]);
/// assert!(!parts.opaque);
/// ```
pub fn split_commands(text: &str) -> ShellCommands {
    let mut out = ShellCommands::default();
    split_into(text, &mut out, 0);
    out
}

/// Deeper nesting than this is refused as opaque (and cannot exhaust the stack).
const MAX_DEPTH: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word { text: String, expanded: bool },
    Op(&'static str),
    Redirect,
}

fn split_into(text: &str, out: &mut ShellCommands, depth: usize) {
    if depth > MAX_DEPTH {
        out.opaque = true;
        return;
    }
    let tokens = tokenize(text, out, depth);
    let opens = tokens.iter().filter(|t| **t == Token::Op("(")).count();
    let closes = tokens.iter().filter(|t| **t == Token::Op(")")).count();
    if opens != closes {
        out.opaque = true;
    }
    let mut words: Vec<(String, bool)> = Vec::new();
    let mut skip_next_word = false;
    for token in tokens {
        match token {
            Token::Word { text, expanded } => {
                if skip_next_word {
                    skip_next_word = false;
                } else {
                    words.push((text, expanded));
                }
            }
            Token::Redirect => skip_next_word = true,
            Token::Op(op) => {
                if op == ";;" {
                    out.opaque = true;
                }
                finish(std::mem::take(&mut words), out, depth);
            }
        }
    }
    finish(words, out, depth);
}

const KEYWORDS: [&str; 14] = [
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time",
    "coproc",
];

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let name = name.strip_suffix('+').unwrap_or(name);
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Options of a wrapper that take a value (`sudo -u root`, `nice -n 5`).
fn option_takes_value(wrapper: &str, option: &str) -> bool {
    let table: &[&str] = match wrapper {
        "sudo" | "doas" => &["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U"],
        "env" => &["-u", "-C", "-S", "--unset", "--chdir"],
        "nice" => &["-n", "--adjustment"],
        "timeout" => &["-s", "-k", "--signal", "--kill-after"],
        "xargs" => &[
            "-I",
            "-i",
            "-n",
            "-P",
            "-d",
            "-E",
            "-L",
            "-s",
            "-a",
            "--max-args",
            "--max-procs",
            "--delimiter",
            "--arg-file",
        ],
        "stdbuf" => &["-i", "-o", "-e"],
        "exec" => &["-a"],
        "ionice" => &["-c", "-n", "-p"],
        "flock" => &["-w", "-E", "-c"],
        _ => &[],
    };
    table.contains(&option)
}

const WRAPPERS: [&str; 15] = [
    "env", "command", "builtin", "exec", "nohup", "nice", "timeout", "sudo", "doas", "xargs",
    "stdbuf", "setsid", "ionice", "flock", "time",
];

const SHELLS: [&str; 6] = ["sh", "bash", "zsh", "dash", "ksh", "fish"];

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Records one simple command (and what it runs in turn).
fn finish(words: Vec<(String, bool)>, out: &mut ShellCommands, depth: usize) {
    let mut start = 0;
    while start < words.len() {
        let w = words[start].0.as_str();
        if words[start].1 {
            break;
        }
        if KEYWORDS.contains(&w) || is_assignment(w) {
            start += 1;
            continue;
        }
        break;
    }
    let words = &words[start..];
    let Some((first, first_expanded)) = words.first() else {
        return;
    };
    if *first_expanded {
        // The command name comes from an expansion: unknown until run.
        out.opaque = true;
    }
    match first.as_str() {
        "for" | "select" => return,
        "case" | "function" | "eval" | "source" | "." | "trap" => out.opaque = true,
        _ => {}
    }
    if first.ends_with("()") || words.get(1).is_some_and(|(w, _)| w == "()") {
        out.opaque = true;
    }
    let texts: Vec<String> = words.iter().map(|(w, _)| w.clone()).collect();
    out.commands.push(texts.clone());

    let name = basename(first);
    if WRAPPERS.contains(&name) && texts.len() > 1 {
        let mut i = 1;
        while i < texts.len() {
            let w = texts[i].as_str();
            if w == "--" {
                i += 1;
                break;
            }
            if name == "env" && is_assignment(w) {
                i += 1;
                continue;
            }
            if w.starts_with('-') && w.len() > 1 {
                i += if option_takes_value(name, w) { 2 } else { 1 };
                continue;
            }
            // timeout DURATION CMD, flock FILE CMD
            if (name == "timeout" || name == "flock") && i == first_nonoption(&texts) {
                i += 1;
                continue;
            }
            break;
        }
        if i < texts.len() {
            let inner: Vec<(String, bool)> = words[i..].to_vec();
            finish(inner, out, depth);
        }
        return;
    }
    if SHELLS.contains(&name) {
        // sh -c 'text', bash -lc "text"
        let mut iter = texts.iter().skip(1);
        while let Some(w) = iter.next() {
            if w.starts_with('-') && !w.starts_with("--") && w.contains('c') {
                match iter.next() {
                    Some(script) => split_into(script, out, depth + 1),
                    None => out.opaque = true,
                }
                break;
            }
            if !w.starts_with('-') {
                break;
            }
        }
        return;
    }
    if name == "find" {
        let mut i = 1;
        while i < texts.len() {
            if matches!(texts[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                let end = (i + 1..texts.len())
                    .find(|&j| texts[j] == ";" || texts[j] == "+")
                    .unwrap_or(texts.len());
                if end > i + 1 {
                    finish(words[i + 1..end].to_vec(), out, depth);
                }
                i = end;
            }
            i += 1;
        }
    }
}

fn first_nonoption(texts: &[String]) -> usize {
    (1..texts.len())
        .find(|&i| !texts[i].starts_with('-'))
        .unwrap_or(texts.len())
}

/// The text between an opening bracket at `open` and its match (quotes and
/// nesting respected); `None` when unbalanced.
fn matching(chars: &[char], open: usize, left: char, right: char) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
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
                    }
                    i += 1;
                }
            }
            c if c == left => depth += 1,
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
fn ansi_c(body: &str) -> String {
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
            'x' => {
                let (v, n) = digits(i + 1, 16, 2);
                out.extend(char::from_u32(v));
                i += n;
            }
            'u' | 'U' => {
                let (v, n) = digits(i + 1, 16, if c == 'u' { 4 } else { 8 });
                out.extend(char::from_u32(v));
                i += n;
            }
            '0'..='7' => {
                let (v, n) = digits(i, 8, 3);
                out.extend(char::from_u32(v));
                i += n - 1;
            }
            other => out.push(other),
        }
        i += 1;
    }
    out
}

fn tokenize(text: &str, out: &mut ShellCommands, depth: usize) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut expanded = false;
    let mut quoted = false;
    let push_word = |tokens: &mut Vec<Token>,
                     word: &mut String,
                     in_word: &mut bool,
                     expanded: &mut bool,
                     quoted: &mut bool| {
        if *in_word {
            tokens.push(Token::Word {
                text: std::mem::take(word),
                expanded: *expanded,
            });
        }
        *in_word = false;
        *expanded = false;
        *quoted = false;
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => push_word(
                &mut tokens,
                &mut word,
                &mut in_word,
                &mut expanded,
                &mut quoted,
            ),
            '\n' | ';' | '&' | '|' | '(' | ')' => {
                // `2>&1`, `>&2`: part of a redirection.
                if c == '&' && i > 0 && (chars[i - 1] == '>' || chars[i - 1] == '<') {
                    i += 1;
                    continue;
                }
                push_word(
                    &mut tokens,
                    &mut word,
                    &mut in_word,
                    &mut expanded,
                    &mut quoted,
                );
                let next = chars.get(i + 1).copied();
                let op = match (c, next) {
                    ('&', Some('&')) => "&&",
                    ('|', Some('|')) => "||",
                    ('|', Some('&')) => "|&",
                    (';', Some(';')) => ";;",
                    ('&', Some('>')) => {
                        // &> and &>> redirect both streams.
                        tokens.push(Token::Redirect);
                        i += if chars.get(i + 2) == Some(&'>') { 3 } else { 2 };
                        continue;
                    }
                    ('\n', _) => "\n",
                    (';', _) => ";",
                    ('&', _) => "&",
                    ('|', _) => "|",
                    ('(', _) => "(",
                    _ => ")",
                };
                tokens.push(Token::Op(op));
                i += op.len();
                continue;
            }
            '<' | '>' => {
                // A process substitution runs a command.
                if chars.get(i + 1) == Some(&'(') {
                    match matching(&chars, i + 1, '(', ')') {
                        Some(end) => {
                            let inner: String = chars[i + 2..end].iter().collect();
                            split_into(&inner, out, depth + 1);
                            in_word = true;
                            expanded = true;
                            word.push_str("<(..)");
                            i = end + 1;
                        }
                        None => {
                            out.opaque = true;
                            i = chars.len();
                        }
                    }
                    continue;
                }
                // A file-descriptor number before the operator belongs to it.
                if in_word && !quoted && !expanded && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                push_word(
                    &mut tokens,
                    &mut word,
                    &mut in_word,
                    &mut expanded,
                    &mut quoted,
                );
                let mut j = i + 1;
                while j < chars.len() && matches!(chars[j], '<' | '>' | '|' | '&' | '-') {
                    j += 1;
                }
                let op: String = chars[i..j].iter().collect();
                if op.starts_with("<<") && !op.starts_with("<<<") {
                    // A here-document: its body is data we do not follow.
                    out.opaque = true;
                }
                // `>&2`: the target is a descriptor, part of the operator.
                let fd_target = op.ends_with('&')
                    && chars
                        .get(j)
                        .is_some_and(|d| d.is_ascii_digit() || *d == '-');
                if fd_target {
                    while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '-') {
                        j += 1;
                    }
                } else {
                    tokens.push(Token::Redirect);
                }
                i = j;
                continue;
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '\\' => {
                in_word = true;
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some(&next) => word.push(next),
                    None => {}
                }
                i += 2;
                continue;
            }
            '\'' => {
                in_word = true;
                quoted = true;
                match chars[i + 1..].iter().position(|&x| x == '\'') {
                    Some(n) => {
                        word.extend(&chars[i + 1..i + 1 + n]);
                        i += n + 2;
                    }
                    None => {
                        out.opaque = true;
                        i = chars.len();
                    }
                }
                continue;
            }
            '"' => {
                in_word = true;
                quoted = true;
                i += 1;
                loop {
                    match chars.get(i) {
                        None => {
                            out.opaque = true;
                            break;
                        }
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some('\\') => {
                            match chars.get(i + 1) {
                                Some(&n) if matches!(n, '$' | '`' | '"' | '\\') => word.push(n),
                                Some('\n') => {}
                                Some(&n) => {
                                    word.push('\\');
                                    word.push(n);
                                }
                                None => {}
                            }
                            i += 2;
                        }
                        Some('$') | Some('`') => {
                            i = expansion(&chars, i, &mut word, &mut expanded, out, depth);
                        }
                        Some(&other) => {
                            word.push(other);
                            i += 1;
                        }
                    }
                }
                continue;
            }
            '$' if chars.get(i + 1) == Some(&'\'') => {
                in_word = true;
                quoted = true;
                match chars[i + 2..].iter().position(|&x| x == '\'') {
                    Some(n) => {
                        let body: String = chars[i + 2..i + 2 + n].iter().collect();
                        word.push_str(&ansi_c(&body));
                        i += n + 3;
                    }
                    None => {
                        out.opaque = true;
                        i = chars.len();
                    }
                }
                continue;
            }
            '$' | '`' => {
                in_word = true;
                i = expansion(&chars, i, &mut word, &mut expanded, out, depth);
                continue;
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
        i += 1;
    }
    push_word(
        &mut tokens,
        &mut word,
        &mut in_word,
        &mut expanded,
        &mut quoted,
    );
    tokens
}

/// A `$...` or backtick expansion starting at `i`; returns the index after it.
fn expansion(
    chars: &[char],
    i: usize,
    word: &mut String,
    expanded: &mut bool,
    out: &mut ShellCommands,
    depth: usize,
) -> usize {
    if chars[i] == '`' {
        let Some(n) = chars[i + 1..].iter().position(|&x| x == '`') else {
            out.opaque = true;
            return chars.len();
        };
        let inner: String = chars[i + 1..i + 1 + n].iter().collect();
        split_into(&inner, out, depth + 1);
        *expanded = true;
        word.push_str("$(..)");
        return i + n + 2;
    }
    match chars.get(i + 1) {
        Some('(') => {
            let Some(end) = matching(chars, i + 1, '(', ')') else {
                out.opaque = true;
                return chars.len();
            };
            let inner: String = chars[i + 2..end].iter().collect();
            if inner.starts_with('(') {
                // $(( arithmetic )): may still hide a substitution.
                if inner.contains("$(") || inner.contains('`') {
                    out.opaque = true;
                }
            } else {
                split_into(&inner, out, depth + 1);
            }
            *expanded = true;
            word.push_str("$(..)");
            end + 1
        }
        Some('{') => {
            let Some(end) = matching(chars, i + 1, '{', '}') else {
                out.opaque = true;
                return chars.len();
            };
            let inner: String = chars[i + 2..end].iter().collect();
            if inner.contains("$(") || inner.contains('`') {
                out.opaque = true;
            }
            *expanded = true;
            word.push('$');
            end + 1
        }
        Some(c)
            if c.is_ascii_alphanumeric()
                || matches!(c, '_' | '@' | '*' | '#' | '?' | '-' | '$' | '!') =>
        {
            let mut j = i + 1;
            if c.is_ascii_alphabetic() || *c == '_' {
                while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
            } else {
                j += 1;
            }
            *expanded = true;
            word.push('$');
            j
        }
        _ => {
            word.push('$');
            i + 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_what_bash_would_run() {
        let cases: [(&str, &[&str], bool); 14] = [
            ("git diff", &["git diff"], false),
            ("git diff; rm -rf ~", &["git diff", "rm -rf ~"], false),
            (
                "a && b || c | d |& e & f\ng",
                &["a", "b", "c", "d", "e", "f", "g"],
                false,
            ),
            ("(rm x)", &["rm x"], false),
            ("{ rm x; }", &["rm x"], false),
            (
                "echo $(rm x) `ls`",
                &["rm x", "ls", "echo $(..) $(..)"],
                false,
            ),
            (
                "bash -c 'git diff; rm x'",
                &["bash -c git diff; rm x", "git diff", "rm x"],
                false,
            ),
            ("FOO=1 BAR=2 rm x > out 2>&1", &["rm x"], false),
            (
                "r\"m\" x; \\rm y; $'\\x72m' z",
                &["rm x", "rm y", "rm z"],
                false,
            ),
            (
                "sudo -u root env A=1 rm x",
                &["sudo -u root env A=1 rm x", "env A=1 rm x", "rm x"],
                false,
            ),
            (
                "find . -name '*.o' -exec rm {} \\;",
                &["find . -name *.o -exec rm {} ;", "rm {}"],
                false,
            ),
            ("if true; then rm x; fi", &["true", "rm x"], false),
            ("X=rm; $X y", &["$ y"], true),
            ("cat <<EOF\nrm x\nEOF", &["cat", "rm x", "EOF"], true),
        ];
        for (text, expected, opaque) in cases {
            let got = split_commands(text);
            assert_eq!(got.lines(), expected, "{text}");
            assert_eq!(got.opaque, opaque, "{text}");
        }
    }

    #[test]
    fn survives_garbage() {
        for text in [
            "'",
            "\"",
            "$(",
            "`",
            "((((((((((((((((((((((((",
            "$((1+",
            "\\",
            "<(",
            "a >",
            "${",
        ] {
            let got = split_commands(text);
            assert!(
                got.opaque || !got.commands.is_empty() || text.trim().len() <= 3,
                "{text}"
            );
        }
        let deep = "$(".repeat(100) + &")".repeat(100);
        assert!(split_commands(&deep).opaque);
    }
}
