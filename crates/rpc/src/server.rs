//! The session behind the protocol: one method per command, and the
//! loop reading command lines and writing responses.

use super::*;

/// How long the end of input waits for a cancelled run to wind down.
const WIND_DOWN: Duration = Duration::from_secs(5);

struct Server {
    session: AgentSession,
    output: RpcOutput,
    prompt: RpcPermissionPrompt,
    options: RpcOptions,
    bash_cancel: Mutex<Option<CancellationToken>>,
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

    fn switch_model(&self, provider: &str, model_id: &str) -> Result<Model, String> {
        coding_agent::switch_model(
            &self.session,
            &self.options.models,
            self.options.resolve_model.as_ref(),
            provider,
            model_id,
        )
    }

    fn state(&self) -> RpcSessionState {
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
        RpcSessionState {
            model: agent.state().model,
            thinking_level: self.session.thinking_level(),
            is_streaming: agent.is_running(),
            is_compacting: self.session.compactor().is_compacting(),
            steering_mode: steering,
            follow_up_mode: follow_up,
            session_file: file,
            session_id: id,
            auto_compaction_enabled: self.session.compactor().auto_enabled(),
            message_count: agent.messages().len(),
            pending_message_count: agent.pending_message_count(),
            session_name: name,
        }
    }

    fn stats(&self) -> RpcSessionStats {
        let messages = self.session.agent().messages();
        let (mut user, mut assistant, mut calls, mut results) = (0, 0, 0, 0);
        for m in &messages {
            match m {
                Message::User(_) => user += 1,
                Message::Assistant(a) => {
                    assistant += 1;
                    calls += a.tool_calls().count();
                }
                Message::ToolResult(_) => results += 1,
            }
        }
        let usage = self.session.usage();
        let (input, output, cache_read, cache_write) = (
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write,
        );
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
        RpcSessionStats {
            session_file: file,
            session_id: id,
            user_messages: user,
            assistant_messages: assistant,
            tool_calls: calls,
            tool_results: results,
            total_messages: messages.len(),
            tokens: RpcTokens {
                input,
                output,
                cache_read,
                cache_write,
                total: input + output + cache_read + cache_write,
            },
            cost: usage.cost.total,
            cost_breakdown: usage.cost,
        }
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

    async fn handle(self: &Arc<Self>, command: Value) -> Result<Option<RpcData>, String> {
        let command = RpcCommand::parse(&command).map_err(|e| e.to_string())?;
        let agent = self.session.agent().clone();
        match command {
            RpcCommand::Prompt {
                message,
                images,
                streaming_behavior,
            } => {
                let message = self
                    .session
                    .expand_input(&message)
                    .map_err(|e| e.to_string())?;
                let message = user_message(message, images);
                if agent.is_running() {
                    return match streaming_behavior {
                        Some(StreamingBehavior::Steer) => {
                            agent.steer(message);
                            Ok(None)
                        }
                        Some(StreamingBehavior::FollowUp) => {
                            agent.follow_up(message);
                            Ok(None)
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
                Ok(None)
            }
            RpcCommand::Steer { message, images } => {
                let message = self
                    .session
                    .expand_input(&message)
                    .map_err(|e| e.to_string())?;
                agent.steer(user_message(message, images));
                Ok(None)
            }
            RpcCommand::FollowUp { message, images } => {
                let message = self
                    .session
                    .expand_input(&message)
                    .map_err(|e| e.to_string())?;
                agent.follow_up(user_message(message, images));
                Ok(None)
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
                Ok(None)
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
                // A recorded session goes on being recorded: in its own
                // directory, the one asked for, or the default one.
                let dir = match dir {
                    Some(dir) => Some(dir),
                    None if recorded => coding_agent::session_dir(self.session.cwd()),
                    None => None,
                };
                let mut manager = match dir {
                    Some(dir) => SessionManager::create(self.session.cwd(), dir)
                        .map_err(|e| e.to_string())?,
                    None => SessionManager::in_memory(self.session.cwd()),
                };
                if let Some(parent) = parent_session {
                    manager
                        .new_session(Some(parent))
                        .map_err(|e| e.to_string())?;
                }
                self.session
                    .switch_session(manager)
                    .map_err(|e| e.to_string())?;
                Ok(Some(RpcData::Cancelled { cancelled: false }))
            }
            RpcCommand::GetState => Ok(Some(RpcData::State(Box::new(self.state())))),
            RpcCommand::GetMessages => Ok(Some(RpcData::Messages {
                messages: agent.messages(),
            })),
            RpcCommand::SetModel { provider, model_id } => {
                let model = self.switch_model(&provider, &model_id)?;
                Ok(Some(RpcData::Model(Box::new(model))))
            }
            RpcCommand::GetAvailableModels => Ok(Some(RpcData::Models {
                models: self.options.models.clone(),
            })),
            RpcCommand::CycleModel => {
                let models = &self.options.models;
                if models.len() < 2 {
                    return Ok(None);
                }
                let current = agent.state().model;
                let next = models
                    .iter()
                    .position(|m| m.provider == current.provider && m.id == current.id)
                    .map_or(0, |i| (i + 1) % models.len());
                let (provider, id) = (models[next].provider.clone(), models[next].id.clone());
                let model = self.switch_model(&provider, &id)?;
                Ok(Some(RpcData::CycledModel {
                    model: Box::new(model),
                    thinking_level: self.session.thinking_level(),
                    is_scoped: false,
                }))
            }
            RpcCommand::SetThinkingLevel { level } => {
                let set = self.session.set_thinking_level(level);
                Ok(Some(RpcData::ThinkingLevelSet {
                    level: set,
                    requested: level,
                    clamped: set != level,
                }))
            }
            RpcCommand::CycleThinkingLevel => {
                let level = self.session.cycle_thinking_level();
                Ok(Some(RpcData::ThinkingLevel { level }))
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
                    .map(|r| Some(RpcData::Compaction(r.to_json())))
                    .map_err(|e| e.to_string())
            }
            RpcCommand::SetAutoCompaction { enabled } => {
                self.session.compactor().set_auto(enabled);
                Ok(None)
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
                Ok(None)
            }
            RpcCommand::GetSessionStats => Ok(Some(RpcData::Stats(Box::new(self.stats())))),
            RpcCommand::SwitchSession { session_path } => {
                self.stop_run().await;
                let manager = SessionManager::open(std::path::Path::new(&session_path))
                    .map_err(|e| e.to_string())?;
                self.session
                    .switch_session(manager)
                    .map_err(|e| e.to_string())?;
                Ok(Some(RpcData::Cancelled { cancelled: false }))
            }
            RpcCommand::Fork { entry_id } => {
                self.stop_run().await;
                let store = self.manager().ok_or("this conversation is not recorded")?;
                let (forked, text) = {
                    let manager = store.lock().unwrap_or_else(|p| p.into_inner());
                    let entry = manager
                        .entry(&entry_id)
                        .ok_or_else(|| format!("no entry {entry_id} in this session"))?;
                    let text = match entry.kind.agent_message().as_deref() {
                        Some(Message::User(user)) => user.text(),
                        _ => return Err(format!("entry {entry_id} is not a user message")),
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
                    (forked, text)
                };
                self.session
                    .switch_session(forked)
                    .map_err(|e| e.to_string())?;
                Ok(Some(RpcData::Forked {
                    text,
                    cancelled: false,
                }))
            }
            RpcCommand::GetForkMessages => {
                let store = self.manager().ok_or("this conversation is not recorded")?;
                let manager = store.lock().unwrap_or_else(|p| p.into_inner());
                let messages: Vec<RpcForkMessage> = manager
                    .path_to(manager.leaf_id())
                    .into_iter()
                    .filter_map(|e| match e.kind.agent_message().as_deref() {
                        Some(Message::User(u)) => Some(RpcForkMessage {
                            entry_id: e.id.clone(),
                            text: u.text(),
                        }),
                        _ => None,
                    })
                    .collect();
                Ok(Some(RpcData::ForkMessages { messages }))
            }
            RpcCommand::GetLastAssistantText => Ok(Some(RpcData::LastAssistantText {
                text: self.session.last_assistant_text(),
            })),
            RpcCommand::SetSessionName { name } => {
                let store = self.manager().ok_or("this conversation is not recorded")?;
                store
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .set_name(&name)
                    .map_err(|e| e.to_string())?;
                Ok(None)
            }
            RpcCommand::SetSteeringMode { mode } => {
                agent.set_steering_mode(mode);
                Ok(None)
            }
            RpcCommand::SetFollowUpMode { mode } => {
                agent.set_follow_up_mode(mode);
                Ok(None)
            }
            RpcCommand::Clone => {
                self.stop_run().await;
                let store = self.manager().ok_or("this conversation is not recorded")?;
                let cloned = {
                    let manager = store.lock().unwrap_or_else(|p| p.into_inner());
                    let leaf = manager
                        .leaf_id()
                        .map(str::to_string)
                        .ok_or("Cannot clone session: no current entry selected")?;
                    manager.fork(Some(&leaf)).map_err(|e| e.to_string())?
                };
                self.session
                    .switch_session(cloned)
                    .map_err(|e| e.to_string())?;
                Ok(Some(RpcData::Cancelled { cancelled: false }))
            }
            RpcCommand::GetCommands => {
                let resources = self.session.resources();
                let builtins = self
                    .options
                    .builtin_commands
                    .iter()
                    .map(|(name, description)| RpcCommandInfo {
                        name: name.clone(),
                        description: description.clone(),
                        source: "builtin".into(),
                        file: None,
                    });
                let commands: Vec<RpcCommandInfo> = builtins
                    .chain(
                        coding_agent::agent_skills::list_commands(
                            &resources,
                            coding_agent::BUILTIN_COMMANDS,
                        )
                        .into_iter()
                        .map(|c| RpcCommandInfo {
                            name: c.name,
                            description: c.description,
                            source: c.source.as_str().into(),
                            file: Some(RpcCommandFile {
                                argument_hint: c.argument_hint,
                                source_info: RpcSourceInfo {
                                    path: c.path,
                                    scope: c.origin.as_str().into(),
                                },
                            }),
                        }),
                    )
                    .collect();
                Ok(Some(RpcData::Commands { commands }))
            }
            RpcCommand::ExportHtml { output_path } => {
                let export = self
                    .options
                    .export_html
                    .clone()
                    .ok_or("export_html is not available in this program")?;
                let store = self.manager().ok_or("this conversation is not recorded")?;
                let manager = store.lock().unwrap_or_else(|p| p.into_inner());
                let path = export(&manager, output_path.as_deref().map(std::path::Path::new))?;
                Ok(Some(RpcData::ExportPath { path }))
            }
        }
    }

    /// Runs a command for the user with the session's bash tool; its output
    /// joins the conversation (and the session file) for the next prompt.
    async fn bash(&self, command: &str) -> Result<Option<RpcData>, String> {
        let cancel = CancellationToken::new();
        *self.bash_cancel.lock().unwrap_or_else(|p| p.into_inner()) = Some(cancel.clone());
        let outcome = self.session.run_user_bash(command, false, cancel).await;
        *self.bash_cancel.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let ran = outcome?;
        Ok(Some(RpcData::Bash(RpcBashResult {
            output: ran.output,
            exit_code: ran.exit_code,
            cancelled: ran.cancelled,
            truncated: ran.truncated,
            full_output_path: ran.full_output_path,
        })))
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
                server.output.send(&RpcResponse::failure(
                    None,
                    "parse",
                    format!("Failed to parse command: line longer than {MAX_LINE} bytes"),
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
                server.output.send(&RpcResponse::failure(
                    None,
                    "parse",
                    "Failed to parse command: expected a JSON object",
                ));
                continue;
            }
            Err(e) => {
                server.output.send(&RpcResponse::failure(
                    None,
                    "parse",
                    format!("Failed to parse command: {e}"),
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
            server.output.send(&RpcResponse::failure(
                id,
                "parse",
                "Failed to parse command: no \"type\"",
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
                server
                    .output
                    .send(&RpcResponse::from_result(id, kind, handled));
            });
            continue;
        }
        let handled = server.handle(command).await;
        server
            .output
            .send(&RpcResponse::from_result(id, kind, handled));
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
