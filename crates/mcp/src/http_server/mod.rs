//! [`McpHttpServer`]: an [`McpToolServer`] on MCP's Streamable HTTP
//! transport, with the checks a local tool server needs: DNS-rebinding
//! protection, a bearer token on every request (generated when none is
//! given), a header read timeout, a cap on connections and one on sessions.

use std::cell::Cell;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::McpToolServer;

mod connections;
mod sessions;

use connections::{Busy, Connections, GuardedBody};
use sessions::{SESSION_REFUSED, Sessions};

/// The path the transport is served at.
pub const MCP_HTTP_PATH: &str = "/mcp";

/// What can stop an HTTP server from starting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpHttpError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A non-loopback address without a token chosen by the user: other
    /// machines would reach the server, and a token printed on its stderr
    /// is not a deliberate choice to let them.
    #[error(
        "refusing to listen on {0} without an auth token: a non-loopback address lets other machines run tools; pass a token or bind 127.0.0.1"
    )]
    NeedsToken(SocketAddr),
    /// The token is unusable in an HTTP header.
    #[error("the auth token must be non-empty visible ASCII")]
    BadToken,
    /// No random bytes for a generated token.
    #[error("cannot generate an auth token (the kernel gave no random bytes): {0}")]
    Random(#[source] std::io::Error),
}

/// Options of [`McpHttpServer::bind`].
#[derive(Debug, Clone)]
pub struct McpHttpOptions {
    /// Every request needs `Authorization: Bearer <token>` (HTTP 401
    /// otherwise). `None`: a random token is generated (32 bytes, hex; see
    /// [`McpHttpServer::auth_token`]), on loopback addresses only.
    pub auth_token: Option<String>,
    /// The most connections served at once. When all are taken, a new
    /// connection closes the oldest one that has had no request in progress
    /// for a second (a client that sends half a request holds no place);
    /// when there is none, new ones wait to be accepted. `None`: twice
    /// [`agent_core::default_max_parallel_tools`] (from the open-file limit).
    pub max_connections: Option<usize>,
    /// How long a client may take to send a request's headers (also the
    /// longest an idle keep-alive connection stays open). Default 15 s.
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request's body once its
    /// headers are in (HTTP 408 after it). Default 30 s.
    pub body_read_timeout: Duration,
    /// The largest request body accepted (HTTP 413 beyond it). Default
    /// [`McpHttpOptions::DEFAULT_MAX_BODY_BYTES`].
    pub max_body_bytes: usize,
    /// The most MCP sessions open at once; an `initialize` beyond it gets
    /// HTTP 503. Default [`McpHttpOptions::DEFAULT_MAX_SESSIONS`].
    pub max_sessions: usize,
    /// A session with no request in progress and no open stream for this
    /// long is closed. Default [`McpHttpOptions::DEFAULT_SESSION_IDLE_TIMEOUT`].
    pub session_idle_timeout: Duration,
}

impl McpHttpOptions {
    /// Default of [`McpHttpOptions::header_read_timeout`].
    pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(15);
    /// Default of [`McpHttpOptions::body_read_timeout`].
    pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default of [`McpHttpOptions::max_body_bytes`] (32 MiB).
    pub const DEFAULT_MAX_BODY_BYTES: usize = 32 << 20;
    /// Default of [`McpHttpOptions::max_sessions`].
    pub const DEFAULT_MAX_SESSIONS: usize = 64;
    /// Default of [`McpHttpOptions::session_idle_timeout`].
    pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
}

impl Default for McpHttpOptions {
    fn default() -> Self {
        McpHttpOptions {
            auth_token: None,
            max_connections: None,
            header_read_timeout: Self::DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: Self::DEFAULT_BODY_READ_TIMEOUT,
            max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES,
            max_sessions: Self::DEFAULT_MAX_SESSIONS,
            session_idle_timeout: Self::DEFAULT_SESSION_IDLE_TIMEOUT,
        }
    }
}

/// A bound Streamable HTTP endpoint at `http://ADDR/mcp`.
///
/// Every request needs the bearer token (HTTP 401 otherwise), on loopback
/// too: any local user can reach a loopback port. Bound to a loopback
/// address, requests whose `Host` is not the bound loopback name and port,
/// or whose `Origin` is not `http://` of it, are refused with HTTP 403 (a
/// web page cannot reach the server through DNS rebinding).
///
/// ```no_run
/// # async fn run(server: agent_mcp::McpToolServer) -> Result<(), Box<dyn std::error::Error>> {
/// use agent_mcp::{McpHttpOptions, McpHttpServer};
///
/// let http = McpHttpServer::bind("127.0.0.1:0".parse()?, McpHttpOptions::default()).await?;
/// println!("serving {} (token {})", http.url(), http.auth_token());
/// http.serve(server, tokio_util::sync::CancellationToken::new()).await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct McpHttpServer {
    listener: TcpListener,
    addr: SocketAddr,
    token: Arc<str>,
    generated: bool,
    options: McpHttpOptions,
}

impl McpHttpServer {
    /// Binds `addr` (port 0 picks a free port).
    ///
    /// # Errors
    /// [`McpHttpError::NeedsToken`] for a non-loopback address without a
    /// token, [`McpHttpError::BadToken`] for an empty or non-ASCII token,
    /// [`McpHttpError::Random`] when no token can be generated,
    /// [`McpHttpError::Bind`] when the address cannot be bound.
    pub async fn bind(addr: SocketAddr, options: McpHttpOptions) -> Result<Self, McpHttpError> {
        let (token, generated) = match &options.auth_token {
            Some(t) if t.is_empty() || !t.bytes().all(|b| b.is_ascii_graphic()) => {
                return Err(McpHttpError::BadToken);
            }
            Some(t) => (t.clone(), false),
            None if !addr.ip().is_loopback() => return Err(McpHttpError::NeedsToken(addr)),
            None => (random_token().map_err(McpHttpError::Random)?, true),
        };
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| McpHttpError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| McpHttpError::Bind { addr, source })?;
        Ok(McpHttpServer {
            listener,
            addr,
            token: Arc::from(token),
            generated,
            options,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_HTTP_PATH}", self.addr)
    }

    /// The bearer token every request must carry.
    pub fn auth_token(&self) -> &str {
        &self.token
    }

    /// Whether [`McpHttpServer::auth_token`] was generated here (no token in
    /// the options), so the caller must hand it to its clients.
    pub fn token_was_generated(&self) -> bool {
        self.generated
    }

    /// The transport's configuration: loopback binds accept only their own
    /// names as `Host` and `Origin`.
    fn transport_config(&self, shutdown: &CancellationToken) -> StreamableHttpServerConfig {
        let config = StreamableHttpServerConfig::default()
            .with_cancellation_token(shutdown.child_token())
            .enforce_origin_validation();
        if !self.addr.ip().is_loopback() {
            // Reached under any name; the token is the protection.
            return config.disable_allowed_hosts();
        }
        let port = self.addr.port();
        let names = if self.addr.is_ipv6() {
            vec![format!("[{}]", self.addr.ip()), "localhost".to_string()]
        } else {
            vec![self.addr.ip().to_string(), "localhost".to_string()]
        };
        let hosts: Vec<String> = names.iter().map(|n| format!("{n}:{port}")).collect();
        let origins: Vec<String> = hosts.iter().map(|h| format!("http://{h}")).collect();
        config
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
    }

    /// Serves `server` (one fresh copy per MCP session) until `shutdown` is
    /// cancelled.
    pub async fn serve(self, server: McpToolServer, shutdown: CancellationToken) {
        let config = self.transport_config(&shutdown);
        let sessions = Arc::new(Sessions::new(
            self.options.max_sessions.max(1),
            self.options.session_idle_timeout,
        ));
        tokio::spawn(sessions.clone().expire_idle(shutdown.clone()));
        let service = StreamableHttpService::new(
            move || Ok(server.for_new_connection()),
            sessions.clone(),
            config,
        );
        let max_connections = self
            .options
            .max_connections
            .unwrap_or_else(|| agent_core::default_max_parallel_tools() * 2)
            .max(1);
        let connections = Arc::new(Connections::new(
            max_connections,
            EVICTABLE_AFTER.min(self.options.header_read_timeout),
        ));
        let header_timeout = self.options.header_read_timeout;
        let body_limits = BodyLimits {
            timeout: self.options.body_read_timeout,
            max_bytes: self.options.max_body_bytes,
        };
        let retry_after = self.options.session_idle_timeout.as_secs().max(1);
        tracing::info!(url = %self.url(), max_connections, "serving MCP over HTTP");
        loop {
            let (stream, peer) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        // EMFILE and friends pass; back off briefly.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = shutdown.cancelled() => break,
            };
            // A place for it: free, taken from an idle connection, or the
            // next one freed (accepting nothing meanwhile).
            let Some(place) = connections.admit(&shutdown).await else {
                break;
            };
            let service = service.clone();
            let token = self.token.clone();
            let shutdown = shutdown.clone();
            let connections = connections.clone();
            tokio::spawn(async move {
                let close = place.close.clone();
                let usage = place.usage.clone();
                let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let mut service = service.clone();
                    let token = token.clone();
                    // Counted from the parsed head to the end of the body sent.
                    let guard = Busy::start(usage.clone(), connections.clone());
                    async move {
                        let response =
                            route(&mut service, &token, retry_after, body_limits, request).await;
                        Ok::<_, Infallible>(response.map(|body| {
                            GuardedBody {
                                inner: body,
                                _busy: guard,
                            }
                            .boxed()
                        }))
                    }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .serve_connection(TokioIo::new(stream), handler);
                tokio::select! {
                    r = connection => if let Err(e) = r {
                        tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
                    },
                    _ = close.cancelled() => {
                        tracing::debug!(%peer, "idle HTTP connection closed to make room");
                    }
                    _ = shutdown.cancelled() => {}
                }
                drop(place);
            });
        }
    }
}

/// How long a connection without a request in progress is kept from being
/// closed to make room for a new one.
const EVICTABLE_AFTER: Duration = Duration::from_secs(1);

/// 32 random bytes from the kernel, as 64 hex digits.
fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

type Service = StreamableHttpService<McpToolServer, Sessions>;

/// How a request body must arrive.
#[derive(Debug, Clone, Copy)]
struct BodyLimits {
    timeout: Duration,
    max_bytes: usize,
}

/// `/mcp` goes to the transport once the token matches and the whole body
/// is in; anything else is 404.
async fn route(
    service: &mut Service,
    token: &str,
    retry_after: u64,
    limits: BodyLimits,
    request: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>> {
    if request.uri().path() != MCP_HTTP_PATH {
        return plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp");
    }
    let given = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes())) {
        let mut response = plain(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
        response.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer"),
        );
        return response;
    }
    // The body is read here, bounded in time and size, so a client that
    // trickles it holds its connection for a bounded time only.
    let (parts, body) = request.into_parts();
    let read = http_body_util::Limited::new(body, limits.max_bytes).collect();
    let body = match tokio::time::timeout(limits.timeout, read).await {
        Err(_) => {
            return plain(
                StatusCode::REQUEST_TIMEOUT,
                "the request body did not arrive in time",
            );
        }
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is larger than this server accepts",
            );
        }
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "reading a request body");
            return plain(
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            );
        }
        Ok(Ok(collected)) => Full::new(collected.to_bytes()),
    };
    let request = Request::from_parts(parts, body);
    let call = tower_service::Service::call(service, request);
    let (response, refused) = SESSION_REFUSED
        .scope(Cell::new(false), async move {
            let response = match call.await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            (response, SESSION_REFUSED.with(Cell::get))
        })
        .await;
    if !refused {
        return response;
    }
    let mut response = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "too many open MCP sessions: end one (HTTP DELETE with its Mcp-Session-Id) or wait until an idle one expires",
    );
    response.headers_mut().insert(
        hyper::header::RETRY_AFTER,
        hyper::header::HeaderValue::from(retry_after),
    );
    response
}

fn plain(status: StatusCode, text: &'static str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Compares without an early exit, so timing does not reveal the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    subtle::ConstantTimeEq::ct_eq(a, b).into()
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
    }

    #[tokio::test]
    async fn tokens_given_checked_or_generated() {
        let err = McpHttpServer::bind("0.0.0.0:0".parse().unwrap(), McpHttpOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, McpHttpError::NeedsToken(_)), "{err}");
        let err = McpHttpServer::bind(
            "127.0.0.1:0".parse().unwrap(),
            McpHttpOptions {
                auth_token: Some("has space".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
        assert!(matches!(err, McpHttpError::BadToken));
        let a = McpHttpServer::bind("127.0.0.1:0".parse().unwrap(), McpHttpOptions::default())
            .await
            .unwrap();
        let b = McpHttpServer::bind("127.0.0.1:0".parse().unwrap(), McpHttpOptions::default())
            .await
            .unwrap();
        assert!(a.token_was_generated());
        assert_eq!(a.auth_token().len(), 64);
        assert!(a.auth_token().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.auth_token(), b.auth_token());
    }
}
