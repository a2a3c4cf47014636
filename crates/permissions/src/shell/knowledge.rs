//! What the splitter knows about bash and the programs around it: the
//! keywords, names and assignments of the grammar, the variables that
//! change what bash runs, the wrappers that run their arguments as a
//! command (with their option grammars), the programs that run what we
//! cannot follow or never run their arguments, the builtins that run text
//! as code, and the shells. Tables only: the judging is in `judge.rs`.

/// Reserved words (and `{`, `}`, `!`) where a command starts: they run
/// nothing themselves.
pub(super) const KEYWORDS: [&str; 12] = [
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}",
];

/// A variable name: letters, digits and `_`, not starting with a digit.
pub(super) fn is_name(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with(|c: char| c.is_ascii_digit())
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `name=value`, `name+=value` or `name[sub]=value`.
pub(super) fn is_assignment(word: &str) -> bool {
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
pub(super) fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n')
}

/// An assignment bash would turn into running something we cannot see.
pub(super) fn dangerous_assignment(word: &str) -> bool {
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
pub(super) struct Grammar {
    pub(super) flags: &'static str,
    pub(super) values: &'static str,
    pub(super) long_flags: &'static [&'static str],
    pub(super) long_values: &'static [&'static str],
    pub(super) positional: usize,
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
pub(super) fn wrapper_grammar(name: &str) -> Option<Grammar> {
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
pub(super) fn optional_attached(wrapper: &str, option: char) -> bool {
    wrapper == "xargs" && matches!(option, 'i' | 'e' | 'l')
}

/// Programs that run a command we cannot follow (a string for a shell, a
/// command on another root or namespace): never judged by their words.
pub(super) const UNMODELLED_RUNNERS: [&str; 22] = [
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
pub(super) const CODE_BUILTINS: [&str; 16] = [
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
pub(super) const SUBSCRIPT_BUILTINS: [&str; 16] = [
    "declare", "typeset", "local", "export", "readonly", "read", "printf", "unset", "test", "[",
    "[[", "getopts", "wait", "shift", "unset", "let",
];

/// Shells, whose `-c` string is a command line of its own.
pub(super) const SHELLS: [&str; 10] = [
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash", "posh",
];

/// `set -o` / `shopt -s` names a `bash -o/-O` may carry without changing
/// how the script is read.
pub(super) const SAFE_SHELL_OPTIONS: [&str; 12] = [
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

/// The last component of a command word (`/bin/rm` is `rm`).
pub(super) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}
