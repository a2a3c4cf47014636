//! The inline renderer: history goes into the terminal's own scrollback
//! once, above a live region at the bottom that is repainted row by row.
//!
//! Each frame is one string wrapped in synchronized output (`CSI ?2026h`
//! … `CSI ?2026l`). History lines are *logical* lines, written once and
//! left for the terminal to wrap; live rows are already at most the width
//! and are rewritten only when they changed (erased whole first, so a wide
//! glyph's width disagreement cannot leave stale cells). The scrollback is
//! never cleared (`CSI 3J` is never sent); the screen is cleared only after
//! a width change, and then only the history that was on the screen is
//! written again.

use std::collections::VecDeque;
use std::fmt::Write as _;

use agent_tool::StyledLine;

use crate::text;

/// How many rows' worth of columns one history line may take; the rest of
/// a longer line is cut (a 1 MB line costs what a screen shows).
pub const MAX_HISTORY_LINE_ROWS: usize = 200;

/// What one frame shows.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// Logical lines to add to the scrollback, in order.
    pub history: &'a [StyledLine],
    /// The live region's rows, each at most the width.
    pub live: &'a [StyledLine],
    /// Where the hardware cursor goes (row in `live`, column), or hidden.
    pub cursor: Option<(usize, usize)>,
}

/// What a resize asks of the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resize {
    /// Nothing changed.
    None,
    /// Only the height: the live region is drawn again, history stays.
    Height,
    /// The width: the screen will be cleared; the next frame's history
    /// must be the last [`InlineRenderer::lines_on_screen`] lines of the
    /// history drawn at the new width.
    Width,
    /// The width, on a terminal that rewraps its own lines: the history
    /// is left to it; only the live region is drawn again.
    Reflowed,
}

/// Whether this terminal rewraps its lines when its width changes (tmux,
/// kitty, iTerm2, WezTerm, Alacritty, VTE terminals, Konsole, Windows
/// Terminal, VS Code, Ghostty, foot do; xterm and the Linux console do not).
/// Unknown terminals are assumed to: most do.
pub fn terminal_reflows() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if set("XTERM_VERSION") && !set("TMUX") {
        return false;
    }
    !matches!(std::env::var("TERM").as_deref(), Ok("linux"))
}

/// Counters of what the renderer wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderStats {
    /// Frames written.
    pub frames: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Screen clears (width changes).
    pub clears: u64,
    /// History lines written.
    pub history_lines: u64,
}

/// The inline renderer's state: the terminal's size and what the live
/// region shows.
#[derive(Debug, Clone)]
pub struct InlineRenderer {
    width: usize,
    height: usize,
    /// Live rows as last drawn.
    prev: Vec<StyledLine>,
    /// The cursor's row in the live region.
    cursor_row: usize,
    /// Draw every live row at the next frame.
    full: bool,
    /// Clear the screen at the next frame.
    clear: bool,
    /// Rows of each history line still on the screen, oldest first.
    on_screen: VecDeque<usize>,
    /// Lines the last width change left on the screen (what to re-emit).
    lines_to_reemit: usize,
    /// Where the cursor was put by the last frame.
    last_cursor: Option<(usize, usize)>,
    /// The terminal rewraps its lines on a width change.
    reflow: bool,
    /// Screen rows the live region covers, from its top, as last drawn
    /// (after a rewrap, as the terminal rewrapped them).
    region_rows: usize,
    stats: RenderStats,
}

impl InlineRenderer {
    /// A renderer for a terminal of `width` x `height` cells.
    pub fn new(width: u16, height: u16) -> Self {
        InlineRenderer {
            width: usize::from(width.max(1)),
            height: usize::from(height.max(1)),
            prev: Vec::new(),
            cursor_row: 0,
            full: true,
            clear: false,
            on_screen: VecDeque::new(),
            lines_to_reemit: 0,
            last_cursor: None,
            reflow: false,
            region_rows: 0,
            stats: RenderStats::default(),
        }
    }

    /// The same renderer for a terminal that does (or does not) rewrap
    /// its lines on a width change (see [`terminal_reflows`]).
    pub fn reflowing(mut self, reflow: bool) -> Self {
        self.reflow = reflow;
        self
    }

    /// The width in columns.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The height in rows.
    pub fn height(&self) -> usize {
        self.height
    }

    /// What was written so far.
    pub fn stats(&self) -> RenderStats {
        self.stats
    }

    /// After a width change: how many history lines were on the screen, to
    /// be written again after the clear.
    pub fn lines_on_screen(&self) -> usize {
        self.lines_to_reemit
    }

    /// The terminal's new size.
    pub fn resize(&mut self, width: u16, height: u16) -> Resize {
        let (w, h) = (usize::from(width.max(1)), usize::from(height.max(1)));
        if w != self.width && self.reflow {
            // Each live row was a line of its own; the terminal rewrapped
            // it, and the cursor moved with its cell. Find the live
            // region's top from there and draw it again below; the
            // history is the terminal's.
            let rows_of = |line: &StyledLine| text::line_width(line).div_ceil(w).max(1);
            let row = self.cursor_row.min(self.prev.len().saturating_sub(1));
            let col = match self.last_cursor {
                Some((_, c)) => c,
                None => self
                    .prev
                    .get(row)
                    .map_or(0, |l| text::line_width(l).saturating_sub(1)),
            };
            self.cursor_row = self.prev[..row].iter().map(rows_of).sum::<usize>() + col / w;
            self.region_rows = self.prev.iter().map(rows_of).sum();
            self.width = w;
            self.height = h;
            self.full = true;
            return Resize::Reflowed;
        }
        if w != self.width {
            // Counted before the clear: what the screen held at the old width.
            self.lines_to_reemit = self.on_screen.len();
            self.on_screen.clear();
            self.width = w;
            self.height = h;
            self.clear = true;
            self.full = true;
            return Resize::Width;
        }
        if h != self.height {
            self.height = h;
            self.full = true;
            return Resize::Height;
        }
        Resize::None
    }

    /// Draws the live region again at the next frame (after a suspend).
    pub fn invalidate(&mut self) {
        self.full = true;
    }

    /// The bytes of one frame; empty when nothing changed.
    pub fn frame(&mut self, frame: Frame<'_>) -> String {
        let unchanged = !self.full
            && !self.clear
            && frame.history.is_empty()
            && frame.cursor == self.last_cursor
            && frame.live.len() <= self.height
            && frame.live == self.prev.as_slice();
        if unchanged {
            return String::new();
        }
        let mut out = String::from("\x1b[?2026h\x1b[?25l");
        // At most a screen of live rows, the bottom ones.
        let live = &frame.live[frame.live.len().saturating_sub(self.height)..];
        let cursor = frame.cursor.and_then(|(r, c)| {
            let skipped = frame.live.len() - live.len();
            r.checked_sub(skipped).map(|r| (r, c))
        });
        if self.clear {
            out.push_str("\x1b[H\x1b[2J");
            self.clear = false;
            self.stats.clears += 1;
            self.cursor_row = 0;
            self.region_rows = 0;
            self.prev.clear();
            self.full = true;
        } else {
            self.to_top(&mut out);
        }
        let mut row = 0;
        if self.full || !frame.history.is_empty() {
            // Everything is written over the old region, each row erased
            // as it is reached: an erase of the whole screen from its top
            // corner is what some terminals (tmux's `scroll-on-clear`)
            // take for a clear and copy into the scrollback.
            let mut written = 0;
            for line in frame.history {
                let line = text::clip(line, self.width * MAX_HISTORY_LINE_ROWS);
                let columns = text::line_width(&line);
                text::write_ansi(&mut out, &line);
                // The rest of its last row (a full row needs nothing, and
                // an erase there would take the last cell in some terminals).
                if columns == 0 || !columns.is_multiple_of(self.width) {
                    out.push_str("\x1b[K");
                }
                out.push_str("\r\n");
                written += columns.div_ceil(self.width).max(1);
                self.note_history(columns, live.len());
            }
            self.stats.history_lines += frame.history.len() as u64;
            for (i, line) in live.iter().enumerate() {
                if i > 0 {
                    out.push_str("\r\n");
                }
                out.push_str("\x1b[2K");
                text::write_ansi(&mut out, &text::clip(line, self.width));
            }
            written += live.len();
            row = live.len().saturating_sub(1);
            if self.region_rows > written && !live.is_empty() {
                // The old region was taller: what is left of it below.
                out.push_str("\r\n\x1b[J\x1b[A");
            }
            self.full = false;
        } else {
            for (i, line) in live.iter().enumerate() {
                if self.prev.get(i) == Some(line) {
                    continue;
                }
                move_rows(&mut out, row, i);
                row = i;
                out.push_str("\x1b[2K");
                text::write_ansi(&mut out, &text::clip(line, self.width));
            }
            if self.prev.len() > live.len() {
                // Rows that are gone: erased below the last one.
                if live.is_empty() {
                    move_rows(&mut out, row, 0);
                    row = 0;
                    out.push_str("\r\x1b[J");
                } else {
                    let last = live.len() - 1;
                    move_rows(&mut out, row, last);
                    row = last;
                    out.push_str("\r\n\x1b[J\x1b[A");
                }
            }
        }
        self.trim_on_screen(live.len());
        self.region_rows = live.len();
        self.prev = live.to_vec();
        match cursor {
            Some((r, c)) if r < live.len() => {
                move_rows(&mut out, row, r);
                row = r;
                let _ = write!(out, "\r\x1b[{}G\x1b[?25h", c.min(self.width - 1) + 1);
            }
            _ => {}
        }
        self.cursor_row = row;
        self.last_cursor = frame.cursor;
        out.push_str("\x1b[?2026l");
        self.stats.frames += 1;
        self.stats.bytes += out.len() as u64;
        out
    }

    /// The bytes that erase the live region, leaving the cursor where it
    /// began (before handing the terminal to something else).
    pub fn erase_live(&mut self) -> String {
        let mut out = String::new();
        self.to_top(&mut out);
        // Row by row (see `frame`: no erase of the screen from its corner).
        for i in 0..self.region_rows {
            if i > 0 {
                out.push_str("\r\n");
            }
            out.push_str("\x1b[2K");
        }
        move_rows(&mut out, self.region_rows.saturating_sub(1), 0);
        self.prev.clear();
        self.cursor_row = 0;
        self.region_rows = 0;
        self.full = true;
        self.last_cursor = None;
        out
    }

    fn to_top(&self, out: &mut String) {
        out.push('\r');
        if self.cursor_row > 0 {
            let _ = write!(out, "\x1b[{}A", self.cursor_row);
        }
    }

    /// Keeps count of which history lines are still on the screen.
    fn note_history(&mut self, columns: usize, live_rows: usize) {
        let rows = columns.div_ceil(self.width).max(1);
        self.on_screen.push_back(rows);
        self.trim_on_screen(live_rows);
    }

    /// Forgets the history lines a live region of `live_rows` pushed into
    /// the scrollback (it only ever pushes: a shrinking region leaves them
    /// there).
    fn trim_on_screen(&mut self, live_rows: usize) {
        let room = self.height.saturating_sub(live_rows);
        let mut total: usize = self.on_screen.iter().sum();
        // A line partly on the screen stays counted (written again whole
        // rather than lost).
        while let Some(&front) = self.on_screen.front() {
            if total - front >= room && total > room {
                self.on_screen.pop_front();
                total -= front;
            } else {
                break;
            }
        }
    }
}

/// Moves the cursor from live row `from` to `to` (down by newlines, which
/// scroll at the bottom of the screen; up by `CSI A`).
fn move_rows(out: &mut String, from: usize, to: usize) {
    if to > from {
        for _ in from..to {
            out.push_str("\r\n");
        }
    } else if to < from {
        let _ = write!(out, "\r\x1b[{}A", from - to);
    } else {
        out.push('\r');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(texts: &[&str]) -> Vec<StyledLine> {
        texts.iter().map(|t| StyledLine::plain(*t)).collect()
    }

    #[test]
    fn only_changed_rows_are_written() {
        let mut r = InlineRenderer::new(20, 10);
        let first = r.frame(Frame {
            history: &[],
            live: &rows(&["status", "> ab"]),
            cursor: Some((1, 4)),
        });
        assert!(first.contains("status"));
        let second = r.frame(Frame {
            history: &[],
            live: &rows(&["status", "> abc"]),
            cursor: Some((1, 5)),
        });
        assert!(!second.contains("status"), "{second:?}");
        assert!(second.contains("> abc"));
        assert!(second.starts_with("\x1b[?2026h") && second.ends_with("\x1b[?2026l"));
    }

    #[test]
    fn never_clears_the_scrollback_and_clears_the_screen_only_for_width() {
        let mut r = InlineRenderer::new(20, 10);
        let mut all = String::new();
        all += &r.frame(Frame {
            history: &rows(&["a", "b"]),
            live: &rows(&["x"]),
            cursor: None,
        });
        assert_eq!(r.resize(20, 5), Resize::Height);
        all += &r.frame(Frame {
            history: &[],
            live: &rows(&["x"]),
            cursor: None,
        });
        assert!(!all.contains("\x1b[2J"));
        assert_eq!(r.resize(10, 5), Resize::Width);
        assert_eq!(r.lines_on_screen(), 2);
        all += &r.frame(Frame {
            history: &rows(&["a", "b"]),
            live: &rows(&["x"]),
            cursor: None,
        });
        assert!(!all.contains("\x1b[3J"));
        assert_eq!(r.stats().clears, 1);
    }

    #[test]
    fn a_reflowing_terminal_keeps_its_history_and_the_live_region_moves_up() {
        let mut r = InlineRenderer::new(20, 10).reflowing(true);
        let _ = r.frame(Frame {
            history: &rows(&["a"]),
            live: &rows(&["x".repeat(20).as_str(), "> ab", "footer"]),
            cursor: Some((1, 4)),
        });
        // At 10 columns the first row takes two; the caret's row is below.
        assert_eq!(r.resize(10, 10), Resize::Reflowed);
        let out = r.frame(Frame {
            history: &[],
            live: &rows(&["x".repeat(10).as_str(), "> ab", "footer"]),
            cursor: Some((1, 4)),
        });
        assert!(
            out.starts_with("\x1b[?2026h\x1b[?25l\r\x1b[2A\x1b[2K"),
            "{out:?}"
        );
        assert!(!out.contains("\x1b[2J"));
        // The old region took four rows, the new one three: the rest goes.
        assert!(out.contains("footer\r\n\x1b[J\x1b[A"), "{out:?}");
        assert_eq!(r.stats().clears, 0);
    }
}
