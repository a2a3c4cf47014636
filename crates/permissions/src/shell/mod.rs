//! Splits a shell command line into the simple commands it would run, for
//! permission rules: `git diff; rm -rf ~` is two commands, and `rm -rf ~`
//! is judged on its own.
//!
//! The splitter knows what bash does with quotes (`'...'`, `"..."`,
//! `$'...'` with its escapes, backslashes), operators (`;`, `&`, `&&`,
//! `||`, `|`, `|&`, newlines), subshells and groups, command and process
//! substitution (`$(...)`, backticks, `<(...)`), redirections, comments,
//! keywords (`if`, `then`, `while`, `do`, ...), environment assignments,
//! wrappers that run their arguments as a command (`env`, `sudo`, `xargs`,
//! `timeout`, `time`, `flock`, `nice`, `nohup`, `find -exec`, ...) parsed
//! with their real option grammar, and `sh -c` / `bash -c` strings, each
//! taken apart recursively.
//!
//! It fails closed. What it cannot know statically marks the result
//! [`opaque`](ShellCommands::opaque): a command name from an expansion, a
//! glob or brace expansion in a command word, arithmetic (`$((...))`,
//! `$[...]`, `((...))`, `let`, `[[ -eq ]]`, array subscripts: bash
//! evaluates `$(...)` held in a variable there), `${...}` beyond reading a
//! variable (`${x@P}`, `${!x}`), `eval`, `source`, `alias`, `hash`,
//! `shopt`, `coproc`, assignments to `PATH`, `PS4`, `BASH_ENV` and the
//! like, here-documents, `case`, function definitions, a wrapper option it
//! does not know, a shell that reads a file or its input (`... | sh`,
//! `bash <<< ...`), programs that run a string we cannot follow (`watch`,
//! `su`, `chroot`, ...), unbalanced quotes. An opaque command is never
//! allowed by a rule, and asked when deny or ask rules exist. Beyond that,
//! only a [`plain`](ShellCommands::plain) line (literal words, simple
//! quoting, no expansion, no assignment) can be allowed by a rule.
//!
//! Aliases and functions defined outside the line cannot be seen; bash
//! does not expand aliases in a non-interactive shell unless told to.
//!
//! Three parts: the [lexer](lexer) reads a line into words, operators and
//! redirections; the [knowledge](knowledge) tables say what bash and the
//! programs around it do with words; the [judge](judge) takes each simple
//! command and records what it runs. This module holds the result and
//! the step between them (tokens to simple commands).

#[cfg(test)]
mod differential;
mod judge;
mod knowledge;
mod lexer;
mod quotes;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod unknown_words;

pub(crate) use knowledge::leaves_arguments_alone;

use judge::finish;
use lexer::tokenize;

/// The simple commands of a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellCommands {
    /// Each simple command's words, quotes removed, assignments, keywords
    /// and redirections dropped; wrappers appear both whole and unwrapped.
    pub commands: Vec<Vec<String>>,
    /// Something could not be resolved statically: a deny rule cannot be
    /// trusted to see every command, so such a line is asked, never allowed.
    pub opaque: bool,
    /// Every command is plain: literal words and simple quoting only (no
    /// expansion of any kind, no assignment, no brace or glob in a command
    /// word, no here-document or here-string). Only a plain line can be
    /// allowed by an allow rule.
    pub plain: bool,
    /// For each command of [`commands`](Self::commands), the first word
    /// whose value is only known when it runs (an expansion or a pattern):
    /// a rule naming words from there on might match.
    pub unknown_from: Vec<Option<usize>>,
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
/// use agent_permissions::split_commands;
/// let parts = split_commands("git diff; FOO=1 sudo rm -rf ~ && echo \"$(whoami)\"");
/// // Substitutions come first: they run before the command that uses them.
/// assert_eq!(parts.lines(), ["whoami", "git diff", "sudo rm -rf ~", "rm -rf ~", "echo $(..)"]);
/// assert!(!parts.opaque);
/// ```
pub fn split_commands(text: &str) -> ShellCommands {
    let mut out = ShellCommands {
        plain: true,
        ..ShellCommands::default()
    };
    // Bash removes them before it reads a word; so must the splitter.
    split_into(&super::join_continued_lines(text), &mut out, 0);
    if out.opaque {
        out.plain = false;
    }
    out
}

/// Deeper nesting than this is refused as opaque (and cannot exhaust the stack).
const MAX_DEPTH: usize = 16;

/// One word as the lexer read it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    /// Holds a `$...`, backtick or process substitution.
    expanded: bool,
    /// Literal words and simple quoting only.
    plain: bool,
    /// An unquoted glob (`*`, `?`, `[`) or brace expansion.
    glob: bool,
}

/// What the lexer reads.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(Word),
    Op(&'static str),
    /// A redirection operator; its target is the next word. `output`: the
    /// target is written (`>`, `>>`, `>|`, `&>`, `<>`).
    Redirect {
        output: bool,
    },
}

/// Adds the simple commands of `text` to `out`, `depth` levels of
/// substitution or `bash -c` deep.
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
    let mut words: Vec<Word> = Vec::new();
    let mut target_of: Option<bool> = None;
    for token in tokens {
        match token {
            Token::Word(word) => {
                if let Some(output) = target_of.take() {
                    // Writing a file is an edit the rule never names
                    // (`echo x >> .git/config` under `Bash(echo:*)`): only
                    // output thrown away keeps a line plain. Bash opens
                    // `/dev/tcp/HOST/PORT` as a socket, for reading too
                    // (`3</dev/tcp/h/p >&3` sends the output there).
                    let socket = ["/dev/tcp/", "/dev/udp/"]
                        .iter()
                        .any(|p| word.text.starts_with(p));
                    if !word.plain || socket || (output && word.text != "/dev/null") {
                        out.plain = false;
                    }
                } else {
                    words.push(word);
                }
            }
            Token::Redirect { output } => target_of = Some(output),
            Token::Op(op) => {
                // A redirection without its word is a syntax error to bash;
                // taking the next command's name for it would hide it.
                if op == ";;" || target_of.take().is_some() {
                    out.opaque = true;
                }
                finish(std::mem::take(&mut words), out, depth);
            }
        }
    }
    if target_of.is_some() {
        out.opaque = true;
    }
    finish(words, out, depth);
}
