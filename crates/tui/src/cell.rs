//! Transcript cells: what one message block looks like, with a render
//! cache per cell and width.
//!
//! A cell draws *logical* lines (a paragraph is one line) for the
//! terminal's scrollback, and *rows* (wrapped and clipped to the width)
//! for the live region. Both are cached; a settled cell is drawn again
//! only when the width, the theme or its expansion changes.

use std::path::PathBuf;

use agent_core::AgentToolResult;
use agent_tool::{StyledLine, StyledText};
use coding_agent::{RenderContext, RenderResultOptions, RenderShell, ToolRegistry};
use serde_json::Value;

use crate::markdown::MarkdownStream;
use crate::text;
use crate::theme::UiTheme;

/// What cells need to draw themselves.
#[derive(Clone)]
pub struct CellContext {
    /// The styles.
    pub theme: UiTheme,
    /// The session's tools, whose renderers draw calls and results.
    pub registry: Option<ToolRegistry>,
    /// The working directory (renderers shorten paths with it).
    pub cwd: PathBuf,
}

/// Where a tool call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    /// The model is still writing the arguments.
    Streaming,
    /// Running (or waiting for approval).
    Running,
    /// Finished.
    Ok,
    /// Failed.
    Error,
}

/// One tool call and its result.
#[derive(Debug, Clone)]
pub struct ToolCell {
    /// The call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments (partial while streaming).
    pub args: Value,
    /// Where the call is.
    pub status: ToolStatus,
    /// The latest partial result while running.
    pub partial: Option<AgentToolResult>,
    /// The final result.
    pub result: Option<AgentToolResult>,
    /// Whether the whole result is shown.
    pub expanded: bool,
    /// Calls the tool made through the loop (a script's `tools.read(...)`),
    /// in the order they started; drawn inside this cell.
    pub nested: Vec<NestedCall>,
}

/// A call a running tool made (an event with `parentToolCallId`): one
/// line under its parent's header.
#[derive(Debug, Clone, PartialEq)]
pub struct NestedCall {
    /// The call id (`<parent id>/<n>`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments.
    pub args: Value,
    /// Where the call is (never `Streaming`).
    pub status: ToolStatus,
    /// The first line of its error text, once it failed.
    pub error: Option<String>,
}

/// Nested calls a collapsed cell shows: the latest ones, the others
/// counted in one line.
const NESTED_COLLAPSED: usize = 8;

impl ToolCell {
    /// A call without a result yet, collapsed.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        args: Value,
        status: ToolStatus,
    ) -> Self {
        ToolCell {
            id: id.into(),
            name: name.into(),
            args,
            status,
            partial: None,
            result: None,
            expanded: false,
            nested: Vec::new(),
        }
    }
}

/// What a cell shows.
#[derive(Debug, Clone)]
pub enum CellKind {
    /// The user's message.
    User(String),
    /// Assistant text, Markdown.
    Assistant(MarkdownStream),
    /// Thinking, dim.
    Thinking(String),
    /// A tool call.
    Tool(Box<ToolCell>),
    /// A notice from the UI (command output, errors, cancellation).
    Notice {
        /// The text.
        text: String,
        /// Whether it reports a failure.
        error: bool,
    },
}

/// One entry of the transcript.
#[derive(Debug, Clone)]
pub struct Cell {
    kind: CellKind,
    /// Whether it can still change.
    settled: bool,
    /// Bumped at every change; caches key on it.
    version: u64,
    lines_cache: Option<(u64, usize, Vec<StyledLine>)>,
    rows_cache: Option<(u64, usize, Vec<StyledLine>)>,
    /// Times it was drawn or wrapped (a cache miss): counts work, for
    /// tests, as [`MarkdownStream::parsed_blocks`] does.
    renders: usize,
    /// Logical lines wrapped into rows in all (counts work, for tests).
    wrapped_lines: usize,
    /// For a streaming answer: how much of `rows_cache` comes from its
    /// settled Markdown blocks (kept across deltas; see [`Cell::rows`]).
    stream_rows: Option<StreamRows>,
}

/// The part of a streaming answer's rows that its next change keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StreamRows {
    width: usize,
    /// The stream's [`MarkdownStream::restarts`] when they were made.
    restarts: u64,
    /// Settled lines wrapped, and the rows they gave (a prefix of the rows).
    lines: usize,
    rows: usize,
}

impl Cell {
    /// A cell; `settled` when it will not change.
    pub fn new(kind: CellKind, settled: bool) -> Self {
        Cell {
            kind,
            settled,
            version: 0,
            lines_cache: None,
            rows_cache: None,
            renders: 0,
            wrapped_lines: 0,
            stream_rows: None,
        }
    }

    /// Bumped at every change of what it shows: a layout that measured
    /// the cell at one version knows its height holds while it is the same.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// How many times it was drawn into lines or wrapped into rows (its
    /// caches missed): what tests count to prove that only what is shown
    /// is drawn.
    pub fn renders(&self) -> usize {
        self.renders
    }

    /// How many logical lines were wrapped into rows in all: what tests
    /// count to prove that a streaming answer's settled blocks are not
    /// wrapped again at each delta.
    pub fn wrapped_lines(&self) -> usize {
        self.wrapped_lines
    }

    /// Its rows at `width`, without drawing it: exact when its rows at
    /// that width are cached; else a guess from a cache at another width
    /// (scaled) or from the length of its text. What a layout uses for a
    /// cell nobody has looked at yet (fullscreen's scroll position and
    /// "rows below" rest on it until the cell is measured).
    pub fn estimated_rows(&self, width: usize) -> usize {
        let width = width.max(1);
        if let Some((v, w, rows)) = &self.rows_cache {
            if *v == self.version && *w == width {
                return rows.len();
            }
            if *v == self.version {
                // The same text reflowed: about as many cells in all.
                return (rows.len() * *w).div_ceil(width).max(1);
            }
        }
        // A guess in O(1): the text's bytes over the width, one row more
        // for the line the text ends on.
        let rows_of = |bytes: usize| 1 + bytes / width;
        match &self.kind {
            CellKind::User(text) | CellKind::Thinking(text) => rows_of(text.len()),
            CellKind::Notice { text, .. } => rows_of(text.len()),
            // Blocks are apart by blank lines: a few rows more.
            CellKind::Assistant(md) => rows_of(md.source().len()) + 2,
            CellKind::Tool(call) => {
                let result = call.result.as_ref().or(call.partial.as_ref());
                let texts = || {
                    result
                        .into_iter()
                        .flat_map(|r| &r.content)
                        .filter_map(|b| match b {
                            agent_ai::ContentBlock::Text(t) => Some(t.text.as_str()),
                            _ => None,
                        })
                };
                let body = match result {
                    None => 0,
                    Some(_) if call.expanded => rows_of(texts().map(str::len).sum()),
                    // A collapsed preview: at most ten lines and a count
                    // (newlines counted no further than that).
                    Some(_) => {
                        let lines = texts()
                            .flat_map(|t| t.bytes().filter(|&b| b == b'\n'))
                            .take(11)
                            .count()
                            .max(1);
                        lines.min(10) + usize::from(lines > 10)
                    }
                };
                1 + call.nested.len().min(NESTED_COLLAPSED + 1) + body
            }
        }
    }

    /// What it shows.
    pub fn kind(&self) -> &CellKind {
        &self.kind
    }

    /// Changes what it shows (the caches are dropped).
    pub fn kind_mut(&mut self) -> &mut CellKind {
        self.version += 1;
        &mut self.kind
    }

    /// Whether it will not change any more.
    pub fn is_settled(&self) -> bool {
        self.settled
    }

    /// Marks it final.
    pub fn settle(&mut self) {
        if !self.settled {
            self.settled = true;
            self.version += 1;
        }
    }

    /// Drops the caches (theme or expansion changed).
    pub fn invalidate(&mut self) {
        self.version += 1;
    }

    /// An answer drawn with another theme than `cx`'s is drawn again (its
    /// Markdown styles are set while parsing), the caches dropped; a
    /// resumed answer is parsed now, the first time it is drawn.
    fn sync_theme(&mut self, cx: &CellContext) {
        if let CellKind::Assistant(md) = &mut self.kind
            && md.restyle(&cx.theme)
        {
            self.version += 1;
        }
    }

    /// The logical lines at `width` (cached).
    pub fn lines(&mut self, cx: &CellContext, width: usize) -> &[StyledLine] {
        self.sync_theme(cx);
        let fresh =
            matches!(&self.lines_cache, Some((v, w, _)) if *v == self.version && *w == width);
        if !fresh {
            self.renders += 1;
            let lines = draw(&self.kind, self.settled, cx, width);
            self.lines_cache = Some((self.version, width, lines));
        }
        match &self.lines_cache {
            Some((_, _, lines)) => lines,
            None => &[],
        }
    }

    /// The lines wrapped into rows of at most `width` columns (cached).
    /// A streaming answer keeps the rows of its settled blocks across its
    /// changes and wraps only the open block again, so following a long
    /// answer in fullscreen costs the delta, not the answer.
    pub fn rows(&mut self, cx: &CellContext, width: usize) -> &[StyledLine] {
        self.sync_theme(cx);
        let fresh =
            matches!(&self.rows_cache, Some((v, w, _)) if *v == self.version && *w == width);
        if !fresh && !self.settled && matches!(self.kind, CellKind::Assistant(_)) {
            self.renders += 1;
            self.stream_rows_at(width);
        } else if !fresh {
            self.renders += 1;
            self.stream_rows = None;
            let lines = self.lines(cx, width).len();
            self.wrapped_lines += lines;
            let rows: Vec<StyledLine> = text::wrap_all(self.lines(cx, width), width)
                .iter()
                .map(|r| text::clip(r, width))
                .collect();
            self.rows_cache = Some((self.version, width, rows));
        }
        match &self.rows_cache {
            Some((_, _, rows)) => rows,
            None => &[],
        }
    }

    /// A streaming answer's rows at `width` into `rows_cache`: the rows
    /// of settled blocks wrapped before are kept (same width, no restart),
    /// the newly settled lines and the open block wrapped.
    fn stream_rows_at(&mut self, width: usize) {
        let CellKind::Assistant(md) = &self.kind else {
            return;
        };
        let mut rows = match self.rows_cache.take() {
            Some((_, w, rows)) if w == width => rows,
            _ => Vec::new(),
        };
        let kept = self
            .stream_rows
            .filter(|s| s.width == width && s.restarts == md.restarts())
            .filter(|s| s.lines <= md.settled_lines().len() && s.rows <= rows.len());
        let (from_line, keep) = kept.map_or((0, 0), |s| (s.lines, s.rows));
        rows.truncate(keep);
        let settled = md.settled_lines();
        let wrap_into = |rows: &mut Vec<StyledLine>, line: &StyledLine| {
            rows.extend(text::wrap(line, width).iter().map(|r| text::clip(r, width)));
        };
        for line in &settled[from_line..] {
            wrap_into(&mut rows, line);
        }
        let settled_rows = rows.len();
        // The open block (after the blank line that parts it from them).
        let open = md.lines_from(settled.len());
        for line in &open {
            wrap_into(&mut rows, line);
        }
        self.wrapped_lines += settled.len() - from_line + open.len();
        self.stream_rows = Some(StreamRows {
            width,
            restarts: md.restarts(),
            lines: settled.len(),
            rows: settled_rows,
        });
        self.rows_cache = Some((self.version, width, rows));
    }

    /// The lines from `start` on that can no longer change, and how many
    /// such lines there are in all: every line of a settled cell; the
    /// settled Markdown blocks of a streaming answer; nothing otherwise.
    /// Costs the lines returned, not the cell.
    pub fn stable_lines_from(
        &mut self,
        cx: &CellContext,
        width: usize,
        start: usize,
    ) -> (usize, Vec<StyledLine>) {
        self.sync_theme(cx);
        if self.settled {
            let lines = self.lines(cx, width);
            return (lines.len(), lines.get(start..).unwrap_or_default().to_vec());
        }
        match &self.kind {
            CellKind::Assistant(md) => {
                let settled = md.settled_lines();
                (
                    settled.len(),
                    settled.get(start..).unwrap_or_default().to_vec(),
                )
            }
            _ => (0, Vec::new()),
        }
    }

    /// A settled cell's lines from `start` on, for the scrollback it goes
    /// into for good: moved out of the cache rather than copied, and an
    /// answer's parsed Markdown dropped (its text is kept). Inline mode
    /// never draws such a cell again, so a long session keeps its text
    /// once, not three times; fullscreen draws it anew if it shows it.
    pub fn into_history(
        &mut self,
        cx: &CellContext,
        width: usize,
        start: usize,
    ) -> (usize, Vec<StyledLine>) {
        if !self.settled {
            return self.stable_lines_from(cx, width, start);
        }
        self.lines(cx, width);
        let mut lines = self
            .lines_cache
            .take()
            .map(|(_, _, lines)| lines)
            .unwrap_or_default();
        self.rows_cache = None;
        if let CellKind::Assistant(md) = &mut self.kind {
            md.forget_lines();
        }
        let total = lines.len();
        lines.drain(..start.min(total));
        (total, lines)
    }

    /// Every line from `start` on (the part of a cell not yet in the
    /// scrollback). A streaming answer gives them without drawing or
    /// copying what came before.
    pub fn lines_from(&mut self, cx: &CellContext, width: usize, start: usize) -> Vec<StyledLine> {
        self.sync_theme(cx);
        match &self.kind {
            CellKind::Assistant(md) if !self.settled => md.lines_from(start),
            _ => self
                .lines(cx, width)
                .get(start..)
                .unwrap_or_default()
                .to_vec(),
        }
    }
}

fn draw(kind: &CellKind, settled: bool, cx: &CellContext, width: usize) -> Vec<StyledLine> {
    let theme = &cx.theme;
    match kind {
        CellKind::User(text) => text
            .split('\n')
            .enumerate()
            .map(|(i, l)| {
                let prefix = if i == 0 { "> " } else { "  " };
                StyledLine::styled(prefix, theme.dim).push(text::clean(l), theme.user)
            })
            .collect(),
        CellKind::Assistant(md) => md.lines(),
        CellKind::Thinking(text) => text
            .trim()
            .split('\n')
            .map(|l| StyledLine::styled(text::clean(l), theme.thinking))
            .collect(),
        CellKind::Notice { text, error } => {
            let style = if *error { theme.error } else { theme.dim };
            text.trim_end()
                .split('\n')
                .map(|l| StyledLine::styled(text::clean(l), style))
                .collect()
        }
        CellKind::Tool(call) => draw_tool(call, settled, cx, width),
    }
}

/// A tool call through its renderers, tinted by status. A renderer that
/// panics is replaced by the default view.
fn draw_tool(call: &ToolCell, _settled: bool, cx: &CellContext, width: usize) -> Vec<StyledLine> {
    let theme = &cx.theme;
    let ctx = RenderContext {
        cwd: cx.cwd.clone(),
        width: width.saturating_sub(2).max(1),
    };
    let (mark, tint) = match call.status {
        ToolStatus::Streaming | ToolStatus::Running => ("* ", theme.pending),
        ToolStatus::Ok => ("* ", theme.ok),
        ToolStatus::Error => ("x ", theme.error),
    };
    let header = guarded(
        || match &cx.registry {
            Some(r) => r.render_call(&call.name, &call.args, &theme.tools, &ctx),
            None => coding_agent::default_render_call(&call.name, &call.args, &theme.tools),
        },
        || coding_agent::default_render_call(&call.name, &call.args, &theme.tools),
    );
    let mut out = Vec::new();
    for (i, line) in header.lines.iter().enumerate() {
        let lead = if i == 0 { mark } else { "  " };
        let mut l = StyledLine::styled(lead, tint);
        l.spans.extend(text::clean_line(line).spans);
        out.push(l);
    }
    draw_nested(call, cx, width, &mut out);
    let (result, partial) = match (&call.result, &call.partial) {
        (Some(r), _) => (r, false),
        (None, Some(p)) => (p, true),
        (None, None) => return out,
    };
    let shell = cx.registry.as_ref().map(|r| r.render_shell(&call.name));
    let indent = match shell {
        Some(RenderShell::SelfDrawn) => "",
        _ => "  ",
    };
    // A final result that carries a unified diff is drawn as one, with
    // line numbers, whatever the tool (a tool drawing itself keeps its own).
    if !partial && call.status == ToolStatus::Ok && shell != Some(RenderShell::SelfDrawn) {
        let diff = crate::diff::find_unified_diff(&result.details).and_then(crate::diff::parse);
        if let Some(diff) = diff {
            let rows = crate::diff::render(&diff, width.saturating_sub(2), theme, call.expanded);
            out.extend(rows.into_iter().map(|row| {
                let mut l = StyledLine::plain(indent);
                l.spans.extend(row.spans);
                l
            }));
            return out;
        }
    }
    let options = RenderResultOptions {
        expanded: call.expanded,
        is_partial: partial,
        is_error: call.status == ToolStatus::Error,
    };
    let fallback = || coding_agent::default_render_result(result, &options, &theme.tools, 10);
    let view = guarded(
        || match &cx.registry {
            Some(r) => r.render_result(&call.name, result, &options, &theme.tools, &ctx),
            None => fallback(),
        },
        fallback,
    );
    for line in &view.lines {
        let mut l = StyledLine::plain(indent);
        l.spans.extend(text::clean_line(line).spans);
        out.push(l);
    }
    out
}

/// The calls the tool made, one line each under its header (`↳` tinted
/// by status, the nested tool's own call line), a failure's first line
/// below it. Collapsed, only the latest [`NESTED_COLLAPSED`] are drawn.
fn draw_nested(call: &ToolCell, cx: &CellContext, width: usize, out: &mut Vec<StyledLine>) {
    let theme = &cx.theme;
    let ctx = RenderContext {
        cwd: cx.cwd.clone(),
        width: width.saturating_sub(4).max(1),
    };
    let hidden = if call.expanded {
        0
    } else {
        call.nested.len().saturating_sub(NESTED_COLLAPSED)
    };
    if hidden > 0 {
        let s = if hidden == 1 { "" } else { "s" };
        out.push(StyledLine::styled(
            format!("  ↳ … {hidden} earlier call{s}"),
            theme.dim,
        ));
    }
    for nested in &call.nested[hidden..] {
        let tint = match nested.status {
            ToolStatus::Streaming | ToolStatus::Running => theme.pending,
            ToolStatus::Ok => theme.ok,
            ToolStatus::Error => theme.error,
        };
        let header = guarded(
            || match &cx.registry {
                Some(r) => r.render_call(&nested.name, &nested.args, &theme.tools, &ctx),
                None => coding_agent::default_render_call(&nested.name, &nested.args, &theme.tools),
            },
            || coding_agent::default_render_call(&nested.name, &nested.args, &theme.tools),
        );
        let mut l = StyledLine::styled("  ↳ ", tint);
        if let Some(first) = header.lines.first() {
            l.spans.extend(text::clean_line(first).spans);
        }
        out.push(l);
        if let Some(error) = &nested.error {
            out.push(StyledLine::styled(
                format!("    {}", text::clean(error)),
                theme.error,
            ));
        }
    }
}

/// Runs a renderer; a panic gives `fallback()` instead (and is logged).
fn guarded(
    render: impl FnOnce() -> StyledText,
    fallback: impl FnOnce() -> StyledText,
) -> StyledText {
    match crate::terminal::catch_renderer_panic(render) {
        Some(text) => text,
        None => fallback(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> CellContext {
        CellContext {
            theme: UiTheme::plain(),
            registry: None,
            cwd: PathBuf::from("/"),
        }
    }

    #[test]
    fn rows_are_cached_per_width_and_version() {
        let mut cell = Cell::new(CellKind::User("hello world".into()), true);
        let cx = cx();
        assert_eq!(text::plain(cell.rows(&cx, 8)), "> hello\nworld");
        assert_eq!(text::plain(cell.rows(&cx, 80)), "> hello world");
        if let CellKind::User(t) = cell.kind_mut() {
            t.push('!');
        }
        assert_eq!(text::plain(cell.rows(&cx, 80)), "> hello world!");
    }

    #[test]
    fn tool_cells_show_status_and_result() {
        let mut call = ToolCell {
            id: "1".into(),
            name: "probe".into(),
            args: serde_json::json!({"x": 1}),
            status: ToolStatus::Running,
            partial: None,
            result: None,
            expanded: false,
            nested: Vec::new(),
        };
        let cx = cx();
        let mut cell = Cell::new(CellKind::Tool(Box::new(call.clone())), false);
        assert_eq!(text::plain(cell.lines(&cx, 80)), "* probe {\"x\":1}");
        call.status = ToolStatus::Error;
        call.result = Some(AgentToolResult::text("bad\x1b[2J"));
        let mut cell = Cell::new(CellKind::Tool(Box::new(call)), true);
        let out = text::plain(cell.lines(&cx, 80));
        assert_eq!(out, "x probe {\"x\":1}\n  bad␛[2J");
    }
}
