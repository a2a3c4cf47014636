//! The system clipboard, beside OSC 52, for what a mouse selection copies
//! in fullscreen.
//!
//! **When.** The OSC 52 escape is always written (up to
//! [`OSC52_MAX_BYTES`]): it is the only way that works over SSH and in
//! most terminals, and a terminal that does not know it ignores it. A
//! system clipboard program is run *as well* when the session has a local
//! display of its own ([`SystemClipboard::detect`]): `WAYLAND_DISPLAY` set
//! gives `wl-copy`, `DISPLAY` set gives `xclip -selection clipboard` (or
//! `xsel --clipboard --input`), macOS gives `pbcopy`; each only if it is
//! found on `PATH`. Never over SSH (`SSH_CONNECTION`, `SSH_CLIENT` or
//! `SSH_TTY` set): the display there is the remote machine's, or one
//! forwarded back slowly, and the terminal's OSC 52 already reaches the
//! user's own clipboard. So a terminal without OSC 52 (or tmux without
//! `set-clipboard on`) on a desktop still copies, and nothing is spawned
//! where no desktop is.
//!
//! **How, and why not a crate.** The program is run directly (no shell,
//! fixed arguments), the text on its stdin, on a thread of its own so the
//! UI never waits; it gets [`COPY_TIMEOUT`] to take the text and exit and
//! is killed after. `arboard` would be the crate, but even with its default
//! features off its X11 backend compiles `x11rb` (and Wayland support
//! `wl-clipboard-rs` with its protocol crates): a good deal of the cold
//! build on a two-core machine for what four small programs, present on
//! any desktop that has a clipboard, already do. It would also have to
//! stay alive to serve an X selection, which `xclip` and `wl-copy` do by
//! forking themselves.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest text sent through OSC 52: terminals drop or cut longer
/// escapes, and some stall on them (the same bound as `/copy`'s).
pub const OSC52_MAX_BYTES: usize = 512 * 1024;

/// How long a clipboard program gets to take the text and exit.
pub const COPY_TIMEOUT: Duration = Duration::from_secs(5);

/// A clipboard program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClipboardProgram {
    /// The program, as found on `PATH`.
    pub program: PathBuf,
    /// Its arguments (the text goes to its stdin).
    pub args: Vec<String>,
}

/// Whether (and with what) copied text also goes to the system
/// clipboard; OSC 52 is written either way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SystemClipboard {
    /// Only OSC 52 (the default of a view made without one, and what
    /// [`SystemClipboard::detect`] gives without a local display).
    #[default]
    Off,
    /// This program as well.
    Program(ClipboardProgram),
}

impl SystemClipboard {
    /// What this process's environment calls for (see the module's
    /// documentation).
    pub fn from_env() -> Self {
        Self::detect(|name| std::env::var_os(name), cfg!(target_os = "macos"))
    }

    /// What an environment read through `var` calls for; `macos` tells
    /// whether `pbcopy` is the desktop's clipboard.
    ///
    /// ```
    /// use agent_tui::clipboard::SystemClipboard;
    /// // No display, or over SSH: nothing is spawned.
    /// assert_eq!(SystemClipboard::detect(|_| None, false), SystemClipboard::Off);
    /// let ssh = |n: &str| match n {
    ///     "DISPLAY" => Some(":0".into()),
    ///     "SSH_CONNECTION" => Some("10.0.0.1 22 10.0.0.2 22".into()),
    ///     _ => None,
    /// };
    /// assert_eq!(SystemClipboard::detect(ssh, false), SystemClipboard::Off);
    /// ```
    pub fn detect(var: impl Fn(&str) -> Option<OsString>, macos: bool) -> Self {
        let set = |name: &str| var(name).is_some_and(|v| !v.is_empty());
        if ["SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY"]
            .iter()
            .any(|n| set(n))
        {
            return SystemClipboard::Off;
        }
        let mut candidates: Vec<(&str, &[&str])> = Vec::new();
        if set("WAYLAND_DISPLAY") {
            candidates.push(("wl-copy", &[]));
        }
        if set("DISPLAY") {
            candidates.push(("xclip", &["-selection", "clipboard"]));
            candidates.push(("xsel", &["--clipboard", "--input"]));
        }
        if macos {
            candidates.push(("pbcopy", &[]));
        }
        let path = var("PATH").unwrap_or_default();
        candidates
            .into_iter()
            .find_map(|(name, args)| {
                find_program(&path, name).map(|program| ClipboardProgram {
                    program,
                    args: args.iter().map(|a| a.to_string()).collect(),
                })
            })
            .map_or(SystemClipboard::Off, SystemClipboard::Program)
    }

    /// Hands `text` to the program, if there is one, on a thread of its
    /// own; whether one was started. A failure (the program missing,
    /// failing or out of time) is logged.
    pub fn copy(&self, text: &str) -> bool {
        let SystemClipboard::Program(program) = self else {
            return false;
        };
        let program = program.clone();
        let text = text.to_string();
        let spawned = std::thread::Builder::new()
            .name("clipboard".into())
            .spawn(move || {
                if let Err(e) = run(&program, &text, COPY_TIMEOUT) {
                    tracing::warn!(
                        "copying to the clipboard with {}: {e}",
                        program.program.display()
                    );
                }
            });
        match spawned {
            Ok(handle) => {
                let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
                running.retain(|h| !h.is_finished());
                running.push(handle);
                true
            }
            Err(e) => {
                tracing::warn!("copying to the clipboard: no thread ({e})");
                false
            }
        }
    }
}

/// Copies still going on (their threads).
static RUNNING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// Waits for the copies still going on (each ends within
/// [`COPY_TIMEOUT`]): called before the process exits, so text selected
/// just before quitting still reaches the clipboard.
pub fn wait_for_copies() {
    let running = std::mem::take(&mut *RUNNING.lock().unwrap_or_else(|p| p.into_inner()));
    for handle in running {
        let _ = handle.join();
    }
}

/// `name` in one of `path`'s directories, as an executable file.
fn find_program(path: &std::ffi::OsStr, name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Runs `program` with `text` on its stdin; at most `timeout`, then it is
/// killed.
fn run(program: &ClipboardProgram, text: &str, timeout: Duration) -> Result<(), String> {
    let mut child = Command::new(&program.program)
        .args(&program.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    // Written from another thread: a program that does not read would
    // otherwise hold this one past the timeout once the pipe is full.
    let writer = child.stdin.take().map(|mut stdin| {
        let text = text.to_string();
        std::thread::spawn(move || stdin.write_all(text.as_bytes()))
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer in {} s; stopped", timeout.as_secs()));
            }
            Err(e) => return Err(e.to_string()),
        }
    };
    let written = writer.map(|w| w.join());
    if !status.success() {
        return Err(format!("it failed ({status})"));
    }
    match written {
        Some(Ok(Err(e))) => Err(format!("it did not take the text ({e})")),
        _ => Ok(()),
    }
}

impl ClipboardProgram {
    /// Its file name (`xclip`).
    pub fn name(&self) -> &str {
        self.program
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fake_bin(dir: &Path, name: &str, body: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn the_display_picks_the_program_found_on_path() {
        let dir = tempfile::tempdir().unwrap();
        fake_bin(dir.path(), "xsel", "cat >/dev/null");
        fake_bin(dir.path(), "wl-copy", "cat >/dev/null");
        let path = dir.path().as_os_str().to_owned();
        let env = |vars: &'static [(&'static str, &'static str)]| {
            let path = path.clone();
            move |n: &str| {
                if n == "PATH" {
                    return Some(path.clone());
                }
                vars.iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        // X11: no xclip here, so xsel.
        let x11 = SystemClipboard::detect(env(&[("DISPLAY", ":0")]), false);
        let SystemClipboard::Program(p) = x11 else {
            panic!("{x11:?}")
        };
        assert_eq!(
            (p.name(), p.args.as_slice()),
            (
                "xsel",
                &["--clipboard".to_string(), "--input".to_string()][..]
            )
        );
        let wayland = SystemClipboard::detect(
            env(&[("WAYLAND_DISPLAY", "wayland-0"), ("DISPLAY", ":0")]),
            false,
        );
        assert!(
            matches!(&wayland, SystemClipboard::Program(p) if p.name() == "wl-copy"),
            "{wayland:?}"
        );
        // No display, an empty one, or SSH: off.
        assert_eq!(
            SystemClipboard::detect(env(&[]), false),
            SystemClipboard::Off
        );
        assert_eq!(
            SystemClipboard::detect(env(&[("DISPLAY", "")]), false),
            SystemClipboard::Off
        );
        assert_eq!(
            SystemClipboard::detect(env(&[("DISPLAY", ":0"), ("SSH_TTY", "/dev/pts/3")]), false),
            SystemClipboard::Off
        );
        // macOS without pbcopy on this PATH: off.
        assert_eq!(
            SystemClipboard::detect(env(&[]), true),
            SystemClipboard::Off
        );
    }

    #[test]
    fn a_program_gets_the_text_and_one_that_hangs_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.txt");
        fake_bin(dir.path(), "copier", &format!("cat > '{}'", out.display()));
        fake_bin(dir.path(), "hang", "exec sleep 600");
        fake_bin(dir.path(), "fail", "exit 3");
        let program = |name: &str| ClipboardProgram {
            program: dir.path().join(name),
            args: Vec::new(),
        };
        run(&program("copier"), "héllo", Duration::from_secs(60)).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "héllo");
        let e = run(&program("fail"), "x", Duration::from_secs(60)).unwrap_err();
        assert!(e.contains("failed"), "{e}");
        // A zero timeout: stopped at the first look, whatever the speed.
        let e = run(&program("hang"), "x", Duration::ZERO).unwrap_err();
        assert!(e.contains("stopped"), "{e}");
        // Off spawns nothing.
        assert!(!SystemClipboard::Off.copy("x"));
    }
}
