//! The `mcpServers` shape: transports, timeouts, launchers, and parsing
//! with `${VAR}` expansion.

use super::*;

/// Default time a server has to start and list its tools.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Default time one tool call may take.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(600);

/// How to reach one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:8000/mcp`.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

/// How to start one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server's name (the `NAME` in `mcpServers`).
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Time to start and list tools.
    pub startup_timeout: Duration,
    /// Time one call may take.
    pub tool_timeout: Duration,
    /// Builds the process of a stdio server (a sandbox around it, for
    /// instance); `None` starts the command as it is.
    pub launcher: Option<McpLauncher>,
    /// Name the tools as the server does (extensions), instead of
    /// `mcp__<server>__<tool>`.
    pub plain_names: bool,
    /// How an HTTP server's client identifies itself when signing in (the
    /// entry's `"oauth"` object).
    pub oauth: crate::oauth::McpOAuthConfig,
    /// Where an HTTP server's sign-in tokens are kept; `None` sends none
    /// (set by the program, not read from settings).
    pub tokens: Option<crate::oauth::TokenStore>,
    /// Who signs in when an HTTP server asks for it mid-session (a 401, or a
    /// 403 for a missing scope); `None` reports the server as needing
    /// sign-in instead.
    pub auth_prompt: Option<crate::oauth::AuthPrompt>,
}

impl McpServerConfig {
    /// A Streamable HTTP server at `url`, with the default timeouts.
    ///
    /// ```
    /// let config = agent_mcp::McpServerConfig::http("docs", "http://127.0.0.1:8000/mcp");
    /// assert_eq!(config.name, "docs");
    /// ```
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name.into(),
            McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
        )
    }

    /// A stdio server started as `command args...`, with the default timeouts.
    ///
    /// ```
    /// let config = agent_mcp::McpServerConfig::stdio("files", "npx", ["-y", "some-server"]);
    /// assert!(matches!(config.transport, agent_mcp::McpTransport::Stdio { .. }));
    /// ```
    pub fn stdio(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self::with_transport(
            name.into(),
            McpTransport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    pub(crate) fn with_transport(name: String, transport: McpTransport) -> Self {
        McpServerConfig {
            name,
            transport,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            launcher: None,
            plain_names: false,
            oauth: Default::default(),
            tokens: None,
            auth_prompt: None,
        }
    }
}

type LaunchFn =
    dyn Fn(&std::ffi::OsStr, &Path) -> std::io::Result<tokio::process::Command> + Send + Sync;

/// Makes the process a stdio server runs in: given the program and the
/// working directory, a command to which the server's arguments and
/// variables are then added.
///
/// ```
/// use agent_mcp::McpLauncher;
/// // Every server under `nice`, as an example of a wrapper.
/// let launcher = McpLauncher::new(|program, cwd| {
///     let mut c = tokio::process::Command::new("nice");
///     c.arg(program).current_dir(cwd);
///     Ok(c)
/// });
/// # let _ = launcher;
/// ```
#[derive(Clone)]
pub struct McpLauncher(Arc<LaunchFn>);

impl McpLauncher {
    /// A launcher from a function of (program, working directory).
    pub fn new(
        f: impl Fn(&std::ffi::OsStr, &Path) -> std::io::Result<tokio::process::Command>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        McpLauncher(Arc::new(f))
    }

    pub(super) fn command(
        &self,
        program: &str,
        cwd: &Path,
    ) -> std::io::Result<tokio::process::Command> {
        (self.0)(program.as_ref(), cwd)
    }
}

impl std::fmt::Debug for McpLauncher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpLauncher")
    }
}

impl PartialEq for McpLauncher {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for McpLauncher {}

/// A configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mcpServers.{server}: {message}")]
pub struct McpConfigError {
    /// The server's name.
    pub server: String,
    /// What is wrong.
    pub message: String,
}

/// Reads `{"NAME": {"command": ..., "args": [...], "env": {...}, "cwd": ...,
/// "startupTimeoutSec": n, "toolTimeoutSec": n}}` (stdio) or `{"NAME":
/// {"url": ..., "headers": {...}}}` (Streamable HTTP), the value of
/// `mcpServers`. `${VAR}` and `${VAR:-default}` in any string are replaced
/// by the environment's values.
///
/// ```
/// let configs = agent_mcp::parse_mcp_servers(&serde_json::json!({
///     "files": {"command": "npx", "args": ["-y", "some-server"], "toolTimeoutSec": 60},
///     "remote": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ${HOME}"}}
/// })).unwrap();
/// assert_eq!(configs[0].name, "files");
/// assert_eq!(configs[0].tool_timeout.as_secs(), 60);
/// assert!(matches!(configs[1].transport, agent_mcp::McpTransport::Http { .. }));
/// ```
///
/// # Errors
/// A server entry of the wrong shape (neither `command` nor `url`, wrong
/// types, a variable that is not set and has no default), naming the server.
pub fn parse_mcp_servers(value: &Value) -> Result<Vec<McpServerConfig>, McpConfigError> {
    let Some(servers) = value.as_object() else {
        return Err(McpConfigError {
            server: String::new(),
            message: "must be an object of servers".into(),
        });
    };
    servers
        .iter()
        .map(|(name, entry)| parse_server(name, entry))
        .collect()
}

fn parse_server(name: &str, entry: &Value) -> Result<McpServerConfig, McpConfigError> {
    let err = |message: String| McpConfigError {
        server: name.to_string(),
        message,
    };
    if !entry.is_object() {
        return Err(err("must be an object".into()));
    }
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err(err(
            "a server's name must be non-empty, without control characters".into(),
        ));
    }
    let string = |key: &str| -> Result<Option<String>, McpConfigError> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand_env(s).map(Some).map_err(err),
            Some(_) => Err(err(format!("\"{key}\" must be a string"))),
        }
    };
    let strings = |key: &str| -> Result<Vec<String>, McpConfigError> {
        match entry.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .ok_or_else(|| err(format!("\"{key}\" must be a list of strings")))
                        .and_then(|s| expand_env(s).map_err(err))
                })
                .collect(),
            Some(_) => Err(err(format!("\"{key}\" must be a list of strings"))),
        }
    };
    let map = |key: &str| -> Result<BTreeMap<String, String>, McpConfigError> {
        let mut out = BTreeMap::new();
        match entry.get(key) {
            None => {}
            Some(Value::Object(vars)) => {
                for (k, v) in vars {
                    let v = v
                        .as_str()
                        .ok_or_else(|| err(format!("{key}.{k} must be a string")))?;
                    out.insert(k.clone(), expand_env(v).map_err(err)?);
                }
            }
            Some(_) => return Err(err(format!("\"{key}\" must be an object"))),
        }
        Ok(out)
    };
    let seconds = |key: &str, default: Duration| -> Result<Duration, McpConfigError> {
        match entry.get(key) {
            None => Ok(default),
            Some(v) => match v.as_f64() {
                Some(s) if s > 0.0 && s.is_finite() => Ok(Duration::from_secs_f64(s.min(86_400.0))),
                _ => Err(err(format!(
                    "\"{key}\" must be a positive number of seconds"
                ))),
            },
        }
    };
    let transport = match (string("command")?, string("url")?) {
        (Some(_), Some(_)) => {
            return Err(err("give either \"command\" or \"url\", not both".into()));
        }
        (Some(command), None) => McpTransport::Stdio {
            command,
            args: strings("args")?,
            env: map("env")?,
            cwd: string("cwd")?.map(PathBuf::from),
        },
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(err(format!(
                    "\"url\" must be an http:// or https:// address, not {url}"
                )));
            }
            if !cfg!(feature = "http") {
                return Err(err("HTTP servers need agent-mcp's `http` feature".into()));
            }
            McpTransport::Http {
                url,
                headers: map("headers")?,
            }
        }
        (None, None) => return Err(err("needs a \"command\" (stdio) or a \"url\" (HTTP)".into())),
    };
    let oauth = match entry.get("oauth") {
        None | Some(Value::Null) => Default::default(),
        Some(value) => parse_oauth(value).map_err(err)?,
    };
    let mut config = McpServerConfig::with_transport(name.to_string(), transport);
    config.startup_timeout = seconds("startupTimeoutSec", DEFAULT_STARTUP_TIMEOUT)?;
    config.tool_timeout = seconds("toolTimeoutSec", DEFAULT_TOOL_TIMEOUT)?;
    config.oauth = oauth;
    Ok(config)
}

/// The `"oauth"` object: `clientId`, `clientSecret`, `clientMetadataUrl`,
/// `scopes`, `callbackPort`.
fn parse_oauth(value: &Value) -> Result<crate::oauth::McpOAuthConfig, String> {
    let Some(map) = value.as_object() else {
        return Err("\"oauth\" must be an object".into());
    };
    let mut out = crate::oauth::McpOAuthConfig::default();
    for (key, v) in map {
        let string = || -> Result<String, String> {
            v.as_str()
                .ok_or_else(|| format!("oauth.{key} must be a string"))
                .and_then(expand_env)
        };
        match key.as_str() {
            "clientId" => out.client_id = Some(string()?),
            "clientSecret" => out.client_secret = Some(string()?),
            "clientMetadataUrl" => {
                let url = string()?;
                if !url.starts_with("https://") {
                    return Err(format!(
                        "oauth.clientMetadataUrl must be an https:// address, not {url}"
                    ));
                }
                out.client_metadata_url = Some(url);
            }
            "scopes" => {
                out.scopes = v
                    .as_array()
                    .ok_or_else(|| "oauth.scopes must be a list of strings".to_string())?
                    .iter()
                    .map(|s| {
                        s.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| "oauth.scopes must be a list of strings".to_string())
                    })
                    .collect::<Result<_, _>>()?;
            }
            "callbackPort" => {
                out.callback_port = Some(
                    v.as_u64()
                        .and_then(|p| u16::try_from(p).ok())
                        .filter(|p| *p > 0)
                        .ok_or_else(|| "oauth.callbackPort must be a port number".to_string())?,
                );
            }
            other => return Err(format!("unknown key oauth.{other}")),
        }
    }
    if out.client_secret.is_some() && out.client_id.is_none() {
        return Err("oauth.clientSecret needs oauth.clientId".into());
    }
    Ok(out)
}

/// `${VAR}` and `${VAR:-default}` replaced by the environment's values
/// (the one expansion trust pins by: [`agent_trust::env_vars::expand`]).
fn expand_env(text: &str) -> Result<String, String> {
    agent_trust::env_vars::expand(text).map_err(|e| e.to_string())
}
