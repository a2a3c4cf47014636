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

const KEYWORDS: [&str; 12] = [
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}",
];

fn is_name(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with(|c: char| c.is_ascii_digit())
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let name = name.strip_suffix('+').unwrap_or(name);
            is_name(name) || subscripted_name(name)
        }
        None => false,
    }
}

/// `a[...]`: an array element, whose subscript bash evaluates (and with it
/// any `$(...)` a variable holds).
fn subscripted_name(name: &str) -> bool {
    match name.split_once('[') {
        Some((base, rest)) => is_name(base) && rest.ends_with(']'),
        None => false,
    }
}

/// Variables that change what bash itself runs or how it reads a line.
const SPECIAL_VARIABLES: [&str; 16] = [
    "PATH",
    "BASH_ENV",
    "ENV",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "IFS",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "EXECIGNORE",
    "BASH_LOADABLES_PATH",
];

/// Variables whose assigned value bash evaluates as arithmetic, where
/// `a[$(cmd)]` runs `cmd`.
const ARITHMETIC_VARIABLES: [&str; 6] = [
    "RANDOM", "SRANDOM", "HISTCMD", "OPTIND", "SECONDS", "LINENO",
];

/// A blank as bash splits words: space, tab, newline (a carriage return or
/// a no-break space is part of a word).
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n')
}

/// An assignment bash would turn into running something we cannot see.
fn dangerous_assignment(word: &str) -> bool {
    let name = word.split_once('=').map(|(n, _)| n).unwrap_or(word);
    let name = name.strip_suffix('+').unwrap_or(name);
    ARITHMETIC_VARIABLES.contains(&name)
        || subscripted_name(name)
        || SPECIAL_VARIABLES.contains(&name)
        || name.starts_with("BASH_FUNC_")
        || name.starts_with("BASH_CMDS")
        || name.starts_with("BASH_ALIASES")
        // git's configuration and helpers from the environment: aliases
        // (`alias.p=push`), `core.sshCommand`, an exec path of one's own.
        || name.starts_with("GIT_CONFIG")
        || matches!(
            name,
            "GIT_EXEC_PATH" | "GIT_SSH" | "GIT_SSH_COMMAND" | "GIT_EXTERNAL_DIFF" | "GIT_PAGER"
                | "GIT_EDITOR" | "GIT_ASKPASS" | "GIT_PROXY_COMMAND"
        )
}

/// A wrapper's option grammar: short flags, short options taking a value,
/// long flags, long options taking a value, positional words before the
/// command (`timeout DURATION`, `flock FILE`).
struct Grammar {
    flags: &'static str,
    values: &'static str,
    long_flags: &'static [&'static str],
    long_values: &'static [&'static str],
    positional: usize,
}

const fn grammar(
    flags: &'static str,
    values: &'static str,
    long_flags: &'static [&'static str],
    long_values: &'static [&'static str],
    positional: usize,
) -> Grammar {
    Grammar {
        flags,
        values,
        long_flags,
        long_values,
        positional,
    }
}

/// Wrappers that run their arguments as a command, with their options.
fn wrapper_grammar(name: &str) -> Option<Grammar> {
    Some(match name {
        "env" => grammar(
            "i0v",
            "uC",
            &["--ignore-environment", "--null", "--debug"],
            &["--unset", "--chdir"],
            0,
        ),
        "command" => grammar("pvV", "", &[], &[], 0),
        "builtin" | "nohup" => grammar("", "", &[], &[], 0),
        "exec" => grammar("cl", "a", &[], &[], 0),
        "nice" => grammar("", "n", &[], &["--adjustment"], 0),
        "timeout" => grammar(
            "v",
            "sk",
            &["--foreground", "--preserve-status", "--verbose"],
            &["--signal", "--kill-after"],
            1,
        ),
        "sudo" => grammar(
            "AbEHknPSsi",
            "ugpCDrtUTRh",
            &["--preserve-env", "--non-interactive", "--login", "--shell"],
            &["--user", "--group", "--prompt", "--chdir"],
            0,
        ),
        "doas" => grammar("ns", "uC", &[], &[], 0),
        "xargs" => grammar(
            "0prtxo",
            "adEILnPs",
            &[
                "--null",
                "--interactive",
                "--no-run-if-empty",
                "--verbose",
                "--exit",
                "--open-tty",
                "--show-limits",
            ],
            &[
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
            0,
        ),
        "stdbuf" => grammar("", "ioe", &[], &["--input", "--output", "--error"], 0),
        "setsid" => grammar("cfw", "", &["--ctty", "--fork", "--wait"], &[], 0),
        "ionice" => grammar("t", "cn", &["--ignore"], &["--class", "--classdata"], 0),
        "flock" => grammar(
            "sxenuoFv",
            "wE",
            &[
                "--shared",
                "--exclusive",
                "--nonblock",
                "--unlock",
                "--close",
                "--no-fork",
                "--verbose",
            ],
            &["--timeout", "--wait", "--conflict-exit-code"],
            1,
        ),
        "time" => grammar(
            "pavq",
            "fo",
            &["--portability", "--append", "--verbose", "--quiet"],
            &["--format", "--output"],
            0,
        ),
        _ => return None,
    })
}

/// Short options whose value is optional and only ever attached (`xargs -i`).
fn optional_attached(wrapper: &str, option: char) -> bool {
    wrapper == "xargs" && matches!(option, 'i' | 'e' | 'l')
}

/// Programs that run a command we cannot follow (a string for a shell, a
/// command on another root or namespace): never judged by their words.
const UNMODELLED_RUNNERS: [&str; 22] = [
    "watch",
    "script",
    "su",
    "runuser",
    "parallel",
    "chroot",
    "unshare",
    "nsenter",
    "strace",
    "ltrace",
    "taskset",
    "chrt",
    "prlimit",
    "systemd-run",
    "firejail",
    "bwrap",
    "pkexec",
    "valgrind",
    "busybox",
    "toybox",
    "fakeroot",
    "unbuffer",
];

/// Programs that never run a command named by their arguments: a rule's
/// word among their arguments is data (`echo rm`, `grep rm notes.txt`).
/// Programs with an option that runs one are not here (`sort
/// --compress-program`, `rg --pre`, `tee` into a process, pagers with
/// `!command`).
/// Every other program might be a wrapper we do not know (`setpriv rm v`),
/// so a later word that starts a denied command makes the line asked.
const PASSIVE_PROGRAMS: [&str; 55] = [
    "echo",
    "printf",
    "cat",
    "tac",
    "ls",
    "dir",
    "grep",
    "egrep",
    "fgrep",
    "head",
    "tail",
    "wc",
    "uniq",
    "cut",
    "paste",
    "join",
    "tr",
    "fold",
    "fmt",
    "nl",
    "column",
    "comm",
    "diff",
    "cmp",
    "test",
    "[",
    "[[",
    "true",
    "false",
    "mkdir",
    "rmdir",
    "touch",
    "stat",
    "file",
    "which",
    "type",
    "whereis",
    "dirname",
    "basename",
    "realpath",
    "readlink",
    "pwd",
    "cd",
    "date",
    "sleep",
    "id",
    "whoami",
    "uname",
    "du",
    "df",
    "base64",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
];

/// Whether `program` (a basename) never runs a command named by its
/// arguments (see [`PASSIVE_PROGRAMS`]).
pub(crate) fn leaves_arguments_alone(program: &str) -> bool {
    PASSIVE_PROGRAMS.contains(&program)
}

/// Builtins that run text as code or change how names resolve.
const CODE_BUILTINS: [&str; 16] = [
    "compgen",
    "eval",
    "source",
    ".",
    "trap",
    "let",
    "alias",
    "enable",
    "hash",
    "shopt",
    "mapfile",
    "readarray",
    "complete",
    "bind",
    "fc",
    "coproc",
];

/// Builtins that evaluate an array subscript (and with it any `$(...)` a
/// variable holds) when a word names `a[...]`.
const SUBSCRIPT_BUILTINS: [&str; 16] = [
    "declare", "typeset", "local", "export", "readonly", "read", "printf", "unset", "test", "[",
    "[[", "getopts", "wait", "shift", "unset", "let",
];

const SHELLS: [&str; 10] = [
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash", "posh",
];

/// `set -o` / `shopt -s` names a `bash -o/-O` may carry without changing
/// how the script is read.
const SAFE_SHELL_OPTIONS: [&str; 12] = [
    "errexit",
    "pipefail",
    "nounset",
    "noglob",
    "noclobber",
    "xtrace",
    "verbose",
    "nullglob",
    "failglob",
    "globstar",
    "dotglob",
    "nocaseglob",
];

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Where the command a wrapper runs starts; `None`: the wrapper's words are
/// not fully understood.
fn wrapped_command(name: &str, g: &Grammar, texts: &[String]) -> Option<usize> {
    let mut i = 1;
    while i < texts.len() {
        let w = texts[i].as_str();
        if w == "--" {
            i += 1;
            break;
        }
        if name == "env" && w == "-" {
            i += 1;
            continue;
        }
        if name == "env" && is_assignment(w) {
            i += 1;
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let key = format!("--{}", long.split('=').next().unwrap_or(""));
            if g.long_flags.contains(&key.as_str()) {
                i += 1;
            } else if g.long_values.contains(&key.as_str()) {
                i += if long.contains('=') { 1 } else { 2 };
            } else {
                return None;
            }
            continue;
        }
        if let Some(cluster) = w.strip_prefix('-').filter(|c| !c.is_empty()) {
            // `nice -5`
            if name == "nice" && cluster.chars().all(|c| c.is_ascii_digit()) {
                i += 1;
                continue;
            }
            let chars: Vec<char> = cluster.chars().collect();
            let mut k = 0;
            let mut consumed = 1;
            while k < chars.len() {
                let c = chars[k];
                if optional_attached(name, c) {
                    break;
                }
                if g.values.contains(c) {
                    if k + 1 == chars.len() {
                        consumed = 2;
                    }
                    break;
                }
                if !g.flags.contains(c) {
                    return None;
                }
                k += 1;
            }
            i += consumed;
            continue;
        }
        break;
    }
    i += g.positional;
    // `flock FILE -c 'text'`: a string for a shell.
    if name == "flock" && texts.get(i).is_some_and(|w| w == "-c" || w == "--command") {
        return None;
    }
    Some(i)
}

/// Records one simple command (and what it runs in turn).
fn finish(words: Vec<Word>, out: &mut ShellCommands, depth: usize) {
    let mut start = 0;
    while start < words.len() {
        let w = &words[start];
        if w.expanded {
            break;
        }
        if KEYWORDS.contains(&w.text.as_str()) {
            start += 1;
            continue;
        }
        if is_assignment(&w.text) {
            // An assignment is never plain; some change what bash runs.
            out.plain = false;
            // A quoted substitution's text in the value is harmless until
            // something evaluates the value as arithmetic; not judged here.
            let value = w.text.split_once('=').map_or("", |(_, v)| v);
            let literal_substitution = !w.expanded && (value.contains("$(") || value.contains('`'));
            if dangerous_assignment(&w.text) || literal_substitution {
                out.opaque = true;
            }
            start += 1;
            continue;
        }
        break;
    }
    let words = &words[start..];
    let Some(first) = words.first() else {
        return;
    };
    if first.expanded || first.glob {
        // The command name comes from an expansion or a pattern: unknown
        // until run.
        out.opaque = true;
    }
    if first.text.contains(char::is_whitespace) {
        // A program name holding a blank (`'ls /evil'`, a file the
        // repository made) reads, joined, like a command and its arguments.
        out.opaque = true;
    }
    for w in words {
        if !w.plain {
            out.plain = false;
        }
        // An option that writes a file the rule never names (`git diff
        // --output=.git/config`), like an output redirection.
        if ["--output", "--out-file", "--output-file", "--log-file"]
            .iter()
            .any(|o| w.text == *o || w.text.starts_with(&format!("{o}=")))
        {
            out.plain = false;
        }
    }
    let name = basename(&first.text).to_string();
    match name.as_str() {
        "for" | "select" => {
            out.plain = false;
            // The loop variable is assigned each item: an arithmetic or
            // special variable runs what the items hold.
            if words
                .get(1)
                .is_some_and(|v| v.expanded || dangerous_assignment(&v.text))
            {
                out.opaque = true;
            }
            return;
        }
        "case" | "function" | "((" => out.opaque = true,
        _ => {}
    }
    if CODE_BUILTINS.contains(&name.as_str()) || UNMODELLED_RUNNERS.contains(&name.as_str()) {
        out.opaque = true;
    }
    // `set` options that change how the rest of the line is read:
    // history expansion (`!!`, `^a^b`), assignments anywhere in a command
    // (`-k`), and exporting every assignment (`-a`, so a special variable
    // set by `${X:=..}` reaches a child shell).
    if name == "set"
        && words[1..].iter().any(|w| {
            let t = w.text.as_str();
            ((t.starts_with('-') || t.starts_with('+'))
                && !t.starts_with("--")
                && t[1..].contains(['H', 'k', 'a']))
                || matches!(t, "history" | "histexpand" | "keyword" | "allexport")
                || w.expanded
        })
    {
        out.opaque = true;
    }
    if SUBSCRIPT_BUILTINS.contains(&name.as_str())
        && words[1..]
            .iter()
            .any(|w| w.text.contains('[') && w.text != "[" && w.text != "[[")
    {
        out.opaque = true;
    }
    // A variable name known only when the line runs (`read "$y"`,
    // `declare "$y=1"`, `[ -v "$y" ]`) may carry a subscript bash
    // evaluates; a name these builtins assign may be a special one.
    let tests_a_name = matches!(name.as_str(), "test" | "[" | "[[")
        && words[1..]
            .iter()
            .any(|w| matches!(w.text.as_str(), "-v" | "-R"));
    if SUBSCRIPT_BUILTINS.contains(&name.as_str())
        && (!matches!(name.as_str(), "test" | "[" | "[[") || tests_a_name)
        && words[1..].iter().any(|w| {
            let named = w.text.split_once('=').map_or(w.text.as_str(), |(n, _)| n);
            (w.expanded && named.contains('$'))
                || (!w.text.starts_with('-') && dangerous_assignment(&w.text))
        })
    {
        out.opaque = true;
    }
    if matches!(
        name.as_str(),
        "declare" | "typeset" | "local" | "readonly" | "export"
    ) && words[1..]
        .iter()
        .any(|w| w.text.starts_with(['-', '+']) && w.text.contains(['i', 'n', 'a', 'A']))
    {
        out.opaque = true;
    }
    if name == "[["
        && words[1..].iter().any(|w| {
            matches!(
                w.text.as_str(),
                "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" | "-v"
            )
        })
    {
        // Arithmetic comparisons evaluate their operands as expressions.
        out.opaque = true;
    }
    if matches!(
        name.as_str(),
        "declare" | "typeset" | "local" | "readonly" | "export"
    ) && words[1..]
        .iter()
        .any(|w| is_assignment(&w.text) && dangerous_assignment(&w.text))
    {
        // `export PATH=./evil; git status` runs ./evil/git.
        out.opaque = true;
    }
    if name == "printf" && words[1..].iter().any(|w| w.text == "-v") {
        out.opaque = true;
    }
    if first.text.ends_with("()") || words.get(1).is_some_and(|w| w.text == "()") {
        out.opaque = true;
    }
    // A program handed a shell as an option's value or an argument runs
    // it on text we do not see (`sort --compress-program=sh`, `git rebase
    // --exec sh`); wrappers and shells themselves are followed below.
    if !leaves_arguments_alone(&name)
        && wrapper_grammar(&name).is_none()
        && !SHELLS.contains(&name.as_str())
        && words[1..].iter().any(|w| {
            let value = w.text.rsplit('=').next().unwrap_or(&w.text);
            SHELLS.contains(&basename(value))
        })
    {
        out.opaque = true;
    }
    // A program handed its input as a file to run (`make -f /dev/stdin`,
    // `bash /dev/stdin` is covered with the shells).
    if !leaves_arguments_alone(&name)
        && words[1..].iter().any(|w| {
            matches!(
                w.text.as_str(),
                "/dev/stdin" | "/proc/self/fd/0" | "/dev/fd/0"
            )
        })
    {
        out.opaque = true;
    }
    // A program we do not model may run a word as a command line (`sg
    // root -c '...'`, `gdb -ex 'shell ...'`): one holding shell syntax we
    // cannot resolve statically makes the line opaque.
    if !leaves_arguments_alone(&name)
        && wrapper_grammar(&name).is_none()
        && !SHELLS.contains(&name.as_str())
        && depth < MAX_DEPTH
    {
        for w in &words[1..] {
            if w.text.contains(char::is_whitespace) {
                let inner = split_commands(&w.text);
                if inner.opaque || inner.unknown_from.iter().any(Option::is_some) {
                    out.opaque = true;
                }
            }
        }
    }
    let texts: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
    out.commands.push(texts.clone());
    out.unknown_from
        .push(words.iter().position(|w| w.expanded || w.glob));

    if name == "coproc" {
        // `coproc NAME { ...; }`: the name is not a command.
        let mut i = 1;
        if texts.len() > 2 && is_name(&texts[1]) && KEYWORDS.contains(&texts[2].as_str()) {
            i = 2;
        }
        if i < texts.len() {
            finish(words[i..].to_vec(), out, depth);
        }
        return;
    }
    if let Some(g) = wrapper_grammar(&name) {
        if texts.len() > 1 {
            if name == "env" && texts[1..].iter().any(|w| dangerous_assignment(w)) {
                out.opaque = true;
            }
            match wrapped_command(&name, &g, &texts) {
                Some(i) if i < texts.len() => {
                    // xargs appends words from its input to the command:
                    // a wrapper or shell there runs whatever comes in
                    // (`echo rm v | xargs env`), and a replace string
                    // (`-I{}`) can become the program or a script.
                    if name == "xargs" {
                        let program = basename(&texts[i]);
                        let replaces = texts[1..i].iter().any(|t| {
                            t.starts_with("-I") || t.starts_with("-i") || t.starts_with("--replace")
                        });
                        if wrapper_grammar(program).is_some()
                            || SHELLS.contains(&program)
                            || UNMODELLED_RUNNERS.contains(&program)
                            || CODE_BUILTINS.contains(&program)
                            || program == "find"
                            || (replaces && texts[i].contains('{'))
                        {
                            out.opaque = true;
                        }
                    }
                    finish(words[i..].to_vec(), out, depth)
                }
                Some(_) => {}
                None => out.opaque = true,
            }
        }
        return;
    }
    if SHELLS.contains(&name.as_str()) {
        shell_command(words, out, depth);
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
                    // `-exec {} v ;` runs each file found as the program.
                    if words[i + 1].text.contains("{}") {
                        out.opaque = true;
                    }
                    finish(words[i + 1..end].to_vec(), out, depth);
                }
                i = end;
            }
            i += 1;
        }
    }
}

/// `bash [options] -c 'text' [name args]`: the text is split in turn. A
/// shell reading a file or its input, or an option that changes how it
/// reads (`--rcfile`, `-O expand_aliases`), is opaque.
fn shell_command(words: &[Word], out: &mut ShellCommands, depth: usize) {
    // Only bash's grammar is modelled: `sh` (dash here), zsh, ksh and the
    // rest read the same text otherwise (`echo x &>/dev/null rm v`).
    if basename(&words[0].text) != "bash" {
        out.opaque = true;
        return;
    }
    let mut command_mode = false;
    let mut i = 1;
    while i < words.len() {
        let w = words[i].text.as_str();
        if w == "--" || w == "-" {
            i += 1;
            break;
        }
        if w.starts_with("--") {
            match w {
                // (`--login` reads profile files from a home the line may
                // have chosen: opaque below.)
                "--noprofile" | "--norc" | "--posix" | "--verbose" | "--noediting"
                | "--restricted" => {
                    i += 1;
                    continue;
                }
                _ => {
                    out.opaque = true;
                    return;
                }
            }
        }
        if (w.starts_with('-') || w.starts_with('+')) && w.len() > 1 {
            for c in w[1..].chars() {
                match c {
                    'c' => command_mode = true,
                    'o' | 'O' => {
                        i += 1;
                        let safe = words
                            .get(i)
                            .is_some_and(|o| SAFE_SHELL_OPTIONS.contains(&o.text.as_str()));
                        if !safe {
                            out.opaque = true;
                            return;
                        }
                    }
                    // Not `-l` (profile files), `-H` (history expansion) or
                    // `-k` (assignments anywhere in a command).
                    'e' | 'u' | 'x' | 'v' | 'f' | 'h' | 'B' | 'C' | 'E' | 'P' | 'T' | 'p' | 'r'
                    | 'a' | 'b' | 'm' => {}
                    // `-s`, `-i` read commands from the input; others unknown.
                    _ => {
                        out.opaque = true;
                        return;
                    }
                }
            }
            i += 1;
            continue;
        }
        break;
    }
    if !command_mode {
        // A script file or the shell's input: not visible here.
        out.opaque = true;
        return;
    }
    match words.get(i) {
        Some(script) if !script.expanded => split_into(&script.text, out, depth + 1),
        _ => out.opaque = true,
    }
}

/// The text between an opening bracket at `open` and its match (quotes and
/// nesting respected); `None` when unbalanced.
fn matching(chars: &[char], open: usize, left: char, right: char) -> Option<usize> {
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

fn tokenize(text: &str, out: &mut ShellCommands, depth: usize) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut expanded = false;
    let mut quoted = false;
    // An unquoted glob character / `{` / leading `~` in the current word.
    let glob = std::cell::Cell::new(false);
    let brace = std::cell::Cell::new(false);
    let tilde = std::cell::Cell::new(false);
    let push_word = |tokens: &mut Vec<Token>,
                     word: &mut String,
                     in_word: &mut bool,
                     expanded: &mut bool,
                     quoted: &mut bool| {
        if *in_word {
            let text = std::mem::take(word);
            let braced = brace.get() && (text.contains(',') || text.contains(".."));
            let globbed = (glob.get() && text != "[" && text != "[[") || braced;
            // A glob at the start of a word, or after a leading `-`, can
            // expand to an option (`*` or `-*` meeting a file named
            // `--output=x`) the rule never saw. `src/*.rs` cannot.
            let leading_glob = globbed && text.starts_with(['*', '?', '[', '-']);
            tokens.push(Token::Word(Word {
                plain: !*expanded && !braced && !tilde.get() && !leading_glob,
                glob: globbed,
                expanded: *expanded,
                text,
            }));
        }
        *in_word = false;
        *expanded = false;
        *quoted = false;
        glob.set(false);
        brace.set(false);
        tilde.set(false);
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
                // (`2>&1` never comes here: the redirection takes its `&`.
                // A `&` after an escaped `\>` is an operator.)
                push_word(
                    &mut tokens,
                    &mut word,
                    &mut in_word,
                    &mut expanded,
                    &mut quoted,
                );
                let next = chars.get(i + 1).copied();
                if c == '(' && next == Some('(') {
                    // `(( expr ))`: arithmetic evaluates variables' values as
                    // expressions, `$(...)` in array subscripts included.
                    out.opaque = true;
                }
                let op = match (c, next) {
                    ('&', Some('&')) => "&&",
                    ('|', Some('|')) => "||",
                    ('|', Some('&')) => "|&",
                    (';', Some(';')) => ";;",
                    ('&', Some('>')) => {
                        // &> and &>> redirect both streams.
                        tokens.push(Token::Redirect { output: true });
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
                // `{name}<file` opens a descriptor and assigns its number to
                // `name` (`{PATH}>x` changes what later commands run);
                // `{a[sub]}<file` evaluates the subscript as arithmetic,
                // which runs any `$(...)` in it, quotes or not.
                if in_word && word.starts_with('{') && word.ends_with('}') && word.len() > 2 {
                    let name = &word[1..word.len() - 1];
                    if is_name(name) && !quoted && !expanded {
                        out.plain = false;
                        if dangerous_assignment(name) {
                            out.opaque = true;
                        }
                    } else {
                        out.opaque = true;
                    }
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
                // The operator, exactly as bash reads it: `<`, `<<`, `<<-`,
                // `<<<`, `<>`, `<&`, `>`, `>>`, `>|`, `>&`. Nothing else
                // belongs to it (`<-` reads a file named `-`).
                let len = match (c, chars.get(i + 1), chars.get(i + 2)) {
                    ('<', Some('<'), Some('<' | '-')) => 3,
                    ('<', Some('<' | '>' | '&'), _) | ('>', Some('>' | '|' | '&'), _) => 2,
                    _ => 1,
                };
                let mut j = i + len;
                let op: String = chars[i..j].iter().collect();
                if op.starts_with("<<<") {
                    // A here-string feeds data to the command: fine for a
                    // deny rule, never plain (`bash <<< 'rm x'` is opaque anyway).
                    out.plain = false;
                } else if op.starts_with("<<") {
                    // A here-document: its body is data we do not follow.
                    out.opaque = true;
                }
                // `>&2`, `<&-`, `>&2-`: the target is a descriptor (closed
                // with `-`, moved with `N-`), and the redirection is whole.
                // Only when the word is nothing else: bash takes `>&1file`
                // as a file name.
                let mut end = j;
                while end < chars.len() && chars[end].is_ascii_digit() {
                    end += 1;
                }
                if chars.get(end) == Some(&'-') {
                    end += 1;
                }
                let ends_word = chars.get(end).is_none_or(|d| {
                    is_blank(*d) || matches!(d, ';' | '&' | '|' | '(' | ')' | '<' | '>')
                });
                let fd_target = op.ends_with('&') && end > j && ends_word;
                if fd_target {
                    j = end;
                } else {
                    tokens.push(Token::Redirect {
                        output: op.contains('>'),
                    });
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
                // A line continuation vanishes: it starts no word.
                if chars.get(i + 1) != Some(&'\n') {
                    in_word = true;
                }
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some(&next) => {
                        word.push(next);
                        // An escaped character is quoted: `\2<x` is the
                        // argument `2`, not descriptor 2.
                        quoted = true;
                    }
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
                // `\'` inside `$'...'` is a quote, not the end.
                let mut j = i + 2;
                while j < chars.len() && chars[j] != '\'' {
                    j += if chars[j] == '\\' { 2 } else { 1 };
                }
                if j < chars.len() {
                    let body: String = chars[i + 2..j].iter().collect();
                    word.push_str(&ansi_c(&body));
                    i = j + 1;
                } else {
                    out.opaque = true;
                    i = chars.len();
                }
                continue;
            }
            '$' if chars.get(i + 1) == Some(&'"') => {
                // `$"..."`: a translated string; the translation, from a
                // message catalogue the repository may ship, is expanded
                // like a double-quoted string (`$(...)` in it runs).
                out.opaque = true;
                i += 1;
                continue;
            }
            '$' | '`' => {
                in_word = true;
                i = expansion(&chars, i, &mut word, &mut expanded, out, depth);
                continue;
            }
            other => {
                match other {
                    '*' | '?' | '[' => glob.set(true),
                    '{' => brace.set(true),
                    '~' if !in_word => tilde.set(true),
                    _ => {}
                }
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
        if inner.contains('\\') {
            // Backslashes inside backticks (`\``, `\$`) are unquoted in a
            // second pass we do not model.
            out.opaque = true;
        }
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
                // $(( arithmetic )): evaluates variables' values as
                // expressions, and `a[$(...)]` in them runs a command.
                out.opaque = true;
            } else {
                split_into(&inner, out, depth + 1);
            }
            *expanded = true;
            word.push_str("$(..)");
            end + 1
        }
        Some('[') => {
            // $[ arithmetic ]: the old form of $(( )).
            out.opaque = true;
            *expanded = true;
            word.push('$');
            match matching(chars, i + 1, '[', ']') {
                Some(end) => end + 1,
                None => chars.len(),
            }
        }
        Some('{') => {
            let Some(end) = matching(chars, i + 1, '{', '}') else {
                out.opaque = true;
                return chars.len();
            };
            let inner: String = chars[i + 2..end].iter().collect();
            if !simple_parameter(&inner) {
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

/// Each case runs through real bash in a scratch directory to show that bash
/// does run the denied command (or the expansion); the judgement must then
/// not be "allow".
#[cfg(test)]
mod differential {
    use std::path::Path;
    use std::process::{Command, Stdio};

    use serde_json::json;

    use super::super::{Permission, PermissionRules};

    /// The programs the cases run. bash sees a directory of links to them
    /// and nothing else on its `PATH`, and the cases name it `{BIN}`
    /// instead of the machine's `/bin`: what `{BIN}/r? v` expands to must
    /// not depend on what is installed (with ripgrep, `/bin/r?` also
    /// matches `/bin/rg`). All of them come with every Debian system.
    const PROGRAMS: [&str; 28] = [
        "bash", "cat", "dash", "env", "find", "flock", "gzip", "linux64", "ls", "mkdir", "nice",
        "nohup", "printf", "rm", "rmdir", "script", "setarch", "setpriv", "setsid", "sh", "shred",
        "sleep", "stdbuf", "timeout", "true", "truncate", "unlink", "xargs",
    ];

    /// Links the [`PROGRAMS`] found on the test's own `PATH` into `bin`.
    fn program_dir(bin: &Path) {
        std::fs::create_dir(bin).unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut missing = Vec::new();
        for name in PROGRAMS {
            match std::env::split_paths(&path)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
            {
                Some(real) => std::os::unix::fs::symlink(real, bin.join(name)).unwrap(),
                None => missing.push(name),
            }
        }
        assert!(
            missing.is_empty(),
            "the differential cases need {missing:?} on PATH"
        );
    }

    /// `command` with `{BIN}` spelled as `bin`.
    fn with_bin(command: &str, bin: &Path) -> String {
        command.replace("{BIN}", &bin.display().to_string())
    }

    /// Runs `command` with bash in a fresh directory holding `v` and
    /// `victim` (each holding `x`); true when bash removed one of them or
    /// changed what it holds.
    fn bash_removes(command: &str) -> bool {
        let dir = tempfile::tempdir().unwrap();
        for f in ["v", "victim", "lockf"] {
            std::fs::write(dir.path().join(f), "x").unwrap();
        }
        let bin = dir.path().join("bin");
        program_dir(&bin);
        // `PATH=./evil git status` runs this `git`.
        std::fs::create_dir(dir.path().join("evil")).unwrap();
        let fake_git = dir.path().join("evil/git");
        std::fs::write(&fake_git, with_bin("#!/bin/sh\n{BIN}/rm -f v\n", &bin)).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&fake_git, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let status = Command::new(bin.join("bash"))
            .arg("-c")
            .arg(with_bin(command, &bin))
            .current_dir(dir.path())
            .env("PATH", &bin)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        let _ = status;
        ["v", "victim"]
            .iter()
            .any(|f| std::fs::read(dir.path().join(f)).ok().as_deref() != Some(&b"x"[..]))
    }

    fn judge(allow: &[&str], deny: &[&str], command: &str) -> Permission {
        PermissionRules::from_lists(allow, &[], deny, Path::new("/w"))
            .unwrap()
            .decide(
                &crate::shape("bash"),
                &json!({ "command": with_bin(command, Path::new("/usr/bin")) }),
                Path::new("/w"),
            )
            .permission
    }

    /// Issue #17 item 9: allow rules are not talked around.
    #[test]
    fn allow_rules_match_only_plain_commands() {
        let cases: &[(&str, &str)] = &[
            // The examples of the review, verbatim.
            ("Bash(echo:*)", r"echo $'\'' ; rm victim #'"),
            ("Bash(echo:*)", "a='x[$(rm v)]'; echo $((a))"),
            ("Bash(echo:*)", "a='x[$(rm v)]'; echo $[a]"),
            ("Bash(echo:*)", "x='$(rm v)'; echo ${x@P}"),
            ("Bash(git status)", "PATH=./evil git status"),
            // Variants.
            ("Bash(echo:*)", r"echo $'a\'b' ; rm v #'"),
            ("Bash(echo:*)", "a='x[$(rm v)]'; echo $(( a + 1 ))"),
            ("Bash(echo:*)", "a='x[$(rm v)]'; echo ${b[a]}"),
            ("Bash(echo:*)", "a='x[$(rm v)]'; echo ${HOME:a}"),
            ("Bash(echo:*)", "x='a[$(rm v)]'; echo ${!x}"),
            ("Bash(echo:*)", "a='x[$(rm v)]'; (( a )); echo"),
            ("Bash(echo:*)", "a='x[$(rm v)]'; [[ a -eq 0 ]]; echo"),
            ("Bash(echo:*)", "a='x[$(rm v)]'; let a; echo"),
            ("Bash(echo:*)", "declare -i n; a='x[$(rm v)]'; n=a; echo"),
            ("Bash(echo:*)", "read 'b[$(rm v)]' <<< x; echo"),
            ("Bash(echo:*)", "printf -v 'b[$(rm v)]' x; echo"),
            ("Bash(echo:*)", "echo \"$(rm v)\""),
            ("Bash(echo:*)", "echo `rm v`"),
            ("Bash(cat:*)", "cat <(rm v)"),
            ("Bash(echo:*)", "x='$(rm v)'; echo \"${x@P}\""),
            ("Bash(echo:*)", "PS4='$(rm v)'; set -x; echo"),
            ("Bash(git status)", "PATH=./evil:$PATH git status"),
            ("Bash(git status)", "env PATH=./evil git status"),
            ("Bash(git status)", "PATH=./evil; git status"),
            ("Bash(git status)", "export PATH=./evil; git status"),
            ("Bash(echo:*)", "compgen -C 'rm v' x; echo"),
            ("Bash(echo:*)", "{rm,v}; echo"),
            ("Bash(echo:*)", "bash <<< 'rm v'; echo"),
            // The third review: an escaped `>` before `&`, and line
            // continuations that turn a quote into a comment or join `$`
            // to an expansion.
            ("Bash(echo:*)", r"echo \>& rm v"),
            ("Bash(echo:*)", r"echo \<& rm v"),
            ("Bash(ls:*)", r"ls \>& rm v"),
            ("Bash(npm test:*)", r"npm test \>& rm v"),
            ("Bash(echo:*)", "echo \\\n#'\nrm v\n#'"),
            ("Bash(echo:*)", "echo '$(rm v)'; echo $\\\n{_@P}"),
            ("Bash(echo:*)", "echo 'x[$(rm v)]'; echo $\\\n[_]"),
            ("Bash(echo:*)", "echo \"$\\\n(rm v)\""),
            // The fourth review: escaped characters that open nothing.
            ("Bash(echo:*)", "echo \"\\$(\" #\\\nrm v"),
            ("Bash(echo:*)", "echo \\ #'\n' \\\n#'\nrm v\n#'"),
            ("Bash(echo:*)", "echo \\; #'\n' \\\n#'\nrm v\n#'"),
            ("Bash(echo:*)", "echo \\$'a\\' \\\n#'\nrm v\n#'"),
            // The fifth review: `<&-` and `>&-` are whole redirections, so
            // the next command's name is no file name.
            ("Bash(cat:*)", "cat <&-; rm <&- -f v victim"),
            ("Bash(cat:*)", "cat <&-; sh <&- -c 'echo x; rm v'"),
            ("Bash(ls:*)", "ls 0<&- && sh <&- -c 'echo x; rm v'"),
            ("Bash(cat:*)", "cat {fd}<&-\nbash <&- -c 'echo y; rm v'"),
            ("Bash(echo:*)", "echo a >&- ; rm v"),
        ];
        let mut failures = Vec::new();
        // The sixth review: a leading glob turning a file name into an
        // option (here `git diff *` meeting a file `--output=v`).
        {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("--output=v"), "").unwrap();
            for command in [
                "git diff *",
                "git diff -*",
                "git diff --out*",
                "git diff '-'?output=v",
                "git diff $'\\x{2d}-output=v'",
            ] {
                if judge(&["Bash(git diff:*)"], &[], command) == Permission::Allow {
                    failures.push(format!("Bash(git diff:*) allowed {command}"));
                }
            }
            if judge(&["Bash(ls:*)"], &[], "ls src/*.rs") != Permission::Allow {
                failures.push("Bash(ls:*) did not allow ls src/*.rs".into());
            }
        }
        // A redirection writes a file the rule never names.
        for command in [
            "echo '[core]' >> .git/config",
            "echo x > v",
            "echo x >| v",
            "echo x 1<>v",
            "echo x &> v",
            "echo x >& v",
            "echo x >&1v",
            "echo x >&2-v",
            "echo x >>-/dev/null",
            "echo x >- /dev/null",
            "echo x >&-v",
            "cat a 3</dev/tcp/127.0.0.1/9 >&3",
            "echo x >$'/dev/nu\\U110000ll'",
            "echo x > /dev/tcp/127.0.0.1/1",
        ] {
            if judge(&["Bash(echo:*)"], &[], command) == Permission::Allow {
                failures.push(format!("Bash(echo:*) allowed {command}"));
            }
        }
        for command in [
            "git diff --output=.git/config",
            "git diff --output .git/hooks/pre-commit",
        ] {
            if judge(&["Bash(git diff:*)"], &[], command) == Permission::Allow {
                failures.push(format!("Bash(git diff:*) allowed {command}"));
            }
        }
        for command in [
            "echo x > /dev/null",
            "echo x 2>&1",
            "echo x >&2",
            "echo x 2>/dev/null",
        ] {
            if judge(&["Bash(echo:*)"], &[], command) != Permission::Allow {
                failures.push(format!("Bash(echo:*) did not allow {command}"));
            }
        }
        for (rule, command) in cases {
            if !bash_removes(command) {
                failures.push(format!("bash did not run the hidden rm: {command}"));
            }
            if judge(&[rule], &[], command) == Permission::Allow {
                failures.push(format!("{rule} allowed {command}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// Issue #17 item 10: wrappers do not hide a denied command.
    #[test]
    fn deny_rules_see_through_wrappers_or_ask() {
        let cases: &[&str] = &[
            // The examples of the review.
            "time -p rm v",
            "timeout -s KILL 5 rm v",
            "timeout -k 1 5 rm v",
            "flock -w 1 lockf rm v",
            "env -S 'rm v'",
            "env - {BIN}/rm v",
            "echo v | xargs --process-slot-var=S rm",
            "echo v | xargs --process-slot-var S rm",
            "bash -o errexit -c 'rm v'",
            "bash -O extglob -c 'rm v'",
            "bash --rcfile /dev/null -c 'rm v'",
            "bash -c -- 'rm v'",
            "coproc N { rm v; }; wait",
            "{rm,v}",
            "{BIN}/r[m] v",
            "echo rm v | sh",
            "bash <<< 'rm v'",
            "shopt -s expand_aliases\nalias x=rm\nx v",
            r"echo \>& rm v",
            "echo \\\n#'\nrm v\n#'",
            "echo \"$(echo #'\n)(echo \"; rm -f v \" # ')\"",
            "cat <&-\nrm v",
            "bash -c $'echo x\\cjrm v'",
            "r$'\\0'm v",
            "$'\\562'm v",
            "$'\\x{72}'m v",
            "bash -c $'\\x{72}m v'",
            // Variants.
            "timeout --signal=KILL 5 rm v",
            "timeout -sKILL 5 rm v",
            "timeout -- 5 rm v",
            "timeout --foreground -v 5 rm v",
            "flock lockf -c 'rm v'",
            "flock -n -w 1 lockf rm v",
            "env -u HOME -i rm v",
            "env --chdir=. rm v",
            "echo v | xargs -i rm {}",
            "printf v | xargs -0 -r rm",
            "nice -n 5 rm v",
            "nice -5 rm v",
            "nohup rm v",
            "command rm v",
            "exec rm v",
            "setsid -w rm v",
            "stdbuf -oL rm v",
            "sh -ec 'rm v'",
            "bash -xc 'rm v'",
            "bash -c 'rm \"$0\"' v",
            "echo 'rm v' | bash -s",
            "bash -O expand_aliases -c $'alias x=rm\\nx v'",
            "coproc rm v; wait",
            "{BIN}/r? v",
            "{BIN}/r[m] v",
            "x=rm; $x v",
            "\"$(echo rm)\" v",
            "eval 'rm v'",
            "echo 'rm v' > s; . ./s",
            "echo 'rm v' > s; source s",
            "echo 'rm v' > s; bash s",
            "a='x[$(rm v)]'; echo $((a))",
            r"echo $'\'' ; rm victim #'",
            "hash -p {BIN}/rm ls; ls v",
            "compgen -C 'rm v' x",
            "$\"rm\" v",
            "{fd}>/dev/null rm v",
            "echo $(echo $'\\')' ; rm v)",
            "echo `echo \\`rm v\\``",
            "r\\\nm v",
            "script -qc 'rm v' /dev/null",
        ];
        let mut failures = Vec::new();
        for command in cases {
            if !bash_removes(command) {
                failures.push(format!("bash did not run rm: {command}"));
            }
            if judge(&[], &["Bash(rm:*)"], command) == Permission::Allow {
                failures.push(format!("deny Bash(rm:*) let through {command:?}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// Programs that delete or destroy files under other names are asked
    /// while a rule guards `rm` (permissions/deleters.rs has the list and
    /// the reasons); bash shows each really does it.
    #[test]
    fn other_deleting_programs_are_asked_under_an_rm_rule() {
        let mut failures = Vec::new();
        for command in [
            "unlink v",
            "{BIN}/unlink v",
            "shred -u v",
            "shred -n 1 v",
            "truncate -s 0 v",
            "find . -name v -delete",
            "find . -maxdepth 1 -name 'v*' -delete",
            "timeout 5 unlink v",
            "setpriv unlink v",
            "setpriv find . -name v -delete",
            "setpriv shred -u v",
            "gzip v",
            "gzip -9 v",
            "echo v | xargs unlink",
            "mkdir -p d && rmdir d && unlink v",
        ] {
            if !bash_removes(command) {
                failures.push(format!("bash did not destroy v: {command}"));
            }
            for deny in ["Bash(rm:*)", "Bash(rm -rf:*)"] {
                if judge(&[], &[deny], command) == Permission::Allow {
                    failures.push(format!("deny {deny} let through {command:?}"));
                }
            }
        }
        // Judged only: rsync and git need not be installed.
        for command in [
            "rsync -a --delete src/ dst/",
            "rsync -a --remove-source-files src/ dst/",
            "git clean -fdx",
            "git -C sub clean -f",
            "setpriv git clean -fd",
            "npx unlink v",
            "git -c alias.x=clean x -fd",
            "git -c alias.x=clean -C . x -fd",
            "git config alias.y clean && git y -fdx",
            "git -c include.path=aliases w",
            "zstd --rm v",
            "tar --remove-files -cf t.tar v",
        ] {
            if judge(&[], &["Bash(rm:*)"], command) == Permission::Allow {
                failures.push(format!("deny Bash(rm:*) let through {command:?}"));
            }
        }
        // What stays allowed: the same programs reading, and no rm rule.
        for (deny, command) in [
            ("Bash(rm:*)", "find . -name v"),
            ("Bash(rm:*)", "rsync -a src/ dst/"),
            ("Bash(rm:*)", "git commit -m clean"),
            ("Bash(rm:*)", "echo unlink v"),
            ("Bash(git push:*)", "unlink v"),
        ] {
            if judge(&[], &[deny], command) != Permission::Allow {
                failures.push(format!("{deny} did not allow {command:?}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// Programs we do not know may run a later word as a command: when a
    /// deny rule's command appears there, the line is asked, not allowed.
    #[test]
    fn unknown_wrappers_do_not_hide_a_denied_command() {
        let mut failures = Vec::new();
        // util-linux is on every Debian system: checked against bash too.
        for command in ["setpriv rm v", "setarch x86_64 rm v", "linux64 rm v"] {
            if !bash_removes(command) {
                failures.push(format!("bash did not run rm: {command}"));
            }
        }
        for command in [
            "setpriv rm v",
            "setarch x86_64 rm v",
            "linux64 rm v",
            "ssh-agent rm v",
            "dbus-run-session rm v",
            "perf stat -o /dev/null rm v",
            "sg root -c 'rm v'",
            "capsh -- -c 'rm v'",
            "gdb -batch -ex 'shell rm v'",
            "npx -y rm v",
            "npm exec -- rm v",
            "timeout 5 setpriv rm v",
            "bash -c 'setpriv rm v'",
            "find . -name v -exec setpriv rm {} +",
            "some-tool --then /usr/bin/rm v",
            "git rm v",
            "setpriv sh -c 'x=rm; $x v'",
            "ssh-agent sh -c 'x=rm; $x v'",
            "sg root -c \"x=rm; \\$x v\"",
            "capsh -- -c 'x=rm; $x v'",
            "gdb -batch -ex 'shell x=rm; $x v'",
            "tar -cf /dev/null --to-command='rm v' .",
            "vim -c '!rm v' -c q",
            "ssh -o ProxyCommand='rm v' host",
            "git -c core.sshCommand='rm v' fetch",
            "echo 'x:; rm v' | make -f /dev/stdin",
        ] {
            if judge(&[], &["Bash(rm:*)"], command) == Permission::Allow {
                failures.push(format!("deny Bash(rm:*) let through {command:?}"));
            }
        }
        // Programs with an option that runs a command.
        for command in [
            "seq 9 | sed 's/.*/rm -f v/' | sort -S 64K --compress-program=sh",
            "rg --pre rm x v",
            "man -P rm ls",
            "less -o rm v",
        ] {
            if judge(&[], &["Bash(rm:*)"], command) == Permission::Allow {
                failures.push(format!("deny Bash(rm:*) let through {command:?}"));
            }
        }
        // A rule's word as data of a program that never runs it.
        for command in [
            "echo rm v",
            "grep -n rm notes.txt",
            "cat rm",
            "printf 'rm v\\n'",
        ] {
            if judge(&[], &["Bash(rm:*)"], command) != Permission::Allow {
                failures.push(format!("{command:?} is not allowed"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// Plain commands are still judged by their words.
    #[test]
    fn plain_commands_still_pass() {
        for (rule, command) in [
            ("Bash(echo:*)", "echo hello 'a b' \"c\" $'d'"),
            ("Bash(git status)", "git status"),
            ("Bash(ls:*)", "ls -la ./*.rs 2>/dev/null"),
            ("Bash(grep:*)", "grep -n 'x' a | grep -v y"),
        ] {
            assert_eq!(judge(&[rule], &[], command), Permission::Allow, "{command}");
        }
        for command in [
            "ls -la; echo $HOME",
            "git diff | cat",
            "timeout 5 cargo test",
            "for f in *.rs; do wc -l \"$f\"; done",
            "[ -f x ] && echo yes",
            "echo \"${HOME:-/tmp}\"",
            "cd src && cargo build 2>&1 | tail -n 20",
            "sed -n '1,20p' src/main.rs",
            "git log --oneline -5 -- \"$f\"",
            "timeout 60 npm test -- --watch=false",
            "find . -name '*.rs' -exec wc -l {} +",
            "export RUST_LOG=debug; cargo run",
        ] {
            assert_eq!(
                judge(&[], &["Bash(rm:*)"], command),
                Permission::Allow,
                "{command}"
            );
        }
    }
}

#[cfg(test)]
mod unknown_words {
    use std::path::Path;

    use serde_json::json;

    use super::super::{Permission, PermissionRules};

    /// What `rules` decide for the bash command `command`.
    fn bash_decision(rules: &PermissionRules, command: &str) -> Permission {
        rules
            .decide(
                &crate::shape("bash"),
                &json!({ "command": command }),
                Path::new("/w"),
            )
            .permission
    }

    #[test]
    fn an_escaped_digit_is_an_argument_not_a_descriptor() {
        // Bash reads `ls \2<x` as `ls 2` with input from x.
        let parts = crate::split_commands("ls \\2<x");
        assert_eq!(parts.lines(), ["ls 2"]);
        let parts = crate::split_commands("ls 2<x");
        assert_eq!(parts.lines(), ["ls"]);
    }

    /// The ninth review: `{var}` before a redirection assigns to `var`
    /// (a subscript runs `$(...)`), `#` inside `${...}` starts no comment,
    /// and values of arithmetic variables run substitutions.
    #[test]
    fn ninth_review_bypasses_are_asked_or_denied() {
        let allow = PermissionRules::from_lists(
            &["Bash(ls:*)", "Bash(cat:*)"],
            &[],
            &["Bash(rm:*)", "Bash(git push:*)"],
            Path::new("/w"),
        )
        .unwrap();
        let deny_only = PermissionRules::from_lists(
            &[],
            &[],
            &["Bash(rm:*)", "Bash(git push:*)"],
            Path::new("/w"),
        )
        .unwrap();
        let judge = bash_decision;
        for command in [
            "ls {a['$(touch pwned)']}<a.txt",
            "ls {a['$(rm -f victim)']}<a.txt",
            "cat {a['$(touch pwned)']}>&2",
            "ls 'b[$(git push)]'; ls {a[_]}<a.txt",
            "{ ls; } {PATH}>/dev/null; ls",
            "{ ls; } {PATH}<a.txt",
            "if ls; then ls; fi {PATH}<a.txt",
            "echo ${x:- #}; rm -f victim\n}",
            "ls ${x:- #}; rm -f victim\n}",
            "RANDOM='a[$(rm -f victim)]'",
            "OPTIND='a[$(rm -f v)]' ls",
            "x='$(rm -f v)' ls",
        ] {
            assert_ne!(judge(&allow, command), Permission::Allow, "{command}");
            assert_ne!(judge(&deny_only, command), Permission::Allow, "{command}");
        }
        // An assignment is never allowed by an allow rule; a harmless one
        // runs where no rule names anything.
        assert_eq!(judge(&allow, "ls {fd}>/dev/null"), Permission::Ask);
        assert_eq!(judge(&deny_only, "ls {fd}>/dev/null"), Permission::Allow);
        // What stays fine.
        assert_eq!(judge(&allow, "ls 2>/dev/null"), Permission::Allow);
        assert_eq!(judge(&deny_only, "echo ${x:-a}; ls"), Permission::Allow);
        assert_eq!(judge(&deny_only, "x=1 ls"), Permission::Allow);
    }

    /// The tenth review: a carriage return or no-break space is no blank
    /// to bash, a `{` inside `${...}` does not nest, backtick bodies are
    /// raw, `for`/`read` assign special variables, and a variable name
    /// known only when the line runs can carry a subscript.
    #[test]
    fn tenth_review_bypasses_are_asked_or_denied() {
        let allow = PermissionRules::from_lists(
            &["Bash(ls:*)", "Bash(cat:*)", "Bash(echo:*)"],
            &[],
            &["Bash(rm:*)", "Bash(git push:*)"],
            Path::new("/w"),
        )
        .unwrap();
        let deny_only =
            PermissionRules::from_lists(&[], &[], &["Bash(rm:*)"], Path::new("/w")).unwrap();
        let judge = bash_decision;
        for command in [
            "echo a\r#; echo \\\n#'\nrm -f victim\n#'",
            "echo a\u{a0}#; echo \\\n#'\nrm -f victim\n#'",
            "echo '$(rm -f victim)'; echo a\r# $\\\n{_@P}",
            "echo ${x:-{}; rm -f victim; echo }",
            "echo `#`; echo \\\n#'\nrm -f victim\n#'",
            "echo \"`#`\"; echo \\\n#'\nrm -f victim\n#'",
            "read RANDOM <<< 'a[$(rm -f victim)]'",
            "for RANDOM in 'a[$(rm -f victim)]'; do :; done",
            "for OPTIND in 'a[$(rm -f victim)]'; do :; done",
            "read PS4 <<< '$(rm -f victim)'; set -x; ls",
            "for PS4 in '$(rm -f victim)'; do set -x; true; done",
            "set -a; for BASH_ENV in /dev/stdin; do echo 'rm -f victim' | bash -c true; done",
            "set -a; read BASH_ENV <<< /dev/stdin; echo 'rm -f victim' | bash -c true",
            "read y <<< 'a[$(rm -f victim)]'; [ -v \"$y\" ]",
            "read y <<< 'a[$(rm -f victim)]'; read \"$y\" <<< 1",
            "read y <<< 'a[$(rm -f victim)]'; declare \"$y=1\"",
            "for y in 'a[$(rm -f victim)]'; do test -v \"$y\"; done",
        ] {
            assert_ne!(judge(&deny_only, command), Permission::Allow, "{command:?}");
            assert_ne!(judge(&allow, command), Permission::Allow, "{command:?}");
        }
        // `>&2` followed by a carriage return writes a file named `2\r`.
        for command in ["echo x >&2\r", "echo x >&1\u{a0}", "cat a.txt >&2\r"] {
            assert_eq!(judge(&allow, command), Permission::Ask, "{command:?}");
        }
        // What stays fine.
        for command in ["echo x >&2", "ls 2>/dev/null", "cat a.txt"] {
            assert_eq!(judge(&allow, command), Permission::Allow, "{command:?}");
        }
        assert_eq!(
            judge(&deny_only, "for f in a b; do echo $f; done"),
            Permission::Allow
        );
        assert_eq!(judge(&deny_only, "read -r line < a.txt"), Permission::Allow);
    }

    /// The eleventh review (deny side; the allow side held): commands from
    /// xargs' input, `find -exec {}`, non-bash shells, login shells,
    /// history expansion, `set -k`/`-a`, `${X:=..}` on a special variable,
    /// and `$"..."` translations.
    #[test]
    fn eleventh_review_bypasses_are_asked() {
        let deny_only = PermissionRules::from_lists(
            &[],
            &[],
            &["Bash(rm:*)", "Bash(git push:*)"],
            Path::new("/w"),
        )
        .unwrap();
        let judge = |c: &str| bash_decision(&deny_only, c);
        for command in [
            "echo rm v | xargs env",
            "echo rm v | xargs xargs",
            "echo rm v | xargs nohup",
            "echo rm v | xargs timeout 5",
            "echo git push --dry-run | xargs env",
            "find /usr/bin -name 'r[m]' -exec {} v \\;",
            "printf 'rm v' | xargs -I{} sh -c {}",
            "sh -c 'echo x &>/dev/null rm v'",
            "dash -c 'echo x &>/dev/null rm v'",
            "set -o history -H\necho rm v\n!!:1-2",
            "set -o history -H\necho rm v\n^echo ^",
            "set -k; echo 'rm v' > e; bash -c : BASH_ENV=./e",
            "echo 'rm v' > e; set -a; : ${BASH_ENV:=./e}; bash -c :",
            "echo 'rm v' > e; : \"${BASH_ENV:=./e}\"; bash -c :",
            "bash -c 'echo $\"hi\"'",
            "echo 'rm v' > .profile; HOME=. bash -lc :",
            "echo 'rm v' > .bash_profile; HOME=. bash --login -c :",
        ] {
            assert_ne!(judge(command), Permission::Allow, "{command:?}");
        }
        // What stays fine.
        for command in [
            "set -euo pipefail; ls",
            "echo a b | xargs echo",
            "find . -name '*.rs' -exec grep -n x {} +",
            "bash -c 'ls -la'",
            "echo ${x:=1}",
        ] {
            assert_eq!(judge(command), Permission::Allow, "{command:?}");
        }
    }

    /// git's own programs and its configuration from the environment.
    #[test]
    fn git_push_by_other_names_is_asked() {
        let r =
            PermissionRules::from_lists(&[], &[], &["Bash(git push:*)"], Path::new("/w")).unwrap();
        let judge = |c: &str| bash_decision(&r, c);
        for command in [
            "/usr/lib/git-core/git-push origin HEAD:b1",
            "GIT_CONFIG_PARAMETERS=\"'alias.p=push'\" git p origin",
            "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p origin",
            "env GIT_CONFIG_PARAMETERS=\"'alias.p=push'\" git p origin",
            "git config alias.p2 \"!git push origin HEAD:a2\" && git p2",
        ] {
            assert_ne!(judge(command), Permission::Allow, "{command}");
        }
        assert_eq!(judge("git status"), Permission::Allow);
    }

    /// Options between a program and its subcommand do not hide it.
    #[test]
    fn options_before_a_subcommand_do_not_hide_it() {
        let r = PermissionRules::from_lists(
            &[],
            &[],
            &[
                "Bash(git push:*)",
                "Bash(kubectl delete:*)",
                "Bash(docker run:*)",
                "Bash(cargo publish:*)",
                "Bash(npm publish:*)",
                "Bash(terraform apply:*)",
            ],
            Path::new("/w"),
        )
        .unwrap();
        let judge = |c: &str| bash_decision(&r, c);
        for command in [
            "git -C . push",
            "git -c k=v push origin",
            "kubectl -n prod delete pod x",
            "docker --context x run img",
            "docker container run img",
            "cargo +nightly publish",
            "npm --registry=x publish",
            "terraform -chdir=. apply",
        ] {
            assert_ne!(judge(command), Permission::Allow, "{command}");
        }
        assert_eq!(judge("git -C . status"), Permission::Allow);
        assert_eq!(judge("kubectl get pods"), Permission::Allow);
    }

    #[test]
    fn a_word_known_only_when_it_runs_asks_when_a_rule_might_match() {
        let r =
            PermissionRules::from_lists(&[], &[], &["Bash(git push:*)"], Path::new("/w")).unwrap();
        let judge = |c: &str| bash_decision(&r, c);
        assert_eq!(judge("git push origin"), Permission::Deny);
        assert_eq!(judge("sub=push; git $sub origin"), Permission::Ask);
        assert_eq!(judge("git pu* origin"), Permission::Ask);
        assert_eq!(judge("/usr/bin/git \"$sub\""), Permission::Ask);
        assert_eq!(judge("git log $range"), Permission::Allow);
        assert_eq!(judge("ls $dir"), Permission::Allow);
    }
}
