//! The loopback listener the authorization server's redirect comes back to.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::OAuthError;

/// How long [`CallbackListener::wait`] waits for the redirect by default:
/// time for a person to sign in.
pub const DEFAULT_CALLBACK_TIMEOUT: Duration = Duration::from_secs(300);

/// The most bytes of one request head read (a redirect is one line).
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// The path the redirect comes back to.
const CALLBACK_PATH: &str = "/callback";

/// A listener on `127.0.0.1` for the redirect that ends a sign-in.
///
/// The redirect address is a loopback IP literal, as RFC 8252 asks of
/// native clients: nothing off the machine can reach it, and no name lookup
/// can turn it elsewhere. Requests for other paths (a browser's favicon)
/// are answered 404 and waited past.
///
/// ```no_run
/// # async fn run() -> Result<(), agent_mcp::oauth::OAuthError> {
/// let listener = agent_mcp::oauth::CallbackListener::bind(None).await?;
/// println!("redirect to {}", listener.redirect_uri());
/// let url = listener.wait(Some("the-state-sent"), agent_mcp::oauth::DEFAULT_CALLBACK_TIMEOUT).await?;
/// # let _ = url; Ok(()) }
/// ```
#[derive(Debug)]
pub struct CallbackListener {
    listener: TcpListener,
    port: u16,
}

impl CallbackListener {
    /// Listens on `127.0.0.1:port` (any free port when `None`).
    ///
    /// # Errors
    /// The port is taken or cannot be bound.
    pub async fn bind(port: Option<u16>) -> Result<Self, OAuthError> {
        let wanted = port.unwrap_or(0);
        let listener = TcpListener::bind(("127.0.0.1", wanted))
            .await
            .map_err(|source| OAuthError::Listen {
                port: wanted,
                source,
            })?;
        let port = listener
            .local_addr()
            .map_err(|source| OAuthError::Listen {
                port: wanted,
                source,
            })?
            .port();
        Ok(CallbackListener { listener, port })
    }

    /// The redirect address to register and send: `http://127.0.0.1:PORT/callback`.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Waits for the redirect and returns its full URL (with `code`,
    /// `state` and perhaps `iss`), having told the browser it may close.
    ///
    /// With `state`, only a redirect carrying that `state` counts: any other
    /// process on the machine can reach a loopback port, so a redirect with
    /// another state (or none) is answered 400 and waited past, as are
    /// requests for other paths. Connections are served side by side, so a
    /// connection that sends nothing cannot hold the real redirect up.
    ///
    /// # Errors
    /// [`OAuthError::Timeout`] when nothing came in time;
    /// [`OAuthError::Denied`] when the redirect carries an `error`.
    pub async fn wait(self, state: Option<&str>, timeout: Duration) -> Result<String, OAuthError> {
        let state = state.map(str::to_string);
        tokio::time::timeout(timeout, self.accept_redirect(state))
            .await
            .map_err(|_| OAuthError::Timeout(timeout.as_secs()))?
    }

    async fn accept_redirect(&self, state: Option<String>) -> Result<String, OAuthError> {
        let (found, mut results) = tokio::sync::mpsc::channel(1);
        let state = std::sync::Arc::new(state);
        let open = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        loop {
            let (stream, _) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(_) => continue,
                },
                Some(result) = results.recv() => return result,
            };
            // Past the cap, a connection is closed at once.
            let Ok(permit) = open.clone().try_acquire_owned() else {
                continue;
            };
            let (found, state, port) = (found.clone(), state.clone(), self.port);
            tokio::spawn(async move {
                let _permit = permit;
                if let Some(result) = serve_one(stream, port, state.as_deref()).await {
                    let _ = found.send(result).await;
                }
            });
        }
    }
}

/// The most connections served at once while waiting.
const MAX_CONNECTIONS: usize = 32;

/// Answers one connection; the sign-in's outcome when it was the redirect.
async fn serve_one(
    mut stream: tokio::net::TcpStream,
    port: u16,
    state: Option<&str>,
) -> Option<Result<String, OAuthError>> {
    // A slow or silent connection gives up on its own.
    let head = tokio::time::timeout(Duration::from_secs(10), read_head(&mut stream))
        .await
        .ok()??;
    let target = head
        .lines()
        .next()
        .and_then(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("GET"))
                .then(|| words.next())
                .flatten()
        })
        .unwrap_or("");
    let path = target.split('?').next().unwrap_or("");
    if path != CALLBACK_PATH {
        let _ = respond(&mut stream, "404 Not Found", "Not found.").await;
        return None;
    }
    let url = format!("http://127.0.0.1:{port}{target}");
    let parsed = url::Url::parse(&url).ok();
    let query = |key: &str| {
        parsed.as_ref().and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.into_owned())
        })
    };
    if let Some(expected) = state
        && query("state").as_deref() != Some(expected)
    {
        let _ = respond(
            &mut stream,
            "400 Bad Request",
            "This is not the sign-in that is waiting.",
        )
        .await;
        return None;
    }
    if let Some(error) = query("error") {
        let description = query("error_description").unwrap_or_default();
        let _ = respond(
            &mut stream,
            "200 OK",
            "Sign-in was refused. You can close this window.",
        )
        .await;
        let text = if description.is_empty() {
            error
        } else {
            format!("{error}: {description}")
        };
        return Some(Err(OAuthError::Denied(super::strip_controls(&text))));
    }
    if query("code").is_none() {
        let _ = respond(&mut stream, "400 Bad Request", "No authorization code.").await;
        return None;
    }
    let _ = respond(
        &mut stream,
        "200 OK",
        "Signed in. You can close this window and return to the terminal.",
    )
    .await;
    Some(Ok(url))
}

/// The request head, up to the blank line; `None` when the peer sent
/// something else or too much.
async fn read_head(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() + n > MAX_REQUEST_BYTES {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buf).ok()
}

async fn respond(
    stream: &mut tokio::net::TcpStream,
    status: &str,
    text: &str,
) -> std::io::Result<()> {
    let body =
        format!("<!doctype html><meta charset=utf-8><title>coding-agent</title><p>{text}</p>\n");
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(reply.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        s.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn the_redirect_is_returned_and_other_paths_are_waited_past() {
        let listener = CallbackListener::bind(None).await.unwrap();
        let port = listener.port;
        assert!(listener.redirect_uri().starts_with("http://127.0.0.1:"));
        let waiting =
            tokio::spawn(async move { listener.wait(Some("s"), Duration::from_secs(60)).await });
        // Connections that send nothing do not hold the redirect up.
        let mut idle = Vec::new();
        for _ in 0..5 {
            idle.push(
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap(),
            );
        }
        assert!(get(port, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        // Another process's forged redirect is turned away, not taken.
        assert!(
            get(port, "/callback?code=forged&state=guess")
                .await
                .starts_with("HTTP/1.1 400")
        );
        assert!(
            get(port, "/callback?error=access_denied&state=guess")
                .await
                .starts_with("HTTP/1.1 400")
        );
        assert!(
            get(port, "/callback?state=s")
                .await
                .starts_with("HTTP/1.1 400")
        );
        assert!(
            get(port, "/callback?code=c&state=s")
                .await
                .starts_with("HTTP/1.1 200")
        );
        let url = waiting.await.unwrap().unwrap();
        assert!(url.ends_with("/callback?code=c&state=s"), "{url}");
    }

    #[tokio::test]
    async fn an_error_redirect_is_a_refusal() {
        let listener = CallbackListener::bind(None).await.unwrap();
        let port = listener.port;
        let waiting =
            tokio::spawn(async move { listener.wait(None, Duration::from_secs(60)).await });
        get(
            port,
            "/callback?error=access_denied&error_description=no%1b[31m",
        )
        .await;
        match waiting.await.unwrap() {
            Err(OAuthError::Denied(text)) => {
                assert!(text.starts_with("access_denied: no"), "{text}");
                assert!(!text.contains('\u{1b}'));
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn nothing_in_time_is_a_timeout() {
        let listener = CallbackListener::bind(None).await.unwrap();
        assert!(matches!(
            listener.wait(None, Duration::from_millis(50)).await,
            Err(OAuthError::Timeout(_))
        ));
    }
}
