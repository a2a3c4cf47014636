//! `--mode json`: every event of the run as one JSON line on stdout, and
//! the session's usage as the last line.

use std::io::Write;

use agent_core::AgentEvent;
use coding_agent::AgentSession;
use serde_json::json;

/// Writes each event of `session` as a JSON line.
pub fn attach(session: &AgentSession) {
    session.agent().subscribe(|event: &AgentEvent| {
        if let Ok(line) = serde_json::to_string(event) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    });
}

/// The session's tokens and cost at the end of a run:
/// `{"type": "session_usage", "model": "provider/id", "usage": {...}}`.
pub fn report_usage(session: &AgentSession) {
    let model = session.agent().model();
    let line = json!({
        "type": "session_usage",
        "model": format!("{}/{}", model.provider, model.id),
        "usage": session.usage(),
    });
    crate::print_line(&line.to_string());
}
