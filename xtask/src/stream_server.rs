//! A loopback model server for the streaming benchmark: every request gets
//! the same event stream of a long answer in tiny deltas, in the shapes of
//! one of the wire APIs.

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

/// The wire APIs the server can speak.
pub const APIS: [&str; 5] = [
    "openai-completions",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
    "bedrock-converse-stream",
];

/// Starts `cargo xtask stream-server API TOTAL PIECE` (this binary) and
/// waits for the port it serves on. `API` is one of [`APIS`], or
/// `rate-limited` (every request gets a 429 asking to wait two days).
pub fn spawn(api: &str, total: usize, piece: usize) -> Result<StreamServer> {
    use std::io::BufRead;
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .args(["stream-server", api, &total.to_string(), &piece.to_string()])
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

/// `cargo xtask stream-server API TOTAL PIECE`: serves until killed, after
/// printing its port.
pub fn serve_forever(args: &[String]) -> Result<()> {
    let api = args.first().map_or("openai-completions", String::as_str);
    let total = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1 << 20);
    let piece = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(4);
    let server = serve(&response(api, total, piece)?)?;
    println!("{}", server.port);
    loop {
        std::thread::park();
    }
}

impl StreamServer {
    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// The whole HTTP response: an answer of `total` bytes of text in deltas of
/// `piece` bytes, as `api` streams it (the fakes the tests trust, whose
/// shapes the vendors' SDKs referee).
fn response(api: &str, total: usize, piece: usize) -> Result<Vec<u8>> {
    use test_support::{anthropic, bedrock, chat_completions, gemini, openai_responses};
    let delta = "x".repeat(piece.max(1));
    let pieces: Vec<&str> = vec![delta.as_str(); total / piece.max(1)];
    let reply = match api {
        "openai-completions" => pieces
            .iter()
            .fold(chat_completions::ChatScript::new(), |s, p| s.content(p))
            .finish("stop"),
        "openai-responses" => openai_responses::ResponseScript::new("resp_bench")
            .text("msg_bench", &pieces)
            .completed(Default::default()),
        "anthropic-messages" => anthropic::AnthropicScript::new()
            .text_in(&pieces)
            .stop("end_turn"),
        "google-generative-ai" => gemini::GeminiScript::new()
            .text(&pieces)
            .stop(Default::default()),
        "bedrock-converse-stream" => bedrock::BedrockScript::new()
            .text(&pieces)
            .stop("end_turn", Default::default()),
        "rate-limited" => test_support::http_server::Reply::status(
            429,
            r#"{"error":{"message":"slow down","type":"rate_limit"}}"#,
        )
        .header("retry-after", "172800"),
        other => anyhow::bail!("stream-server: unknown API {other:?}"),
    };
    let body: Vec<u8> = reply.chunks.into_iter().flat_map(|(_, c)| c).collect();
    let mut out = format!("HTTP/1.1 {} Bench\r\n", reply.status);
    for (k, v) in &reply.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&body);
    Ok(bytes)
}

/// Serves `response` to every request, after reading the request whole.
fn serve(response: &[u8]) -> Result<StreamServer> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let response = std::sync::Arc::new(response.to_vec());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let response = response.clone();
            std::thread::spawn(move || {
                read_request(&mut stream);
                let _ = stream.write_all(&response);
            });
        }
    });
    Ok(StreamServer { port, child: None })
}

/// Reads a request's head and its body, so the answer follows it whole.
fn read_request(stream: &mut std::net::TcpStream) {
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
}

/// A Chat Completions server in this process whose answer streams at a
/// set pace: the terminal UI benchmark's model.
pub struct PacedServer {
    port: u16,
    /// When the last answer's last byte was written (`clock`'s reading,
    /// 0 before).
    finished: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The events, and when each was last written (0 before).
    events: std::sync::Arc<Vec<Vec<u8>>>,
    written: std::sync::Arc<Vec<std::sync::atomic::AtomicU64>>,
}

impl PacedServer {
    /// `http://127.0.0.1:PORT/v1`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// When the last answer's last byte was written (0 before).
    pub fn finished(&self) -> u64 {
        self.finished.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// When the first event holding `text` was written, if it was.
    pub fn written_at(&self, text: &str) -> Option<u64> {
        let i = self
            .events
            .iter()
            .position(|e| e.windows(text.len()).any(|w| w == text.as_bytes()))?;
        let at = self.written[i].load(std::sync::atomic::Ordering::SeqCst);
        (at != 0).then_some(at)
    }
}

/// Serves every request the answer `pieces`, one SSE event each, event
/// `i` written `i * pace` after the first (on a schedule, so small paces
/// do not add up their overheads); `clock` stamps the end.
pub fn serve_paced(
    pieces: &[String],
    pace: std::time::Duration,
    clock: fn() -> u64,
) -> Result<PacedServer> {
    let reply = pieces
        .iter()
        .fold(test_support::chat_completions::ChatScript::new(), |s, p| {
            s.content(p)
        })
        .finish("stop");
    let mut head = format!("HTTP/1.1 {} Bench\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("connection: close\r\n\r\n");
    let events: std::sync::Arc<Vec<Vec<u8>>> =
        std::sync::Arc::new(reply.chunks.into_iter().map(|(_, c)| c).collect());
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let finished = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let written: std::sync::Arc<Vec<std::sync::atomic::AtomicU64>> = std::sync::Arc::new(
        events
            .iter()
            .map(|_| std::sync::atomic::AtomicU64::new(0))
            .collect(),
    );
    let (done, stamps, served) = (finished.clone(), written.clone(), events.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (events, head, done) = (served.clone(), head.clone(), done.clone());
            let stamps = stamps.clone();
            std::thread::spawn(move || {
                read_request(&mut stream);
                let _ = stream.set_nodelay(true);
                if stream.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let start = std::time::Instant::now();
                for (i, event) in events.iter().enumerate() {
                    let due = pace * i as u32;
                    if let Some(wait) = due.checked_sub(start.elapsed()) {
                        std::thread::sleep(wait);
                    }
                    if stream.write_all(event).is_err() {
                        return;
                    }
                    stamps[i].store(clock(), std::sync::atomic::Ordering::SeqCst);
                }
                done.store(clock(), std::sync::atomic::Ordering::SeqCst);
            });
        }
    });
    Ok(PacedServer {
        port,
        finished,
        events,
        written,
    })
}
