//! The model-API rows: a whole agent run streaming a 1 MB answer in 4-byte
//! deltas through each wire API, beside the same answer over Chat
//! Completions, and a server asking to wait two days.
//!
//! Issue 31's targets are checked on each row and printed beside it: the
//! run takes at most 0.5 s (median) and its peak memory stays within 1.5x
//! of the Chat Completions run; the two-day `Retry-After` fails in under
//! 1 s.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Result, bail};
use serde_json::json;

use super::Bench;
use crate::stream_server::{APIS, StreamServer, spawn};

/// The answer's size and the size of each delta.
const ANSWER: usize = 1 << 20;
const DELTA: usize = 4;

/// `coding-agent -p` against `server`, speaking `api`.
fn agent(bin: &Path, api: &str, server: &StreamServer, dir: &Path) -> Command {
    let base = server.base();
    let base = match api {
        "openai-completions" | "openai-responses" => format!("{base}/v1"),
        "google-generative-ai" => format!("{base}/v1beta"),
        _ => base,
    };
    let mut c = Command::new(bin);
    c.args(["--api", api, "--base-url", &base, "--api-key", "bench"])
        .args(["--model", "bench", "--no-tools", "--no-session", "--cwd"])
        .arg(dir)
        .args(["-p", "write a long answer"])
        .env("CODING_AGENT_DIR", dir.join("no-agent-dir"));
    c
}

/// Runs `cmd` once and checks that the whole answer came out: a row that
/// measured a failing run would report nonsense.
fn answers_whole(mut cmd: Command, api: &str) -> Result<()> {
    let out = cmd.stdin(Stdio::null()).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || text.trim_end().len() != ANSWER {
        bail!(
            "{api}: the agent did not print the {ANSWER}-byte answer (exit {:?}, {} bytes): {}",
            out.status.code(),
            text.len(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

impl Bench {
    /// One row per API, each beside Chat Completions, and the capped
    /// `Retry-After`.
    pub(super) fn stream_rows(&mut self, bench_dir: &Path) -> Result<()> {
        let bin: PathBuf = self.bin.clone();
        let dir = bench_dir.to_path_buf();
        // Each server is a process of its own, so that the agent's peak
        // memory is the agent's alone.
        let chat = spawn("openai-completions", ANSWER, DELTA)?;
        for api in APIS {
            let figure = format!("agent -p: 1 MB in 4-byte deltas, {api}");
            if !self.wants(&figure) {
                continue;
            }
            let server = spawn(api, ANSWER, DELTA)?;
            answers_whole(agent(&bin, api, &server, &dir), api)?;
            let reference = (api != "openai-completions").then(|| {
                let (bin, dir) = (bin.clone(), dir.clone());
                let chat = chat.base();
                let cmd: Box<dyn FnMut() -> Command> = Box::new(move || {
                    let mut c = Command::new(&bin);
                    c.args(["--api", "openai-completions", "--base-url"])
                        .arg(format!("{chat}/v1"))
                        .args(["--api-key", "bench", "--model", "bench", "--no-tools"])
                        .args(["--no-session", "--cwd"])
                        .arg(&dir)
                        .args(["-p", "write a long answer"])
                        .env("CODING_AGENT_DIR", dir.join("no-agent-dir"));
                    c
                });
                ("the same over openai-completions".to_string(), cmd)
            });
            self.compare(
                &figure,
                || agent(&bin, api, &server, &dir),
                reference,
                "262,144 deltas over loopback, through the whole loop",
            )?;
            self.check_last(|row| {
                let secs = row["ours"]["median"].as_f64().unwrap_or(f64::NAN);
                let rss = row["oursPeakRssMb"].as_f64().unwrap_or(f64::NAN);
                let chat_rss = row["referencePeakRssMb"].as_f64().unwrap_or(rss);
                json!({
                    "at most 0.5 s": secs <= 0.5,
                    "peak memory within 1.5x of openai-completions": rss <= 1.5 * chat_rss,
                })
            });
        }
        let figure = "agent -p: a 429 asking to wait two days";
        if self.wants(figure) {
            let server = spawn("rate-limited", 0, 1)?;
            self.compare(
                figure,
                || agent(&bin, "openai-responses", &server, &dir),
                None,
                "beyond the 60 s cap the request fails at once, naming the delay",
            )?;
            self.check_last(
                |row| json!({"under 1 s": row["ours"]["max"].as_f64().is_some_and(|s| s < 1.0)}),
            );
        }
        Ok(())
    }

    /// Records on the last row which of its targets it met, and prints them.
    fn check_last(&mut self, targets: impl FnOnce(&serde_json::Value) -> serde_json::Value) {
        if let Some(row) = self.rows.last_mut() {
            let met = targets(row);
            println!("|   targets: {met}");
            row["targets"] = met;
        }
    }
}
