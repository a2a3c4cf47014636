//! The codemode crate from outside: scripts on the in-process VM and in
//! the confined worker, and the tool inside a real agent loop.

use std::time::Duration;

use agent_codemode::{
    InProcessSandbox, OutputKind, ScriptEnd, ScriptRequest, ScriptSandbox, ScriptTool, Stop,
    VmEvent, VmLimits, WorkerSandbox,
};

fn worker() -> WorkerSandbox {
    WorkerSandbox::new(env!("CARGO_BIN_EXE_codemode-worker"), Vec::<String>::new())
}

fn request(code: &str) -> ScriptRequest {
    ScriptRequest {
        code: code.to_string(),
        tools: vec![ScriptTool {
            name: "echo".into(),
            js_name: "echo".into(),
            description: "echoes".into(),
        }],
        store: vec![],
        limits: VmLimits {
            timeout_ms: Some(20_000),
            ..VmLimits::default()
        },
    }
}

/// Runs a script; `echo` calls are answered with their arguments.
/// Returns the outputs and the end.
async fn run(
    sandbox: &dyn ScriptSandbox,
    req: ScriptRequest,
) -> (Vec<(OutputKind, String)>, ScriptEnd, Option<String>) {
    let mut script = sandbox.start(req).await.expect("started");
    let mut outputs = Vec::new();
    let end = loop {
        // hang guard: a script that never ends fails the test, not CI
        match tokio::time::timeout(Duration::from_secs(60), script.next_event())
            .await
            .expect("event in time")
        {
            Some(VmEvent::Call { id, name, args }) => {
                assert_eq!(name, "echo");
                let v: serde_json::Value = serde_json::from_str(&args).unwrap();
                if v.get("fail").is_some() {
                    script.settle(id, false, "echo refused".into());
                } else {
                    script.settle(id, true, args);
                }
            }
            Some(VmEvent::Output { kind, data, .. }) => outputs.push((kind, data)),
            Some(VmEvent::Took { .. }) => {}
            Some(VmEvent::End(end)) => break end,
            None => panic!("the VM went away"),
        }
    };
    let abnormal = script.stop(Stop::Wait).await;
    (outputs, end, abnormal)
}

async fn both(code: &str) -> Vec<(Vec<(OutputKind, String)>, ScriptEnd, Option<String>)> {
    vec![
        run(&InProcessSandbox::default(), request(code)).await,
        run(&worker(), request(code)).await,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_calls_tools_in_parallel_and_returns() {
    let code = r#"
        const [a, b] = await Promise.all([tools.echo({n: 1}), tools.echo({n: 2})]);
        console.log("sum", a.n + b.n);
        text("hello");
        return {a: a.n, b: b.n};
    "#;
    for (outputs, end, abnormal) in both(code).await {
        assert_eq!(abnormal, None);
        assert_eq!(
            outputs,
            vec![
                (OutputKind::Console, "sum 3".into()),
                (OutputKind::Text, "hello".into())
            ]
        );
        assert_eq!(
            end,
            ScriptEnd::Completed {
                value: Some("{\"a\":1,\"b\":2}".into()),
                writes: vec![]
            }
        );
    }
}

fn threw(end: &ScriptEnd) -> (String, String) {
    match end {
        ScriptEnd::Threw { name, message, .. } => (name.clone(), message.clone()),
        other => panic!("expected a thrown error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_loop_stops_at_its_deadline() {
    for sandbox in [
        &InProcessSandbox::default() as &dyn ScriptSandbox,
        &worker(),
    ] {
        let mut req = request("text('before'); while (true) {}");
        req.limits.timeout_ms = Some(300);
        let (outputs, end, _) = run(sandbox, req).await;
        assert_eq!(outputs, vec![(OutputKind::Text, "before".into())]);
        assert_eq!(end, ScriptEnd::TimedOut);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bombs_fail_with_out_of_memory() {
    // 1 MB strings pushed until 10 GB: the heap limit (256 MiB) stops it.
    let code = "const keep = []; for (let i = 0; i < 10240; i++) keep.push('x'.repeat(1 << 20) + i); return keep.length";
    for (_, end, abnormal) in both(code).await {
        assert_eq!(abnormal, None);
        assert_eq!(
            threw(&end),
            ("InternalError".to_string(), "out of memory".to_string())
        );
    }
    // A built-in that never polls the interrupt (joining a billion holes
    // takes QuickJS about 20 s): only killing the worker stops it, which
    // the host does at the deadline.
    let sandbox = worker();
    let mut script = sandbox
        .start(request("return (new Array(1e9) + '').length"))
        .await
        .unwrap();
    let deadline = tokio::time::timeout(Duration::from_millis(500), script.next_event()).await;
    assert!(deadline.is_err(), "the join ended early: {deadline:?}");
    assert_eq!(
        script.stop(Stop::Kill).await,
        None,
        "our own SIGKILL is not reported as a crash"
    );
    assert!(
        sandbox.live_workers() <= 1,
        "the slot is freed (a warm worker may take it)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_recursion_is_a_catchable_range_error() {
    let code = "function f(n) { return f(n + 1) + 1 } try { f(0) } catch (e) { return e.name }";
    for (_, end, _) in both(code).await {
        assert_eq!(
            end,
            ScriptEnd::Completed {
                value: Some("\"RangeError\"".into()),
                writes: vec![]
            }
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promise_that_never_settles_fails_at_once() {
    for (_, end, _) in both("await new Promise(() => {}); text('unreachable')").await {
        let (_, message) = threw(&end);
        assert!(message.contains("can never settle"), "{message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patched_built_ins_change_nothing_the_host_reads() {
    let code = r#"
        try { Array.prototype.toJSON = () => "pwned" } catch (e) {}
        try { JSON.stringify = () => "pwned" } catch (e) {}
        try { Object.prototype.then = (r) => r("pwned") } catch (e) {}
        class Mine extends Error { constructor() { super("m"); this.name = "Mine" } }
        const e = new Mine();
        return { list: [1, 2], name: e.name };
    "#;
    for (_, end, _) in both(code).await {
        assert_eq!(
            end,
            ScriptEnd::Completed {
                value: Some("{\"list\":[1,2],\"name\":\"Mine\"}".into()),
                writes: vec![]
            }
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_refuses_bad_base64_and_unknown_formats() {
    let code = r#"
        const tries = ["data:image/png;base64,iVBORw0KGg!!", "data:image/png;base64,AAAA", "https://example.com/x.png", {type: "image", data: ""}];
        const out = [];
        for (const t of tries) { try { image(t); out.push("accepted") } catch (e) { out.push(e.name) } }
        image("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==");
        return out;
    "#;
    for (outputs, end, _) in both(code).await {
        assert_eq!(
            end,
            ScriptEnd::Completed {
                value: Some("[\"TypeError\",\"TypeError\",\"TypeError\",\"TypeError\"]".into()),
                writes: vec![]
            }
        );
        assert_eq!(outputs.len(), 1);
        assert_eq!(outputs[0].0, OutputKind::Image);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tools_name_the_close_ones_and_failures_reject() {
    let code = r#"
        let missing;
        try { tools.Echo({}) } catch (e) { missing = e.message }
        let refused;
        try { await tools.echo({fail: true}) } catch (e) { refused = e.message }
        let nested;
        try { tools.codemode({code: "1"}) } catch (e) { nested = e.name }
        return [missing, refused, nested];
    "#;
    for (_, end, _) in both(code).await {
        let ScriptEnd::Completed {
            value: Some(value), ..
        } = end
        else {
            panic!("{end:?}")
        };
        let v: Vec<String> = serde_json::from_str(&value).unwrap();
        assert!(v[0].contains("Did you mean tools.echo"), "{}", v[0]);
        assert_eq!(v[1], "echo refused");
        assert_eq!(v[2], "TypeError");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_and_call_limits_end_the_script() {
    let big = "const s = 'y'.repeat(1 << 20); for (let i = 0; i < 100; i++) text(s)";
    for (outputs, end, _) in both(big).await {
        let (name, message) = threw(&end);
        assert_eq!(name, "RangeError", "{message}");
        assert!(outputs.len() <= 16, "{}", outputs.len());
    }
    let many = "const all = []; for (let i = 0; i < 1005; i++) all.push(tools.echo({i})); const r = await Promise.allSettled(all); return r.filter(x => x.status === 'rejected').map(x => x.reason.name + ': ' + x.reason.message)[0] + ' x' + r.filter(x => x.status === 'rejected').length";
    for (_, end, _) in both(many).await {
        let ScriptEnd::Completed {
            value: Some(value), ..
        } = end
        else {
            panic!("{end:?}")
        };
        assert!(
            value.contains("RangeError: a script may make at most 1000 tool calls x5"),
            "{value}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_writes_come_back_only_from_a_script_that_completes() {
    let mut req =
        request("const n = load('n') ?? 0; store('n', n + 1); store('gone', undefined); return n");
    req.store = vec![("n".into(), "41".into()), ("gone".into(), "true".into())];
    for sandbox in [
        &InProcessSandbox::default() as &dyn ScriptSandbox,
        &worker(),
    ] {
        let (_, end, _) = run(sandbox, req.clone()).await;
        assert_eq!(
            end,
            ScriptEnd::Completed {
                value: Some("41".into()),
                writes: vec![("n".into(), Some("42".into())), ("gone".into(), None)],
            }
        );
    }
    let big = request("store('k', 'z'.repeat(300000))");
    for (_, end, _) in both(&big.code).await {
        assert_eq!(threw(&end).0, "RangeError");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_syntax_error_names_its_line() {
    for (_, end, _) in both("const a = 1;\nconst = 2;").await {
        let (name, _) = threw(&end);
        assert_eq!(name, "SyntaxError");
        let ScriptEnd::Threw { stack, .. } = end else {
            unreachable!()
        };
        assert!(stack.contains("codemode.js:2"), "{stack}");
    }
}

/// The worker's seccomp filter is in force while it runs a script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_runs_under_seccomp_and_its_limits() {
    let sandbox = worker();
    let mut script = sandbox
        .start(request("await tools.echo({}); return 1"))
        .await
        .unwrap();
    // hang guard
    let Some(VmEvent::Call { id, args, .. }) =
        tokio::time::timeout(Duration::from_secs(60), script.next_event())
            .await
            .unwrap()
    else {
        panic!("expected a call");
    };
    // The worker is now waiting for us: find it among our children.
    let me = std::process::id();
    let mut found = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|v| v.trim().to_string())
        };
        if field("Name:").as_deref() != Some("codemode-worker")
            || field("PPid:") != Some(me.to_string())
        {
            continue;
        }
        found += 1;
        let limits = std::fs::read_to_string(entry.path().join("limits")).unwrap();
        let address = limits
            .lines()
            .find(|l| l.starts_with("Max address space"))
            .unwrap()
            .to_string();
        if field("Seccomp:").as_deref() == Some("2") {
            assert!(address.contains("1073741824"), "{address}");
            assert_eq!(field("NoNewPrivs:").as_deref(), Some("1"));
        }
    }
    assert!(found >= 1, "no worker found");
    script.settle(id, true, args);
    // hang guard
    let took = tokio::time::timeout(Duration::from_secs(60), script.next_event())
        .await
        .unwrap();
    assert_eq!(took, Some(VmEvent::Took { id }));
    // hang guard
    let end = tokio::time::timeout(Duration::from_secs(60), script.next_event())
        .await
        .unwrap();
    assert_eq!(
        end,
        Some(VmEvent::End(ScriptEnd::Completed {
            value: Some("1".into()),
            writes: vec![]
        }))
    );
    assert_eq!(script.stop(Stop::Wait).await, None);
}

/// A worker that dies mid-script (here by SIGSEGV) is reported, and the
/// host goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_worker_is_reported_by_its_signal() {
    let dir = tempfile::tempdir().unwrap();
    let crash = dir.path().join("crash.sh");
    std::fs::write(&crash, "#!/bin/sh\nkill -SEGV $$\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&crash, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sandbox = WorkerSandbox::new(&crash, Vec::<String>::new());
    match sandbox.start(request("return 1")).await {
        Ok(mut script) => {
            // hang guard
            let event = tokio::time::timeout(Duration::from_secs(60), script.next_event())
                .await
                .unwrap();
            assert_eq!(event, None);
            let why = script.stop(Stop::Wait).await;
            assert_eq!(
                why.as_deref(),
                Some("the script worker was killed by SIGSEGV")
            );
        }
        Err(e) => assert!(e.to_string().contains("did not take the script"), "{e}"),
    }
}

mod in_the_loop {
    //! The tool inside a real agent loop (scripted model).
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use agent_codemode::{CodemodeTool, InProcessSandbox, MemoryStore, VmLimits};
    use agent_core::{AgentEvent, AgentTool, AgentToolResult};
    use serde_json::json;
    use test_support::agent_loop::{FnTool, calls, run, scripted, sleeper, text};

    fn result_text(events: &[AgentEvent], id: &str) -> (String, bool) {
        events
            .iter()
            .find_map(|e| match e {
                AgentEvent::ToolExecutionEnd {
                    tool_call_id,
                    result,
                    is_error,
                    ..
                } if tool_call_id == id => Some((result.text_content(), *is_error)),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no end for {id}"))
    }

    /// 10,000 calls through `Promise.allSettled`: 1,000 run (the per-script
    /// cap), the rest reject with a RangeError, and no more than
    /// `max_parallel_tools` are ever in flight.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ten_thousand_calls_never_pass_max_parallel_tools() {
        let in_flight = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (probe, log) = {
            let (in_flight, most) = (in_flight.clone(), most.clone());
            FnTool::new("probe", move |_, _, _| {
                let (in_flight, most) = (in_flight.clone(), most.clone());
                async move {
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    // Hold the slot until the cap is reached, so a cap that
                    // lets more through is seen (hang guard: 2 s at most).
                    let waiting = std::time::Instant::now();
                    while in_flight.load(Ordering::SeqCst) < 4
                        && waiting.elapsed() < std::time::Duration::from_secs(2)
                    {
                        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                    }
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    Ok(AgentToolResult::text("ok"))
                }
            })
            .arc()
        };
        let code = "const all = Array.from({length: 10000}, () => tools.probe({}));\nconst r = await Promise.allSettled(all);\nconst bad = r.filter(x => x.status === 'rejected');\nreturn [r.length - bad.length, bad.length, bad[0].reason.name];";
        let tool: Arc<dyn AgentTool> = Arc::new(CodemodeTool::new(InProcessSandbox::default()));
        let (rec, _) = run(
            scripted(vec![
                calls(&[("cm", "codemode", json!({"code": code}))]),
                text("done"),
            ]),
            vec![tool, probe],
            |config| config.max_parallel_tools = 4,
        )
        .await;
        let (shown, is_error) = result_text(&rec.events(), "cm");
        assert!(!is_error, "{shown}");
        assert!(shown.ends_with("\n[1000,9000,\"RangeError\"]"), "{shown}");
        assert_eq!(log.lock().unwrap().len(), 1000);
        assert_eq!(most.load(Ordering::SeqCst), 4);
    }

    /// An abort mid-script ends the script and cancels its running calls.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abort_cancels_the_script_and_its_calls() {
        let (sleep, log) = sleeper("sleep").arc();
        let tool: Arc<dyn AgentTool> = Arc::new(CodemodeTool::new(InProcessSandbox::default()));
        let cancel = agent_core::CancellationToken::new();
        let config = agent_core::AgentLoopConfig::new(
            test_support::agent_loop::model(),
            scripted(vec![
                calls(&[(
                    "cm",
                    "codemode",
                    json!({"code": "text('started'); await tools.sleep({ms: 600000}); text('never')"}),
                )]),
                text("never"),
            ]),
        );
        let mut context = agent_core::AgentContext {
            system_prompt: "test".into(),
            messages: vec![],
            tools: vec![tool, sleep],
        };
        let rec = test_support::agent_loop::Recorder::default();
        let sink = rec.sink();
        let stopper = cancel.clone();
        let watch = rec.clone();
        tokio::spawn(async move {
            // Abort once the inner call is running.
            loop {
                let started = watch.events().iter().any(|e| matches!(e, AgentEvent::ToolExecutionStart { tool_name, .. } if tool_name == "sleep"));
                if started {
                    stopper.cancel();
                    return;
                }
                tokio::task::yield_now().await;
            }
        });
        // hang guard
        tokio::time::timeout(
            std::time::Duration::from_secs(60),
            agent_core::run_agent_loop(
                vec![agent_ai_message()],
                &mut context,
                &config,
                cancel,
                &sink,
            ),
        )
        .await
        .expect("the run ended");
        let (shown, is_error) = result_text(&rec.events(), "cm");
        assert!(is_error);
        assert!(
            shown.contains("started\nScript error:\nScript aborted: Execution aborted"),
            "{shown}"
        );
        assert!(shown.contains("sleep (cancelled)"), "{shown}");
        let events = rec.events();
        let (sleep_text, sleep_error) = events
            .iter()
            .find_map(|e| match e {
                AgentEvent::ToolExecutionEnd {
                    tool_name,
                    result,
                    is_error,
                    ..
                } if tool_name == "sleep" => Some((result.text_content(), *is_error)),
                _ => None,
            })
            .expect("the inner call ended");
        assert!(
            sleep_error && sleep_text.contains("aborted"),
            "{sleep_text}"
        );
        assert!(log.lock().unwrap().len() <= 1);
    }

    fn agent_ai_message() -> agent_ai::Message {
        agent_ai::Message::user("go")
    }

    /// `store()` values reach the next script through the tool's store.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stored_values_reach_the_next_script() {
        let store = Arc::new(MemoryStore::default());
        let tool: Arc<dyn AgentTool> = Arc::new(
            CodemodeTool::new(InProcessSandbox::default())
                .store(store.clone())
                .limits(VmLimits::default()),
        );
        let (rec, _) = run(
            scripted(vec![
                calls(&[(
                    "a",
                    "codemode",
                    json!({"code": "store('seen', ['x']); return 1"}),
                )]),
                calls(&[("b", "codemode", json!({"code": "return load('seen')"}))]),
                text("done"),
            ]),
            vec![tool],
            |_| {},
        )
        .await;
        let (b, _) = result_text(&rec.events(), "b");
        assert!(b.ends_with("\n[\"x\"]"), "{b}");
    }
}

mod review {
    //! What an adversarial review of the sandbox found, each kept fixed.
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use agent_codemode::{
        CodemodeTool, InProcessSandbox, ScriptEnd, ScriptSandbox, VmEvent, WorkerSandbox, confine,
    };
    use agent_core::{AgentTool, AgentToolResult, ToolCallContext};
    use serde_json::json;
    use test_support::agent_loop::{FnTool, calls, run, scripted, text};

    use super::{request, worker};

    async fn execute(tool: &CodemodeTool, code: &str) -> Result<AgentToolResult, String> {
        // hang guard
        tokio::time::timeout(
            Duration::from_secs(60),
            tool.execute(json!({ "code": code }), ToolCallContext::new("t")),
        )
        .await
        .expect("the script ended")
        .map_err(|e| e.to_string())
    }

    /// QuickJS-ng's `Error.prepareStackTrace` handed the prelude's own
    /// functions to a script through call sites; with them it sent an
    /// image no check had seen, and succeeded.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stack_trace_hook_cannot_reach_the_prelude() {
        let code = r#"
            Error.prepareStackTrace = function (err, sites) {
              for (const s of sites) {
                const f = s.getFunction && s.getFunction();
                if (typeof f === "function" && s.getFunctionName() === "emit") {
                  f("text", { length: -1e15 });
                  f("image", "not base64 at all!!", "text/html");
                  exit();
                }
              }
              return "";
            };
            text("x".repeat(16 * 1024 * 1024 + 1));
        "#;
        for tool in [
            CodemodeTool::new(InProcessSandbox::default()),
            CodemodeTool::new(worker()),
        ] {
            let out = execute(&tool, code).await;
            let text = out.expect_err("the script fails on its output limit");
            assert!(
                text.contains("RangeError: the script's output passed the limit"),
                "{text}"
            );
            assert!(!text.contains("text/html"), "{text}");
        }
    }

    /// An image whose first bytes look right but which is not an image, or
    /// is larger than a model takes, never reaches the result.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bad_images_are_dropped_before_a_model_sees_them() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        let code = format!(
            "image('data:image/png;base64,iVBORw0KGgoAAAAAAAAAAAAA');\nimage('data:image/jpeg;base64,/9j/' + 'A'.repeat(7 * 1024 * 1024 - 4));\nimage('data:image/png;base64,{png}');"
        );
        let tool = CodemodeTool::new(InProcessSandbox::default());
        let result = execute(&tool, &code).await.expect("completed");
        let images: Vec<_> = result
            .content
            .iter()
            .filter(|b| matches!(b, agent_tool::ContentBlock::Image(_)))
            .collect();
        assert_eq!(images.len(), 1, "only the real image is kept");
        let shown = result.text_content();
        assert_eq!(shown.matches("[Image dropped:").count(), 2, "{shown}");
        assert!(shown.contains("[Image saved to "), "{shown}");
    }

    /// Deleting keys that are not there recorded a delete each, unbounded.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deleting_missing_keys_records_nothing() {
        let mut req = request(
            "store('a', undefined); for (let i = 0; i < 40000; i++) store('k' + i, undefined); store('b', 1); store('b', undefined)",
        );
        req.store = vec![("a".into(), "1".into())];
        let mut script = InProcessSandbox::default().start(req).await.unwrap();
        let end = loop {
            match script.next_event().await {
                Some(VmEvent::End(end)) => break end,
                Some(_) => {}
                None => panic!("gone"),
            }
        };
        assert_eq!(
            end,
            ScriptEnd::Completed {
                value: None,
                writes: vec![("a".into(), None), ("b".into(), None)]
            }
        );
    }

    /// A script that starts many calls and then computes without taking
    /// their results does not pile them up in the agent: results beyond
    /// the budget wait, and further calls do not start.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn results_wait_while_the_script_does_not_take_them() {
        let started = Arc::new(AtomicUsize::new(0));
        let (big, _) = {
            let started = started.clone();
            FnTool::new("big", move |_, _, _| {
                started.fetch_add(1, Ordering::SeqCst);
                async move { Ok(AgentToolResult::text("y".repeat(1024 * 1024))) }
            })
            .arc()
        };
        let code = "// @options: {\"timeout_ms\": 3000}\nfor (let i = 0; i < 200; i++) tools.big({});\nwhile (true) {}";
        let tool: Arc<dyn AgentTool> = Arc::new(CodemodeTool::new(worker()));
        let (rec, _) = run(
            scripted(vec![
                calls(&[("cm", "codemode", json!({"code": code}))]),
                text("done"),
            ]),
            vec![tool, big],
            |config| config.max_parallel_tools = 4,
        )
        .await;
        let most = agent_codemode::RESULT_BUDGET / (1024 * 1024) + 4 + 1;
        let n = started.load(Ordering::SeqCst);
        assert!(
            n <= most,
            "{n} calls started, more than the budget allows ({most})"
        );
        assert!(n >= 4, "{n}");
        let ended = rec
            .ends()
            .into_iter()
            .find(|(id, _, _)| id == "cm")
            .expect("an end");
        assert!(
            ended.1.text_content().contains("Script timed out"),
            "{}",
            ended.1.text_content()
        );
    }

    /// A script may shorten the deadline it is given, never lengthen it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_script_cannot_lengthen_the_deadline() {
        let tool = CodemodeTool::new(worker()).timeout(Some(Duration::from_millis(300)));
        let text = execute(
            &tool,
            "// @options: {\"timeout_ms\": 600000}\nwhile (true) {}",
        )
        .await
        .unwrap_err();
        assert!(
            text.contains("Script timed out: Execution timed out after 300 ms"),
            "{text}"
        );
    }

    /// One item whose JSON would not fit a frame fails the script and says
    /// why (it read as an abort).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_item_too_large_for_a_frame_fails_the_script() {
        let tool = CodemodeTool::new(worker());
        let text = execute(&tool, "text('\\x01'.repeat(12e6))")
            .await
            .unwrap_err();
        assert!(text.contains("RangeError: a message of"), "{text}");
        assert!(!text.contains("aborted"), "{text}");
    }

    /// A compromised worker: frames no honest VM sends end the script as a
    /// sandbox failure, before they cost the agent memory or reach a store.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_compromised_worker_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let evil = dir.path().join("evil.py");
        std::fs::write(
            &evil,
            r#"import sys, json, struct
inp, out = sys.stdin.buffer, sys.stdout.buffer
def rd():
    h = inp.read(4)
    return json.loads(inp.read(struct.unpack(">I", h)[0])) if len(h) == 4 else None
def wr(m):
    b = json.dumps(m).encode()
    out.write(struct.pack(">I", len(b)) + b); out.flush()
rd()
mode = sys.argv[1]
if mode == "mime":
    for i in range(3):
        wr({"t": "output", "kind": "text", "data": "", "mime": "m" * 1000})
elif mode == "call":
    wr({"t": "call", "id": 1, "name": "secret", "args": "{}"})
elif mode == "store":
    wr({"t": "end", "kind": "completed", "value": "1", "writes": [["k", json.dumps("v" * (1 << 20))]]})
elif mode == "image":
    wr({"t": "output", "kind": "image", "data": "bm90IGFuIGltYWdl", "mime": "text/html"})
wr({"t": "end", "kind": "completed", "value": None, "writes": []})
"#,
        )
        .unwrap();
        for mode in ["mime", "call", "store", "image"] {
            let sandbox = WorkerSandbox::new("python3", [evil.to_str().unwrap(), mode]);
            let store = Arc::new(agent_codemode::MemoryStore::default());
            let tool = CodemodeTool::new(sandbox).store(store.clone());
            let text = execute(&tool, "return 1").await.unwrap_err();
            assert!(
                text.contains("Script sandbox failed: the script's VM broke the protocol"),
                "{mode}: {text}"
            );
            assert!(
                agent_codemode::ScriptStore::load(store.as_ref()).is_empty(),
                "{mode}"
            );
        }
    }

    /// The worker may not signal any process (as root, the agent): tgkill
    /// was allowed for abort(), and reached any thread of any process.
    #[test]
    #[allow(unsafe_code)]
    fn a_confined_process_cannot_signal_others() {
        if std::env::var_os("CODEMODE_CONFINE_PROBE").is_some() {
            let parent = rustix::process::getppid().map_or(1, |p| p.as_raw_nonzero().get());
            confine::limit_process().unwrap();
            confine::install_filter().unwrap();
            // Signal 0 to the parent: only a check, but through the system
            // call the filter must refuse.
            // SAFETY: plain integers.
            unsafe { libc::syscall(libc::SYS_tgkill, parent, parent, 0) };
            std::process::exit(0);
        }
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "review::a_confined_process_cannot_signal_others",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("CODEMODE_CONFINE_PROBE", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGSYS), "{status:?}");
    }
}
