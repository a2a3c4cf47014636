//! # agent-sessions
//!
//! Sessions you can resume: JSONL files in Pi's version-3 layout, a tree of
//! entries appended one by one, and the messages of the current branch.
//!
//! ```text
//! <agent dir>/sessions/--<cwd with / as ->--/<timestamp>_<uuid>.jsonl
//! {"type":"session","version":3,"id":"…","timestamp":"…","cwd":"/work/p"}
//! {"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"…","message":{"role":"user",…}}
//! ```
//!
//! [`SessionManager`] reads and appends the file; coding-agent's
//! `AgentSession` built with one restores the conversation and records
//! every message as it ends. This crate knows messages (`agent-ai`) and
//! files, nothing of tools, settings or the agent directory: the caller
//! says which directory sessions live in ([`default_session_dir`] is
//! Pi's layout under an agent directory).
//!
//! A `message` line is an [`EntryKind::Message`] holding an
//! [`agent_ai::Message`] when agent-ai reads it and would write it back
//! the same; any other message line (Pi's `bashExecution` and summary
//! roles, a newer writer's role, a field agent-ai has no place for) is an
//! [`EntryKind::OtherMessage`] kept as JSON, so no line is lost and none
//! fails the load.
//!
//! Open a session file and walk its current branch, root first:
//!
//! ```
//! use agent_sessions::{EntryKind, SessionManager};
//!
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("session.jsonl");
//! # std::fs::write(&path, concat!(
//! #     r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-11-20T09:00:00.000Z","cwd":"/work/p"}"#, "\n",
//! #     r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-11-20T09:00:01.000Z","message":{"role":"user","content":"List the files","timestamp":1}}"#, "\n",
//! #     r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-11-20T09:00:02.000Z","message":{"role":"bashExecution","command":"ls","output":"src","exitCode":0}}"#, "\n",
//! # ))?;
//! let session = SessionManager::open(&path)?;
//! for entry in session.branch_entries() {
//!     match &entry.kind {
//!         EntryKind::Message { message } => println!("{}: {}", entry.id, message.role()),
//!         EntryKind::OtherMessage { .. } => println!("{}: kept as JSON", entry.id),
//!         _ => println!("{}: {}", entry.id, agent_sessions::describe_entry(entry, 60)),
//!     }
//! }
//! // What a model is sent: the command the user ran becomes user text.
//! let context = session.context();
//! assert_eq!(context.messages.len(), 2);
//! assert_eq!(session.leaf_id(), Some("a2"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod context;
mod entry;
mod listing;
mod load;
mod manager;
mod tree_text;

pub use context::{
    ABORTED_TOOL_RESULT, BRANCH_SUMMARY_INTRO, BRANCH_SUMMARY_OUTRO, COMPACTION_SUMMARY_INTRO,
    COMPACTION_SUMMARY_OUTRO, SessionContext, bash_execution_text, build_context,
    message_from_json,
};
pub use entry::{
    EntryKind, SESSION_VERSION, SessionEntry, SessionHeader, iso_now, iso_timestamp,
    parse_iso_millis,
};
pub use listing::{SessionInfo, default_session_dir, session_dir_name};
pub use manager::{SessionError, SessionManager};
pub use tree_text::describe_entry;
