//! The pickers' part of the UI task: gathering each one's list (models
//! from the commands, sessions and theme files off the task, the tree and
//! settings from the session), what a picker changes in place (labels,
//! session names, deleted sessions), cycling models (within the model
//! scope when one is set) and themes, and what a written setting changes
//! here.

use agent_ai::ThinkingLevel;
use serde_json::Value;

use super::Ui;
use crate::model_scope::{next_in_scope, resolve_scope};
use crate::pickers::{Picker, PickerData, PickerKind, SessionEdit, next_model};
use crate::theme::UiTheme;

/// Whether `a` and `b` name one file (the same path, or the same inode).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => a == b,
    }
}

/// Ctrl+P's state: the `--models` patterns, whether their warnings were
/// shown, and the thinking level a scoped switch sets once its `/model`
/// command succeeded.
pub(super) struct ModelCycle {
    patterns: Option<Vec<String>>,
    warned: bool,
    pending: Option<(String, ThinkingLevel)>,
}

impl ModelCycle {
    pub(super) fn new(patterns: Option<Vec<String>>) -> Self {
        ModelCycle {
            patterns,
            warned: false,
            pending: None,
        }
    }
}

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
        let wanted = match &data {
            PickerData::Sessions(_) | PickerData::SessionsEdited(..) => PickerKind::Resume,
            PickerData::Themes(..) => PickerKind::Theme,
        };
        let Some(picker) = self.app.picker.as_mut().filter(|p| p.kind() == wanted) else {
            // Closed meanwhile: how a rename or delete went is still said.
            if let PickerData::SessionsEdited(result, _) = data {
                let (text, error) = match result {
                    Ok(done) => (done, false),
                    Err(why) => (why, true),
                };
                self.app.transcript.notice(text, error);
            }
            return;
        };
        for warning in picker.load(data) {
            self.app.transcript.notice(warning, true);
        }
    }

    /// Ctrl+P / Shift+Ctrl+P: the next model of the model scope (the
    /// `--models` patterns, else the `enabledModels` setting) or, without
    /// one, of the provider; switched to as `/model PROVIDER/ID` does, then
    /// to the thinking level its pattern pinned. The footer shows it, a
    /// failure is a notice.
    pub(super) fn cycle_model(&mut self, forward: bool) {
        if self.busy("switching models") {
            return;
        }
        self.cycle.pending = None;
        let current = self.session.agent().model();
        let models = self
            .commands
            .as_ref()
            .map(|c| c.models())
            .unwrap_or_default();
        let patterns = self
            .cycle
            .patterns
            .clone()
            .or_else(|| self.session.settings().known().enabled_models.clone())
            .filter(|p| !p.is_empty());
        if let Some(patterns) = patterns {
            let scope = resolve_scope(&patterns, &models);
            if !std::mem::replace(&mut self.cycle.warned, true) {
                for warning in &scope.warnings {
                    self.app.transcript.notice(warning.clone(), true);
                }
            }
            // A scope that finds nothing cycles as if there were none (Pi).
            if !scope.models.is_empty() {
                let Some(next) = next_in_scope(&scope.models, &current, forward) else {
                    return self.app.transcript.notice(
                        format!(
                            "{}/{} is the only model in the model scope",
                            current.provider, current.id
                        ),
                        true,
                    );
                };
                let line = format!("/model {}/{}", next.model.provider, next.model.id);
                self.cycle.pending = next.thinking.map(|level| (line.clone(), level));
                self.quiet_command = true;
                return self.run_command(line);
            }
        }
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
        // A scoped Ctrl+P switch: now the level its pattern pinned.
        if let Some((switch, level)) = self.cycle.pending.take()
            && switch == line
        {
            self.session.set_thinking_level(level);
        }
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

    /// A change an open picker asked for: a label written to the session
    /// now, a rename or delete on a blocking thread and the list read
    /// again; the picker shows how it went.
    pub(super) fn session_edit(&mut self, edit: SessionEdit) {
        let (path, name) = match edit {
            SessionEdit::Label { entry, label } => return self.write_label(&entry, label),
            SessionEdit::Rename { path, name } => (path, Some(name)),
            SessionEdit::Delete { path } => (path, None),
        };
        let commands = self.commands.clone();
        let dir = commands.as_ref().and_then(|c| c.session_dir(&self.session));
        let (Some(commands), Some(dir)) = (commands, dir) else {
            if let Some(picker) = &mut self.app.picker {
                picker.set_status("no sessions directory: nothing changed", true);
                picker.selector_mut().set_loading(false);
            }
            return;
        };
        let current = super::session_file(&self.session);
        let mut done = None;
        if let (Some(name), Some(file)) = (&name, &current)
            && same_file(file, &path)
        {
            // The open session is named through its own manager, so the
            // footer and the next entries agree with the file.
            done = Some(self.rename_current(name));
        }
        let load = commands.sessions(&self.session);
        self.picker_load = Some(Box::pin(async move {
            let result = match done {
                Some(result) => result,
                None => tokio::task::spawn_blocking(move || match name {
                    Some(name) => crate::pickers::rename_session(&dir, &path, &name),
                    None => crate::pickers::delete_session(&dir, &path, current.as_deref()),
                })
                .await
                .unwrap_or_else(|e| Err(format!("nothing changed: {e}"))),
            };
            PickerData::SessionsEdited(result, load.await)
        }));
    }

    /// Names the open session (a `session_info` entry in its file).
    fn rename_current(&mut self, name: &str) -> Result<String, String> {
        let name = crate::pickers::clean_name("a session name", name)?;
        let store = self
            .session
            .session_manager()
            .ok_or("this conversation is not recorded")?;
        let mut manager = store.lock().unwrap_or_else(|p| p.into_inner());
        manager
            .set_name(&name)
            .map_err(|e| format!("not renamed: {e}"))?;
        drop(manager);
        self.refresh_status();
        Ok(format!("this session named {name:?}"))
    }

    /// Sets or clears an entry's label in the open session, and shows the
    /// tree again with it.
    fn write_label(&mut self, entry: &str, label: Option<String>) {
        let Some(store) = self.session.session_manager() else {
            return;
        };
        let mut manager = store.lock().unwrap_or_else(|p| p.into_inner());
        let result = crate::pickers::write_label(&mut manager, entry, label.as_deref());
        if let Some(picker) = &mut self.app.picker {
            match result {
                Ok(done) => {
                    picker.reload_tree(manager.entries(), manager.leaf_id());
                    picker.set_status(&done, false);
                }
                Err(why) => picker.set_status(&why, true),
            }
        }
    }
}
