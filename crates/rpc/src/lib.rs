//! # agent-rpc
//!
//! Pi's RPC mode: an [`AgentSession`] driven by JSON lines, Pi's protocol, so an
//! editor or another program can embed the agent.
//!
//! - Input: one command a line, split on `\n` only (a trailing `\r` is
//!   dropped): `{"id"?, "type": "prompt", "message": "..."}`, `steer`,
//!   `follow_up`, `abort`, `new_session`, `get_state`, `get_messages`,
//!   `set_model`, `cycle_model`, `get_available_models`,
//!   `set_thinking_level`, `cycle_thinking_level`, `compact`, `set_auto_compaction`, `bash`, `abort_bash`,
//!   `get_session_stats`, `switch_session`, `fork`, `clone`, `get_fork_messages`,
//!   `get_last_assistant_text`, `set_session_name`, `set_steering_mode`,
//!   `set_follow_up_mode`, `get_commands`, `export_html`, and
//!   `extension_ui_response`.
//! - Output: `{"id", "type": "response", "command", "success", "data" |
//!   "error"}` for each command (a line that is not a command gets
//!   `"command": "parse"`), and the agent's events as in `--mode json`.
//! - A permission rule that asks sends `{"type": "extension_ui_request",
//!   "id", "method": "select", "title", "options": ["Allow", "Deny",
//!   "Always allow"]}` and waits for the client's `extension_ui_response`.
//! - Output is bounded: when the client reads slowly, streaming deltas
//!   (`message_update`, `tool_execution_update`) are dropped past a backlog;
//!   past [`OUTPUT_LIMIT`] bytes waiting for the client, no further command
//!   is read (so the client's writes block) and a run is paused until the
//!   client catches up. No other line is ever dropped. End of input aborts
//!   the run, waits for it (bounded) and returns.
//! - `abort` answers once the agent is idle, so a `prompt` sent after its
//!   response is accepted.

mod command;
mod lines;
mod output;
mod permission_prompt;
mod response;
mod server;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_ai::{ContentBlock, ImageContent, Message, Model, UserContent, UserMessage};
use agent_core::{AgentEvent, CancellationToken};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::bytes::{Bytes, BytesMut};
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder, FramedRead};

use agent_permissions::{PermissionAnswer, PermissionPrompt, PermissionRequest};
use agent_sessions::SessionManager;
use coding_agent::{AgentSession, ModelResolver};

pub use command::{RpcCommand, RpcParseError, StreamingBehavior};

/// Where new sessions go and which models `set_model` accepts.
#[derive(Clone, Default)]
pub struct RpcOptions {
    /// Directory of new sessions (`new_session`); `None`: the default one,
    /// or in memory when the session was not recorded.
    pub session_dir: Option<std::path::PathBuf>,
    /// The models `get_available_models` lists and `cycle_model` goes
    /// through. Without a [`RpcOptions::resolve_model`], also the only ones
    /// `set_model` takes; empty: any model id of the current provider.
    pub models: Vec<Model>,
    /// Finds the model `set_model` names (provider, model id) and a client
    /// that serves it, so that a switch may cross providers and APIs; the
    /// answer of `Err` is the command's error.
    pub resolve_model: Option<ModelResolver>,
    /// Writes the session as HTML for `export_html` (the page is drawn by a
    /// crate above this one, such as `agent-export`); `None`: the command
    /// answers that export is not available.
    pub export_html: Option<HtmlExporter>,
    /// The front end's own commands (name, description), listed first by
    /// `get_commands` with `"source": "builtin"`.
    pub builtin_commands: Vec<(String, String)>,
}

/// Writes a session as an HTML page at the given path, or at a default
/// one; answers the path written (see [`RpcOptions::export_html`]).
pub type HtmlExporter = Arc<
    dyn Fn(
            &agent_sessions::SessionManager,
            Option<&std::path::Path>,
        ) -> Result<std::path::PathBuf, String>
        + Send
        + Sync,
>;

impl std::fmt::Debug for RpcOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcOptions")
            .field("session_dir", &self.session_dir)
            .field("models", &self.models.len())
            .field("resolve_model", &self.resolve_model.is_some())
            .field("export_html", &self.export_html.is_some())
            .field("builtin_commands", &self.builtin_commands.len())
            .finish()
    }
}

use lines::{CommandLine, CommandLines, MAX_LINE};
use output::{Backlog, paced};
pub use output::{OUTPUT_LIMIT, RpcOutput};
pub use permission_prompt::RpcPermissionPrompt;
pub use response::{
    RpcBashResult, RpcCommandFile, RpcCommandInfo, RpcData, RpcForkMessage, RpcResponse,
    RpcSessionState, RpcSessionStats, RpcSourceInfo, RpcTokens,
};
pub use server::run_rpc;

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &str) -> CommandLine {
        CommandLine::Text(line.to_string())
    }

    #[tokio::test]
    async fn lines_are_split_bounded_and_read_lossily() {
        let input: &[u8] = b"{\"a\":1}\nabcdefghijkl\n\n0123456789\nbad\xff\xfe\r\nlast";
        let lines: Vec<CommandLine> = FramedRead::new(input, CommandLines::new(10))
            .map(|line| line.unwrap())
            .collect()
            .await;
        assert_eq!(
            lines,
            [
                text("{\"a\":1}"),
                CommandLine::TooLong,
                text(""),
                text("0123456789"),
                text("bad\u{fffd}\u{fffd}\r"),
                text("last"),
            ]
        );
    }

    /// The command sent in the same write as an over-long line is read
    /// without waiting for more input.
    #[tokio::test]
    async fn a_command_after_an_over_long_line_is_not_held_back() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        client
            .write_all(b"abcdefghijklmnopqrstuvwxyz\n{\"id\":1}\n")
            .await
            .unwrap();
        let mut lines = FramedRead::new(server, CommandLines::new(10));
        let mut next = async || {
            tokio::time::timeout(Duration::from_secs(5), lines.next())
                .await
                .expect("a line already sent was held back")
                .map(|line| line.unwrap())
        };
        assert_eq!(next().await, Some(CommandLine::TooLong));
        assert_eq!(next().await, Some(text("{\"id\":1}")));
        drop(client);
        assert_eq!(next().await, None);
    }
}
