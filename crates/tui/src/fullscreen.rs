//! Fullscreen mode: the transcript in a scrollable view on the alternate
//! screen, above the same dock as inline mode (queued messages, spinner,
//! editor or permission question, footer).
//!
//! The view draws only the rows it shows, from the cells' own per-width
//! row caches; the layout (where each cell starts) costs one cached length
//! per cell. It follows the tail until the user scrolls up, and again once
//! they scroll back to the bottom. A scrolled view is anchored to a cell
//! and a row in it, so output arriving below or a width change keeps what
//! the user looks at. Search (Ctrl+S) and mouse selection live here too;
//! each frame is one synchronized write of the rows that changed.

use std::fmt::Write as _;
use std::time::Instant;

use agent_tool::StyledLine;
use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use crate::app::App;
use crate::cell::CellKind;
use crate::search::Search;
use crate::selection::{self, Selection};
use crate::text;

/// Rows one wheel notch scrolls.
pub const WHEEL_ROWS: usize = 3;

/// Where each cell's rows start in the document (the whole transcript at
/// one width, a blank row between cells).
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// The first row of each cell.
    pub starts: Vec<usize>,
    /// Rows in all.
    pub total: usize,
}

impl Layout {
    /// The layout of `app`'s transcript at `width` (cells are drawn into
    /// their caches as needed).
    pub fn of(app: &mut App, width: usize) -> Layout {
        let cx = &app.cx;
        let cells = app.transcript.cells_mut();
        let mut starts = Vec::with_capacity(cells.len());
        let mut row = 0;
        for (i, cell) in cells.iter_mut().enumerate() {
            if i > 0 {
                row += 1;
            }
            starts.push(row);
            row += cell.rows(cx, width).len();
        }
        Layout { starts, total: row }
    }

    /// The cell a document row belongs to, and the row in it (`None` for
    /// the blank row before a cell).
    pub fn locate(&self, row: usize) -> Option<(usize, Option<usize>)> {
        if row >= self.total {
            return None;
        }
        // Cells that start at or before the row.
        let next = self.starts.partition_point(|&s| s <= row);
        if next > 0 && self.starts.get(next) == Some(&(row + 1)) {
            return Some((next, None));
        }
        let cell = next.checked_sub(1)?;
        Some((cell, Some(row - self.starts[cell])))
    }
}

/// The fullscreen view's state.
#[derive(Debug)]
pub struct FullscreenView {
    width: usize,
    height: usize,
    /// The cell and row at the top of a scrolled view; `None` follows
    /// the tail.
    anchor: Option<(usize, usize)>,
    /// The open search.
    search: Option<Search>,
    /// The mouse selection, and whether the button is still down.
    selection: Option<(Selection, bool)>,
    /// The layout and view height of the last frame (for keys and the
    /// mouse, which act on what is shown).
    layout: Layout,
    view_rows: usize,
    top: usize,
    /// Rows as last drawn, the caret as last placed.
    prev: Vec<StyledLine>,
    prev_cursor: Option<(usize, usize)>,
    /// Bytes to send with the next frame (the clipboard escape).
    pending: String,
}

impl FullscreenView {
    /// A view of a `width` x `height` screen, following the tail.
    pub fn new(width: u16, height: u16) -> Self {
        FullscreenView {
            width: usize::from(width.max(1)),
            height: usize::from(height.max(1)),
            anchor: None,
            search: None,
            selection: None,
            layout: Layout::default(),
            view_rows: 0,
            top: 0,
            prev: Vec::new(),
            prev_cursor: None,
            pending: String::new(),
        }
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

    /// The document row at the top of the view in the last frame.
    pub fn top(&self) -> usize {
        self.top
    }

    /// The open search, if any.
    pub fn search(&self) -> Option<&Search> {
        self.search.as_ref()
    }

    /// Scrolls up (negative) or down by `rows`; at the bottom the view
    /// follows the tail again.
    pub fn scroll(&mut self, rows: isize) {
        let bottom = self.layout.total.saturating_sub(self.view_rows);
        let top = self.top.saturating_add_signed(rows).min(bottom);
        self.set_top(top);
    }

    fn set_top(&mut self, top: usize) {
        let bottom = self.layout.total.saturating_sub(self.view_rows);
        self.top = top.min(bottom);
        self.anchor = if self.top >= bottom {
            None
        } else {
            self.layout.locate(self.top).map(|(cell, row)| match row {
                Some(r) => (cell, r),
                // The blank row before a cell: one above its first row.
                None => (cell, usize::MAX),
            })
        };
    }

    /// A key meant for the view (scrolling, search); `false` leaves it to
    /// the editor.
    pub fn key(&mut self, key: KeyEvent, app: &mut App) -> bool {
        if key.kind == KeyEventKind::Release {
            return false;
        }
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
        let page = self.view_rows.saturating_sub(1).max(1) as isize;
        match key.code {
            KeyCode::PageUp => self.scroll(-page),
            KeyCode::PageDown => self.scroll(page),
            KeyCode::Up if shift => self.scroll(-1),
            KeyCode::Down if shift => self.scroll(1),
            KeyCode::Home if ctrl => self.set_top(0),
            KeyCode::End if ctrl => self.anchor = None,
            KeyCode::Char('s') if ctrl => self.search = Some(Search::default()),
            KeyCode::Esc if self.selection.is_some() && !app.is_running() => {
                self.selection = None;
            }
            _ => {
                // Typing drops a finished selection.
                if matches!(self.selection, Some((_, false))) {
                    self.selection = None;
                }
                return false;
            }
        }
        true
    }

    /// Moves to the next older (or newer) match and shows it.
    fn step_search(&mut self, app: &mut App, older: bool) {
        let width = self.width;
        let Some(search) = &mut self.search else {
            return;
        };
        if let Some(row) = search.step(app, &self.layout, width, older) {
            let half = self.view_rows / 2;
            if row < self.top || row >= self.top + self.view_rows {
                self.set_top(row.saturating_sub(half));
            }
        }
    }

    /// A mouse event: the wheel scrolls, a drag selects (copied on
    /// release), a click on a tool call expands or collapses it.
    pub fn mouse(&mut self, event: MouseEvent, app: &mut App) {
        let row = usize::from(event.row);
        let col = usize::from(event.column);
        match event.kind {
            MouseEventKind::ScrollUp => self.scroll(-(WHEEL_ROWS as isize)),
            MouseEventKind::ScrollDown => self.scroll(WHEEL_ROWS as isize),
            MouseEventKind::Down(MouseButton::Left) if row < self.view_rows => {
                let at = (self.top + row, col);
                self.selection = Some((
                    Selection {
                        anchor: at,
                        head: at,
                    },
                    true,
                ));
            }
            MouseEventKind::Drag(MouseButton::Left)
                if matches!(self.selection, Some((_, true))) =>
            {
                // Past the view's edges the view scrolls along.
                if row >= self.view_rows {
                    self.scroll(1);
                } else if row == 0 {
                    self.scroll(-1);
                }
                let at = (self.top + row.min(self.view_rows.saturating_sub(1)), col);
                if let Some((sel, _)) = &mut self.selection {
                    sel.head = at;
                }
            }
            MouseEventKind::Up(MouseButton::Left) => {
                if let Some((sel, down)) = &mut self.selection {
                    *down = false;
                    let sel = *sel;
                    if sel.anchor == sel.head {
                        self.selection = None;
                        self.click(app, sel.anchor.0);
                    } else {
                        let copied = self.selected_text(app);
                        if !copied.is_empty() {
                            self.pending.push_str(&selection::osc52(&copied));
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// A click on document row `row`: a tool call there is expanded or
    /// collapsed.
    fn click(&mut self, app: &mut App, row: usize) {
        if let Some((cell, _)) = self.layout.locate(row)
            && let Some(cell) = app.transcript.cells_mut().get_mut(cell)
            && matches!(cell.kind(), CellKind::Tool(_))
            && let CellKind::Tool(call) = cell.kind_mut()
        {
            call.expanded = !call.expanded;
            if self.anchor.is_some() {
                // Keep the clicked cell where it was.
                self.layout = Layout::of(app, self.width);
            }
        }
    }

    /// The logical text under the selection (empty without one).
    pub fn selected_text(&mut self, app: &mut App) -> String {
        let Some((sel, _)) = self.selection else {
            return String::new();
        };
        let ((r0, _), (r1, _)) = sel.range();
        let mut lines: Vec<String> = Vec::new();
        let mut row = r0;
        while row <= r1 && row < self.layout.total {
            match self.layout.locate(row) {
                Some((_, None)) => {
                    lines.push(String::new());
                    row += 1;
                }
                Some((cell, Some(_))) => {
                    let start = self.layout.starts[cell];
                    let cx = &app.cx;
                    let Some(c) = app.transcript.cells_mut().get_mut(cell) else {
                        break;
                    };
                    lines.extend(selection::cell_text(c, cx, self.width, start, &sel));
                    row = start + c.rows(cx, self.width).len();
                }
                None => break,
            }
        }
        lines.join("\n")
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
        self.layout = Layout::of(app, width);
        let mut bar = self.bar(width, &theme);
        if dock.len() + bar.len() > height {
            // A screen too small for both: the editor stays.
            bar.clear();
        }
        let view_rows = height.saturating_sub(dock.len() + bar.len());
        self.view_rows = view_rows;
        let bottom = self.layout.total.saturating_sub(view_rows);
        self.top = match self.anchor {
            None => bottom,
            Some((cell, row)) => match self.layout.starts.get(cell) {
                Some(&start) if row == usize::MAX => start.saturating_sub(1),
                Some(&start) => start + row,
                None => bottom,
            }
            .min(bottom),
        };
        if self.top >= bottom {
            self.anchor = None;
        }
        let mut rows = Vec::with_capacity(height);
        let query = self.search.as_ref().map(|s| s.needle());
        for r in self.top..(self.top + view_rows).min(self.layout.total) {
            let mut line = match self.layout.locate(r) {
                Some((cell, Some(i))) => app
                    .transcript
                    .cells_mut()
                    .get_mut(cell)
                    .and_then(|c| c.rows(&app.cx, width).get(i).cloned())
                    .unwrap_or_default(),
                _ => StyledLine::new(),
            };
            if let Some(Some(needle)) = &query {
                line = crate::search::highlight_matches(&line, needle, theme.search_match);
            }
            if let Some((sel, _)) = &self.selection
                && let Some((c0, c1)) = sel.columns(r)
            {
                line = selection::highlight(&line, c0, c1, theme.selected);
            }
            rows.push(line);
        }
        rows.resize(view_rows, StyledLine::new());
        rows.extend(bar);
        let caret = caret.map(|(r, c)| (rows.len() + r, c));
        rows.extend(dock);
        rows.truncate(height);
        let caret = caret.filter(|&(r, _)| r < rows.len());
        (rows, caret)
    }

    /// The row between the view and the dock: the search query, how far
    /// up the view is, or blank (as inline mode's row between the
    /// conversation and the editor).
    fn bar(&self, width: usize, theme: &crate::UiTheme) -> Vec<StyledLine> {
        let line = match (&self.search, self.anchor) {
            (Some(search), _) => search.bar(theme),
            (None, Some(_)) => {
                let below = self
                    .layout
                    .total
                    .saturating_sub(self.top + self.view_rows.max(1));
                StyledLine::styled(
                    format!("-- {below} rows below; PgDn or Ctrl+End to follow --"),
                    theme.dim,
                )
            }
            (None, None) if self.layout.total > 0 => StyledLine::new(),
            (None, None) => return Vec::new(),
        };
        vec![text::clip(&line, width)]
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
