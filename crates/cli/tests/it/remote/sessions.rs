//! A remote within a session: recorded, continued, served over MCP, and never chosen by a foreign file.

use super::*;

#[test]
fn an_agent_run_records_its_remote_and_continuing_reconnects_there() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    let uri = exec_uri(&p, OTHER);
    let local = tempfile::tempdir().unwrap();
    let agent_dir = local.path().join("agent");
    let here = local.path().join("here");
    std::fs::create_dir_all(&agent_dir).unwrap();
    std::fs::create_dir_all(&here).unwrap();
    let script = |name: &str, turns: &[Value]| {
        let path = local.path().join(name);
        std::fs::write(
            &path,
            turns.iter().map(|t| format!("{t}\n")).collect::<String>(),
        )
        .unwrap();
        path
    };
    let first = script(
        "first.jsonl",
        &[
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "notes.txt"}}]}),
            json!({"content": [{"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "id -u"}}]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let run = |script: &Path, extra: &[&str]| agent_run(&agent_dir, &here, script, extra);
    let ends = run(&first, &["--remote", &uri]);
    assert_eq!(ends.len(), 2, "{ends:?}");
    assert!(ends.iter().all(|e| e["isError"] == false), "{ends:?}");
    assert!(
        ends[0]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("alpha")
    );
    assert_eq!(
        ends[1]["result"]["content"][0]["text"],
        format!("{OTHER}\n")
    );

    // The session header names the remote...
    let sessions: Vec<PathBuf> = walk_files(&agent_dir.join("sessions"));
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&sessions[0])
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["remote"], uri.as_str());

    // ...and `-c` goes back there without being told.
    let second = script(
        "second.jsonl",
        &[
            json!({"content": [{"type": "toolCall", "id": "c3", "name": "bash", "arguments": {"command": "id -u; pwd"}}]}),
            json!({"content": [{"type": "text", "text": "done"}]}),
        ],
    );
    let ends = run(&second, &["-c"]);
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(
        ends[0]["result"]["content"][0]["text"],
        format!("{OTHER}\n{}\n", p.ws.display())
    );
}

#[test]
fn the_mcp_server_serves_the_remote_tools() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    let mut child = Command::new(bin())
        .args(["mcp", "--remote", &exec_uri(&p, OTHER)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::{BufRead, Write};
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    let mut answer = |id: i64| loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server ended");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            return v;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    assert!(answer(1)["result"]["serverInfo"].is_object());
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": "id -u; pwd"}}}),
    );
    let result = answer(2);
    assert_eq!(
        result["result"]["content"][0]["text"],
        format!("{OTHER}\n{}\n", p.ws.display()),
        "{result}"
    );
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "read", "arguments": {"path": "notes.txt"}}}),
    );
    assert!(
        answer(3)["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("alpha")
    );
    // As locally, the MCP server confines its tools by default: on the
    // remote, where the remote can enforce it.
    if Path::new("/usr/bin/bwrap").exists() {
        let outside = p.home.join("MCP_OUTSIDE_WRITE");
        send(
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": format!("touch {}", outside.display())}}}),
        );
        let result = answer(4);
        assert_eq!(result["result"]["isError"], true, "{result}");
        assert!(!outside.exists());
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_session_file_from_elsewhere_cannot_choose_the_remote() {
    let root = tempfile::tempdir().unwrap();
    let mark = root.path().join("pwned");
    let planted = root.path().join("repo-session.jsonl");
    std::fs::write(
        &planted,
        format!(
            "{}\n",
            json!({"type": "session", "version": 3, "id": "0b0b0b0b-0000-4000-8000-000000000000",
                   "timestamp": "2026-01-01T00:00:00.000Z", "cwd": root.path(),
                   "remote": format!("exec:touch {}; sh", mark.display())})
        ),
    )
    .unwrap();
    let script = root.path().join("s.jsonl");
    std::fs::write(
        &script,
        format!("{}\n", json!({"content": [{"type": "text", "text": "hi"}]})),
    )
    .unwrap();
    let out = Command::new(bin())
        .env("CODING_AGENT_DIR", root.path().join("agent"))
        .arg("--cwd")
        .arg(root.path())
        .arg("--session")
        .arg(&planted)
        .arg("--script")
        .arg(&script)
        .args(["--mode", "json", "go"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!mark.exists(), "the planted remote command ran");
    assert!(stderr.contains("not one of your session files"), "{stderr}");
}

#[test]
fn the_prompt_reads_the_remote_projects_context_files_through_the_remote() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    std::fs::create_dir(p.ws.join(".git")).unwrap();
    std::fs::write(p.ws.join("AGENTS.md"), "Remote rule: zebra-crossing\n").unwrap();
    std::fs::create_dir(p.ws.join("sub")).unwrap();
    // A link out of the project is not read.
    std::os::unix::fs::symlink("/etc/passwd", p.ws.join("sub/AGENTS.md")).unwrap();
    for d in [p.ws.join(".git"), p.ws.join("AGENTS.md"), p.ws.join("sub")] {
        chown(&d, OTHER);
    }
    let uri = format!(
        "exec:cd '{}' && exec env HOME='{}' setpriv --reuid {OTHER} --regid {OTHER} --clear-groups sh",
        p.ws.join("sub").display(),
        p.home.display()
    );
    let local = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .env("CODING_AGENT_DIR", local.path().join("agent"))
        .arg("--cwd")
        .arg(local.path())
        .args(["--remote", &uri, "--print-system-prompt"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let prompt = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(prompt.contains("zebra-crossing"), "{prompt}");
    assert!(
        !prompt.contains("root:x:0:0"),
        "a link out of the project was read"
    );
    assert!(
        prompt.contains(&p.ws.join("sub").display().to_string()),
        "the remote cwd is shown"
    );
}

/// Extensions run on this machine: with `--remote`, `-e` is refused with
/// why, and the agent directory's extensions are left out with a warning.
#[test]
fn extensions_are_not_run_beside_a_remote() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    let uri = exec_uri(&p, OTHER);
    let local = tempfile::tempdir().unwrap();
    let agent_dir = local.path().join("agent");
    let here = local.path().join("here");
    std::fs::create_dir_all(agent_dir.join("extensions")).unwrap();
    std::fs::create_dir_all(&here).unwrap();
    let ext = agent_dir.join("extensions/tool.sh");
    std::fs::write(&ext, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&ext, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = local.path().join("s.jsonl");
    std::fs::write(
        &script,
        "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        Command::new(bin())
            .env("CODING_AGENT_DIR", &agent_dir)
            .arg("--cwd")
            .arg(&here)
            .arg("--script")
            .arg(&script)
            .args(["--remote", &uri])
            .args(extra)
            .args(["-p", "go"])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let refused = run(&["-e", ext.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("-e cannot be used with --remote"),
        "{stderr}"
    );
    let ran = run(&[]);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{stderr}");
    assert!(
        stderr.contains("extensions are not loaded with --remote"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&ran.stdout).trim(), "ok");
}
