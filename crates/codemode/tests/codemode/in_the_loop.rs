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
                let limit = std::time::Duration::from_secs(2);
                while in_flight.load(Ordering::SeqCst) < 4 {
                    let waited_too_long = waiting.elapsed() >= limit; // hang guard
                    if waited_too_long {
                        break;
                    }
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
