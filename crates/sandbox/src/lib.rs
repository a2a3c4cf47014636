//! # agent-sandbox
//!
//! The sandbox in one place: the policy ([`SandboxPolicy`]: which
//! directories the tools may read and write, which files they must never
//! see, whether commands reach the network), and its enforcement on the
//! operations seam of `agent-tool`:
//!
//! - [`ConfinedFileOps`]: every file access of a tool checked against the
//!   roots, the deny globs and the protected paths, on the file the kernel
//!   actually opens;
//! - [`SandboxedProcessOps`] (in [`commands`]): each command bash runs
//!   starts in namespaces of its own under a seccomp filter, Landlock where
//!   the kernel has it, with inherited descriptors closed and secret
//!   variables removed;
//! - [`SandboxedPrograms`]: the same confinement for other programs the
//!   agent starts (MCP servers).
//!
//! [`operations`] turns a policy into the [`Operations`] a tool set runs on:
//!
//! ```
//! use agent_sandbox::{SandboxMode, SandboxPolicy};
//!
//! let policy = SandboxPolicy::new(SandboxMode::ReadOnly, std::env::temp_dir());
//! let operations = agent_sandbox::operations(&policy).unwrap();
//! # let _ = operations;
//! ```
//!
//! Where the kernel cannot give a protection (no user namespaces, no
//! bubblewrap), commands are refused naming what is missing; nothing runs
//! unconfined in silence.

mod beneath;
pub mod commands;
mod confined;
pub mod landlock;
mod policy;

use std::sync::Arc;

use agent_tool::Operations;

pub use agent_tool::ops::SandboxDenied;
pub use commands::{
    BWRAP_PATH_VAR, CannotConfine, SandboxLease, SandboxedProcessOps, SandboxedPrograms,
    commands_can_be_confined, shut_down,
};
pub use confined::ConfinedFileOps;
pub use policy::{
    CREDENTIAL_WORDS, DEFAULT_DENY_READ, DEFAULT_SECRET_ENV, EnvFilter, PROTECTED_NAMES,
    STARTUP_PLACE_VARS, SandboxConfigError, SandboxLayer, SandboxMode, SandboxPolicy,
    SandboxSettings, SandboxSpec, agent_dirs, links_on_the_way,
};

/// The local file system and processes confined by `policy` (plain local
/// operations when the policy is off).
///
/// # Errors
/// A root that cannot be opened or a deny glob that does not parse.
pub fn operations(policy: &SandboxPolicy) -> std::io::Result<Operations> {
    if !policy.is_on() {
        return Ok(agent_local_ops::operations());
    }
    Ok(Operations {
        files: Arc::new(ConfinedFileOps::new(policy)?),
        processes: Arc::new(SandboxedProcessOps::new(policy.clone())),
    })
}
