//! `/settings` and `/trust`. The settings command writes only the user's
//! own settings file: a project's file is never written from a session
//! (it is the repository's, and may be an attacker's).

use std::path::PathBuf;

use coding_agent::AgentSession;
use serde_json::{Map, Value};

/// `/settings`: the effective settings; `/settings KEY` one of them;
/// `/settings KEY VALUE` sets it in the user settings file (VALUE read as
/// JSON, else as a string). Takes effect in new sessions.
pub(crate) fn settings(session: &AgentSession, rest: &str) -> Result<String, String> {
    let effective = session.settings().to_value();
    let (key, value) = match rest.split_once(char::is_whitespace) {
        Some((k, v)) => (k, Some(v.trim())),
        None => (rest, None),
    };
    if key.is_empty() {
        return serde_json::to_string_pretty(&effective).map_err(|e| e.to_string());
    }
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Ok(match effective.get(key) {
            Some(v) => format!("{key} = {v}"),
            None => format!("{key} is not set"),
        });
    };
    let value: Value =
        serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()));
    let path = user_settings_file().ok_or("no agent directory (set CODING_AGENT_DIR or HOME)")?;
    let mut object = match std::fs::read_to_string(&path) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => map,
            _ => {
                return Err(format!(
                    "{} is not a JSON object; fix it by hand first",
                    path.display()
                ));
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    object.insert(key.to_string(), value.clone());
    let text =
        serde_json::to_string_pretty(&Value::Object(object)).map_err(|e| e.to_string())? + "\n";
    write_atomically(&path, &text)?;
    Ok(format!(
        "{key} = {value} written to {} (new sessions use it)",
        path.display()
    ))
}

fn user_settings_file() -> Option<PathBuf> {
    coding_agent::agent_dir().map(|d| d.join("settings.json"))
}

fn write_atomically(path: &std::path::Path, text: &str) -> Result<(), String> {
    let dir = path.parent().ok_or("the settings file has no directory")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".settings.json.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {}: {e}", path.display())
        })
}

/// `/trust`: whether this project's settings may start programs, and how
/// to change it.
pub(crate) fn trust(session: &AgentSession) -> Result<String, String> {
    let store = coding_agent::agent_dir()
        .map(|dir| agent_trust::TrustStore::in_agent_dir(&dir))
        .ok_or("no agent directory (set CODING_AGENT_DIR or HOME)")?;
    let projects = store.projects().map_err(|e| e.to_string())?;
    let cwd = session.cwd();
    let canonical = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let trusted = projects
        .iter()
        .any(|p| std::path::Path::new(p) == canonical || std::path::Path::new(p) == cwd);
    Ok(if trusted {
        format!(
            "{} is trusted (`coding-agent trust --revoke` removes it)",
            cwd.display()
        )
    } else {
        format!(
            "{} is not trusted: its .pi/settings.json cannot start programs and its skills and templates are not read (`coding-agent trust` trusts it)",
            cwd.display()
        )
    })
}
