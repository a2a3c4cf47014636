//! `-c`, `-r`, `--session`, `--no-session`: which session file the run uses.

use std::io::IsTerminal;
use std::path::Path;

use agent_sessions::{SessionError, SessionManager};

use crate::args::RunArgs;

/// The session for this run (`None` with `--no-session`).
pub async fn open(args: &RunArgs, cwd: &Path) -> Result<Option<SessionManager>, String> {
    if args.no_session {
        return Ok(None);
    }
    // Without a directory (none given, no agent directory) the run is
    // kept in memory, as without a file of its own.
    let dir = args
        .session_dir
        .clone()
        .or_else(|| coding_agent::session_dir(cwd));
    let manager = if let Some(path) = &args.session {
        SessionManager::open_or_create(path, cwd)
    } else if args.continue_session {
        match &dir {
            Some(dir) => SessionManager::continue_recent(cwd, dir),
            None => Ok(SessionManager::in_memory(cwd)),
        }
    } else if let Some(prefix) = &args.resume {
        let path = if prefix.is_empty() {
            pick(cwd, dir.as_deref()).await?
        } else {
            let dir = dir.ok_or_else(|| SessionError::NotFound(prefix.clone()).to_string())?;
            SessionManager::find(cwd, &dir, prefix).map_err(|e| e.to_string())?
        };
        SessionManager::open(&path)
    } else {
        match dir {
            Some(dir) => SessionManager::create(cwd, dir),
            None => Ok(SessionManager::in_memory(cwd)),
        }
    }
    .map_err(|e| e.to_string())?;
    for warning in manager.load_warnings() {
        eprintln!("coding-agent: warning: {warning}");
    }
    Ok(Some(manager))
}

/// One line about a session for pickers and `/resume`.
pub use agent_commands::describe;

/// `-r` without an id: a numbered list on a terminal, a clear error elsewhere.
async fn pick(cwd: &Path, dir: Option<&Path>) -> Result<std::path::PathBuf, String> {
    let sessions = dir
        .map(|dir| SessionManager::list(cwd, dir))
        .unwrap_or_default();
    if sessions.is_empty() {
        return Err(format!("no sessions to resume for {}", cwd.display()));
    }
    if !std::io::stdin().is_terminal() {
        let list: Vec<String> = sessions
            .iter()
            .take(10)
            .enumerate()
            .map(|(i, s)| describe(i + 1, s))
            .collect();
        return Err(format!(
            "--resume needs a session id when not on a terminal; recent sessions:\n{}",
            list.join("\n")
        ));
    }
    for (i, info) in sessions.iter().take(20).enumerate() {
        eprintln!("{}", describe(i + 1, info));
    }
    loop {
        eprint!("resume which session? [1-{}] ", sessions.len().min(20));
        // One line read here, not by the shared reader: its thread would
        // go on reading stdin under the terminal UI.
        let line = tokio::task::spawn_blocking(|| {
            use std::io::BufRead;
            let mut line = String::new();
            match std::io::stdin().lock().read_line(&mut line) {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(line),
            }
        })
        .await
        .ok()
        .flatten();
        let Some(line) = line else {
            return Err("no session chosen".into());
        };
        if let Ok(n) = line.trim().parse::<usize>()
            && (1..=sessions.len().min(20)).contains(&n)
        {
            return Ok(sessions[n - 1].path.clone());
        }
    }
}
