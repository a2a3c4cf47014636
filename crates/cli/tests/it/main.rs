//! The `coding-agent` binary's tests, one test binary: a module per
//! concern (`cli`, `sessions_cli`, `sandbox`, `remote`, the terminal UI in
//! `tui_*`, ...), picked with a name filter
//! (`cargo nextest run -p coding-agent-cli -E 'test(/^sandbox::/)'`).
//! Helpers shared by the modules are `test_support::cli`'s.

mod bedrock;
mod cli;
mod codemode;
mod export_cli;
mod extensions;
mod faults;
mod file_ownership;
mod mcp_client;
mod mcp_http;
mod mcp_server;
mod permission_paths;
mod permissions;
mod project_trust;
mod remote;
mod remote_ssh;
mod sandbox;
mod sessions_cli;
mod settings_trust;
mod skills_cli;
mod tui_harness;
mod tui_keyboard;
mod tui_models;
mod tui_pty;

/// The binary under test.
fn bin() -> &'static std::path::Path {
    assert_cmd::cargo::cargo_bin!("coding-agent")
}
