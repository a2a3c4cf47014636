//! In-process figures: the tools called through their definitions (no process
//! start-up), plus the loop's own costs.
//!
//! `cargo bench -p tools-builtin` (add `-- --quick` for a smaller corpus,
//! `--json` for machine-readable rows, `--corpus DIR`, `--big-file PATH`, `--runs N`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use agent_ai::Model;
use agent_ai::providers::scripted::{ScriptedClient, ScriptedTurn};
use agent_core::{
    AgentContext, AgentLoopConfig, AgentToolResult, CancellationToken, EventSink, ToolCallContext,
    ToolError, run_agent_loop,
};
use agent_tool::{TypedTool, typed_tool};
use coding_agent::{Settings, ToolDefinition};
use serde_json::{Value, json};
use test_support::corpus;

struct Args {
    json: bool,
    quick: bool,
    runs: usize,
    corpus: Option<PathBuf>,
    big_file: Option<PathBuf>,
    /// Only figures whose name contains this (for profiling one figure).
    only: Option<String>,
}

impl Args {
    fn wants(&self, figure: &str) -> bool {
        self.only.as_deref().is_none_or(|o| figure.contains(o))
    }
}

fn args() -> Args {
    let a: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        a.iter()
            .position(|x| x == flag)
            .and_then(|i| a.get(i + 1))
            .cloned()
    };
    Args {
        json: a.iter().any(|x| x == "--json"),
        quick: a.iter().any(|x| x == "--quick"),
        runs: value("--runs").and_then(|v| v.parse().ok()).unwrap_or(5),
        corpus: value("--corpus").map(PathBuf::from),
        big_file: value("--big-file").map(PathBuf::from),
        only: value("--only"),
    }
}

/// Peak resident memory of this process so far, in MB (Linux).
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn emit(args: &Args, figure: &str, secs: Vec<f64>, note: &str) {
    let min = secs.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = secs.iter().cloned().fold(0.0, f64::max);
    let med = median(secs.clone());
    let row = json!({
        "figure": figure,
        "ours": {"median": med, "min": min, "max": max, "runs": secs},
        "oursPeakRssMb": peak_rss_mb(),
        "reference": Value::Null,
        "referenceTime": Value::Null,
        "ratio": Value::Null,
        "note": note,
    });
    if args.json {
        println!("{row}");
    } else {
        let unit = |v: f64| {
            if med < 0.001 {
                format!("{:.1}us", v * 1e6)
            } else {
                format!("{v:.4}s")
            }
        };
        println!(
            "{figure:<60} {:>10}  [{}-{}]  peak RSS {:.1} MB  {note}",
            unit(med),
            unit(min),
            unit(max),
            peak_rss_mb()
        );
    }
}

async fn call(
    tool: &ToolDefinition,
    cwd: &Path,
    args: Value,
) -> Result<AgentToolResult, ToolError> {
    let cx = ToolCallContext::new("bench")
        .with_extensions(coding_agent::tool_extensions(cwd, &Settings::default()));
    tool.execute(args, cx).await
}

async fn time_tool(
    args: &Args,
    figure: &str,
    tool: &str,
    cwd: &Path,
    call_args: Value,
    note: &str,
) {
    if !args.wants(figure) {
        return;
    }
    let def = tools_builtin::tool_by_name(tool, cwd).expect("built-in");
    let _ = call(&def, cwd, call_args.clone()).await; // warm-up
    let mut secs = Vec::new();
    for _ in 0..args.runs {
        let started = Instant::now();
        let out = call(&def, cwd, call_args.clone()).await;
        secs.push(started.elapsed().as_secs_f64());
        if let Err(e) = out {
            eprintln!("{figure}: {e}");
        }
    }
    emit(args, figure, secs, note);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoParams {}

struct Noop;

impl TypedTool for Noop {
    type Params = NoParams;
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "does nothing"
    }
    async fn execute(
        &self,
        _p: NoParams,
        _cx: agent_core::ToolCallContext,
    ) -> Result<AgentToolResult, ToolError> {
        Ok(AgentToolResult::text("ok"))
    }
}

async fn run_loop(turns: Vec<Value>, tools: Vec<Arc<dyn agent_core::AgentTool>>) -> f64 {
    run_loop_with(turns, tools, false).await
}

/// [`run_loop`], with before and after hooks that do nothing when `hooks`
/// (what a hook's context snapshot costs).
async fn run_loop_with(
    turns: Vec<Value>,
    tools: Vec<Arc<dyn agent_core::AgentTool>>,
    hooks: bool,
) -> f64 {
    let turns: Vec<ScriptedTurn> = turns
        .into_iter()
        .map(|t| serde_json::from_value(t).expect("turn"))
        .collect();
    let client = Arc::new(ScriptedClient::new(turns));
    let mut config = AgentLoopConfig::new(Model::new("scripted", "bench"), client);
    if hooks {
        config.before_tool_call = Some(Arc::new(|_, _| Box::pin(async { Ok(None) })));
        config.after_tool_call = Some(Arc::new(|_, _| Box::pin(async { Ok(None) })));
    }
    let mut context = AgentContext {
        system_prompt: String::new(),
        messages: Vec::new(),
        tools,
    };
    let sink: EventSink = Arc::new(|_| {});
    let started = Instant::now();
    run_agent_loop(
        vec![agent_ai::Message::user("go")],
        &mut context,
        &config,
        CancellationToken::new(),
        &sink,
    )
    .await;
    started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let args = args();
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    let files = if args.quick { 5_000 } else { 20_000 };
    let corpus_dir = args
        .corpus
        .clone()
        .unwrap_or_else(|| target.join(format!("corpus-{files}")));
    if args.corpus.is_none() {
        corpus::generate_tree(&corpus_dir, files, 42).expect("corpus");
    }
    let big_lines = if args.quick { 1_100_000 } else { 11_000_000 };
    let big = args
        .big_file
        .clone()
        .unwrap_or_else(|| target.join(format!("big-{big_lines}.txt")));
    if args.big_file.is_none() {
        corpus::generate_big_file(&big, big_lines).expect("big file");
    }
    let big_dir = big.parent().unwrap_or(Path::new(".")).to_path_buf();
    let big_name = big
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let lines = std::fs::metadata(&big)
        .map(|m| m.len() / corpus::BIG_FILE_LINE_BYTES)
        .unwrap_or(0) as i64;

    // Memory-sensitive figures first, so the peak RSS they report is theirs.
    // A million lines before the end (line 10,000,000 of the 1 GB file).
    let offset = (lines - 1_000_000).max(1);
    time_tool(
        &args,
        &format!("read API: 2000 lines at offset {offset}"),
        "read",
        &big_dir,
        json!({"path": big_name, "offset": offset, "limit": 2000}),
        "streamed",
    )
    .await;
    let bash_bytes = if args.quick { 20_000_000 } else { 200_000_000 };
    time_tool(&args, &format!("bash API: print {} MB", bash_bytes / 1_000_000), "bash", &big_dir,
        json!({"command": format!("yes 'a line of output from a chatty command' | head -c {bash_bytes}"), "timeout": 0}),
        "tail kept, full output spilled to disk").await;
    if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
        for e in entries.flatten() {
            if e.file_name()
                .to_string_lossy()
                .starts_with("coding-agent-bash-")
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    time_tool(
        &args,
        "grep API: rare pattern",
        "grep",
        &corpus_dir,
        json!({"pattern": corpus::RARE, "limit": 1_000_000}),
        "full scan",
    )
    .await;
    time_tool(
        &args,
        "grep API: common pattern, limit 100",
        "grep",
        &corpus_dir,
        json!({"pattern": "return", "limit": 100}),
        "stops early, path order",
    )
    .await;
    time_tool(
        &args,
        "find API: *.rs",
        "find",
        &corpus_dir,
        json!({"pattern": "*.rs", "limit": 10_000_000}),
        "sorted",
    )
    .await;

    // The loop: 8 parallel `sleep 0.2` bash calls.
    let cwd = std::env::temp_dir();
    let bash: Vec<Arc<dyn agent_core::AgentTool>> = vec![
        tools_builtin::tool_by_name("bash", &cwd)
            .expect("bash")
            .tool(),
    ];
    let mut secs = Vec::new();
    for _ in 0..if args.wants("parallel") { args.runs } else { 0 } {
        let calls: Vec<Value> = (0..8)
            .map(|i| json!({"type":"toolCall","id":format!("c{i}"),"name":"bash","arguments":{"command":"sleep 0.2"}}))
            .collect();
        secs.push(
            run_loop(
                vec![
                    json!({"content": calls}),
                    json!({"content":[{"type":"text","text":"done"}]}),
                ],
                bash.clone(),
            )
            .await,
        );
    }
    if args.wants("parallel") {
        emit(
            &args,
            "loop: 8 parallel `sleep 0.2` bash calls",
            secs,
            "target < 0.35 s (8 x 0.2 s serial = 1.6 s)",
        );
    }

    // Per-call overhead of a no-op tool over 10,000 calls: 100 turns of 100
    // calls; then the same with hooks set, whose context snapshot is the
    // extra cost.
    for hooks in [false, true] {
        let mut secs = Vec::new();
        for _ in 0..if args.wants("no-op") { args.runs } else { 0 } {
            let mut turns: Vec<Value> = (0..100)
                .map(|t| {
                    let calls: Vec<Value> = (0..100)
                        .map(|i| json!({"type":"toolCall","id":format!("c{t}_{i}"),"name":"noop","arguments":{}}))
                        .collect();
                    json!({"content": calls})
                })
                .collect();
            turns.push(json!({"content":[{"type":"text","text":"done"}]}));
            let total = run_loop_with(turns, vec![typed_tool(Noop)], hooks).await;
            secs.push(total / 10_000.0);
        }
        if args.wants("no-op") {
            let figure = if hooks {
                "loop: no-op tool with before/after hooks, seconds per call"
            } else {
                "loop: no-op tool, seconds per call (100 turns x 100 calls)"
            };
            emit(
                &args,
                figure,
                secs,
                "target <= 20 us; includes the scripted model's streaming",
            );
        }
    }

    // Last: edits hold the 50 MB file several times over, which would mask the
    // peak RSS of the figures above.
    // Edit one line of a 50 MB file, exact and fuzzy.
    let edit_dir = target.join("edit");
    std::fs::create_dir_all(&edit_dir).expect("edit dir");
    let body: String = (0..500_000)
        .map(|i| format!("line {i:07} {}\n", "x".repeat(88)))
        .collect();
    let edit = tools_builtin::tool_by_name("edit", &edit_dir).expect("edit");
    for (figure, old, file_body) in [
        (
            "edit API: one line of 50 MB (exact)",
            "line 0250000 ".to_string(),
            body.clone(),
        ),
        (
            "edit API: one line of 50 MB (fuzzy)",
            "fuzzy \"quoted\" line".to_string(),
            body.replacen("line 0250000 ", "fuzzy \u{201C}quoted\u{201D} line ", 1),
        ),
    ] {
        if !args.wants(figure) {
            continue;
        }
        let mut secs = Vec::new();
        for _ in 0..args.runs {
            std::fs::write(edit_dir.join("big.txt"), &file_body).expect("write");
            let started = Instant::now();
            let out = call(
                &edit,
                &edit_dir,
                json!({"path": "big.txt", "edits": [{"oldText": old, "newText": "CHANGED "}]}),
            )
            .await;
            secs.push(started.elapsed().as_secs_f64());
            if let Err(e) = out {
                eprintln!("{figure}: {e}");
            }
        }
        emit(&args, figure, secs, "");
    }

    sessions(&args);
}

/// Resuming a long session and appending to it: the file is read once and
/// only ever grows by the new line.
fn sessions(args: &Args) {
    use agent_sessions::SessionManager;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut session =
        SessionManager::create(dir.path(), dir.path().to_path_buf()).expect("session");
    for i in 0..10_000 {
        let text = format!("message {i}: {}", "some words of a conversation ".repeat(6));
        let message = if i % 2 == 0 {
            agent_ai::Message::user(text)
        } else {
            let mut a = agent_ai::AssistantMessage::empty("openai", "gpt");
            a.content = vec![agent_ai::ContentBlock::text(text)];
            agent_ai::Message::Assistant(a)
        };
        session.append_message(&message).expect("append");
    }
    let file = session.session_file().expect("file").to_path_buf();
    drop(session);
    let figure = "session: resume a 10,000-entry file (open + context)";
    if args.wants(figure) {
        let mut secs = Vec::new();
        for _ in 0..args.runs {
            let started = Instant::now();
            let resumed = SessionManager::open(&file).expect("open");
            let messages = resumed.context().messages.len();
            secs.push(started.elapsed().as_secs_f64());
            assert_eq!(messages, 10_000);
        }
        let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        emit(
            args,
            figure,
            secs,
            &format!("{:.1} MB file; target under 100 ms", size as f64 / 1e6),
        );
    }
    let figure = "session: append one entry";
    if args.wants(figure) {
        let mut session = SessionManager::open(&file).expect("open");
        let mut secs = Vec::new();
        let mut growth = Vec::new();
        for i in 0..args.runs.max(5) {
            let before = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            let started = Instant::now();
            session
                .append_message(&agent_ai::Message::user(format!("one more {i}")))
                .expect("append");
            secs.push(started.elapsed().as_secs_f64());
            let after = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            growth.push(after - before);
        }
        let last_line = std::fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .last()
            .map(|l| l.len() as u64 + 1)
            .unwrap_or(0);
        assert_eq!(
            growth.last().copied(),
            Some(last_line),
            "the file grows by the entry's line only"
        );
        emit(
            args,
            figure,
            secs,
            &format!(
                "file grew by {} bytes per entry (its own line), never rewritten",
                last_line
            ),
        );
    }
}
