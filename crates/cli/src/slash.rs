//! The line prompt's commands: `/new`, `/resume`, `/tree`, `/fork`,
//! `/name`, `/compact`.

use coding_agent::AgentSession;
use coding_agent::sessions::SessionManager;

/// Runs `line` if it is one of our commands, printing its output on
/// stderr; `false` when it is a prompt.
pub async fn handle(session: &AgentSession, line: &str) -> bool {
    match run(session, line).await {
        None => false,
        Some(Ok(text)) => {
            eprintln!("{}", text.trim_end());
            true
        }
        Some(Err(e)) => {
            eprintln!("coding-agent: {e}");
            true
        }
    }
}

/// The commands [`run`] knows, with what each does.
const COMMANDS: &[(&str, &str)] = &[
    ("help", "List the commands"),
    ("new", "Start a new session"),
    ("resume", "Resume a session (by id)"),
    ("tree", "Show the session tree"),
    ("fork", "Fork the session at an entry"),
    ("name", "Name the session"),
    ("compact", "Compact the context"),
];

/// The commands for the terminal UI: the output becomes a transcript cell.
pub struct TuiCommands;

impl agent_tui::SlashCommands for TuiCommands {
    fn run(
        &self,
        session: &AgentSession,
        line: &str,
    ) -> coding_agent::prelude::BoxFuture<'static, Option<Result<String, String>>> {
        let (session, line) = (session.clone(), line.to_string());
        Box::pin(async move { run(&session, &line).await })
    }

    fn commands(&self) -> Vec<agent_tui::completion::CommandHint> {
        COMMANDS
            .iter()
            .map(|(name, description)| agent_tui::completion::CommandHint {
                name: (*name).to_string(),
                description: (*description).to_string(),
            })
            .collect()
    }
}

/// Runs `line` if it is one of our commands: its output or error; `None`
/// when it is a prompt.
pub async fn run(session: &AgentSession, line: &str) -> Option<Result<String, String>> {
    let (command, rest) = match line.split_once(char::is_whitespace) {
        Some((c, r)) => (c, r.trim()),
        None => (line, ""),
    };
    let result = match command {
        "/help" => Ok(
            "/new  /resume [ID]  /tree  /fork ENTRY  /name NAME  /compact [INSTRUCTIONS]  /exit"
                .to_string(),
        ),
        "/new" => new_session(session),
        "/resume" => resume(session, rest).await,
        "/tree" => with_manager(session, |m| Ok(m.tree_text())),
        "/fork" => fork(session, rest),
        "/name" if !rest.is_empty() => with_manager(session, |m| {
            m.set_name(rest)
                .map(|_| format!("session named {rest:?}"))
                .map_err(|e| e.to_string())
        }),
        "/name" => Err("usage: /name NAME".to_string()),
        "/compact" => session
            .compact((!rest.is_empty()).then_some(rest))
            .await
            .map(|r| format!("compacted: about {} tokens summarised", r.tokens_before))
            .map_err(|e| e.to_string()),
        _ => return None,
    };
    Some(result)
}

fn with_manager(
    session: &AgentSession,
    f: impl FnOnce(&mut SessionManager) -> Result<String, String>,
) -> Result<String, String> {
    with_manager_value(session, f)
}

fn session_dir(session: &AgentSession) -> Option<std::path::PathBuf> {
    let store = session.session_manager()?;
    let manager = store.lock().unwrap_or_else(|p| p.into_inner());
    manager.session_dir().map(std::path::Path::to_path_buf)
}

fn new_session(session: &AgentSession) -> Result<String, String> {
    let manager =
        SessionManager::create(session.cwd(), session_dir(session)).map_err(|e| e.to_string())?;
    let file = manager
        .session_file()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    session.switch_session(manager).map_err(|e| e.to_string())?;
    Ok(format!("new session {file}"))
}

async fn resume(session: &AgentSession, prefix: &str) -> Result<String, String> {
    let dir = session_dir(session);
    if prefix.is_empty() {
        let list = SessionManager::list(session.cwd(), dir);
        return Ok(list
            .iter()
            .take(20)
            .enumerate()
            .map(|(i, s)| crate::session_cmd::describe(i + 1, s))
            .collect::<Vec<_>>()
            .join("\n")
            + "\n(/resume ID to continue one)");
    }
    let path = SessionManager::find(session.cwd(), dir, prefix).map_err(|e| e.to_string())?;
    let manager = SessionManager::open(&path).map_err(|e| e.to_string())?;
    session.switch_session(manager).map_err(|e| e.to_string())?;
    Ok(format!("resumed {}", path.display()))
}

fn fork(session: &AgentSession, entry: &str) -> Result<String, String> {
    if entry.is_empty() {
        return Err("usage: /fork ENTRY (an id from /tree)".into());
    }
    let forked = with_manager_value(session, |m| m.fork(Some(entry)).map_err(|e| e.to_string()))?;
    let file = forked
        .session_file()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    session.switch_session(forked).map_err(|e| e.to_string())?;
    Ok(format!("forked at {entry} into {file}"))
}

fn with_manager_value<T>(
    session: &AgentSession,
    f: impl FnOnce(&mut SessionManager) -> Result<T, String>,
) -> Result<T, String> {
    let store = session
        .session_manager()
        .ok_or("this conversation is not recorded (--no-session)")?;
    let mut manager = store.lock().unwrap_or_else(|p| p.into_inner());
    f(&mut manager)
}
