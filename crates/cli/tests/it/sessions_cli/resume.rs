//! Resuming and continuing session files: torn, malformed, planted or self-parented ones.

use super::*;

#[test]
fn a_run_killed_mid_tool_is_resumed_with_a_valid_conversation() {
    let d = dirs(json!({}));
    let marker = d.root.join("started");
    let first = script(
        &d,
        "first.jsonl",
        &[
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash",
            "arguments": {"command": format!("touch {}; sleep 60", marker.display())}}]}),
        ],
    );
    let mut child = agent(&d)
        .arg("--script")
        .arg(&first)
        .args(["-p", "start the long job"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the tool never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL, mid-tool
    child.wait().unwrap();
    let files = session_files(&d);
    assert_eq!(files.len(), 1);

    let log = d.root.join("requests.jsonl");
    let second = script(
        &d,
        "second.jsonl",
        &[json!({"content": [{"type": "text", "text": "picked up"}]})],
    );
    let out = agent(&d)
        .arg("--script")
        .arg(&second)
        .arg("--script-log")
        .arg(&log)
        .args(["-c", "-p", "what happened?"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "picked up");
    let sent = &requests(&log)[0];
    assert_eq!(roles(sent), ["user", "assistant", "toolResult", "user"]);
    assert_eq!(sent[2]["isError"], true);
    assert_valid_for_providers(sent);
    // The same file went on growing.
    assert_eq!(session_files(&d), files);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains("picked up"));
}

#[test]
fn resume_by_id_and_no_session() {
    let d = dirs(json!({}));
    let one = script(
        &d,
        "one.jsonl",
        &[json!({"content": [{"type": "text", "text": "one"}]})],
    );
    let run = |extra: &[&str]| {
        agent(&d)
            .arg("--script")
            .arg(&one)
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    assert!(run(&["-p", "hello"]).status.success());
    assert!(run(&["--no-session", "-p", "unrecorded"]).status.success());
    let files = session_files(&d);
    assert_eq!(files.len(), 1);
    let id = files[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .split('_')
        .nth(1)
        .unwrap()[..8]
        .to_string();
    let log = d.root.join("resume.jsonl");
    let out = agent(&d)
        .arg("--script")
        .arg(&one)
        .arg("--script-log")
        .arg(&log)
        .args(["--resume", &id, "-p", "again"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(roles(&requests(&log)[0]), ["user", "assistant", "user"]);
    let out = agent(&d)
        .arg("--script")
        .arg(&one)
        .args(["--resume", "ffffffffff", "-p", "x"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session matches"));
}

#[test]
fn a_thousand_malformed_lines_get_parse_errors() {
    let d = dirs(json!({}));
    let s = script(&d, "s.jsonl", &[]);
    let mut rpc = Rpc::start(&d, &s);
    let garbage = [
        "not json",
        "{",
        "[]",
        "42",
        "\"text\"",
        "{\"type\":5}",
        "{\"no_type\":1}",
        "\u{2028}{}",
        "{\"type\":\"prompt\"}",
        "{\"type\":\"prompt\",\"message\":7}",
    ];
    for i in 0..1000 {
        rpc.send(garbage[i % garbage.len()]);
    }
    rpc.send(r#"{"id":"last","type":"get_state"}"#);
    let last = rpc.wait("the final answer", |v| v["id"] == "last");
    assert_eq!(last["success"], true);
    let failures = rpc
        .seen
        .iter()
        .filter(|v| v["type"] == "response" && v["success"] == false)
        .count();
    assert_eq!(failures, 1000);
    let parse = rpc.seen.iter().filter(|v| v["command"] == "parse").count();
    assert!(parse >= 600, "{parse}");
    drop(rpc.stdin.take());
    assert!(rpc.child.wait().unwrap().success());
}

#[test]
fn continue_takes_the_newest_session_even_torn_inside_a_utf8_character() {
    let d = dirs(json!({}));
    let sessions = d.root.join("sessions");
    let ok = script(
        &d,
        "ok.jsonl",
        &[json!({"content": [{"type": "text", "text": "ok"}]})],
    );
    for (prompt, age) in [("older one", -60), ("newest one", -1)] {
        let out = agent(&d)
            .arg("--session-dir")
            .arg(&sessions)
            .arg("--script")
            .arg(&ok)
            .args(["-p", prompt])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success());
        let newest = std::fs::read_dir(&sessions)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(prompt)))
            .unwrap();
        if prompt == "newest one" {
            // Killed while writing "café": the file ends inside "é".
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&newest)
                .unwrap();
            f.write_all(b"{\"type\":\"message\",\"id\":\"ffff0001\",\"message\":{\"role\":\"user\",\"content\":\"caf\xC3")
                .unwrap();
        }
        set_mtime(&newest, age);
    }
    let log = d.root.join("log.jsonl");
    let out = agent(&d)
        .arg("--session-dir")
        .arg(&sessions)
        .arg("--script")
        .arg(&ok)
        .arg("--script-log")
        .arg(&log)
        .args(["-c", "-p", "go on"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let texts = user_texts(&log);
    assert_eq!(texts, ["newest one", "go on"], "{texts:?}");
}

#[test]
fn a_self_parented_entry_reaches_the_model_once() {
    let d = dirs(json!({}));
    let sessions = d.root.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    hand_session(
        &sessions.join("cycle.jsonl"),
        "cycle-session",
        &d.ws,
        &[
            hand_user("a0000001", None, "first"),
            hand_user("a0000002", Some("a0000002"), "looped"),
        ],
    );
    let ok = script(
        &d,
        "ok.jsonl",
        &[json!({"content": [{"type": "text", "text": "ok"}]})],
    );
    let log = d.root.join("log.jsonl");
    let out = agent(&d)
        .arg("--session-dir")
        .arg(&sessions)
        .arg("--script")
        .arg(&ok)
        .arg("--script-log")
        .arg(&log)
        .args(["-c", "-p", "next"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(user_texts(&log), ["looped", "next"]);
    assert_eq!(stderr.matches("parent links").count(), 1, "{stderr}");
}

#[test]
fn continue_never_resumes_a_session_another_user_planted() {
    use std::os::unix::fs::PermissionsExt;
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping: this case needs root to act as two users");
        return;
    }
    let chmod = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    // As the victim (an unprivileged uid) and as root (CI's own user).
    for victim in [Some(VICTIM), None] {
        let root = tempfile::tempdir().unwrap();
        let base = root.path();
        chmod(base, 0o755);
        let bin = base.join("coding-agent");
        std::fs::copy(crate::bin(), &bin).unwrap();
        chmod(&bin, 0o755);
        let home = base.join("home");
        let ws = base.join("ws");
        let shared = base.join("shared");
        for dir in [&home, &ws, &shared] {
            std::fs::create_dir(dir).unwrap();
        }
        chmod(&shared, 0o777); // both users can write here
        let victim_uid = victim.unwrap_or(0);
        std::os::unix::fs::chown(&home, Some(victim_uid), Some(victim_uid)).unwrap();
        let ok = base.join("ok.jsonl");
        std::fs::write(&ok, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}\n").unwrap();
        chmod(&ok, 0o644);
        let run = |args: &[&str], log: Option<&Path>| {
            let mut c = as_user(&bin, victim);
            c.env("CODING_AGENT_DIR", &home)
                .env("HOME", &home)
                .arg("--cwd")
                .arg(&ws)
                .arg("--session-dir")
                .arg(&shared)
                .arg("--script")
                .arg(&ok);
            if let Some(log) = log {
                c.arg("--script-log").arg(log);
            }
            let out = c.args(args).stdin(Stdio::null()).output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        run(&["-p", "mine"], None);
        let own: Vec<PathBuf> = std::fs::read_dir(&shared)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(own.len(), 1);
        set_mtime(&own[0], -60);

        // Another user's file, newer than ours.
        let planted = shared.join("2026-01-01T00-00-00-000Z_planted.jsonl");
        hand_session(
            &planted,
            "planted",
            &ws,
            &[hand_user("b0000001", None, "PLANTED instructions")],
        );
        std::os::unix::fs::chown(&planted, Some(INTRUDER), Some(INTRUDER)).unwrap();
        chmod(&planted, 0o666);
        set_mtime(&planted, 3600);
        // And a file of ours that anyone may have written to.
        let open_to_all = shared.join("2026-01-01T00-00-01-000Z_open.jsonl");
        hand_session(
            &open_to_all,
            "open-to-all",
            &ws,
            &[hand_user("c0000001", None, "TAMPERED text")],
        );
        std::os::unix::fs::chown(&open_to_all, Some(victim_uid), Some(victim_uid)).unwrap();
        chmod(&open_to_all, 0o666);
        set_mtime(&open_to_all, 1800);
        let planted_before = std::fs::read(&planted).unwrap();
        let open_before = std::fs::read(&open_to_all).unwrap();

        let log = home.join("log.jsonl");
        run(&["-c", "-p", "again"], Some(&log));
        let texts = user_texts(&log);
        assert_eq!(texts, ["mine", "again"], "victim {victim:?}: {texts:?}");
        assert_eq!(std::fs::read(&planted).unwrap(), planted_before);
        assert_eq!(std::fs::read(&open_to_all).unwrap(), open_before);
        assert!(std::fs::read_to_string(&own[0]).unwrap().contains("again"));

        // Named explicitly, another user's file is read but never appended to.
        if victim.is_some() {
            run(
                &["--session", planted.to_str().unwrap(), "-p", "more"],
                None,
            );
            assert_eq!(std::fs::read(&planted).unwrap(), planted_before);
        }
    }
}

/// The thinking level a session ran at is recorded, and a continued
/// session goes on at it; `--thinking` on the continuing run wins.
#[test]
fn a_continued_session_keeps_its_thinking_level() {
    let d = dirs(json!({}));
    let s = script(
        &d,
        "ok.jsonl",
        &[json!({"content": [{"type": "text", "text": "ok"}]})],
    );
    let model = ["--model", "anthropic/claude-sonnet-4-5"];
    let out = agent(&d)
        .arg("--script")
        .arg(&s)
        .args(model)
        .args(["--thinking", "high", "-p", "hello"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = session_files(&d);
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|e| e["type"] == "thinking_level_change" && e["thinkingLevel"] == "high"),
        "{text}"
    );
    let state_of = |extra: &[&str]| {
        let args: Vec<&std::ffi::OsStr> = ["-c"]
            .iter()
            .chain(&model)
            .chain(extra)
            .map(std::ffi::OsStr::new)
            .collect();
        let mut rpc = Rpc::start_with(&d, &s, &args);
        rpc.send(r#"{"id":1,"type":"get_state"}"#);
        rpc.response(1)["data"]["thinkingLevel"].clone()
    };
    assert_eq!(state_of(&[]), "high");
    assert_eq!(state_of(&["--thinking", "low"]), "low");
}
