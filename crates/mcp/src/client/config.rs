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
    Ok(McpServerConfig {
        name: name.to_string(),
        transport,
        startup_timeout: seconds("startupTimeoutSec", DEFAULT_STARTUP_TIMEOUT)?,
        tool_timeout: seconds("toolTimeoutSec", DEFAULT_TOOL_TIMEOUT)?,
        launcher: None,
        plain_names: false,
    })
}

/// `${VAR}` and `${VAR:-default}` replaced by the environment's values.
fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed ${{ in {text:?}"));
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match (std::env::var(var), default) {
            (Ok(value), _) => out.push_str(&value),
            (Err(_), Some(d)) => out.push_str(d),
            (Err(_), None) => {
                return Err(format!(
                    "environment variable {var} is not set (write ${{{var}:-default}} for a default)"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
