//! `coding-agent tool` (one call, a batch) and the demo.

use super::*;

#[test]
fn tool_command_single_and_batch() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let out = agent()
        .args(["tool", "read", "--cwd"])
        .arg(dir.path())
        .args(["--args", r#"{"path":"a.txt","limit":"1"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v,
        json!({"content":[{"type":"text","text":"one\n\n[1 more lines in file. Use offset=2 to continue.]"}],"details":null,"isError":false})
    );

    let out = agent()
        .args(["tool", "read", "--cwd"])
        .arg(dir.path())
        .args(["--args", r#"{"path":"missing"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "a failing tool still exits 0");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["isError"], true);
    assert_eq!(v["details"], json!({}));

    let cases = [
        json!({"id": 1, "tool": "ls", "args": {}, "cwd": dir.path()}),
        json!({"id": "b", "tool": "bash", "args": {"command": "sleep 10"}, "cwd": dir.path(), "cancelAfterMs": 100}),
        json!({"id": 3, "tool": "nope", "args": {}}),
        json!({"id": 4, "tool": "read"}),
    ];
    let input: String = cases.iter().map(|c| format!("{c}\n")).collect::<String>() + "{broken\n";
    let batch = dir.path().join("cases.jsonl");
    std::fs::write(&batch, input).unwrap();
    let started = Instant::now();
    let out = agent()
        .args(["tool", "--batch"])
        .arg(&batch)
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(8)); // hang guard
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[0]["content"][0]["text"], "a.txt\ncases.jsonl");
    assert_eq!(lines[1]["id"], "b");
    assert_eq!(lines[1]["isError"], true);
    assert_eq!(lines[1]["content"][0]["text"], "Command aborted");
    assert_eq!(lines[2]["content"][0]["text"], "Unknown tool name: nope");
    assert!(
        lines[3]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Validation failed for tool \"read\"")
    );
    assert_eq!(lines[4]["isError"], true);
}

#[test]
fn demo_runs_all_seven_tools() {
    let dir = tempfile::tempdir().unwrap();
    let out = agent()
        .args(["demo", "--mode", "json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut used: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_execution_start")
        .map(|e| e["toolName"].as_str().unwrap().to_string())
        .collect();
    used.sort();
    used.dedup();
    assert_eq!(
        used,
        ["bash", "edit", "find", "grep", "ls", "read", "write"]
    );
    let calc = std::fs::read_to_string(dir.path().join("src/calc.py")).unwrap();
    assert!(calc.contains("return a + b\n") && calc.contains("return a - b\n"));
    assert!(dir.path().join("CHANGELOG.md").exists());
}

/// `demo --dir` on a directory that holds files refuses, changing nothing;
/// with `--allow-non-empty` it adds its files but never overwrites one.
#[test]
fn demo_never_overwrites_an_existing_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "mine\n").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "keep\n").unwrap();
    for extra in [&[][..], &["--allow-non-empty"][..]] {
        let out = agent()
            .args(["demo", "--dir"])
            .arg(dir.path())
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.contains(&dir.path().display().to_string()),
            "{stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("README.md")).unwrap(),
            "mine\n"
        );
        assert!(
            !dir.path().join("src").exists(),
            "{extra:?}: nothing written"
        );
    }
    assert!(
        String::from_utf8_lossy(
            &agent()
                .args(["demo", "--dir"])
                .arg(dir.path())
                .output()
                .unwrap()
                .stderr
        )
        .contains("not empty")
    );
    // Beside other files, when asked.
    std::fs::remove_file(dir.path().join("README.md")).unwrap();
    let out = agent()
        .args(["demo", "--mode", "json", "--allow-non-empty", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "keep\n"
    );
    assert!(dir.path().join("CHANGELOG.md").exists());
}

#[test]
fn a_batch_line_that_is_not_utf8_gets_an_error_and_the_rest_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let mut cases = Vec::new();
    cases.extend_from_slice(br#"{"id":1,"tool":"read","args":{"path":"a.txt"}}"#);
    cases.push(b'\n');
    cases.extend_from_slice(b"{\"id\":2,\"tool\":\"read\",\"args\":{\"path\":\"\xff\xfe\"}}\n");
    cases.extend_from_slice(br#"{"id":3,"tool":"read","args":{"path":"a.txt"}}"#);
    cases.push(b'\n');
    let batch = dir.path().join("cases.jsonl");
    std::fs::write(&batch, cases).unwrap();
    let out = agent()
        .args(["tool", "--batch"])
        .arg(&batch)
        .arg("--cwd")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["isError"], false);
    assert_eq!(lines[1]["isError"], true);
    assert!(
        lines[1]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("UTF-8")
    );
    assert_eq!(lines[2]["id"], 3);
    assert_eq!(lines[2]["isError"], false);
}
