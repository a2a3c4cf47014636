//! [`AgentSessionBuilder`]: the parts a session is assembled from, and
//! `build`, which assembles them in order; the tool extensions every call
//! gets.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_ai::{ContentBlock, Message, Model, ModelClient, ThinkingLevel, UserContent};
use agent_core::{Agent, AgentOptions, BeforeToolCallHook, ExecutionMode};

use crate::agent_dir::agent_dir;
use crate::compaction::{CompactionSettings, SessionCompactor};
use crate::extension::{Extension, ExtensionApi};
use crate::registry::{ToolRegistry, ToolSelection};
use crate::settings::Settings;
use crate::system_prompt::{SystemPromptOptions, load_context_files};
use agent_permissions::{PermissionGate, PermissionPrompt};
use agent_sessions::SessionManager;
use agent_tool::{Extensions, FileMutationQueue, ToolDefinition, WorkingDir};

use super::{AgentSession, SessionInner, clamp_thinking};

/// What every tool call of a session gets in its context: the
/// [`WorkingDir`], the settings (as [`Settings`] and as
/// [`ToolSettings`](agent_tool::ToolSettings)) and a [`FileMutationQueue`].
/// For running tools outside a session (one tool call, an MCP server) the
/// way a session runs them.
///
/// ```
/// use coding_agent::{Settings, WorkingDir, tool_extensions};
/// let extensions = tool_extensions(std::path::Path::new("/srv/app"), &Settings::default());
/// assert!(extensions.get::<WorkingDir>().is_some());
/// assert!(extensions.get::<coding_agent::FileMutationQueue>().is_some());
/// ```
pub fn tool_extensions(cwd: &std::path::Path, settings: &Settings) -> Extensions {
    tool_extensions_into(Extensions::new(), cwd, settings)
}

fn tool_extensions_into(
    mut extensions: Extensions,
    cwd: &std::path::Path,
    settings: &Settings,
) -> Extensions {
    extensions.insert(WorkingDir::new(cwd));
    extensions.insert(settings.tool_settings());
    extensions.insert(settings.clone());
    if !extensions.contains::<FileMutationQueue>() {
        extensions.insert(FileMutationQueue::new());
    }
    extensions
}

/// Why [`AgentSessionBuilder::build`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionBuildError {
    /// A settings file could not be used.
    #[error(transparent)]
    Settings(#[from] crate::SettingsError),
    /// [`AgentSessionBuilder::active_tools`] names a tool that is not
    /// registered (a typo would otherwise leave the tool out in silence).
    #[error("active_tools names {name:?}, which is not a registered tool (registered: {})", registered.join(", "))]
    UnknownTool {
        /// The name.
        name: String,
        /// The registered tools.
        registered: Vec<String>,
    },
}

/// Builds an [`AgentSession`].
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use agent_ai::{Model, providers::scripted::ScriptedClient};
/// use coding_agent::AgentSessionBuilder;
///
/// let client = ScriptedClient::from_jsonl(r#"{"content":[{"type":"text","text":"hi"}]}"#).unwrap();
/// let session = AgentSessionBuilder::new(Model::new("scripted", "demo"), Arc::new(client))
///     .cwd(std::env::temp_dir())
///     .context_files(false)
///     .build()
///     .unwrap();
/// session.prompt("hello").await.unwrap();
/// assert!(session.system_prompt().contains("Available tools:\n(none)"));
/// # });
/// ```
pub struct AgentSessionBuilder {
    model: Model,
    client: Arc<dyn ModelClient>,
    cwd: PathBuf,
    builtins: Vec<ToolDefinition>,
    extensions: Vec<Arc<dyn Extension>>,
    tools: Vec<ToolDefinition>,
    settings: Option<Settings>,
    selection: ToolSelection,
    custom_prompt: Option<String>,
    append_prompts: Vec<String>,
    extra_guidelines: Vec<String>,
    tool_execution: ExecutionMode,
    context_files: bool,
    context_files_from: Option<Arc<dyn agent_tool::FileOps>>,
    active_tools: Option<Vec<String>>,
    permissions: Option<PermissionGate>,
    permission_prompt: Option<Arc<dyn PermissionPrompt>>,
    session: Option<SessionManager>,
    context_window: Option<u64>,
    thinking_level: Option<ThinkingLevel>,
    tool_extensions: Extensions,
    resources: Arc<agent_skills::Resources>,
}

impl AgentSessionBuilder {
    /// Starts with no tools, settings loaded from disk at build time, and the
    /// process's current directory as cwd.
    pub fn new(model: Model, client: Arc<dyn ModelClient>) -> Self {
        AgentSessionBuilder {
            model,
            client,
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            builtins: Vec::new(),
            extensions: Vec::new(),
            tools: Vec::new(),
            settings: None,
            selection: ToolSelection::default(),
            custom_prompt: None,
            append_prompts: Vec::new(),
            extra_guidelines: Vec::new(),
            tool_execution: ExecutionMode::Parallel,
            context_files: true,
            context_files_from: None,
            active_tools: None,
            permissions: None,
            permission_prompt: None,
            session: None,
            context_window: None,
            resources: Arc::default(),
            thinking_level: None,
            tool_extensions: Extensions::new(),
        }
    }

    /// The model's context window in tokens, for automatic compaction
    /// (default: the model's `context_window`; 0 turns it off).
    pub fn context_window(mut self, tokens: u64) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// The thinking level to start with (default: the settings'
    /// `defaultThinkingLevel`), clamped to what the model can do.
    pub fn thinking_level(mut self, level: ThinkingLevel) -> Self {
        self.thinking_level = Some(level);
        self
    }

    /// Records the conversation in `session` (and restores what it already
    /// holds): every message is appended to its file as it ends.
    pub fn session_manager(mut self, session: SessionManager) -> Self {
        self.session = Some(session);
        self
    }

    /// Who answers calls that a permission rule says need approval (a
    /// terminal prompt, an editor's dialog). Without one they are refused.
    /// The rules come from the settings' `permissions`.
    pub fn permission_prompt(mut self, prompt: Arc<dyn PermissionPrompt>) -> Self {
        self.permission_prompt = Some(prompt);
        self
    }

    /// Uses `gate` instead of rules from the settings (see
    /// [`agent_permissions`]).
    pub fn permissions(mut self, gate: PermissionGate) -> Self {
        self.permissions = Some(gate);
        self
    }

    /// The tools offered to the model, in this order (any registered and
    /// allowed tool: built-in, extension or custom). Without this call the
    /// active set is Pi's default: `read`, `bash`, `edit`, `write` and every
    /// extension and custom tool. Unlike [`ToolSelection::tools`], this is not
    /// an allowlist: the other tools stay registered and can be activated
    /// later with [`AgentSession::set_active_tools`].
    pub fn active_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.active_tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Working directory of the session and its tools.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = cwd.into();
        self
    }

    /// Hands every tool call one more value of its own type (reachable as
    /// `cx.get::<T>()`), next to what the session always provides: the
    /// [`WorkingDir`], the [`Model`], the merged [`Settings`] (also as
    /// [`ToolSettings`](agent_tool::ToolSettings)) and the
    /// session's [`FileMutationQueue`] (pass your own queue here to share
    /// it with tools outside the session).
    pub fn tool_extension<T: std::any::Any + Send + Sync>(mut self, value: T) -> Self {
        self.tool_extensions.insert(value);
        self
    }

    /// The built-in tools (e.g. `tools_builtin::all_tools(cwd)`). Registering
    /// a tool does not make it active: see [`AgentSessionBuilder::active_tools`].
    pub fn builtin_tools(mut self, tools: Vec<ToolDefinition>) -> Self {
        self.builtins = tools;
        self
    }

    /// Adds an extension (loaded in the order added).
    pub fn extension(mut self, extension: Arc<dyn Extension>) -> Self {
        self.extensions.push(extension);
        self
    }

    /// Adds a program-supplied tool (overrides built-in and extension tools of the same name).
    pub fn tool(mut self, tool: ToolDefinition) -> Self {
        self.tools.push(tool);
        self
    }

    /// Uses these settings instead of loading the files.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// Tool selection (`--tools` and friends).
    pub fn selection(mut self, selection: ToolSelection) -> Self {
        self.selection = selection;
        self
    }

    /// Replaces the preamble, tool list and guidelines.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.custom_prompt = Some(prompt.into());
        self
    }

    /// Appends text to the system prompt.
    pub fn append_system_prompt(mut self, text: impl Into<String>) -> Self {
        self.append_prompts.push(text.into());
        self
    }

    /// Adds a guideline.
    pub fn guideline(mut self, text: impl Into<String>) -> Self {
        self.extra_guidelines.push(text.into());
        self
    }

    /// Batch scheduling of the loop.
    pub fn tool_execution(mut self, mode: ExecutionMode) -> Self {
        self.tool_execution = mode;
        self
    }

    /// Skills and prompt templates ([`agent_skills::load_resources`]): the
    /// skills are listed in the system prompt, and [`AgentSession::expand_input`]
    /// expands `/skill:name` and templates.
    pub fn resources(mut self, resources: agent_skills::Resources) -> Self {
        self.resources = Arc::new(resources);
        self
    }

    /// Whether to read AGENTS.md / CLAUDE.md into the prompt (default true).
    pub fn context_files(mut self, load: bool) -> Self {
        self.context_files = load;
        self
    }

    /// Reads the project's AGENTS.md / CLAUDE.md through `files` instead of
    /// this machine's disk: the working directory is on another machine
    /// (`agent-remote`), so a local file at the same path must not be read.
    pub fn context_files_from(mut self, files: Arc<dyn agent_tool::FileOps>) -> Self {
        self.context_files_from = Some(files);
        self
    }

    /// Assembles the session.
    ///
    /// # Errors
    /// When no settings were given and the settings files of `cwd` cannot be
    /// used (see [`Settings::load`]): a broken file never means "no limits".
    pub fn build(mut self) -> Result<AgentSession, SessionBuildError> {
        let settings = Arc::new(match self.settings {
            Some(s) => s,
            None => Settings::load(&self.cwd)?,
        });
        let api = ExtensionApi::load(&self.extensions);
        let mut registry = ToolRegistry::new(self.builtins);
        for (extension, tool) in api.tools() {
            registry.register_extension_tool(extension, tool.clone());
        }
        for tool in self.tools {
            registry.register_tool(tool);
        }
        registry.set_settings_allowed_tools(settings.allowed_tools());
        let mut selection = self.selection;
        if selection.tools.is_none() && !selection.no_tools {
            selection.tools = settings.default_tool_changes();
        }
        registry.apply_selection(selection);
        if let Some(active) = &self.active_tools {
            let registered = registry.names();
            if let Some(unknown) = active.iter().find(|n| !registered.contains(n)) {
                return Err(SessionBuildError::UnknownTool {
                    name: unknown.clone(),
                    registered,
                });
            }
            registry.set_active_tools(active);
        }

        let mut context_files = match (&self.context_files_from, self.context_files) {
            (_, false) => Vec::new(),
            // The working directory is elsewhere: the user's own AGENTS.md
            // from here, the project's through its file operations.
            (Some(files), true) => {
                let mut found: Vec<_> = agent_dir()
                    .and_then(|d| crate::system_prompt::agent_dir_context_file(&d))
                    .into_iter()
                    .collect();
                found.extend(crate::system_prompt::context_files_through(
                    files.as_ref(),
                    &self.cwd,
                ));
                found
            }
            (None, true) => load_context_files(&self.cwd, agent_dir().as_deref()),
        };
        // A context file the Read rules deny (directly or through a link)
        // stays out of the prompt, as it stays out of the read tool.
        if let Ok(rules) = settings.permission_rules(&self.cwd) {
            let filter = rules.read_filter();
            context_files.retain(|f| {
                let hidden = filter.hides_file(&f.path);
                if hidden {
                    tracing::info!(path = %f.path.display(), "context file denied by a Read rule");
                }
                !hidden
            });
        }
        let prompt_base = SystemPromptOptions {
            custom_prompt: self.custom_prompt,
            append_prompts: self.append_prompts,
            extra_guidelines: self.extra_guidelines,
            context_files,
            cwd: self.cwd.clone(),
            ..Default::default()
        };
        let mut extensions = tool_extensions_into(self.tool_extensions, &self.cwd, &settings);
        extensions.insert(self.model.clone());
        let mut options = AgentOptions::new(self.model, self.client);
        options.tool_extensions = extensions.clone();
        options.tool_execution = self.tool_execution;
        options.steering_mode = settings.known().steering_mode.unwrap_or_default();
        options.follow_up_mode = settings.known().follow_up_mode.unwrap_or_default();
        if let Some(n) = settings.max_parallel_tools() {
            options.max_parallel_tools = n;
        }
        options.thinking_budgets = settings.thinking_budgets();
        // A resumed session goes on at the level it had, unless told
        // otherwise; the level in use is recorded when it changes.
        let recorded = self
            .session
            .as_ref()
            .and_then(SessionManager::recorded_thinking_level);
        let asked = self
            .thinking_level
            .or(recorded)
            .unwrap_or_else(|| settings.default_thinking_level());
        let level = clamp_thinking(&options.model, asked);
        options.reasoning = level.effort();
        if let Some(manager) = self.session.as_mut()
            && recorded.unwrap_or_default() != level
            && let Err(e) = manager.append_thinking_level_change(level.as_str())
        {
            tracing::warn!(error = %e, "cannot record the thinking level");
        }
        if settings.images_block_images() {
            options.transform_context = Some(Arc::new(block_images));
        }
        let gate = match self.permissions {
            Some(gate) => gate,
            None => {
                let rules = settings.permission_rules(&self.cwd)?;
                PermissionGate::new(
                    rules,
                    self.permission_prompt.clone(),
                    &self.cwd,
                    "this session (it has no permission prompt)",
                )
            }
        };
        let inner = Arc::new(Mutex::new(SessionInner {
            registry,
            prompt_base,
            system_prompt: String::new(),
            constrained_sampling: settings.constrained_sampling(),
            skills_budget: agent_skills::budget_chars(
                self.context_window
                    .or(Some(options.model.context_window))
                    .filter(|w| *w > 0),
            ),
            resources: self.resources.clone(),
        }));
        // The rules and compaction learn what each tool declares from the
        // registry as it is at the time of the call.
        let tools: agent_tool::ToolLookup = {
            let registry_of = Arc::downgrade(&inner);
            Arc::new(move |name: &str| {
                let inner = registry_of.upgrade()?;
                let inner = inner.lock().unwrap_or_else(|p| p.into_inner());
                inner.registry.get(name)
            })
        };
        let gate = gate.with_tools(tools.clone());
        options.before_tool_call = chain_hooks(
            (!gate.is_empty()).then(|| gate.hook()),
            api.before_tool_call_hook(),
        );
        options.after_tool_call = api.after_tool_call_hook();
        // A call to a registered but inactive (or disallowed) tool says so.
        let registry_of = Arc::downgrade(&inner);
        options.unknown_tool_message = Some(Arc::new(move |name: &str| {
            let inner = registry_of.upgrade()?;
            let inner = inner.lock().unwrap_or_else(|p| p.into_inner());
            inner.registry.inactive_reason(name)
        }));
        options.cache_retention = settings.cache_retention();
        let store = self.session.map(|manager| {
            options.messages = manager.context().messages;
            options.session_id = Some(manager.session_id().to_string());
            Arc::new(Mutex::new(manager))
        });
        let store = Arc::new(Mutex::new(store));
        let compactor = Arc::new(SessionCompactor::new(
            options.client.clone(),
            options.model.clone(),
            CompactionSettings::from_settings(&settings),
            self.context_window,
            store.clone(),
            tools,
        ));
        options.compactor = Some(compactor.clone());
        let session = AgentSession {
            agent: Agent::new(options),
            inner,
            settings,
            extensions,
            cwd: self.cwd,
            store,
            compactor,
        };
        session.record_messages();
        session.activate_added_tools();
        session.refresh();
        session.restore_tool_state();
        Ok(session)
    }
}

/// Permission rules first; the extensions' hooks only see calls the rules let through.
fn chain_hooks(
    first: Option<BeforeToolCallHook>,
    second: Option<BeforeToolCallHook>,
) -> Option<BeforeToolCallHook> {
    let (first, second) = match (first, second) {
        (None, h) | (h, None) => return h,
        (Some(a), Some(b)) => (a, b),
    };
    Some(Arc::new(
        move |ctx: agent_core::BeforeToolCallContext, cancel| {
            let (first, second) = (first.clone(), second.clone());
            Box::pin(async move {
                let decided = first(ctx.clone(), cancel.clone()).await?;
                if decided.as_ref().is_some_and(|d| d.block) {
                    return Ok(decided);
                }
                let record = decided.and_then(|d| d.decision);
                let mut then = second(ctx, cancel).await?;
                if let Some(record) = record {
                    let then = then.get_or_insert_with(Default::default);
                    then.decision.get_or_insert(record);
                }
                Ok(then)
            })
        },
    ))
}

/// Text that replaces images when `images.blockImages` is set.
pub const IMAGES_BLOCKED_TEXT: &str = "Image reading is disabled.";

/// Replaces images in user and tool-result messages with [`IMAGES_BLOCKED_TEXT`].
fn block_images(messages: &[Message]) -> Vec<Message> {
    let replace = |blocks: &[ContentBlock]| -> Vec<ContentBlock> {
        blocks
            .iter()
            .map(|b| match b {
                ContentBlock::Image(_) => ContentBlock::text(IMAGES_BLOCKED_TEXT),
                other => other.clone(),
            })
            .collect()
    };
    messages
        .iter()
        .map(|m| match m {
            Message::User(u) => {
                let mut u = u.clone();
                if let UserContent::Blocks(blocks) = &u.content {
                    u.content = UserContent::Blocks(replace(blocks));
                }
                Message::User(u)
            }
            Message::ToolResult(r) => {
                let mut r = r.clone();
                r.content = replace(&r.content);
                Message::ToolResult(r)
            }
            other => other.clone(),
        })
        .collect()
}
