//! Each check fails on a planted violation.

use std::path::PathBuf;

use super::docs::{documented_paths_exist, named_paths};
use super::lengths::{MAX_LINES, file_lengths};
use super::*;

#[test]
fn a_use_alias_of_fs_or_process_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tool.rs"),
        "use std::fs;\nuse std::{\n    io,\n    process as p,\n};\nuse tokio::fs as f;\nuse std::io::Read;\nfn x() { fs::read(\"a\"); }\n",
    )
    .unwrap();
    let mut problems = Vec::new();
    operations_only(dir.path(), &mut problems).unwrap();
    let flagged = |line: &str| {
        problems
            .iter()
            .any(|p| p.contains(&format!("tool.rs:{line} ")))
    };
    assert!(
        flagged("1") && flagged("2") && flagged("6"),
        "{problems:#?}"
    );
    assert!(
        !flagged("7"),
        "std::io is not the file system: {problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("tool.rs:2 brings in process")),
        "the alias inside a group is seen: {problems:#?}"
    );
}

#[test]
fn a_dev_dependency_outside_the_table_is_caught() {
    let packages: Vec<Package> = vec![
        (
            "agent-core".into(),
            PathBuf::new(),
            vec![("coding-agent".into(), "dev".into())],
        ),
        (
            "agent-tool".into(),
            PathBuf::new(),
            vec![
                ("agent-core".into(), "normal".into()),
                ("agent-core".into(), "dev".into()),
            ],
        ),
        ("coding-agent".into(), PathBuf::new(), vec![]),
    ];
    let mut problems = Vec::new();
    dev_arrows(&packages, &[], &mut problems);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].contains("agent-core has a dev-dependency on coding-agent"));
    let mut problems = Vec::new();
    dev_arrows(
        &packages,
        &[("agent-core", &["coding-agent"])],
        &mut problems,
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn a_named_path_that_does_not_exist_is_caught() {
    let paths = named_paths(
        "see `crates/tool/src/lib.rs:12`, [x](docs/a.md#b), `crates/*/src` and `src/x.rs`",
    );
    assert_eq!(paths, ["crates/tool/src/lib.rs", "docs/a.md"]);
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("docs")).unwrap();
    std::fs::create_dir_all(root.path().join("crates/tool/src")).unwrap();
    std::fs::write(root.path().join("crates/tool/src/lib.rs"), "").unwrap();
    std::fs::write(
        root.path().join("ARCHITECTURE.md"),
        "`crates/tool/src/lib.rs` `crates/gone.rs`",
    )
    .unwrap();
    std::fs::write(root.path().join("README.md"), "[d](docs/missing.md)").unwrap();
    // Rustdoc counts; an ordinary comment and a test module do not.
    std::fs::write(
        root.path().join("crates/tool/src/doc.rs"),
        "//! See `crates/tool/src/lib.rs`.\n/// Lives in `crates/moved.rs`.\n\
         // `crates/comment.rs`\n#[cfg(test)]\n/// `crates/fixture.rs`\n",
    )
    .unwrap();
    let mut problems = Vec::new();
    documented_paths_exist(root.path(), &mut problems).unwrap();
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems.iter().any(|p| p.contains("crates/moved.rs")));
    assert!(problems.iter().any(|p| p.contains("crates/gone.rs")));
    assert!(problems.iter().any(|p| p.contains("docs/missing.md")));
}

#[test]
fn a_long_file_is_caught_and_an_exception_may_not_grow() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("crates/a/src")).unwrap();
    std::fs::write(
        root.path().join("crates/a/src/big.rs"),
        "x\n".repeat(MAX_LINES + 1),
    )
    .unwrap();
    std::fs::write(
        root.path().join("crates/a/src/ok.rs"),
        "x\n".repeat(MAX_LINES),
    )
    .unwrap();
    let mut problems = Vec::new();
    file_lengths(root.path(), &[], &mut problems).unwrap();
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].contains("crates/a/src/big.rs has 701 lines"));
    let mut problems = Vec::new();
    file_lengths(
        root.path(),
        &[("crates/a/src/big.rs", 701, "why")],
        &mut problems,
    )
    .unwrap();
    assert!(problems.is_empty());
    let mut problems = Vec::new();
    file_lengths(
        root.path(),
        &[("crates/a/src/big.rs", 700, "why")],
        &mut problems,
    )
    .unwrap();
    assert_eq!(problems.len(), 1);
    // An exception for a file that shrank, or one that is gone, is stale.
    let mut problems = Vec::new();
    file_lengths(
        root.path(),
        &[
            ("crates/a/src/big.rs", 701, "why"),
            ("crates/a/src/ok.rs", 760, "why"),
            ("crates/a/src/gone.rs", 760, "why"),
        ],
        &mut problems,
    )
    .unwrap();
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].contains("ok.rs has 700 lines: take it off"));
    assert!(problems[1].contains("gone.rs is on the list"));
}

#[test]
fn a_dependency_without_a_note_and_a_stale_note_are_caught() {
    let packages: Vec<Package> = vec![
        (
            "a".into(),
            PathBuf::new(),
            vec![
                ("b".into(), "normal".into()),
                ("serde".into(), "normal".into()),
            ],
        ),
        (
            "b".into(),
            PathBuf::new(),
            vec![("ryu".into(), "dev".into())],
        ),
    ];
    let readme = "# x\n\n## Dependencies\n\n| crate | licence |\n|---|---|\n| `serde` | MIT |\n| `gone` | MIT |\n\n## Next\n| `ryu` | in another section |\n";
    let mut problems = Vec::new();
    super::dependencies::dependency_notes(&packages, readme, &mut problems);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].starts_with("ryu is a dependency"));
    assert!(problems[1].contains("row for gone"));
}

#[test]
fn a_crate_without_a_line_count_or_with_a_stale_one_is_caught() {
    let root = tempfile::tempdir().unwrap();
    for (name, lines) in [("a", 100), ("b", 50)] {
        let src = root.path().join(name).join("src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("lib.rs"), "x\n".repeat(lines)).unwrap();
    }
    let packages: Vec<Package> = ["a", "b", "c"]
        .iter()
        .map(|n| (n.to_string(), root.path().join(n), Vec::new()))
        .collect();
    let doc = "# A\n\n## Source lines per crate\n\n| crate | lines |\n|---|---|\n| `a` | 105 |\n| `b` | 1,000 |\n";
    let mut problems = Vec::new();
    super::source_lines::check(&packages, doc, &mut problems).unwrap();
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].contains("says b has 1000 lines; it has 50"));
    assert!(problems[1].contains("no row for c (0 lines)"));
}

#[test]
fn an_elapsed_time_assertion_is_caught_unless_it_is_a_hang_guard() {
    let files = vec![(
        "t.rs".to_string(),
        [
            "assert!(start.elapsed() < Duration::from_millis(380));",
            "let fast = t.elapsed() < limit;",
            "assert!(",
            "    started.elapsed() < Duration::from_secs(5),",
            "assert!(t.elapsed() < Duration::from_secs(60)); // hang guard",
            "let took = start.elapsed(); if took > x { println!() }",
            "// assert!(t.elapsed() < d) in a comment",
        ]
        .join("\n"),
    )];
    let mut problems = Vec::new();
    super::test_rules::elapsed_assertions(&files, &mut problems);
    let lines: Vec<_> = problems
        .iter()
        .filter_map(|p| p.split(' ').next())
        .collect();
    assert_eq!(lines, ["t.rs:1", "t.rs:2", "t.rs:4"], "{problems:#?}");
}

#[test]
fn a_second_test_binary_is_caught() {
    let mut problems = Vec::new();
    super::test_rules::one_test_binary(
        &[
            ("agent-core".into(), vec!["it".into()]),
            ("agent-tool".into(), vec!["it".into(), "extra".into()]),
            ("xtask".into(), vec![]),
        ],
        &mut problems,
    );
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].starts_with("agent-tool builds 2"),
        "{problems:#?}"
    );
}

#[test]
fn json_on_the_typed_wire_is_caught() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("wire");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("body.rs"),
        "fn a() { json!({\"model\": m}) }\nfn b() { json!({\"_raw\": r}) }\n// json! in a comment\n#[cfg(test)]\nmod tests { fn c() { json!({}) } }\n",
    )
    .unwrap();
    std::fs::write(dir.join("body_tests.rs"), "fn d() { json!({}) }\n").unwrap();
    let mut problems = Vec::new();
    super::wire::typed_wire(
        root.path(),
        &["wire", "gone"],
        &[("wire/body.rs", "\"_raw\"", "read, never sent")],
        &mut problems,
    )
    .unwrap();
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].starts_with("wire/body.rs:1 "), "{problems:#?}");
    assert!(problems[1].contains("gone is named"), "{problems:#?}");
}

#[test]
fn a_crate_over_its_line_budget_is_caught() {
    let root = tempfile::tempdir().unwrap();
    let src = root.path().join("src");
    std::fs::create_dir_all(src.join("m")).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "a\nb\nc\n#[cfg(test)]\nmod tests {\n}\n",
    )
    .unwrap();
    std::fs::write(src.join("m/tests.rs"), "x\ny\nz\nw\n").unwrap();
    std::fs::write(src.join("m/mod.rs"), "d\n").unwrap();
    let packages: Vec<Package> = vec![("big".into(), root.path().to_path_buf(), vec![])];
    let mut problems = Vec::new();
    super::source_lines::budgets(&packages, &[("big", 4, "")], &mut problems).unwrap();
    assert!(
        problems.is_empty(),
        "4 lines of non-test source: {problems:#?}"
    );
    super::source_lines::budgets(&packages, &[("big", 3, ""), ("gone", 1, "")], &mut problems)
        .unwrap();
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].contains("big has 4 lines"), "{problems:#?}");
    assert!(
        problems[1].contains("gone has a line budget"),
        "{problems:#?}"
    );
}
