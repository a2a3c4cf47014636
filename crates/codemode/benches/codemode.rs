//! Issue 33's targets for codemode, as figures (no assertions):
//! `cargo bench -p agent-codemode`.
//!
//! - the tool's fixed prompt cost (characters / 4), target ≤ 500 tokens;
//! - worker start to a ready VM, p50, target ≤ 15 ms (in-process ≤ 2 ms);
//! - 50 parallel reads in one script beside the loop's own parallel batch
//!   of 50 reads: model requests and wall time (target ≤ 1.2x);
//! - a runaway loop: how long after its deadline it stops (target ≤ 200 ms);
//! - the 10 GB script: the worker's peak RSS (target ≤ 320 MiB) and the
//!   agent's growth (target ≤ 10 MiB).

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_codemode::{
    CodemodeTool, InProcessSandbox, ScriptEnd, ScriptRequest, ScriptSandbox, Stop, VmEvent,
    VmLimits, WorkerSandbox,
};
use agent_core::AgentTool;
use serde_json::json;
use test_support::agent_loop::{calls, scripted, text, tool_call};

fn worker_program() -> std::path::PathBuf {
    // The bench binary sits in target/<profile>/deps; the worker beside it.
    let exe = std::env::current_exe().expect("the bench's own path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    dir.join("codemode-worker")
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn request(code: &str, timeout_ms: Option<u64>) -> ScriptRequest {
    ScriptRequest {
        code: code.into(),
        tools: vec![],
        store: vec![],
        limits: VmLimits {
            timeout_ms,
            ..VmLimits::default()
        },
    }
}

async fn run_to_end(sandbox: &dyn ScriptSandbox, req: ScriptRequest) -> ScriptEnd {
    let mut run = sandbox.start(req).await.expect("started");
    let end = loop {
        match run.next_event().await {
            Some(VmEvent::End(end)) => break end,
            Some(_) => {}
            None => panic!("the VM went away"),
        }
    };
    run.stop(Stop::Detach).await;
    end
}

fn rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn children_peak_rss_kib() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: a pointer to a local the call fills.
    #[allow(unsafe_code)]
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr());
        usage.assume_init()
    };
    usage.ru_maxrss
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let exe = worker_program();
    assert!(
        exe.exists(),
        "build the worker first: cargo build -p agent-codemode --release ({})",
        exe.display()
    );

    // 1. Fixed prompt cost.
    let definition = CodemodeTool::new(InProcessSandbox::default()).definition();
    let chars = definition.description().len()
        + definition.prompt_snippet().map_or(0, str::len)
        + definition
            .prompt_guidelines()
            .iter()
            .map(String::len)
            .sum::<usize>()
        + definition.parameters().to_string().len();
    println!(
        "fixed prompt cost: {} characters ≈ {} tokens (target ≤ 500)",
        chars,
        chars.div_ceil(4)
    );

    // 2. Start to a ready VM.
    let runs: Vec<Duration> = (0..50)
        .map(|_| {
            let start = Instant::now();
            let vm = agent_codemode::Vm::new().expect("a VM");
            let took = start.elapsed();
            drop(vm);
            took
        })
        .collect();
    println!(
        "a new VM (runtime, context, built-ins frozen): p50 {:?}",
        median(runs)
    );
    let in_process = InProcessSandbox::default();
    let mut ready = Vec::new();
    let mut whole = Vec::new();
    for _ in 0..30 {
        // Let the next warm VM get ready, as it does while a script runs.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let start = Instant::now();
        let mut run = in_process
            .start(request("return 1", None))
            .await
            .expect("started");
        ready.push(start.elapsed());
        while !matches!(run.next_event().await, Some(VmEvent::End(_)) | None) {}
        whole.push(start.elapsed());
        run.stop(Stop::Detach).await;
    }
    println!(
        "in-process, a warm VM: start to ready p50 {:?} (target ≤ 2 ms); script `return 1` to its end p50 {:?}",
        median(ready),
        median(whole)
    );
    let mut cold = Vec::new();
    for _ in 0..30 {
        let sandbox = WorkerSandbox::new(&exe, Vec::<String>::new());
        let start = Instant::now();
        assert!(matches!(
            run_to_end(&sandbox, request("return 1", None)).await,
            ScriptEnd::Completed { .. }
        ));
        cold.push(start.elapsed());
    }
    println!(
        "cold worker (spawn, confine, VM, script `return 1`, exit): p50 {:?} (target ≤ 15 ms)",
        median(cold)
    );
    let sandbox = WorkerSandbox::new(&exe, Vec::<String>::new());
    sandbox.prewarm();
    let mut warm = Vec::new();
    for _ in 0..30 {
        // Let the replacement warm worker get ready.
        tokio::time::sleep(Duration::from_millis(30)).await;
        let start = Instant::now();
        assert!(matches!(
            run_to_end(&sandbox, request("return 1", None)).await,
            ScriptEnd::Completed { .. }
        ));
        warm.push(start.elapsed());
    }
    println!(
        "warm worker (script `return 1` to its end): p50 {:?}",
        median(warm)
    );

    // 3. 50 parallel reads: one script beside one batch.
    let dir = tempfile::tempdir().expect("a temporary directory");
    for i in 0..50 {
        std::fs::write(
            dir.path().join(format!("f{i}.txt")),
            format!("    let value_{i} = compute(input, {i}); // a line of code\n").repeat(400),
        )
        .expect("a file");
    }
    let read: Arc<dyn AgentTool> = tools_builtin::tool_by_name("read", dir.path())
        .expect("read")
        .tool();
    let codemode: Arc<dyn AgentTool> = Arc::new(CodemodeTool::new(WorkerSandbox::new(
        &exe,
        Vec::<String>::new(),
    )));
    let code = "const t = await Promise.all(Array.from({length: 50}, (_, i) => tools.read({path: `f${i}.txt`})));\nreturn t.reduce((n, s) => n + s.length, 0);";
    let mut script_runs = Vec::new();
    let mut batch_runs = Vec::new();
    let mut requests = (0, 0);
    for _ in 0..15 {
        let client = scripted(vec![
            calls(&[("cm", "codemode", json!({"code": code}))]),
            text("done"),
        ]);
        let start = Instant::now();
        let (_, ctx) = test_support::agent_loop::run(
            client.clone(),
            vec![codemode.clone(), read.clone()],
            |_| {},
        )
        .await;
        script_runs.push(start.elapsed());
        requests.0 = ctx
            .messages
            .iter()
            .filter(|m| m.role() == "assistant")
            .count();
        let batch: Vec<serde_json::Value> = (0..50)
            .map(|i| {
                tool_call(
                    &format!("r{i}"),
                    "read",
                    json!({"path": format!("f{i}.txt")}),
                )
            })
            .collect();
        let client = scripted(vec![json!({"content": batch}), text("done")]);
        let start = Instant::now();
        let (_, ctx) = test_support::agent_loop::run(client, vec![read.clone()], |_| {}).await;
        batch_runs.push(start.elapsed());
        requests.1 = ctx
            .messages
            .iter()
            .filter(|m| m.role() == "assistant")
            .count();
    }
    let (s, b) = (median(script_runs), median(batch_runs));
    println!(
        "50 reads: one script {s:?} ({} model requests) beside one batch {b:?} ({} requests; sequential turns would take 51): {:.2}x (target ≤ 1.2x)",
        requests.0,
        requests.1,
        s.as_secs_f64() / b.as_secs_f64()
    );

    // 4. A runaway loop past its deadline, in the worker (killed by the host).
    let tool = CodemodeTool::new(WorkerSandbox::new(&exe, Vec::<String>::new()));
    let mut late = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let out = tool
            .execute(
                json!({"code": "// @options: {\"timeout_ms\": 200}\nwhile (true) {}"}),
                agent_core::ToolCallContext::new("b"),
            )
            .await;
        let took = start.elapsed();
        assert!(out.is_err());
        late.push(took.saturating_sub(Duration::from_millis(200)));
    }
    println!(
        "runaway loop stopped after its deadline: p50 {:?}, worst {:?} (target ≤ 200 ms)",
        median(late.clone()),
        late.iter().max().copied().unwrap_or_default()
    );
    let mut late = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let out = tool
            .execute(json!({"code": "// @options: {\"timeout_ms\": 200}\nreturn (new Array(1e9) + '').length"}), agent_core::ToolCallContext::new("b"))
            .await;
        let took = start.elapsed();
        assert!(out.is_err());
        late.push(took.saturating_sub(Duration::from_millis(200)));
    }
    println!(
        "a built-in that never polls the interrupt (`new Array(1e9) + ''`), stopped after its deadline: p50 {:?}, worst {:?}",
        median(late.clone()),
        late.iter().max().copied().unwrap_or_default()
    );

    // 5. The 10 GB script.
    let me = std::process::id().to_string();
    let before = rss_kib(&me);
    let out = tool
        .execute(json!({"code": "const keep = []; for (let i = 0; i < 10240; i++) keep.push('x'.repeat(1 << 20) + i); return keep.length"}), agent_core::ToolCallContext::new("m"))
        .await;
    let message = out.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("out of memory"), "{message}");
    // The worker is reaped in the background; give it a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = rss_kib(&me);
    println!(
        "10 GB script: out of memory; largest worker's peak RSS {} MiB (target ≤ 320), agent RSS {} -> {} MiB (growth target ≤ 10)",
        children_peak_rss_kib() / 1024,
        before / 1024,
        after / 1024
    );
}
