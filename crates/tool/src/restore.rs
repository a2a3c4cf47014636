//! Restoring a tool's state from its earlier results: a tool that keeps
//! state between calls (a todo list, a counter) records it in each result's
//! `details`; when a session is loaded, resumed, forked or moved to another
//! branch, the session hands the tool the results of its own earlier calls
//! on the branch now current, and the tool rebuilds its state from them.

use std::sync::Arc;

use serde_json::Value;

/// One earlier call of a tool and its result, as recorded on the session's
/// current branch (root first). Results that compaction has taken out of the
/// model's context are still here: the session file keeps them.
#[derive(Debug, Clone, PartialEq)]
pub struct EarlierResult {
    /// The id the model gave the call.
    pub tool_call_id: String,
    /// The arguments of the call as the model sent them (`null` when the
    /// assistant message that asked for it is not on the branch).
    pub arguments: Value,
    /// The result's `details` (`null` when it had none; `{}` for a failure).
    pub details: Value,
    /// Whether the call failed.
    pub is_error: bool,
}

/// Rebuilds a tool's state from the [`EarlierResult`]s of its own name on
/// the current branch (possibly none: a new session starts empty). See
/// [`ToolDefinition::with_restore`](crate::ToolDefinition::with_restore).
pub type RestoreFn = Arc<dyn Fn(&[EarlierResult]) + Send + Sync>;
