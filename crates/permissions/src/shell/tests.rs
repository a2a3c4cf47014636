//! The splitter's own cases.

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
