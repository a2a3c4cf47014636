//! `coding-agent mcp --http`: rmcp's own Streamable HTTP client drives it on
//! loopback; raw requests check the DNS-rebinding and token protections.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

use test_support::mcp::{args, assert_cancel_kills_the_tree, assert_parallel_calls_overlap, text};

/// A running `coding-agent mcp --http`, killed on drop.
struct Server {
    child: Child,
    url: String,
    port: u16,
    /// The token every request carries (given or generated).
    token: String,
    /// Where a generated token was written.
    token_file: Option<std::path::PathBuf>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// rmcp's client, sending the token.
    async fn client(&self) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
        // rmcp's reqwest client needs a TLS provider installed, as in the agent.
        agent_ai::providers::install_tls_provider();
        let config = StreamableHttpClientTransportConfig::with_uri(self.url.clone())
            .auth_header(self.token.clone());
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("initialise over HTTP")
    }

    fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }
}

fn start(cwd: &std::path::Path, agent_dir: &std::path::Path, extra: &[&str]) -> Server {
    start_with(Command::new(crate::bin()), cwd, agent_dir, extra)
}

/// Starts `command` (the binary, or a wrapper running it) as the server.
fn start_with(
    mut command: Command,
    cwd: &std::path::Path,
    agent_dir: &std::path::Path,
    extra: &[&str],
) -> Server {
    let mut child = command
        .arg("mcp")
        .arg("--cwd")
        .arg(cwd)
        .args(["--http", "127.0.0.1:0"])
        .args(extra)
        .env("CODING_AGENT_DIR", agent_dir)
        .env_remove("CODING_AGENT_MCP_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut read_line = || {
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        line.trim().to_string()
    };
    // Warnings (a token on the command line) may come first.
    let mut line = read_line();
    while !line.contains("http://") && !line.is_empty() {
        line = read_line();
    }
    let url = line
        .rsplit(' ')
        .next()
        .filter(|u| u.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let given = extra
        .iter()
        .position(|a| *a == "--auth-token")
        .map(|i| extra[i + 1].to_string())
        .or_else(|| {
            extra
                .iter()
                .position(|a| *a == "--auth-token-file")
                .map(|i| {
                    std::fs::read_to_string(extra[i + 1])
                        .unwrap()
                        .trim()
                        .to_string()
                })
        });
    let (token, token_file) = match given {
        Some(t) => (t, None),
        None => {
            let token_line = read_line();
            let token = token_line
                .strip_prefix("coding-agent mcp: auth token: ")
                .unwrap_or_else(|| panic!("no token in {token_line:?}"))
                .to_string();
            let file_line = read_line();
            let file = file_line
                .strip_prefix("coding-agent mcp: token file (mode 0600): ")
                .unwrap_or_else(|| panic!("no token file in {file_line:?}"));
            (token, Some(file.into()))
        }
    };
    // Keep draining so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = stderr.read_to_end(&mut sink);
    });
    Server {
        child,
        url,
        port,
        token,
        token_file,
    }
}

#[tokio::test]
async fn rmcp_client_lists_and_calls_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let server = start(dir.path(), agent.path(), &[]);
    let client = server.client().await;

    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        names,
        ["read", "bash", "edit", "write", "grep", "find", "ls"]
    );

    let out = client
        .call_tool(
            CallToolRequestParams::new("read").with_arguments(args(json!({"path": "a.txt"}))),
        )
        .await
        .unwrap();
    assert_eq!(
        (out.is_error, text(&out).as_str()),
        (Some(false), "one\ntwo\n")
    );

    let out = client
        .call_tool(CallToolRequestParams::new("read").with_arguments(args(json!({"path": 5}))))
        .await
        .unwrap();
    assert_eq!(out.is_error, Some(true), "{}", text(&out));

    let err = client
        .call_tool(CallToolRequestParams::new("nope").with_arguments(args(json!({}))))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");

    // Two slow calls from one client run at once.
    assert_parallel_calls_overlap(client.peer()).await;
    // Cancelling a call over HTTP kills its process tree.
    let marker = format!("mcp-http-cancel-{}", std::process::id());
    assert_cancel_kills_the_tree(client.peer(), &marker).await;
    client.cancel().await.unwrap();
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// POSTs an initialize request with the given extra headers; the status code.
fn post_status(port: u16, host: &str, headers: &[(&str, &str)]) -> u16 {
    post(port, host, headers).0
}

/// POSTs an initialize request; the status code and the response head.
fn post(port: u16, host: &str, headers: &[(&str, &str)]) -> (u16, String) {
    send(port, host, INITIALIZE, headers)
}

/// POSTs a ping within a session; the status code and the response head.
fn post_to_session(
    port: u16,
    host: &str,
    session: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut headers = headers.to_vec();
    headers.push(("Mcp-Session-Id", session));
    headers.push(("MCP-Protocol-Version", "2025-06-18"));
    send(
        port,
        host,
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        &headers,
    )
}

fn send(port: u16, host: &str, body: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    (status, head)
}

/// The `Mcp-Session-Id` of a response head.
fn session_id(head: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_string())
    })
}

#[test]
fn dns_rebinding_and_token_protection() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    let server = start(dir.path(), agent.path(), &["--auth-token", "s3cret-token"]);
    let port = server.port;
    let auth = ("Authorization", "Bearer s3cret-token");
    let own = format!("127.0.0.1:{port}");
    let local = format!("localhost:{port}");
    assert_eq!(post_status(port, &own, &[auth]), 200);
    assert_eq!(post_status(port, &local, &[auth]), 200);
    // A rebinding page reaches us under its own name, or from its origin.
    assert_eq!(
        post_status(port, &format!("evil.example:{port}"), &[auth]),
        403
    );
    assert_eq!(
        post_status(port, &own, &[auth, ("Origin", "http://evil.example")]),
        403
    );
    assert_eq!(
        post_status(
            port,
            &own,
            &[auth, ("Origin", &format!("http://127.0.0.1:{port}"))]
        ),
        200
    );
    // Only /mcp is served.
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET / HTTP/1.1\r\nHost: {own}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    assert!(line.contains(" 404 "), "{line}");
    // The token: missing, wrong, right.
    assert_eq!(post_status(port, &own, &[]), 401);
    assert_eq!(
        post_status(port, &own, &[("Authorization", "Bearer wrong")]),
        401
    );
    assert_eq!(
        post_status(
            port,
            &own,
            &[("Authorization", "Bearer s3cret-token-and-more")]
        ),
        401
    );
}

/// Any local user can reach a loopback port, so a token is required there
/// too: without one given, the server makes one, prints it and writes it to
/// a file only its owner can read, removed when the server ends.
#[test]
fn a_token_is_required_on_loopback_too() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    let mut server = start(dir.path(), agent.path(), &[]);
    let port = server.port;
    let own = format!("127.0.0.1:{port}");
    assert_eq!(post_status(port, &own, &[]), 401, "no token, no service");
    assert_eq!(
        post_status(port, &own, &[("Authorization", "Bearer ")]),
        401
    );
    assert_eq!(
        post_status(port, &own, &[("Authorization", &server.bearer())]),
        200
    );
    assert_eq!(server.token.len(), 64, "{}", server.token);

    let file = server.token_file.clone().unwrap();
    assert!(file.starts_with(agent.path()), "{}", file.display());
    let meta = std::fs::symlink_metadata(&file).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.uid(), rustix::process::geteuid().as_raw());
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), server.token);

    // Two servers make two tokens.
    let other = start(dir.path(), agent.path(), &[]);
    assert_ne!(other.token, server.token);

    // A clean end removes the file.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(server.child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    server.child.wait().unwrap();
    assert!(!file.exists(), "token file left behind");
}

/// The token can come from a file, so it never shows in `ps`; one given on
/// the command line draws a warning.
#[test]
fn the_token_can_come_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "file-token-value\n").unwrap();
    let server = start(
        dir.path(),
        agent.path(),
        &["--auth-token-file", file.to_str().unwrap()],
    );
    let own = format!("127.0.0.1:{}", server.port);
    assert_eq!(server.token, "file-token-value");
    assert_eq!(
        post_status(
            server.port,
            &own,
            &[("Authorization", "Bearer file-token-value")]
        ),
        200
    );
    assert_eq!(post_status(server.port, &own, &[]), 401);
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", server.child.id())).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains("file-token-value"));
    // On the command line: served, with a warning.
    let out = Command::new(crate::bin())
        .args(["mcp", "--http", "127.0.0.1:0", "--auth-token", "argv-token"])
        .arg("--cwd")
        .arg(dir.path())
        .env("CODING_AGENT_DIR", agent.path())
        .env_remove("CODING_AGENT_MCP_TOKEN")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = out;
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(first.contains("every local user"), "{first}");
}

/// Hundreds of clients that send half a request (slowloris) hold no place:
/// a real client is still served, and an idle half-sent connection is
/// closed once the cap is reached.
#[test]
fn half_sent_requests_do_not_lock_out_clients() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    let server = start(
        dir.path(),
        agent.path(),
        &["--auth-token", "tok", "--max-connections", "16"],
    );
    let port = server.port;
    let own = format!("127.0.0.1:{port}");
    let mut stalled = Vec::new();
    for _ in 0..300 {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        // Headers never finished.
        s.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {own}\r\nX-Slow: 1").as_bytes())
            .unwrap();
        stalled.push(s);
    }
    // Headers in, body trickling: a request in progress, bounded in time.
    let mut trickle = TcpStream::connect(("127.0.0.1", port)).unwrap();
    trickle
        .write_all(
            format!("POST /mcp HTTP/1.1\r\nHost: {own}\r\nAuthorization: Bearer tok\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{").as_bytes(),
        )
        .unwrap();
    // A real client gets through (post_status waits at most 30 s for it).
    assert_eq!(
        post_status(port, &own, &[("Authorization", "Bearer tok")]),
        200
    );
    // The first stalled connections were closed to make room.
    let mut first = stalled.remove(0);
    first
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut buf = [0u8; 64];
    let n = first.read(&mut buf).unwrap_or(0);
    assert_eq!(
        n,
        0,
        "an idle half-sent connection stays open: {:?}",
        &buf[..n]
    );
}

/// `initialize` beyond the session cap gets 503 with Retry-After, and an
/// idle session is closed after the idle timeout, making room again.
#[test]
fn sessions_are_capped_and_idle_ones_expire() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    let server = start(
        dir.path(),
        agent.path(),
        &[
            "--auth-token",
            "tok",
            "--max-sessions",
            "3",
            "--session-idle-timeout",
            "1",
        ],
    );
    let port = server.port;
    let own = format!("127.0.0.1:{port}");
    let auth = ("Authorization", "Bearer tok");
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let (status, head) = post(port, &own, &[auth]);
        assert_eq!(status, 200, "{head}");
        sessions.push(session_id(&head).unwrap_or_else(|| panic!("no session in {head}")));
    }
    let (status, head) = post(port, &own, &[auth]);
    assert_eq!(status, 503, "{head}");
    assert!(head.to_ascii_lowercase().contains("retry-after:"), "{head}");
    // Idle sessions expire: a new one is accepted again, and an expired
    // session id is no longer known.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (status, _) = post(port, &own, &[auth]);
        if status == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no session ever expired"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (status, head) = post_to_session(port, &own, &sessions[0], &[auth]);
    assert_eq!(status, 404, "{head}");
}

/// The server honours `maxParallelTools`: with 2, never more than two of
/// eight slow bash calls run at once.
#[tokio::test]
async fn max_parallel_tools_bounds_the_calls_running_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    std::fs::write(
        agent.path().join("settings.json"),
        r#"{"maxParallelTools": 2}"#,
    )
    .unwrap();
    let log = dir.path().join("log");
    let server = start(dir.path(), agent.path(), &["--auth-token", "tok"]);
    let client = server.client().await;
    let command = format!(
        "echo + >> '{0}'; sleep 0.3; echo - >> '{0}'; echo ok",
        log.display()
    );
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let peer = client.peer().clone();
        let params = CallToolRequestParams::new("bash")
            .with_arguments(args(json!({"command": command.clone()})));
        calls.spawn(async move { peer.call_tool(params).await });
    }
    while let Some(result) = calls.join_next().await {
        assert_eq!(text(&result.unwrap().unwrap()), "ok\n");
    }
    let (mut running, mut most) = (0i32, 0i32);
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        running += if line == "+" { 1 } else { -1 };
        most = most.max(running);
    }
    assert!(most <= 2, "{most} calls ran at once");
    assert!(most >= 1);
    client.cancel().await.unwrap();
}

/// Without `maxParallelTools`, the bound comes from the open-file limit:
/// 300 parallel bash calls under `ulimit -n 256` all succeed (none fails
/// with "too many open files").
#[tokio::test]
async fn parallel_calls_stay_within_the_open_file_limit() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    let mut wrapper = Command::new("sh");
    wrapper.args([
        "-c",
        "ulimit -n 256 && exec \"$0\" \"$@\"",
        crate::bin().to_str().unwrap(),
    ]);
    let server = start_with(wrapper, dir.path(), agent.path(), &["--auth-token", "tok"]);
    let client = server.client().await;
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..300 {
        let peer = client.peer().clone();
        let params = CallToolRequestParams::new("bash")
            .with_arguments(args(json!({"command": format!("echo call {i}")})));
        calls.spawn(async move { (i, peer.call_tool(params).await) });
    }
    let mut failed = Vec::new();
    while let Some(joined) = calls.join_next().await {
        let (i, result) = joined.unwrap();
        match result {
            Ok(r) if text(&r) == format!("call {i}\n") && r.is_error != Some(true) => {}
            other => failed.push(format!("{i}: {other:?}")),
        }
    }
    assert!(
        failed.is_empty(),
        "{} failed, first: {:?}",
        failed.len(),
        failed.first()
    );
    client.cancel().await.unwrap();
}

#[test]
fn a_non_loopback_address_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(crate::bin())
        .args(["mcp", "--http", "0.0.0.0:0", "--cwd"])
        .arg(dir.path())
        .env("CODING_AGENT_DIR", dir.path())
        .env_remove("CODING_AGENT_MCP_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("without an auth token"), "{stderr}");
}
