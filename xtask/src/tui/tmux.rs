//! A private tmux server driving one program in one pane of a fixed size:
//! keys, pastes, resizes, the screen and the raw bytes the program wrote.
//!
//! Every server has a socket of its own (`tmux -L`) and no configuration
//! (`-f /dev/null`), so neither the user's tmux nor their `.tmux.conf` can
//! change what a test sees. Waiting is polling for what the test expects,
//! with a generous limit that only guards against a hang.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// How long any wait may take before the run counts as hung. Far beyond
/// what a busy 2-core machine needs; only a hang reaches it.
pub const HANG_LIMIT: Duration = Duration::from_secs(120);

/// How often a wait looks at the pane again.
const POLL: Duration = Duration::from_millis(40);

/// One tmux server with one window running one program.
pub struct Tmux {
    socket: String,
    raw: PathBuf,
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command(&["kill-server"]).output();
    }
}

impl Tmux {
    /// Starts a server whose only pane, `width` x `height`, runs `command`
    /// under `sh -c`. Everything the program writes is appended to `raw`
    /// (pipe-pane), which the command must wait for: it should start the
    /// program only once `raw` exists (as [`super::World::command`] does).
    pub fn start(name: &str, width: u16, height: u16, command: &str, raw: &Path) -> Result<Self> {
        let pipe = format!("cat >> '{}'", raw.display());
        Self::start_piped(name, (width, height), command, &pipe, raw)
    }

    /// [`Tmux::start`] with the program's bytes piped to `pipe`, a shell
    /// command that creates `raw`.
    pub fn start_piped(
        name: &str,
        (width, height): (u16, u16),
        command: &str,
        pipe: &str,
        raw: &Path,
    ) -> Result<Self> {
        static SERVERS: AtomicUsize = AtomicUsize::new(0);
        let socket = format!(
            "xtask-{name}-{}-{}",
            std::process::id(),
            SERVERS.fetch_add(1, Ordering::SeqCst)
        );
        let tmux = Tmux {
            socket,
            raw: raw.to_path_buf(),
        };
        let (w, h) = (width.to_string(), height.to_string());
        // The history limit is a pane's from its creation: the program's
        // window comes after it, and the window the server needed first
        // goes. The size is fixed: no client ever attaches, and none may
        // resize it.
        tmux.run(&["new-session", "-d", "-x", &w, "-y", &h, "sleep 86400"])?;
        tmux.run(&["set-option", "-g", "history-limit", "200000"])?;
        tmux.run(&["new-window", "-d", command])?;
        tmux.run(&["kill-window", "-t", "=0:0"])?;
        // Only now: tmux 3.3a's server dies making a window under it.
        tmux.run(&["set-option", "-g", "window-size", "manual"])?;
        tmux.run(&["pipe-pane", "-O", pipe])?;
        Ok(tmux)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .stdin(Stdio::null());
        c
    }

    /// Runs one tmux command; its stdout.
    fn run(&self, args: &[&str]) -> Result<String> {
        let out = self
            .command(args)
            .output()
            .with_context(|| format!("cannot run tmux {}", args.join(" ")))?;
        if !out.status.success() {
            bail!(
                "tmux {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Sets a server option (`set-option -s`), e.g. `extended-keys on`.
    pub fn set_server_option(&self, name: &str, value: &str) -> Result<()> {
        self.run(&["set-option", "-s", name, value]).map(drop)
    }

    /// Types `text` literally (no key names), as one `send-keys` call.
    pub fn type_text(&self, text: &str) -> Result<()> {
        self.run(&["send-keys", "-t", "=0:", "-l", text]).map(drop)
    }

    /// Presses one key by tmux's name for it (`Enter`, `Escape`, `C-c`).
    pub fn key(&self, key: &str) -> Result<()> {
        self.run(&["send-keys", "-t", "=0:", key]).map(drop)
    }

    /// Pastes `text` the way a terminal does: bracketed when the program
    /// asked for it (`paste-buffer -p`), new lines as carriage returns.
    pub fn paste(&self, text: &str) -> Result<()> {
        use std::io::Write;
        let mut child = self
            .command(&["load-buffer", "-b", "xtask", "-"])
            .stdin(Stdio::piped())
            .spawn()
            .context("cannot run tmux load-buffer")?;
        child
            .stdin
            .take()
            .context("tmux load-buffer has no stdin")?
            .write_all(text.as_bytes())?;
        if !child.wait()?.success() {
            bail!("tmux load-buffer failed");
        }
        self.run(&["paste-buffer", "-p", "-d", "-b", "xtask", "-t", "=0:"])
            .map(drop)
    }

    /// Resizes the window (and its only pane).
    pub fn resize(&self, width: u16, height: u16) -> Result<()> {
        let (w, h) = (width.to_string(), height.to_string());
        self.run(&["resize-window", "-t", "=0:", "-x", &w, "-y", &h])
            .map(drop)
    }

    /// The whole history and screen, wrapped lines joined
    /// (`capture-pane -p -J -S -`), trailing blank lines dropped.
    pub fn history(&self) -> Result<String> {
        let text = self.run(&["capture-pane", "-p", "-J", "-S", "-", "-t", "=0:"])?;
        Ok(text.trim_end_matches('\n').to_string() + "\n")
    }

    /// The visible screen only, one line per row.
    pub fn screen(&self) -> Result<String> {
        self.run(&["capture-pane", "-p", "-t", "=0:"])
    }

    /// A tmux format of the pane (`#{alternate_on}`, `#{pane_pid}`).
    pub fn format(&self, format: &str) -> Result<String> {
        Ok(self
            .run(&["display-message", "-p", "-t", "=0:", format])?
            .trim()
            .to_string())
    }

    /// The bytes the program has written so far.
    pub fn raw(&self) -> Result<Vec<u8>> {
        std::fs::read(&self.raw).with_context(|| format!("cannot read {}", self.raw.display()))
    }

    /// Polls the history until `done` finds what it wants in it; the hang
    /// limit fails the wait, showing `what` and the last screen.
    pub fn wait_for<T>(&self, what: &str, mut done: impl FnMut(&str) -> Option<T>) -> Result<T> {
        let started = Instant::now();
        loop {
            let history = self.history()?;
            if let Some(found) = done(&history) {
                return Ok(found);
            }
            if started.elapsed() > HANG_LIMIT {
                bail!(
                    "waited {}s for {what}; the pane shows:\n{}",
                    HANG_LIMIT.as_secs(),
                    self.screen().unwrap_or_default()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits until the history contains `text`.
    pub fn wait_for_text(&self, text: &str) -> Result<String> {
        self.wait_for(&format!("{text:?}"), |h| {
            h.contains(text).then(|| h.to_string())
        })
    }

    /// The process id of the pane's program's first child (the program a
    /// launcher shell started).
    pub fn child_pid(&self) -> Result<u32> {
        let shell: u32 = self.format("#{pane_pid}")?.parse()?;
        let path = format!("/proc/{shell}/task/{shell}/children");
        let children =
            std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        children
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .with_context(|| format!("the pane's shell {shell} has no child"))
    }
}
