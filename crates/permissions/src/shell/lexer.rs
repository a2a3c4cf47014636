//! The lexer: a command line as bash reads it into words, operators and
//! redirections, quotes removed and `$'...'` decoded. Substitutions it
//! meets (`$(...)`, backticks, `<(...)`) are split in turn as they are
//! read, since they run before the command that holds them; what it cannot
//! model marks the result opaque.
//!
//! One step per kind of character: [`Lexer::step`] looks at the character
//! under the cursor and hands it to the method that reads that construct.

use super::knowledge::{dangerous_assignment, is_blank, is_name};
use super::quotes::{ansi_c, matching};
use super::{ShellCommands, Token, Word, split_into};

/// `text` as bash's tokens; what it runs in substitutions is added to
/// `out` on the way, `depth` levels of substitution deep.
pub(super) fn tokenize(text: &str, out: &mut ShellCommands, depth: usize) -> Vec<Token> {
    let mut lexer = Lexer {
        chars: text.chars().collect(),
        i: 0,
        out,
        depth,
        tokens: Vec::new(),
        word: Pending::default(),
    };
    while lexer.i < lexer.chars.len() {
        lexer.step();
    }
    lexer.end_word();
    lexer.tokens
}

/// The word being read.
#[derive(Default)]
struct Pending {
    text: String,
    /// A word has started (it may still be empty: `''`).
    started: bool,
    /// It holds a `$...`, backtick or process substitution.
    expanded: bool,
    /// Some of it was quoted or escaped.
    quoted: bool,
    /// It holds an unquoted glob character (`*`, `?`, `[`).
    glob: bool,
    /// It holds an unquoted `{`.
    brace: bool,
    /// It starts with an unquoted `~`.
    tilde: bool,
}

struct Lexer<'a> {
    chars: Vec<char>,
    /// The cursor.
    i: usize,
    out: &'a mut ShellCommands,
    depth: usize,
    tokens: Vec<Token>,
    word: Pending,
}

impl Lexer<'_> {
    /// The character `ahead` places after the cursor.
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).copied()
    }

    /// Gives up on the rest of the line: it cannot be read.
    fn unreadable(&mut self) {
        self.out.opaque = true;
        self.i = self.chars.len();
    }

    /// Reads the construct that starts at the cursor.
    fn step(&mut self) {
        let c = self.chars[self.i];
        match c {
            ' ' | '\t' => {
                self.end_word();
                self.i += 1;
            }
            '\n' | ';' | '&' | '|' | '(' | ')' => self.operator(c),
            '<' | '>' => self.redirection(c),
            '#' if !self.word.started => self.comment(),
            '\\' => self.escape(),
            '\'' => self.single_quoted(),
            '"' => self.double_quoted(),
            '$' if self.peek(1) == Some('\'') => self.ansi_c_quoted(),
            '$' if self.peek(1) == Some('"') => {
                // `$"..."`: a translated string; the translation, from a
                // message catalogue the repository may ship, is expanded
                // like a double-quoted string (`$(...)` in it runs).
                self.out.opaque = true;
                self.i += 1;
            }
            '$' | '`' => {
                self.word.started = true;
                self.i = self.expansion();
            }
            other => {
                self.literal(other);
                self.i += 1;
            }
        }
    }

    /// Ends the word being read, if any, as a [`Token::Word`].
    fn end_word(&mut self) {
        let word = std::mem::take(&mut self.word);
        if !word.started {
            return;
        }
        let text = word.text;
        let braced = word.brace && (text.contains(',') || text.contains(".."));
        let globbed = (word.glob && text != "[" && text != "[[") || braced;
        // A glob at the start of a word, or after a leading `-`, can
        // expand to an option (`*` or `-*` meeting a file named
        // `--output=x`) the rule never saw. `src/*.rs` cannot.
        let leading_glob = globbed && text.starts_with(['*', '?', '[', '-']);
        self.tokens.push(Token::Word(Word {
            plain: !word.expanded && !braced && !word.tilde && !leading_glob,
            glob: globbed,
            expanded: word.expanded,
            text,
        }));
    }

    /// A character with no meaning of its own to the lexer; a glob, a
    /// brace or a leading tilde is noted for the word.
    fn literal(&mut self, c: char) {
        match c {
            '*' | '?' | '[' => self.word.glob = true,
            '{' => self.word.brace = true,
            '~' if !self.word.started => self.word.tilde = true,
            _ => {}
        }
        self.word.started = true;
        self.word.text.push(c);
    }

    /// `;`, `&`, `&&`, `|`, `||`, `|&`, `;;`, a newline or a parenthesis
    /// (`&>` and `&>>` are redirections).
    fn operator(&mut self, c: char) {
        // (`2>&1` never comes here: the redirection takes its `&`. A `&`
        // after an escaped `\>` is an operator.)
        self.end_word();
        let next = self.peek(1);
        if c == '(' && next == Some('(') {
            // `(( expr ))`: arithmetic evaluates variables' values as
            // expressions, `$(...)` in array subscripts included.
            self.out.opaque = true;
        }
        let op = match (c, next) {
            ('&', Some('&')) => "&&",
            ('|', Some('|')) => "||",
            ('|', Some('&')) => "|&",
            (';', Some(';')) => ";;",
            ('&', Some('>')) => {
                // &> and &>> redirect both streams.
                self.tokens.push(Token::Redirect { output: true });
                self.i += if self.peek(2) == Some('>') { 3 } else { 2 };
                return;
            }
            ('\n', _) => "\n",
            (';', _) => ";",
            ('&', _) => "&",
            ('|', _) => "|",
            ('(', _) => "(",
            _ => ")",
        };
        self.tokens.push(Token::Op(op));
        self.i += op.len();
    }

    /// A redirection at `<` or `>`, or a process substitution.
    fn redirection(&mut self, c: char) {
        if self.peek(1) == Some('(') {
            self.process_substitution();
            return;
        }
        self.descriptor_before_operator();
        self.end_word();
        // The operator, exactly as bash reads it: `<`, `<<`, `<<-`,
        // `<<<`, `<>`, `<&`, `>`, `>>`, `>|`, `>&`. Nothing else
        // belongs to it (`<-` reads a file named `-`).
        let len = match (c, self.peek(1), self.peek(2)) {
            ('<', Some('<'), Some('<' | '-')) => 3,
            ('<', Some('<' | '>' | '&'), _) | ('>', Some('>' | '|' | '&'), _) => 2,
            _ => 1,
        };
        let after = self.i + len;
        let op: String = self.chars[self.i..after].iter().collect();
        if op.starts_with("<<<") {
            // A here-string feeds data to the command: fine for a
            // deny rule, never plain (`bash <<< 'rm x'` is opaque anyway).
            self.out.plain = false;
        } else if op.starts_with("<<") {
            // A here-document: its body is data we do not follow.
            self.out.opaque = true;
        }
        self.i = match self.descriptor_target(&op, after) {
            Some(end) => end,
            None => {
                self.tokens.push(Token::Redirect {
                    output: op.contains('>'),
                });
                after
            }
        };
    }

    /// `<(...)` or `>(...)`: a command that runs, its output a file name.
    fn process_substitution(&mut self) {
        match matching(&self.chars, self.i + 1, '(', ')') {
            Some(end) => {
                let inner: String = self.chars[self.i + 2..end].iter().collect();
                split_into(&inner, self.out, self.depth + 1);
                self.word.started = true;
                self.word.expanded = true;
                self.word.text.push_str("<(..)");
                self.i = end + 1;
            }
            None => self.unreadable(),
        }
    }

    /// The word just before a redirection operator, when it is part of the
    /// redirection: a descriptor number (`2>`) or `{name}`.
    fn descriptor_before_operator(&mut self) {
        let word = &self.word;
        if word.started
            && !word.quoted
            && !word.expanded
            && word.text.chars().all(|d| d.is_ascii_digit())
        {
            self.word.text.clear();
            self.word.started = false;
        }
        // `{name}<file` opens a descriptor and assigns its number to
        // `name` (`{PATH}>x` changes what later commands run);
        // `{a[sub]}<file` evaluates the subscript as arithmetic,
        // which runs any `$(...)` in it, quotes or not.
        let text = &self.word.text;
        if self.word.started && text.starts_with('{') && text.ends_with('}') && text.len() > 2 {
            let name = &text[1..text.len() - 1];
            if is_name(name) && !self.word.quoted && !self.word.expanded {
                self.out.plain = false;
                if dangerous_assignment(name) {
                    self.out.opaque = true;
                }
            } else {
                self.out.opaque = true;
            }
            self.word.text.clear();
            self.word.started = false;
        }
    }

    /// `>&2`, `<&-`, `>&2-` after the operator `op` (ending at `after`):
    /// the target is a descriptor (closed with `-`, moved with `N-`), and
    /// the redirection is whole; where it ends. Only when the word is
    /// nothing else: bash takes `>&1file` as a file name.
    fn descriptor_target(&self, op: &str, after: usize) -> Option<usize> {
        let mut end = after;
        while end < self.chars.len() && self.chars[end].is_ascii_digit() {
            end += 1;
        }
        if self.chars.get(end) == Some(&'-') {
            end += 1;
        }
        let ends_word = self
            .chars
            .get(end)
            .is_none_or(|d| is_blank(*d) || matches!(d, ';' | '&' | '|' | '(' | ')' | '<' | '>'));
        (op.ends_with('&') && end > after && ends_word).then_some(end)
    }

    /// A comment: the rest of the line.
    fn comment(&mut self) {
        while self.i < self.chars.len() && self.chars[self.i] != '\n' {
            self.i += 1;
        }
    }

    /// A backslash outside quotes: the next character taken literally.
    fn escape(&mut self) {
        match self.peek(1) {
            // A line continuation vanishes: it starts no word.
            Some('\n') => {}
            Some(next) => {
                self.word.started = true;
                self.word.text.push(next);
                // An escaped character is quoted: `\2<x` is the
                // argument `2`, not descriptor 2.
                self.word.quoted = true;
            }
            None => self.word.started = true,
        }
        self.i += 2;
    }

    /// `'...'`: everything literal up to the next quote.
    fn single_quoted(&mut self) {
        self.word.started = true;
        self.word.quoted = true;
        let start = self.i + 1;
        match self.chars[start..].iter().position(|&x| x == '\'') {
            Some(n) => {
                self.word.text.extend(&self.chars[start..start + n]);
                self.i += n + 2;
            }
            None => self.unreadable(),
        }
    }

    /// `"..."`: backslash escapes `$`, backtick, `"` and `\`; expansions
    /// are read as outside.
    fn double_quoted(&mut self) {
        self.word.started = true;
        self.word.quoted = true;
        self.i += 1;
        loop {
            match self.chars.get(self.i) {
                None => {
                    self.out.opaque = true;
                    break;
                }
                Some('"') => {
                    self.i += 1;
                    break;
                }
                Some('\\') => {
                    match self.peek(1) {
                        Some(n) if matches!(n, '$' | '`' | '"' | '\\') => self.word.text.push(n),
                        Some('\n') | None => {}
                        Some(n) => {
                            self.word.text.push('\\');
                            self.word.text.push(n);
                        }
                    }
                    self.i += 2;
                }
                Some('$') | Some('`') => self.i = self.expansion(),
                Some(&other) => {
                    self.word.text.push(other);
                    self.i += 1;
                }
            }
        }
    }

    /// `$'...'`: ANSI-C quoting, decoded.
    fn ansi_c_quoted(&mut self) {
        self.word.started = true;
        self.word.quoted = true;
        // `\'` inside `$'...'` is a quote, not the end.
        let mut j = self.i + 2;
        while j < self.chars.len() && self.chars[j] != '\'' {
            j += if self.chars[j] == '\\' { 2 } else { 1 };
        }
        if j < self.chars.len() {
            let body: String = self.chars[self.i + 2..j].iter().collect();
            self.word.text.push_str(&ansi_c(&body));
            self.i = j + 1;
        } else {
            self.unreadable();
        }
    }

    /// A `$...` or backtick expansion at the cursor; returns the index
    /// after it.
    fn expansion(&mut self) -> usize {
        let (chars, i) = (&self.chars, self.i);
        if chars[i] == '`' {
            let Some(n) = chars[i + 1..].iter().position(|&x| x == '`') else {
                self.out.opaque = true;
                return chars.len();
            };
            let inner: String = chars[i + 1..i + 1 + n].iter().collect();
            if inner.contains('\\') {
                // Backslashes inside backticks (`\``, `\$`) are unquoted in a
                // second pass we do not model.
                self.out.opaque = true;
            }
            split_into(&inner, self.out, self.depth + 1);
            self.word.expanded = true;
            self.word.text.push_str("$(..)");
            return i + n + 2;
        }
        match chars.get(i + 1) {
            Some('(') => self.command_substitution(),
            Some('[') => {
                // $[ arithmetic ]: the old form of $(( )).
                self.out.opaque = true;
                self.word.expanded = true;
                self.word.text.push('$');
                match matching(chars, i + 1, '[', ']') {
                    Some(end) => end + 1,
                    None => chars.len(),
                }
            }
            Some('{') => {
                let Some(end) = matching(chars, i + 1, '{', '}') else {
                    self.out.opaque = true;
                    return chars.len();
                };
                let inner: String = chars[i + 2..end].iter().collect();
                if !simple_parameter(&inner) {
                    self.out.opaque = true;
                }
                self.word.expanded = true;
                self.word.text.push('$');
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
                self.word.expanded = true;
                self.word.text.push('$');
                j
            }
            _ => {
                self.word.text.push('$');
                i + 1
            }
        }
    }

    /// `$(...)` at the cursor (or `$((...))`, arithmetic); returns the
    /// index after it.
    fn command_substitution(&mut self) -> usize {
        let Some(end) = matching(&self.chars, self.i + 1, '(', ')') else {
            self.out.opaque = true;
            return self.chars.len();
        };
        let inner: String = self.chars[self.i + 2..end].iter().collect();
        if inner.starts_with('(') {
            // $(( arithmetic )): evaluates variables' values as
            // expressions, and `a[$(...)]` in them runs a command.
            self.out.opaque = true;
        } else {
            split_into(&inner, self.out, self.depth + 1);
        }
        self.word.expanded = true;
        self.word.text.push_str("$(..)");
        end + 1
    }
}

/// `${...}` bodies that only read a variable: `name`, `#name`, `name[@]`,
/// `name:-text`, `name#pattern`, ... with no expansion inside. Everything
/// else (`${x@P}`, `${!x}`, `${x:1}`, `${a[i]}`, nested `$`) may run code.
fn simple_parameter(body: &str) -> bool {
    let body = body
        .strip_prefix('#')
        .filter(|b| !b.is_empty())
        .unwrap_or(body);
    let special = body.chars().next().is_some_and(|c| {
        c.is_ascii_digit() || matches!(c, '@' | '*' | '#' | '?' | '-' | '$' | '!')
    });
    let name_len = if special {
        1
    } else {
        body.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .count()
    };
    if name_len == 0 || body.starts_with('!') && body.len() > 1 {
        return false;
    }
    let rest = &body[name_len..];
    // `${PATH:=x}` assigns: only to a variable whose value runs nothing.
    if (rest.starts_with(":=") || rest.starts_with('=')) && dangerous_assignment(&body[..name_len])
    {
        return false;
    }
    let rest = rest
        .strip_prefix("[@]")
        .or_else(|| rest.strip_prefix("[*]"))
        .unwrap_or(rest);
    if rest.is_empty() {
        return true;
    }
    if rest.contains(['$', '`', '(']) {
        return false;
    }
    [
        ":-", ":=", ":+", ":?", "##", "%%", "//", "^^", ",,", "-", "=", "+", "?", "#", "%", "/",
        "^", ",",
    ]
    .iter()
    .any(|op| rest.starts_with(op))
}
