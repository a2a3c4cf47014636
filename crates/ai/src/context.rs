//! What one model request carries.

use serde::{Deserialize, Serialize};

use crate::message::Message;
use crate::tool::Tool;

/// Everything one model request needs: system prompt, transcript and tools.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    /// The system prompt, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The conversation so far.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Tools offered to the model.
    #[serde(default)]
    pub tools: Vec<Tool>,
}
