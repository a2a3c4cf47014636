//! An interactive terminal UI for an [`AgentSession`](coding_agent::AgentSession).
//!
//! One task owns the UI's state ([`app::App`]); its inputs are terminal
//! events (keys, bracketed paste, resize, focus), the session's agent
//! events, permission questions and a frame timer ([`ui::run`]).
//!
//! Inline mode: settled transcript cells go into the terminal's own
//! scrollback once, in order, as logical lines the terminal wraps; below
//! them a live region (the streaming tail, running tools, queued
//! messages, a spinner, the editor or a permission question, the footer)
//! is repainted by changed rows only ([`inline`]). Every frame is one write
//! in synchronized output; the scrollback is never cleared.
//!
//! ```no_run
//! # async fn demo(session: coding_agent::AgentSession) -> Result<(), agent_tui::TuiError> {
//! let exit = agent_tui::run(session, agent_tui::TuiOptions::default()).await?;
//! println!("{exit:?}");
//! # Ok(())
//! # }
//! ```
//!
//! Tools are drawn only through their own renderers (the session's
//! [`ToolRegistry`](coding_agent::ToolRegistry)); this crate names no tool.

pub mod app;
pub mod cell;
pub mod clipboard;
pub mod completion;
pub mod diagnostics;
pub mod dialog;
pub mod diff;
pub mod editor;
mod error;
pub mod footer;
pub mod frame_stats;
pub mod fullscreen;
pub mod highlight;
pub mod inline;
pub mod keybindings;
pub mod keyboard;
pub mod markdown;
pub mod mode;
pub mod model_scope;
pub mod notify;
pub mod palette;
pub mod paste;
pub mod permission;
pub mod pi_theme;
pub mod pickers;
pub mod search;
pub mod selection;
pub mod selector;
pub mod shell;
pub mod terminal;
pub mod text;
mod theme;
pub mod transcript;
pub mod ui;

pub use error::TuiError;
pub use mode::TuiMode;
pub use permission::{PermissionQuestions, TuiPermissionPrompt, permission_channel};
pub use theme::{ThemeChoice, UiTheme};
pub use ui::{SlashCommands, TuiExit, TuiOptions, run, session_status};
