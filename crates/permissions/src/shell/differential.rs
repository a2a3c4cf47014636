//! Each case runs through real bash in a scratch directory to show that bash
//! does run the denied command (or the expansion); the judgement must then
//! not be "allow".

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
