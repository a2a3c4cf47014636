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
use agent_tool::{FileMutationQueue, ToolDefinition, ToolSettings, WorkingDir};
use agent_tool::{TypedTool, typed_tool};
use serde_json::{Value, json};
use test_support::bench::{Args, args, emit};
use test_support::corpus;

async fn call(
    tool: &ToolDefinition,
    cwd: &Path,
    args: Value,
) -> Result<AgentToolResult, ToolError> {
    let mut extensions = agent_core::Extensions::new();
    extensions.insert(WorkingDir::new(cwd));
    extensions.insert(ToolSettings::default());
    extensions.insert(FileMutationQueue::new());
    let cx = ToolCallContext::new("bench").with_extensions(extensions);
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
}
