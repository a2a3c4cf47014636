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

/// Second review: a script showing 100,000 distinct images froze the agent
/// for minutes after its deadline; now a script shows at most 20.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_shows_at_most_twenty_images() {
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let code = format!(
        "let shown = 0, refused = ''; for (let i = 0; i < 25; i++) {{ try {{ image('data:image/png;base64,{png}'); shown++ }} catch (e) {{ refused = e.name }} }} return [shown, refused]"
    );
    let tool = CodemodeTool::new(worker());
    let result = execute(&tool, &code).await.expect("completed");
    let shown = result.text_content();
    assert!(shown.ends_with("[20,\"RangeError\"]"), "{shown}");
    let images = result
        .content
        .iter()
        .filter(|b| matches!(b, agent_tool::ContentBlock::Image(_)))
        .count();
    assert_eq!(images, 20);
}

/// A PNG whose header claims a huge canvas is refused from its header,
/// without decoding gigabytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_canvas_is_refused_from_its_header() {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for b in bytes {
            crc ^= u32::from(*b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend_from_slice(&7_900u32.to_be_bytes());
    ihdr.extend_from_slice(&7_900u32.to_be_bytes());
    ihdr.extend_from_slice(&[16, 6, 0, 0, 0]);
    png.extend_from_slice(&13u32.to_be_bytes());
    png.extend_from_slice(&ihdr);
    png.extend_from_slice(&crc32(&ihdr).to_be_bytes());
    // A start of pixel data (a zlib header): the header is read up to it.
    let idat = b"IDAT\x78\x9c";
    png.extend_from_slice(&2u32.to_be_bytes());
    png.extend_from_slice(idat);
    png.extend_from_slice(&crc32(idat).to_be_bytes());
    png.extend_from_slice(&0u32.to_be_bytes());
    png.extend_from_slice(b"IEND");
    png.extend_from_slice(&crc32(b"IEND").to_be_bytes());
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    let tool = CodemodeTool::new(InProcessSandbox::default());
    let result = execute(&tool, &format!("image('data:image/png;base64,{data}')"))
        .await
        .expect("completed");
    let shown = result.text_content();
    assert!(
        shown.contains("[Image dropped: 7900x7900 pixels is more than a model takes"),
        "{shown}"
    );
    assert!(
        !result
            .content
            .iter()
            .any(|b| matches!(b, agent_tool::ContentBlock::Image(_)))
    );
}

/// Values the agent could not keep (lone surrogates, nesting past what JSON
/// readers take) are refused by `store()`, not lost in silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_refuses_what_it_could_not_keep() {
    let code = r#"
        const out = [];
        for (const [k, v] of [["\ud800", 1], ["a", "\ud800"], ["b", JSON.parse("[".repeat(200) + "]".repeat(200))], ["ok", "\ud83d\ude00"]]) {
            try { store(k, v); out.push("kept") } catch (e) { out.push(e.name) }
        }
        return out;
    "#;
    let store = Arc::new(agent_codemode::MemoryStore::default());
    let tool = CodemodeTool::new(worker()).store(store.clone());
    let result = execute(&tool, code).await.expect("completed");
    assert!(
        result
            .text_content()
            .ends_with("[\"TypeError\",\"TypeError\",\"RangeError\",\"kept\"]"),
        "{}",
        result.text_content()
    );
    let kept = agent_codemode::ScriptStore::load(store.as_ref());
    assert_eq!(kept.get("ok").and_then(|v| v.as_str()), Some("\u{1f600}"));
}

/// A script that catches `exit()` and computes on is stopped once its
/// result is out (its VM, and a worker's slot, come back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_stops_once_its_result_is_out() {
    // `run` waits for the VM's thread to end.
    let (_, end, _) = tokio::time::timeout(
        Duration::from_secs(60), // hang guard
        super::run(
            &InProcessSandbox::default(),
            request("try { exit() } catch (e) {} for (;;) {}"),
        ),
    )
    .await
    .expect("the VM stopped after its result was out");
    assert_eq!(
        end,
        ScriptEnd::Completed {
            value: None,
            writes: vec![]
        }
    );
}
