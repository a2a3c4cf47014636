//! Project trust applied to [`Settings`]: the project's held-back values
//! ([`Settings::held_back`]: the keys of
//! [`RUNS_CODE_KEYS`](crate::RUNS_CODE_KEYS) and
//! [`WEAKENS_USER_KEYS`](crate::WEAKENS_USER_KEYS)) are applied when the
//! user trusts the project with them, asked about on a terminal, or left
//! out with one warning. The records and the pins are [`agent_trust`]'s;
//! this is the glue, and the question's and the warning's wording.

use std::path::Path;

use agent_trust::{TrustState, TrustStore, pins};
use serde_json::Value;

use crate::Settings;

/// What [`resolve_project_trust`] did with the held-back settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrustOutcome {
    /// The project holds no code-running settings.
    NothingHeldBack,
    /// Trusted (before, or by the answer just given): applied.
    Applied,
    /// Left out; the warning says why.
    Ignored {
        /// One line naming the file and the keys, for the user.
        warning: String,
    },
}

/// Applies the project's held-back settings if `store` (the user's:
/// [`TrustStore::in_agent_dir`] of [`agent_dir`](crate::agent_dir))
/// trusts them with their current values, else asks `ask` (a terminal
/// question; `None` in modes without one) and records a yes. The settings
/// stay held back otherwise, and the outcome carries the warning to show.
///
/// `project` is the directory whose `.pi/settings.json` was read.
///
/// ```
/// use coding_agent::{Settings, TrustOutcome, resolve_project_trust};
/// use agent_trust::TrustStore;
/// use serde_json::json;
///
/// let dir = tempfile::tempdir().unwrap();
/// let store = TrustStore::at(dir.path().join("trusted-projects.json"));
/// let project = dir.path();
/// let mut settings = Settings::merged(
///     json!({"shellPath": "/bin/bash"}),
///     json!({"shellPath": "/tmp/evil", "bashTimeoutSeconds": 5}),
/// );
/// // Held back: the project's shell is not used, its other settings are.
/// assert_eq!(settings.shell_path().as_deref(), Some("/bin/bash"));
/// assert_eq!(settings.bash_timeout_seconds(), Some(5.0));
/// // Not trusted, and no terminal to ask on: left out, with a warning.
/// let outcome = resolve_project_trust(&mut settings, project, Some(&store), None);
/// assert!(matches!(outcome, TrustOutcome::Ignored { .. }));
/// assert_eq!(settings.shell_path().as_deref(), Some("/bin/bash"));
///
/// // Once the user trusts these values, they are applied.
/// store.trust(project, settings.held_back()).unwrap();
/// let outcome = resolve_project_trust(&mut settings, project, Some(&store), None);
/// assert_eq!(outcome, TrustOutcome::Applied);
/// assert_eq!(settings.shell_path().as_deref(), Some("/tmp/evil"));
/// ```
pub fn resolve_project_trust(
    settings: &mut Settings,
    project: &Path,
    store: Option<&TrustStore>,
    ask: Option<&mut dyn FnMut(&str) -> bool>,
) -> TrustOutcome {
    if settings.held_back().is_empty() {
        return TrustOutcome::NothingHeldBack;
    }
    let file = project.join(".pi").join("settings.json");
    let keys = settings
        .held_back()
        .keys()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    let pins = pins(project, settings.held_back());
    let state = match store.map(|s| s.state_with(project, settings.held_back(), &pins)) {
        Some(Ok(state)) => state,
        Some(Err(e)) => {
            tracing::warn!("{e}");
            TrustState::NotTrusted
        }
        None => TrustState::NotTrusted,
    };
    if state == TrustState::Trusted {
        settings.apply_held_back();
        return TrustOutcome::Applied;
    }
    let mut why = match state {
        TrustState::Changed => {
            "they, or the project files they run, changed after you trusted this project".to_string()
        }
        TrustState::Outdated => "this project was trusted by an earlier coding-agent, which pinned fewer of the files it runs".to_string(),
        _ => "this project is not trusted".to_string(),
    };
    if !pins.unpinnable.is_empty() {
        // Named in the warning and the question alike: the user must know
        // why this project is asked about every time.
        why.push_str(&format!(
            "; it cannot be trusted for good, so it is asked about each time, because not everything it runs can be pinned: {}",
            pins.unpinnable.join("; ")
        ));
    }
    if let Some(ask) = ask {
        let shown = serde_json::to_string_pretty(&Value::Object(settings.held_back().clone()))
            .unwrap_or_default();
        let mut question = format!(
            "{} wants to run programs outside the sandbox ({why}):\n{shown}\n",
            file.display()
        );
        for (link, target) in &pins.links_out {
            question.push_str(&format!(
                "{link} is a link out of the project to {} (pinned by its content)\n",
                target.display()
            ));
        }
        question.push_str("Trust this project and use these settings?");
        if ask(&question) {
            if let Some(store) = store
                && let Err(e) = store.trust_pinned(project, settings.held_back(), &pins)
            {
                tracing::warn!("the trust was not recorded: {e}");
            }
            settings.apply_held_back();
            return TrustOutcome::Applied;
        }
    }
    let next = if pins.unpinnable.is_empty() {
        format!(
            "review the file, then run `coding-agent trust {}`",
            crate::shell_quote(&project.display().to_string())
        )
    } else {
        "review the file, then answer the question of an interactive run".to_string()
    };
    TrustOutcome::Ignored {
        warning: format!("{}: ignoring {keys}: {why} ({next})", file.display()),
    }
}

#[cfg(test)]
mod tests;
