//! The mouse in fullscreen: the wheel scrolls, a drag selects (copied on
//! release, through OSC 52 and the system clipboard when there is one), a
//! click on a tool call expands or collapses it.

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};

use super::{Drag, FullscreenView, Point, Position, WHEEL_ROWS};
use crate::app::App;

impl FullscreenView {
    /// A mouse event.
    pub fn mouse(&mut self, event: MouseEvent, app: &mut App) {
        let row = usize::from(event.row);
        let col = usize::from(event.column);
        self.layout.sync(app, self.width);
        match event.kind {
            MouseEventKind::ScrollUp => self.scroll(app, -(WHEEL_ROWS as isize)),
            MouseEventKind::ScrollDown => self.scroll(app, WHEEL_ROWS as isize),
            MouseEventKind::Down(MouseButton::Left) if row < self.view_rows => {
                if let Some(at) = self.screen_point(app, row, col) {
                    self.selection = Some(Drag {
                        anchor: at,
                        head: at,
                        down: true,
                    });
                }
            }
            MouseEventKind::Drag(MouseButton::Left) if self.selection.is_some_and(|s| s.down) => {
                // Past the view's edges the view scrolls along.
                if row >= self.view_rows {
                    self.scroll(app, 1);
                } else if row == 0 {
                    self.scroll(app, -1);
                }
                let row = row.min(self.view_rows.saturating_sub(1));
                if let Some(at) = self.screen_point(app, row, col)
                    && let Some(sel) = &mut self.selection
                {
                    sel.head = at;
                }
            }
            MouseEventKind::Up(MouseButton::Left) => {
                if let Some(sel) = &mut self.selection {
                    sel.down = false;
                    let sel = *sel;
                    if sel.anchor == sel.head {
                        self.selection = None;
                        self.click(app, sel.anchor.at);
                    } else {
                        let copied = self.selected_text(app);
                        if !copied.is_empty() {
                            self.copy(&copied);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The document point under screen row `row` (of the view) and column
    /// `col`: the view's top walked down; below the last row, the last.
    fn screen_point(&mut self, app: &mut App, row: usize, col: usize) -> Option<Point> {
        let n = self.layout.len();
        let last = n.checked_sub(1)?;
        let rows = isize::try_from(row).unwrap_or(isize::MAX);
        let at = self
            .layout
            .walk(app, self.view_top(), rows)
            .unwrap_or_else(|| Position {
                cell: last,
                offset: self.layout.block(last).saturating_sub(1),
            });
        Some(Point { at, col })
    }

    /// A click at `at`: a tool call there (or on the blank row above it)
    /// is expanded or collapsed. A view that followed the tail stops where
    /// it is, so the clicked call stays under the mouse and its result
    /// opens below it (it follows again once the bottom is in view).
    fn click(&mut self, app: &mut App, at: Position) {
        if app.transcript.toggle_expanded_at(at.cell) && self.anchor.is_none() {
            self.set_anchor(self.top_at);
        }
    }
}
