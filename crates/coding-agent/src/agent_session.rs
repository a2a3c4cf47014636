//! [`AgentSession`]: registry + settings + extensions + system prompt + `Agent`,
//! assembled from chosen parts.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_ai::{ContentBlock, Message, Model, ModelClient, ThinkingLevel, UserContent};
use agent_core::{
    Agent, AgentError, AgentOptions, BeforeToolCallHook, ExecutionMode, IntoPrompt, RunOutcome,
};

use crate::agent_dir::agent_dir;
use crate::compaction::{CompactionResult, CompactionSettings, SessionCompactor};
use crate::extension::{Extension, ExtensionApi};
use crate::registry::{ToolRegistry, ToolSelection};
use crate::settings::Settings;
use crate::system_prompt::{SystemPromptOptions, build_system_prompt, load_context_files};
use agent_permissions::{PermissionGate, PermissionPrompt};
use agent_sessions::SessionManager;
use agent_tool::{Extensions, FileMutationQueue, ToolDefinition, WorkingDir};

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

/// `level`, or the nearest one `model` can do, with a notice when it
/// differs.
fn clamp_thinking(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let clamped = model.clamp_thinking(level);
    if clamped != level {
        tracing::warn!(
            "{}/{} cannot think at level {level}; using {clamped}",
            model.provider,
            model.id
        );
    }
    clamped
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

pub(crate) struct SessionInner {
    registry: ToolRegistry,
    prompt_base: SystemPromptOptions,
    system_prompt: String,
    /// The `constrainedSampling` setting: every tool strict, none, or
    /// (`None`) as each tool declares.
    constrained_sampling: Option<bool>,
    /// Characters the skills block may take.
    skills_budget: usize,
    /// Skills and prompt templates.
    pub(crate) resources: Arc<agent_skills::Resources>,
}

/// An assembled agent: the `Agent`, its registry, settings and system prompt,
/// kept in step (changing the active tools rebuilds the prompt).
#[derive(Clone)]
pub struct AgentSession {
    agent: Agent,
    inner: Arc<Mutex<SessionInner>>,
    settings: Arc<Settings>,
    extensions: Extensions,
    cwd: PathBuf,
    /// The session file, when the conversation is recorded.
    store: Arc<Mutex<Option<Arc<Mutex<SessionManager>>>>>,
    compactor: Arc<SessionCompactor>,
}

impl std::fmt::Debug for AgentSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSession")
            .field("cwd", &self.cwd)
            .field("active_tools", &self.active_tool_names())
            .finish_non_exhaustive()
    }
}

impl AgentSession {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, SessionInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Pushes the active tools and a freshly built system prompt into the agent.
    pub(crate) fn refresh(&self) {
        refresh_agent(&self.inner, &self.agent);
    }

    /// Tools a result names in `addedToolNames` become active for the next
    /// request (registered and allowed ones; others are ignored), as in Pi.
    fn activate_added_tools(&self) {
        let inner = Arc::downgrade(&self.inner);
        let agent = self.agent.downgrade();
        self.agent.subscribe(move |event| {
            let agent_core::AgentEvent::MessageEnd {
                message: Message::ToolResult(result),
            } = event
            else {
                return;
            };
            if result.added_tool_names.is_empty() {
                return;
            }
            let (Some(inner), Some(agent)) = (inner.upgrade(), agent.upgrade()) else {
                return;
            };
            {
                let mut state = inner.lock().unwrap_or_else(|p| p.into_inner());
                let mut active = state.registry.active_names();
                let mut changed = false;
                for name in &result.added_tool_names {
                    if state.registry.is_allowed(name)
                        && state.registry.get(name).is_some()
                        && !active.contains(name)
                    {
                        active.push(name.clone());
                        changed = true;
                    }
                }
                if !changed {
                    return;
                }
                state.registry.set_active_tools(&active);
            }
            refresh_agent(&inner, &agent);
        });
    }
}

/// Pushes the registry's active tools and a freshly built system prompt
/// into `agent`.
fn refresh_agent(inner: &Mutex<SessionInner>, agent: &Agent) {
    let (tools, prompt) = {
        let mut inner = inner.lock().unwrap_or_else(|p| p.into_inner());
        let active = inner.registry.active_definitions();
        let mut options = inner.prompt_base.clone();
        options.selected_tools = active.iter().map(|d| d.name().to_string()).collect();
        options.tool_snippets = active
            .iter()
            .filter_map(|d| {
                d.prompt_snippet()
                    .map(|s| (d.name().to_string(), s.to_string()))
            })
            .collect();
        options.tool_guidelines = active
            .iter()
            .flat_map(|d| d.prompt_guidelines().iter().cloned())
            .collect();
        let reader = crate::skills::skill_reader(&active);
        let (block, warnings) = agent_skills::skills_prompt(
            &inner.resources.skills,
            reader.as_ref(),
            inner.skills_budget,
        );
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        options.skills_block = block;
        let prompt = build_system_prompt(&options);
        inner.system_prompt = prompt.clone();
        let tools = active
            .into_iter()
            .map(|d| with_constrained_setting(d, inner.constrained_sampling).tool())
            .collect();
        (tools, prompt)
    };
    agent.set_tools(tools);
    agent.set_system_prompt(prompt);
}

/// A tool as the `constrainedSampling` setting has it sent: `true` asks
/// for strict mode where the tool says nothing (keeping a tool's own
/// `require`), `false` drops every request.
fn with_constrained_setting(definition: ToolDefinition, setting: Option<bool>) -> ToolDefinition {
    match setting {
        None => definition,
        Some(true) if definition.constrained_sampling().is_some() => definition,
        Some(true) => {
            definition.with_constrained_sampling(Some(agent_tool::ConstrainedSampling::prefer()))
        }
        Some(false) => definition.with_constrained_sampling(None),
    }
}

impl AgentSession {
    /// Appends every finished message to the session file (whichever file
    /// is current when the message ends).
    fn record_messages(&self) {
        let store = Arc::downgrade(&self.store);
        let warned = std::sync::atomic::AtomicBool::new(false);
        self.agent.subscribe(move |event| {
            let agent_core::AgentEvent::MessageEnd { message } = event else {
                return;
            };
            let Some(store) = store.upgrade() else { return };
            let current = store.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let Some(manager) = current else { return };
            let mut manager = manager.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = manager.append_message(message)
                && !warned.swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                tracing::warn!(error = %e, "cannot write the session file; the conversation goes on unrecorded");
            }
        });
    }

    /// The session file manager, when the conversation is recorded.
    pub fn session_manager(&self) -> Option<Arc<Mutex<SessionManager>>> {
        self.store.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Continues in `manager`'s session: its messages replace the
    /// conversation (refused while a run is in progress).
    ///
    /// # Errors
    /// [`AgentError::AlreadyRunning`].
    pub fn switch_session(&self, manager: SessionManager) -> Result<(), AgentError> {
        if self.agent.is_running() {
            return Err(AgentError::AlreadyRunning);
        }
        self.agent.replace_messages(manager.context().messages);
        self.agent
            .set_session_id(Some(manager.session_id().to_string()));
        if let Some(level) = manager.recorded_thinking_level() {
            let level = clamp_thinking(&self.agent.model(), level);
            self.agent.set_reasoning(level.effort());
        }
        *self.store.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(Mutex::new(manager)));
        self.restore_tool_state();
        Ok(())
    }

    /// Hands every registered tool that keeps state (see
    /// [`ToolDefinition::with_restore`]) its earlier results on the current
    /// branch of the session file, root first: none without a file, so
    /// state left from another session is cleared. The session does this
    /// when it is built (a resumed file restores the tools), after
    /// [`AgentSession::switch_session`] (new, resume, fork, another branch)
    /// and for tools added by [`AgentSession::replace_tools`]; call it after
    /// moving the leaf of [`AgentSession::session_manager`] by hand.
    pub fn restore_tool_state(&self) {
        let definitions = self.lock().registry.definitions();
        self.restore_tools(&definitions);
    }

    fn restore_tools(&self, definitions: &[ToolDefinition]) {
        if !definitions.iter().any(ToolDefinition::restores_state) {
            return;
        }
        let mut earlier = match self.session_manager() {
            Some(manager) => {
                crate::restore::earlier_results(&manager.lock().unwrap_or_else(|p| p.into_inner()))
            }
            None => Default::default(),
        };
        // Outside every lock: a restore function may call back into the session.
        for definition in definitions.iter().filter(|d| d.restores_state()) {
            let results = earlier.remove(definition.name()).unwrap_or_default();
            definition.restore(&results);
        }
    }

    /// Summarises the older part of the conversation now (`/compact`);
    /// `instructions` steer the summary.
    ///
    /// # Errors
    /// A run is in progress, there is nothing to compact, or the model failed.
    pub async fn compact(
        &self,
        instructions: Option<&str>,
    ) -> Result<CompactionResult, agent_core::CompactionError> {
        if self.agent.is_running() {
            return Err(agent_core::CompactionError::Busy);
        }
        let result = self
            .compactor
            .run(
                self.agent.messages(),
                instructions,
                agent_core::CancellationToken::new(),
            )
            .await?;
        self.agent.replace_messages(result.messages.clone());
        Ok(result)
    }

    /// Tokens and cost of every model request of the transcript, added up
    /// (each assistant message carries its own, priced by its model).
    pub fn usage(&self) -> agent_ai::Usage {
        let mut total = agent_ai::Usage::default();
        for m in self.agent.messages() {
            if let Message::Assistant(a) = m {
                total.add(&a.usage);
            }
        }
        total
    }

    /// The thinking level of the next request.
    pub fn thinking_level(&self) -> ThinkingLevel {
        self.agent.reasoning().into()
    }

    /// Sets the thinking level from the next run on, clamped to what the
    /// model can do (a notice says so when it is), and records a
    /// `thinking_level_change` when it changed. Returns the level set.
    pub fn set_thinking_level(&self, level: ThinkingLevel) -> ThinkingLevel {
        let level = clamp_thinking(&self.agent.model(), level);
        if level != self.thinking_level() {
            self.agent.set_reasoning(level.effort());
            if let Some(store) = self.session_manager() {
                let mut manager = store.lock().unwrap_or_else(|p| p.into_inner());
                if let Err(e) = manager.append_thinking_level_change(level.as_str()) {
                    tracing::warn!(error = %e, "cannot record the thinking level change");
                }
            }
        }
        level
    }

    /// Moves to the model's next thinking level (after the highest: `off`)
    /// and returns it.
    pub fn cycle_thinking_level(&self) -> ThinkingLevel {
        let levels = self.agent.model().thinking_levels();
        let current = self.thinking_level();
        let next = levels
            .iter()
            .position(|l| *l == current)
            .map_or(0, |i| (i + 1) % levels.len());
        self.set_thinking_level(levels.get(next).copied().unwrap_or_default())
    }

    /// Switches the model from the next request on, recording a
    /// `model_change` in the session file. The thinking level is clamped
    /// to what the new model can do.
    pub fn set_model(&self, model: Model) {
        self.switch_model(model, None);
    }

    /// [`AgentSession::set_model`] for a model that another client serves
    /// (another provider, API or endpoint): the session and its compactor
    /// use `client` from the next request on.
    pub fn set_model_and_client(&self, model: Model, client: Arc<dyn ModelClient>) {
        self.switch_model(model, Some(client));
    }

    fn switch_model(&self, model: Model, client: Option<Arc<dyn ModelClient>>) {
        if let Some(store) = self.session_manager() {
            let mut manager = store.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = manager.append_model_change(&model.provider, &model.id) {
                tracing::warn!(error = %e, "cannot record the model change");
            }
        }
        let level = clamp_thinking(&model, self.thinking_level());
        self.compactor.set_model(model.clone(), client.clone());
        if let Some(client) = client {
            self.agent.set_client(client);
        }
        self.agent.set_model(model);
        self.set_thinking_level(level);
    }

    /// The session's compactor (automatic compaction on/off, state).
    pub fn compactor(&self) -> &SessionCompactor {
        &self.compactor
    }

    /// The underlying agent (subscribe, abort, steer, ...).
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// Sends a prompt and runs until the agent stops.
    ///
    /// # Errors
    /// A run that ends in a model error ([`AgentError::RunFailed`], e.g. a
    /// 401 from the provider) or is aborted ([`AgentError::Aborted`]) is an
    /// error carrying the [`RunOutcome`]; so is a prompt sent while a run is
    /// in progress ([`AgentError::AlreadyRunning`]).
    pub async fn prompt(&self, prompt: impl IntoPrompt) -> Result<RunOutcome, AgentError> {
        self.agent.prompt(prompt).await
    }

    /// The text of the last assistant message in the transcript (empty when
    /// there is none).
    pub fn last_assistant_text(&self) -> String {
        self.agent
            .messages()
            .iter()
            .rev()
            .find_map(Message::as_assistant)
            .map(|a| a.text())
            .unwrap_or_default()
    }

    /// The current system prompt.
    pub fn system_prompt(&self) -> String {
        self.lock().system_prompt.clone()
    }

    /// A snapshot of the registry.
    pub fn registry(&self) -> ToolRegistry {
        self.lock().registry.clone()
    }

    /// Active tool names, in order.
    pub fn active_tool_names(&self) -> Vec<String> {
        self.lock().registry.active_names()
    }

    /// Sets the active tools (order kept, unknown or disallowed names ignored)
    /// and rebuilds the system prompt; applies from the next request.
    pub fn set_active_tools<S: AsRef<str>>(&self, names: &[S]) {
        self.lock().registry.set_active_tools(names);
        self.refresh();
    }

    /// Removes the program-supplied tools named in `removed`, registers
    /// `added` (replacing same-named ones) and rebuilds the system prompt;
    /// applies from the next request. New tools follow the session's
    /// selection and `allowedTools` like any other. This is how a tool
    /// source whose list changes (an MCP server) stays current.
    pub fn replace_tools(&self, removed: &[String], added: Vec<ToolDefinition>) {
        {
            let mut inner = self.lock();
            for name in removed {
                inner.registry.unregister_tool(name);
            }
            for tool in &added {
                inner.registry.register_tool(tool.clone());
            }
        }
        self.refresh();
        self.restore_tools(&added);
    }

    /// The merged settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The working directory.
    pub fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }

    /// The extensions every tool call gets (working directory, model,
    /// settings, mutation queue, and what the builder added), for running a
    /// tool outside the loop.
    pub fn tool_extensions(&self) -> Extensions {
        self.extensions.clone()
    }
}
