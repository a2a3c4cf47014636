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
//! files, nothing of tools, settings or the agent directory.

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
