//! Landlock: kernel-enforced limits on what a thread may write. The
//! confined file operations write from a fresh thread that restricts
//! itself first, a second line of defence behind beneath-resolution.
//! (Commands are confined by [`commands`](crate::commands) instead.)

use std::io;
use std::path::PathBuf;

use landlock::{
    ABI, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, path_beneath_rules,
};

/// Set to `1` to behave as if the kernel had no Landlock; it can only
/// remove this second line of defence, never widen what the first allows.
pub const SIMULATE_NO_LANDLOCK_VAR: &str = "CODING_AGENT_SIMULATE_NO_LANDLOCK";

/// The newest ABI we ask for; older kernels are told apart by what they refuse.
const ABI_WRITE: ABI = ABI::V3;

fn simulated_absence() -> bool {
    std::env::var_os(SIMULATE_NO_LANDLOCK_VAR).is_some_and(|v| v == "1")
}

/// Restricts the calling thread (and what it spawns) to writing only below
/// `dirs`, never creating device nodes; reads stay unrestricted. Used by
/// the confined file operations, where the user-space checks already hold:
/// an old kernel only loses this second line of defence.
pub(crate) fn restrict_thread_writes(dirs: &[PathBuf]) -> io::Result<()> {
    if simulated_absence() {
        return Ok(());
    }
    let handled = AccessFs::from_write(ABI_WRITE);
    // Everything handled is granted below the dirs except device nodes.
    let granted = handled & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let created = Ruleset::default()
        .handle_access(handled)
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(dirs, granted)));
    match created.and_then(|r| r.restrict_self()) {
        Ok(status) if status.ruleset == RulesetStatus::NotEnforced => {
            tracing::debug!("Landlock not available: file writes rely on beneath-resolution alone");
            Ok(())
        }
        Ok(_) => Ok(()),
        Err(e) => Err(io::Error::other(format!(
            "Sandbox: cannot restrict the write: {e}"
        ))),
    }
}
