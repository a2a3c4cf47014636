//! [`RpcCommand`]: the commands a client sends, as typed values.

use agent_ai::ImageContent;
use serde::Deserialize;

/// What to do with a `prompt` that arrives while the agent is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum StreamingBehavior {
    /// Deliver it after the current batch of tool calls.
    Steer,
    /// Deliver it when the agent would stop.
    FollowUp,
}

/// One command of Pi's RPC protocol, by its `type`. Unknown fields are
/// ignored, as Pi does; a missing or mistyped field is an error naming it.
///
/// ```
/// use agent_rpc::{RpcCommand, RpcParseError};
/// let command = RpcCommand::parse(&serde_json::json!({"type": "bash", "command": "ls"})).unwrap();
/// assert!(matches!(command, RpcCommand::Bash { ref command } if command == "ls"));
/// let err = RpcCommand::parse(&serde_json::json!({"type": "fly"})).unwrap_err();
/// assert_eq!(err.to_string(), "Unknown command: fly");
/// let err = RpcCommand::parse(&serde_json::json!({"type": "bash"})).unwrap_err();
/// assert_eq!(err.to_string(), "bash: missing field `command`");
/// assert!(matches!(err, RpcParseError::Invalid { ref kind, .. } if kind == "bash"));
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RpcCommand {
    /// Starts a run with a user message (or queues it while one runs).
    Prompt {
        /// The text.
        message: String,
        /// Images sent with it (`null` or absent: none).
        #[serde(default)]
        images: Option<Vec<ImageContent>>,
        /// What to do while the agent is running.
        #[serde(default, rename = "streamingBehavior")]
        streaming_behavior: Option<StreamingBehavior>,
    },
    /// Queues a steering message.
    Steer {
        /// The text.
        message: String,
        /// Images sent with it (`null` or absent: none).
        #[serde(default)]
        images: Option<Vec<ImageContent>>,
    },
    /// Queues a follow-up message.
    FollowUp {
        /// The text.
        message: String,
        /// Images sent with it (`null` or absent: none).
        #[serde(default)]
        images: Option<Vec<ImageContent>>,
    },
    /// Stops the run; answered once the agent is idle.
    Abort,
    /// Starts a new session (file).
    NewSession {
        /// The session this one continues from.
        #[serde(default, rename = "parentSession")]
        parent_session: Option<String>,
    },
    /// The session's state.
    GetState,
    /// The transcript.
    GetMessages,
    /// Switches the model.
    SetModel {
        /// The provider.
        provider: String,
        /// The model id.
        #[serde(rename = "modelId")]
        model_id: String,
    },
    /// Moves to the next of the models `set_model` can switch to.
    CycleModel,
    /// The models `set_model` can switch to.
    GetAvailableModels,
    /// Sets the thinking level (clamped to what the model can do).
    SetThinkingLevel {
        /// off, minimal, low, medium, high or xhigh.
        level: agent_ai::ThinkingLevel,
    },
    /// Moves to the model's next thinking level.
    CycleThinkingLevel,
    /// Summarises the older conversation now.
    Compact {
        /// Steers the summary.
        #[serde(default, rename = "customInstructions")]
        custom_instructions: Option<String>,
    },
    /// Turns automatic compaction on or off.
    SetAutoCompaction {
        /// On or off.
        enabled: bool,
    },
    /// Runs a command for the user with the session's shell tool.
    Bash {
        /// The command line.
        command: String,
    },
    /// Cancels the running `bash` command.
    AbortBash,
    /// Token and message counts.
    GetSessionStats,
    /// Continues in another session file.
    SwitchSession {
        /// Its path.
        #[serde(rename = "sessionPath")]
        session_path: String,
    },
    /// Forks the session at a user message.
    Fork {
        /// The entry.
        #[serde(rename = "entryId")]
        entry_id: String,
    },
    /// The user messages a fork can start from.
    GetForkMessages,
    /// Continues in a copy of the session up to its current entry.
    Clone,
    /// The last assistant message's text.
    GetLastAssistantText,
    /// Names the session.
    SetSessionName {
        /// The name.
        name: String,
    },
    /// How steering messages are delivered.
    SetSteeringMode {
        /// The mode.
        mode: agent_core::QueueMode,
    },
    /// How follow-up messages are delivered.
    SetFollowUpMode {
        /// The mode.
        mode: agent_core::QueueMode,
    },
    /// The slash commands the client may offer.
    GetCommands,
    /// Writes the session as an HTML page (see
    /// [`RpcOptions::export_html`](super::RpcOptions::export_html)).
    ExportHtml {
        /// Where; absent: the exporter's default name.
        #[serde(default, rename = "outputPath")]
        output_path: Option<String>,
    },
}

impl RpcCommand {
    /// Reads a command from its JSON object.
    ///
    /// # Errors
    /// `Unknown command: TYPE`, or `TYPE: what is wrong` for a field that
    /// is missing or of the wrong type.
    pub fn parse(value: &serde_json::Value) -> Result<Self, RpcParseError> {
        let kind = value
            .get("type")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        RpcCommand::deserialize(value).map_err(|e| {
            // Only the `type` itself: a field's value outside its choices
            // (`"mode": "fast"`) is a mistyped field of a known command.
            if e.to_string()
                .starts_with(&format!("unknown variant `{kind}`"))
            {
                RpcParseError::Unknown(kind.to_string())
            } else {
                RpcParseError::Invalid {
                    kind: kind.to_string(),
                    message: e.to_string(),
                }
            }
        })
    }
}

/// A JSON object that is not a command; the text is what Pi answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RpcParseError {
    /// `type` names no command (or is missing).
    #[error("Unknown command: {0}")]
    Unknown(String),
    /// A field of the command is missing or of the wrong type.
    #[error("{kind}: {message}")]
    Invalid {
        /// The command's `type`.
        kind: String,
        /// What is wrong, naming the field.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use agent_core::QueueMode;
    use serde_json::json;

    use super::{RpcCommand, RpcParseError};

    #[test]
    fn queue_modes_use_pis_names() {
        let parse =
            |mode: &str| RpcCommand::parse(&json!({"type": "set_follow_up_mode", "mode": mode}));
        assert!(matches!(
            parse("one-at-a-time"),
            Ok(RpcCommand::SetFollowUpMode {
                mode: QueueMode::OneAtATime
            })
        ));
        assert!(matches!(
            parse("all"),
            Ok(RpcCommand::SetFollowUpMode {
                mode: QueueMode::All
            })
        ));
        let wrong = parse("oneAtATime");
        assert!(
            matches!(wrong, Err(RpcParseError::Invalid { .. })),
            "{wrong:?}"
        );
    }
}
