//! The codemode crate from outside: scripts on the in-process VM and in
//! the confined worker, and the tool inside a real agent loop.

use std::time::Duration;

use agent_codemode::{
    InProcessSandbox, OutputKind, ScriptEnd, ScriptRequest, ScriptSandbox, ScriptTool, VmEvent,
    VmLimits, WorkerSandbox,
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
async fn run(sandbox: &dyn ScriptSandbox, req: ScriptRequest) -> (Vec<(OutputKind, String)>, ScriptEnd, Option<String>) {
    let mut script = sandbox.start(req).await.expect("started");
    let mut outputs = Vec::new();
    let end = loop {
        // hang guard: a script that never ends fails the test, not CI
        match tokio::time::timeout(Duration::from_secs(60), script.next_event()).await.expect("event in time") {
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
            Some(VmEvent::End(end)) => break end,
            None => panic!("the VM went away"),
        }
    };
    let abnormal = script.stop(false).await;
    (outputs, end, abnormal)
}

async fn both(code: &str) -> Vec<(Vec<(OutputKind, String)>, ScriptEnd, Option<String>)> {
    vec![
        run(&InProcessSandbox, request(code)).await,
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
        assert_eq!(outputs, vec![(OutputKind::Console, "sum 3".into()), (OutputKind::Text, "hello".into())]);
        assert_eq!(end, ScriptEnd::Completed { value: Some("{\"a\":1,\"b\":2}".into()), writes: vec![] });
    }
}
