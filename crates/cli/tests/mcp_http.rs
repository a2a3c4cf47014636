//! `coding-agent mcp --http`: rmcp's own Streamable HTTP client drives it on
//! loopback; raw requests check the DNS-rebinding and token protections.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;

mod mcp_common;
use mcp_common::{args, assert_cancel_kills_the_tree, assert_parallel_calls_overlap, text};

/// A running `coding-agent mcp --http`, killed on drop.
struct Server {
    child: Child,
    url: String,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(cwd: &std::path::Path, agent_dir: &std::path::Path, extra: &[&str]) -> Server {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("coding-agent"))
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
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    // Keep draining so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = stderr.read_to_end(&mut sink);
    });
    let url = line
        .trim()
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
    Server { child, url, port }
}

#[tokio::test]
async fn rmcp_client_lists_and_calls_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let server = start(dir.path(), agent.path(), &[]);
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(server.url.clone()))
            .await
            .expect("initialise over HTTP");

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
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        INITIALIZE.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(INITIALIZE);
    stream.write_all(request.as_bytes()).unwrap();
    let mut status_line = String::new();
    BufReader::new(stream).read_line(&mut status_line).unwrap();
    status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {status_line:?}"))
}

#[test]
fn dns_rebinding_and_token_protection() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    let server = start(dir.path(), agent.path(), &[]);
    let port = server.port;
    let own = format!("127.0.0.1:{port}");
    let local = format!("localhost:{port}");
    assert_eq!(post_status(port, &own, &[]), 200);
    assert_eq!(post_status(port, &local, &[]), 200);
    // A rebinding page reaches us under its own name, or from its origin.
    assert_eq!(post_status(port, &format!("evil.example:{port}"), &[]), 403);
    assert_eq!(
        post_status(port, &own, &[("Origin", "http://evil.example")]),
        403
    );
    assert_eq!(
        post_status(
            port,
            &own,
            &[("Origin", &format!("http://127.0.0.1:{port}"))]
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
    drop(server);

    let server = start(dir.path(), agent.path(), &["--auth-token", "s3cret-token"]);
    let port = server.port;
    let own = format!("127.0.0.1:{port}");
    assert_eq!(post_status(port, &own, &[]), 401);
    assert_eq!(
        post_status(port, &own, &[("Authorization", "Bearer wrong")]),
        401
    );
    assert_eq!(
        post_status(port, &own, &[("Authorization", "Bearer s3cret-token")]),
        200
    );
}

#[test]
fn a_non_loopback_address_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin!("coding-agent"))
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
