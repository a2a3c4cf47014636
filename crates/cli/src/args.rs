//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A coding agent with Pi's tool system: read, bash, edit, write, grep, find, ls.
#[derive(Debug, Parser)]
#[command(name = "coding-agent", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one tool call without a model and print its result as JSON.
    Tool(ToolArgs),
    /// A scripted tour on a temporary workspace (no API key, no network).
    Demo(DemoArgs),
    /// Serve the tools to an MCP client (stdio, or Streamable HTTP with
    /// --http); `mcp login NAME` / `mcp logout NAME` sign in to an HTTP MCP
    /// server of the settings.
    #[command(args_conflicts_with_subcommands = true)]
    Mcp(McpArgs),
    /// Trust a project: let its .pi/settings.json start programs (MCP
    /// servers, shellPath, shellCommandPrefix) with the values it has now.
    Trust(TrustArgs),
    /// Write a session file as one self-contained HTML page (no network,
    /// safe to open whoever wrote the session), or as JSONL.
    Export(ExportArgs),
    /// The remote end of `--remote`: serve file and process operations on
    /// stdin and stdout (started by the client, not by hand).
    #[command(hide = true)]
    Helper(HelperArgs),
}

/// `coding-agent helper`.
#[derive(Debug, Args)]
pub struct HelperArgs {
    /// Exit 0 if this helper speaks protocol version N, 1 otherwise.
    #[arg(long, value_name = "N")]
    pub accepts: Option<u32>,
}

/// `coding-agent export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The session file (`.jsonl`).
    pub session: PathBuf,
    /// Where to write (default: `coding-agent-session-<name>.html` in the
    /// current directory).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// `html` (default) or `jsonl` (the current branch, as Pi exports it);
    /// an output ending in `.jsonl` also picks JSONL.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
}

/// `--remote` and its transport options.
#[derive(Debug, Clone, Default, Args)]
pub struct RemoteArgs {
    /// Run the tools on another machine (ssh://, docker://, podman://,
    /// kubectl://, exec:).
    #[arg(long, value_name = "URI", long_help = REMOTE_HELP)]
    pub remote: Option<String>,
    /// An OpenSSH option for ssh:// remotes, as `ssh -o` takes it
    /// (e.g. `IdentityFile=~/.ssh/build`); repeatable.
    #[arg(long = "ssh-option", value_name = "OPTION")]
    pub ssh_options: Vec<String>,
}

/// What `--remote` accepts.
pub const REMOTE_HELP: &str = "Run the tools on another machine: ssh://[user@]host[:port]/path, docker://container/path, podman://container/path, kubectl://[namespace/]pod[/container]//path, or exec:COMMAND (a command whose stdin and stdout reach a POSIX shell there).

The tools run through a helper (this program in helper mode): a compatible coding-agent on the remote's PATH, or a copy of this binary uploaded to ~/.cache/coding-agent/helpers (0700, verified by checksum) when the remote's OS and architecture match. --sandbox applies on the remote side.";

/// `coding-agent trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The project directory (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Remove the project's trust instead.
    #[arg(long, conflicts_with = "list")]
    pub revoke: bool,
    /// List the trusted projects.
    #[arg(long)]
    pub list: bool,
}

/// What `--sandbox` confines, word for word the guarantees of
/// `agent_sandbox`.
pub const SANDBOX_HELP: &str = "Confine the tools: off, read-only or workspace-write.

Commands (bash) run in bubblewrap namespaces under a seccomp filter; where that cannot be built, bash refuses to run.
- Files: everything read-only, metadata included (no chmod, chown, touch, chattr). workspace-write: the working directory (sandbox.roots) and the temp dir are writable, except .git, .pi and the agent directory. sandbox.excludeTmp gives a private temp dir instead; read-only mode always does.
- Network (unless sandbox.network is true): a network namespace with only its own loopback, so no TCP or UDP reaches outside; no unix sockets (socket files such as docker.sock or the ssh agent's, abstract sockets).
- Processes: own pid namespace; the agent and other processes are invisible and cannot be signalled. No device nodes. Inherited descriptors are closed.
- Secrets: variables named like credentials (KEY, TOKEN, SECRET, PASSWORD...) are removed unless listed in sandbox.passEnv; denied paths that exist are hidden.
File tools: reads and writes only under the roots and the temp dir, denied globs never read, listed or written, same protected paths.";

/// `coding-agent mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Sign in to (or out of) an MCP server instead of serving.
    #[command(subcommand)]
    pub action: Option<McpAction>,
    /// Working directory of the tools (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Serve only these tools (comma-separated).
    #[arg(long, value_name = "LIST")]
    pub tools: Option<String>,
    /// Do not serve these tools (comma-separated).
    #[arg(long, value_name = "LIST")]
    pub exclude_tools: Option<String>,
    /// Confine the tools (default here: workspace-write where the machine
    /// can enforce it): off, read-only or workspace-write.
    #[arg(long, value_name = "MODE", value_parser = crate::sandbox::parse_mode, long_help = SANDBOX_HELP)]
    pub sandbox: Option<agent_sandbox::SandboxMode>,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio
    /// (port 0 picks a free one; the address is printed on stderr).
    #[arg(long, value_name = "HOST:PORT")]
    pub http: Option<std::net::SocketAddr>,
    /// With --http: the token every request must carry as
    /// `Authorization: Bearer TOKEN` (needed for a non-loopback address).
    /// Without it a random one is generated, printed on stderr and written
    /// to a file only you can read (its path is printed too). On the
    /// command line it is visible to every local user (`ps`): prefer
    /// CODING_AGENT_MCP_TOKEN or --auth-token-file.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "CODING_AGENT_MCP_TOKEN",
        hide_env_values = true,
        conflicts_with = "auth_token_file"
    )]
    pub auth_token: Option<String>,
    /// With --http: read the token from FILE (its first line).
    #[arg(long, value_name = "FILE")]
    pub auth_token_file: Option<std::path::PathBuf>,
    /// With --http: the most MCP sessions open at once (an initialize
    /// beyond it gets HTTP 503).
    #[arg(long, value_name = "N", default_value_t = agent_mcp::McpHttpOptions::DEFAULT_MAX_SESSIONS, value_parser = parse_count)]
    pub max_sessions: usize,
    /// With --http: close a session with nothing in progress after this
    /// many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = agent_mcp::McpHttpOptions::DEFAULT_SESSION_IDLE_TIMEOUT.as_secs_f64(), value_parser = parse_seconds)]
    pub session_idle_timeout: f64,
    /// With --http: the most connections served at once (default: from the
    /// open-file limit); when all are taken, the oldest idle one is closed.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub max_connections: Option<usize>,
}

/// `coding-agent mcp login|logout`.
#[derive(Debug, clap::Subcommand)]
pub enum McpAction {
    /// Sign in to an HTTP MCP server of the settings' `mcpServers` (OAuth):
    /// opens the browser, or prints the address to open when there is no
    /// display, and waits for the redirect on a loopback port. The tokens
    /// are kept in the agent directory's `mcp-auth/` (0600), never in
    /// settings.
    Login(McpLoginArgs),
    /// Forget the sign-in tokens of an MCP server.
    Logout(McpLoginArgs),
}

/// The server to sign in to, and where its configuration is.
#[derive(Debug, Args)]
pub struct McpLoginArgs {
    /// The server's name in `mcpServers`.
    pub name: String,
    /// Whose settings (`.pi/settings.json`) to read (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// MCP servers file (`{"mcpServers": {...}}`), besides the settings'; repeatable.
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub mcp_config: Vec<PathBuf>,
    /// Only print the address to open; start no browser.
    #[arg(long)]
    pub no_browser: bool,
}

/// A positive count.
fn parse_count(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("expected a positive whole number, got {s:?}")),
    }
}

/// A positive number of seconds.
fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1e9 => Ok(v),
        _ => Err(format!("expected a positive number of seconds, got {s:?}")),
    }
}

/// `coding-agent tool`.
#[derive(Debug, Args)]
pub struct ToolArgs {
    /// Tool name (read, bash, edit, write, grep, find, ls).
    pub name: Option<String>,
    /// Working directory of the tool (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Arguments as a JSON object.
    #[arg(long)]
    pub args: Option<String>,
    /// Run JSONL cases from FILE (or - for stdin), one result line each.
    #[arg(long, conflicts_with_all = ["name", "args"])]
    pub batch: Option<String>,
    /// Confine the tools: off, read-only or workspace-write (--help says
    /// exactly what is blocked).
    #[arg(long, value_name = "MODE", value_parser = crate::sandbox::parse_mode, long_help = SANDBOX_HELP)]
    pub sandbox: Option<agent_sandbox::SandboxMode>,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `coding-agent demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Output mode.
    #[arg(long, value_enum, default_value_t = Mode::Text)]
    pub mode: Mode,
    /// Where to create the demo workspace (default: a new temporary
    /// directory). It must be new or empty.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// With --dir: add the demo files to a directory that holds other
    /// files. A file the demo would write that is already there is still
    /// refused, never overwritten.
    #[arg(long, requires = "dir")]
    pub allow_non_empty: bool,
}

/// Whose models: the provider's base URL, API key variable and default
/// model. The wire protocol follows from it unless `--api` names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// OpenAI (Responses API), or with --base-url any OpenAI-compatible
    /// server (Chat Completions: Ollama, vLLM, llama.cpp, OpenRouter).
    Openai,
    /// Anthropic Messages API.
    Anthropic,
    /// Azure OpenAI (Responses API; AZURE_OPENAI_API_KEY, and
    /// AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME unless --base-url).
    AzureOpenaiResponses,
    /// Google Gemini API (GEMINI_API_KEY, then GOOGLE_API_KEY).
    Google,
    /// Gemini on Vertex AI with a Vertex API key (GOOGLE_CLOUD_API_KEY) at
    /// GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (default `global`),
    /// unless --base-url.
    GoogleVertex,
    /// Amazon Bedrock (ConverseStream): AWS credentials (environment or
    /// ~/.aws profile) or AWS_BEARER_TOKEN_BEDROCK; region from AWS_REGION.
    AmazonBedrock,
    /// Replay a JSONL script (see --script).
    Scripted,
}

/// The wire protocol, by Pi's API names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiKind {
    /// Chat Completions (`POST /chat/completions`).
    OpenaiCompletions,
    /// The Responses API (`POST /responses`), bearer key.
    OpenaiResponses,
    /// The Responses API on Azure OpenAI (`api-key` header, optional
    /// AZURE_OPENAI_API_VERSION).
    AzureOpenaiResponses,
    /// Anthropic Messages (`POST /v1/messages`).
    AnthropicMessages,
    /// Google's Gemini API (`:streamGenerateContent`, `x-goog-api-key`).
    GoogleGenerativeAi,
    /// Gemini on Vertex AI (`/publishers/google/models/{id}:streamGenerateContent`)
    /// with a Vertex API key.
    GoogleVertex,
    /// Amazon Bedrock ConverseStream (`/model/{id}/converse-stream`), signed
    /// with AWS SigV4, or `--api-key` as a Bedrock API key (bearer).
    BedrockConverseStream,
}

/// Output mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Human-readable, streamed, tool calls drawn by their renderers.
    Text,
    /// Every event as one JSON line.
    Json,
    /// Commands as JSON lines on stdin, responses and events on stdout.
    Rpc,
}

/// Running the agent.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// MCP servers file (`{"mcpServers": {...}}`), besides the settings' `mcpServers`; repeatable.
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub mcp_config: Vec<PathBuf>,
    /// Continue the most recent session of this directory.
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["resume", "session", "no_session"])]
    pub continue_session: bool,
    /// Resume a session: by id prefix, or pick from a list on a terminal.
    #[arg(short = 'r', long, value_name = "ID", num_args = 0..=1, default_missing_value = "", conflicts_with_all = ["session", "no_session"])]
    pub resume: Option<String>,
    /// Use this session file (created if missing).
    #[arg(long, value_name = "PATH", conflicts_with = "no_session")]
    pub session: Option<PathBuf>,
    /// Do not record the conversation.
    #[arg(long)]
    pub no_session: bool,
    /// Where sessions are stored (default: <agent dir>/sessions/--<cwd>--).
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,
    /// With --script: append each request's messages to FILE (one JSON array a line).
    #[arg(long, value_name = "FILE", requires = "script")]
    pub script_log: Option<PathBuf>,
    /// The model's context window in tokens, for automatic compaction.
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// Confine the tools: off, read-only or workspace-write (--help says
    /// exactly what is blocked).
    #[arg(long, value_name = "MODE", value_parser = crate::sandbox::parse_mode, long_help = SANDBOX_HELP)]
    pub sandbox: Option<agent_sandbox::SandboxMode>,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Load an extension: an executable speaking MCP on stdio whose tools
    /// join the session under their own names (repeatable).
    #[arg(short = 'e', long = "extension", value_name = "PATH")]
    pub extensions: Vec<PathBuf>,
    /// Do not load the extensions of <agent dir>/extensions/ and of the
    /// project (-e still loads).
    #[arg(long)]
    pub no_extensions: bool,
    /// Model provider: openai, anthropic, azure-openai-responses, google,
    /// amazon-bedrock, scripted, or any provider of the model registry
    /// (built-in or models.json).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Thinking level: off, minimal, low, medium, high or xhigh (default:
    /// the settings' defaultThinkingLevel); clamped to what the model can do.
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<agent_ai::ThinkingLevel>,
    /// The models Ctrl+P cycles through in the terminal UI
    /// (comma-separated: provider/id, an id, a text of ids and names, or a
    /// glob, each with an optional :LEVEL); overrides the enabledModels
    /// setting.
    #[arg(long, value_name = "PATTERNS", value_delimiter = ',')]
    pub models: Option<Vec<String>>,
    /// Print the known models (those matching SEARCH) and exit.
    #[arg(long, value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,
    /// Wire API (Pi's names); with --base-url and --api-key, any server
    /// speaking it. Default: from the provider (openai: Responses, or Chat
    /// Completions with --base-url).
    #[arg(long, value_enum)]
    pub api: Option<ApiKind>,
    /// Model: provider/id or an id (e.g. anthropic/claude-sonnet-4-5,
    /// gpt-5-mini); --list-models shows the known ones.
    #[arg(long)]
    pub model: Option<String>,
    /// API base URL (e.g. http://localhost:11434/v1 for Ollama).
    #[arg(long)]
    pub base_url: Option<String>,
    /// API key (default: OPENAI_API_KEY, ANTHROPIC_API_KEY, AZURE_OPENAI_API_KEY,
    /// GEMINI_API_KEY then GOOGLE_API_KEY; for Bedrock a Bedrock API key, used
    /// instead of AWS credentials, default AWS_BEARER_TOKEN_BEDROCK).
    #[arg(long)]
    pub api_key: Option<String>,
    /// JSONL script for the scripted provider.
    #[arg(long)]
    pub script: Option<PathBuf>,
    /// Only these tools (comma-separated; built-in, extension or custom).
    #[arg(long, short = 't')]
    pub tools: Option<String>,
    /// Never these tools (comma-separated).
    #[arg(long)]
    pub exclude_tools: Option<String>,
    /// No tools at all.
    #[arg(long)]
    pub no_tools: bool,
    /// No built-in tools active by default.
    #[arg(long)]
    pub no_builtin_tools: bool,
    /// Load a skill file or directory (repeatable); wins a name clash.
    #[arg(long = "skill", value_name = "PATH")]
    pub skills: Vec<PathBuf>,
    /// Load no skills except those given with --skill.
    #[arg(long)]
    pub no_skills: bool,
    /// Load a prompt template file or directory (repeatable).
    #[arg(long = "prompt-template", value_name = "PATH")]
    pub prompt_templates: Vec<PathBuf>,
    /// Load no prompt templates except those given with --prompt-template.
    #[arg(long)]
    pub no_prompt_templates: bool,
    /// Replace the system prompt's preamble, tool list and guidelines.
    #[arg(long)]
    pub system_prompt: Option<String>,
    /// Append text to the system prompt (repeatable).
    #[arg(long)]
    pub append_system_prompt: Vec<String>,
    /// Working directory (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Run the prompt, print the final answer, exit.
    #[arg(short, long)]
    pub print: bool,
    /// Output mode.
    #[arg(long, value_enum, default_value_t = Mode::Text)]
    pub mode: Mode,
    /// Print the system prompt and exit.
    #[arg(long)]
    pub print_system_prompt: bool,
    /// Print the tools (names, snippets, schemas) as JSON and exit.
    #[arg(long)]
    pub list_tools: bool,
    /// Use the line prompt instead of the terminal UI (as happens anyway
    /// without a terminal on stdin and stdout, or with `TERM=dumb`).
    #[arg(long)]
    pub no_tui: bool,
    /// How the terminal UI draws: `inline` (in the terminal's scrollback)
    /// or `fullscreen` (the alternate screen); overrides the `tuiMode`
    /// setting. `/tui` switches while it runs.
    #[arg(long, value_name = "MODE", value_parser = ["inline", "fullscreen"])]
    pub tui_mode: Option<String>,
    /// Diagnostics to stderr.
    #[arg(short, long)]
    pub verbose: bool,
    /// The prompt (words are joined with spaces; read from stdin when piped).
    pub prompt: Vec<String>,
}
