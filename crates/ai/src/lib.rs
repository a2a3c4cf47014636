//! # agent-ai
//!
//! The model-facing vocabulary of the workspace: messages and content blocks with
//! Pi's wire names, tool descriptions, argument validation with Pi's scalar
//! coercions, the streaming [`ModelClient`] trait, and providers.
//!
//! Everything here is independent of any agent loop or tool: a program that only
//! wants to talk to a model can use this crate alone.
//!
//! ```
//! use agent_ai::{ContentBlock, Message};
//! let msg = Message::user("list the files");
//! let json = serde_json::to_value(&msg).unwrap();
//! assert_eq!(json["role"], "user");
//! assert_eq!(json["content"][0], serde_json::json!({"type": "text", "text": "list the files"}));
//! # let _ = ContentBlock::text("x");
//! ```

mod content;
mod context;
pub mod handoff;
mod message;
mod model;
mod partial;
pub mod providers;
mod registry;
mod stream;
mod thinking;
mod tool;
mod validation;

pub use content::{ContentBlock, ImageContent, TextContent, ThinkingContent, ToolCall};
pub use context::Context;
pub use message::{
    AssistantMessage, Cost, Message, StopReason, ToolResultMessage, Usage, UserContent,
    UserMessage, now_millis,
};
pub use model::{MaxTokensField, Model, ModelCompat, ModelCost};
pub use partial::{MessageEdit, PartialMessage};
pub use registry::{
    ApiKeySource, BUILTIN_MODELS_DATE, ModelRegistry, RegistryError, nearest_matches,
};
pub use stream::{
    AssistantEventStream, AssistantMessageEvent, CacheRetention, ModelClient, ReasoningEffort,
    StreamOptions, complete,
};
pub use thinking::{THINKING_LEVELS, ThinkingBudgets, ThinkingLevel, UnknownThinkingLevel};
pub use tool::{ConstrainedSampling, StrictMode, Tool};
pub use validation::{
    ArgumentValidator, ValidationError, coerce_to_schema, validate_arguments,
    validate_tool_arguments,
};
