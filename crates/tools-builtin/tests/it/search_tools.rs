//! `grep`, `find` and `ls` on real trees.

use serde_json::json;
use test_support::tool_call::*;
use test_support::write;

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "src/main.rs",
        "fn main() {\n    println!(\"hello\");\n}\n",
    );
    write(
        d,
        "src/lib.rs",
        "pub fn hello() -> &'static str {\n    \"hello\"\n}\n",
    );
    write(d, "src/nested/deep.rs", "// hello from deep\n");
    write(d, "README.md", "# Hello project\nsay hello\n");
    write(d, ".hidden/secret.txt", "hello hidden\n");
    write(d, ".gitignore", "target/\n*.log\n");
    write(d, "target/out.txt", "hello ignored\n");
    write(d, "debug.log", "hello log\n");
    write(d, ".git/config", "hello git\n");
    write(d, "bin.dat", b"hello\x00binary");
    write(d, "sub/.ignore", "skipped.txt\n");
    write(d, "sub/skipped.txt", "hello skipped\n");
    write(d, "sub/kept.txt", "hello kept\r\n");
    dir
}

#[tokio::test]
async fn grep_honours_ignores_outside_git_and_sorts() {
    let dir = tree();
    let out = call("grep", dir.path(), json!({"pattern": "hello"})).await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        out.text,
        [
            ".hidden/secret.txt:1: hello hidden",
            "README.md:2: say hello",
            "src/lib.rs:1: pub fn hello() -> &'static str {",
            "src/lib.rs:2:     \"hello\"",
            "src/main.rs:2:     println!(\"hello\");",
            "src/nested/deep.rs:1: // hello from deep",
            "sub/kept.txt:1: hello kept",
        ]
        .join("\n")
    );
    assert!(out.result.details.is_null());

    let out = call(
        "grep",
        dir.path(),
        json!({"pattern": "HELLO", "ignoreCase": true, "glob": "*.md"}),
    )
    .await;
    assert_eq!(
        out.text,
        "README.md:1: # Hello project\nREADME.md:2: say hello"
    );

    let out = call(
        "grep",
        dir.path(),
        json!({"pattern": "fn main()", "literal": true}),
    )
    .await;
    assert_eq!(out.text, "src/main.rs:1: fn main() {");

    let out = call(
        "grep",
        dir.path(),
        json!({"pattern": "hello", "path": "src/main.rs"}),
    )
    .await;
    assert_eq!(out.text, "main.rs:2:     println!(\"hello\");");
}

#[tokio::test]
async fn grep_context_limit_and_errors() {
    let dir = tree();
    let out = call(
        "grep",
        dir.path(),
        json!({"pattern": "println", "context": 1}),
    )
    .await;
    assert_eq!(
        out.text,
        "src/main.rs-1- fn main() {\nsrc/main.rs:2:     println!(\"hello\");\nsrc/main.rs-3- }"
    );
    let out = call("grep", dir.path(), json!({"pattern": "hello", "limit": 2})).await;
    assert_eq!(
        out.text,
        ".hidden/secret.txt:1: hello hidden\nREADME.md:2: say hello\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"
    );
    assert_eq!(out.result.details["matchLimitReached"], 2);

    let out = call("grep", dir.path(), json!({"pattern": "zzz_nothing"})).await;
    assert_eq!(out.text, "No matches found");
    let out = call("grep", dir.path(), json!({"pattern": "("})).await;
    assert!(out.is_error);
    let out = call(
        "grep",
        dir.path(),
        json!({"pattern": "x", "path": "missing"}),
    )
    .await;
    assert!(out.is_error);
    assert_eq!(
        out.text,
        format!("Path not found: {}", dir.path().join("missing").display())
    );
    let out = call("grep", dir.path(), json!({"pattern": "--pre=x"})).await;
    assert_eq!(out.text, "No matches found");
}

#[tokio::test]
async fn grep_long_lines_and_byte_cap() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "long.txt",
        format!("match {}\n", "y".repeat(800)),
    );
    let out = call("grep", dir.path(), json!({"pattern": "match"})).await;
    assert!(out.text.contains("... [truncated]"));
    assert!(
        out.text
            .ends_with("[Some lines truncated to 500 chars. Use read tool to see full lines]")
    );
    assert_eq!(out.result.details["linesTruncated"], true);

    let many: String = (0..2000)
        .map(|i| format!("needle {i} {}\n", "z".repeat(100)))
        .collect();
    write(dir.path(), "many.txt", many);
    let out = call(
        "grep",
        dir.path(),
        json!({"pattern": "needle", "limit": 3000}),
    )
    .await;
    assert!(
        out.text.ends_with("\n\n[50.0KB limit reached]"),
        "{}",
        &out.text[out.text.len() - 80..]
    );
    assert!(
        out.result.details["truncation"]["truncated"]
            .as_bool()
            .unwrap()
    );
}

#[tokio::test]
async fn find_globs_and_notices() {
    let dir = tree();
    let out = call("find", dir.path(), json!({"pattern": "*.rs"})).await;
    assert_eq!(out.text, "src/lib.rs\nsrc/main.rs\nsrc/nested/deep.rs");
    let out = call("find", dir.path(), json!({"pattern": "src/*.rs"})).await;
    assert_eq!(out.text, "src/lib.rs\nsrc/main.rs");
    let out = call("find", dir.path(), json!({"pattern": "src/**/*.rs"})).await;
    assert_eq!(out.text, "src/lib.rs\nsrc/main.rs\nsrc/nested/deep.rs");
    let out = call("find", dir.path(), json!({"pattern": "nest*"})).await;
    assert_eq!(out.text, "src/nested/");
    let out = call("find", dir.path(), json!({"pattern": "*.txt"})).await;
    assert_eq!(
        out.text, ".hidden/secret.txt\nsub/kept.txt",
        "gitignored and .ignore'd files are excluded"
    );
    let out = call("find", dir.path(), json!({"pattern": "*", "limit": 3})).await;
    assert!(
        out.text
            .ends_with("\n\n[3 results limit reached. Use limit=6 for more, or refine pattern]"),
        "{}",
        out.text
    );
    assert_eq!(out.result.details["resultLimitReached"], 3);
    let out = call("find", dir.path(), json!({"pattern": "*.zzz"})).await;
    assert_eq!(out.text, "No files found matching pattern");
    let out = call("find", dir.path(), json!({"pattern": "[", "path": "src"})).await;
    assert!(out.is_error);
    let out = call("find", dir.path(), json!({"pattern": "*", "path": "nope"})).await;
    assert!(out.is_error);
    assert!(out.text.starts_with("Path not found:"));
}

#[tokio::test]
async fn ls_sorts_marks_dirs_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "b.txt", "");
    write(d, "A.txt", "");
    write(d, ".dot", "");
    write(d, "sub/x", "");
    std::os::unix::fs::symlink(d.join("sub"), d.join("link")).unwrap();
    std::os::unix::fs::symlink(d.join("nowhere"), d.join("dangling")).unwrap();
    let out = call("ls", d, json!({})).await;
    assert_eq!(out.text, ".dot\nA.txt\nb.txt\nlink/\nsub/");
    let out = call("ls", d, json!({"limit": 2})).await;
    assert_eq!(
        out.text,
        ".dot\nA.txt\n\n[2 entries limit reached. Use limit=4 for more]"
    );
    assert_eq!(out.result.details["entryLimitReached"], 2);
    let out = call("ls", d, json!({"limit": 5})).await;
    assert!(!out.text.contains("limit reached"));
    let out = call("ls", d, json!({"path": "sub/x"})).await;
    assert_eq!(
        out.text,
        format!("Not a directory: {}", d.join("sub/x").display())
    );
    let out = call("ls", d, json!({"path": "missing"})).await;
    assert_eq!(
        out.text,
        format!("Path not found: {}", d.join("missing").display())
    );
    std::fs::create_dir(d.join("empty")).unwrap();
    let out = call("ls", d, json!({"path": "empty"})).await;
    assert_eq!(out.text, "(empty directory)");
}

#[tokio::test]
async fn grep_cuts_500_characters_of_the_line_itself() {
    let dir = tempfile::tempdir().unwrap();
    let exact = format!("needle{}", "a".repeat(494));
    assert_eq!(exact.chars().count(), 500);
    let longer = format!("needle{}", "b".repeat(600));
    write(dir.path(), "src/lines.txt", format!("{exact}\n{longer}\n"));
    let out = call("grep", dir.path(), json!({"pattern": "needle"})).await;
    assert!(!out.is_error, "{}", out.text);
    let lines: Vec<&str> = out.text.lines().collect();
    // A 500-character line is shown whole, however long its prefix.
    assert_eq!(lines[0], format!("src/lines.txt:1: {exact}"));
    assert_eq!(
        lines[1],
        format!("src/lines.txt:2: needle{}... [truncated]", "b".repeat(494))
    );
    assert_eq!(out.result.details["linesTruncated"], true);
}

#[tokio::test]
async fn grep_reports_a_line_too_long_to_search() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", "needle in a normal file\n");
    // One 12 MiB line, longer than grep will hold in memory.
    let mut blob = vec![b'x'; 12 * 1024 * 1024];
    blob.extend_from_slice(b" needle\n");
    write(dir.path(), "b.min.js", blob);
    let out = call("grep", dir.path(), json!({"pattern": "needle"})).await;
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.starts_with("a.txt:1: needle"), "{}", out.text);
    assert!(
        out.text
            .ends_with("[Not searched past a line longer than 8.0MB: b.min.js]"),
        "{}",
        out.text
    );
    assert_eq!(out.result.details["linesTooLong"], json!(["b.min.js"]));
}

#[tokio::test]
async fn ignore_files_above_the_project_hide_nothing() {
    // A home directory whose ~/.gitignore ignores everything (dotfiles style),
    // holding a project that is not a git repository.
    let home = tempfile::tempdir().unwrap();
    write(home.path(), ".gitignore", "*\n");
    write(home.path(), ".ignore", "*.rs\n");
    write(
        home.path(),
        "project/src/main.rs",
        "fn main() { needle(); }\n",
    );
    write(home.path(), "project/.gitignore", "target/\n");
    write(home.path(), "project/target/out.rs", "needle\n");
    let project = home.path().join("project");
    let out = call("grep", &project, json!({"pattern": "needle"})).await;
    assert_eq!(
        out.text, "src/main.rs:1: fn main() { needle(); }",
        "{}",
        out.text
    );
    let out = call("find", &project, json!({"pattern": "**/*.rs"})).await;
    assert_eq!(out.text, "src/main.rs", "{}", out.text);
    // Searching a subdirectory outside a repository: only its own ignore files.
    let out = call("find", &project, json!({"pattern": "*.rs", "path": "src"})).await;
    assert_eq!(out.text, "main.rs", "{}", out.text);

    // Inside a repository, git's rules: the repository's .gitignore applies
    // to a search of a subdirectory, the home's does not.
    std::fs::create_dir(project.join(".git")).unwrap();
    write(home.path(), "project/.gitignore", "*.log\n");
    write(home.path(), "project/src/debug.log", "needle\n");
    let out = call(
        "grep",
        &project,
        json!({"pattern": "needle", "path": "src"}),
    )
    .await;
    assert_eq!(
        out.text, "main.rs:1: fn main() { needle(); }",
        "{}",
        out.text
    );
}

/// A FIFO, or a link to an endless device, named like an ignore file is
/// skipped: a blocking open of it would hang the walk until cancelled. A
/// sandboxed command can plant one anywhere in the workspace.
#[tokio::test]
async fn ignore_files_that_are_not_regular_files_are_skipped() {
    let dir = tree();
    let d = dir.path();
    write(d, "deep/down/found.txt", "hello fifo\n");
    let fifo = d.join("deep/.gitignore");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("/dev/zero", d.join("deep/down/.ignore")).unwrap();
    // On a thread of its own: a blocking open would stall any runtime.
    let (sent, searched) = std::sync::mpsc::channel();
    let root = d.to_path_buf();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = sent.send(runtime.block_on(async {
            let grep = call("grep", &root, json!({"pattern": "hello fifo"})).await;
            let find = call("find", &root, json!({"pattern": "**/found.txt"})).await;
            (grep, find)
        }));
    });
    let searched = searched.recv_timeout(std::time::Duration::from_secs(60)); // hang guard
    let Ok((grep, find)) = searched else {
        // Let the blocked opens return before failing.
        use std::os::unix::fs::OpenOptionsExt;
        for _ in 0..16 {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                .open(&fifo);
        }
        panic!("grep or find hung on a FIFO named .gitignore");
    };
    assert_eq!(
        grep.text, "deep/down/found.txt:1: hello fifo",
        "{}",
        grep.text
    );
    assert_eq!(find.text, "deep/down/found.txt", "{}", find.text);
    // The other ignore files still count.
    let out = call("find", d, json!({"pattern": "*.log"})).await;
    assert!(!out.text.contains("debug.log"), "{}", out.text);
}
