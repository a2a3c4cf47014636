//! Fullscreen's part of the UI task: switching modes (`/tui`), drawing
//! a fullscreen frame, resizes and Ctrl+Z in either mode, and ending in
//! fullscreen.

use std::time::Instant;

use super::{FRAME_INTERVAL, RESIZE_DEBOUNCE, Ui};
use crate::error::TuiError;
use crate::fullscreen::FullscreenView;
use crate::inline::Resize;
use crate::mode::TuiMode;
use crate::terminal;

impl Ui {
    /// How the UI draws now.
    pub(super) fn mode(&self) -> TuiMode {
        match self.screen {
            Some(_) => TuiMode::Fullscreen,
            None => TuiMode::Inline,
        }
    }

    /// Switches how the UI draws. Into fullscreen: the live region is
    /// erased (the scrollback keeps what it holds) and the alternate screen
    /// entered. Back: the main screen returns as it was and the next frame
    /// writes what settled meanwhile.
    pub(super) fn set_mode(&mut self, mode: TuiMode) -> Result<(), TuiError> {
        if mode == self.mode() {
            return Ok(());
        }
        self.urgent = true;
        match mode {
            TuiMode::Fullscreen => {
                let bytes = self.renderer.erase_live();
                self.write(&bytes)?;
                terminal::enter_fullscreen()?;
                let (w, h) = (self.renderer.width(), self.renderer.height());
                let size = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
                let view = FullscreenView::new(size(w), size(h));
                self.screen = Some(view.with_clipboard(self.clipboard.clone()));
            }
            TuiMode::Inline => {
                terminal::leave_fullscreen()?;
                self.screen = None;
                self.renderer.invalidate();
                if std::mem::take(&mut self.inline_rebuild) {
                    self.rebuild_at = Some(Instant::now());
                }
            }
        }
        Ok(())
    }

    /// A fullscreen frame when one is due.
    pub(super) fn draw_fullscreen(&mut self, now: Instant) -> Result<(), TuiError> {
        let Some(screen) = &mut self.screen else {
            return Ok(());
        };
        // Inline mode's rebuild waits for inline mode.
        if self.rebuild_at.take().is_some() {
            self.inline_rebuild = true;
        }
        let due = self.urgent || (self.dirty && now >= self.last_frame + FRAME_INTERVAL);
        if due {
            let started = Instant::now();
            let bytes = screen.frame(&mut self.app, now);
            let built = started.elapsed();
            self.write(&bytes)?;
            self.frame_written(built);
            self.dirty = false;
            self.urgent = false;
            self.last_frame = now;
        }
        Ok(())
    }

    /// The UI ends in fullscreen: back on the main screen, how to come
    /// back (or what was said) is printed there.
    pub(super) fn leave_fullscreen_for_good(&mut self) {
        self.screen = None;
        if terminal::leave_fullscreen().is_ok() {
            let width = self.renderer.width();
            let file = self.session_file.clone();
            // A recorded session gets a resume hint: its cells are not
            // drawn for nothing (a long one would cost every cell).
            let history = match file {
                Some(_) => Vec::new(),
                None => self.app.transcript.take_history(&self.app.cx, width),
            };
            let _ = self.write(&crate::mode::exit_text(file.as_deref(), &history));
        }
    }

    /// The terminal's new size, for both modes (inline mode keeps count
    /// while fullscreen draws, so coming back needs no guess).
    pub(super) fn resize(&mut self, w: u16, h: u16) {
        if let Some(screen) = &mut self.screen {
            screen.resize(w, h);
            self.urgent = true;
        }
        match self.renderer.resize(w, h) {
            Resize::Width => self.rebuild_at = Some(Instant::now() + RESIZE_DEBOUNCE),
            Resize::Height | Resize::Reflowed => self.urgent = true,
            Resize::None => {}
        }
    }

    /// Ctrl+Z: the terminal restored (fullscreen left) before the stop,
    /// and after it the mode drawn again as it was.
    pub(super) fn suspend(&mut self) -> Result<(), TuiError> {
        if self.screen.is_none() {
            let bytes = self.renderer.erase_live();
            self.write(&bytes)?;
        }
        terminal::suspend()?;
        self.renderer.invalidate();
        if let Some(screen) = &mut self.screen {
            terminal::enter_fullscreen()?;
            screen.invalidate();
        }
        Ok(())
    }
}
