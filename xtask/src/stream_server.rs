//! A loopback model server for the streaming benchmark: every request gets
//! the same OpenAI-style event stream of a long answer in tiny deltas.

use std::io::{Read, Write};
use std::net::TcpListener;

use anyhow::Result;

/// A running server; it lives as long as the process that serves it.
pub struct StreamServer {
    port: u16,
    child: Option<std::process::Child>,
}

impl Drop for StreamServer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `cargo xtask stream-server TOTAL PIECE` (this binary) and waits
/// for the port it serves on.
pub fn spawn(total: usize, piece: usize) -> Result<StreamServer> {
    use std::io::BufRead;
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .args(["stream-server", &total.to_string(), &piece.to_string()])
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let mut line = String::new();
    std::io::BufReader::new(stdout).read_line(&mut line)?;
    let port = line.trim().parse()?;
    Ok(StreamServer {
        port,
        child: Some(child),
    })
}

/// `cargo xtask stream-server TOTAL PIECE`: serves until killed, after
/// printing its port.
pub fn serve_forever(args: &[String]) -> Result<()> {
    let total = args.first().and_then(|a| a.parse().ok()).unwrap_or(1 << 20);
    let piece = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(4);
    let server = serve_text_in_deltas(total, piece)?;
    println!("{}", server.port);
    loop {
        std::thread::park();
    }
}

impl StreamServer {
    /// The base URL to give the OpenAI provider.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

/// Serves an answer of `total` bytes of text in deltas of `piece` bytes.
pub fn serve_text_in_deltas(total: usize, piece: usize) -> Result<StreamServer> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let delta = "x".repeat(piece);
    let event = format!(
        "data: {{\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{delta}\"}},\"finish_reason\":null}}]}}\n\n"
    );
    let mut body = String::with_capacity(event.len() * (total / piece) + 256);
    for _ in 0..total / piece {
        body.push_str(&event);
    }
    body.push_str("data: {\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let response = response.clone();
            std::thread::spawn(move || {
                // Read the request head and its body before answering.
                let mut request = Vec::new();
                let mut buf = [0u8; 16 * 1024];
                let mut wanted = None;
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                    if wanted.is_none()
                        && let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n")
                    {
                        let head = String::from_utf8_lossy(&request[..end]).to_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        wanted = Some(end + 4 + length);
                    }
                    if wanted.is_some_and(|w| request.len() >= w) {
                        break;
                    }
                }
                let _ = stream.write_all(response.as_bytes());
            });
        }
    });
    Ok(StreamServer { port, child: None })
}
