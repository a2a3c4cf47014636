//! The output modes (print, JSON, text), flags and exit codes.

use super::*;

#[test]
fn print_mode_prints_the_final_answer() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let s = script(
        dir.path(),
        &[
            json!({"content":[tool_call("c1","read",json!({"path":"a.txt"}))]}),
            json!({"content":[{"type":"text","text":"The file says alpha."}]}),
        ],
    );
    let out = agent()
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .args(["-p", "what is in a.txt?"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "The file says alpha.\n"
    );
}

/// On a terminal, an answer's escape sequences (an OSC 52 clipboard write
/// a repository made the model repeat) are shown, not obeyed; a pipe gets
/// the exact text.
#[test]
fn print_mode_shows_escapes_on_a_terminal_and_passes_them_to_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        &[
            json!({"content":[{"type":"text","text":"copied\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}[2Jdone"}]}),
        ],
    );
    let piped = agent()
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .args(["-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&piped.stdout),
        "copied\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}[2Jdone\n"
    );
    // `script` gives the binary a pseudo-terminal for its stdout.
    let command = format!(
        "{} --script {} --cwd {} -p hi",
        crate::bin().display(),
        s.display(),
        dir.path().display()
    );
    let tty = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env(
            "CODING_AGENT_DIR",
            std::env::temp_dir().join("coding-agent-cli-test-no-such-dir"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&tty.stdout);
    assert!(
        shown.contains("copied\u{241b}]52;c;cm0gLXJmIH4=\u{2407}\u{241b}[2Jdone"),
        "{shown:?}"
    );
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
}

#[test]
fn json_mode_parallel_batch_order() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        &[
            json!({"content":[
                tool_call("slow","bash",json!({"command":"sleep 0.4; echo slow"})),
                tool_call("fast","bash",json!({"command":"echo fast"}))
            ]}),
            json!({"content":[{"type":"text","text":"done"}]}),
        ],
    );
    let out = agent()
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .args(["--mode", "json", "go"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let of = |kind: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["type"] == kind)
            .filter_map(|e| e["toolCallId"].as_str().map(str::to_string))
            .collect()
    };
    assert_eq!(of("tool_execution_start"), ["slow", "fast"]);
    assert_eq!(of("tool_execution_end"), ["fast", "slow"]);
    let results: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .map(|e| e["message"]["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["slow", "fast"]);
    assert_eq!(events.first().unwrap()["type"], "agent_start");
    // The run's events end with agent_end; the session's usage and cost
    // follow as the last line.
    assert_eq!(events[events.len() - 2]["type"], "agent_end");
    assert_eq!(events.last().unwrap()["type"], "session_usage");
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_flag_limits_what_the_model_is_offered() {
    let server = http_server::serve(vec![http_server::Reply::sse(&[
        &json!({"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]})
            .to_string(),
        "[DONE]",
    ])])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", server.base);
    let cwd = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        agent()
            .args([
                "--provider",
                "openai",
                "--base-url",
                &base,
                "--model",
                "local",
                "--tools",
                "read,grep",
            ])
            .arg("--cwd")
            .arg(&cwd)
            .args(["-p", "hello"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    let body = &server.requests()[0].body;
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "grep"]);
    assert_eq!(body["model"], "local");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("- read: ") && system.contains("- grep: ") && !system.contains("- bash: ")
    );
}

#[test]
fn list_tools_and_print_system_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let out = agent()
        .arg("--cwd")
        .arg(dir.path())
        .arg("--list-tools")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read", "bash", "edit", "write", "grep", "find", "ls", "codemode"
        ]
    );
    assert_eq!(tools[0]["active"], true);
    assert_eq!(tools[4]["active"], false);
    // Codemode is there to choose (`--tools +codemode`), off by default.
    assert_eq!(tools[7]["active"], false);
    assert_eq!(tools[0]["parameters"]["required"], json!(["path"]));

    let out = agent()
        .arg("--cwd")
        .arg(dir.path())
        .args(["--print-system-prompt", "--exclude-tools", "bash"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let prompt = String::from_utf8_lossy(&out.stdout);
    assert!(prompt.contains("Available tools:\n- read: "));
    assert!(!prompt.contains("- bash: "));
    assert!(prompt.contains(&format!(
        "Current working directory: {}",
        dir.path().display()
    )));
}

#[test]
fn usage_errors_exit_2() {
    let out = agent().arg("--no-such-flag").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = agent()
        .args(["tool", "nope", "--args", "{}"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unknown tool name: nope"));
    let out = agent()
        .args(["tool", "read", "--args", "{not json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn missing_key_says_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = agent()
        .arg("--cwd")
        .arg(dir.path())
        .args(["-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("OPENAI_API_KEY") && err.contains("ANTHROPIC_API_KEY"),
        "{err}"
    );
    assert!(err.contains("coding-agent demo"), "{err}");
    let out = agent()
        .arg("--cwd")
        .arg(dir.path())
        .args(["--provider", "anthropic", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ANTHROPIC_API_KEY"));
}

/// `--api openai-responses` with `--base-url` and `--api-key` talks the
/// Responses API to any server: here the fake one on loopback.
#[tokio::test(flavor = "multi_thread")]
async fn api_flag_selects_the_responses_api_for_any_server() {
    use test_support::openai_responses::{ResponseScript, Usage};
    let server = http_server::serve(vec![
        ResponseScript::new("resp_1")
            .text("msg_1", &["from ", "responses"])
            .completed(Usage::default()),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", server.base);
    let cwd = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        agent()
            .args(["--api", "openai-responses", "--base-url", &base])
            .args(["--api-key", "sk-x", "--model", "gpt-fake", "--no-session"])
            .arg("--cwd")
            .arg(&cwd)
            .args(["-p", "hello"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from responses\n");
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/responses");
    assert_eq!(req.body["store"], false);
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer sk-x")
    );
}

/// A session's requests carry its id as the Responses `prompt_cache_key`,
/// so the provider reuses the cached prompt from one request to the next;
/// `PI_CACHE_RETENTION=none` asks for no caching.
#[tokio::test(flavor = "multi_thread")]
async fn a_sessions_requests_carry_its_id_for_the_prompt_cache() {
    use test_support::openai_responses::{ResponseScript, Usage};
    let answer = || {
        ResponseScript::new("resp_1")
            .text("msg_1", &["ok"])
            .completed(Usage::default())
    };
    let server = http_server::serve(vec![answer(), answer()]).await;
    let dir = tempfile::tempdir().unwrap();
    let agent_dir = dir.path().join("agent");
    let base = format!("{}/v1", server.base);
    let run = |retention: Option<&'static str>| {
        let (base, agent_dir, cwd) = (base.clone(), agent_dir.clone(), dir.path().to_path_buf());
        tokio::task::spawn_blocking(move || {
            let mut c = agent();
            c.args(["--api", "openai-responses", "--base-url", &base])
                .args(["--api-key", "sk-x", "--model", "gpt-fake"])
                .env("CODING_AGENT_DIR", &agent_dir)
                .arg("--cwd")
                .arg(&cwd)
                .args(["-p", "hello"]);
            match retention {
                Some(r) => c.env("PI_CACHE_RETENTION", r),
                None => c.env_remove("PI_CACHE_RETENTION"),
            };
            c.output().unwrap()
        })
    };
    let out = run(None).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<std::path::PathBuf> = walk(&agent_dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&files[0])
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let id = header["id"].as_str().expect("the session has an id");
    assert_eq!(server.requests()[0].body["prompt_cache_key"], id);
    let out = run(Some("none")).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(server.requests()[1].body.get("prompt_cache_key").is_none());
}

#[test]
fn model_error_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        &[json!({"content":[],"stopReason":"error","errorMessage":"boom"})],
    );
    let out = agent()
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .args(["-p", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("boom"));
}

#[test]
fn text_mode_never_passes_control_sequences_through() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        &[
            json!({"content":[
                {"type":"text","text":"copying \u{1b}]52;c;cm0gLXJmIH4=\u{7} now"},
                tool_call("c1","bash",json!({"command": "printf 'out\\033]0;pwned\\007\\033[2K\\033[1A\\r'; echo \u{1b}[31mred"}))
            ]}),
            json!({"content":[{"type":"text","text":"done \u{1b}[2J"}]}),
        ],
    );
    let out = agent()
        .args(["--script"])
        .arg(&s)
        .arg("--cwd")
        .arg(dir.path())
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains('\u{1b}'), "raw escape in: {stdout:?}");
    assert!(!stdout.contains('\u{7}'), "raw BEL in: {stdout:?}");
    assert!(stdout.contains("␛]52;c;"), "{stdout}");
    assert!(stdout.contains("done ␛[2J"), "{stdout}");
}
