//! Judging one simple command: what it runs in turn (wrappers, `bash -c`,
//! `find -exec`), and whether bash could run something we do not see
//! (opaque) or the words are anything but literal (not plain). The tables
//! it consults are in `knowledge.rs`.

use super::knowledge::{
    CODE_BUILTINS, Grammar, KEYWORDS, SAFE_SHELL_OPTIONS, SHELLS, SUBSCRIPT_BUILTINS,
    UNMODELLED_RUNNERS, basename, dangerous_assignment, is_assignment, is_name,
    leaves_arguments_alone, optional_attached, wrapper_grammar,
};
use super::{MAX_DEPTH, ShellCommands, Word, split_commands, split_into};

/// Records one simple command (and what it runs in turn).
pub(super) fn finish(words: Vec<Word>, out: &mut ShellCommands, depth: usize) {
    let start = command_start(&words, out);
    let words = &words[start..];
    let Some(first) = words.first() else {
        return;
    };
    judge_words(words, out);
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
    judge_builtins(&name, words, out);
    judge_variable_builtins(&name, words, out);
    judge_hidden_commands(&name, words, out, depth);
    let texts: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
    out.commands.push(texts.clone());
    out.unknown_from
        .push(words.iter().position(|w| w.expanded || w.glob));
    follow(&name, words, &texts, out, depth);
}

/// Where the command itself starts, after keywords and assignments (each
/// assignment judged on the way).
fn command_start(words: &[Word], out: &mut ShellCommands) -> usize {
    let mut start = 0;
    while let Some(w) = words.get(start) {
        if w.expanded {
            break;
        }
        if KEYWORDS.contains(&w.text.as_str()) {
            start += 1;
            continue;
        }
        if !is_assignment(&w.text) {
            break;
        }
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
    }
    start
}

/// The command's name and words as words: known before it runs, literal.
fn judge_words(words: &[Word], out: &mut ShellCommands) {
    let first = &words[0];
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
}

/// Builtins that run text as code or change how the rest is read, and
/// function definitions.
fn judge_builtins(name: &str, words: &[Word], out: &mut ShellCommands) {
    if CODE_BUILTINS.contains(&name) || UNMODELLED_RUNNERS.contains(&name) {
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
    if name == "printf" && words[1..].iter().any(|w| w.text == "-v") {
        out.opaque = true;
    }
    if words[0].text.ends_with("()") || words.get(1).is_some_and(|w| w.text == "()") {
        out.opaque = true;
    }
}

/// Builtins that assign or test variables: a subscript they evaluate, a
/// name known only when the line runs, a special variable, or a type
/// (`declare -i`, `-n`) that turns values into code.
fn judge_variable_builtins(name: &str, words: &[Word], out: &mut ShellCommands) {
    let declares = matches!(
        name,
        "declare" | "typeset" | "local" | "readonly" | "export"
    );
    if SUBSCRIPT_BUILTINS.contains(&name)
        && words[1..]
            .iter()
            .any(|w| w.text.contains('[') && w.text != "[" && w.text != "[[")
    {
        out.opaque = true;
    }
    // A variable name known only when the line runs (`read "$y"`,
    // `declare "$y=1"`, `[ -v "$y" ]`) may carry a subscript bash
    // evaluates; a name these builtins assign may be a special one.
    let tests_a_name = matches!(name, "test" | "[" | "[[")
        && words[1..]
            .iter()
            .any(|w| matches!(w.text.as_str(), "-v" | "-R"));
    if SUBSCRIPT_BUILTINS.contains(&name)
        && (!matches!(name, "test" | "[" | "[[") || tests_a_name)
        && words[1..].iter().any(|w| {
            let named = w.text.split_once('=').map_or(w.text.as_str(), |(n, _)| n);
            (w.expanded && named.contains('$'))
                || (!w.text.starts_with('-') && dangerous_assignment(&w.text))
        })
    {
        out.opaque = true;
    }
    if declares
        && words[1..]
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
    if declares
        && words[1..]
            .iter()
            .any(|w| is_assignment(&w.text) && dangerous_assignment(&w.text))
    {
        // `export PATH=./evil; git status` runs ./evil/git.
        out.opaque = true;
    }
}

/// Programs that may run text they are handed, which we cannot follow: a
/// shell as an option's value, their input as a file, a word holding shell
/// syntax we cannot resolve.
fn judge_hidden_commands(name: &str, words: &[Word], out: &mut ShellCommands, depth: usize) {
    let modelled =
        leaves_arguments_alone(name) || wrapper_grammar(name).is_some() || SHELLS.contains(&name);
    // A program handed a shell as an option's value or an argument runs
    // it on text we do not see (`sort --compress-program=sh`, `git rebase
    // --exec sh`); wrappers and shells themselves are followed below.
    if !modelled
        && words[1..].iter().any(|w| {
            let value = w.text.rsplit('=').next().unwrap_or(&w.text);
            SHELLS.contains(&basename(value))
        })
    {
        out.opaque = true;
    }
    // A program handed its input as a file to run (`make -f /dev/stdin`,
    // `bash /dev/stdin` is covered with the shells).
    if !leaves_arguments_alone(name)
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
    if !modelled && depth < MAX_DEPTH {
        for w in &words[1..] {
            if w.text.contains(char::is_whitespace) {
                let inner = split_commands(&w.text);
                if inner.opaque || inner.unknown_from.iter().any(Option::is_some) {
                    out.opaque = true;
                }
            }
        }
    }
}

/// What the command runs in turn: a coprocess, a wrapper's command, a
/// shell's `-c` text, `find -exec`.
fn follow(name: &str, words: &[Word], texts: &[String], out: &mut ShellCommands, depth: usize) {
    if name == "coproc" {
        // `coproc NAME { ...; }`: the name is not a command.
        let mut i = 1;
        if texts.len() > 2 && is_name(&texts[1]) && KEYWORDS.contains(&texts[2].as_str()) {
            i = 2;
        }
        if i < texts.len() {
            finish(words[i..].to_vec(), out, depth);
        }
    } else if let Some(g) = wrapper_grammar(name) {
        if texts.len() > 1 {
            follow_wrapper(name, &g, words, texts, out, depth);
        }
    } else if SHELLS.contains(&name) {
        shell_command(words, out, depth);
    } else if name == "find" {
        follow_find(words, texts, out, depth);
    }
}

/// The command a wrapper (`env`, `sudo`, `xargs`, ...) runs.
fn follow_wrapper(
    name: &str,
    g: &Grammar,
    words: &[Word],
    texts: &[String],
    out: &mut ShellCommands,
    depth: usize,
) {
    if name == "env" && texts[1..].iter().any(|w| dangerous_assignment(w)) {
        out.opaque = true;
    }
    match wrapped_command(name, g, texts) {
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

/// The commands of `find`'s `-exec`, `-execdir`, `-ok` and `-okdir`.
fn follow_find(words: &[Word], texts: &[String], out: &mut ShellCommands, depth: usize) {
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
