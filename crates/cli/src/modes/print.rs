//! `--print`: one prompt, and only the final answer on stdout (a failure's
//! message on stderr).

use std::io::IsTerminal;

use agent_ai::{Message, StopReason};
use coding_agent::AgentSession;

/// Prints the last assistant message's text, or its error on stderr.
pub fn final_text(session: &AgentSession) {
    let messages = session.agent().messages();
    let Some(a) = messages.iter().rev().find_map(Message::as_assistant) else {
        return;
    };
    match a.stop_reason {
        StopReason::Error | StopReason::Aborted => {
            // A provider's words, possibly a server's: shown, not obeyed.
            eprintln!(
                "coding-agent: {}",
                coding_agent::sanitize_terminal_text(
                    a.error_message.as_deref().unwrap_or("the run failed")
                )
            );
        }
        _ => {
            let text = a.text();
            // On a terminal, what a repository made the model repeat must
            // not drive it (clipboard writes, titles, cursor moves); a pipe
            // gets the exact text.
            if std::io::stdout().is_terminal() {
                crate::print_line(&coding_agent::sanitize_terminal_text(&text));
            } else {
                crate::print_line(&text);
            }
        }
    }
}
