//! Where the agent keeps its own files: the agent directory (global
//! settings, trust records, sessions) and, under it, the sessions of a
//! working directory.

use std::path::{Path, PathBuf};

/// The agent directory: `$CODING_AGENT_DIR`, else `$PI_CODING_AGENT_DIR`,
/// else `~/.pi/agent` (Pi's own, so a Pi user's files are found); `None`
/// without any of them.
pub fn agent_dir() -> Option<PathBuf> {
    for var in ["CODING_AGENT_DIR", "PI_CODING_AGENT_DIR"] {
        if let Some(dir) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(dir));
        }
    }
    std::env::home_dir().map(|h| h.join(".pi").join("agent"))
}

/// Where the sessions of `cwd` are kept: Pi's
/// `<agent dir>/sessions/--<cwd>--` ([`agent_sessions::default_session_dir`]
/// under [`agent_dir`]); `None` without an agent directory.
pub fn session_dir(cwd: &Path) -> Option<PathBuf> {
    agent_dir().map(|dir| agent_sessions::default_session_dir(&dir, cwd))
}
