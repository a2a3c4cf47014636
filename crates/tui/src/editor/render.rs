//! The editor's rows: a `> ` gutter, lines wrapped by grapheme width, and
//! where the caret is (the hardware cursor goes there, so input methods
//! put their window at the caret).

use agent_tool::StyledLine;
use anstyle::Style;
use unicode_segmentation::UnicodeSegmentation;

use super::Editor;
use crate::text::{self, grapheme_width};

impl Editor {
    /// The editor's rows at `width` (a `> ` gutter, wrapped by grapheme
    /// width) and the caret's (row, column).
    pub fn render(
        &self,
        width: usize,
        style: Style,
        gutter: Style,
    ) -> (Vec<StyledLine>, (usize, usize)) {
        let width = width.max(3);
        let inner = width - 2;
        let mut rows: Vec<StyledLine> = Vec::new();
        let mut caret = (0, 2);
        let mut offset = 0;
        for (li, line) in self.text.split('\n').enumerate() {
            let mut row = String::new();
            let mut used = 0;
            let mut first_row_of_line = true;
            let push_row = |rows: &mut Vec<StyledLine>, row: &mut String, first: bool| {
                let lead = if rows.is_empty() && first { "> " } else { "  " };
                rows.push(StyledLine::styled(lead, gutter).push(text::clean(row), style));
                row.clear();
            };
            for (gi, g) in line.grapheme_indices(true) {
                let w = grapheme_width(g);
                if used + w > inner && used > 0 {
                    push_row(&mut rows, &mut row, first_row_of_line && li == 0);
                    first_row_of_line = false;
                    used = 0;
                }
                if offset + gi == self.cursor {
                    caret = (rows.len(), 2 + used);
                }
                row.push_str(g);
                used += w;
            }
            if offset + line.len() == self.cursor {
                if used >= inner {
                    push_row(&mut rows, &mut row, first_row_of_line && li == 0);
                    used = 0;
                }
                caret = (rows.len(), 2 + used);
            }
            push_row(&mut rows, &mut row, first_row_of_line && li == 0);
            offset += line.len() + 1;
        }
        (rows, caret)
    }
}
