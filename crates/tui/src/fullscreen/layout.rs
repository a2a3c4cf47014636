//! Where each cell's rows are in fullscreen's document, measured lazily.
//!
//! The document is the whole transcript at one width: each cell's
//! *block* is a blank row (for every cell but the first) and then the
//! cell's rows. A block's height is *measured* (the cell drawn and
//! wrapped, through its own cache) only when someone needs its rows: the
//! view for what it shows and for the rows it scrolls over, search for
//! its matches, a selection for its text. Every other block holds an
//! *estimate* ([`Cell::estimated_rows`](crate::cell::Cell::estimated_rows): the cell's cached rows at
//! another width, scaled, or its text's length over the width), corrected
//! when the cell is measured.
//!
//! The heights sit in a Fenwick tree, so where a block starts, which block
//! holds a row, and a correction each cost O(log n); a new cell is O(log
//! n) too. Entering fullscreen or a width change costs one estimate per
//! cell (arithmetic, no drawing) and then only the cells shown are drawn.
//! What rests on estimates: the document row numbers of cells nobody has
//! measured, hence the view's "rows below" count and how far
//! Ctrl+Home-then-PgDn travels in rows; never what is drawn, since every
//! cell shown is measured first.
//!
//! A measured block stays right while its cell keeps its
//! [`Cell::version`](crate::cell::Cell::version). The layout checks the versions of the cells that
//! were not settled (a streaming answer, a running tool) at each sync, and
//! of every cell it is asked to measure; a change to the whole (a theme,
//! Ctrl+O, another transcript) comes with a new
//! [`Transcript::generation`](crate::transcript::Transcript::generation)
//! and the layout starts over from estimates.

use agent_tool::StyledLine;

use crate::app::App;

/// A place in the document: a cell's block and a row of it (0 is the
/// blank row before every cell but the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Position {
    /// The cell.
    pub cell: usize,
    /// The row of its block.
    pub offset: usize,
}

/// The blank rows before cell `i` (one between two cells).
pub fn gap(i: usize) -> usize {
    usize::from(i > 0)
}

/// The heights of the transcript's blocks at one width, measured or
/// estimated (see the module's documentation).
#[derive(Debug, Clone, Default)]
pub struct Layout {
    width: usize,
    generation: u64,
    /// Each block's rows (its gap included).
    blocks: Vec<usize>,
    /// The cell version each block was measured at; `None`: an estimate.
    measured: Vec<Option<u64>>,
    /// Fenwick tree over `blocks` (1-based; `tree[0]` unused).
    tree: Vec<usize>,
    /// Cells that were not settled at the last sync: their versions are
    /// checked at each one.
    unsettled: Vec<usize>,
}

impl Layout {
    /// An empty layout (the first [`Layout::sync`] fills it).
    pub fn new() -> Self {
        Layout {
            tree: vec![0],
            ..Self::default()
        }
    }

    /// Brings the layout up to date with `app`'s transcript at `width`:
    /// new cells get estimates, a cell that was streaming and changed
    /// goes back to an estimate, and a new width or generation starts
    /// over from estimates. No cell is drawn.
    pub fn sync(&mut self, app: &App, width: usize) {
        let width = width.max(1);
        let transcript = &app.transcript;
        let cells = transcript.cells();
        if width != self.width
            || transcript.generation() != self.generation
            || cells.len() < self.blocks.len()
            || self.tree.is_empty()
        {
            self.width = width;
            self.generation = transcript.generation();
            self.blocks = cells
                .iter()
                .enumerate()
                .map(|(i, c)| gap(i) + c.estimated_rows(width))
                .collect();
            self.measured = vec![None; cells.len()];
            self.unsettled = (0..cells.len())
                .filter(|&i| !cells[i].is_settled())
                .collect();
            self.build();
            return;
        }
        let mut watched = std::mem::take(&mut self.unsettled);
        for &i in &watched {
            let Some(cell) = cells.get(i) else { continue };
            if self.measured[i].is_some_and(|v| v != cell.version()) {
                let estimate = gap(i) + cell.estimated_rows(width);
                self.set_block(i, estimate, None);
            }
        }
        watched.retain(|&i| cells.get(i).is_some_and(|c| !c.is_settled()));
        for (i, cell) in cells.iter().enumerate().skip(self.blocks.len()) {
            self.push(gap(i) + cell.estimated_rows(width));
            if !cell.is_settled() {
                watched.push(i);
            }
        }
        self.unsettled = watched;
    }

    /// The width the heights are for.
    pub fn width(&self) -> usize {
        self.width
    }

    /// How many cells it holds.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether it holds no cell.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Rows in all (estimates included).
    pub fn total(&self) -> usize {
        self.prefix(self.blocks.len())
    }

    /// Cell `i`'s block's rows as the layout knows them (0 past the end).
    pub fn block(&self, i: usize) -> usize {
        self.blocks.get(i).copied().unwrap_or(0)
    }

    /// Whether cell `i`'s height was measured (not estimated).
    pub fn is_measured(&self, i: usize) -> bool {
        self.measured.get(i).is_some_and(Option::is_some)
    }

    /// How many cells are measured (a linear count, for tests).
    pub fn measured_count(&self) -> usize {
        self.measured.iter().filter(|m| m.is_some()).count()
    }

    /// The first row of cell `i`'s block (its gap).
    pub fn block_start(&self, i: usize) -> usize {
        self.prefix(i.min(self.blocks.len()))
    }

    /// The first row of cell `i` itself (after its gap).
    pub fn start(&self, i: usize) -> usize {
        self.block_start(i) + gap(i)
    }

    /// The document row of `at` (a row past its block's end is its last).
    pub fn row(&self, at: Position) -> usize {
        let offset = at.offset.min(self.block(at.cell).saturating_sub(1));
        self.block_start(at.cell) + offset
    }

    /// The place of document row `row`; `None` past the end.
    pub fn position(&self, row: usize) -> Option<Position> {
        let n = self.blocks.len();
        // The largest k with prefix(k) <= row, by binary lifting.
        let (mut k, mut rest) = (0, row);
        let mut step = n.checked_ilog2().map_or(0, |l| 1 << l);
        while step > 0 {
            if k + step <= n && self.tree[k + step] <= rest {
                k += step;
                rest -= self.tree[k];
            }
            step >>= 1;
        }
        (k < n).then_some(Position {
            cell: k,
            offset: rest,
        })
    }

    /// The cell a document row belongs to, and the row in it (`None` for
    /// the blank row before a cell).
    pub fn locate(&self, row: usize) -> Option<(usize, Option<usize>)> {
        let at = self.position(row)?;
        Some((at.cell, at.offset.checked_sub(gap(at.cell))))
    }

    /// Cell `i`'s block, measured: drawn and wrapped through the cell's
    /// own cache (free when it is fresh), the tree corrected if its height
    /// differs from what was known. 0 past the end.
    pub fn measure(&mut self, app: &mut App, i: usize) -> usize {
        let App { transcript, cx, .. } = app;
        let Some(cell) = transcript.cells_mut().get_mut(i) else {
            return 0;
        };
        if i >= self.blocks.len() {
            return 0;
        }
        if self.measured[i] == Some(cell.version()) {
            return self.blocks[i];
        }
        let rows = cell.rows(cx, self.width).len();
        let version = cell.version();
        self.set_block(i, gap(i) + rows, Some(version));
        self.blocks[i]
    }

    /// Cell `i`'s rows, measured (see [`Layout::measure`]).
    pub fn rows<'a>(&mut self, app: &'a mut App, i: usize) -> &'a [StyledLine] {
        self.measure(app, i);
        let App { transcript, cx, .. } = app;
        match transcript.cells_mut().get_mut(i) {
            Some(cell) => cell.rows(cx, self.width),
            None => &[],
        }
    }

    /// `at` moved `rows` rows down (up when negative), measuring every
    /// block it enters; clamped to the document's first row, and `None`
    /// when it runs past the last.
    pub fn walk(&mut self, app: &mut App, at: Position, rows: isize) -> Option<Position> {
        let mut at = at;
        let n = self.blocks.len();
        if at.cell >= n {
            return None;
        }
        let block = self.measure(app, at.cell);
        at.offset = at.offset.min(block.saturating_sub(1));
        if rows < 0 {
            let mut left = rows.unsigned_abs();
            while left > at.offset {
                left -= at.offset + 1;
                if at.cell == 0 {
                    return Some(Position::default());
                }
                at.cell -= 1;
                at.offset = self.measure(app, at.cell).saturating_sub(1);
            }
            at.offset -= left;
            // Cell 0 may be empty: its only place is its (absent) first row.
            return Some(at);
        }
        let mut left = rows.unsigned_abs();
        let mut block = self.block(at.cell);
        while at.offset + left >= block {
            left -= block - at.offset;
            at.cell += 1;
            at.offset = 0;
            if at.cell >= n {
                return None;
            }
            block = self.measure(app, at.cell);
        }
        at.offset += left;
        Some(at)
    }

    /// Sets block `i`'s rows, correcting the tree.
    fn set_block(&mut self, i: usize, rows: usize, measured: Option<u64>) {
        let old = self.blocks[i];
        self.blocks[i] = rows;
        self.measured[i] = measured;
        let mut k = i + 1;
        while k < self.tree.len() {
            self.tree[k] = self.tree[k] - old + rows;
            k += k & k.wrapping_neg();
        }
    }

    /// Appends a block of `rows` estimated rows.
    fn push(&mut self, rows: usize) {
        self.blocks.push(rows);
        self.measured.push(None);
        let k = self.blocks.len();
        let low = k & k.wrapping_neg();
        // tree[k] covers blocks (k - low, k]: this one and those before it
        // in its range.
        let node = rows + self.prefix(k - 1) - self.prefix(k - low);
        self.tree.push(node);
    }

    /// The Fenwick tree of `blocks`, in O(n).
    fn build(&mut self) {
        let n = self.blocks.len();
        self.tree = Vec::with_capacity(n + 1);
        self.tree.push(0);
        self.tree.extend_from_slice(&self.blocks);
        for k in 1..=n {
            let parent = k + (k & k.wrapping_neg());
            if parent <= n {
                self.tree[parent] += self.tree[k];
            }
        }
    }

    /// Rows of blocks `0..i`.
    fn prefix(&self, i: usize) -> usize {
        let mut k = i.min(self.tree.len().saturating_sub(1));
        let mut sum = 0;
        while k > 0 {
            sum += self.tree[k];
            k &= k - 1;
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(blocks: &[usize]) -> Layout {
        let mut l = Layout::new();
        l.blocks = blocks.to_vec();
        l.measured = vec![None; blocks.len()];
        l.build();
        l
    }

    #[test]
    fn the_tree_answers_starts_and_rows_and_takes_corrections() {
        let mut l = layout(&[2, 3, 1, 4, 2]);
        assert_eq!(l.total(), 12);
        assert_eq!(
            (0..=5).map(|i| l.block_start(i)).collect::<Vec<_>>(),
            [0, 2, 5, 6, 10, 12]
        );
        assert_eq!(l.position(0), Some(Position { cell: 0, offset: 0 }));
        assert_eq!(l.position(4), Some(Position { cell: 1, offset: 2 }));
        assert_eq!(l.position(5), Some(Position { cell: 2, offset: 0 }));
        assert_eq!(l.position(11), Some(Position { cell: 4, offset: 1 }));
        assert_eq!(l.position(12), None);
        l.set_block(1, 10, Some(0));
        assert_eq!(l.total(), 19);
        assert_eq!(l.block_start(4), 17);
        assert_eq!(l.position(11), Some(Position { cell: 1, offset: 9 }));
        // Appending keeps every node right, across powers of two.
        let mut grown = layout(&[]);
        let sizes: Vec<usize> = (0..37).map(|i| 1 + i % 5).collect();
        for &s in &sizes {
            grown.push(s);
        }
        let built = layout(&sizes);
        assert_eq!(grown.tree, built.tree);
        // An empty first block is skipped.
        let l = layout(&[0, 2]);
        assert_eq!(l.position(0), Some(Position { cell: 1, offset: 0 }));
    }
}
