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

#[path = "codemode/in_the_loop.rs"]
mod in_the_loop;

#[path = "codemode/review.rs"]
mod review;
