//! The sign-in itself on rmcp's `OAuthState`, and the authorized HTTP
//! client a connection uses afterwards.

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationRequest, CredentialRefreshGuard,
    CredentialStore, OAuthState, StoredCredentials, WWWAuthenticateParams,
};

use super::{
    AuthorizationPrompt, CallbackListener, DEFAULT_CALLBACK_TIMEOUT, OAuthError, TokenStore,
};
use crate::{McpServerConfig, McpTransport};

/// The client name sent when registering dynamically.
const CLIENT_NAME: &str = "coding-agent";

/// Signs in to the HTTP server of `config` and saves its tokens in
/// `config.tokens`.
///
/// `challenge` is the `WWW-Authenticate` value of a 401 or 403 the server
/// sent, when there is one (a scope a call needs, for instance); without
/// it the server is asked once without a token to get its challenge, and
/// discovery falls back to the well-known addresses when it sends none.
/// The prompt gets the authorization URL; the redirect comes back to a
/// loopback listener (on `config.oauth.callback_port` when set) within
/// five minutes.
///
/// # Errors
/// The server is not HTTP, there is no token store, no redirect came, or
/// the flow failed (the message names the step, never a token).
pub async fn login(
    config: &McpServerConfig,
    prompt: &dyn AuthorizationPrompt,
    challenge: Option<&str>,
) -> Result<(), OAuthError> {
    let url = http_url(config)?;
    let tokens = config
        .tokens
        .as_ref()
        .ok_or_else(|| OAuthError::NoTokenStore(config.name.clone()))?;
    tokens.ensure_dir()?;
    agent_ai::providers::install_tls_provider();
    let flow = |e: AuthError| OAuthError::Flow {
        server: config.name.clone(),
        // The authorization server's words, which may carry escapes.
        message: super::strip_controls(&e.to_string()),
    };
    // Discovery and registration talk to servers that may stall: they get
    // the server's start-up time, not rmcp's per-request limits in a row.
    let limit = config.startup_timeout;
    let late = |what: &str| OAuthError::Flow {
        server: config.name.clone(),
        message: format!(
            "{what} took longer than {} s (startupTimeoutSec)",
            limit.as_secs_f64()
        ),
    };
    let challenge = match challenge {
        Some(c) => Some(c.to_string()),
        None => probe_challenge(config, url).await,
    };
    let listener = CallbackListener::bind(config.oauth.callback_port).await?;
    let mut manager = tokio::time::timeout(limit, AuthorizationManager::new(url))
        .await
        .map_err(|_| late("starting the sign-in"))?
        .map_err(flow)?;
    manager.set_credential_store(FileCredentials::new(tokens, &config.name, url));
    let mut state = OAuthState::Unauthorized(manager);
    let mut request =
        AuthorizationRequest::new(listener.redirect_uri()).with_client_name(CLIENT_NAME);
    let oauth = &config.oauth;
    if let Some(id) = &oauth.client_id {
        request = request.with_preregistered_client(id.clone());
        if let Some(secret) = &oauth.client_secret {
            request = request.with_client_secret(secret.clone());
        }
    }
    if let Some(metadata) = &oauth.client_metadata_url {
        request = request.with_client_metadata_url(metadata.clone());
    }
    // Signing in again (a scope a call needs) asks for what was granted
    // before as well as what the challenge names, so the new token still
    // does what the old one did (SEP-2350); a first sign-in leaves the
    // choice to the challenge and the server's metadata.
    let previous = previous_scopes(tokens, &config.name, url);
    if !previous.is_empty() {
        let mut scopes = previous;
        scopes.extend(oauth.scopes.iter().cloned());
        if let (Some(challenge), Ok(base)) = (challenge.as_deref(), url::Url::parse(url)) {
            let params = WWWAuthenticateParams::parse(challenge, &base);
            scopes.extend(
                params
                    .scope
                    .iter()
                    .flat_map(|s| s.split_whitespace())
                    .map(str::to_string),
            );
        }
        let mut seen = std::collections::HashSet::new();
        scopes.retain(|s| seen.insert(s.clone()));
        request = request.with_scopes(scopes);
    } else if !oauth.scopes.is_empty() {
        request = request.with_scopes(oauth.scopes.iter().cloned());
    }
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    tokio::time::timeout(limit, state.start_authorization(request))
        .await
        .map_err(|_| late("discovery and registration"))?
        .map_err(flow)?;
    let auth_url = state.get_authorization_url().await.map_err(flow)?;
    let parsed = url::Url::parse(&auth_url).map_err(|e| OAuthError::Flow {
        server: config.name.clone(),
        message: format!("the authorization address is not a URL: {e}"),
    })?;
    // The address comes from the authorization server's metadata and goes
    // to a browser (or `xdg-open`): nothing but a web page, https or a
    // loopback http one.
    let loopback = matches!(parsed.host(), Some(url::Host::Domain("localhost")))
        || matches!(parsed.host(), Some(url::Host::Ipv4(ip)) if ip.is_loopback())
        || matches!(parsed.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback());
    if !(parsed.scheme() == "https" || (parsed.scheme() == "http" && loopback)) {
        return Err(OAuthError::Flow {
            server: config.name.clone(),
            message: format!(
                "refused the authorization address: {} is neither https nor http on this machine",
                super::strip_controls(parsed.scheme())
            ),
        });
    }
    let expected_state = parsed
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned());
    let waiting = listener.wait(expected_state.as_deref(), DEFAULT_CALLBACK_TIMEOUT);
    let opening = prompt.open(&config.name, &auth_url);
    // The listener is already bound: a prompt that follows the URL at once
    // (headless) lands on it while `wait` runs.
    let (opened, redirect) = tokio::join!(opening, waiting);
    opened.map_err(OAuthError::Prompt)?;
    let redirect = redirect?;
    tokio::time::timeout(limit, state.handle_callback_url(&redirect))
        .await
        .map_err(|_| late("the token exchange"))?
        .map_err(flow)?;
    tracing::info!(server = %config.name, "signed in to MCP server");
    Ok(())
}

/// The scopes the stored token of `server` was granted.
fn previous_scopes(tokens: &TokenStore, server: &str, url: &str) -> Vec<String> {
    tokens
        .load(server, url)
        .ok()
        .flatten()
        .and_then(|v| v.get("granted_scopes").cloned())
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// The server's challenge to a request without a token, if it sends one.
async fn probe_challenge(config: &McpServerConfig, url: &str) -> Option<String> {
    let transport = StreamableHttpClientTransport::from_config(
        crate::client::http_config(url, http_headers(config)).ok()?,
    );
    let started = tokio::time::timeout(
        config.startup_timeout,
        rmcp::service::ClientServiceExt::serve_with_lifecycle(
            (),
            transport,
            crate::client::lifecycle(),
        ),
    )
    .await
    .ok()?;
    match started {
        Ok(client) => {
            let _ = client.cancel().await;
            None
        }
        Err(e) => e.auth_challenge().map(str::to_string),
    }
}

/// An authorized HTTP client for the server of `config`, when its store
/// holds tokens issued for its URL; `None` otherwise (the connection then
/// goes without, and a 401 asks for a sign-in).
pub(crate) async fn authorized_client(
    config: &McpServerConfig,
) -> Result<Option<AuthClient<reqwest::Client>>, String> {
    let Ok(url) = http_url(config) else {
        return Ok(None);
    };
    let Some(tokens) = &config.tokens else {
        return Ok(None);
    };
    if !tokens.has_tokens(&config.name, url) {
        return Ok(None);
    }
    // Discovery again (the stored tokens name no endpoints): bounded by the
    // start-up time like the rest of the connection.
    let started = tokio::time::timeout(config.startup_timeout, async {
        let mut manager = AuthorizationManager::new(url).await?;
        manager.set_credential_store(FileCredentials::new(tokens, &config.name, url));
        let usable = manager.initialize_from_store().await?;
        Ok::<_, AuthError>(usable.then_some(manager))
    })
    .await;
    let manager = match started {
        Err(_) => {
            return Err(format!(
                "OAuth discovery did not finish within {} s (startupTimeoutSec)",
                config.startup_timeout.as_secs_f64()
            ));
        }
        Ok(Ok(Some(manager))) => manager,
        Ok(Ok(None)) => return Ok(None),
        Ok(Err(e)) => {
            return Err(format!(
                "OAuth: cannot use the stored sign-in: {}",
                super::strip_controls(&e.to_string())
            ));
        }
    };
    let http = reqwest::Client::builder()
        .build()
        .map_err(|e| format!("OAuth: {e}"))?;
    Ok(Some(AuthClient::new(http, manager)))
}

/// The words for a server that needs a sign-in nobody can give now.
pub(crate) fn needs_sign_in(config: &McpServerConfig) -> String {
    let url = http_url(config).unwrap_or_default();
    format!(
        "needs OAuth sign-in at {}: run `coding-agent mcp login {}` (or call agent_mcp::oauth::login)",
        super::strip_controls(url),
        coding_agent::shell_quote(&config.name)
    )
}

fn http_url(config: &McpServerConfig) -> Result<&str, OAuthError> {
    match &config.transport {
        McpTransport::Http { url, .. } => Ok(url),
        McpTransport::Stdio { .. } => Err(OAuthError::NotHttp(config.name.clone())),
    }
}

fn http_headers(config: &McpServerConfig) -> &std::collections::BTreeMap<String, String> {
    static NONE: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    match &config.transport {
        McpTransport::Http { headers, .. } => headers,
        McpTransport::Stdio { .. } => &NONE,
    }
}

/// rmcp's credential store on one server's file of a [`TokenStore`].
struct FileCredentials {
    tokens: TokenStore,
    server: String,
    url: String,
}

impl FileCredentials {
    fn new(tokens: &TokenStore, server: &str, url: &str) -> Self {
        FileCredentials {
            tokens: tokens.clone(),
            server: server.to_string(),
            url: url.to_string(),
        }
    }
}

fn store_error(e: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for FileCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        match self
            .tokens
            .load(&self.server, &self.url)
            .map_err(store_error)?
        {
            None => Ok(None),
            Some(value) => serde_json::from_value(value).map(Some).map_err(store_error),
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let value = serde_json::to_value(&credentials).map_err(store_error)?;
        self.tokens
            .save(&self.server, &self.url, value)
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.tokens
            .clear(&self.server, &self.url)
            .map_err(store_error)
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        // Two agents sharing the store must not both spend one rotating
        // refresh token: an exclusive lock on a file beside the tokens.
        let tokens = self.tokens.clone();
        let (server, url) = (self.server.clone(), self.url.clone());
        let lock = tokio::task::spawn_blocking(move || tokens.lock(&server, &url))
            .await
            .map_err(store_error)?
            .map_err(store_error)?;
        Ok(Some(CredentialRefreshGuard::new(lock)))
    }
}
