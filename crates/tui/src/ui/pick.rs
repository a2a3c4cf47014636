//! The pickers' part of the UI task: gathering each one's list (models
//! from the commands, sessions and theme files off the task, the tree and
//! settings from the session), cycling models and themes, and what a
//! written setting changes here.

use serde_json::Value;

use super::Ui;
use crate::pickers::{Picker, PickerData, PickerKind, next_model};
use crate::theme::UiTheme;

impl Ui {
    /// Whether a run or a command is going; if so, says so for `what`.
    fn busy(&mut self, what: &str) -> bool {
        let busy = self.app.is_running() || self.app.command_running;
        if busy {
            self.app
                .transcript
                .notice(format!("{what}: wait for the run to finish"), true);
        }
        busy
    }

    /// A command line the pickers own: `/model`, `/resume`, `/tree`,
    /// `/settings` or `/theme` alone opens one, `/theme NAME` applies a
    /// theme. Whether it was one.
    pub(super) fn picker_line(&mut self, line: &str) -> bool {
        if let Some(kind) = crate::pickers::picker_command(line) {
            self.open_picker(kind);
            return true;
        }
        match line.trim().strip_prefix("/theme ") {
            Some(name) => {
                self.choose_theme(name);
                true
            }
            None => false,
        }
    }

    /// Shift+Tab: the model's next thinking level, shown in the footer.
    pub(super) fn cycle_thinking(&mut self) {
        let before = self.session.thinking_level();
        let level = self.session.cycle_thinking_level();
        if level == before {
            // The footer cannot show a change: say why.
            let model = self.session.agent().model();
            self.app.transcript.notice(
                format!(
                    "thinking: {level} ({}/{} has no other level)",
                    model.provider, model.id
                ),
                false,
            );
        }
        self.refresh_status();
    }

    /// Opens the picker of `kind` over its list; a list read from disk
    /// arrives later (the picker says "loading" meanwhile).
    pub(super) fn open_picker(&mut self, kind: PickerKind) {
        if self.busy(kind.name()) {
            return;
        }
        self.app.completion = None;
        let picker = match kind {
            PickerKind::Model => {
                let models = self
                    .commands
                    .as_ref()
                    .map(|c| c.models())
                    .unwrap_or_default();
                Picker::models(&models, &self.session.agent().model())
            }
            PickerKind::Resume => {
                let current = self.session.session_manager().map(|store| {
                    let manager = store.lock().unwrap_or_else(|p| p.into_inner());
                    manager.session_id().to_string()
                });
                let load = match &self.commands {
                    Some(commands) => commands.sessions(&self.session),
                    None => {
                        // No commands: nothing could resume what is listed.
                        Box::pin(async { Vec::new() })
                    }
                };
                self.picker_load = Some(Box::pin(async move { PickerData::Sessions(load.await) }));
                Picker::loading(PickerKind::Resume, current)
            }
            PickerKind::Tree => {
                let Some(store) = self.session.session_manager() else {
                    self.app.transcript.notice(
                        "/tree: this conversation is not recorded (--no-session)",
                        true,
                    );
                    return;
                };
                let manager = store.lock().unwrap_or_else(|p| p.into_inner());
                Picker::tree(manager.entries(), manager.leaf_id())
            }
            PickerKind::Settings => {
                let mut effective = match self.session.settings().to_value() {
                    Value::Object(map) => map,
                    _ => serde_json::Map::new(),
                };
                for (key, value) in &self.settings_written {
                    effective.insert(key.clone(), value.clone());
                }
                Picker::settings(&effective)
            }
            PickerKind::Theme => {
                let dir = self.theme_choice.themes_dir.clone();
                self.picker_load = Some(Box::pin(async move {
                    let read = tokio::task::spawn_blocking(move || match dir {
                        Some(dir) => crate::pi_theme::load_dir(&dir),
                        None => (Vec::new(), Vec::new()),
                    });
                    let (themes, warnings) = read.await.unwrap_or_default();
                    let names = themes
                        .into_iter()
                        .map(|t| {
                            let appearance = match t.appearance {
                                Some(crate::palette::Background::Light) => "light",
                                Some(crate::palette::Background::Dark) => "dark",
                                None => "",
                            };
                            (t.name, appearance.to_string())
                        })
                        .collect();
                    PickerData::Themes(names, warnings)
                }));
                Picker::loading(PickerKind::Theme, self.theme_choice.setting.clone())
            }
        };
        self.app.picker = Some(picker);
    }

    /// A picker's list arrived: into the picker, if it is still open.
    pub(super) fn picker_loaded(&mut self, data: PickerData) {
        let Some(picker) = &mut self.app.picker else {
            return;
        };
        let wanted = match &data {
            PickerData::Sessions(_) => PickerKind::Resume,
            PickerData::Themes(..) => PickerKind::Theme,
        };
        if picker.kind() != wanted {
            return;
        }
        for warning in picker.load(data) {
            self.app.transcript.notice(warning, true);
        }
    }

    /// Ctrl+P / Shift+Ctrl+P: the next model of the provider, switched to
    /// as `/model PROVIDER/ID` does; the footer shows it, a failure is a
    /// notice.
    pub(super) fn cycle_model(&mut self, forward: bool) {
        if self.busy("switching models") {
            return;
        }
        let current = self.session.agent().model();
        let models = self
            .commands
            .as_ref()
            .map(|c| c.models())
            .unwrap_or_default();
        match next_model(&models, &current, forward) {
            Some(next) => {
                self.quiet_command = true;
                self.run_command(format!("/model {}/{}", next.provider, next.id));
            }
            None => self.app.transcript.notice(
                format!(
                    "no other {} model to switch to (ctrl+l lists the models)",
                    current.provider
                ),
                true,
            ),
        }
    }

    /// `/theme NAME` or the theme selector: applied now, then saved as the
    /// `theme` setting through `/settings` (so it lasts).
    pub(super) fn choose_theme(&mut self, name: &str) {
        let name = name.trim();
        if !self.theme_choice.knows(name) {
            let place = match &self.theme_choice.themes_dir {
                Some(dir) => format!("files in {}", dir.display()),
                None => "no themes directory".to_string(),
            };
            self.app.transcript.notice(
                format!("theme {name:?} not found (built-in: system, dark, light; {place})"),
                true,
            );
            return;
        }
        self.apply_theme(name);
        let json = Value::String(name.to_string()).to_string();
        match &self.commands {
            Some(_) if !self.app.is_running() && !self.app.command_running => {
                self.run_command(format!("/settings theme {json}"));
            }
            _ => self.app.transcript.notice(format!("theme: {name}"), false),
        }
    }

    /// Draws with the theme `name` from the next frame on: the live region
    /// and what is not in the scrollback yet (in fullscreen, everything).
    fn apply_theme(&mut self, name: &str) {
        self.theme_choice.setting = Some(name.to_string());
        let (theme, warnings) = UiTheme::choose(&self.theme_choice);
        for warning in warnings {
            self.app.transcript.notice(warning, true);
        }
        self.app.set_theme(theme);
        self.renderer.invalidate();
        if let Some(screen) = &mut self.screen {
            screen.invalidate();
        }
        self.urgent = true;
    }

    /// A command succeeded: when it was `/settings KEY VALUE`, the
    /// settings picker shows the value from now on, and a new `theme` is
    /// applied at once.
    pub(super) fn setting_written(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("/settings ") else {
            return;
        };
        let Some((key, value)) = rest.trim().split_once(char::is_whitespace) else {
            return;
        };
        let value = value.trim();
        if value.is_empty() {
            return;
        }
        // Read as `/settings` reads it: JSON, else a string.
        let value: Value =
            serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()));
        if key == "theme"
            && let Value::String(name) = &value
            && self.theme_choice.setting.as_deref() != Some(name.as_str())
            && self.theme_choice.knows(name)
        {
            let name = name.clone();
            self.apply_theme(&name);
        }
        self.settings_written.insert(key.to_string(), value);
    }
}
