//! A fuzzy selector: a title, a query row and a window of items, drawn in
//! place of the editor (as the permission dialog is) in either mode.
//!
//! Typing narrows the list with [`crate::completion::fuzzy`] (the label
//! first, then the detail), the matched characters of each label are
//! highlighted, and the keys are Pi's `tui.select.*` actions: up and down
//! (wrapping), page up and down, confirm and cancel; Backspace and
//! Ctrl+W edit the query. Everything is in memory, so a key costs one
//! pass over the items and drawing costs only the rows in view.
//!
//! ```
//! use agent_tui::keybindings::Keybindings;
//! use agent_tui::selector::{Selector, SelectorItem, SelectorKey};
//! use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
//!
//! let items = ["openai/gpt-5", "anthropic/claude-opus-4", "google/gemini-2.5-pro"]
//!     .map(SelectorItem::new);
//! let mut selector = Selector::new("Select a model", items.to_vec());
//! let keys = Keybindings::default();
//! for c in "opus".chars() {
//!     selector.key(&KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE), &keys);
//! }
//! assert_eq!(selector.matches(), 1);
//! let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
//! assert_eq!(selector.key(&enter, &keys), SelectorKey::Confirm(1));
//! ```

use agent_tool::StyledLine;
use anstyle::Style;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use unicode_segmentation::UnicodeSegmentation;

use crate::completion::fuzzy;
use crate::keybindings::{KeyAction, Keybindings};
use crate::text;
use crate::theme::UiTheme;

/// Item rows shown at most, unless the owner says otherwise.
pub const DEFAULT_VISIBLE: usize = 10;
/// Longest query kept (a paste beyond it is cut).
pub const MAX_QUERY_CHARS: usize = 500;
/// How far a match on the detail ranks below any match on the label.
const DETAIL_PENALTY: i64 = 10_000;
/// Deepest indentation drawn (deeper items are drawn at it).
const MAX_INDENT: usize = 16;

/// One choice of a [`Selector`]. Its texts are made safe for the terminal
/// when it is made.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SelectorItem {
    /// What is shown and matched first; matched characters are highlighted.
    pub label: String,
    /// Shown dim after the label, and matched when the label is not.
    pub detail: String,
    /// Shown dim at the right edge when there is room.
    pub hint: String,
    /// Marked with `*` (the current model, the active path).
    pub marked: bool,
    /// Levels of indentation (two columns each).
    pub indent: usize,
}

impl SelectorItem {
    /// An item showing `label`.
    pub fn new(label: impl AsRef<str>) -> Self {
        SelectorItem {
            label: text::clean(label.as_ref()),
            ..Self::default()
        }
    }

    /// With a detail after the label.
    pub fn detail(mut self, detail: impl AsRef<str>) -> Self {
        self.detail = text::clean(detail.as_ref());
        self
    }

    /// With a hint at the right edge.
    pub fn hint(mut self, hint: impl AsRef<str>) -> Self {
        self.hint = text::clean(hint.as_ref());
        self
    }

    /// Marked (or not) with `*`.
    pub fn marked(mut self, marked: bool) -> Self {
        self.marked = marked;
        self
    }

    /// Indented by `levels`.
    pub fn indent(mut self, levels: usize) -> Self {
        self.indent = levels;
        self
    }
}

/// What a key did to a [`Selector`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectorKey {
    /// It moved the highlight or edited the query (or did nothing).
    Handled,
    /// Enter on this item (its index in the list given).
    Confirm(usize),
    /// Esc or Ctrl+C: close it.
    Cancel,
    /// Not a selector key: the owner may give it a meaning.
    Unhandled,
}

/// A list with a fuzzy query.
#[derive(Debug, Clone)]
pub struct Selector {
    title: String,
    items: Vec<SelectorItem>,
    query: String,
    /// The indices of the items matching the query, best first.
    shown: Vec<usize>,
    /// Which of `shown` is highlighted.
    selected: usize,
    /// The first of `shown` in view.
    top: usize,
    max_visible: usize,
    /// Item rows in the last view: what a page is.
    page: usize,
    loading: bool,
    empty_text: String,
    help: String,
    /// What Enter does, in the keys row (`choose`, `edit`).
    confirm: String,
    /// A line about the last thing done (an error when `.1`), above the keys.
    status: Option<(String, bool)>,
    /// Matches keep the order given instead of best first.
    keep_order: bool,
    /// Indentation is drawn only while there is no query (the order of
    /// matches is not the tree's).
    flat_when_filtering: bool,
}

impl Selector {
    /// A selector titled `title` over `items`, the first highlighted.
    pub fn new(title: impl AsRef<str>, items: Vec<SelectorItem>) -> Self {
        let mut s = Selector {
            title: text::clean(title.as_ref()),
            items,
            query: String::new(),
            shown: Vec::new(),
            selected: 0,
            top: 0,
            max_visible: DEFAULT_VISIBLE,
            page: DEFAULT_VISIBLE,
            loading: false,
            empty_text: "nothing to choose from".into(),
            help: String::new(),
            confirm: "choose".into(),
            status: None,
            keep_order: false,
            flat_when_filtering: false,
        };
        s.refilter();
        s
    }

    /// Highlights the item at `index` (of the list given), if shown.
    pub fn select_item(&mut self, index: usize) {
        if let Some(at) = self.shown.iter().position(|&i| i == index) {
            self.selected = at;
        }
    }

    /// At most `rows` item rows at once (at least 1).
    pub fn set_max_visible(&mut self, rows: usize) {
        self.max_visible = rows.max(1);
    }

    /// What an empty list says.
    pub fn set_empty_text(&mut self, text: impl AsRef<str>) {
        self.empty_text = text::clean(text.as_ref());
    }

    /// A line of the owner's own keys, shown under the list.
    pub fn set_help(&mut self, help: impl AsRef<str>) {
        self.help = text::clean(help.as_ref());
    }

    /// What Enter does, as the keys row says it (`choose` by default).
    pub fn set_confirm_text(&mut self, text: impl AsRef<str>) {
        self.confirm = text::clean(text.as_ref());
    }

    /// A line about the last thing done, shown above the keys (in the
    /// error colour when `error`); `None` removes it.
    pub fn set_status(&mut self, status: Option<(&str, bool)>) {
        self.status = status.map(|(text, error)| (text::clean(text), error));
    }

    /// The status line and whether it is an error.
    pub fn status(&self) -> Option<(&str, bool)> {
        self.status.as_ref().map(|(t, e)| (t.as_str(), *e))
    }

    /// Whether matches keep the order given (a query only filters) instead
    /// of coming best first.
    pub fn set_keep_order(&mut self, keep: bool) {
        if self.keep_order != keep {
            self.keep_order = keep;
            self.refilter();
        }
    }

    /// Whether indentation is dropped while a query is typed (matches come
    /// best first, so the indentation of a tree would mean nothing).
    pub fn set_flat_when_filtering(&mut self, flat: bool) {
        self.flat_when_filtering = flat;
    }

    /// The title.
    pub fn set_title(&mut self, title: impl AsRef<str>) {
        self.title = text::clean(title.as_ref());
    }

    /// Whether the items are still being found (shown as "loading").
    pub fn set_loading(&mut self, loading: bool) {
        self.loading = loading;
    }

    /// Whether the items are still being found.
    pub fn is_loading(&self) -> bool {
        self.loading
    }

    /// Replaces the items, keeping the query and, when it is still there,
    /// the highlighted item's index.
    pub fn set_items(&mut self, items: Vec<SelectorItem>) {
        let was = self.selected_item();
        self.items = items;
        self.refilter();
        if let Some(i) = was {
            self.select_item(i);
        }
    }

    /// Every item.
    pub fn items(&self) -> &[SelectorItem] {
        &self.items
    }

    /// The query typed so far.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// Replaces the query (one line, at most [`MAX_QUERY_CHARS`]).
    pub fn set_query(&mut self, query: &str) {
        self.query.clear();
        self.push_query(query);
    }

    /// Appends typed or pasted text to the query: one line, no control
    /// characters.
    pub fn push_query(&mut self, typed: &str) {
        let room = MAX_QUERY_CHARS.saturating_sub(self.query.chars().count());
        let cleaned = typed
            .chars()
            .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
            .filter(|c| !c.is_control())
            .take(room);
        self.query.extend(cleaned);
        self.refilter();
    }

    /// How many items match the query.
    pub fn matches(&self) -> usize {
        self.shown.len()
    }

    /// The indices of the matching items, best first.
    pub fn shown(&self) -> &[usize] {
        &self.shown
    }

    /// The highlighted item's index in the list given.
    pub fn selected_item(&self) -> Option<usize> {
        self.shown.get(self.selected).copied()
    }

    /// The matching items again, best first: by label score, then by
    /// detail score, ties in the order given (with `keep_order`, all in the
    /// order given). An empty query keeps that order. The highlight goes to
    /// the first match.
    fn refilter(&mut self) {
        let query = self.query.trim();
        if query.is_empty() {
            self.shown = (0..self.items.len()).collect();
        } else {
            let mut scored: Vec<(i64, usize)> = self
                .items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    let s = fuzzy::score(query, &item.label).or_else(|| {
                        fuzzy::score(query, &item.detail).map(|s| s - DETAIL_PENALTY)
                    })?;
                    Some((s, i))
                })
                .collect();
            if !self.keep_order {
                scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            }
            self.shown = scored.into_iter().map(|(_, i)| i).collect();
        }
        self.selected = 0;
        self.top = 0;
    }

    /// Moves the highlight by `by` rows: single steps wrap at the ends,
    /// pages stop there.
    pub fn step(&mut self, by: isize) {
        let n = self.shown.len();
        if n == 0 {
            return;
        }
        let at = self.selected as isize + by;
        self.selected = if by.abs() == 1 {
            at.rem_euclid(n as isize) as usize
        } else {
            at.clamp(0, n as isize - 1) as usize
        };
    }

    /// A key, read through `keys` (`tui.select.*`, Backspace and Ctrl+W
    /// for the query; any other character types into it).
    pub fn key(&mut self, key: &KeyEvent, keys: &Keybindings) -> SelectorKey {
        let page = self.page.max(1) as isize;
        if keys.matches(KeyAction::SelectCancel, key) {
            return SelectorKey::Cancel;
        }
        if keys.matches(KeyAction::SelectConfirm, key) {
            return match self.selected_item() {
                Some(i) => SelectorKey::Confirm(i),
                None => SelectorKey::Handled,
            };
        }
        if keys.matches(KeyAction::SelectUp, key) {
            self.step(-1);
        } else if keys.matches(KeyAction::SelectDown, key) {
            self.step(1);
        } else if keys.matches(KeyAction::SelectPageUp, key) {
            self.step(-page);
        } else if keys.matches(KeyAction::SelectPageDown, key) {
            self.step(page);
        } else if keys.matches(KeyAction::DeleteCharBackward, key) {
            let keep = self
                .query
                .grapheme_indices(true)
                .next_back()
                .map_or(0, |(i, _)| i);
            self.query.truncate(keep);
            self.refilter();
        } else if keys.matches(KeyAction::DeleteWordBackward, key) {
            let kept = self.query.trim_end().len();
            self.query.truncate(kept);
            let word = self.query.rfind(' ').map_or(0, |i| i + 1);
            self.query.truncate(word);
            self.refilter();
        } else if let Some(c) = typed_char(key) {
            self.push_query(c.encode_utf8(&mut [0; 4]));
        } else {
            return SelectorKey::Unhandled;
        }
        SelectorKey::Handled
    }

    /// The selector at `width`, at most `max_rows` high: the title with
    /// the count, the query row, the items in view and the keys; and the
    /// caret (at the query's end). A small screen drops the keys, then the
    /// title; the query and at least one item row stay.
    pub fn view(
        &mut self,
        width: usize,
        max_rows: usize,
        theme: &UiTheme,
    ) -> (Vec<StyledLine>, Option<(usize, usize)>) {
        let width = width.max(1);
        let max_rows = max_rows.max(1);
        let mut help = format!("up/down: move  enter: {}  esc: cancel", self.confirm);
        if !self.help.is_empty() {
            help = format!("{}  {help}", self.help);
        }
        // The status goes first, so a small screen drops the keys before it.
        let mut help_rows: Vec<StyledLine> = Vec::new();
        if let Some((status, error)) = &self.status {
            let style = if *error {
                theme.error
            } else {
                theme.tools.accent
            };
            help_rows.push(text::clip(
                &StyledLine::styled(status.clone(), style),
                width,
            ));
        }
        help_rows.extend(
            text::wrap(&StyledLine::styled(help, theme.dim), width)
                .iter()
                .map(|r| text::clip(r, width)),
        );
        let mut show_title = true;
        // The query row and one item row are the least a selector is.
        while 2 + usize::from(show_title) + help_rows.len() > max_rows {
            if help_rows.pop().is_none() {
                if !show_title {
                    break;
                }
                show_title = false;
            }
        }
        let fixed = 1 + usize::from(show_title) + help_rows.len();
        let item_rows = self.max_visible.min(max_rows.saturating_sub(fixed)).max(1);
        self.page = item_rows;
        let mut rows = Vec::with_capacity(max_rows);
        if show_title {
            let count = if self.loading {
                "  (loading...)".to_string()
            } else {
                format!("  ({}/{})", self.shown.len(), self.items.len())
            };
            rows.push(text::clip(
                &StyledLine::styled(self.title.clone(), theme.tools.accent.bold())
                    .push(count, theme.dim),
                width,
            ));
        }
        let (query_row, caret_col) = query_row(&self.query, width, theme);
        let caret = Some((rows.len(), caret_col));
        rows.push(query_row);
        if self.shown.is_empty() {
            let why = if self.loading {
                "loading..."
            } else if self.items.is_empty() {
                self.empty_text.as_str()
            } else {
                "no matches"
            };
            rows.push(text::clip(
                &StyledLine::styled(format!("   {why}"), theme.dim),
                width,
            ));
        } else {
            // The window follows the highlight.
            if self.selected < self.top {
                self.top = self.selected;
            } else if self.selected >= self.top + item_rows {
                self.top = self.selected + 1 - item_rows;
            }
            self.top = self.top.min(self.shown.len().saturating_sub(item_rows));
            let end = (self.top + item_rows).min(self.shown.len());
            rows.extend(self.item_rows(self.top, end, width, theme));
        }
        rows.extend(help_rows);
        rows.truncate(max_rows);
        (rows, caret)
    }

    /// The rows of `shown[from..to]`: labels in one column (as wide as
    /// the widest in view, at most three fifths of the row when details
    /// follow), details after them, hints at the right edge.
    fn item_rows(&self, from: usize, to: usize, width: usize, theme: &UiTheme) -> Vec<StyledLine> {
        const LEAD: usize = 3;
        let in_view = &self.shown[from..to];
        let flat = self.flat_when_filtering && !self.query.trim().is_empty();
        let indent_of = |item: &SelectorItem| {
            if flat {
                0
            } else {
                2 * item.indent.min(MAX_INDENT)
            }
        };
        let widest = in_view
            .iter()
            .map(|&i| indent_of(&self.items[i]) + text::str_width(&self.items[i].label))
            .max()
            .unwrap_or(0);
        let has_more = in_view
            .iter()
            .any(|&i| !self.items[i].detail.is_empty() || !self.items[i].hint.is_empty());
        let room = width.saturating_sub(LEAD);
        let cap = if has_more { room * 3 / 5 } else { room };
        let label_col = widest.min(cap.max(1));
        let query = self.query.trim();
        in_view
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let item = &self.items[i];
                let chosen = from + k == self.selected;
                let lead = format!(
                    "{}{} ",
                    if chosen { '>' } else { ' ' },
                    if item.marked { '*' } else { ' ' }
                );
                let mut label = StyledLine::styled(lead, theme.tools.accent);
                let pad = " ".repeat(indent_of(item).min(label_col));
                let base = if chosen { theme.user } else { Style::new() };
                let hit = theme.tools.accent.bold().underline();
                let marks = fuzzy::positions(query, &item.label).unwrap_or_default();
                let mut body = StyledLine::plain(pad);
                body.spans
                    .extend(highlighted(&item.label, &marks, base, hit).spans);
                let body = text::clip(&body, label_col);
                let body_w = text::line_width(&body);
                label.spans.extend(body.spans);
                let used = LEAD + body_w;
                let hint_w = text::str_width(&item.hint);
                let detail_at = LEAD + label_col + 2;
                let hint_fits = !item.hint.is_empty() && detail_at + hint_w < width;
                let detail_end = if hint_fits { width - hint_w - 1 } else { width };
                if !item.detail.is_empty() && detail_at < detail_end {
                    let detail = text::clip(
                        &StyledLine::styled(item.detail.clone(), theme.dim),
                        detail_end - detail_at,
                    );
                    label = label.push(" ".repeat(detail_at - used), Style::new());
                    label.spans.extend(detail.spans);
                }
                if hint_fits {
                    let at = text::line_width(&label);
                    label = label
                        .push(" ".repeat(width - hint_w - at), Style::new())
                        .push(item.hint.clone(), theme.dim);
                }
                text::clip(&label, width)
            })
            .collect()
    }
}

/// The query row (`search: ` and the query, its end kept in view) and
/// the caret's column.
fn query_row(query: &str, width: usize, theme: &UiTheme) -> (StyledLine, usize) {
    let label = "search: ";
    let label_w = text::str_width(label);
    let room = width.saturating_sub(label_w + 1);
    let mut tail = String::new();
    let mut used = 0;
    for g in query.graphemes(true).rev() {
        let w = text::grapheme_width(g);
        if used + w > room {
            break;
        }
        used += w;
        tail.insert_str(0, g);
    }
    let row = text::clip(
        &StyledLine::styled(label, theme.dim).push(text::clean(&tail), theme.user),
        width,
    );
    let caret = text::line_width(&row).min(width - 1);
    (row, caret)
}

/// `label` in `base`, the characters at `marks` (indices in its chars) in
/// `hit`.
fn highlighted(label: &str, marks: &[usize], base: Style, hit: Style) -> StyledLine {
    let mut line = StyledLine::new();
    let mut run = String::new();
    let mut run_hit = false;
    let mut next = marks.iter().copied().peekable();
    for (i, c) in label.chars().enumerate() {
        let is_hit = next.peek() == Some(&i);
        if is_hit {
            next.next();
        }
        if is_hit != run_hit && !run.is_empty() {
            line = line.push(std::mem::take(&mut run), if run_hit { hit } else { base });
        }
        run_hit = is_hit;
        run.push(c);
    }
    if !run.is_empty() {
        line = line.push(run, if run_hit { hit } else { base });
    }
    line
}

/// A key that types its character: no Ctrl or Alt.
fn typed_char(key: &KeyEvent) -> Option<char> {
    match key.code {
        KeyCode::Char(c)
            if !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SUPER) =>
        {
            Some(c)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_split_a_label_into_runs() {
        let line = highlighted("abcd", &[1, 2], Style::new(), Style::new().bold());
        let texts: Vec<&str> = line.spans.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["a", "bc", "d"]);
    }

    #[test]
    fn a_long_query_shows_its_end() {
        let (row, caret) = query_row(&"x".repeat(100), 20, &UiTheme::plain());
        assert!(text::line_width(&row) <= 20);
        assert_eq!(caret, 19);
    }
}
