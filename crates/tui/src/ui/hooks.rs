//! What a program hands the UI: its `/commands` (with the lists the
//! selectors show) and how the UI is set up.

use std::sync::Arc;

use coding_agent::AgentSession;
use coding_agent::prelude::BoxFuture;

use crate::clipboard::SystemClipboard;
use crate::completion::CommandHint;
use crate::keybindings::Keybindings;
use crate::mode::TuiMode;
use crate::notify::NotifyMethod;
use crate::permission::PermissionQuestions;
use crate::theme::UiTheme;

/// Runs `/commands` for the UI. The output becomes a transcript cell.
pub trait SlashCommands: Send + Sync {
    /// Runs `line` on `session`: `None` when it is not a command (it is
    /// then sent as a prompt), else its output or its error.
    fn run(
        &self,
        session: &AgentSession,
        line: &str,
    ) -> BoxFuture<'static, Option<Result<String, String>>>;

    /// The commands it knows, for the completion menu (the session's
    /// templates and skills, `/exit` and `/quit` are added by the UI).
    fn commands(&self) -> Vec<CommandHint> {
        Vec::new()
    }

    /// The models the model selector lists and Ctrl+P cycles through, each
    /// one `/model PROVIDER/ID` can switch to (the current model is added
    /// when missing). None by default: the selector shows the current one.
    fn models(&self) -> Vec<agent_ai::Model> {
        Vec::new()
    }

    /// This directory's sessions, newest first, for the resume picker;
    /// each one's id is what `/resume ID` takes. By default the session
    /// file's directory (or the default one) is listed on a blocking
    /// thread, so the UI never waits on the disk.
    fn sessions(
        &self,
        session: &AgentSession,
    ) -> BoxFuture<'static, Vec<agent_sessions::SessionInfo>> {
        let cwd = session.cwd().to_path_buf();
        let dir = session
            .session_manager()
            .and_then(|store| {
                let manager = store.lock().unwrap_or_else(|p| p.into_inner());
                manager.session_dir().map(std::path::Path::to_path_buf)
            })
            .or_else(|| coding_agent::session_dir(&cwd));
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                dir.map(|dir| agent_sessions::SessionManager::list(&cwd, &dir))
                    .unwrap_or_default()
            })
            .await
            .unwrap_or_default()
        })
    }

    /// The directory [`SlashCommands::sessions`] lists: the only one the
    /// resume picker renames or deletes files in. By default the session
    /// file's directory, else the default one of the working directory.
    fn session_dir(&self, session: &AgentSession) -> Option<std::path::PathBuf> {
        session
            .session_manager()
            .and_then(|store| {
                let manager = store.lock().unwrap_or_else(|p| p.into_inner());
                manager.session_dir().map(std::path::Path::to_path_buf)
            })
            .or_else(|| coding_agent::session_dir(session.cwd()))
    }
}

/// How the UI is set up.
pub struct TuiOptions {
    /// The styles.
    pub theme: UiTheme,
    /// The `/commands` (`/exit` and `/quit` are the UI's own).
    pub commands: Option<Arc<dyn SlashCommands>>,
    /// Permission questions from the session's gate (see
    /// [`crate::permission_channel`]).
    pub questions: Option<PermissionQuestions>,
    /// How the UI starts drawing (`/tui` switches while it runs).
    pub mode: TuiMode,
    /// How a waiting question or a finished run calls the user while the
    /// terminal is unfocused ([`NotifyMethod::Off`]: never).
    pub notify: NotifyMethod,
    /// The app's name in the terminal's title; `None` leaves the title
    /// alone.
    pub title: Option<String>,
    /// What each key does (Pi's defaults, or [`Keybindings::load`] for a
    /// `keybindings.json`; its warnings are shown as notices).
    pub keybindings: Keybindings,
    /// How `theme` was chosen (its setting, the themes directory, the
    /// terminal's background and depth): `/theme` lists its themes and
    /// switches live with it. `None`: the environment's, without theme
    /// files.
    pub theme_choice: Option<crate::theme::ThemeChoice>,
    /// The keyboard protocol to ask the terminal for; `None` detects it
    /// ([`crate::keyboard::KeyboardProtocol::detect`]).
    pub keyboard: Option<crate::keyboard::KeyboardProtocol>,
    /// Where to write the UI's own timing when it ends
    /// ([`crate::frame_stats`], as JSON); `None` keeps no timing.
    pub stats_file: Option<std::path::PathBuf>,
    /// Where fullscreen copies a mouse selection besides OSC 52 (by
    /// default what the environment calls for:
    /// [`SystemClipboard::from_env`]; [`SystemClipboard::Off`] spawns
    /// nothing).
    pub clipboard: SystemClipboard,
    /// The model patterns Ctrl+P cycles through (Pi's `--models`; see
    /// [`crate::model_scope`]); `None`: the session's `enabledModels`
    /// setting, and without it the current provider's models.
    pub models: Option<Vec<String>>,
}

impl Default for TuiOptions {
    fn default() -> Self {
        TuiOptions {
            theme: UiTheme::from_env(),
            commands: None,
            questions: None,
            mode: TuiMode::Inline,
            notify: NotifyMethod::Auto,
            title: Some("coding-agent".to_string()),
            keybindings: Keybindings::default(),
            theme_choice: None,
            keyboard: None,
            stats_file: None,
            clipboard: SystemClipboard::from_env(),
            models: None,
        }
    }
}

/// What `/` completes: the UI's commands, `/exit`, `/quit` and `/tui`,
/// then the session's templates and skills.
pub(super) fn command_hints(
    session: &AgentSession,
    commands: Option<&dyn SlashCommands>,
) -> Vec<CommandHint> {
    let mut hints = commands.map(SlashCommands::commands).unwrap_or_default();
    let ours = [
        ("exit", "Leave"),
        ("quit", "Leave"),
        ("tui", "[inline|fullscreen] - Switch how the UI draws"),
        (
            "theme",
            "[NAME] - Choose the colour theme (applied now, saved in your settings)",
        ),
    ]
    .map(|(n, d)| (n.to_string(), d.to_string()));
    for (name, description) in ours.into_iter().chain(session.prompt_commands()) {
        if !hints.iter().any(|h| h.name == name) {
            hints.push(CommandHint { name, description });
        }
    }
    hints
}
