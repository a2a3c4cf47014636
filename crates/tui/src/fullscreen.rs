//! Fullscreen mode: the transcript in a scrollable view on the alternate
//! screen, above the same dock as inline mode (queued messages, spinner,
//! editor or permission question, footer).
//!
//! The view draws only the rows it shows. Where cells are is a lazy
//! [`Layout`]: a cell is drawn and wrapped (through its own per-width
//! cache) only when it is shown, scrolled over, searched or selected;
//! the others hold estimated heights. So entering fullscreen, a scroll
//! and a resize cost the rows on the screen (and the rows scrolled over)
//! plus a few numbers per cell, whatever the session's length.
//!
//! The view follows the tail until the user scrolls up, and again once
//! they scroll back to the bottom. A scrolled view is anchored to a cell
//! and a row of it, so output arriving below, a width change, an estimate
//! corrected above, or Ctrl+O expanding every tool result keeps the cell
//! the user looks at at the top. Search (Ctrl+S) and mouse selection live
//! here too; each frame is one synchronized write of the rows that
//! changed.

use std::fmt::Write as _;
use std::time::Instant;

use agent_tool::StyledLine;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::app::App;
use crate::clipboard::SystemClipboard;
use crate::keybindings::KeyAction;
use crate::search::Search;
use crate::selection::{self, Selection};
use crate::text;

mod layout;
mod mouse;
pub use layout::{Layout, Position, gap};

/// Rows one wheel notch scrolls.
pub const WHEEL_ROWS: usize = 3;

/// The top of a scrolled view: a place in the document, and the width and
/// the height of its cell's block when it was set (to keep the same part
/// of a cell after a width change).
#[derive(Debug, Clone, Copy)]
struct Anchor {
    at: Position,
    width: usize,
    block: usize,
}

/// One end of a mouse selection: a place in the document and a column.
/// Kept by cell, not by document row, so an estimate corrected above
/// does not move it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Point {
    at: Position,
    col: usize,
}

/// A mouse selection, and whether the button is still down.
#[derive(Debug, Clone, Copy)]
struct Drag {
    anchor: Point,
    head: Point,
    down: bool,
}

/// The fullscreen view's state.
#[derive(Debug)]
pub struct FullscreenView {
    width: usize,
    height: usize,
    /// The top of a scrolled view; `None` follows the tail.
    anchor: Option<Anchor>,
    /// The open search.
    search: Option<Search>,
    /// The mouse selection.
    selection: Option<Drag>,
    /// Where cells are (heights measured or estimated).
    layout: Layout,
    /// The view's height and top in the last frame (keys and the mouse
    /// act on what is shown).
    view_rows: usize,
    top: usize,
    top_at: Position,
    /// Rows as last drawn, the caret as last placed.
    prev: Vec<StyledLine>,
    prev_cursor: Option<(usize, usize)>,
    /// Bytes to send with the next frame (the clipboard escape).
    pending: String,
    /// Where a selection is copied besides OSC 52.
    clipboard: SystemClipboard,
    /// What the last Ctrl+O set every tool result to.
    expanded: bool,
}

impl FullscreenView {
    /// A view of a `width` x `height` screen, following the tail; a
    /// selection is copied through OSC 52 only (see
    /// [`FullscreenView::with_clipboard`]).
    pub fn new(width: u16, height: u16) -> Self {
        FullscreenView {
            width: usize::from(width.max(1)),
            height: usize::from(height.max(1)),
            anchor: None,
            search: None,
            selection: None,
            layout: Layout::new(),
            view_rows: 0,
            top: 0,
            top_at: Position::default(),
            prev: Vec::new(),
            prev_cursor: None,
            pending: String::new(),
            clipboard: SystemClipboard::Off,
            expanded: false,
        }
    }

    /// Copies selections to `clipboard` as well as through OSC 52.
    pub fn with_clipboard(mut self, clipboard: SystemClipboard) -> Self {
        self.clipboard = clipboard;
        self
    }

    /// The screen's new size (the next frame is drawn whole).
    pub fn resize(&mut self, width: u16, height: u16) {
        let width = usize::from(width.max(1));
        if width != self.width {
            // Rows are other rows at another width.
            self.selection = None;
        }
        self.width = width;
        self.height = usize::from(height.max(1));
        self.invalidate();
    }

    /// Draws every row at the next frame.
    pub fn invalidate(&mut self) {
        self.prev.clear();
        self.prev_cursor = None;
    }

    /// Whether the view follows the tail.
    pub fn follows(&self) -> bool {
        self.anchor.is_none()
    }

    /// The document row at the top of the view in the last frame (rows
    /// above it that were never shown count by estimate).
    pub fn top(&self) -> usize {
        self.top
    }

    /// The open search, if any.
    pub fn search(&self) -> Option<&Search> {
        self.search.as_ref()
    }

    /// Where cells are, as far as the view measured them.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The top of the view: the anchor, or the last frame's top.
    fn view_top(&self) -> Position {
        self.anchor.map_or(self.top_at, |a| a.at)
    }

    fn set_anchor(&mut self, at: Position) {
        self.anchor = Some(Anchor {
            at,
            width: self.width,
            block: self.layout.block(at.cell),
        });
    }

    /// Scrolls up (negative) or down by `rows`, drawing only the cells
    /// scrolled into; at the bottom the view follows the tail again.
    pub fn scroll(&mut self, app: &mut App, rows: isize) {
        self.layout.sync(app, self.width);
        if self.layout.is_empty() {
            return;
        }
        match self.layout.walk(app, self.view_top(), rows) {
            Some(at) => self.set_anchor(at),
            None => self.anchor = None,
        }
    }

    /// A key meant for the view (scrolling, search, Ctrl+O); `false`
    /// leaves it to the editor.
    pub fn key(&mut self, key: KeyEvent, app: &mut App) -> bool {
        if key.kind == KeyEventKind::Release {
            return false;
        }
        self.layout.sync(app, self.width);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(search) = &mut self.search {
            match search.key(key) {
                crate::search::Outcome::Handled => return true,
                crate::search::Outcome::Step(older) => {
                    self.step_search(app, older);
                    return true;
                }
                crate::search::Outcome::Close => {
                    self.search = None;
                    return true;
                }
                crate::search::Outcome::Ignored => {}
            }
        }
        if app.keys.matches(KeyAction::ToolsExpand, &key) {
            self.expand_all(app);
            return true;
        }
        let page = self.view_rows.saturating_sub(1).max(1) as isize;
        match key.code {
            KeyCode::PageUp => self.scroll(app, -page),
            KeyCode::PageDown => self.scroll(app, page),
            KeyCode::Up if shift => self.scroll(app, -1),
            KeyCode::Down if shift => self.scroll(app, 1),
            KeyCode::Home if ctrl => self.set_anchor(Position::default()),
            KeyCode::End if ctrl => self.anchor = None,
            KeyCode::Char('s') if ctrl => self.search = Some(Search::default()),
            KeyCode::Esc if self.selection.is_some() && !app.is_running() => {
                self.selection = None;
            }
            _ => {
                // Typing drops a finished selection.
                if self.selection.is_some_and(|s| !s.down) {
                    self.selection = None;
                }
                return false;
            }
        }
        true
    }

    /// Ctrl+O: every tool result expanded, or at the next press collapsed
    /// (inline mode toggles the results still in its live region; here
    /// every cell is on the screen's side). The cell at the top of a
    /// scrolled view stays there: the anchor is a cell, and a row of it
    /// that a collapse took away gives way to the cell's first row. Cells
    /// out of view are drawn again only when shown.
    fn expand_all(&mut self, app: &mut App) {
        self.expanded = !self.expanded;
        app.transcript.set_expanded_all(self.expanded);
        self.selection = None;
    }

    /// Moves to the next older (or newer) match and shows it.
    fn step_search(&mut self, app: &mut App, older: bool) {
        let Some(search) = &mut self.search else {
            return;
        };
        let Some((cell, row)) = search.step(app, &mut self.layout, older) else {
            return;
        };
        // Search measured every cell: these rows agree with each other.
        let at = Position {
            cell,
            offset: gap(cell) + row,
        };
        let (found, top) = (self.layout.row(at), self.layout.row(self.view_top()));
        if found < top || found >= top + self.view_rows {
            // Shown half a view down.
            let half = (self.view_rows / 2) as isize;
            let at = self.layout.walk(app, at, -half).unwrap_or(at);
            self.set_anchor(at);
        }
    }

    /// The place shown at the top, measuring what is shown: the anchor
    /// (the same part of its cell after a width change) while the rows
    /// from it fill more than the view, else the tail.
    fn place(&mut self, app: &mut App, view_rows: usize) -> Position {
        let n = self.layout.len();
        if let Some(a) = self.anchor
            && a.at.cell < n
            && view_rows > 0
        {
            let block = self.layout.measure(app, a.at.cell);
            let mut offset = a.at.offset;
            let g = gap(a.at.cell);
            if a.width != self.width && a.block > g && offset > g {
                // The same part of the cell's rows (its first stays first).
                offset = g + (offset - g) * (block.saturating_sub(g)) / (a.block - g);
            }
            if offset >= block {
                offset = gap(a.at.cell).min(block.saturating_sub(1));
            }
            let at = Position {
                cell: a.at.cell,
                offset,
            };
            let mut have = block - offset.min(block);
            let mut next = at.cell + 1;
            while have <= view_rows && next < n {
                have += self.layout.measure(app, next);
                next += 1;
            }
            if have > view_rows {
                self.anchor = Some(Anchor {
                    at,
                    width: self.width,
                    block,
                });
                return at;
            }
        }
        self.anchor = None;
        // Following: the cells from the end up until the view is full.
        let (mut have, mut cell) = (0, n);
        while have < view_rows && cell > 0 {
            cell -= 1;
            have += self.layout.measure(app, cell);
        }
        let top = self.layout.total().saturating_sub(view_rows);
        self.layout.position(top).unwrap_or_default()
    }

    /// The selection in document rows of the current layout.
    fn selection_rows(&self) -> Option<Selection> {
        let s = self.selection?;
        let point = |p: Point| (self.layout.row(p.at), p.col);
        Some(Selection {
            anchor: point(s.anchor),
            head: point(s.head),
        })
    }

    /// The logical text under the selection (empty without one): the
    /// cells it spans are drawn, the lines as they wrote them.
    pub fn selected_text(&mut self, app: &mut App) -> String {
        let Some(s) = self.selection else {
            return String::new();
        };
        self.layout.sync(app, self.width);
        let (first, last) = (s.anchor.min(s.head), s.anchor.max(s.head));
        let last_cell = last.at.cell.min(self.layout.len().saturating_sub(1));
        for cell in first.at.cell..=last_cell {
            self.layout.measure(app, cell);
        }
        let Some(sel) = self.selection_rows() else {
            return String::new();
        };
        let ((r0, _), (r1, _)) = sel.range();
        let mut lines: Vec<String> = Vec::new();
        for cell in first.at.cell..=last_cell {
            let blank = self.layout.block_start(cell);
            if cell > 0 && (r0..=r1).contains(&blank) {
                lines.push(String::new());
            }
            let start = self.layout.start(cell);
            let App { transcript, cx, .. } = &mut *app;
            if let Some(c) = transcript.cells_mut().get_mut(cell) {
                lines.extend(selection::cell_text(c, cx, self.width, start, &sel));
            }
        }
        lines.join("\n")
    }

    /// Copies `text`: OSC 52 with the next frame (unless too long for a
    /// terminal), and the system clipboard when one is configured.
    fn copy(&mut self, text: &str) {
        if text.len() <= crate::clipboard::OSC52_MAX_BYTES {
            self.pending.push_str(&selection::osc52(text));
        }
        self.clipboard.copy(text);
    }

    /// The rows of the whole screen and where the caret goes.
    pub fn compose(
        &mut self,
        app: &mut App,
        now: Instant,
    ) -> (Vec<StyledLine>, Option<(usize, usize)>) {
        let (width, height) = (self.width, self.height);
        let theme = app.cx.theme;
        // The dock may take two thirds of the screen; the view the rest.
        let dock_max = (height - height / 3).max(1);
        let registry = app.cx.registry.clone();
        let (dock, caret) = app.compose_dock(width, dock_max, now, registry.as_ref());
        self.layout.sync(app, width);
        // The row between the view and the dock, once there is something
        // to show or a search is open; unless the editor needs it.
        let bar_rows =
            usize::from((self.search.is_some() || self.layout.total() > 0) && dock.len() < height);
        let view_rows = height.saturating_sub(dock.len() + bar_rows);
        self.view_rows = view_rows;
        self.top_at = self.place(app, view_rows);
        self.top = self.layout.row(self.top_at);
        let n = self.layout.len();
        let sel = self.selection_rows();
        let query = self.search.as_ref().and_then(Search::needle);
        let mut rows = Vec::with_capacity(height);
        let (mut at, mut row) = (self.top_at, self.top);
        while rows.len() < view_rows && at.cell < n {
            if at.offset >= self.layout.measure(app, at.cell) {
                at = Position {
                    cell: at.cell + 1,
                    offset: 0,
                };
                continue;
            }
            let mut line = match at.offset.checked_sub(gap(at.cell)) {
                Some(i) => self
                    .layout
                    .rows(app, at.cell)
                    .get(i)
                    .cloned()
                    .unwrap_or_default(),
                None => StyledLine::new(),
            };
            if let Some(needle) = &query {
                line = crate::search::highlight_matches(&line, needle, theme.search_match);
            }
            if let Some((c0, c1)) = sel.as_ref().and_then(|s| s.columns(row)) {
                line = selection::highlight(&line, c0, c1, theme.selected);
            }
            rows.push(line);
            at.offset += 1;
            row += 1;
        }
        rows.resize(view_rows, StyledLine::new());
        if bar_rows > 0 {
            rows.push(self.bar(width, &theme));
        }
        let caret = caret.map(|(r, c)| (rows.len() + r, c));
        rows.extend(dock);
        rows.truncate(height);
        let caret = caret.filter(|&(r, _)| r < rows.len());
        (rows, caret)
    }

    /// The row between the view and the dock: the search query, how far
    /// up the view is (the rows below counted by estimate where cells
    /// were never shown), or blank (as inline mode's row between the
    /// conversation and the editor).
    fn bar(&self, width: usize, theme: &crate::UiTheme) -> StyledLine {
        let line = match (&self.search, self.anchor) {
            (Some(search), _) => search.bar(theme),
            (None, Some(_)) => {
                let below = self
                    .layout
                    .total()
                    .saturating_sub(self.top + self.view_rows.max(1));
                StyledLine::styled(
                    format!("-- {below} rows below; PgDn or Ctrl+End to follow --"),
                    theme.dim,
                )
            }
            (None, None) => StyledLine::new(),
        };
        text::clip(&line, width)
    }

    /// One frame's bytes: the rows that changed since the last frame, the
    /// caret, and any clipboard escape; empty when nothing changed.
    pub fn frame(&mut self, app: &mut App, now: Instant) -> String {
        let (rows, caret) = self.compose(app, now);
        let pending = std::mem::take(&mut self.pending);
        if rows == self.prev && caret == self.prev_cursor && pending.is_empty() {
            return String::new();
        }
        let mut out = String::from("\x1b[?2026h\x1b[?25l");
        let blank = StyledLine::new();
        let drawn = rows.len().max(self.prev.len()).min(self.height);
        for i in 0..drawn {
            let line = rows.get(i).unwrap_or(&blank);
            if self.prev.len() == rows.len() && self.prev.get(i) == Some(line) {
                continue;
            }
            let _ = write!(out, "\x1b[{};1H\x1b[2K", i + 1);
            text::write_ansi(&mut out, &text::clip(line, self.width));
        }
        out.push_str(&pending);
        if let Some((r, c)) = caret {
            let _ = write!(
                out,
                "\x1b[{};{}H\x1b[?25h",
                r + 1,
                c.min(self.width - 1) + 1
            );
        }
        out.push_str("\x1b[?2026l");
        self.prev = rows;
        self.prev_cursor = caret;
        out
    }
}
