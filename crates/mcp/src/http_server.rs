//! [`McpHttpServer`]: an [`McpToolServer`] on MCP's Streamable HTTP
//! transport, with the checks a local tool server needs (DNS-rebinding
//! protection, an optional bearer token).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::McpToolServer;

/// The path the transport is served at.
pub const MCP_HTTP_PATH: &str = "/mcp";

/// What can stop an HTTP server from starting.
#[derive(Debug, thiserror::Error)]
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
    /// A non-loopback address without a token: anyone who can reach the
    /// port could run commands.
    #[error(
        "refusing to listen on {0} without an auth token: a non-loopback address lets other machines run tools; pass a token or bind 127.0.0.1"
    )]
    NeedsToken(SocketAddr),
    /// The token is unusable in an HTTP header.
    #[error("the auth token must be non-empty visible ASCII")]
    BadToken,
}

/// Options of [`McpHttpServer::bind`].
#[derive(Debug, Clone, Default)]
pub struct McpHttpOptions {
    /// When set, every request needs `Authorization: Bearer <token>`
    /// (HTTP 401 otherwise). Required for a non-loopback address.
    pub auth_token: Option<String>,
}

/// A bound Streamable HTTP endpoint at `http://ADDR/mcp`.
///
/// Bound to a loopback address, requests whose `Host` is not the bound
/// loopback name and port, or whose `Origin` is not `http://` of it, are
/// refused with HTTP 403 (a web page cannot reach the server through DNS
/// rebinding). With a token, requests without it get HTTP 401.
///
/// ```no_run
/// # async fn run(server: agent_mcp::McpToolServer) -> Result<(), Box<dyn std::error::Error>> {
/// use agent_mcp::{McpHttpOptions, McpHttpServer};
///
/// let http = McpHttpServer::bind("127.0.0.1:0".parse()?, McpHttpOptions::default()).await?;
/// println!("serving {}", http.url());
/// http.serve(server, tokio_util::sync::CancellationToken::new()).await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct McpHttpServer {
    listener: TcpListener,
    addr: SocketAddr,
    token: Option<Arc<str>>,
}

impl McpHttpServer {
    /// Binds `addr` (port 0 picks a free port).
    ///
    /// # Errors
    /// [`McpHttpError::NeedsToken`] for a non-loopback address without a
    /// token, [`McpHttpError::BadToken`] for an empty or non-ASCII token,
    /// [`McpHttpError::Bind`] when the address cannot be bound.
    pub async fn bind(addr: SocketAddr, options: McpHttpOptions) -> Result<Self, McpHttpError> {
        let token = match options.auth_token {
            Some(t) if t.is_empty() || !t.bytes().all(|b| b.is_ascii_graphic()) => {
                return Err(McpHttpError::BadToken);
            }
            other => other,
        };
        if token.is_none() && !addr.ip().is_loopback() {
            return Err(McpHttpError::NeedsToken(addr));
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| McpHttpError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| McpHttpError::Bind { addr, source })?;
        Ok(McpHttpServer {
            listener,
            addr,
            token: token.map(Arc::from),
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
        let service = StreamableHttpService::new(
            move || Ok(server.for_new_connection()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        tracing::info!(url = %self.url(), "serving MCP over HTTP");
        loop {
            let (stream, peer) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        // EMFILE and friends pass; back off briefly.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = shutdown.cancelled() => break,
            };
            let service = service.clone();
            let token = self.token.clone();
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let mut service = service.clone();
                    let token = token.clone();
                    async move {
                        Ok::<_, Infallible>(route(&mut service, token.as_deref(), request).await)
                    }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), handler);
                tokio::select! {
                    r = connection => if let Err(e) = r {
                        tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
                    },
                    _ = shutdown.cancelled() => {}
                }
            });
        }
    }
}

type Service = StreamableHttpService<McpToolServer, LocalSessionManager>;

/// `/mcp` goes to the transport once the token matches; anything else is 404.
async fn route(
    service: &mut Service,
    token: Option<&str>,
    request: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>> {
    if request.uri().path() != MCP_HTTP_PATH {
        return plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp");
    }
    if let Some(expected) = token {
        let given = request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), expected.as_bytes())) {
            let mut response = plain(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
            response.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
    }
    match tower_service::Service::call(service, request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
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
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
    async fn non_loopback_needs_a_token() {
        let err = McpHttpServer::bind("0.0.0.0:0".parse().unwrap(), McpHttpOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, McpHttpError::NeedsToken(_)), "{err}");
        let err = McpHttpServer::bind(
            "127.0.0.1:0".parse().unwrap(),
            McpHttpOptions {
                auth_token: Some("has space".into()),
            },
        )
        .await
        .unwrap_err();
        assert!(matches!(err, McpHttpError::BadToken));
    }
}
