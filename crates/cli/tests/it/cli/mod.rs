//! The `coding-agent` binary as a process.

mod modes;
mod processes;
mod tool_command;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::agent_loop::tool_call;
use test_support::cli::script;
use test_support::http_server;

/// The binary with no credentials, an agent directory that does not
/// exist, and no input.
fn agent() -> std::process::Command {
    test_support::cli::command(
        crate::bin(),
        &std::env::temp_dir().join("coding-agent-cli-test-no-such-dir"),
    )
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
