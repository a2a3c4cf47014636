//! The `permissions` section: the user's rule lists and the project's,
//! typed as `agent-permissions`' [`PermissionConfig`] and layered into the
//! rules a session's gate holds.

use std::path::{Path, PathBuf};

use serde_json::Value;

use agent_permissions::{PermissionConfig, PermissionConfigError, PermissionRules};

use super::{Settings, SettingsError};

impl Settings {
    /// `permissions`: the user's rules plus the project's deny and ask
    /// rules (a project only tightens; see
    /// [`PermissionRules::layered`](agent_permissions::PermissionRules::layered)),
    /// path globs anchored at `cwd`.
    ///
    /// ```
    /// use coding_agent::Settings;
    /// use serde_json::json;
    /// let s = Settings::merged(
    ///     json!({"permissions": {"allow": ["Bash(git:*)"]}}),
    ///     json!({"permissions": {"deny": ["Bash(git push:*)"]}}),
    /// );
    /// let rules = s.permission_rules("/w".as_ref()).unwrap();
    /// assert!(!rules.is_empty());
    /// let bad = Settings::from_value(json!({"permissions": {"deny": "Bash"}}));
    /// let e = bad.permission_rules("/w".as_ref()).unwrap_err();
    /// assert!(e.message.starts_with("`permissions`: invalid type"));
    /// ```
    ///
    /// # Errors
    /// A section of the wrong shape or a rule that does not parse, naming
    /// the file it came from (`settings` when the values were given in
    /// code) and the key. Files read by [`Settings::load`] were checked
    /// already, so for them this fails only on a rule whose glob cannot be
    /// anchored at `cwd`.
    pub fn permission_rules(&self, cwd: &Path) -> Result<PermissionRules, SettingsError> {
        let error = |file: usize, e: PermissionConfigError| SettingsError {
            path: self.files[file]
                .clone()
                .unwrap_or_else(|| PathBuf::from("settings")),
            message: e.to_string(),
        };
        let config = |file: usize, value: Option<&Value>| match value {
            None => Ok(PermissionConfig::default()),
            Some(v) => PermissionConfig::from_value(v).map_err(|e| error(file, e)),
        };
        let user = config(0, self.values.get("permissions"))?;
        let project = config(1, self.project.get("permissions"))?;
        // Which file a bad rule is in: the user's alone first.
        PermissionRules::from_config(&user, cwd).map_err(|e| error(0, e))?;
        PermissionRules::layered(&user, &project, cwd).map_err(|e| error(1, e))
    }
}
