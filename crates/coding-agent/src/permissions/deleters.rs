//! Programs that delete or destroy files without being called `rm`.
//!
//! A user who writes `Bash(rm:*)` into a deny or ask list means "do not
//! delete my files without me", and `unlink v` deletes `v` as surely as
//! `rm v`. Rules match command text, so no rule about `rm` names these
//! programs; instead, while a deny or ask rule names `rm`, each of them is
//! asked (refused where no one can answer), never silently allowed. The
//! list, and why each entry is on it or not:
//!
//! | command | verdict | why |
//! |---|---|---|
//! | `unlink FILE` | asked | removes a file, as `rm` does |
//! | `rmdir DIR` | asked | removes directories |
//! | `shred FILE` | asked | overwrites a file's data (and removes it with `-u`) |
//! | `truncate -s N FILE` | asked | cuts a file's data away; its only job |
//! | `find ... -delete` | asked | removes every file it finds |
//! | `rsync --delete...` / `--remove-source-files` | asked | removes files at either end |
//! | `git clean` | asked | removes untracked files (`git rm` is asked already: a later word `rm`) |
//! | `find ... -exec rm`, `xargs rm` | denied | the splitter sees the `rm` they run |
//! | `mv`, `cp`, `dd`, `> FILE` | not covered | they write files: `Edit` rules and the sandbox govern writes |
//!
//! Deny lists stay a convenience, not the boundary: a script, `make` or
//! `python -c` deletes files no rule sees. The sandbox confines bash.

use super::rule::basename_of;

/// Why `words` (one simple command) deletes or destroys files the way
/// `rm` would, if it does.
pub(super) fn deletes_like_rm(words: &[String]) -> Option<&'static str> {
    let program = basename_of(words.first()?);
    let args = &words[1..];
    match program {
        "unlink" => Some("unlink removes files"),
        "rmdir" => Some("rmdir removes directories"),
        "shred" => Some("shred destroys a file's data"),
        "truncate" => Some("truncate cuts a file's data away"),
        "find" if args.iter().any(|w| w == "-delete") => Some("find -delete removes files"),
        "rsync"
            if args
                .iter()
                .any(|w| w.starts_with("--del") || w.starts_with("--remove-source-files")) =>
        {
            Some("rsync removes files with --delete or --remove-source-files")
        }
        "git" if git_subcommand(args) == Some("clean") => Some("git clean removes untracked files"),
        // `git -c alias.x=clean x`: the subcommand is whatever the alias says.
        "git" if git_defines_alias(args) => Some("git may run clean under an alias it defines"),
        _ => None,
    }
}

/// Whether a `git` command line defines an alias for itself
/// (`-c alias.x=...`, `--config-env=alias.x=VAR`).
fn git_defines_alias(args: &[String]) -> bool {
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let value = match word.as_str() {
            "-c" | "--config-env" => words.next().map(String::as_str),
            w => w
                .strip_prefix("--config-env=")
                .or_else(|| w.strip_prefix("-c")),
        };
        if value.is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("alias.")) {
            return true;
        }
    }
    false
}

/// The subcommand of a `git` command line: its first word that is neither
/// an option nor the value of one (`git -C dir -c k=v clean`).
fn git_subcommand(args: &[String]) -> Option<&str> {
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path"
            | "--config-env" => {
                words.next();
            }
            w if w.starts_with('-') => {}
            w => return Some(w),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn each_entry_and_its_look_alikes() {
        for line in [
            "unlink v",
            "/usr/bin/rmdir d",
            "shred -u v",
            "shred v",
            "truncate -s 0 v",
            "find . -name v -delete",
            "rsync -a --delete src/ dst/",
            "rsync -a --delete-after src/ dst/",
            "rsync -a --remove-source-files src/ dst/",
            "git clean -fdx",
            "git -C sub -c core.x=1 clean -f",
            "git -c alias.x=clean x -fd",
            "git -c Alias.x=clean -C . x -fd",
            "git --config-env=alias.x=V x",
        ] {
            assert!(deletes_like_rm(&words(line)).is_some(), "{line}");
        }
        for line in [
            "find . -name v",
            "rsync -a src/ dst/",
            "git commit -m clean",
            "git -C clean status",
            "echo unlink",
            "mv a b",
        ] {
            assert!(deletes_like_rm(&words(line)).is_none(), "{line}");
        }
    }
}
