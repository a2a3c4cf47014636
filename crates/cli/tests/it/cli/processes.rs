//! Signals and many processes: nothing left behind, descriptors within bounds.

use super::*;

#[test]
fn sigint_during_a_long_bash_call_leaves_no_child() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("sigint-marker-{}", std::process::id());
    let s = script(
        dir.path(),
        &[
            json!({"content":[tool_call("c1","bash",json!({"command": format!("bash -c 'exec -a {marker} sleep 300' & setsid bash -c 'exec -a {marker} sleep 301' & wait")}))]}),
            json!({"content":[{"type":"text","text":"never"}]}),
        ],
    );
    let mut child = agent()
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .args(["--mode", "json", "go"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pgrep = || {
        std::process::Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap()
            .stdout
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while pgrep()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "the bash call never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the agent did not exit after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1), "a cancelled run ends in an error");
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        pgrep().is_empty(),
        "survivors: {}",
        String::from_utf8_lossy(&pgrep())
    );
}

#[test]
fn sigterm_and_sighup_cancel_like_ctrl_c() {
    for (signal, code) in [
        (rustix::process::Signal::TERM, 143),
        (rustix::process::Signal::HUP, 129),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("term-marker-{}-{}", std::process::id(), code);
        let s = script(
            dir.path(),
            &[
                json!({"content":[tool_call("c1","bash",json!({"command": format!("setsid bash -c 'exec -a {marker} sleep 300' & exec -a {marker} sleep 301")}))]}),
                json!({"content":[{"type":"text","text":"never"}]}),
            ],
        );
        let mut child = agent()
            .args(["--script"])
            .arg(&s)
            .arg("--cwd")
            .arg(dir.path())
            .args(["--mode", "json", "go"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pgrep = || {
            let out = std::process::Command::new("pgrep")
                .args(["-f", &marker])
                .output()
                .unwrap()
                .stdout;
            String::from_utf8_lossy(&out).trim().to_string()
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while pgrep().lines().count() < 2 {
            assert!(Instant::now() < deadline, "the bash call never started");
            std::thread::sleep(Duration::from_millis(50));
        }
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        rustix::process::kill_process(pid, signal).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "no exit after {signal:?}");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(
            status.code() == Some(code) || status.code() == Some(1),
            "{signal:?}: {status:?}"
        );
        let mut out = String::new();
        use std::io::Read;
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        // The cancelled tool call was reported before the exit.
        assert!(out.contains("tool_execution_end"), "{out}");
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(pgrep(), "", "{signal:?} left the bash command running");
    }
}

#[test]
fn six_hundred_parallel_bash_calls_fit_in_1024_file_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let calls: Vec<Value> = (0..600)
        .map(|i| {
            tool_call(
                &format!("c{i}"),
                "bash",
                json!({"command": format!("sleep 0.1; echo {i}")}),
            )
        })
        .collect();
    let s = script(
        dir.path(),
        &[
            json!({"content": calls}),
            json!({"content":[{"type":"text","text":"done"}]}),
        ],
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 1024 && exec \"$@\"")
        .arg("sh")
        .arg(crate::bin())
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .args(["--mode", "json", "go"])
        .env(
            "CODING_AGENT_DIR",
            std::env::temp_dir().join("coding-agent-cli-test-no-such-dir"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ends: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 600);
    let failed: Vec<&Value> = ends.iter().filter(|e| e["isError"] == true).collect();
    assert!(
        failed.is_empty(),
        "{} failed, e.g. {}",
        failed.len(),
        failed[0]
    );
}
