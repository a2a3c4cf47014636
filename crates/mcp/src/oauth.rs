//! OAuth sign-in for MCP servers reached over Streamable HTTP, as the MCP
//! authorization specification describes it, on rmcp's `auth` support.
//!
//! What rmcp does (and we do not repeat): discovery through the protected
//! resource metadata (from the `WWW-Authenticate` challenge or the
//! well-known paths) and then the authorization server's metadata; client
//! registration (a pre-registered client, a client ID metadata document, or
//! dynamic registration, in the specification's order); scope selection
//! from the challenge or `scopes_supported`; PKCE; the `iss` check of the
//! redirect; token exchange and refresh.
//!
//! What this module adds:
//! - [`TokenStore`]: where tokens live. One file per server, `0600` in a
//!   `0700` folder, bound to the server's URL: a token is only ever sent to
//!   the address it was issued for, and never written to settings or logs.
//! - [`login`]: one sign-in. The redirect comes back to a listener on a
//!   loopback port ([`CallbackListener`]); an [`AuthorizationPrompt`] shows
//!   the person the authorization URL ([`BrowserPrompt`]) or, for servers
//!   that authorize without a person and for tests, follows it itself
//!   ([`HeadlessPrompt`]).
//! - The client side of [`connect_mcp_servers`](crate::connect_mcp_servers):
//!   a server whose [`McpServerConfig::tokens`](crate::McpServerConfig::tokens)
//!   holds a token for it is reached with that token, refreshed when it
//!   expires. A server that answers 401 (or 403 for a scope the token lacks)
//!   is signed in again through the configured
//!   [`McpServerConfig::auth_prompt`](crate::McpServerConfig::auth_prompt),
//!   or reported as needing sign-in when there is none.
//!
//! ```no_run
//! # async fn run() -> Result<(), agent_mcp::oauth::OAuthError> {
//! use agent_mcp::oauth::{BrowserPrompt, TokenStore, login};
//! let mut config = agent_mcp::McpServerConfig::http("tracker", "https://mcp.example.com/mcp");
//! config.tokens = Some(TokenStore::new("/home/me/.pi/agent/mcp-auth"));
//! login(&config, &BrowserPrompt::default(), None).await?;
//! // From now on `connect_mcp_servers(&[config])` sends the token.
//! # Ok(()) }
//! ```

mod callback;
#[cfg(feature = "http")]
mod flow;
mod prompt;
mod store;

pub use callback::{CallbackListener, DEFAULT_CALLBACK_TIMEOUT};
#[cfg(feature = "http")]
pub use flow::login;
#[cfg(feature = "http")]
pub(crate) use flow::{authorized_client, needs_sign_in};
#[cfg(feature = "http")]
pub use prompt::HeadlessPrompt;
pub use prompt::{AuthPrompt, AuthorizationPrompt, BrowserPrompt, PromptError, open_in_browser};
pub use store::{TokenStore, TokenStoreError};

/// How a server's client is identified to its authorization server, and
/// what it asks for: the `"oauth"` object of a server entry in
/// `mcpServers`. Everything is optional; with nothing set the client
/// registers itself dynamically and asks for the scopes the server names.
///
/// ```
/// let configs = agent_mcp::parse_mcp_servers(&serde_json::json!({
///     "tracker": {"url": "https://mcp.example.com/mcp",
///                 "oauth": {"clientId": "abc", "scopes": ["issues:read"], "callbackPort": 8976}}
/// })).unwrap();
/// assert_eq!(configs[0].oauth.client_id.as_deref(), Some("abc"));
/// assert_eq!(configs[0].oauth.callback_port, Some(8976));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpOAuthConfig {
    /// A client ID registered with the authorization server beforehand
    /// (`clientId`); skips registration.
    pub client_id: Option<String>,
    /// The secret of that client, for a confidential client
    /// (`clientSecret`).
    pub client_secret: Option<String>,
    /// The HTTPS address of this client's ID metadata document
    /// (`clientMetadataUrl`), used as the client ID where the authorization
    /// server supports such documents.
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for (`scopes`); empty lets the server's challenge
    /// or metadata choose.
    pub scopes: Vec<String>,
    /// The loopback port the redirect comes back to (`callbackPort`), for a
    /// client registered with a fixed redirect address; default: any free
    /// port.
    pub callback_port: Option<u16>,
}

/// Text from a server, without terminal escapes or other control
/// characters, and not longer than 500 characters.
pub(crate) fn strip_controls(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(500).collect()
}

/// Why a sign-in did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The server is reached over stdio: there is nothing to sign in to.
    #[error("MCP server {0} is not an HTTP server; only HTTP servers use OAuth")]
    NotHttp(String),
    /// No [`TokenStore`] was configured for the server.
    #[error("MCP server {0} has no token store configured")]
    NoTokenStore(String),
    /// The loopback listener for the redirect could not be opened.
    #[error("cannot listen for the sign-in redirect on 127.0.0.1:{port}: {source}")]
    Listen {
        /// The port asked for (0: any).
        port: u16,
        /// The cause.
        source: std::io::Error,
    },
    /// No redirect came back in time.
    #[error("no sign-in redirect arrived within {0} s")]
    Timeout(u64),
    /// The redirect came back with an error from the authorization server.
    #[error("the authorization server refused the sign-in: {0}")]
    Denied(String),
    /// The prompt could not show or follow the authorization URL.
    #[error("cannot open the authorization page: {0}")]
    Prompt(#[source] PromptError),
    /// Discovery, registration, the token exchange or a check failed.
    #[error("OAuth sign-in to {server} failed: {message}")]
    Flow {
        /// The server's name.
        server: String,
        /// What failed (never a token).
        message: String,
    },
    /// The tokens could not be read or written.
    #[error(transparent)]
    Store(#[from] TokenStoreError),
}
