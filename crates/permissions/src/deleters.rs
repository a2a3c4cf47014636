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
//! | `git` with a subcommand git does not have, or `-c alias.*` / `-c include.*` | asked | an alias (from the line, the repository's config or an included file) may be `clean` |
//! | `gzip`, `bzip2`, `xz`, `lzma`, `lzip`, `pigz`, `compress` (and their `un` forms) | asked unless `-k`, `-c`, `-l` or `-t` | they replace the file they are given |
//! | `zstd`, `lz4`, `brotli` with `--rm` (`-j`), `zip -m`, `tar --remove-files`, `7z -sdel` | asked | they delete what they packed |
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
        // `git config alias.y clean && git y`: an alias from any config.
        "git" if git_subcommand(args).is_some_and(|sub| !GIT_COMMANDS.contains(&sub)) => {
            Some("git may run clean under an alias from its configuration")
        }
        "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "lzma" | "unlzma" | "lzip"
        | "pigz" | "unpigz" | "compress" | "uncompress"
            if !args.iter().any(|w| {
                matches!(
                    w.as_str(),
                    "-k" | "--keep"
                        | "-c"
                        | "--stdout"
                        | "--to-stdout"
                        | "-l"
                        | "--list"
                        | "-t"
                        | "--test"
                ) || (w.starts_with('-')
                    && !w.starts_with("--")
                    && w[1..].chars().any(|c| matches!(c, 'k' | 'c' | 'l' | 't')))
            }) =>
        {
            Some("a compressor replaces the file it is given")
        }
        "zstd" | "unzstd" | "lz4" | "brotli" if args.iter().any(|w| w == "--rm" || w == "-j") => {
            Some("--rm deletes the file it packed")
        }
        "zip"
            if args.iter().any(|w| {
                w == "-m"
                    || w == "--move"
                    || (w.starts_with('-') && !w.starts_with("--") && w.contains('m'))
            }) =>
        {
            Some("zip -m deletes what it packed")
        }
        "tar" if args.iter().any(|w| w == "--remove-files") => {
            Some("tar --remove-files deletes what it packed")
        }
        "7z" | "7za" | "7zr" if args.iter().any(|w| w == "-sdel") => {
            Some("7z -sdel deletes what it packed")
        }
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
        if value.is_some_and(|v| {
            let v = v.trim_start().to_ascii_lowercase();
            v.starts_with("alias.") || v.starts_with("include")
        }) {
            return true;
        }
    }
    false
}

/// git's own commands (porcelain and the common plumbing): a subcommand
/// outside this list may be an alias.
const GIT_COMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-ref-format",
    "checkout",
    "cherry",
    "cherry-pick",
    "citool",
    "clean",
    "clone",
    "commit",
    "commit-tree",
    "config",
    "count-objects",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fetch",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "hash-object",
    "help",
    "init",
    "instaweb",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "merge",
    "merge-base",
    "mergetool",
    "mv",
    "name-rev",
    "notes",
    "pull",
    "push",
    "range-diff",
    "rebase",
    "reflog",
    "remote",
    "repack",
    "replace",
    "request-pull",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "sparse-checkout",
    "stash",
    "status",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "update-index",
    "update-ref",
    "var",
    "verify-commit",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
    "maintenance",
    "lfs",
];

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
            "git y -fdx",
            "git -c include.path=f w",
            "gzip v",
            "xz -9 v",
            "zstd --rm v",
            "zip -m z.zip v",
            "tar --remove-files -cf t.tar v",
        ] {
            assert!(deletes_like_rm(&words(line)).is_some(), "{line}");
        }
        for line in [
            "find . -name v",
            "rsync -a src/ dst/",
            "git commit -m clean",
            "git status",
            "gzip -k v",
            "gzip -c v",
            "zstd v",
            "tar -cf t.tar v",
            "git -C clean status",
            "echo unlink",
            "mv a b",
        ] {
            assert!(deletes_like_rm(&words(line)).is_none(), "{line}");
        }
    }
}
