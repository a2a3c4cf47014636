//! A scripted HTTP/1.1 server on 127.0.0.1 for provider tests: each request
//! takes the next reply; every request's path, headers and JSON body are kept.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One scripted reply.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<(String, String)>,
    /// Body pieces, each sent after its delay.
    pub chunks: Vec<(Duration, Vec<u8>)>,
}

impl Reply {
    /// 200 with an SSE body made of `events` (each already `data: ...`-formatted or raw JSON).
    pub fn sse(events: &[&str]) -> Self {
        let chunks = events
            .iter()
            .map(|e| {
                let line = if e.starts_with("data:") || e.starts_with("event:") {
                    format!("{e}\n\n")
                } else {
                    format!("data: {e}\n\n")
                };
                (Duration::from_millis(1), line.into_bytes())
            })
            .collect();
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks,
        }
    }

    /// 200 with an SSE body of typed events: each an `event:` line naming
    /// its `type` and a `data:` line (as OpenAI's Responses API and
    /// Anthropic send them).
    pub fn typed_sse(events: &[Value]) -> Self {
        let lines: Vec<String> = events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}", e["type"].as_str().unwrap_or("")))
            .collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        Reply::sse(&refs)
    }

    /// A status with a JSON body.
    pub fn status(status: u16, body: &str) -> Self {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![(Duration::ZERO, body.as_bytes().to_vec())],
        }
    }

    /// With one more header.
    pub fn header(mut self, k: &str, v: &str) -> Self {
        self.headers.push((k.into(), v.into()));
        self
    }

    /// Each body piece sent after `d`.
    pub fn delay_each(mut self, d: Duration) -> Self {
        for c in &mut self.chunks {
            c.0 = d;
        }
        self
    }
}

/// A recorded request.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The method (`POST`).
    pub method: String,
    /// The request target.
    pub path: String,
    /// Headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`null` when it is not).
    pub body: Value,
    /// The body's bytes as received (what a signature covers).
    pub raw_body: Vec<u8>,
}

impl Recorded {
    /// The value of a header (`name` in lower case), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A running server.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Every request so far.
    pub requests: Arc<Mutex<Vec<Recorded>>>,
}

impl TestServer {
    /// The requests so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

/// Serves `replies`, one per request in order (a 500 once they run out),
/// on a task of the current runtime.
pub async fn serve(replies: Vec<Reply>) -> TestServer {
    let replies = Mutex::new(std::collections::VecDeque::from(replies));
    serve_fn(move |_| replies.lock().unwrap().pop_front()).await
}

/// Serves what `answer` makes of each request (a 500 for `None`), on a task
/// of the current runtime: for a fake whose replies depend on what it is
/// asked (an authorization server echoing a `state`, say).
pub async fn serve_fn(
    answer: impl Fn(&Recorded) -> Option<Reply> + Send + Sync + 'static,
) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests: Arc<Mutex<Vec<Recorded>>> = Default::default();
    let answer = Arc::new(answer);
    let recorded = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let answer = answer.clone();
            let recorded = recorded.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut tmp = [0u8; 8192];
                let head_end = loop {
                    if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break p + 4;
                    }
                    match socket.read(&mut tmp).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&tmp[..n]),
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let mut lines = head.lines();
                let mut request_line = lines.next().unwrap_or("").split_whitespace();
                let method = request_line.next().unwrap_or("").to_string();
                let path = request_line.next().unwrap_or("/").to_string();
                let headers: Vec<(String, String)> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
                    .collect();
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k == "content-length")
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                while buf.len() < head_end + len {
                    match socket.read(&mut tmp).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&tmp[..n]),
                    }
                }
                let raw_body = buf[head_end..].to_vec();
                let body = serde_json::from_slice(&raw_body).unwrap_or(Value::Null);
                let request = Recorded {
                    method,
                    path,
                    headers,
                    body,
                    raw_body,
                };
                let reply = answer(&request);
                recorded.lock().unwrap().push(request);
                let Some(reply) = reply else {
                    let _ = socket
                        .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 30\r\nconnection: close\r\n\r\n{\"error\":\"no scripted reply\"}\n")
                        .await;
                    return;
                };
                let mut head = format!(
                    "HTTP/1.1 {} Scripted\r\nconnection: close\r\n",
                    reply.status
                );
                for (k, v) in &reply.headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for (delay, chunk) in reply.chunks {
                    tokio::time::sleep(delay).await;
                    if socket.write_all(&chunk).await.is_err() {
                        return;
                    }
                    let _ = socket.flush().await;
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    TestServer {
        base: format!("http://{addr}"),
        requests,
    }
}
