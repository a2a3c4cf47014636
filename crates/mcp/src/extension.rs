//! Extensions at run time: executables that speak MCP on their stdin and
//! stdout, in any language. Their tools join the session under their own
//! names (no `mcp__` prefix) as extension tools of the registry: a tool with
//! a built-in's name overrides it (keeping the built-in's renderers, not its
//! prompt snippet or guidelines), and between extensions the first to
//! register a name keeps it. A tool's prompt snippet, guidelines,
//! execution mode and the arguments permission rules judge (paths, a
//! command line) come from its `_meta` (see [`tool_meta`](crate::tool_meta())).
//!
//! ```no_run
//! # async fn demo() {
//! use agent_mcp::{ExtensionOptions, ExtensionSource, ExtensionSpec, load_extensions};
//! let specs = [ExtensionSpec::new("./weather.py", ExtensionSource::Flag)];
//! let loaded = load_extensions(&specs, &ExtensionOptions::default()).await;
//! for warning in &loaded.warnings {
//!     eprintln!("warning: {warning}");
//! }
//! // `loaded.extensions` go to `AgentSessionBuilder::extension`.
//! # }
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_tool::ToolDefinition;
use coding_agent::{Extension, ExtensionApi};

use crate::client::{
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, McpLauncher, McpServerConfig, McpToolUpdates,
    McpTransport, connect_mcp_servers,
};

/// Where an extension was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtensionSource {
    /// Named on the command line (`-e PATH`).
    Flag,
    /// Found in the user's `<agent dir>/extensions/`.
    User,
    /// Found in the project's `.pi/extensions/` (a trusted project only).
    Project,
}

impl ExtensionSource {
    /// `flag`, `user` or `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExtensionSource::Flag => "flag",
            ExtensionSource::User => "user",
            ExtensionSource::Project => "project",
        }
    }
}

/// One extension to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionSpec {
    /// The executable.
    pub path: PathBuf,
    /// Where it was found.
    pub source: ExtensionSource,
}

impl ExtensionSpec {
    /// The extension at `path`.
    pub fn new(path: impl Into<PathBuf>, source: ExtensionSource) -> Self {
        ExtensionSpec {
            path: path.into(),
            source,
        }
    }
}

/// How extensions are started.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExtensionOptions {
    /// Time an extension has to start and list its tools; one that takes
    /// longer is left out with a warning.
    pub startup_timeout: Duration,
    /// Time one call may take.
    pub tool_timeout: Duration,
    /// How the project's extensions are started (a sandbox around them);
    /// `None` starts them as they are.
    pub project_launcher: Option<McpLauncher>,
    /// The session's working directory: where the project's extensions
    /// start, and what every extension finds in `CODING_AGENT_CWD`; `None`
    /// leaves them in this process's working directory.
    pub working_dir: Option<PathBuf>,
    /// Where the user's own and `-e` extensions start (a directory the
    /// project does not write, such as the home directory); `None` is
    /// [`working_dir`](Self::working_dir).
    pub user_working_dir: Option<PathBuf>,
}

impl Default for ExtensionOptions {
    fn default() -> Self {
        ExtensionOptions {
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            project_launcher: None,
            working_dir: None,
            user_working_dir: None,
        }
    }
}

/// A started extension: its tools, registered when the session is built.
pub struct McpExtension {
    name: String,
    source: ExtensionSource,
    tools: Vec<ToolDefinition>,
}

impl std::fmt::Debug for McpExtension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpExtension")
            .field("name", &self.name)
            .field("source", &self.source)
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl McpExtension {
    /// Where it was found.
    pub fn source(&self) -> ExtensionSource {
        self.source
    }

    /// Its tools.
    pub fn tools(&self) -> &[ToolDefinition] {
        &self.tools
    }
}

impl Extension for McpExtension {
    fn name(&self) -> &str {
        &self.name
    }

    fn register(&self, api: &mut ExtensionApi) {
        for tool in &self.tools {
            api.register_tool(tool.clone());
        }
    }
}

/// What [`load_extensions`] started.
#[derive(Debug, Default)]
pub struct LoadedExtensions {
    /// The extensions that started, in the order given.
    pub extensions: Vec<Arc<McpExtension>>,
    /// One line per extension left out or tool ignored.
    pub warnings: Vec<String>,
    /// Later changes of the extensions' tool lists.
    pub updates: Vec<McpToolUpdates>,
}

/// Starts every extension in parallel (each within
/// [`ExtensionOptions::startup_timeout`]). One that fails to start, exits
/// or hangs is a warning and is left out; the rest load. A crash later
/// makes the call in flight an error result and the next call starts the
/// extension again (a bounded number of times).
pub async fn load_extensions(
    specs: &[ExtensionSpec],
    options: &ExtensionOptions,
) -> LoadedExtensions {
    let started = futures::future::join_all(specs.iter().map(|spec| async move {
        let mut config = McpServerConfig::with_transport(
            spec.path.display().to_string(),
            McpTransport::Stdio {
                command: spec.path.display().to_string(),
                args: Vec::new(),
                env: options
                    .working_dir
                    .iter()
                    .map(|d| ("CODING_AGENT_CWD".to_string(), d.display().to_string()))
                    .collect(),
                cwd: match spec.source {
                    ExtensionSource::Project => options.working_dir.clone(),
                    _ => options
                        .user_working_dir
                        .clone()
                        .or_else(|| options.working_dir.clone()),
                },
            },
        );
        config.startup_timeout = options.startup_timeout;
        config.tool_timeout = options.tool_timeout;
        config.launcher = match spec.source {
            ExtensionSource::Project => options.project_launcher.clone(),
            _ => None,
        };
        config.plain_names = true;
        connect_mcp_servers(std::slice::from_ref(&config)).await
    }))
    .await;
    let mut loaded = LoadedExtensions::default();
    // Which extension registered each name first.
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    for (spec, connected) in specs.iter().zip(started) {
        let name = spec.path.display().to_string();
        for warning in connected.warnings {
            loaded.warnings.push(format!(
                "extension {name} is not loaded: {}",
                warning
                    .strip_prefix(&format!("MCP server {name}: "))
                    .unwrap_or(&warning)
            ));
        }
        if connected.tools.is_empty() {
            continue;
        }
        let mut tools = Vec::new();
        for tool in connected.tools {
            match owners.get(tool.name()) {
                Some(first) => loaded.warnings.push(format!(
                    "extension {name}: tool {} is already registered by {first}; ignored",
                    tool.name()
                )),
                None => {
                    owners.insert(tool.name().to_string(), name.clone());
                    tools.push(tool);
                }
            }
        }
        loaded.updates.push(connected.updates);
        loaded.extensions.push(Arc::new(McpExtension {
            name,
            source: spec.source,
            tools,
        }));
    }
    loaded
}
