//! Search in the fullscreen transcript: a query row (Ctrl+S opens it),
//! Enter to run it (the newest match first), then `n` (or Enter) to step
//! to older matches and `N` to newer ones, wrapping around; every match in
//! view highlighted. Case-insensitive, on the rows as drawn: a step draws
//! every cell not drawn yet at the view's width (through the layout, so
//! its heights are exact afterwards), the one fullscreen action whose work
//! is the whole transcript.

use agent_tool::StyledLine;
use anstyle::Style;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::app::App;
use crate::fullscreen::Layout;
use crate::selection;
use crate::text;

/// What a key did to the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It changed the query (or was swallowed).
    Handled,
    /// Go to the next older match (`true`, up the transcript) or the
    /// next newer one.
    Step(bool),
    /// Close the search.
    Close,
    /// Not the search's: the editor has it.
    Ignored,
}

/// An open search.
#[derive(Debug, Clone, Default)]
pub struct Search {
    query: String,
    /// The query was run (keys step instead of typing).
    ran: bool,
    /// The current match (cell, row of the cell, column) and where it is
    /// among all of them (1-based) and how many there are.
    current: Option<(usize, usize, usize)>,
    position: usize,
    count: usize,
}

impl Search {
    /// What is typed.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// The text highlighted: the query once there is one.
    pub fn needle(&self) -> Option<String> {
        (!self.query.is_empty()).then(|| self.query.to_lowercase())
    }

    /// The current match's place and the number of matches.
    pub fn counts(&self) -> (usize, usize) {
        (self.position, self.count)
    }

    /// A key while the search is open.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        if key.kind == KeyEventKind::Release {
            return Outcome::Handled;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => Outcome::Close,
            KeyCode::Enter => {
                self.ran = true;
                Outcome::Step(!key.modifiers.contains(KeyModifiers::SHIFT))
            }
            KeyCode::Char('n') if self.ran && !ctrl => Outcome::Step(true),
            KeyCode::Char('N') if self.ran && !ctrl => Outcome::Step(false),
            KeyCode::Char('s') if ctrl => Outcome::Step(true),
            _ if self.ran => Outcome::Ignored,
            KeyCode::Backspace => {
                self.query.pop();
                self.current = None;
                Outcome::Handled
            }
            KeyCode::Char(c) if !ctrl => {
                self.query.push(c);
                self.current = None;
                Outcome::Handled
            }
            _ => Outcome::Handled,
        }
    }

    /// Moves to the match before the current one (`older`, up the
    /// transcript) or after it, wrapping around; the first time to the
    /// last one, the newest text. Its cell and row in the cell.
    pub fn step(
        &mut self,
        app: &mut App,
        layout: &mut Layout,
        older: bool,
    ) -> Option<(usize, usize)> {
        let needle = self.needle()?;
        let matches = find_all(app, layout, &needle);
        self.count = matches.len();
        if matches.is_empty() {
            self.current = None;
            self.position = 0;
            return None;
        }
        let index = match self.current {
            None => matches.len() - 1,
            Some(cur) if older => matches
                .iter()
                .rposition(|&m| m < cur)
                .unwrap_or(matches.len() - 1),
            Some(cur) => matches.iter().position(|&m| m > cur).unwrap_or(0),
        };
        let (cell, row, col) = matches[index];
        self.current = Some((cell, row, col));
        self.position = index + 1;
        Some((cell, row))
    }

    /// The query row.
    pub fn bar(&self, theme: &crate::UiTheme) -> StyledLine {
        let hint = if !self.ran {
            "  (Enter to search, Esc to close)".to_string()
        } else if self.count == 0 {
            "  no match (Esc to close)".to_string()
        } else {
            format!(
                "  {}/{} (n older, N newer, Esc to close)",
                self.position, self.count
            )
        };
        StyledLine::styled("search: ", theme.dim)
            .push(text::clean(&self.query), Style::new())
            .push(hint, theme.dim)
    }
}

/// Every match of `needle` (lowercase) in the document, in order: (cell,
/// row of the cell, column).
fn find_all(app: &mut App, layout: &mut Layout, needle: &str) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for cell in 0..layout.len() {
        for (r, row) in layout.rows(app, cell).iter().enumerate() {
            for col in match_columns(row, needle) {
                out.push((cell, r, col.0));
            }
        }
    }
    out
}

/// The columns (start, end) where `needle` (lowercase) occurs in `row`.
fn match_columns(row: &StyledLine, needle: &str) -> Vec<(usize, usize)> {
    let plain = row.to_plain();
    let lower = plain.to_lowercase();
    if needle.is_empty() || lower.len() != plain.len() {
        // Lowercasing changed the byte lengths: columns would be wrong;
        // match the text as it is instead.
        return plain
            .match_indices(needle)
            .map(|(at, m)| columns(&plain, at, m.len()))
            .collect();
    }
    lower
        .match_indices(needle)
        .map(|(at, m)| columns(&plain, at, m.len()))
        .collect()
}

fn columns(plain: &str, at: usize, len: usize) -> (usize, usize) {
    let start = text::str_width(plain.get(..at).unwrap_or_default());
    let end = start + text::str_width(plain.get(at..at + len).unwrap_or_default());
    (start, end)
}

/// `row` with every match of `needle` drawn in `style`.
pub fn highlight_matches(row: &StyledLine, needle: &str, style: Style) -> StyledLine {
    let mut out = row.clone();
    for (start, end) in match_columns(row, needle) {
        out = selection::highlight(&out, start, end, style);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_are_found_without_case_and_by_column() {
        let row = StyledLine::plain("漢 Foo foo");
        assert_eq!(match_columns(&row, "foo"), [(3, 6), (7, 10)]);
    }
}
