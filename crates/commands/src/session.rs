//! The session commands: `/session`, `/new`, `/resume`, `/fork`, `/clone`,
//! `/import`, `/name`, `/export`.

use std::io::Write;
use std::path::{Path, PathBuf};

use agent_sessions::{SessionError, SessionInfo, SessionManager, iso_timestamp};
use coding_agent::agent_ai::{Message, Usage};
use coding_agent::{AgentSession, sanitize_terminal_text};

use crate::{Commands, first_argument};

/// Runs `f` on the session's file, or says the conversation is not recorded.
pub(crate) fn with_manager<T>(
    session: &AgentSession,
    f: impl FnOnce(&mut SessionManager) -> Result<T, String>,
) -> Result<T, String> {
    let store = session
        .session_manager()
        .ok_or("this conversation is not recorded (--no-session)")?;
    let mut manager = store.lock().unwrap_or_else(|p| p.into_inner());
    f(&mut manager)
}

/// Where new session files go: the configured directory, the current
/// session's, or the default one for the working directory.
pub(crate) fn session_dir(commands: &Commands, session: &AgentSession) -> Option<PathBuf> {
    commands
        .session_dir
        .clone()
        .or_else(|| {
            with_manager(session, |m| Ok(m.session_dir().map(Path::to_path_buf)))
                .ok()
                .flatten()
        })
        .or_else(|| coding_agent::session_dir(session.cwd()))
}

/// `/session`.
pub(crate) fn info(session: &AgentSession) -> Result<String, String> {
    let messages = session.agent().messages();
    let (mut user, mut assistant, mut calls, mut results) = (0, 0, 0, 0);
    let mut usage = Usage::default();
    for m in &messages {
        match m {
            Message::User(_) => user += 1,
            Message::Assistant(a) => {
                assistant += 1;
                calls += a.tool_calls().count();
                usage.add(&a.usage);
            }
            Message::ToolResult(_) => results += 1,
        }
    }
    let (file, id, name) = with_manager(session, |m| {
        Ok((
            m.session_file().map(|p| p.display().to_string()),
            m.session_id().to_string(),
            m.name(),
        ))
    })
    .unwrap_or((None, "(not recorded)".into(), None));
    let model = session.agent().model();
    let context = coding_agent::compaction::context_tokens(&messages);
    let window = session.compactor().context_window();
    let percent = if window > 0 {
        context as f64 * 100.0 / window as f64
    } else {
        0.0
    };
    let mut out = String::new();
    if let Some(name) = name {
        out.push_str(&format!("Name:      {}\n", sanitize_terminal_text(&name)));
    }
    out.push_str(&format!(
        "File:      {}\n",
        file.as_deref().unwrap_or("in memory")
    ));
    out.push_str(&format!("ID:        {id}\n"));
    out.push_str(&format!(
        "Model:     {}/{} (thinking {})\n",
        model.provider,
        model.id,
        session.thinking_level()
    ));
    out.push_str(&format!(
        "Messages:  {} ({user} user, {assistant} assistant, {calls} tool calls, {results} results)\n",
        messages.len()
    ));
    out.push_str(&format!(
        "Tokens:    in {} · out {} · cache read {} · cache write {}\n",
        usage.input, usage.output, usage.cache_read, usage.cache_write
    ));
    out.push_str(&format!("Cost:      ${:.4}\n", usage.cost.total));
    out.push_str(&format!(
        "Context:   {context} of {window} tokens ({percent:.1}%)"
    ));
    Ok(out)
}

/// `/new`.
pub(crate) fn new_session(commands: &Commands, session: &AgentSession) -> Result<String, String> {
    // Without any session directory the new session is kept in memory.
    let manager = match session_dir(commands, session) {
        Some(dir) => SessionManager::create(session.cwd(), dir).map_err(|e| e.to_string())?,
        None => SessionManager::in_memory(session.cwd()),
    };
    let file = manager
        .session_file()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    session.switch_session(manager).map_err(|e| e.to_string())?;
    Ok(format!("new session {file}"))
}

/// One line of a session list.
pub fn describe(index: usize, info: &SessionInfo) -> String {
    let title = info.name.clone().unwrap_or_else(|| {
        let first = info.first_message.replace('\n', " ");
        first.chars().take(70).collect()
    });
    format!(
        "{index:>3}. {}  {}  ({} messages)  {}",
        &info.id[..info.id.len().min(8)],
        iso_timestamp(info.modified),
        info.message_count,
        sanitize_terminal_text(&title)
    )
}

/// This directory's sessions, newest first.
pub(crate) fn list(commands: &Commands, session: &AgentSession) -> Vec<SessionInfo> {
    session_dir(commands, session)
        .map(|dir| SessionManager::list(session.cwd(), &dir))
        .unwrap_or_default()
}

/// `/resume [ID]`.
pub(crate) fn resume(
    commands: &Commands,
    session: &AgentSession,
    prefix: &str,
) -> Result<String, String> {
    if prefix.is_empty() {
        let list = list(commands, session);
        if list.is_empty() {
            return Ok("no sessions to resume in this directory".into());
        }
        return Ok(list
            .iter()
            .take(20)
            .enumerate()
            .map(|(i, s)| describe(i + 1, s))
            .collect::<Vec<_>>()
            .join("\n")
            + "\n(/resume ID to continue one)");
    }
    let dir = session_dir(commands, session)
        .ok_or_else(|| SessionError::NotFound(prefix.to_string()).to_string())?;
    let path = SessionManager::find(session.cwd(), &dir, prefix).map_err(|e| e.to_string())?;
    let manager = SessionManager::open(&path).map_err(|e| e.to_string())?;
    session.switch_session(manager).map_err(|e| e.to_string())?;
    Ok(format!("resumed {}", path.display()))
}

/// `/fork ENTRY`.
pub(crate) fn fork(session: &AgentSession, entry: &str) -> Result<String, String> {
    if entry.is_empty() {
        return Err("usage: /fork ENTRY (an id from /tree)".into());
    }
    let forked = with_manager(session, |m| m.fork(Some(entry)).map_err(|e| e.to_string()))?;
    let file = forked
        .session_file()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    session.switch_session(forked).map_err(|e| e.to_string())?;
    Ok(format!("forked at {entry} into {file}"))
}

/// `/clone`: a new file holding the current branch up to its leaf.
pub(crate) fn clone(session: &AgentSession) -> Result<String, String> {
    let cloned = with_manager(session, |m| {
        let leaf = m
            .leaf_id()
            .map(str::to_string)
            .ok_or("nothing to clone yet: the session is empty")?;
        m.fork(Some(&leaf)).map_err(|e| e.to_string())
    })?;
    let file = cloned
        .session_file()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    session.switch_session(cloned).map_err(|e| e.to_string())?;
    Ok(format!("cloned into {file}"))
}

/// `/import PATH`: the file is checked first (a session header, a
/// working directory that exists), then copied into the session
/// directory under a free name and continued; a refused file leaves
/// nothing behind.
pub(crate) fn import(
    commands: &Commands,
    session: &AgentSession,
    rest: &str,
) -> Result<String, String> {
    let source = first_argument(rest).ok_or("usage: /import PATH.jsonl")?;
    let source = session.cwd().join(source);
    let imported = SessionManager::open(&source)
        .map_err(|e| format!("cannot import {}: {e}", source.display()))?;
    let cwd = imported.cwd().to_path_buf();
    if !cwd.is_dir() {
        return Err(format!(
            "cannot import {}: its working directory {} does not exist here",
            source.display(),
            cwd.display()
        ));
    }
    let dir = session_dir(commands, session)
        .ok_or("no session directory (set CODING_AGENT_DIR or HOME)")?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let bytes =
        std::fs::read(&source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    let destination = copy_to_free_name(&dir, &source, &bytes)?;
    let manager = match SessionManager::open(&destination) {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_file(&destination);
            return Err(format!("cannot import {}: {e}", source.display()));
        }
    };
    let id = manager.session_id().to_string();
    session.switch_session(manager).map_err(|e| e.to_string())?;
    Ok(format!(
        "imported session {id} from {} into {}",
        source.display(),
        destination.display()
    ))
}

/// Writes `bytes` as `dir/<name of source>` or `<stem>-N.jsonl`, never
/// over an existing file.
fn copy_to_free_name(dir: &Path, source: &Path, bytes: &[u8]) -> Result<PathBuf, String> {
    let stem = source
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "imported".into());
    for n in 0..1000 {
        let name = if n == 0 {
            format!("{stem}.jsonl")
        } else {
            format!("{stem}-{n}.jsonl")
        };
        let path = dir.join(name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                if let Err(e) = file.write_all(bytes).and_then(|()| file.sync_all()) {
                    let _ = std::fs::remove_file(&path);
                    return Err(format!("cannot write {}: {e}", path.display()));
                }
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot write {}: {e}", path.display())),
        }
    }
    Err(format!("no free file name for {stem} in {}", dir.display()))
}

/// `/name [NAME]`.
pub(crate) fn name(session: &AgentSession, rest: &str) -> Result<String, String> {
    with_manager(session, |m| {
        if rest.is_empty() {
            return Ok(match m.name() {
                Some(name) => format!("session name: {}", sanitize_terminal_text(&name)),
                None => "the session has no name (/name NAME sets one)".into(),
            });
        }
        m.set_name(rest).map_err(|e| e.to_string())?;
        Ok(format!("session named {rest:?}"))
    })
}

/// `/export [PATH]`: HTML, or JSONL when PATH ends in `.jsonl` (as Pi);
/// tools drawn by the session's renderers.
pub(crate) fn export(session: &AgentSession, rest: &str) -> Result<String, String> {
    use agent_export::{ExportFormat, ExportOptions, default_file_name, write_export};
    let output = first_argument(rest).map(PathBuf::from);
    let format = match &output {
        Some(p) if p.extension().is_some_and(|e| e == "jsonl") => ExportFormat::Jsonl,
        _ => ExportFormat::Html,
    };
    let registry = session.registry();
    with_manager(session, |m| {
        let path = match &output {
            Some(p) => session.cwd().join(p),
            None => session.cwd().join(default_file_name(m, format)),
        };
        let options = ExportOptions::default().with_registry(&registry);
        write_export(m, format, &options, &path).map_err(|e| e.to_string())?;
        Ok(format!("Session exported to: {}", path.display()))
    })
}
