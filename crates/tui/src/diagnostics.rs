//! Diagnostics (a program's log lines) while the UI owns the terminal:
//! written to stderr they would land in the middle of the live region, so
//! while the UI draws they are kept and shown as a transcript notice at
//! the next frame.
//!
//! A program points its logger here, e.g. `tracing_subscriber::fmt::layer()
//! .with_writer(agent_tui::diagnostics::writer)`.

use std::io::Write;
use std::sync::Mutex;

/// At most this many bytes wait; later lines are dropped (and counted).
pub const MAX_PENDING: usize = 64 * 1024;

struct Pending {
    text: String,
    dropped: usize,
}

static PENDING: Mutex<Pending> = Mutex::new(Pending {
    text: String::new(),
    dropped: 0,
});

/// Where diagnostics go: stderr, or the UI's notices while it draws.
#[derive(Debug, Default, Clone, Copy)]
pub struct DiagnosticsWriter;

/// A [`DiagnosticsWriter`] (the shape loggers' `with_writer` takes).
///
/// ```
/// use std::io::Write;
/// // No UI is drawing: this goes to stderr.
/// let _ = writeln!(agent_tui::diagnostics::writer(), "hello");
/// ```
pub fn writer() -> DiagnosticsWriter {
    DiagnosticsWriter
}

impl Write for DiagnosticsWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !crate::terminal::is_active() {
            return std::io::stderr().write(buf);
        }
        let mut pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
        if pending.text.len() + buf.len() > MAX_PENDING {
            pending.dropped += 1;
        } else {
            pending
                .text
                .push_str(&strip_ansi(&String::from_utf8_lossy(buf)));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if crate::terminal::is_active() {
            Ok(())
        } else {
            std::io::stderr().flush()
        }
    }
}

/// What was logged since the last call, if anything.
pub fn take() -> Option<String> {
    let mut pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
    if pending.text.is_empty() && pending.dropped == 0 {
        return None;
    }
    let mut text = std::mem::take(&mut pending.text);
    if pending.dropped > 0 {
        text.push_str(&format!("({} more log lines dropped)\n", pending.dropped));
        pending.dropped = 0;
    }
    Some(text)
}

/// `text` without CSI and OSC sequences (a logger's colours).
///
/// ```
/// assert_eq!(agent_tui::diagnostics::strip_ansi("\x1b[33mWARN\x1b[0m x"), "WARN x");
/// ```
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                // Parameters and intermediates, then one final byte.
                for c in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                // Up to BEL or ST.
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}
