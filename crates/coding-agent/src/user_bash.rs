//! A shell command the user runs (`!cmd` in the terminal UI, RPC `bash`):
//! through the session's own shell tool, so the same operations (local,
//! sandboxed or remote) run it; recorded in the session as Pi's
//! `bashExecution` message and, unless excluded (`!!cmd`), added to the
//! context the model sees next.

use agent_ai::Message;
use agent_core::CancellationToken;
use agent_tool::ToolCallContext;
use serde_json::{Value, json};

use crate::AgentSession;
use agent_sessions::{EntryKind, bash_execution_text};

/// What a user's command gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserBash {
    /// Its output (stdout and stderr, as the tool returns it).
    pub output: String,
    /// Its exit code, when known.
    pub exit_code: Option<i64>,
    /// It was cancelled.
    pub cancelled: bool,
    /// The output was cut (the whole is in `full_output_path`).
    pub truncated: bool,
    /// Where the whole output went, when it was cut.
    pub full_output_path: Option<String>,
}

impl AgentSession {
    /// Runs `command` for the user with the session's shell tool (the
    /// active tool that declares a command argument) and records it. With
    /// `exclude_from_context` the record is kept out of what the model sees.
    ///
    /// # Errors
    /// No registered tool runs shell commands.
    pub async fn run_user_bash(
        &self,
        command: &str,
        exclude_from_context: bool,
        cancel: CancellationToken,
    ) -> Result<UserBash, String> {
        let bash = self
            .registry()
            .definitions()
            .into_iter()
            .find(|d| d.command_argument().is_some())
            .ok_or("no tool that runs shell commands is registered")?;
        let argument = bash.command_argument().unwrap_or("command").to_string();
        let mut call = ToolCallContext::new("user_bash").with_extensions(self.tool_extensions());
        call.cancel = cancel.clone();
        let mut args = serde_json::Map::new();
        args.insert(argument, Value::from(command));
        let outcome = bash.execute(Value::Object(args), call).await;
        let (output, details) = match &outcome {
            Ok(result) => (result.text_content(), result.details.clone()),
            Err(e) => (e.to_string(), Value::Null),
        };
        let exit_code = match &outcome {
            Ok(_) => Some(0),
            Err(_) => output
                .rsplit("Command exited with code ")
                .next()
                .filter(|_| output.contains("Command exited with code "))
                .and_then(|n| n.trim().parse::<i64>().ok()),
        };
        let result = UserBash {
            full_output_path: details
                .get("fullOutputPath")
                .and_then(Value::as_str)
                .map(str::to_string),
            truncated: details.get("truncation").is_some_and(|t| !t.is_null()),
            cancelled: cancel.is_cancelled(),
            exit_code,
            output,
        };
        self.record_user_bash(command, &result, exclude_from_context);
        Ok(result)
    }

    fn record_user_bash(&self, command: &str, result: &UserBash, exclude_from_context: bool) {
        let mut record = json!({
            "role": "bashExecution", "command": command, "output": result.output,
            "exitCode": result.exit_code, "cancelled": result.cancelled,
            "truncated": result.truncated, "timestamp": agent_ai::now_millis(),
        });
        if let Some(path) = &result.full_output_path {
            record["fullOutputPath"] = json!(path);
        }
        if exclude_from_context {
            record["excludeFromContext"] = json!(true);
        }
        if let Some(store) = self.session_manager()
            && let Err(e) =
                store
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .append(EntryKind::OtherMessage {
                        message: record.clone(),
                    })
        {
            tracing::warn!(error = %e, "cannot record the command");
        }
        if !exclude_from_context {
            let mut messages = self.agent().messages();
            messages.push(Message::user(bash_execution_text(&record)));
            self.agent().replace_messages(messages);
        }
    }
}
