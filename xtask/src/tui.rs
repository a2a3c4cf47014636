//! The terminal UI driven from outside, in tmux: `cargo xtask tui-e2e`
//! (end-to-end checks on the debug binary with the scripted provider) and
//! `cargo xtask tui-bench` (our UI beside Pi's, measured in the same
//! harness).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::json;

pub mod bench;
pub mod e2e;
mod pi;
mod sanity;
pub mod stamp;
mod tmux;

pub use tmux::Tmux;

/// The program tmux needs, and how a machine gets it.
pub const TMUX_INSTALL: &str = "apt-get install -y tmux";

/// Whether `tmux` can be run.
pub fn has_tmux() -> bool {
    std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// One scripted turn: `text` streamed in deltas of `delta_chars`, each
/// after `pace_ms` (see the scripted provider's `paceMs`).
pub fn turn(text: &str, pace_ms: u64, delta_chars: usize) -> String {
    json!({
        "content": [{"type": "text", "text": text}],
        "paceMs": pace_ms,
        "deltaChars": delta_chars,
    })
    .to_string()
}

/// A private world for one run of the binary: its own HOME, agent dir,
/// project, session dir, script and the raw bytes it writes.
pub struct World {
    /// The temporary directory holding everything.
    pub dir: PathBuf,
}

impl World {
    /// A fresh world under `parent/name`, `script` the scripted turns
    /// (JSON Lines).
    pub fn new(parent: &Path, name: &str, script: &[String]) -> Result<Self> {
        let dir = parent.join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("cannot clear {}", dir.display()))?;
        }
        for sub in ["home", "agent", "project", "sessions"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        std::fs::write(dir.join("script.jsonl"), script.join("\n") + "\n")?;
        Ok(World { dir })
    }

    /// Where the pane's raw bytes go.
    pub fn raw(&self) -> PathBuf {
        self.dir.join("raw.bytes")
    }

    /// The requests the scripted model received, one JSON array of
    /// messages a line.
    pub fn requests(&self) -> Result<Vec<serde_json::Value>> {
        let path = self.dir.join("requests.jsonl");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        text.lines()
            .map(|l| serde_json::from_str(l).context("a request line is not JSON"))
            .collect()
    }

    /// The pane's command: waits for the byte log (so no byte goes
    /// unrecorded), runs `program args` in the private HOME, then reports
    /// the exit status and the terminal's state for [`sanity`]'s checks.
    pub fn command(&self, program: &Path, args: &[String], env: &[(&str, String)]) -> String {
        let q = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
        let d = |sub: &str| q(&self.dir.join(sub).display().to_string());
        let mut line = format!(
            "while [ ! -e {raw} ]; do sleep 0.02; done; cd {project} && env HOME={home} \
             CODING_AGENT_DIR={agent}",
            raw = d("raw.bytes"),
            project = d("project"),
            home = d("home"),
            agent = d("agent"),
        );
        for (k, v) in env {
            line.push_str(&format!(" {k}={}", q(v)));
        }
        line.push(' ');
        line.push_str(&q(&program.display().to_string()));
        for a in args {
            line.push(' ');
            line.push_str(&q(a));
        }
        line.push_str("; ");
        line.push_str(sanity::REPORT);
        line
    }

    /// Our binary's arguments: the scripted provider on this world's
    /// script, sessions in this world.
    pub fn scripted_args(&self) -> Vec<String> {
        let p = |sub: &str| self.dir.join(sub).display().to_string();
        vec![
            "--provider".into(),
            "scripted".into(),
            "--script".into(),
            p("script.jsonl"),
            "--script-log".into(),
            p("requests.jsonl"),
            "--session-dir".into(),
            p("sessions"),
        ]
    }
}

/// The workspace's target directory.
pub fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}
