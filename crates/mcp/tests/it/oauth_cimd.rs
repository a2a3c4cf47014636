//! `clientMetadataUrl`: the client's ID is the address of its metadata
//! document where the authorization server says it takes such IDs
//! (`client_id_metadata_document_supported`), and the client registers
//! itself as before where it does not (issue 34, item 19). Against a
//! loopback authorization server that answers what it is asked.

use agent_mcp::McpServerConfig;
use agent_mcp::oauth::{HeadlessPrompt, TokenStore};
use serde_json::{Value, json};
use test_support::http_server::{Recorded, Reply, TestServer, serve_fn};

const METADATA_URL: &str = "https://agent.example/client-metadata.json";

/// The query parameter `name` of a request target.
fn query(path: &str, name: &str) -> Option<String> {
    let url = url::Url::parse(&format!("http://x{path}")).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// An MCP server at `/mcp` that wants a token, with its authorization
/// server on the same address; `cimd` says whether that one takes client
/// ID metadata documents.
async fn authorization_server(cimd: bool) -> TestServer {
    let base = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let known = base.clone();
    let server = serve_fn(move |request: &Recorded| {
        let base = known.get()?.clone();
        let path = request.path.split('?').next().unwrap_or("");
        let json = |v: Value| Some(Reply::status(200, &v.to_string()));
        match (request.method.as_str(), path) {
            ("POST", "/mcp") => Some(Reply::status(401, "").header(
                "WWW-Authenticate",
                &format!(
                    "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                ),
            )),
            ("GET", "/.well-known/oauth-protected-resource/mcp") => json(json!({
                "resource": format!("{base}/mcp"),
                "authorization_servers": [base],
            })),
            ("GET", "/.well-known/oauth-authorization-server") => json(json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "client_id_metadata_document_supported": cimd,
            })),
            ("POST", "/register") => Some(Reply::status(
                201,
                &json!({
                    "client_id": "registered-client",
                    "redirect_uris": request.body["redirect_uris"],
                    "token_endpoint_auth_method": "none",
                })
                .to_string(),
            )),
            ("GET", "/authorize") => {
                let redirect = query(&request.path, "redirect_uri")?;
                let state = query(&request.path, "state")?;
                Some(Reply::status(302, "").header(
                    "location",
                    &format!("{redirect}?code=the-code&state={state}"),
                ))
            }
            ("POST", "/token") => json(json!({
                "access_token": "the-token",
                "token_type": "Bearer",
                "expires_in": 3600,
            })),
            _ => Some(Reply::status(404, "{}")),
        }
    })
    .await;
    let _ = base.set(server.base.clone());
    server
}

/// Signs in to the fake with `clientMetadataUrl` set; the client ID the
/// authorization request named, and whether the client registered.
async fn sign_in(cimd: bool) -> (String, bool) {
    let server = authorization_server(cimd).await;
    let tokens = tempfile::tempdir().unwrap();
    let configs = agent_mcp::parse_mcp_servers(&json!({
        "hosted": {"url": format!("{}/mcp", server.base),
                   "oauth": {"clientMetadataUrl": METADATA_URL}}
    }))
    .unwrap();
    let mut config: McpServerConfig = configs.into_iter().next().unwrap();
    config.tokens = Some(TokenStore::new(tokens.path().join("mcp-auth")));
    agent_mcp::oauth::login(&config, &HeadlessPrompt::default(), None)
        .await
        .unwrap();
    let requests = server.requests();
    let authorize = requests
        .iter()
        .find(|r| r.path.starts_with("/authorize"))
        .expect("an authorization request");
    let client_id = query(&authorize.path, "client_id").unwrap_or_default();
    let token = requests
        .iter()
        .find(|r| r.path == "/token")
        .expect("a token request");
    let form = String::from_utf8_lossy(&token.raw_body).to_string();
    assert!(
        form.contains(&format!(
            "client_id={}",
            url::form_urlencoded::byte_serialize(client_id.as_bytes()).collect::<String>()
        )),
        "the token request names the same client: {form}"
    );
    let registered = requests.iter().any(|r| r.path == "/register");
    (client_id, registered)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_address_is_the_client_id_where_the_server_takes_it() {
    assert_eq!(sign_in(true).await, (METADATA_URL.to_string(), false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_metadata_documents_gets_a_registered_client() {
    assert_eq!(
        sign_in(false).await,
        ("registered-client".to_string(), true)
    );
}
