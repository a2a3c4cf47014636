//! Words known only when the command runs, and the review suites' bypasses.

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
    let r = PermissionRules::from_lists(&[], &[], &["Bash(git push:*)"], Path::new("/w")).unwrap();
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
    let r = PermissionRules::from_lists(&[], &[], &["Bash(git push:*)"], Path::new("/w")).unwrap();
    let judge = |c: &str| bash_decision(&r, c);
    assert_eq!(judge("git push origin"), Permission::Deny);
    assert_eq!(judge("sub=push; git $sub origin"), Permission::Ask);
    assert_eq!(judge("git pu* origin"), Permission::Ask);
    assert_eq!(judge("/usr/bin/git \"$sub\""), Permission::Ask);
    assert_eq!(judge("git log $range"), Permission::Allow);
    assert_eq!(judge("ls $dir"), Permission::Allow);
}
