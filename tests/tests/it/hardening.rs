//! Bad input for every tool, concurrency through the loop, repeated
//! cancellation. Every bad input must come back as a clear error result: never
//! a panic, a hang or a partial change.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_ai::ToolCall;
use agent_core::{AgentTool, CancellationToken, execute_tool_call};
use serde_json::{Value, json};
use test_support::agent_loop::*;
use test_support::write;

fn slow() -> bool {
    std::env::var_os("CODING_AGENT_SLOW_TESTS").is_some()
}

fn agent_tools(cwd: &Path) -> Vec<Arc<dyn AgentTool>> {
    tools_builtin::all_tools(cwd)
        .iter()
        .map(coding_agent::ToolDefinition::tool)
        .collect()
}

async fn run_tool(cwd: &Path, name: &str, args: Value) -> (String, bool) {
    let tools = agent_tools(cwd);
    let call = ToolCall::new("c", name, args);
    let cancel = CancellationToken::new();
    let fut = execute_tool_call(&tools, &call, &cancel, |_| {});
    // A hang detector, not a speed target: generous enough for a debug
    // build on a machine busy with another build.
    let (result, is_error) = tokio::time::timeout(Duration::from_secs(180), fut)
        .await
        .unwrap_or_else(|_| panic!("{name} hung"));
    (result.text_content(), is_error)
}

async fn expect_error(cwd: &Path, name: &str, args: Value) -> String {
    let (text, is_error) = run_tool(cwd, name, args.clone()).await;
    assert!(is_error, "{name} {args} should fail, got: {text}");
    assert!(!text.trim().is_empty(), "{name} {args}: empty error");
    assert!(!text.contains("panicked"), "{name} {args}: {text}");
    text
}

#[tokio::test]
async fn missing_and_mistyped_arguments() {
    let dir = tempfile::tempdir().unwrap();
    for (name, args) in [
        ("read", json!({})),
        ("read", json!({"path": ["a"]})),
        ("read", json!({"path": "a", "offset": "many"})),
        ("bash", json!({})),
        ("bash", json!({"command": {"x": 1}})),
        ("edit", json!({"path": "a"})),
        ("edit", json!({"path": "a", "edits": [{"oldText": "x"}]})),
        ("edit", json!({"path": "a", "edits": "not json"})),
        ("write", json!({"path": "a"})),
        ("grep", json!({})),
        ("grep", json!({"pattern": "x", "limit": "lots"})),
        ("find", json!({})),
        ("ls", json!({"limit": "x"})),
        ("read", json!("not an object")),
    ] {
        let text = expect_error(dir.path(), name, args).await;
        assert!(
            text.starts_with(&format!("Validation failed for tool \"{name}\"")),
            "{text}"
        );
    }
    // Extra properties pass through; numbers become strings where strings are expected.
    write(dir.path(), "5", "five\n");
    let (text, is_error) = run_tool(dir.path(), "read", json!({"path": 5, "extra": true})).await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "five\n");
}

#[tokio::test]
async fn hostile_paths_and_special_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", "alpha\n");
    std::fs::create_dir(d.join("adir")).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(d.join("pipe"))
            .status()
            .unwrap()
            .success()
    );
    for (name, args) in [
        ("read", json!({"path": "a\u{0}b"})),
        ("write", json!({"path": "a\u{0}b", "content": "x"})),
        (
            "edit",
            json!({"path": "a\u{0}b", "edits": [{"oldText": "a", "newText": "b"}]}),
        ),
        ("ls", json!({"path": "a\u{0}b"})),
        ("grep", json!({"pattern": "a", "path": "a\u{0}b"})),
        ("find", json!({"pattern": "*", "path": "a\u{0}b"})),
        ("read", json!({"path": "a.txt/b"})),
        ("write", json!({"path": "a.txt/b", "content": "x"})),
        (
            "edit",
            json!({"path": "a.txt/b", "edits": [{"oldText": "a", "newText": "b"}]}),
        ),
        ("ls", json!({"path": "a.txt"})),
        ("find", json!({"pattern": "*", "path": "a.txt"})),
        ("read", json!({"path": "adir"})),
        ("write", json!({"path": "adir", "content": "x"})),
        (
            "edit",
            json!({"path": "adir", "edits": [{"oldText": "a", "newText": "b"}]}),
        ),
        ("read", json!({"path": "pipe"})),
        ("grep", json!({"pattern": "x", "path": "pipe"})),
        (
            "edit",
            json!({"path": "pipe", "edits": [{"oldText": "a", "newText": "b"}]}),
        ),
        ("read", json!({"path": "/dev/zero"})),
        ("read", json!({"path": "/dev/urandom"})),
        ("grep", json!({"pattern": "x", "path": "/dev/zero"})),
    ] {
        expect_error(d, name, args).await;
    }
    assert_eq!(std::fs::read_to_string(d.join("a.txt")).unwrap(), "alpha\n");
    // grep over a directory holding a FIFO skips it instead of blocking.
    let (text, is_error) = run_tool(d, "grep", json!({"pattern": "alpha"})).await;
    assert!(!is_error);
    assert_eq!(text, "a.txt:1: alpha");
}

#[tokio::test]
async fn bad_patterns_limits_and_timeouts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", "alpha\n");
    expect_error(d, "grep", json!({"pattern": "(unclosed"})).await;
    expect_error(d, "grep", json!({"pattern": "a", "glob": "[z-a]"})).await;
    expect_error(d, "find", json!({"pattern": "a[b"})).await;
    expect_error(d, "find", json!({"pattern": "*", "limit": -5})).await;
    expect_error(d, "ls", json!({"limit": -1})).await;
    expect_error(
        d,
        "read",
        json!({"path": "a.txt", "offset": 1_000_000_000_000i64}),
    )
    .await;
    expect_error(d, "read", json!({"path": "a.txt", "limit": -3})).await;
    expect_error(d, "read", json!({"path": "a.txt", "offset": 1e300})).await;
    expect_error(d, "bash", json!({"command": "true", "timeout": -1})).await;
    expect_error(d, "bash", json!({"command": "true", "timeout": 1e12})).await;
    // Huge but valid limits are fine.
    let (_, is_error) = run_tool(
        d,
        "read",
        json!({"path": "a.txt", "limit": 1_000_000_000_000i64}),
    )
    .await;
    assert!(!is_error);
    let (_, is_error) = run_tool(
        d,
        "grep",
        json!({"pattern": "a", "limit": 1_000_000_000_000i64}),
    )
    .await;
    assert!(!is_error);
    // A huge context is clipped to the file.
    let (text, is_error) = run_tool(
        d,
        "grep",
        json!({"pattern": "alpha", "context": 9_000_000_000_000_000i64}),
    )
    .await;
    assert!(!is_error);
    assert_eq!(text, "a.txt:1: alpha");
    // Negative context is treated as none, negative grep limit as 1.
    let (text, _) = run_tool(
        d,
        "grep",
        json!({"pattern": "a", "context": -4, "limit": -2}),
    )
    .await;
    assert!(text.starts_with("a.txt:1: alpha"), "{text}");
}

#[tokio::test]
async fn huge_arguments_and_odd_trees() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let big = "y".repeat(50 * 1024 * 1024);
    let (text, is_error) = run_tool(d, "write", json!({"path": "big.txt", "content": big})).await;
    assert!(!is_error, "{text}");
    assert_eq!(
        std::fs::metadata(d.join("big.txt")).unwrap().len(),
        50 * 1024 * 1024
    );
    write(d, "small.txt", "small\n");
    let text = expect_error(
        d,
        "edit",
        json!({"path": "small.txt", "edits": [{"oldText": big, "newText": "x"}]}),
    )
    .await;
    assert!(text.starts_with("Could not find the exact text in small.txt."));
    drop(big);

    // A symlink loop and a ten-level .gitignore tree.
    std::fs::create_dir_all(d.join("loop")).unwrap();
    std::os::unix::fs::symlink(d.join("loop"), d.join("loop/again")).unwrap();
    let mut level = d.join("deep");
    for i in 0..10 {
        write(&level, ".gitignore", format!("ignored{i}.txt\n"));
        write(&level, &format!("ignored{i}.txt"), "needle\n");
        write(&level, &format!("kept{i}.txt"), "needle\n");
        level = level.join(format!("l{i}"));
    }
    let (text, is_error) = run_tool(d, "grep", json!({"pattern": "needle", "path": "deep"})).await;
    assert!(!is_error, "{text}");
    assert_eq!(text.lines().count(), 10, "{text}");
    assert!(!text.contains("ignored"));
    let (text, _) = run_tool(d, "find", json!({"pattern": "*.txt", "path": "deep"})).await;
    assert_eq!(text.lines().count(), 10, "{text}");
    let (text, is_error) = run_tool(d, "find", json!({"pattern": "again", "path": "loop"})).await;
    assert!(!is_error);
    assert_eq!(text, "again");
    // Invalid UTF-8 file names are shown lossily, not refused.
    use std::os::unix::ffi::OsStrExt;
    std::fs::write(
        d.join(std::ffi::OsStr::from_bytes(b"bad\xffname.txt")),
        "needle\n",
    )
    .unwrap();
    let (text, is_error) = run_tool(d, "ls", json!({})).await;
    assert!(!is_error);
    assert!(text.contains("bad\u{FFFD}name.txt"), "{text}");
}

#[tokio::test]
async fn two_hundred_edits_to_one_file_in_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (0..200).map(|i| format!("line {i:03} old\n")).collect();
    write(dir.path(), "f.txt", &lines);
    let calls: Vec<(String, String, Value)> = (0..200)
        .map(|i| {
            (
                format!("e{i}"),
                "edit".to_string(),
                json!({"path": "f.txt", "edits": [{"oldText": format!("line {i:03} old"), "newText": format!("line {i:03} new")}]}),
            )
        })
        .collect();
    let refs: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.clone()))
        .collect();
    let client = scripted(vec![test_support::agent_loop::calls(&refs), text("done")]);
    let tools = agent_tools(dir.path());
    let (rec, _) = run(client, tools, |_| {}).await;
    let failures: Vec<_> = rec.ends().into_iter().filter(|(_, _, e)| *e).collect();
    assert!(failures.is_empty(), "{:?}", failures.first());
    let expected: String = (0..200).map(|i| format!("line {i:03} new\n")).collect();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        expected
    );
}

#[tokio::test]
async fn two_hundred_writes_to_different_files_in_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let calls: Vec<(String, String, Value)> = (0..200)
        .map(|i| {
            (
                format!("w{i}"),
                "write".to_string(),
                json!({"path": format!("out/{i}.txt"), "content": format!("file {i}\n")}),
            )
        })
        .collect();
    let refs: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.clone()))
        .collect();
    let client = scripted(vec![test_support::agent_loop::calls(&refs), text("done")]);
    let (rec, _) = run(client, agent_tools(dir.path()), |_| {}).await;
    assert!(rec.ends().iter().all(|(_, _, e)| !e));
    for i in 0..200 {
        assert_eq!(
            std::fs::read_to_string(dir.path().join(format!("out/{i}.txt"))).unwrap(),
            format!("file {i}\n")
        );
    }
    // The batch ran concurrently: ends arrive in completion order, not strictly in source order.
    let starts = rec.starts();
    assert_eq!(starts.len(), 200);
}

#[tokio::test]
async fn repeated_cancellation_leaves_no_process_behind() {
    let runs = if slow() { 100 } else { 10 };
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("hardening-cancel-{}", std::process::id());
    let tools = agent_tools(dir.path());
    for i in 0..runs {
        let command = format!(
            "bash -c 'bash -c \"exec -a {marker} sleep 300\" & wait' & setsid bash -c 'exec -a {marker} sleep 301' & (exec -a {marker} sleep 302) & nohup bash -c 'exec -a {marker} sleep 303' >/dev/null 2>&1 & wait"
        );
        let call = ToolCall::new(format!("c{i}"), "bash", json!({"command": command}));
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            c.cancel();
        });
        let started = Instant::now();
        let (result, is_error) = execute_tool_call(&tools, &call, &cancel, |_| {}).await;
        assert!(is_error);
        assert!(
            result.text_content().ends_with("Command aborted"),
            "{}",
            result.text_content()
        );
        assert!(
            started.elapsed() < Duration::from_secs(3), // hang guard
            "cancel took {:?}",
            started.elapsed()
        );
        let mut survivors = Vec::new();
        for _ in 0..20 {
            survivors = std::process::Command::new("pgrep")
                .args(["-f", &marker])
                .output()
                .unwrap()
                .stdout;
            if survivors.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        assert!(
            survivors.is_empty(),
            "run {i}: survivors {}",
            String::from_utf8_lossy(&survivors)
        );
    }
}
