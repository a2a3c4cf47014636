//! RPC mode: an [`AgentSession`] driven by JSON lines, Pi's protocol, so an
//! editor or another program can embed the agent.
//!
//! - Input: one command a line, split on `\n` only (a trailing `\r` is
//!   dropped): `{"id"?, "type": "prompt", "message": "..."}`, `steer`,
//!   `follow_up`, `abort`, `new_session`, `get_state`, `get_messages`,
//!   `set_model`, `compact`, `set_auto_compaction`, `bash`, `abort_bash`,
//!   `get_session_stats`, `switch_session`, `fork`, `get_fork_messages`,
//!   `get_last_assistant_text`, `set_session_name`, `set_steering_mode`,
//!   `set_follow_up_mode`, `get_commands`, and `extension_ui_response`.
//! - Output: `{"id", "type": "response", "command", "success", "data" |
//!   "error"}` for each command (a line that is not a command gets
//!   `"command": "parse"`), and the agent's events as in `--mode json`.
//! - A permission rule that asks sends `{"type": "extension_ui_request",
//!   "id", "method": "select", "title", "options": ["Allow", "Deny",
//!   "Always allow"]}` and waits for the client's `extension_ui_response`.
//! - Output is bounded: when the client reads slowly, streaming deltas
//!   (`message_update`, `tool_execution_update`) are dropped past a backlog;
//!   past [`OUTPUT_LIMIT`] bytes waiting for the client, no further command
//!   is read (so the client's writes block) and a run is paused until the
//!   client catches up. No other line is ever dropped. End of input aborts
//!   the run, waits for it (bounded) and returns.
//! - `abort` answers once the agent is idle, so a `prompt` sent after its
//!   response is accepted.

mod command;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_ai::{ContentBlock, ImageContent, Message, Model, UserContent, UserMessage};
use agent_core::{AgentEvent, CancellationToken, QueueMode};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::bytes::{Bytes, BytesMut};
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder, FramedRead};

use crate::AgentSession;
use crate::permissions::{PermissionAnswer, PermissionPrompt, PermissionRequest};
use crate::sessions::{EntryKind, SessionManager, bash_execution_text};
use agent_tool::ToolCallContext;

pub use command::{QueueModeName, RpcCommand, RpcParseError, StreamingBehavior};

/// Streaming lines beyond this many waiting for the client are dropped.
const DELTA_BACKLOG: usize = 1024;
/// Streaming lines are dropped once this many bytes wait for the client.
const DELTA_BACKLOG_BYTES: usize = 1 << 20;
/// Past this many bytes waiting for the client, commands are not read and a
/// run is paused until the client reads (one line may exceed it).
pub const OUTPUT_LIMIT: usize = 8 << 20;
/// The longest command line accepted (images come base64-encoded).
const MAX_LINE: usize = 64 << 20;
/// How long the end of input waits for a cancelled run to wind down.
const WIND_DOWN: Duration = Duration::from_secs(5);

/// How much output waits for the client, and who waits for room.
#[derive(Default)]
struct Backlog {
    /// Lines queued, not yet written.
    lines: AtomicUsize,
    /// Their bytes.
    bytes: AtomicUsize,
    /// The writer is gone (the client closed its end): nobody waits.
    closed: std::sync::atomic::AtomicBool,
    /// A run being stopped is not paused: it winds down in a few events.
    stopping: std::sync::atomic::AtomicBool,
    /// Woken as lines are written: the command loop.
    room: tokio::sync::Notify,
    /// Woken as lines are written: the paused run.
    run: futures::task::AtomicWaker,
}

impl Backlog {
    fn full(&self) -> bool {
        self.bytes.load(Ordering::Acquire) > OUTPUT_LIMIT && !self.closed.load(Ordering::Acquire)
    }

    /// A line has left for the client.
    fn written(&self, len: usize) {
        self.lines.fetch_sub(1, Ordering::AcqRel);
        self.bytes.fetch_sub(len, Ordering::AcqRel);
        if !self.full() {
            self.room.notify_waiters();
            self.run.wake();
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.room.notify_waiters();
        self.run.wake();
    }

    /// Resolves once the backlog is under [`OUTPUT_LIMIT`].
    async fn wait_for_room(&self) {
        loop {
            let notified = self.room.notified();
            if !self.full() {
                return;
            }
            notified.await;
        }
    }
}

/// The output side: lines for the client, in order. The sender never
/// blocks; the backlog is bounded by the command loop, which waits for room
/// before it reads the next command, and by pausing a run (`paced`).
#[derive(Clone)]
pub struct RpcOutput {
    tx: mpsc::UnboundedSender<String>,
    backlog: Arc<Backlog>,
}

impl RpcOutput {
    fn send(&self, value: &Value) {
        if let Ok(line) = serde_json::to_string(value) {
            self.backlog.lines.fetch_add(1, Ordering::AcqRel);
            self.backlog
                .bytes
                .fetch_add(line.len() + 1, Ordering::AcqRel);
            if self.tx.send(line).is_err() {
                self.backlog.close();
            }
        }
    }

    fn send_event(&self, event: &AgentEvent) {
        let delta = matches!(
            event,
            AgentEvent::MessageUpdate { .. } | AgentEvent::ToolExecutionUpdate { .. }
        );
        if delta
            && (self.backlog.lines.load(Ordering::Acquire) > DELTA_BACKLOG
                || self.backlog.bytes.load(Ordering::Acquire) > DELTA_BACKLOG_BYTES)
        {
            return;
        }
        if let Ok(value) = serde_json::to_value(event) {
            self.send(&value);
        }
    }
}

/// Runs `run` only while the client keeps up: whenever more than
/// [`OUTPUT_LIMIT`] bytes wait for it, `run` is not polled (it emits no
/// event) until the writer has made room. The first poll always happens,
/// so the run has started when this returns `Pending` the first time.
fn paced<F: std::future::Future>(
    backlog: Arc<Backlog>,
    run: F,
) -> impl std::future::Future<Output = F::Output> {
    let mut run = Box::pin(run);
    let mut started = false;
    futures::future::poll_fn(move |cx| {
        let paused = || backlog.full() && !backlog.stopping.load(Ordering::Acquire);
        if started && paused() {
            backlog.run.register(cx.waker());
            if paused() {
                return std::task::Poll::Pending;
            }
        }
        started = true;
        run.as_mut().poll(cx)
    })
}

/// Permission questions over the protocol; give it to the session builder
/// ([`AgentSessionBuilder::permission_prompt`](crate::AgentSessionBuilder::permission_prompt))
/// and the same value to [`run_rpc`].
#[derive(Clone, Default)]
pub struct RpcPermissionPrompt {
    state: Arc<Mutex<PromptState>>,
}

#[derive(Default)]
struct PromptState {
    output: Option<RpcOutput>,
    pending: HashMap<String, oneshot::Sender<Value>>,
}

impl RpcPermissionPrompt {
    /// A prompt not yet connected to an output.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PromptState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands an `extension_ui_response` to the question waiting for it.
    fn answer(&self, id: &str, response: Value) -> bool {
        match self.lock().pending.remove(id) {
            Some(tx) => tx.send(response).is_ok(),
            None => false,
        }
    }
}

impl PermissionPrompt for RpcPermissionPrompt {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'static, PermissionAnswer> {
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        let output = {
            let mut state = self.lock();
            state.pending.insert(id.clone(), tx);
            state.output.clone()
        };
        let message = json!({
            "type": "extension_ui_request",
            "id": id,
            "method": "select",
            "title": request.question(),
            "options": ["Allow", "Deny", "Always allow"],
            "tool": request.tool,
            "args": request.args,
            "decision": request.decision.to_json("rules"),
        });
        Box::pin(async move {
            let Some(output) = output else {
                return PermissionAnswer::No;
            };
            output.send(&message);
            match rx.await {
                Ok(response) => {
                    if response.get("cancelled").and_then(Value::as_bool) == Some(true) {
                        return PermissionAnswer::No;
                    }
                    if let Some(confirmed) = response.get("confirmed").and_then(Value::as_bool) {
                        return if confirmed {
                            PermissionAnswer::Yes
                        } else {
                            PermissionAnswer::No
                        };
                    }
                    match response.get("value").and_then(Value::as_str) {
                        Some("Allow") | Some("yes") => PermissionAnswer::Yes,
                        Some("Always allow") | Some("always") => PermissionAnswer::Always,
                        _ => PermissionAnswer::No,
                    }
                }
                Err(_) => PermissionAnswer::No,
            }
        })
    }
}

/// Where new sessions go and which models `set_model` accepts.
#[derive(Debug, Clone, Default)]
pub struct RpcOptions {
    /// Directory of new sessions (`new_session`); `None`: the default one,
    /// or in memory when the session was not recorded.
    pub session_dir: Option<std::path::PathBuf>,
    /// Models `set_model` may switch to; empty: any model id of the
    /// current provider.
    pub models: Vec<Model>,
}

struct Server {
    session: AgentSession,
    output: RpcOutput,
    prompt: RpcPermissionPrompt,
    options: RpcOptions,
    bash_cancel: Mutex<Option<CancellationToken>>,
}

fn response(id: &Option<Value>, command: &str, result: Result<Value, String>) -> Value {
    let mut out = Map::new();
    if let Some(id) = id {
        out.insert("id".into(), id.clone());
    }
    out.insert("type".into(), json!("response"));
    out.insert("command".into(), json!(command));
    match result {
        Ok(Value::Null) => {
            out.insert("success".into(), json!(true));
        }
        Ok(data) => {
            out.insert("success".into(), json!(true));
            out.insert("data".into(), data);
        }
        Err(error) => {
            out.insert("success".into(), json!(false));
            out.insert("error".into(), json!(error));
        }
    }
    Value::Object(out)
}

fn queue_mode_name(mode: QueueMode) -> &'static str {
    match mode {
        QueueMode::All => "all",
        QueueMode::OneAtATime => "one-at-a-time",
    }
}

fn queue_mode(mode: QueueModeName) -> QueueMode {
    match mode {
        QueueModeName::All => QueueMode::All,
        QueueModeName::OneAtATime => QueueMode::OneAtATime,
    }
}

/// A user message from the command's text and images.
fn user_message(text: String, images: Option<Vec<ImageContent>>) -> Message {
    let images = images.unwrap_or_default();
    if images.is_empty() {
        return Message::user(text);
    }
    let mut blocks = vec![ContentBlock::text(text)];
    blocks.extend(images.into_iter().map(ContentBlock::Image));
    Message::User(UserMessage {
        content: UserContent::Blocks(blocks),
        timestamp: agent_ai::now_millis(),
    })
}

impl Server {
    fn manager(&self) -> Option<Arc<Mutex<SessionManager>>> {
        self.session.session_manager()
    }

    fn state(&self) -> Value {
        let agent = self.session.agent();
        let (steering, follow_up) = agent.queue_modes();
        let (file, id, name) = match self.manager() {
            Some(m) => {
                let m = m.lock().unwrap_or_else(|p| p.into_inner());
                (
                    m.session_file().map(|p| p.display().to_string()),
                    Some(m.session_id().to_string()),
                    m.name(),
                )
            }
            None => (None, None, None),
        };
        let mut data = json!({
            "model": agent.state().model,
            "thinkingLevel": "off",
            "isStreaming": agent.is_running(),
            "isCompacting": self.session.compactor().is_compacting(),
            "steeringMode": queue_mode_name(steering),
            "followUpMode": queue_mode_name(follow_up),
            "sessionFile": file,
            "sessionId": id,
            "autoCompactionEnabled": self.session.compactor().auto_enabled(),
            "messageCount": agent.messages().len(),
            "pendingMessageCount": agent.pending_message_count(),
        });
        if let Some(name) = name {
            data["sessionName"] = json!(name);
        }
        data
    }

    fn stats(&self) -> Value {
        let messages = self.session.agent().messages();
        let (mut user, mut assistant, mut calls, mut results) = (0, 0, 0, 0);
        let (mut input, mut output, mut cache_read, mut cache_write, mut cost) =
            (0u64, 0u64, 0u64, 0u64, 0f64);
        for m in &messages {
            match m {
                Message::User(_) => user += 1,
                Message::Assistant(a) => {
                    assistant += 1;
                    calls += a.tool_calls().count();
                    input += a.usage.input;
                    output += a.usage.output;
                    cache_read += a.usage.cache_read;
                    cache_write += a.usage.cache_write;
                    cost += a.usage.cost.total;
                }
                Message::ToolResult(_) => results += 1,
            }
        }
        let (file, id) = match self.manager() {
            Some(m) => {
                let m = m.lock().unwrap_or_else(|p| p.into_inner());
                (
                    m.session_file().map(|p| p.display().to_string()),
                    Some(m.session_id().to_string()),
                )
            }
            None => (None, None),
        };
        json!({
            "sessionFile": file, "sessionId": id,
            "userMessages": user, "assistantMessages": assistant,
            "toolCalls": calls, "toolResults": results, "totalMessages": messages.len(),
            "tokens": {"input": input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write,
                       "total": input + output + cache_read + cache_write},
            "cost": cost,
        })
    }

    /// Waits until no run is in progress (after asking it to stop).
    async fn stop_run(&self) {
        let agent = self.session.agent();
        if agent.is_running() {
            let backlog = &self.output.backlog;
            backlog.stopping.store(true, Ordering::Release);
            backlog.run.wake();
            agent.abort();
            let _ = tokio::time::timeout(WIND_DOWN, agent.wait_for_idle()).await;
            backlog.stopping.store(false, Ordering::Release);
        }
    }

    async fn handle(self: &Arc<Self>, command: Value) -> Result<Value, String> {
        let command = RpcCommand::parse(&command).map_err(|e| e.to_string())?;
        let agent = self.session.agent().clone();
        match command {
            RpcCommand::Prompt {
                message,
                images,
                streaming_behavior,
            } => {
                let message = user_message(message, images);
                if agent.is_running() {
                    return match streaming_behavior {
                        Some(StreamingBehavior::Steer) => {
                            agent.steer(message);
                            Ok(Value::Null)
                        }
                        Some(StreamingBehavior::FollowUp) => {
                            agent.follow_up(message);
                            Ok(Value::Null)
                        }
                        None => Err("the agent is running: give streamingBehavior \"steer\" or \"followUp\"".into()),
                    };
                }
                let session = self.session.clone();
                // Answered on acceptance; the run's events follow. The first
                // poll happens here, so the run is under way (an `abort` or
                // `prompt` read next sees it) before the answer goes out.
                let mut run = Box::pin(paced(self.output.backlog.clone(), async move {
                    let _ = session.prompt(message).await;
                }));
                if futures::poll!(run.as_mut()).is_pending() {
                    tokio::spawn(run);
                }
                Ok(Value::Null)
            }
            RpcCommand::Steer { message, images } => {
                agent.steer(user_message(message, images));
                Ok(Value::Null)
            }
            RpcCommand::FollowUp { message, images } => {
                agent.follow_up(user_message(message, images));
                Ok(Value::Null)
            }
            RpcCommand::Abort => {
                // As Pi: answered once the agent is idle.
                self.stop_run().await;
                if agent.is_running() {
                    return Err(format!(
                        "the run did not stop within {} s",
                        WIND_DOWN.as_secs()
                    ));
                }
                Ok(Value::Null)
            }
            RpcCommand::NewSession { parent_session } => {
                self.stop_run().await;
                let (dir, recorded) = match self.manager() {
                    Some(m) => (
                        m.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .session_dir()
                            .map(Into::into),
                        true,
                    ),
                    None => (self.options.session_dir.clone(), false),
                };
                let mut manager = if recorded || dir.is_some() {
                    SessionManager::create(
                        self.session.cwd(),
                        dir.or_else(|| self.options.session_dir.clone()),
                    )
                    .map_err(|e| e.to_string())?
                } else {
                    SessionManager::in_memory(self.session.cwd())
                };
                if let Some(parent) = parent_session {
                    manager
                        .new_session(Some(parent))
                        .map_err(|e| e.to_string())?;
                }
                self.session
                    .switch_session(manager)
                    .map_err(|e| e.to_string())?;
                Ok(json!({"cancelled": false}))
            }
            RpcCommand::GetState => Ok(self.state()),
            RpcCommand::GetMessages => Ok(json!({"messages": agent.messages()})),
            RpcCommand::SetModel { provider, model_id } => {
                let current = agent.state().model;
                let model = if self.options.models.is_empty() {
                    (provider == current.provider).then(|| {
                        let mut m = current.clone();
                        m.id = model_id.clone();
                        m.name = model_id.clone();
                        m
                    })
                } else {
                    self.options
                        .models
                        .iter()
                        .find(|m| m.provider == provider && m.id == model_id)
                        .cloned()
                };
                let model =
                    model.ok_or_else(|| format!("Model not found: {provider}/{model_id}"))?;
                self.session.set_model(model.clone());
                Ok(serde_json::to_value(model).unwrap_or(Value::Null))
            }
            RpcCommand::Compact {
                custom_instructions,
            } => {
                if agent.is_running() {
                    return Err("the agent is running; abort it or wait before compacting".into());
                }
                self.session
                    .compact(custom_instructions.as_deref())
                    .await
                    .map(|r| r.to_json())
                    .map_err(|e| e.to_string())
            }
            RpcCommand::SetAutoCompaction { enabled } => {
                self.session.compactor().set_auto(enabled);
                Ok(Value::Null)
            }
            RpcCommand::Bash { command } => self.bash(&command).await,
            RpcCommand::AbortBash => {
                if let Some(cancel) = self
                    .bash_cancel
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .as_ref()
                {
                    cancel.cancel();
                }
                Ok(Value::Null)
            }
            RpcCommand::GetSessionStats => Ok(self.stats()),
            RpcCommand::SwitchSession { session_path } => {
                self.stop_run().await;
                let manager = SessionManager::open(std::path::Path::new(&session_path))
                    .map_err(|e| e.to_string())?;
                self.session
                    .switch_session(manager)
                    .map_err(|e| e.to_string())?;
                Ok(json!({"cancelled": false}))
            }
            RpcCommand::Fork { entry_id } => {
                self.stop_run().await;
                let store = self.manager().ok_or("this conversation is not recorded")?;
                let (forked, text) = {
                    let manager = store.lock().unwrap_or_else(|p| p.into_inner());
                    let entry = manager
                        .entry(&entry_id)
                        .ok_or_else(|| format!("no entry {entry_id} in this session"))?;
                    let EntryKind::Message { message } = &entry.kind else {
                        return Err(format!("entry {entry_id} is not a user message"));
                    };
                    let Some(Message::User(user)) = crate::sessions::message_from_json(message)
                    else {
                        return Err(format!("entry {entry_id} is not a user message"));
                    };
                    let forked = match entry.parent_id.clone() {
                        Some(parent) => manager.fork(Some(&parent)),
                        None => {
                            let mut fresh =
                                manager.fork(Some(&entry_id)).map_err(|e| e.to_string())?;
                            fresh.reset_leaf();
                            Ok(fresh)
                        }
                    }
                    .map_err(|e| e.to_string())?;
                    (forked, user.text())
                };
                self.session
                    .switch_session(forked)
                    .map_err(|e| e.to_string())?;
                Ok(json!({"text": text, "cancelled": false}))
            }
            RpcCommand::GetForkMessages => {
                let store = self.manager().ok_or("this conversation is not recorded")?;
                let manager = store.lock().unwrap_or_else(|p| p.into_inner());
                let messages: Vec<Value> = manager
                    .path_to(manager.leaf_id())
                    .into_iter()
                    .filter_map(|e| match &e.kind {
                        EntryKind::Message { message } => {
                            match crate::sessions::message_from_json(message) {
                                Some(Message::User(u)) if message["role"] == "user" => {
                                    Some(json!({"entryId": e.id, "text": u.text()}))
                                }
                                _ => None,
                            }
                        }
                        _ => None,
                    })
                    .collect();
                Ok(json!({"messages": messages}))
            }
            RpcCommand::GetLastAssistantText => {
                Ok(json!({"text": self.session.last_assistant_text()}))
            }
            RpcCommand::SetSessionName { name } => {
                let store = self.manager().ok_or("this conversation is not recorded")?;
                store
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .set_name(&name)
                    .map_err(|e| e.to_string())?;
                Ok(Value::Null)
            }
            RpcCommand::SetSteeringMode { mode } => {
                agent.set_steering_mode(queue_mode(mode));
                Ok(Value::Null)
            }
            RpcCommand::SetFollowUpMode { mode } => {
                agent.set_follow_up_mode(queue_mode(mode));
                Ok(Value::Null)
            }
            RpcCommand::GetCommands => Ok(json!({"commands": []})),
        }
    }

    /// Runs a command for the user with the session's bash tool; its output
    /// joins the conversation (and the session file) for the next prompt.
    async fn bash(&self, command: &str) -> Result<Value, String> {
        let registry = self.session.registry();
        // The session's shell: the tool that declares a command argument.
        let bash = registry
            .definitions()
            .into_iter()
            .find(|d| d.command_argument().is_some())
            .ok_or("no tool that runs shell commands is registered")?;
        let argument = bash.command_argument().unwrap_or("command").to_string();
        let cancel = CancellationToken::new();
        *self.bash_cancel.lock().unwrap_or_else(|p| p.into_inner()) = Some(cancel.clone());
        let mut call =
            ToolCallContext::new("rpc_bash").with_extensions(self.session.tool_extensions());
        call.cancel = cancel.clone();
        let mut args = serde_json::Map::new();
        args.insert(argument, Value::from(command));
        let outcome = bash.execute(Value::Object(args), call).await;
        *self.bash_cancel.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let cancelled = cancel.is_cancelled();
        let (output, details) = match &outcome {
            Ok(result) => (result.text_content(), result.details.clone()),
            Err(e) => (e.to_string(), Value::Null),
        };
        let exit_code = match &outcome {
            Ok(_) => Some(0),
            Err(_) => output
                .rsplit("Command exited with code ")
                .next()
                .filter(|_| output.contains("Command exited with code "))
                .and_then(|n| n.trim().parse::<i64>().ok()),
        };
        let full_output_path = details
            .get("fullOutputPath")
            .and_then(Value::as_str)
            .map(str::to_string);
        let truncated = details.get("truncation").is_some_and(|t| !t.is_null());
        let mut record = json!({
            "role": "bashExecution", "command": command, "output": output,
            "exitCode": exit_code, "cancelled": cancelled, "truncated": truncated,
            "timestamp": agent_ai::now_millis(),
        });
        if let Some(path) = &full_output_path {
            record["fullOutputPath"] = json!(path);
        }
        if let Some(store) = self.manager()
            && let Err(e) =
                store
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .append(EntryKind::Message {
                        message: record.clone(),
                    })
        {
            tracing::warn!(error = %e, "cannot record the command");
        }
        let mut messages = self.session.agent().messages();
        messages.push(Message::user(bash_execution_text(&record)));
        self.session.agent().replace_messages(messages);
        let mut data = json!({"output": record["output"], "exitCode": exit_code, "cancelled": cancelled, "truncated": truncated});
        if let Some(path) = full_output_path {
            data["fullOutputPath"] = json!(path);
        }
        Ok(data)
    }
}

/// Serves `session` over `input` / `output` until the input ends.
///
/// `prompt` must be the [`RpcPermissionPrompt`] the session was built with
/// (or a fresh one when no rule asks).
///
/// # Errors
/// Writing the output failed (the client is gone).
pub async fn run_rpc<R, W>(
    session: AgentSession,
    prompt: RpcPermissionPrompt,
    options: RpcOptions,
    input: R,
    output: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let backlog = Arc::new(Backlog::default());
    let out = RpcOutput {
        tx,
        backlog: backlog.clone(),
    };
    prompt.lock().output = Some(out.clone());
    let writer = tokio::spawn(async move {
        let mut output = output;
        let written = async {
            while let Some(line) = rx.recv().await {
                let len = line.len() + 1;
                let sent = async {
                    output.write_all(line.as_bytes()).await?;
                    output.write_all(b"\n").await?;
                    if rx.is_empty() {
                        output.flush().await?;
                    }
                    Ok::<(), std::io::Error>(())
                }
                .await;
                drop(line);
                backlog.written(len);
                sent?;
            }
            output.flush().await
        }
        .await;
        // Nobody waits for a client that is gone.
        backlog.close();
        written
    });
    let events = out.clone();
    let subscription = session
        .agent()
        .subscribe(move |event| events.send_event(event));
    let server = Arc::new(Server {
        session: session.clone(),
        output: out.clone(),
        prompt: prompt.clone(),
        options,
        bash_cancel: Mutex::new(None),
    });

    let mut commands = FramedRead::new(input, CommandLines::new(MAX_LINE));
    loop {
        // Back-pressure: a client that does not read gets no more answers
        // queued; its commands wait in the pipe.
        server.output.backlog.wait_for_room().await;
        let text = match commands.next().await {
            None => break,
            Some(Ok(CommandLine::Text(text))) => text,
            Some(Ok(CommandLine::TooLong)) => {
                server.output.send(&response(
                    &None,
                    "parse",
                    Err(format!(
                        "Failed to parse command: line longer than {MAX_LINE} bytes"
                    )),
                ));
                continue;
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "reading commands failed");
                break;
            }
        };
        let text = text.strip_suffix('\r').unwrap_or(&text);
        if text.trim().is_empty() {
            continue;
        }
        let command: Value = match serde_json::from_str(text) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                server.output.send(&response(
                    &None,
                    "parse",
                    Err("Failed to parse command: expected a JSON object".into()),
                ));
                continue;
            }
            Err(e) => {
                server.output.send(&response(
                    &None,
                    "parse",
                    Err(format!("Failed to parse command: {e}")),
                ));
                continue;
            }
        };
        let id = command.get("id").cloned();
        let Some(kind) = command
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            server.output.send(&response(
                &id,
                "parse",
                Err("Failed to parse command: no \"type\"".into()),
            ));
            continue;
        };
        if kind == "extension_ui_response" {
            let target = command.get("id").and_then(Value::as_str).unwrap_or("");
            if !server.prompt.answer(target, command.clone()) {
                tracing::debug!(id = target, "an answer to no open question");
            }
            continue;
        }
        // Commands run one after another, each answered when done; a
        // prompt is answered at once and runs in the background, and the
        // long ones (bash, compact) run aside so `abort_bash` still gets in.
        if matches!(kind.as_str(), "bash" | "compact") {
            let server = server.clone();
            tokio::spawn(async move {
                let handled = server.handle(command).await;
                server.output.send(&response(&id, &kind, handled));
            });
            continue;
        }
        let handled = server.handle(command).await;
        server.output.send(&response(&id, &kind, handled));
    }

    // The client is gone: stop the run, let it settle, flush.
    server.stop_run().await;
    if let Some(cancel) = server
        .bash_cancel
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
    {
        cancel.cancel();
    }
    session.agent().unsubscribe(subscription);
    prompt.lock().output = None;
    drop(server);
    drop(out);
    match writer.await {
        Ok(result) => result,
        Err(e) => Err(std::io::Error::other(e.to_string())),
    }
}

/// One line of commands.
#[derive(Debug, PartialEq, Eq)]
enum CommandLine {
    /// The line without its `\n`, invalid UTF-8 replaced (as Pi's readline
    /// reads it).
    Text(String),
    /// A line longer than the limit, skipped up to its end.
    TooLong,
}

/// `\n`-terminated lines of at most a given length (the last one may lack
/// its `\n`). Not `LinesCodec`: it turns invalid UTF-8 into an error and
/// drops the line, where Pi reads it lossily. An over-long line is an item,
/// not an error, because `FramedRead` answers a decoder error with one
/// `None` and, polled again, waits for more input before it decodes the
/// lines it already holds: a command sent with an over-long line would wait
/// for the next one.
struct CommandLines(AnyDelimiterCodec);

impl CommandLines {
    fn new(max: usize) -> Self {
        CommandLines(AnyDelimiterCodec::new_with_max_length(
            b"\n".to_vec(),
            b"\n".to_vec(),
            max,
        ))
    }

    fn item(
        line: Result<Option<Bytes>, AnyDelimiterCodecError>,
    ) -> std::io::Result<Option<CommandLine>> {
        match line {
            Ok(line) => {
                Ok(line.map(|l| CommandLine::Text(String::from_utf8_lossy(&l).into_owned())))
            }
            Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => Ok(Some(CommandLine::TooLong)),
            Err(AnyDelimiterCodecError::Io(e)) => Err(e),
        }
    }
}

impl Decoder for CommandLines {
    type Item = CommandLine;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> std::io::Result<Option<CommandLine>> {
        Self::item(self.0.decode(buf))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> std::io::Result<Option<CommandLine>> {
        Self::item(self.0.decode_eof(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &str) -> CommandLine {
        CommandLine::Text(line.to_string())
    }

    #[tokio::test]
    async fn lines_are_split_bounded_and_read_lossily() {
        let input: &[u8] = b"{\"a\":1}\nabcdefghijkl\n\n0123456789\nbad\xff\xfe\r\nlast";
        let lines: Vec<CommandLine> = FramedRead::new(input, CommandLines::new(10))
            .map(|line| line.unwrap())
            .collect()
            .await;
        assert_eq!(
            lines,
            [
                text("{\"a\":1}"),
                CommandLine::TooLong,
                text(""),
                text("0123456789"),
                text("bad\u{fffd}\u{fffd}\r"),
                text("last"),
            ]
        );
    }

    /// The command sent in the same write as an over-long line is read
    /// without waiting for more input.
    #[tokio::test]
    async fn a_command_after_an_over_long_line_is_not_held_back() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        client
            .write_all(b"abcdefghijklmnopqrstuvwxyz\n{\"id\":1}\n")
            .await
            .unwrap();
        let mut lines = FramedRead::new(server, CommandLines::new(10));
        let mut next = async || {
            tokio::time::timeout(Duration::from_secs(5), lines.next())
                .await
                .expect("a line already sent was held back")
                .map(|line| line.unwrap())
        };
        assert_eq!(next().await, Some(CommandLine::TooLong));
        assert_eq!(next().await, Some(text("{\"id\":1}")));
        drop(client);
        assert_eq!(next().await, None);
    }
}
