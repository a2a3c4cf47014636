//! The tools on the other side: as its user, over a link that breaks, stalls or is cancelled.

use super::*;

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
