//! The answers of the RPC server, typed: [`RpcResponse`] is the line
//! written for each command, [`RpcData`] what a successful one answers.
//! The wire shape is Pi's (`rpc-types.ts`): `{"id"?, "type": "response",
//! "command", "success": true, "data"?}` or `{"id"?, "type": "response",
//! "command", "success": false, "error"}`.

use agent_ai::{Cost, Message, Model, ThinkingLevel};
use agent_core::QueueMode;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// One response line of the RPC protocol.
///
/// ```
/// use agent_rpc::{RpcData, RpcResponse};
///
/// let ok = RpcResponse::success(Some(1.into()), "get_last_assistant_text",
///     Some(RpcData::LastAssistantText { text: "hi".into() }));
/// assert_eq!(
///     serde_json::to_string(&ok).unwrap(),
///     r#"{"id":1,"type":"response","command":"get_last_assistant_text","success":true,"data":{"text":"hi"}}"#
/// );
/// let failed = RpcResponse::failure(None, "parse", "Failed to parse command: no \"type\"");
/// assert_eq!(
///     serde_json::to_string(&failed).unwrap(),
///     r#"{"type":"response","command":"parse","success":false,"error":"Failed to parse command: no \"type\""}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum RpcResponse {
    /// The command was carried out; `data` when it answers something.
    Success {
        /// The command's `id`, echoed when it had one.
        id: Option<Value>,
        /// The command's `type`.
        command: String,
        /// What it answers.
        data: Option<RpcData>,
    },
    /// The command failed, or the line was no command (`command: "parse"`).
    Failure {
        /// The command's `id`, echoed when it had one.
        id: Option<Value>,
        /// The command's `type`, or `parse`.
        command: String,
        /// Why, in words.
        error: String,
    },
}

impl RpcResponse {
    /// A successful answer.
    pub fn success(id: Option<Value>, command: impl Into<String>, data: Option<RpcData>) -> Self {
        RpcResponse::Success {
            id,
            command: command.into(),
            data,
        }
    }

    /// A failed answer.
    pub fn failure(
        id: Option<Value>,
        command: impl Into<String>,
        error: impl Into<String>,
    ) -> Self {
        RpcResponse::Failure {
            id,
            command: command.into(),
            error: error.into(),
        }
    }

    /// The answer to `command` from its handler's result.
    pub fn from_result(
        id: Option<Value>,
        command: impl Into<String>,
        result: Result<Option<RpcData>, String>,
    ) -> Self {
        match result {
            Ok(data) => Self::success(id, command, data),
            Err(error) => Self::failure(id, command, error),
        }
    }
}

/// The line as written: field order is Pi's.
#[derive(Serialize)]
struct Wire<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Value>,
    #[serde(rename = "type")]
    kind: &'static str,
    command: &'a str,
    success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a RpcData>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

impl Serialize for RpcResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let wire = match self {
            RpcResponse::Success { id, command, data } => Wire {
                id: id.as_ref(),
                kind: "response",
                command,
                success: true,
                data: data.as_ref(),
                error: None,
            },
            RpcResponse::Failure { id, command, error } => Wire {
                id: id.as_ref(),
                kind: "response",
                command,
                success: false,
                data: None,
                error: Some(error),
            },
        };
        wire.serialize(serializer)
    }
}

/// The `data` of a successful response, one variant per shape of answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RpcData {
    /// `get_state`.
    State(Box<RpcSessionState>),
    /// `get_messages`: the conversation.
    Messages {
        /// Every message of the agent.
        messages: Vec<Message>,
    },
    /// `set_model`: the model now in use.
    Model(Box<Model>),
    /// `get_available_models`.
    Models {
        /// The models `cycle_model` goes through.
        models: Vec<Model>,
    },
    /// `cycle_model`: the model switched to.
    #[serde(rename_all = "camelCase")]
    CycledModel {
        /// The model now in use.
        model: Box<Model>,
        /// The thinking level now in use.
        thinking_level: ThinkingLevel,
        /// Always `false`: no scoped model list here.
        is_scoped: bool,
    },
    /// `set_thinking_level`: the level set, as asked or clamped.
    ThinkingLevelSet {
        /// The level now in use.
        level: ThinkingLevel,
        /// The level asked for.
        requested: ThinkingLevel,
        /// Whether the model could not do the one asked for.
        clamped: bool,
    },
    /// `cycle_thinking_level`: the level now in use.
    ThinkingLevel {
        /// The level now in use.
        level: ThinkingLevel,
    },
    /// `compact`: `{summary, firstKeptEntryId, tokensBefore, details}`
    /// (see [`coding_agent::compaction::CompactionResult::to_json`]).
    Compaction(Value),
    /// `bash`: the user's command and its output.
    Bash(RpcBashResult),
    /// `get_session_stats`.
    Stats(Box<RpcSessionStats>),
    /// `new_session`, `switch_session`, `clone`: whether the switch was
    /// cancelled (never here).
    Cancelled {
        /// Always `false`.
        cancelled: bool,
    },
    /// `fork`: the text of the user message forked from.
    Forked {
        /// The message's text, for the client's editor.
        text: String,
        /// Always `false`.
        cancelled: bool,
    },
    /// `get_fork_messages`: the user messages of the current branch.
    ForkMessages {
        /// Each with its entry id.
        messages: Vec<RpcForkMessage>,
    },
    /// `get_last_assistant_text`.
    LastAssistantText {
        /// The last assistant message's text.
        text: String,
    },
    /// `get_commands`: the front end's own commands, then the templates
    /// and skills.
    Commands {
        /// In that order.
        commands: Vec<RpcCommandInfo>,
    },
    /// `export_html`: the page written.
    ExportPath {
        /// Where.
        path: std::path::PathBuf,
    },
}

/// `get_state`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcSessionState {
    /// The model in use.
    pub model: Model,
    /// The thinking level in use.
    pub thinking_level: ThinkingLevel,
    /// Whether a run is in progress.
    pub is_streaming: bool,
    /// Whether a compaction is in progress.
    pub is_compacting: bool,
    /// How steering messages are delivered.
    pub steering_mode: QueueMode,
    /// How follow-up messages are delivered.
    pub follow_up_mode: QueueMode,
    /// The session file (`null` when not recorded).
    pub session_file: Option<String>,
    /// The session's id (`null` when not recorded).
    pub session_id: Option<String>,
    /// Whether compaction runs by itself.
    pub auto_compaction_enabled: bool,
    /// Messages in the conversation.
    pub message_count: usize,
    /// Steering and follow-up messages waiting.
    pub pending_message_count: usize,
    /// The session's name, only when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
}

/// `get_session_stats`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcSessionStats {
    /// The session file (`null` when not recorded).
    pub session_file: Option<String>,
    /// The session's id (`null` when not recorded).
    pub session_id: Option<String>,
    /// User messages.
    pub user_messages: usize,
    /// Assistant messages.
    pub assistant_messages: usize,
    /// Tool calls the assistant made.
    pub tool_calls: usize,
    /// Tool results.
    pub tool_results: usize,
    /// All messages.
    pub total_messages: usize,
    /// Tokens over the session.
    pub tokens: RpcTokens,
    /// Dollars over the session.
    pub cost: f64,
    /// The dollars by kind of token.
    pub cost_breakdown: Cost,
}

/// Tokens of [`RpcSessionStats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcTokens {
    /// Input tokens not served from cache.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// The four together.
    pub total: u64,
}

/// `bash`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcBashResult {
    /// Stdout and stderr, as the bash tool returns them.
    pub output: String,
    /// The exit code, `null` when unknown.
    pub exit_code: Option<i64>,
    /// Whether it was cancelled (`abort_bash`).
    pub cancelled: bool,
    /// Whether the output was cut.
    pub truncated: bool,
    /// Where the whole output went, only when it was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
}

/// One entry of `get_fork_messages`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcForkMessage {
    /// The session entry to fork from.
    pub entry_id: String,
    /// The user message's text.
    pub text: String,
}

/// One entry of `get_commands`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RpcCommandInfo {
    /// The name without the slash.
    pub name: String,
    /// What it does.
    pub description: String,
    /// `builtin`, `prompt` or `skill`.
    pub source: String,
    /// Where a template or skill comes from; absent for built-ins.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub file: Option<RpcCommandFile>,
}

/// The file behind a template or skill command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcCommandFile {
    /// A template's `argument-hint` (`null` when it has none).
    pub argument_hint: Option<String>,
    /// The file and where it was found.
    pub source_info: RpcSourceInfo,
}

/// Where a command's file is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RpcSourceInfo {
    /// The file.
    pub path: std::path::PathBuf,
    /// `user` or `project` (the skills crate's `Origin`).
    pub scope: String,
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
