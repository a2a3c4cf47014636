//! Helpers shared by the workspace's tests and benchmarks, one home instead
//! of a `common` folder per test crate and `#[path]` includes across
//! crates. Not published; each module is behind the feature of its name
//! (`corpus` and [`write()`] always there).

#[cfg(feature = "agent-loop")]
pub mod agent_loop;
pub mod corpus;
#[cfg(feature = "http-server")]
pub mod http_server;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "tool-call")]
pub mod tool_call;

use std::path::Path;

/// Writes `content` to `dir/rel`, creating parent directories.
///
/// # Panics
/// When the file cannot be written: a test cannot go on without it.
pub fn write(dir: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parent");
    }
    std::fs::write(path, content).expect("write test file");
}
