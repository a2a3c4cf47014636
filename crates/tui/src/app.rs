//! The UI's state and what keys and agent events do to it, apart from any
//! terminal or task: the runner ([`crate::ui`]) feeds it and carries out
//! the [`Action`]s it returns.

use std::time::{Duration, Instant};

use agent_core::AgentEvent;
use agent_tool::StyledLine;
use coding_agent::{RenderContext, ToolRegistry};

use crate::cell::CellContext;
use crate::completion::files::FileIndex;
use crate::completion::{CommandHint, Menu};
use crate::editor::Editor;
use crate::footer::{self, Status};
use crate::inline::{Frame, InlineRenderer};
use crate::keybindings::Keybindings;
use crate::permission::PermissionQueue;
use crate::pickers::{Picker, PickerKind};
use crate::text;
use crate::transcript::Transcript;

mod complete;
mod keys;

/// What the runner must do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Start a run with this prompt.
    Prompt(String),
    /// Inject this message into the running turn.
    Steer(String),
    /// Send this message when the run would stop.
    FollowUp(String),
    /// Run a `/command` line.
    Command(String),
    /// Run a shell command for the user (`!cmd`; `!!cmd` keeps it out of
    /// the model's context).
    Bash {
        /// The command line.
        command: String,
        /// Whether it stays out of the context (`!!`).
        exclude: bool,
    },
    /// Cancel the run (tools included).
    Interrupt,
    /// Drop the queued messages: they are back in the editor.
    TakeBackQueued,
    /// Open a picker; its list is the runner's to gather (models,
    /// sessions, the tree, settings, themes).
    OpenPicker(PickerKind),
    /// Switch to the next (or, not `forward`, the previous) model: of the
    /// model scope (`enabledModels`, `--models`) when one is set, else of
    /// the current provider.
    CycleModel {
        /// Which way.
        forward: bool,
    },
    /// The model's next thinking level.
    CycleThinking,
    /// Apply this theme and save it as the `theme` setting.
    Theme(String),
    /// A change an open picker asks for (a label, a session's name, a
    /// deleted session); the picker stays open and shows how it went.
    SessionEdit(crate::pickers::SessionEdit),
    /// Stop the process for Ctrl+Z.
    Suspend,
    /// Leave the UI.
    Exit,
}

/// A message queued while the agent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    /// Steering (true) or follow-up.
    pub steer: bool,
    /// What was typed.
    pub text: String,
}

/// The UI's state.
pub struct App {
    /// The conversation.
    pub transcript: Transcript,
    /// The prompt editor.
    pub editor: Editor,
    /// The footer's figures.
    pub status: Status,
    /// Permission questions.
    pub permissions: PermissionQueue,
    /// What cells draw with.
    pub cx: CellContext,
    /// When the current run began, while one runs.
    pub running_since: Option<Instant>,
    /// Messages queued during this run, not delivered yet.
    pub queued: Vec<Queued>,
    /// A slash command is running.
    pub command_running: bool,
    /// The spinner's frame.
    pub tick: usize,
    /// What each key does.
    pub keys: Keybindings,
    /// The completion menu, when open.
    pub completion: Option<Menu>,
    /// The open selector (models, sessions, tree, settings, themes): it
    /// replaces the editor and has the keys.
    pub picker: Option<Picker>,
    /// The `/commands` completion offers.
    pub commands: Vec<CommandHint>,
    /// The working directory's files for `@`, walked at the first `@`.
    files: Option<FileIndex>,
    /// An `@` matched nothing while the walk was still going.
    awaiting_files: bool,
    /// Ctrl+C was pressed on an empty, idle editor: the next one exits.
    exit_armed: bool,
}

impl App {
    /// A UI over `transcript`.
    pub fn new(transcript: Transcript, cx: CellContext, status: Status) -> Self {
        App {
            transcript,
            editor: Editor::new(),
            status,
            permissions: PermissionQueue::default(),
            cx,
            running_since: None,
            queued: Vec::new(),
            command_running: false,
            tick: 0,
            keys: Keybindings::default(),
            completion: None,
            picker: None,
            commands: Vec::new(),
            files: None,
            awaiting_files: false,
            exit_armed: false,
        }
    }

    /// Whether a run is going.
    pub fn is_running(&self) -> bool {
        self.running_since.is_some()
    }

    /// A run began.
    pub fn run_started(&mut self, now: Instant) {
        self.running_since = Some(now);
    }

    /// The run ended: undelivered queued messages go back to the editor.
    pub fn run_ended(&mut self) {
        self.running_since = None;
        self.restore_queued();
        self.transcript.settle_all();
    }

    fn restore_queued(&mut self) {
        if self.queued.is_empty() {
            return;
        }
        let mut text: Vec<String> = self.queued.drain(..).map(|q| q.text).collect();
        if !self.editor.is_empty() {
            text.push(self.editor.text().to_string());
        }
        self.editor.set_text(&text.join("\n"));
    }

    /// Applies an agent event.
    pub fn agent_event(&mut self, event: &AgentEvent) {
        if let AgentEvent::MessageStart {
            message: agent_ai::Message::User(u),
        } = event
        {
            // A queued message was delivered.
            let text = u.text();
            if let Some(i) = self.queued.iter().position(|q| q.text == text) {
                self.queued.remove(i);
            }
        }
        self.transcript.apply(event);
    }

    /// A bracketed paste.
    pub fn paste(&mut self, text: &str) {
        if self.permissions.is_open() {
            self.permissions.paste(text);
        } else if let Some(picker) = &mut self.picker {
            picker.paste(text);
        } else {
            self.editor.paste(text);
        }
    }

    fn submit(&mut self) -> Option<Action> {
        if self.command_running {
            // The text stays in the editor for when the command is done.
            self.transcript
                .notice("a command is running; send when it is done", true);
            return None;
        }
        if crate::shell::parse(self.editor.text().trim_start()).is_some() {
            if self.is_running() {
                // The text stays in the editor for when the run is done.
                self.transcript
                    .notice("a run is going; run the command when it is done", true);
                return None;
            }
            // Parsed again with paste markers expanded.
            let text = self.editor.submit()?;
            let (command, exclude) = crate::shell::parse(text.trim_start())?;
            return Some(Action::Bash { command, exclude });
        }
        let text = self.editor.submit()?;
        let line = text.trim();
        if line.starts_with('/') && !line.contains('\n') {
            if matches!(line, "/exit" | "/quit") {
                return Some(Action::Exit);
            }
            if self.is_running() || self.command_running {
                self.transcript
                    .notice(format!("{line}: wait for the run to finish"), true);
                return None;
            }
            return Some(Action::Command(line.to_string()));
        }
        if self.is_running() {
            self.queued.push(Queued {
                steer: true,
                text: text.clone(),
            });
            return Some(Action::Steer(text));
        }
        Some(Action::Prompt(text))
    }

    /// The live region at `width` x `height`: the transcript's unsettled
    /// tail, queued messages, the spinner, the editor (or a permission
    /// question) and the footer; and where the caret is. At most `height`
    /// rows: the tail is cut first, the editor last.
    pub fn compose(
        &mut self,
        width: usize,
        height: usize,
        now: Instant,
        registry: Option<&ToolRegistry>,
    ) -> (Vec<StyledLine>, Option<(usize, usize)>) {
        let tail = self.transcript.live_rows(&self.cx, width.max(1));
        self.compose_with(tail, width, height, now, registry)
    }

    /// The live region without the transcript's tail (fullscreen draws
    /// every cell in its own view): queued messages, the spinner, the
    /// editor or a permission question, and the footer.
    pub fn compose_dock(
        &mut self,
        width: usize,
        height: usize,
        now: Instant,
        registry: Option<&ToolRegistry>,
    ) -> (Vec<StyledLine>, Option<(usize, usize)>) {
        self.compose_with(Vec::new(), width, height, now, registry)
    }

    fn compose_with(
        &mut self,
        tail: Vec<StyledLine>,
        width: usize,
        height: usize,
        now: Instant,
        registry: Option<&ToolRegistry>,
    ) -> (Vec<StyledLine>, Option<(usize, usize)>) {
        let width = width.max(1);
        let height = height.max(1);
        let theme = self.cx.theme;
        let mut middle: Vec<StyledLine> = Vec::new();
        if tail.is_empty() && self.transcript.has_history() {
            // A blank row between the conversation and the editor.
            middle.push(StyledLine::new());
        }
        for q in &self.queued {
            let label = if q.steer { "Steering: " } else { "Follow-up: " };
            let first = q.text.lines().next().unwrap_or("");
            middle.push(text::clip(
                &StyledLine::styled(label, theme.dim).push(text::clean(first), theme.dim),
                width,
            ));
        }
        if let Some(since) = self.running_since {
            let elapsed = now.saturating_duration_since(since);
            middle.push(text::clip(
                &footer::spinner_row(elapsed, self.tick, &theme),
                width,
            ));
        } else if self.command_running {
            middle.push(StyledLine::styled("running the command...", theme.dim));
        }
        let (input, caret) = if self.permissions.is_open() {
            let ctx = RenderContext {
                cwd: self.cx.cwd.clone(),
                width,
            };
            // The dialog may take the screen but the footer's first row.
            let view = self
                .permissions
                .view(registry, &ctx, &theme, height.saturating_sub(1));
            (view.rows, view.caret)
        } else if let Some(picker) = &mut self.picker {
            // Like the dialog: the screen but the footer's first row.
            picker.view(width, height.saturating_sub(1), &theme)
        } else {
            let (rows, caret) = self.editor.render(width, anstyle::Style::new(), theme.dim);
            let mut input: Vec<StyledLine> = Vec::new();
            if let Some(search) = self.editor.search() {
                input.push(search_row(search, &theme));
            }
            let caret = (caret.0 + input.len(), caret.1);
            input.extend(rows.iter().map(|r| text::clip(r, width)));
            if let Some(menu) = &self.completion {
                input.extend(menu.rows(width, &theme));
            }
            (input, Some(caret))
        };
        let footer: Vec<StyledLine> = self
            .status
            .rows(width, &theme)
            .iter()
            .map(|r| text::clip(r, width))
            .collect();
        // Fit: the editor first, then the footer, the middle, the tail.
        let input_rows = input.len().min(height);
        let input_skip = input.len() - input_rows;
        let mut room = height - input_rows;
        let footer_rows = footer.len().min(room);
        room -= footer_rows;
        let middle_rows = middle.len().min(room);
        room -= middle_rows;
        let tail_rows = tail.len().min(room);
        let mut rows = Vec::with_capacity(height);
        rows.extend_from_slice(&tail[tail.len() - tail_rows..]);
        rows.extend_from_slice(&middle[middle.len() - middle_rows..]);
        let top = rows.len();
        rows.extend_from_slice(&input[input_skip..]);
        rows.extend_from_slice(&footer[..footer_rows]);
        let caret = caret.and_then(|(r, c)| {
            r.checked_sub(input_skip)
                .map(|r| (top + r, c.min(width - 1)))
        });
        (rows, caret)
    }

    /// One frame's bytes: the history newly settled (or, after a width
    /// change, `rebuild`, the history that was on the screen, drawn again
    /// at the new width) and the live region.
    pub fn frame(&mut self, renderer: &mut InlineRenderer, rebuild: bool, now: Instant) -> String {
        let width = renderer.width();
        let history = if rebuild {
            let all = self.transcript.all_history(&self.cx, width);
            let keep = renderer.lines_on_screen().min(all.len());
            all[all.len() - keep..].to_vec()
        } else {
            self.transcript.take_history(&self.cx, width)
        };
        let registry = self.cx.registry.clone();
        let (live, cursor) = self.compose(width, renderer.height(), now, registry.as_ref());
        renderer.frame(Frame {
            history: &history,
            live: &live,
            cursor,
        })
    }

    /// Draws with `theme` from now on: the live region and cells not yet
    /// in the scrollback (and, in fullscreen, every cell); the terminal's
    /// scrollback keeps the colours it was written in.
    pub fn set_theme(&mut self, theme: crate::theme::UiTheme) {
        self.cx.theme = theme;
        self.transcript.set_theme(theme);
    }

    /// Advances the spinner; whether anything animates.
    pub fn animate(&mut self) -> bool {
        if self.is_running() {
            self.tick = self.tick.wrapping_add(1);
            true
        } else {
            false
        }
    }
}

/// The Ctrl+R row above the editor: the query and whether it matched.
fn search_row(search: &crate::editor::HistorySearch, theme: &crate::theme::UiTheme) -> StyledLine {
    let label = if search.failed {
        "(failed reverse-i-search)"
    } else {
        "(reverse-i-search)"
    };
    StyledLine::styled(label, theme.dim)
        .push(format!(" {}", text::clean(&search.query)), theme.user)
}

/// How often the spinner turns.
pub const SPINNER_INTERVAL: Duration = Duration::from_millis(100);
