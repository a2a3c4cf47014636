//! The terminal's modes: raw input, bracketed paste, focus reports and a
//! keyboard protocol ([`KeyboardProtocol`]) on entry, the alternate screen
//! and mouse reports in fullscreen; all of them restored on exit, on drop,
//! on a panic (a hook) and before the process stops for Ctrl+Z or ends for
//! a signal.
//!
//! Restoring is idempotent and global, so every one of those paths can
//! call [`restore`] without knowing whether another did.

use std::cell::Cell;
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crate::error::TuiError;
use crate::keyboard::KeyboardProtocol;

/// Whether our modes are on.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether the alternate screen and mouse reports are on (fullscreen).
static FULLSCREEN: AtomicBool = AtomicBool::new(false);
/// The keyboard protocol asked for (see [`protocol_code`]).
static KEYBOARD: AtomicU8 = AtomicU8::new(0);

fn protocol_code(p: KeyboardProtocol) -> u8 {
    match p {
        KeyboardProtocol::Legacy => 0,
        KeyboardProtocol::Kitty => 1,
        KeyboardProtocol::ModifyOtherKeys => 2,
    }
}

/// The keyboard protocol in force (legacy when the UI is not drawing).
pub fn keyboard_protocol() -> KeyboardProtocol {
    match KEYBOARD.load(Ordering::SeqCst) {
        1 => KeyboardProtocol::Kitty,
        2 => KeyboardProtocol::ModifyOtherKeys,
        _ => KeyboardProtocol::Legacy,
    }
}

/// Enters the alternate screen and turns on mouse reports: buttons and
/// motion while a button is held (1002, less traffic than every motion),
/// in SGR form (1006, no column limit).
pub const ENTER_FULLSCREEN: &str = "\x1b[?1049h\x1b[?1002h\x1b[?1006h";
/// Turns mouse reports off and leaves the alternate screen (the main
/// screen and its scrollback come back as they were).
pub const LEAVE_FULLSCREEN: &str = "\x1b[?1006l\x1b[?1002l\x1b[?1049l";

/// Turns on bracketed paste and focus reports.
const ENTER_MODES: &str = "\x1b[?2004h\x1b[?1004h";
/// Turns off what `ENTER_MODES` turned on, ends a synchronized update
/// that a panic may have cut short, resets colours and shows the cursor.
pub const RESTORE_MODES: &str = "\x1b[?2026l\x1b[?2004l\x1b[?1004l\x1b[0m\x1b[?25h";

thread_local! {
    /// Set while a tool's renderer runs under [`catch_renderer_panic`]: its
    /// panic is the renderer's, not the UI's, so the terminal stays as is.
    static IN_RENDERER: Cell<bool> = const { Cell::new(false) };
}

/// Our terminal modes while alive; restored when dropped.
#[derive(Debug)]
pub struct TerminalGuard(());

impl TerminalGuard {
    /// Raw mode, bracketed paste, focus reports and the keyboard protocol
    /// this terminal has ([`KeyboardProtocol::detect`]); installs the
    /// panic hook.
    pub fn enter() -> Result<Self, TuiError> {
        TerminalGuard::enter_with(KeyboardProtocol::detect())
    }

    /// As [`TerminalGuard::enter`], with the keyboard protocol chosen by
    /// the caller.
    pub fn enter_with(keyboard: KeyboardProtocol) -> Result<Self, TuiError> {
        install_panic_hook();
        KEYBOARD.store(protocol_code(keyboard), Ordering::SeqCst);
        enter_modes()?;
        Ok(TerminalGuard(()))
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

fn enter_modes() -> Result<(), TuiError> {
    crossterm::terminal::enable_raw_mode().map_err(TuiError::Terminal)?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = std::io::stdout();
    let bytes = format!("{ENTER_MODES}{}", keyboard_protocol().enable());
    out.write_all(bytes.as_bytes())
        .and_then(|()| out.flush())
        .map_err(TuiError::Terminal)
}

/// Puts the terminal back as it was (idempotent; a no-op when our modes
/// are off).
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout();
    let keyboard = keyboard_protocol();
    if FULLSCREEN.swap(false, Ordering::SeqCst) {
        if keyboard.per_screen() {
            let _ = out.write_all(keyboard.disable().as_bytes());
        }
        let _ = out.write_all(LEAVE_FULLSCREEN.as_bytes());
    }
    let _ = out.write_all(keyboard.disable().as_bytes());
    let _ = out.write_all(RESTORE_MODES.as_bytes());
    let _ = out.flush();
    if let Err(e) = crossterm::terminal::disable_raw_mode() {
        tracing::warn!(error = %e, "cannot leave raw mode");
    }
}

/// Enters fullscreen (the alternate screen, mouse reports); undone by
/// [`leave_fullscreen`] or any path of [`restore`].
pub fn enter_fullscreen() -> Result<(), TuiError> {
    FULLSCREEN.store(true, Ordering::SeqCst);
    let mut out = std::io::stdout();
    // The alternate screen has a keyboard state of its own.
    let bytes = format!("{ENTER_FULLSCREEN}{}", keyboard_protocol().enable());
    out.write_all(bytes.as_bytes())
        .and_then(|()| out.flush())
        .map_err(TuiError::Terminal)
}

/// Leaves fullscreen (a no-op when it is off).
pub fn leave_fullscreen() -> Result<(), TuiError> {
    if !FULLSCREEN.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    let keyboard = keyboard_protocol();
    let pop = if keyboard.per_screen() {
        keyboard.disable()
    } else {
        ""
    };
    let mut out = std::io::stdout();
    out.write_all(format!("{pop}{LEAVE_FULLSCREEN}").as_bytes())
        .and_then(|()| out.flush())
        .map_err(TuiError::Terminal)
}

/// Whether our modes are on (the UI is drawing).
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// Ctrl+Z: restores the terminal (fullscreen included), stops the
/// process, and on `SIGCONT` turns the modes back on (the caller enters
/// fullscreen again if it was on, and redraws).
pub fn suspend() -> Result<(), TuiError> {
    restore();
    let me = rustix::process::getpid();
    if let Err(e) = rustix::process::kill_process(me, rustix::process::Signal::TSTP) {
        tracing::warn!(error = %e, "cannot suspend");
    }
    enter_modes()
}

/// The panic hook: restores the terminal, then lets the previous hook
/// report. A panic inside a renderer run by [`catch_renderer_panic`] is
/// only logged: the UI goes on.
pub fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_RENDERER.with(Cell::get) {
                tracing::warn!(panic = %info, "a renderer panicked; drawing the default view");
                return;
            }
            restore();
            previous(info);
        }));
    });
}

/// Runs `render`; a panic becomes `None` and leaves the terminal alone.
///
/// ```
/// let out = agent_tui::terminal::catch_renderer_panic(|| -> u8 { panic!("bad renderer") });
/// assert_eq!(out, None);
/// ```
pub fn catch_renderer_panic<T>(render: impl FnOnce() -> T) -> Option<T> {
    install_panic_hook();
    let was = IN_RENDERER.with(|f| f.replace(true));
    let out = std::panic::catch_unwind(AssertUnwindSafe(render)).ok();
    IN_RENDERER.with(|f| f.set(was));
    out
}
