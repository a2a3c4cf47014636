//! [`AgentSession`]: registry + settings + extensions + system prompt + `Agent`,
//! assembled from chosen parts.

mod builder;

pub use builder::{AgentSessionBuilder, IMAGES_BLOCKED_TEXT, SessionBuildError, tool_extensions};

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_ai::{Message, Model, ModelClient, ThinkingLevel};
use agent_core::{Agent, AgentError, IntoPrompt, RunOutcome};

use crate::compaction::{CompactionResult, SessionCompactor};
use crate::registry::ToolRegistry;
use crate::settings::Settings;
use crate::system_prompt::{SystemPromptOptions, build_system_prompt};
use agent_sessions::SessionManager;
use agent_tool::{Extensions, ToolDefinition};

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
