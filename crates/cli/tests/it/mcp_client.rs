//! The agent using tools of an MCP server that is not ours: a server built
//! with the official Python SDK (`pip install mcp`; `.ci/run` installs it).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::agent_loop::tool_call;

/// Whether the Python SDK is there; on CI (`CI=true`) its absence fails
/// the test instead of skipping it.
fn python_sdk_available() -> bool {
    test_support::python_package("mcp.server.mcpserver", "mcp")
}

fn server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python_mcp_server.py")
}

fn write_config(dir: &Path, extra_args: &[&str], startup: f64) -> PathBuf {
    let mut args = vec![server_script().display().to_string()];
    args.extend(extra_args.iter().map(|s| s.to_string()));
    let config = json!({"mcpServers": {"py echo": {
        "command": "python3", "args": args, "startupTimeoutSec": startup, "toolTimeoutSec": 20
    }}});
    let path = dir.join("mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

fn agent(
    dir: &Path,
    config: &Path,
    script_turns: &[Value],
    extra: &[&str],
) -> std::process::Output {
    let script = dir.join("script.jsonl");
    let text: String = script_turns.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&script, text).unwrap();
    std::process::Command::new(crate::bin())
        .env("CODING_AGENT_DIR", dir.join("agent-dir"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .arg("--mcp-config")
        .arg(config)
        .arg("--script")
        .arg(&script)
        .arg("--cwd")
        .arg(dir)
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn tool_results(stdout: &[u8]) -> Vec<(String, String, bool)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_execution_end")
        .map(|e| {
            (
                e["toolName"].as_str().unwrap_or("").to_string(),
                e["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                e["isError"] == true,
            )
        })
        .collect()
}

#[test]
fn tools_of_a_python_sdk_server_are_listed_validated_and_called() {
    if !python_sdk_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &[], 30.0);
    // Listed with sanitised names.
    let out = agent(dir.path(), &config, &[], &["--list-tools"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for expected in [
        "mcp__py_echo__shout",
        "mcp__py_echo__double_it_v2",
        "mcp__py_echo__crash",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }

    let out = agent(
        dir.path(),
        &config,
        &[
            json!({"content":[
                tool_call("c1", "mcp__py_echo__shout", json!({"text": "hello"})),
                tool_call("c2", "mcp__py_echo__double_it_v2", json!({"n": "21"})),
                tool_call("c3", "mcp__py_echo__shout", json!({})),
            ]}),
            json!({"content":[{"type":"text","text":"done"}]}),
        ],
        &["--mode", "json", "go"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut results = tool_results(&out.stdout);
    results.sort();
    // "21" was coerced to 21 by our validation before the server saw it.
    assert!(
        results.contains(&("mcp__py_echo__double_it_v2".into(), "42".into(), false)),
        "{results:?}"
    );
    assert!(
        results.contains(&("mcp__py_echo__shout".into(), "HELLO".into(), false)),
        "{results:?}"
    );
    // Missing argument: refused by our validation against the server's schema.
    assert!(
        results
            .iter()
            .any(|(n, t, e)| n == "mcp__py_echo__shout" && *e && t.contains("text")),
        "{results:?}"
    );
}

#[test]
fn a_crashing_server_is_restarted_and_a_hanging_one_is_skipped() {
    if !python_sdk_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &[], 30.0);
    let out = agent(
        dir.path(),
        &config,
        &[
            json!({"content":[tool_call("c1", "mcp__py_echo__crash", json!({}))]}),
            json!({"content":[tool_call("c2", "mcp__py_echo__shout", json!({"text": "again"}))]}),
            json!({"content":[{"type":"text","text":"done"}]}),
        ],
        &["--mode", "json", "go"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&out.stdout);
    assert!(results[0].2, "the crash is an error result: {results:?}");
    assert_eq!(
        results[1],
        ("mcp__py_echo__shout".into(), "AGAIN".into(), false)
    );

    // A server that never finishes starting: a warning, and the agent runs.
    let config = write_config(dir.path(), &["--hang"], 1.0);
    let started = Instant::now();
    let out = agent(
        dir.path(),
        &config,
        &[json!({"content":[{"type":"text","text":"fine"}]})],
        &["-p", "go"],
    );
    assert!(started.elapsed() < Duration::from_secs(20)); // hang guard
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("MCP server py echo"), "{stderr}");
    assert!(stderr.contains("startupTimeoutSec"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "fine");
}

#[test]
fn a_tool_added_by_list_changed_is_usable_in_the_same_run() {
    if !python_sdk_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &[], 30.0);
    let out = agent(
        dir.path(),
        &config,
        &[
            json!({"content":[tool_call("c1", "mcp__py_echo__grow", json!({}))]}),
            // The server announced late_tool; the next request offers it.
            json!({"content":[tool_call("c2", "mcp__py_echo__late_tool", json!({"word": "bloomer"}))]}),
            json!({"content":[{"type":"text","text":"done"}]}),
        ],
        &["--mode", "json", "go"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&out.stdout);
    assert_eq!(
        results,
        [
            ("mcp__py_echo__grow".into(), "grown".into(), false),
            (
                "mcp__py_echo__late_tool".into(),
                "late bloomer".into(),
                false
            ),
        ]
    );
}

/// A free loopback port (bound and released; the server binds it next).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn tools_of_a_python_sdk_server_over_streamable_http() {
    if !python_sdk_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut server = std::process::Command::new("python3")
        .arg(server_script())
        .args(["--http", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the Python server did not listen"
        );
        if let Ok(Some(status)) = server.try_wait() {
            panic!("the Python server exited: {status}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _server = Kill(server);
    let config = dir.path().join("http.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"web": {
            "url": format!("http://127.0.0.1:{port}/mcp"),
            "headers": {"X-Test": "${CODING_AGENT_TEST_HEADER:-fallback}"}
        }}})
        .to_string(),
    )
    .unwrap();
    let out = agent(
        dir.path(),
        &config,
        &[
            json!({"content":[
                tool_call("c1", "mcp__web__shout", json!({"text": "over http"})),
                tool_call("c2", "mcp__web__double_it_v2", json!({"n": 4})),
            ]}),
            json!({"content":[{"type":"text","text":"done"}]}),
        ],
        &["--mode", "json", "go"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut results = tool_results(&out.stdout);
    results.sort();
    assert_eq!(
        results,
        [
            ("mcp__web__double_it_v2".into(), "8".into(), false),
            ("mcp__web__shout".into(), "OVER HTTP".into(), false),
        ]
    );
}

#[test]
fn an_unset_variable_in_the_config_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"x": {"url": "http://127.0.0.1:9/mcp",
            "headers": {"Authorization": "Bearer ${CODING_AGENT_SURELY_UNSET_VAR}"}}}})
        .to_string(),
    )
    .unwrap();
    let out = agent(dir.path(), &config, &[], &["--list-tools"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("CODING_AGENT_SURELY_UNSET_VAR") && stderr.contains("mcpServers.x"),
        "{stderr}"
    );
}

/// An HTTP server that answers 401 is reported as needing a sign-in, named
/// with the command that gives one; a stored token issued for another
/// address is not sent to it.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_needs_sign_in_says_how_and_gets_no_foreign_token() {
    use test_support::http_server::{Reply, serve};
    let challenge =
        "Bearer resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource\"";
    let replies = (0..20)
        .map(|_| Reply::status(401, "").header("WWW-Authenticate", challenge))
        .collect();
    let server = serve(replies).await;
    let dir = tempfile::tempdir().unwrap();
    let agent_dir = dir.path().join("agent-dir");
    let auth = agent_dir.join("mcp-auth");
    std::fs::create_dir_all(&auth).unwrap();
    // The file the server's name and URL lead to, recording another URL.
    let url = format!("{}/mcp", server.base);
    let hash = url.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    std::fs::write(
        auth.join(format!("hosted-{hash:016x}.json")),
        json!({"version": 1, "server": "hosted", "url": "https://elsewhere.example/mcp",
               "credentials": {"client_id": "c", "granted_scopes": [],
                               "token_response": {"access_token": "TOKEN-FOR-ELSEWHERE", "token_type": "bearer"}}})
        .to_string(),
    )
    .unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"hosted": {"url": format!("{}/mcp", server.base)}}}).to_string(),
    )
    .unwrap();
    let out = tokio::process::Command::new(crate::bin())
        .env("CODING_AGENT_DIR", &agent_dir)
        .arg("--mcp-config")
        .arg(&config)
        .arg("--cwd")
        .arg(dir.path())
        .arg("--list-tools")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "MCP server hosted: needs OAuth sign-in at {url}: run `coding-agent mcp login hosted`"
        )),
        "{stderr}"
    );
    let requests = server.requests();
    assert!(!requests.is_empty());
    for request in requests {
        assert!(
            !request
                .headers
                .iter()
                .any(|(_, v)| v.contains("TOKEN-FOR-ELSEWHERE")),
            "the token went to the wrong server: {:?}",
            request.headers
        );
    }
}
