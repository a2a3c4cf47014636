//! `FileMutationQueue`: FIFO per file, symlink aliases share a queue, different
//! files run concurrently, failures do not break the chain.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_tool::{FileMutationQueue, queue_key};

#[tokio::test]
async fn same_file_runs_fifo_and_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    std::fs::write(&path, "x").unwrap();
    let queue = FileMutationQueue::new();
    let order = Arc::new(Mutex::new(Vec::new()));
    let active = Arc::new(Mutex::new(0usize));
    let mut handles = Vec::new();
    for i in 0..10 {
        let (q, p, order, active) = (queue.clone(), path.clone(), order.clone(), active.clone());
        handles.push(tokio::spawn(async move {
            q.run(&p, async {
                {
                    let mut a = active.lock().unwrap();
                    *a += 1;
                    assert_eq!(*a, 1, "two operations on one file overlapped");
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                order.lock().unwrap().push(i);
                *active.lock().unwrap() -= 1;
            })
            .await
            .unwrap();
        }));
        // Give each task time to register so the asking order is known.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for h in handles {
        h.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
    assert_eq!(queue.active_keys(), 0, "keys are forgotten when idle");
}

#[tokio::test]
async fn symlink_aliases_share_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("real.txt");
    std::fs::write(&target, "x").unwrap();
    let link = dir.path().join("alias.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_eq!(queue_key(&target).unwrap(), queue_key(&link).unwrap());

    // A file that does not exist yet, reached through a symlinked directory.
    let real_dir = dir.path().join("realdir");
    std::fs::create_dir(&real_dir).unwrap();
    let dir_link = dir.path().join("linkdir");
    std::os::unix::fs::symlink(&real_dir, &dir_link).unwrap();
    assert_eq!(
        queue_key(&real_dir.join("new.txt")).unwrap(),
        queue_key(&dir_link.join("new.txt")).unwrap()
    );

    let queue = FileMutationQueue::new();
    let q = queue.clone();
    let link2 = link.clone();
    let first = tokio::spawn(async move {
        q.run(&link2, async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Instant::now()
        })
        .await
        .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let second_start = queue.run(&target, async { Instant::now() }).await.unwrap();
    let first_end = first.await.unwrap();
    assert!(
        second_start >= first_end,
        "alias did not wait for the target's queue"
    );
}

#[tokio::test]
async fn different_files_overlap_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let queue = FileMutationQueue::new();
    let (pa, pb) = (dir.path().join("a"), dir.path().join("b"));
    // Each holder waits for the other to be inside its own queue too: if
    // the two files shared a queue, neither would ever get there.
    let both_inside = std::sync::Arc::new(tokio::sync::Barrier::new(2));
    let (ba, bb) = (both_inside.clone(), both_inside);
    let a = queue.run(&pa, async move { ba.wait().await });
    let b = queue.run(&pb, async move { bb.wait().await });
    let joined = tokio::time::timeout(Duration::from_secs(30), async { tokio::join!(a, b) }).await; // hang guard
    let (ra, rb) = joined.expect("the two files' holders ran at the same time");
    ra.unwrap();
    rb.unwrap();
}

#[tokio::test]
async fn a_failed_holder_does_not_break_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let queue = FileMutationQueue::new();
    let first: Result<(), String> = queue
        .run(&path, async { Err("boom".to_string()) })
        .await
        .unwrap();
    assert!(first.is_err());
    let second = queue.run(&path, async { 7 }).await.unwrap();
    assert_eq!(second, 7);
}

#[tokio::test]
async fn a_dropped_waiter_leaves_the_queue_clean() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let queue = FileMutationQueue::new();
    let q = queue.clone();
    let p = path.clone();
    let holder = tokio::spawn(async move {
        q.run(&p, tokio::time::sleep(Duration::from_millis(100)))
            .await
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    // This waiter gives up before its turn.
    let _ = tokio::time::timeout(Duration::from_millis(10), queue.run(&path, async {})).await;
    holder.await.unwrap().unwrap();
    assert_eq!(queue.active_keys(), 0);
}

mod through_a_session {
    //! The queue as a session gives it to every tool of a batch: built-in
    //! and custom tools on one file are applied in the model's order.
    use coding_agent::prelude::*;
    use coding_agent::{FileMutationQueue, RenderContext, RenderResultOptions, Theme};
    use serde_json::json;
    use test_support::agent_loop::*;

    fn session(
        dir: &std::path::Path,
        client: std::sync::Arc<agent_ai::providers::scripted::ScriptedClient>,
        extra: Vec<ToolDefinition>,
    ) -> AgentSession {
        let mut builder = AgentSessionBuilder::new(model(), client)
            .cwd(dir)
            .builtin_tools(tools_builtin::all_tools(dir))
            .settings(Settings::default())
            .context_files(false);
        for tool in extra {
            builder = builder.tool(tool);
        }
        builder.build().unwrap()
    }

    fn errors(session: &AgentSession) -> Vec<String> {
        session
            .agent()
            .messages()
            .iter()
            .filter_map(|m| match m {
                agent_ai::Message::ToolResult(r) if r.is_error => {
                    Some(format!("{}: {:?}", r.tool_name, r.content))
                }
                _ => None,
            })
            .collect()
    }

    /// The second edit needs the first one's text: run in one batch, they
    /// are applied in the order the model wrote them.
    #[tokio::test]
    async fn two_order_dependent_edits_in_one_batch_apply_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "one\n").unwrap();
        let client = scripted(vec![
            calls(&[
                (
                    "e1",
                    "edit",
                    json!({"path": "f.txt", "edits": [{"oldText": "one", "newText": "two"}]}),
                ),
                (
                    "e2",
                    "edit",
                    json!({"path": "f.txt", "edits": [{"oldText": "two", "newText": "three"}]}),
                ),
                (
                    "e3",
                    "edit",
                    json!({"path": "f.txt", "edits": [{"oldText": "three", "newText": "four"}]}),
                ),
            ]),
            text("done"),
        ]);
        let session = session(dir.path(), client, vec![]);
        session.prompt("edit").await.unwrap();
        assert_eq!(errors(&session), Vec::<String>::new());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
            "four\n"
        );
    }

    /// A custom tool that takes the session's queue (`cx.get`) and the
    /// built-in edit, on one file in one batch: neither loses the other's
    /// change, though the custom tool reads, waits and writes.
    #[tokio::test]
    async fn a_custom_tool_and_the_built_in_edit_share_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "a\n").unwrap();
        let target = file.clone();
        let append = tool("append").description("Appends a line.").execute(
            move |args: serde_json::Value, cx: ToolCallContext| {
                let target = target.clone();
                async move {
                    let line = args["line"].as_str().unwrap_or("").to_string();
                    let queue = cx.get::<FileMutationQueue>().cloned().unwrap_or_default();
                    queue
                        .run(&target, async {
                            let before = std::fs::read_to_string(&target)?;
                            // Long enough for an unqueued edit to slip in between.
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                            std::fs::write(&target, format!("{before}{line}\n"))
                        })
                        .await
                        .and_then(|written| written)
                        .map_err(|e| ToolError::io(&target, &e))?;
                    Ok(AgentToolResult::text("appended"))
                }
            },
        );
        let client = scripted(vec![
            calls(&[
                ("x1", "append", json!({"line": "first"})),
                (
                    "e1",
                    "edit",
                    json!({"path": "f.txt", "edits": [{"oldText": "a", "newText": "b"}]}),
                ),
                ("x2", "append", json!({"line": "second"})),
            ]),
            text("done"),
        ]);
        let session = session(dir.path(), client, vec![append]);
        session.prompt("go").await.unwrap();
        assert_eq!(errors(&session), Vec::<String>::new());
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "b\nfirst\nsecond\n"
        );
    }

    /// A result's collapsed view is its head with a count of the rest; the
    /// expanded view is all of it.
    #[test]
    fn collapsed_and_expanded_result_views() {
        let dir = tempfile::tempdir().unwrap();
        let bash = tools_builtin::tool_by_name("bash", dir.path()).unwrap();
        let output: String = (1..=60).map(|i| format!("line {i}\n")).collect();
        let result = AgentToolResult::text(output);
        let theme = Theme::default();
        let cx = RenderContext::default();
        let view = |expanded: bool| {
            let options = RenderResultOptions {
                expanded,
                ..Default::default()
            };
            bash.render_result(&result, &options, &theme, &cx)
                .unwrap()
                .to_plain()
        };
        let collapsed = view(false);
        let expanded = view(true);
        // A command's output is shown by its end, the rest counted.
        assert!(collapsed.lines().count() < 30, "{collapsed}");
        assert!(collapsed.contains("(40 earlier lines)"), "{collapsed}");
        assert!(
            collapsed.contains("line 60") && !collapsed.contains("line 1\n"),
            "{collapsed}"
        );
        for i in 1..=60 {
            assert!(
                expanded.contains(&format!("line {i}\n"))
                    || expanded.ends_with(&format!("line {i}")),
                "line {i} missing:\n{expanded}"
            );
        }
    }
}
