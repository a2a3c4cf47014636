//! The one UI task: terminal events, agent events, permission questions,
//! the run and command futures, signals and the frame timer, all in one
//! `select!` over one [`App`].
//!
//! Frames come at most every [`FRAME_INTERVAL`] (60 a second), but a key
//! is drawn at once. Each frame is one write. Nothing ticks while nothing
//! animates.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_ai::Message;
use coding_agent::AgentSession;
use coding_agent::prelude::BoxFuture;
use crossterm::event::{Event, EventStream};
use futures::StreamExt;
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::sleep_until;

use crate::app::{Action, App, SPINNER_INTERVAL};
use crate::cell::CellContext;
use crate::error::TuiError;
use crate::footer::Status;
use crate::fullscreen::FullscreenView;
use crate::inline::InlineRenderer;
use crate::keyboard::KeyboardProtocol;
use crate::mode::{TuiMode, tui_command};

mod hooks;
mod pick;
mod screen;
mod stats;
use crate::notify::{Attention, Notifier};
use crate::permission::PermissionQuestions;
use crate::terminal::TerminalGuard;
use crate::transcript::Transcript;
use hooks::command_hints;
pub use hooks::{SlashCommands, TuiOptions};

/// The shortest time between two frames (60 a second).
pub const FRAME_INTERVAL: Duration = Duration::from_millis(16);
/// How long a width change waits for the next before the screen is
/// rebuilt (a resize drag is one rebuild).
pub const RESIZE_DEBOUNCE: Duration = Duration::from_millis(80);
/// How long an interrupted run may take to wind down on exit.
const WIND_DOWN: Duration = Duration::from_secs(5);

/// How the UI ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TuiExit {
    /// The user left (Ctrl+D, Ctrl+C twice, `/exit`).
    Quit,
    /// A signal ended it (its number: 1 for SIGHUP, 15 for SIGTERM).
    Signal(i32),
    /// The terminal went away (a write failed, input ended).
    TerminalGone,
}

/// The status of `session` for the footer.
pub fn session_status(session: &AgentSession) -> Status {
    let messages = session.agent().messages();
    let model = session.agent().model();
    let mut usage = agent_ai::Usage::default();
    for m in &messages {
        if let Message::Assistant(a) = m {
            usage.add(&a.usage);
        }
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let cwd = home_relative(session.cwd(), home.as_deref());
    let session_name = session.session_manager().and_then(|store| {
        let manager = store.lock().unwrap_or_else(|p| p.into_inner());
        manager.name()
    });
    Status {
        cwd,
        branch: crate::footer::git_branch(session.cwd()),
        session_name,
        model: format!("{}/{}", model.provider, model.id),
        thinking: session.thinking_level().to_string(),
        usage,
        context_tokens: coding_agent::compaction::context_tokens(&messages),
        context_window: session.compactor().context_window(),
    }
}

/// `dir` with `~` for `home` (`~/src`; `/home/alice` stays itself when
/// home is `/home/al`).
fn home_relative(dir: &std::path::Path, home: Option<&std::path::Path>) -> String {
    let home = home.filter(|h| !h.as_os_str().is_empty());
    match home.and_then(|h| dir.strip_prefix(h).ok()) {
        Some(rest) if rest.as_os_str().is_empty() => "~".to_string(),
        Some(rest) => format!("~/{}", rest.display()),
        None => dir.display().to_string(),
    }
}

/// Runs the UI on this process's terminal until the user leaves.
pub async fn run(session: AgentSession, options: TuiOptions) -> Result<TuiExit, TuiError> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(TuiError::NotATerminal);
    }
    let (width, height) = crossterm::terminal::size().map_err(TuiError::Terminal)?;
    let keyboard = options.keyboard.unwrap_or_else(KeyboardProtocol::detect);
    let guard = TerminalGuard::enter_with(keyboard)?;
    let mode = options.mode;
    let mut ui = Ui::new(session, options, width, height);
    if mode == TuiMode::Fullscreen {
        ui.set_mode(TuiMode::Fullscreen)?;
    }
    let exit = ui.event_loop().await;
    ui.leave(exit.as_ref().ok().copied()).await;
    drop(guard);
    // Text selected just before leaving still reaches the clipboard.
    crate::clipboard::wait_for_copies();
    exit
}

struct Ui {
    session: AgentSession,
    app: App,
    renderer: InlineRenderer,
    /// The fullscreen view while in fullscreen mode.
    screen: Option<FullscreenView>,
    /// The width changed while in fullscreen: inline mode draws its
    /// screen again from the session when it comes back.
    inline_rebuild: bool,
    commands: Option<Arc<dyn SlashCommands>>,
    questions: Option<PermissionQuestions>,
    run: Option<BoxFuture<'static, Result<agent_core::RunOutcome, agent_core::AgentError>>>,
    command: Option<BoxFuture<'static, Option<Result<String, String>>>>,
    /// The line of the running command: sent as a skill or template when
    /// it is not one of the commands.
    command_line: Option<String>,
    /// Something changed since the last frame.
    dirty: bool,
    /// Draw at once (a key was pressed).
    urgent: bool,
    last_frame: Instant,
    /// A width change waits for this moment.
    rebuild_at: Option<Instant>,
    next_tick: Option<Instant>,
    /// The session file the transcript was built from, to see a command
    /// switch sessions (`/new`, `/resume`, `/fork`).
    session_file: Option<std::path::PathBuf>,
    /// The footer's figures are out of date (a message ended).
    status_stale: bool,
    /// The title and the calls for attention.
    notifier: Notifier,
    /// The running `!command`: its cell's text and whether it failed.
    bash: Option<BoxFuture<'static, (String, bool)>>,
    /// Cancels the running `!command`.
    bash_cancel: Option<agent_core::CancellationToken>,
    /// Progress of the `@` file walk, once one started.
    file_updates: Option<tokio::sync::watch::Receiver<u64>>,
    /// The open picker's list, while it is read off the UI task.
    picker_load: Option<BoxFuture<'static, crate::pickers::PickerData>>,
    /// How the theme is chosen; its setting is the theme in use.
    theme_choice: crate::theme::ThemeChoice,
    /// Settings written from this UI (`/settings KEY VALUE`): the session
    /// keeps those it started with, the settings picker shows these.
    settings_written: serde_json::Map<String, serde_json::Value>,
    /// The running command's output is shown only if it fails (Ctrl+P).
    quiet_command: bool,
    /// The UI's own timing, and where it goes at the end.
    stats: Option<(crate::frame_stats::FrameStats, std::path::PathBuf)>,
    /// Where fullscreen copies a selection besides OSC 52.
    clipboard: crate::clipboard::SystemClipboard,
    /// Ctrl+P's model scope and the level a scoped switch sets after it.
    cycle: pick::ModelCycle,
}

impl Ui {
    fn new(session: AgentSession, options: TuiOptions, width: u16, height: u16) -> Self {
        let messages = session.agent().messages();
        let transcript = Transcript::from_messages(&messages, options.theme);
        let cx = CellContext {
            theme: options.theme,
            registry: Some(session.registry()),
            cwd: session.cwd().to_path_buf(),
        };
        let status = session_status(&session);
        let notify = options.notify.resolve(|name| std::env::var(name).ok());
        let mut app = App::new(transcript, cx, status);
        for warning in options.keybindings.warnings() {
            app.transcript.notice(warning.clone(), true);
        }
        app.keys = options.keybindings;
        let theme_choice = options
            .theme_choice
            .unwrap_or_else(|| crate::theme::ThemeChoice::from_env(None, None));
        app.commands = command_hints(&session, options.commands.as_deref());
        fill_history(&mut app, &messages);
        Ui {
            notifier: Notifier::new(notify, options.title),
            app,
            renderer: InlineRenderer::new(width, height)
                .reflowing(crate::inline::terminal_reflows()),
            screen: None,
            inline_rebuild: false,
            commands: options.commands,
            questions: options.questions,
            run: None,
            command: None,
            command_line: None,
            dirty: true,
            urgent: true,
            last_frame: Instant::now(),
            rebuild_at: None,
            next_tick: None,
            session_file: session_file(&session),
            status_stale: false,
            file_updates: None,
            bash: None,
            bash_cancel: None,
            picker_load: None,
            theme_choice,
            settings_written: serde_json::Map::new(),
            stats: options.stats_file.map(|f| (Default::default(), f)),
            quiet_command: false,
            clipboard: options.clipboard,
            cycle: pick::ModelCycle::new(options.models),
            session,
        }
    }

    async fn event_loop(&mut self) -> Result<TuiExit, TuiError> {
        let mut input = EventStream::new();
        let mut agent_events = self.session.agent().events();
        let mut term = signal(SignalKind::terminate()).map_err(TuiError::Terminal)?;
        let mut hup = signal(SignalKind::hangup()).map_err(TuiError::Terminal)?;
        loop {
            self.draw_if_due()?;
            let deadline = self.deadline();
            tokio::select! {
                event = input.next() => match event {
                    Some(Ok(event)) => {
                        if let Some(exit) = self.terminal_event(event)? {
                            return Ok(exit);
                        }
                    }
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "reading the terminal failed");
                        return Ok(TuiExit::TerminalGone);
                    }
                    None => return Ok(TuiExit::TerminalGone),
                },
                Some(event) = agent_events.recv() => {
                    self.agent_event(&event);
                    // Take what else queued up: one frame for all of it.
                    while let Ok(event) = agent_events.try_recv() {
                        self.agent_event(&event);
                    }
                    self.dirty = true;
                }
                Some(q) = recv_question(&mut self.questions) => {
                    // Someone may be looking elsewhere.
                    if !self.app.permissions.is_open() {
                        self.call_user(Attention::Question)?;
                    }
                    self.app.permissions.push(q);
                    self.urgent = true;
                }
                result = poll_opt(&mut self.run) => {
                    self.run = None;
                    if let Err(e) = result
                        && e.outcome().is_none()
                    {
                        self.app.transcript.notice(format!("coding-agent: {e}"), true);
                    }
                    // Events the run sent before it returned.
                    while let Ok(event) = agent_events.try_recv() {
                        self.agent_event(&event);
                    }
                    self.app.run_ended();
                    self.refresh_status();
                    self.call_user(Attention::RunEnded)?;
                    self.urgent = true;
                }
                (text, error) = poll_opt(&mut self.bash) => {
                    self.bash = None;
                    self.bash_cancel = None;
                    self.app.command_running = false;
                    self.app.transcript.notice(text, error);
                    self.refresh_status();
                    self.urgent = true;
                }
                result = poll_opt(&mut self.command) => {
                    self.command = None;
                    self.app.command_running = false;
                    self.command_done(result);
                    self.urgent = true;
                }
                data = poll_opt(&mut self.picker_load) => {
                    self.picker_load = None;
                    self.picker_loaded(data);
                    self.urgent = true;
                }
                Some(()) = files_changed(&mut self.file_updates) => {
                    self.app.files_updated();
                    self.dirty = true;
                }
                _ = term.recv() => return Ok(TuiExit::Signal(15)),
                _ = hup.recv() => return Ok(TuiExit::Signal(1)),
                _ = sleep_opt(deadline) => {}
            }
        }
    }

    fn agent_event(&mut self, event: &agent_core::AgentEvent) {
        if let agent_core::AgentEvent::MessageEnd {
            message: Message::Assistant(_),
        } = event
        {
            self.status_stale = true;
        }
        self.app.agent_event(event);
    }

    /// When the loop must wake up without an event.
    fn deadline(&self) -> Option<Instant> {
        let frame = (self.dirty || self.urgent).then(|| self.last_frame + FRAME_INTERVAL);
        [frame, self.rebuild_at, self.next_tick]
            .into_iter()
            .flatten()
            .min()
    }

    fn terminal_event(&mut self, event: Event) -> Result<Option<TuiExit>, TuiError> {
        match event {
            Event::Key(key) => {
                self.key_read();
                self.urgent = true;
                // A dialog or the completion menu has its keys first.
                if let Some(screen) = &mut self.screen
                    && !self.app.permissions.is_open()
                    && self.app.completion.is_none()
                    && self.app.picker.is_none()
                    && screen.key(key, &mut self.app)
                {
                    return Ok(None);
                }
                let action = self.app.key(key);
                if self.file_updates.is_none() {
                    self.file_updates = self.app.file_updates();
                }
                if let Some(action) = action {
                    return self.act(action);
                }
            }
            Event::Paste(text) => {
                self.app.paste(&text);
                self.urgent = true;
            }
            Event::Resize(w, h) => self.resize(w, h),
            Event::Mouse(event) => {
                if let Some(screen) = &mut self.screen {
                    screen.mouse(event, &mut self.app);
                    self.urgent = true;
                }
            }
            Event::FocusGained => self.notifier.set_focus(true),
            Event::FocusLost => self.notifier.set_focus(false),
        }
        Ok(None)
    }

    fn act(&mut self, action: Action) -> Result<Option<TuiExit>, TuiError> {
        // `/model`, `/resume`, `/tree`, `/settings`, `/theme` alone; `/theme NAME`.
        if let Action::Command(line) = &action
            && self.picker_line(line)
        {
            return Ok(None);
        }
        match action {
            Action::Prompt(text) => {
                if let Some(text) = self.expand(&text) {
                    self.start_prompt(text);
                }
            }
            Action::Steer(text) => {
                if let Some(text) = self.expand(&text) {
                    self.session.agent().steer(Message::user(text));
                }
            }
            Action::FollowUp(text) => {
                if let Some(text) = self.expand(&text) {
                    self.session.agent().follow_up(Message::user(text));
                }
            }
            Action::OpenPicker(kind) => self.open_picker(kind),
            Action::CycleModel { forward } => self.cycle_model(forward),
            Action::CycleThinking => self.cycle_thinking(),
            Action::Theme(name) => self.choose_theme(&name),
            Action::SessionEdit(edit) => self.session_edit(edit),
            Action::Command(line) if tui_command(&line, self.mode()).is_some() => {
                match tui_command(&line, self.mode()) {
                    Some(Ok(mode)) => self.set_mode(mode)?,
                    Some(Err(e)) => self.app.transcript.notice(e, true),
                    None => {}
                }
            }
            Action::Command(line) => self.run_command(line),
            Action::Bash { command, exclude } => {
                let session = self.session.clone();
                let cancel = agent_core::CancellationToken::new();
                self.bash_cancel = Some(cancel.clone());
                self.bash = Some(Box::pin(async move {
                    match session.run_user_bash(&command, exclude, cancel).await {
                        Ok(ran) => crate::shell::describe(&command, exclude, &ran),
                        Err(e) => (format!("coding-agent: {e}"), true),
                    }
                }));
                self.app.command_running = true;
            }
            Action::TakeBackQueued => self.session.agent().clear_queues(),
            Action::Interrupt if self.app.command_running => {
                if let Some(cancel) = &self.bash_cancel {
                    cancel.cancel();
                }
            }
            Action::Interrupt => {
                self.session.agent().clear_queues();
                self.session.agent().abort();
                self.app.permissions.refuse_all();
            }
            Action::Suspend => self.suspend()?,
            Action::Exit => return Ok(Some(TuiExit::Quit)),
        }
        Ok(None)
    }

    /// `/skill:name` and templates expanded as in every mode; an error is a
    /// notice and nothing is sent.
    fn expand(&mut self, text: &str) -> Option<String> {
        match self.session.expand_input(text) {
            Ok(text) => Some(text),
            Err(e) => {
                self.app
                    .transcript
                    .notice(format!("coding-agent: {e}"), true);
                None
            }
        }
    }

    fn start_prompt(&mut self, text: String) {
        let session = self.session.clone();
        self.run = Some(Box::pin(async move { session.prompt(text).await }));
        self.app.run_started(Instant::now());
        self.next_tick = Some(Instant::now() + SPINNER_INTERVAL);
    }

    /// Runs `line` through the commands; its output becomes a notice.
    fn run_command(&mut self, line: String) {
        match &self.commands {
            Some(commands) => {
                self.command = Some(commands.run(&self.session, &line));
                self.command_line = Some(line);
                self.app.command_running = true;
            }
            None => self
                .app
                .transcript
                .notice(format!("{line}: no commands here"), true),
        }
    }

    fn command_done(&mut self, result: Option<Result<String, String>>) {
        let line = self.command_line.take();
        let quiet = std::mem::take(&mut self.quiet_command);
        if let (Some(Ok(_)), Some(line)) = (&result, &line) {
            self.setting_written(line);
        }
        if let (None, Some(line)) = (&result, line) {
            // Not one of the commands: a skill or a template, if it is one.
            match self.session.expand_input(&line) {
                Ok(text) if text != line => return self.start_prompt(text),
                Ok(_) => {}
                Err(e) => {
                    return self
                        .app
                        .transcript
                        .notice(format!("coding-agent: {e}"), true);
                }
            }
        }
        match result {
            Some(Ok(_)) if quiet => {}
            Some(Ok(text)) if !text.trim().is_empty() => self.app.transcript.notice(text, false),
            Some(Ok(_)) => {}
            Some(Err(e)) => self
                .app
                .transcript
                .notice(format!("coding-agent: {e}"), true),
            None => self.app.transcript.notice("not a command", true),
        }
        // A command that switched sessions (/new, /resume, /fork) shows
        // the conversation the session now holds.
        let file = session_file(&self.session);
        if file != self.session_file {
            let messages = self.session.agent().messages();
            let notice = self.app.transcript.cells().last().cloned();
            self.app.transcript = Transcript::from_messages(&messages, self.app.cx.theme);
            if let Some(cell) = notice {
                self.app.transcript.push(cell.kind().clone(), true);
            }
            fill_history(&mut self.app, &messages);
            self.session_file = file;
        }
        self.refresh_status();
    }

    fn refresh_status(&mut self) {
        self.app.status = session_status(&self.session);
        self.status_stale = false;
    }

    fn draw_if_due(&mut self) -> Result<(), TuiError> {
        let now = Instant::now();
        if self.status_stale {
            self.refresh_status();
        }
        if let Some(logged) = crate::diagnostics::take() {
            self.app.transcript.notice(logged, false);
            self.dirty = true;
        }
        if let Some(at) = self.next_tick
            && now >= at
        {
            self.next_tick = self.app.animate().then(|| now + SPINNER_INTERVAL);
            self.dirty = true;
        }
        if self.screen.is_some() {
            return self.draw_fullscreen(now);
        }
        let rebuild = self.rebuild_at.is_some_and(|at| now >= at);
        let due = self.urgent || rebuild || (self.dirty && now >= self.last_frame + FRAME_INTERVAL);
        if !due || self.rebuild_at.is_some() && !rebuild {
            return Ok(());
        }
        if rebuild {
            self.rebuild_at = None;
            // Drawn again from what the session holds (unless a turn is
            // streaming: its cells are not in the messages yet).
            if !self.app.is_running() {
                let messages = self.session.agent().messages();
                self.app.transcript = Transcript::from_messages(&messages, self.app.cx.theme);
            }
        }
        let started = Instant::now();
        let mut bytes = self.notifier.title(
            &self.app.status,
            self.app.is_running(),
            self.app.permissions.is_open(),
        );
        bytes.push_str(&self.app.frame(&mut self.renderer, rebuild, now));
        let built = started.elapsed();
        self.write(&bytes)?;
        self.frame_written(built);
        self.dirty = false;
        self.urgent = false;
        self.last_frame = now;
        if self.app.is_running() && self.next_tick.is_none() {
            self.next_tick = Some(now + SPINNER_INTERVAL);
        }
        Ok(())
    }

    /// Rings for `why` when the user may not be looking.
    fn call_user(&self, why: Attention) -> Result<(), TuiError> {
        self.write(&self.notifier.call(why, &self.app.status))
    }

    fn write(&self, bytes: &str) -> Result<(), TuiError> {
        if bytes.is_empty() {
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        out.write_all(bytes.as_bytes())
            .and_then(|()| out.flush())
            .map_err(TuiError::Terminal)
    }

    /// Ends the UI: a running turn is cancelled and allowed to wind down
    /// (so the session records it), its cells written, the live region
    /// erased.
    async fn leave(&mut self, exit: Option<TuiExit>) {
        self.app.permissions.refuse_all();
        if self.run.is_some() {
            self.session.agent().abort();
            if let Some(run) = self.run.take() {
                let _ = tokio::time::timeout(WIND_DOWN, run).await;
            }
            self.app.run_ended();
        }
        self.write_stats();
        if matches!(exit, Some(TuiExit::TerminalGone) | None) {
            return;
        }
        if self.screen.is_some() {
            self.leave_fullscreen_for_good();
            return;
        }
        // What settled is written; the live region goes, so the
        // scrollback holds the conversation and no editor or footer.
        self.urgent = true;
        if self.draw_if_due().is_ok() {
            let mut bytes = self.renderer.erase_live();
            bytes.push_str(self.notifier.restore_title());
            let _ = self.write(&bytes);
        }
    }
}

/// The prompt history from the session's own user messages, as Pi fills
/// it on start and resume.
fn fill_history(app: &mut App, messages: &[Message]) {
    let prompts: Vec<String> = messages
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => Some(u.text()),
            _ => None,
        })
        .collect();
    app.editor.set_history(prompts.iter().map(String::as_str));
}

async fn files_changed(rx: &mut Option<tokio::sync::watch::Receiver<u64>>) -> Option<()> {
    match rx {
        Some(r) => match r.changed().await {
            Ok(()) => Some(()),
            Err(_) => {
                // The walk is over and gone: nothing more will come.
                *rx = None;
                None
            }
        },
        None => std::future::pending().await,
    }
}

/// The file `session` records into, if any.
fn session_file(session: &AgentSession) -> Option<std::path::PathBuf> {
    let store = session.session_manager()?;
    let manager = store.lock().unwrap_or_else(|p| p.into_inner());
    manager.session_file().map(std::path::Path::to_path_buf)
}

async fn recv_question(
    questions: &mut Option<PermissionQuestions>,
) -> Option<crate::permission::PermissionQuestion> {
    match questions {
        Some(q) => q.recv().await,
        None => std::future::pending().await,
    }
}

async fn poll_opt<T>(fut: &mut Option<BoxFuture<'static, T>>) -> T {
    match fut {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

async fn sleep_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::home_relative;
    use std::path::Path;

    #[test]
    fn home_becomes_a_tilde_only_at_a_component_boundary() {
        let home = Some(Path::new("/home/al"));
        assert_eq!(home_relative(Path::new("/home/al/src"), home), "~/src");
        assert_eq!(home_relative(Path::new("/home/al"), home), "~");
        assert_eq!(home_relative(Path::new("/home/alice"), home), "/home/alice");
        assert_eq!(home_relative(Path::new("/x"), Some(Path::new(""))), "/x");
        assert_eq!(home_relative(Path::new("/x"), None), "/x");
    }
}
