//! MCP rows of `cargo xtask bench`: tool calls through `coding-agent mcp`
//! (stdio), beside the same work through an independent MCP server (the
//! reference filesystem server, `@modelcontextprotocol/server-filesystem`,
//! when npm can install it) and beside our direct tool command.
//!
//! The client is a plain newline-delimited JSON-RPC peer written here, so the
//! figures are the servers' cost, not an SDK's.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// An MCP server on stdio, initialised.
pub struct StdioPeer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioPeer {
    /// Starts `command` and performs the initialize handshake.
    pub fn start(mut command: Command) -> Result<Self> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {command:?}"))?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        let mut peer = StdioPeer {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        peer.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "xtask-bench", "version": "1"}}),
        )?;
        peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(peer)
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.stdin.write_all(&line)?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Sends a request and waits for its response (notifications skipped).
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("the server closed its output during {method}");
            }
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message.get("id") == Some(&json!(id)) {
                if let Some(error) = message.get("error") {
                    bail!("{method} failed: {error}");
                }
                return Ok(message["result"].clone());
            }
        }
    }

    /// One `tools/call`; fails on an error result.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Result<Value> {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        if result["isError"] == true {
            bail!("{tool} returned an error: {}", result["content"]);
        }
        Ok(result)
    }
}

impl Drop for StdioPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Times `count` calls after `warmup` untimed ones; seconds per call.
pub fn time_calls(
    peer: &mut StdioPeer,
    tool: &str,
    arguments: &Value,
    warmup: usize,
    count: usize,
) -> Result<Vec<f64>> {
    for _ in 0..warmup {
        peer.call(tool, arguments.clone())?;
    }
    let mut samples = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        peer.call(tool, arguments.clone())?;
        samples.push(started.elapsed().as_secs_f64());
    }
    Ok(samples)
}

/// The reference filesystem MCP server's entry script, installed with npm
/// into `dir` when missing; `None` when npm or node is not available.
pub fn filesystem_server(dir: &Path) -> Option<PathBuf> {
    let script = dir.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    if script.is_file() {
        return Some(script);
    }
    std::fs::create_dir_all(dir).ok()?;
    println!(
        "==> installing @modelcontextprotocol/server-filesystem with npm (reference MCP server)"
    );
    let mut install = Command::new("npm")
        .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
        .arg(dir)
        .arg("@modelcontextprotocol/server-filesystem")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // Bounded: a registry that does not answer must not stall the bench.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        match install.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(_)) | Err(_) => return None,
            Ok(None) if Instant::now() > deadline => {
                let _ = install.kill();
                let _ = install.wait();
                return None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
    script.is_file().then_some(script)
}

/// `node SCRIPT ROOT`: the filesystem server allowed into `root`.
pub fn filesystem_command(script: &Path, root: &Path) -> Command {
    let mut c = Command::new("node");
    c.arg(script).arg(root);
    c
}

/// `coding-agent mcp --cwd ROOT`.
pub fn our_command(bin: &Path, root: &Path) -> Command {
    let mut c = Command::new(bin);
    c.args(["mcp", "--cwd"]).arg(root);
    c.env("CODING_AGENT_DIR", root.join(".no-agent-dir"));
    c
}
