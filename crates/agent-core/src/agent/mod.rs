//! [`Agent`]: a stateful wrapper around the loop with queues, abort and events.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use agent_ai::{Message, Model, ModelClient};
use tokio_util::sync::CancellationToken;

use crate::agent_loop::{run_agent_loop, run_agent_loop_continue};
use crate::config::{
    AgentContext, AgentLoopConfig, ContextTransform, MessageSource, UnknownToolMessage,
};
use crate::event::{AgentEvent, EventSink};
use crate::hooks::{AfterToolCallHook, BeforeToolCallHook};
use crate::queue_mode::QueueMode;
use crate::tool::{AgentTool, ExecutionMode};

mod options;
mod outcome;

pub use options::AgentOptions;
pub use outcome::{AgentError, RunOutcome};

/// A snapshot of an agent's state.
#[derive(Clone, Debug)]
pub struct AgentState {
    /// System prompt.
    pub system_prompt: String,
    /// Model.
    pub model: Model,
    /// Names of the active tools, in order.
    pub tool_names: Vec<String>,
    /// The transcript.
    pub messages: Vec<Message>,
    /// Whether a run is in progress.
    pub is_running: bool,
}

type Listener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

struct Inner {
    system_prompt: String,
    model: Model,
    client: Arc<dyn ModelClient>,
    tools: Vec<Arc<dyn AgentTool>>,
    messages: Vec<Message>,
    tool_execution: ExecutionMode,
    before_tool_call: Option<BeforeToolCallHook>,
    after_tool_call: Option<AfterToolCallHook>,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
    transform_context: Option<ContextTransform>,
    max_parallel_tools: usize,
    reasoning: Option<agent_ai::ReasoningEffort>,
    thinking_budgets: agent_ai::ThinkingBudgets,
    session_id: Option<String>,
    cache_retention: agent_ai::CacheRetention,
    unknown_tool_message: Option<UnknownToolMessage>,
    compactor: Option<Arc<dyn crate::ContextCompactor>>,
    tool_extensions: crate::Extensions,
    cancel: Option<CancellationToken>,
    /// Bumped by `set_tools` and `set_system_prompt`, so a running loop picks
    /// the change up before its next request.
    generation: u64,
}

struct Shared {
    inner: Mutex<Inner>,
    listeners: Mutex<Vec<(u64, Listener)>>,
    next_listener: Mutex<u64>,
    steering: Mutex<VecDeque<Message>>,
    follow_up: Mutex<VecDeque<Message>>,
    running: tokio::sync::watch::Sender<bool>,
}

/// Identifies a subscription, for [`Agent::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

/// A stateful agent: owns the transcript, runs the loop, and lets other tasks
/// steer, queue follow-ups, abort and observe.
///
/// Cheap to clone; clones share state.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use agent_ai::{Model, providers::scripted::ScriptedClient};
/// use agent_core::{Agent, AgentOptions};
///
/// let client = ScriptedClient::from_jsonl(r#"{"content":[{"type":"text","text":"Hello!"}]}"#).unwrap();
/// let agent = Agent::new(AgentOptions::new(Model::new("scripted", "demo"), Arc::new(client)));
/// agent.prompt("hi").await.unwrap();
/// let last = agent.messages().pop().unwrap();
/// assert_eq!(last.as_assistant().unwrap().text(), "Hello!");
/// # });
/// ```
#[derive(Clone)]
pub struct Agent {
    shared: Arc<Shared>,
}

/// A handle to an [`Agent`] that does not keep it alive: for a listener
/// that acts on the agent it listens to (a strong clone there would keep
/// the agent alive forever).
#[derive(Clone)]
pub struct WeakAgent {
    shared: std::sync::Weak<Shared>,
}

impl WeakAgent {
    /// The agent, if it still exists.
    pub fn upgrade(&self) -> Option<Agent> {
        self.shared.upgrade().map(|shared| Agent { shared })
    }
}

impl std::fmt::Debug for WeakAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WeakAgent")
    }
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("running", &self.is_running())
            .finish_non_exhaustive()
    }
}

fn take(queue: &Mutex<VecDeque<Message>>, mode: QueueMode) -> Vec<Message> {
    let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
    match mode {
        QueueMode::All => q.drain(..).collect(),
        QueueMode::OneAtATime => q.pop_front().into_iter().collect(),
    }
}

/// What a prompt may be built from.
pub trait IntoPrompt {
    /// The prompt messages.
    fn into_prompt(self) -> Vec<Message>;
}

impl IntoPrompt for &str {
    fn into_prompt(self) -> Vec<Message> {
        vec![Message::user(self)]
    }
}

impl IntoPrompt for String {
    fn into_prompt(self) -> Vec<Message> {
        vec![Message::user(self)]
    }
}

impl IntoPrompt for Message {
    fn into_prompt(self) -> Vec<Message> {
        vec![self]
    }
}

impl IntoPrompt for Vec<Message> {
    fn into_prompt(self) -> Vec<Message> {
        self
    }
}

impl Agent {
    /// A new idle agent.
    pub fn new(options: AgentOptions) -> Self {
        let (running, _) = tokio::sync::watch::channel(false);
        Agent {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    system_prompt: options.system_prompt,
                    model: options.model,
                    client: options.client,
                    tools: options.tools,
                    messages: options.messages,
                    tool_execution: options.tool_execution,
                    before_tool_call: options.before_tool_call,
                    after_tool_call: options.after_tool_call,
                    steering_mode: options.steering_mode,
                    follow_up_mode: options.follow_up_mode,
                    transform_context: options.transform_context,
                    max_parallel_tools: options.max_parallel_tools,
                    reasoning: options.reasoning,
                    thinking_budgets: options.thinking_budgets,
                    session_id: options.session_id,
                    cache_retention: options.cache_retention,
                    unknown_tool_message: options.unknown_tool_message,
                    compactor: options.compactor,
                    tool_extensions: options.tool_extensions,
                    cancel: None,
                    generation: 0,
                }),
                listeners: Mutex::new(Vec::new()),
                next_listener: Mutex::new(0),
                steering: Mutex::new(VecDeque::new()),
                follow_up: Mutex::new(VecDeque::new()),
                running,
            }),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends a prompt and runs until the agent stops. Events go to subscribers.
    ///
    /// # Errors
    /// [`AgentError::AlreadyRunning`] when a run is in progress;
    /// [`AgentError::RunFailed`] when the model request failed (wrong key,
    /// unreachable server, ...) and [`AgentError::Aborted`] when the run was
    /// cancelled, both carrying the [`RunOutcome`].
    pub async fn prompt(&self, prompt: impl IntoPrompt) -> Result<RunOutcome, AgentError> {
        self.run(Some(prompt.into_prompt())).await
    }

    /// Runs from the current transcript without a new prompt. The transcript must
    /// end with a user or toolResult message.
    ///
    /// # Errors
    /// As [`Agent::prompt`], plus [`AgentError::CannotContinue`].
    pub async fn continue_run(&self) -> Result<RunOutcome, AgentError> {
        match self.inner().messages.last() {
            None => return Err(AgentError::CannotContinue("the transcript is empty")),
            Some(Message::Assistant(_)) => {
                return Err(AgentError::CannotContinue(
                    "the last message is an assistant message",
                ));
            }
            Some(_) => {}
        }
        self.run(None).await
    }

    async fn run(&self, prompts: Option<Vec<Message>>) -> Result<RunOutcome, AgentError> {
        let started = self.shared.running.send_if_modified(|running| {
            if *running {
                false
            } else {
                *running = true;
                true
            }
        });
        if !started {
            return Err(AgentError::AlreadyRunning);
        }
        let cancel = CancellationToken::new();
        let (mut context, config) = {
            let mut inner = self.inner();
            inner.cancel = Some(cancel.clone());
            let weak = Arc::downgrade(&self.shared);
            let steering_mode = inner.steering_mode;
            let follow_up_mode = inner.follow_up_mode;
            let weak2 = weak.clone();
            let steering: MessageSource = Arc::new(move || {
                weak.upgrade()
                    .map(|s| take(&s.steering, steering_mode))
                    .unwrap_or_default()
            });
            let follow_up: MessageSource = Arc::new(move || {
                weak2
                    .upgrade()
                    .map(|s| take(&s.follow_up, follow_up_mode))
                    .unwrap_or_default()
            });
            let mut config = AgentLoopConfig::new(inner.model.clone(), inner.client.clone());
            config.tool_execution = inner.tool_execution;
            config.before_tool_call = inner.before_tool_call.clone();
            config.after_tool_call = inner.after_tool_call.clone();
            config.steering_messages = Some(steering);
            config.follow_up_messages = Some(follow_up);
            config.transform_context = inner.transform_context.clone();
            config.max_parallel_tools = inner.max_parallel_tools;
            config.reasoning = inner.reasoning;
            config.thinking_budgets = inner.thinking_budgets;
            config.session_id = inner.session_id.clone();
            config.cache_retention = inner.cache_retention;
            config.unknown_tool_message = inner.unknown_tool_message.clone();
            config.compactor = inner.compactor.clone();
            config.tool_extensions = inner.tool_extensions.clone();
            let seen = std::sync::atomic::AtomicU64::new(inner.generation);
            let source = Arc::downgrade(&self.shared);
            config.refresh_context = Some(Arc::new(move |context: &mut AgentContext| {
                let Some(shared) = source.upgrade() else {
                    return;
                };
                let inner = shared.inner.lock().unwrap_or_else(|p| p.into_inner());
                if seen.swap(inner.generation, std::sync::atomic::Ordering::Relaxed)
                    != inner.generation
                {
                    context.tools = inner.tools.clone();
                    context.system_prompt = inner.system_prompt.clone();
                }
            }));
            let context = AgentContext {
                system_prompt: inner.system_prompt.clone(),
                messages: inner.messages.clone(),
                tools: inner.tools.clone(),
            };
            (context, config)
        };
        let shared = Arc::downgrade(&self.shared);
        let emit: EventSink = Arc::new(move |event: &AgentEvent| {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            if let AgentEvent::MessageEnd { message } = event {
                shared
                    .inner
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .messages
                    .push(message.clone());
            }
            let listeners: Vec<Listener> = shared
                .listeners
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|(_, l)| l.clone())
                .collect();
            for listener in listeners {
                listener(event);
            }
        });
        let added = match prompts {
            Some(prompts) => run_agent_loop(prompts, &mut context, &config, cancel, &emit).await,
            None => run_agent_loop_continue(&mut context, &config, cancel, &emit).await,
        };
        self.inner().cancel = None;
        self.shared.running.send_replace(false);
        RunOutcome::from_messages(added).into_result()
    }

    /// Cancels the running request and every running tool. The run ends with an
    /// assistant message whose `stopReason` is `aborted`.
    pub fn abort(&self) {
        if let Some(cancel) = &self.inner().cancel {
            cancel.cancel();
        }
    }

    /// Queues a message to inject after the current tool batch.
    pub fn steer(&self, message: impl Into<Message>) {
        self.shared
            .steering
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(message.into());
    }

    /// Queues a message to send when the agent would otherwise stop.
    pub fn follow_up(&self, message: impl Into<Message>) {
        self.shared
            .follow_up
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(message.into());
    }

    /// Messages queued by [`Agent::steer`] and [`Agent::follow_up`] and not
    /// yet delivered.
    pub fn pending_message_count(&self) -> usize {
        let steering = self
            .shared
            .steering
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len();
        let follow_up = self
            .shared
            .follow_up
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len();
        steering + follow_up
    }

    /// How queued steering and follow-up messages are delivered.
    pub fn queue_modes(&self) -> (QueueMode, QueueMode) {
        let inner = self.inner();
        (inner.steering_mode, inner.follow_up_mode)
    }

    /// Sets the delivery of steering messages (from the next run).
    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.inner().steering_mode = mode;
    }

    /// Sets the delivery of follow-up messages (from the next run).
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.inner().follow_up_mode = mode;
    }

    /// Drops every queued steering and follow-up message.
    pub fn clear_queues(&self) {
        self.shared
            .steering
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.shared
            .follow_up
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Calls `listener` for every event, synchronously, in order.
    pub fn subscribe(
        &self,
        listener: impl Fn(&AgentEvent) + Send + Sync + 'static,
    ) -> SubscriptionId {
        let mut next = self
            .shared
            .next_listener
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *next += 1;
        let id = *next;
        self.shared
            .listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id, Arc::new(listener)));
        SubscriptionId(id)
    }

    /// Events as a channel (unbounded; a dropped receiver is harmless).
    pub fn events(&self) -> tokio::sync::mpsc::UnboundedReceiver<AgentEvent> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.subscribe(move |e| {
            let _ = tx.send(e.clone());
        });
        rx
    }

    /// Stops calling a listener.
    pub fn unsubscribe(&self, id: SubscriptionId) {
        self.shared
            .listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(i, _)| *i != id.0);
    }

    /// Resolves when no run is in progress.
    pub async fn wait_for_idle(&self) {
        let mut rx = self.shared.running.subscribe();
        let _ = rx.wait_for(|running| !*running).await;
    }

    /// Whether a run is in progress.
    pub fn is_running(&self) -> bool {
        *self.shared.running.borrow()
    }

    /// A handle that does not keep the agent alive (see [`WeakAgent`]).
    pub fn downgrade(&self) -> WeakAgent {
        WeakAgent {
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// Replaces the active tools (takes effect from the next model request,
    /// also within a running run).
    pub fn set_tools(&self, tools: Vec<Arc<dyn AgentTool>>) {
        let mut inner = self.inner();
        inner.tools = tools;
        inner.generation += 1;
    }

    /// Replaces the system prompt (takes effect from the next model
    /// request, also within a running run).
    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        let mut inner = self.inner();
        inner.system_prompt = prompt.into();
        inner.generation += 1;
    }

    /// Replaces the extensions every tool call receives (takes effect from
    /// the next run).
    pub fn set_tool_extensions(&self, extensions: crate::Extensions) {
        self.inner().tool_extensions = extensions;
    }

    /// Replaces (or removes) the compactor (takes effect from the next run).
    pub fn set_compactor(&self, compactor: Option<Arc<dyn crate::ContextCompactor>>) {
        self.inner().compactor = compactor;
    }

    /// The model (without copying the transcript, as [`Agent::state`] does).
    pub fn model(&self) -> Model {
        self.inner().model.clone()
    }

    /// Sets how hard the model thinks (`None`: off), from the next run.
    pub fn set_reasoning(&self, reasoning: Option<agent_ai::ReasoningEffort>) {
        self.inner().reasoning = reasoning;
    }

    /// How hard the model thinks (`None`: off).
    pub fn reasoning(&self) -> Option<agent_ai::ReasoningEffort> {
        self.inner().reasoning
    }

    /// Sets the thinking token budgets, from the next run.
    pub fn set_thinking_budgets(&self, budgets: agent_ai::ThinkingBudgets) {
        self.inner().thinking_budgets = budgets;
    }

    /// Sets the conversation's id sent for prompt caching, from the next
    /// run (a session that forks or switches gets a new one).
    pub fn set_session_id(&self, id: Option<String>) {
        self.inner().session_id = id;
    }

    /// Replaces the model (takes effect from the next run).
    pub fn set_model(&self, model: Model) {
        self.inner().model = model;
    }

    /// Replaces the client that streams the model's answers (takes effect
    /// from the next run): with [`Agent::set_model`], a switch to a model
    /// another provider or API serves.
    pub fn set_client(&self, client: Arc<dyn ModelClient>) {
        self.inner().client = client;
    }

    /// Replaces the hooks (takes effect from the next run).
    pub fn set_hooks(&self, before: Option<BeforeToolCallHook>, after: Option<AfterToolCallHook>) {
        let mut inner = self.inner();
        inner.before_tool_call = before;
        inner.after_tool_call = after;
    }

    /// Replaces the transcript.
    pub fn replace_messages(&self, messages: Vec<Message>) {
        self.inner().messages = messages;
    }

    /// The transcript.
    pub fn messages(&self) -> Vec<Message> {
        self.inner().messages.clone()
    }

    /// The active tools.
    pub fn tools(&self) -> Vec<Arc<dyn AgentTool>> {
        self.inner().tools.clone()
    }

    /// A snapshot of the state.
    pub fn state(&self) -> AgentState {
        let inner = self.inner();
        AgentState {
            system_prompt: inner.system_prompt.clone(),
            model: inner.model.clone(),
            tool_names: inner.tools.iter().map(|t| t.name().to_string()).collect(),
            messages: inner.messages.clone(),
            is_running: self.is_running(),
        }
    }
}
