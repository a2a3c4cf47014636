//! Path arguments as models write them: `@file` mentions, `~`, odd spaces,
//! `file://` URLs, relative paths.
//!
//! The one resolver lives in [`coding_agent::path`], so the permission rules
//! judge exactly the paths the tools open; this module re-exports it.

pub use coding_agent::path::*;
