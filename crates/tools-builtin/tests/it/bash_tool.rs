//! `bash` with real processes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_core::{AgentToolResult, CancellationToken, ToolUpdateSink};
use agent_tool::ToolSettings;
use serde_json::json;
use test_support::tool_call::*;

#[tokio::test]
async fn output_is_verbatim_and_merged() {
    let dir = tempfile::tempdir().unwrap();
    let out = call("bash", dir.path(), json!({"command": "echo hi"})).await;
    assert!(!out.is_error);
    assert_eq!(out.text, "hi\n");
    assert!(out.result.details.is_null());

    let out = call(
        "bash",
        dir.path(),
        json!({"command": "echo out; echo err >&2; echo out2"}),
    )
    .await;
    assert_eq!(out.text, "out\nerr\nout2\n");

    let out = call("bash", dir.path(), json!({"command": "true"})).await;
    assert_eq!(out.text, "(no output)");

    let out = call("bash", dir.path(), json!({"command": "pwd"})).await;
    assert_eq!(
        out.text.trim(),
        dir.path().canonicalize().unwrap().display().to_string()
    );
}

#[tokio::test]
async fn exit_codes_are_errors_with_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = call("bash", dir.path(), json!({"command": "echo hi; exit 3"})).await;
    assert!(out.is_error);
    assert_eq!(out.text, "hi\n\n\nCommand exited with code 3");
    let out = call("bash", dir.path(), json!({"command": "exit 1"})).await;
    assert_eq!(out.text, "(no output)\n\nCommand exited with code 1");
}

#[tokio::test]
async fn timeout_kills_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = call(
        "bash",
        dir.path(),
        json!({"command": "echo start; sleep 30", "timeout": 0.5}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10)); // hang guard
    assert!(out.is_error);
    assert_eq!(out.text, "start\n\n\nCommand timed out after 0.5 seconds");

    let out = call(
        "bash",
        dir.path(),
        json!({"command": "sleep 30", "timeout": 1}),
    )
    .await;
    assert_eq!(out.text, "Command timed out after 1 seconds");

    let out = call(
        "bash",
        dir.path(),
        json!({"command": "echo x", "timeout": -1}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.text.starts_with("Invalid timeout"));

    // The settings' default applies when no timeout is passed.
    let tool = tools_builtin::tool_by_name("bash", dir.path()).unwrap();
    let out = call_with(
        &tool,
        dir.path(),
        json!({"command": "sleep 30"}),
        ToolSettings::from_value(json!({"bashTimeoutSeconds": 0.3})),
        CancellationToken::new(),
        ToolUpdateSink::noop(),
    )
    .await;
    assert_eq!(out.text, "Command timed out after 0.3 seconds");
}

#[tokio::test]
async fn cancel_kills_the_whole_group_and_escaped_children() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cancel-marker-{}", std::process::id());
    let tool = tools_builtin::tool_by_name("bash", dir.path()).unwrap();
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        c.cancel();
    });
    let command = format!(
        "sleep 300 & setsid bash -c 'exec -a {marker} sleep 301' & (exec -a {marker} sleep 302) & echo started; wait"
    );
    let started = Instant::now();
    let out = call_with(
        &tool,
        dir.path(),
        json!({"command": command}),
        ToolSettings::default(),
        cancel,
        ToolUpdateSink::noop(),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(5)); // hang guard
    assert!(out.is_error);
    assert_eq!(out.text, "started\n\n\nCommand aborted");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ps = std::process::Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        ps.stdout.is_empty(),
        "survivors: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
}

#[tokio::test]
async fn background_child_holding_the_pipe_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = call(
        "bash",
        dir.path(),
        json!({"command": "(sleep 5; echo late) & echo now"}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(3), // hang guard
        "waited for the background child"
    );
    assert!(!out.is_error);
    assert_eq!(out.text, "now\n");
}

#[tokio::test]
async fn long_output_keeps_the_tail_and_saves_everything() {
    let dir = tempfile::tempdir().unwrap();
    let updates: Arc<Mutex<Vec<AgentToolResult>>> = Default::default();
    let u = updates.clone();
    let sink = ToolUpdateSink::new(move |r| u.lock().unwrap().push(r));
    let tool = tools_builtin::tool_by_name("bash", dir.path()).unwrap();
    let out = call_with(
        &tool,
        dir.path(),
        json!({"command": "seq 1 5000"}),
        ToolSettings::default(),
        CancellationToken::new(),
        sink,
    )
    .await;
    assert!(!out.is_error);
    let path = out.result.details["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        out.text.ends_with(&format!(
            "5000\n\n[Showing lines 3001-5000 of 5000. Full output: {path}]"
        )),
        "{}",
        &out.text[out.text.len() - 120..]
    );
    assert!(out.text.starts_with("3001\n"));
    let saved = std::fs::read_to_string(&path).unwrap();
    assert_eq!(saved.lines().count(), 5000);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    std::fs::remove_file(&path).unwrap();
    assert_eq!(out.result.details["truncation"]["truncatedBy"], "lines");
    {
        let updates = updates.lock().unwrap();
        assert!(updates[0].content.is_empty(), "first update is empty");
        assert!(updates.len() >= 2);
    }

    // A single line over the byte limit.
    let out = call(
        "bash",
        dir.path(),
        json!({"command": "head -c 60000 /dev/zero | tr '\\0' x"}),
    )
    .await;
    let path = out.result.details["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        out.text.ends_with(&format!(
            "[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {path}]"
        )),
        "{}",
        &out.text[out.text.len() - 120..]
    );
    std::fs::remove_file(&path).unwrap();
}

#[tokio::test]
async fn prefix_shell_path_and_spawn_hook() {
    let dir = tempfile::tempdir().unwrap();
    let tool = tools_builtin::tool_by_name("bash", dir.path()).unwrap();
    let out = call_with(
        &tool,
        dir.path(),
        json!({"command": "echo $GREETING"}),
        ToolSettings::from_value(json!({"shellCommandPrefix": "export GREETING=hello"})),
        CancellationToken::new(),
        ToolUpdateSink::noop(),
    )
    .await;
    assert_eq!(out.text, "hello\n");

    let out = call_with(
        &tool,
        dir.path(),
        json!({"command": "echo x"}),
        ToolSettings::from_value(json!({"shellPath": "/no/such/shell"})),
        CancellationToken::new(),
        ToolUpdateSink::noop(),
    )
    .await;
    assert!(out.is_error);
    assert_eq!(out.text, "Custom shell path not found: /no/such/shell");

    let hooked = tools_builtin::ToolSet::new(dir.path())
        .bash_options(tools_builtin::BashOptions {
            spawn_hook: Some(Arc::new(|mut ctx: tools_builtin::SpawnContext| {
                ctx.command = format!("echo rewritten: {}", ctx.command);
                ctx.env.push(("HOOKED".into(), "yes".into()));
                ctx
            })),
            ..Default::default()
        })
        .tool("bash")
        .unwrap();
    let out = call_with(
        &hooked,
        dir.path(),
        json!({"command": "$HOOKED"}),
        ToolSettings::default(),
        CancellationToken::new(),
        ToolUpdateSink::noop(),
    )
    .await;
    assert_eq!(out.text, "rewritten: yes\n");
}

#[tokio::test]
async fn missing_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let out = call("bash", &gone, json!({"command": "echo x"})).await;
    assert!(out.is_error);
    assert_eq!(
        out.text,
        format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            gone.display()
        )
    );
}

#[tokio::test]
async fn huge_or_tiny_timeouts_from_settings_or_arguments_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let tool = tools_builtin::tool_by_name("bash", dir.path()).unwrap();
    let out = call_with(
        &tool,
        dir.path(),
        json!({"command": "echo ok"}),
        ToolSettings::from_value(json!({"bashTimeoutSeconds": 1e20})),
        CancellationToken::new(),
        ToolUpdateSink::noop(),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "ok\n");
    let out = call(
        "bash",
        dir.path(),
        json!({"command": "sleep 1", "timeout": 1e-300}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.text.ends_with("Command timed out after 1e-300 seconds"),
        "{}",
        out.text
    );
}

fn survivors(marker: &str) -> String {
    let ps = std::process::Command::new("pgrep")
        .args(["-f", marker])
        .output()
        .unwrap();
    String::from_utf8_lossy(&ps.stdout).trim().to_string()
}

#[tokio::test]
async fn a_chatty_background_child_does_not_hold_the_call_open() {
    let dir = tempfile::tempdir().unwrap();
    let tool = tools_builtin::tool_by_name("bash", dir.path()).unwrap();
    let started = Instant::now();
    // Timeout 0: without the bounded drain this would never return.
    let out = call_with(
        &tool,
        dir.path(),
        json!({"command": "(while :; do echo tick; sleep 0.05; done) & echo $! > loop.pid; echo started", "timeout": 0}),
        ToolSettings::default(),
        CancellationToken::new(),
        ToolUpdateSink::noop(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(3), // hang guard
        "{:?}",
        started.elapsed()
    );
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.contains("started\n"), "{}", out.text);
    // The background loop keeps running, as it would in a terminal.
    let pid: i32 = std::fs::read_to_string(dir.path().join("loop.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let p = rustix::process::Pid::from_raw(pid).unwrap();
    assert!(
        rustix::process::test_kill_process(p).is_ok(),
        "the background loop died"
    );
    let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
    let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
}

#[tokio::test]
async fn children_that_shed_group_session_and_environment_still_die() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("shed-marker-{}", std::process::id());
    // Single fork with setsid and an empty environment, and a double fork
    // whose parent is gone before the timeout.
    let command = format!(
        "setsid env -i /bin/bash -c 'exec -a {marker}-a sleep 300' & \
         (setsid env -i /bin/bash -c 'exec -a {marker}-b sleep 301' &) ; \
         echo started; sleep 300"
    );
    let started = Instant::now();
    let out = call(
        "bash",
        dir.path(),
        json!({"command": command, "timeout": 1}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10)); // hang guard
    assert!(out.is_error);
    assert!(out.text.contains("timed out"), "{}", out.text);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(survivors(&marker), "", "escaped processes survived");
}

/// Calls that end at once, beside calls that are cancelled (each cancel
/// sweeps our orphans): a sweep must never take a shell that another call
/// has just started, or that call fails with ECHILD ("No child processes").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_calls_never_lose_their_shell_to_another_calls_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let mut tasks = Vec::new();
    for i in 0..48 {
        let cwd = dir.path().to_path_buf();
        tasks.push(tokio::spawn(async move {
            let tool = tools_builtin::tool_by_name("bash", &cwd).unwrap();
            let mut failures = Vec::new();
            for _ in 0..6 {
                let cancel = CancellationToken::new();
                let command = if i % 2 == 0 {
                    let c = cancel.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        c.cancel();
                    });
                    "sleep 30"
                } else {
                    "exit 0"
                };
                let out = call_with(
                    &tool,
                    &cwd,
                    json!({"command": command}),
                    ToolSettings::default(),
                    cancel,
                    ToolUpdateSink::noop(),
                )
                .await;
                let expected = if i % 2 == 0 {
                    out.text.contains("Command aborted")
                } else {
                    !out.is_error
                };
                if !expected {
                    failures.push(out.text);
                }
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for t in tasks {
        failures.extend(t.await.unwrap());
    }
    assert!(failures.is_empty(), "{failures:?}");
}
