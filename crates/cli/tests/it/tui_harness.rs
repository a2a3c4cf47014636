//! A pseudo-terminal for the terminal UI tests: `coding-agent` with the
//! scripted provider, keys typed, the screen read through vt100. Waits
//! are for conditions (generous timeouts), never for durations.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::json;

pub(crate) const ROWS: u16 = 24;
pub(crate) const COLS: u16 = 80;
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// The terminal the child draws on, and every byte it wrote.
pub(crate) struct Screen {
    pub(crate) parser: vt100::Parser,
    pub(crate) raw: Vec<u8>,
}

impl Screen {
    /// Scrollback and screen, row by row.
    pub(crate) fn text(&mut self) -> String {
        let len = self.parser.screen().scrollback_len();
        let mut rows = Vec::new();
        let mut off = len;
        while off > 0 {
            self.parser.screen_mut().set_scrollback(off);
            let n = off.min(usize::from(ROWS));
            rows.extend(self.parser.screen().rows(0, COLS).take(n));
            off -= n;
        }
        self.parser.screen_mut().set_scrollback(0);
        rows.extend(self.parser.screen().rows(0, COLS));
        rows.join("\n")
    }
}

pub(crate) struct Tui {
    pub(crate) screen: Arc<Mutex<Screen>>,
    /// The reader saw the end of the output (the child and its terminal
    /// are gone).
    drained: Arc<std::sync::atomic::AtomicBool>,
    pub(crate) writer: Box<dyn Write + Send>,
    pub(crate) child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Tui {
    pub(crate) fn start(dir: &std::path::Path, script: &std::path::Path) -> Tui {
        Tui::start_with(dir, script, "xterm-256color", &[])
    }

    pub(crate) fn start_with(
        dir: &std::path::Path,
        script: &std::path::Path,
        term: &str,
        args: &[&str],
    ) -> Tui {
        Tui::start_env(dir, script, term, args, &[])
    }

    /// [`Tui::start_with`] with more environment variables.
    pub(crate) fn start_env(
        dir: &std::path::Path,
        script: &std::path::Path,
        term: &str,
        args: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Tui {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("a pseudo-terminal");
        let mut cmd = CommandBuilder::new(crate::bin());
        cmd.args(["--provider", "scripted", "--script"]);
        cmd.arg(script);
        cmd.arg("--no-session");
        cmd.args(args);
        cmd.cwd(dir);
        cmd.env("TERM", term);
        cmd.env("CODING_AGENT_DIR", dir.join("agent"));
        cmd.env("HOME", dir);
        cmd.env_remove("OPENAI_API_KEY");
        cmd.env_remove("ANTHROPIC_API_KEY");
        cmd.env_remove("NO_COLOR");
        // No desktop and no SSH unless a test says so: `/copy` and a
        // selection reach the terminal (OSC 52), not a desktop clipboard.
        for var in [
            "DISPLAY",
            "WAYLAND_DISPLAY",
            "SSH_CONNECTION",
            "SSH_CLIENT",
            "SSH_TTY",
        ] {
            cmd.env_remove(var);
        }
        // The keyboard protocol is chosen from the terminal, not the tmux
        // a developer runs the tests in.
        cmd.env_remove("TMUX");
        cmd.env_remove("CODING_AGENT_KEYBOARD");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pair.slave.spawn_command(cmd).expect("the binary starts");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("a reader");
        let writer = pair.master.take_writer().expect("a writer");
        let nz = |n: u16| NonZeroU16::new(n).expect("non-zero");
        let screen = Arc::new(Mutex::new(Screen {
            parser: vt100::Parser::new(nz(ROWS), nz(COLS), 10_000),
            raw: Vec::new(),
        }));
        let sink = screen.clone();
        let drained = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = drained.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
                s.parser.process(&buf[..n]);
                s.raw.extend_from_slice(&buf[..n]);
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        Tui {
            screen,
            drained,
            writer,
            child,
            _master: pair.master,
        }
    }

    /// The UI with a model that answers `text` twice, logging each request
    /// to the returned file; waits for the first frame.
    pub(crate) fn answering_twice(dir: &std::path::Path, text: &str) -> (Tui, std::path::PathBuf) {
        let script = dir.join("script.jsonl");
        let turn = json!({"content":[{"type":"text","text":text}]});
        std::fs::write(&script, format!("{turn}\n{turn}\n")).unwrap();
        let log = dir.join("requests.jsonl");
        let log_arg = log.to_string_lossy().into_owned();
        let tui = Tui::start_with(dir, &script, "xterm-256color", &["--script-log", &log_arg]);
        tui.wait_for("the footer", |t| t.contains("scripted/"));
        (tui, log)
    }

    pub(crate) fn send(&mut self, bytes: &str) {
        self.writer
            .write_all(bytes.as_bytes())
            .expect("the pty takes input");
        self.writer.flush().expect("flushed");
    }

    /// Waits until the whole text (scrollback and screen) satisfies `ok`.
    pub(crate) fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let text = self.screen.lock().unwrap_or_else(|p| p.into_inner()).text();
            if ok(&text) {
                return text;
            }
            assert!(
                start.elapsed() < PATIENCE, // hang guard
                "waited for {what}; the terminal shows:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the bytes written so far satisfy `ok`.
    pub(crate) fn wait_raw(&self, what: &str, ok: impl Fn(&str) -> bool) {
        let start = Instant::now();
        loop {
            let raw = {
                let s = self.screen.lock().unwrap_or_else(|p| p.into_inner());
                String::from_utf8_lossy(&s.raw).into_owned()
            };
            if ok(&raw) {
                return;
            }
            assert!(
                start.elapsed() < PATIENCE, // hang guard
                "waited for {what}; the bytes:\n{raw:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends the child SIGTERM.
    pub(crate) fn terminate(&self) {
        let pid = self.child.process_id().expect("a pid");
        let pid =
            rustix::process::Pid::from_raw(i32::try_from(pid).expect("a pid fits")).expect("a pid");
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM sent");
    }

    /// Waits for the child to exit and for every byte it wrote to be read.
    pub(crate) fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let start = Instant::now();
        let mut exited = None;
        loop {
            if exited.is_none() {
                exited = self.child.try_wait().expect("the child's status");
            }
            if let Some(status) = &exited
                && self.drained.load(std::sync::atomic::Ordering::SeqCst)
            {
                return status.clone();
            }
            assert!(start.elapsed() < PATIENCE, "the UI did not exit"); // hang guard
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}
