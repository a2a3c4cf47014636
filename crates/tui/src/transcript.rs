//! The transcript: cells built from the session's messages and kept up to
//! date by its events, and which of them the scrollback already holds.
//!
//! Cells are committed to the scrollback in order, each once it is
//! settled; a streaming answer commits its finished Markdown blocks as
//! they complete. Everything after the first unsettled cell stays in the
//! live region, so output keeps call order.

use std::collections::HashMap;

use agent_ai::{AssistantMessage, ContentBlock, Message, StopReason};
use agent_core::{AgentEvent, AgentToolResult};
use agent_tool::StyledLine;

use crate::cell::{Cell, CellContext, CellKind, NestedCall, ToolCell, ToolStatus};
use crate::markdown::MarkdownStream;
use crate::text;
use crate::theme::UiTheme;

/// Cells and the commit point.
#[derive(Debug, Default, Clone)]
pub struct Transcript {
    cells: Vec<Cell>,
    /// Cells wholly in the scrollback.
    committed: usize,
    /// Lines of the first uncommitted cell already in the scrollback.
    head_lines: usize,
    /// Whether the scrollback holds any of our lines (for separators).
    started: bool,
    /// The streaming assistant message: content index to cell index.
    blocks: HashMap<usize, usize>,
    /// Tool call id to cell index.
    tools: HashMap<String, usize>,
    /// What Markdown is drawn with.
    theme: UiTheme,
    /// Changes when cells anywhere may have changed at once (a new
    /// transcript, a theme, expansion toggled): a layout that keeps
    /// heights measured from it starts over then.
    generation: u64,
}

/// A new [`Transcript::generation`], never given before in this process.
fn next_generation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Transcript {
    /// An empty transcript drawn with `theme`.
    pub fn new(theme: UiTheme) -> Self {
        Transcript {
            theme,
            generation: next_generation(),
            ..Self::default()
        }
    }

    /// Which state of the whole the cells are in: it changes when cells
    /// anywhere may have changed together (a new transcript, a theme,
    /// expansion toggled), not when one is added or one streams (a
    /// layout watches the cells that are not settled for those).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The transcript of a session's messages, every cell settled.
    pub fn from_messages(messages: &[Message], theme: UiTheme) -> Self {
        let mut t = Transcript::new(theme);
        for m in messages {
            match m {
                Message::User(u) => t.push(CellKind::User(u.text()), true),
                Message::Assistant(a) => {
                    t.blocks.clear();
                    // Parsed when first drawn: a long session's answers
                    // cost nothing until shown.
                    t.assistant_blocks(a, true, true);
                    t.assistant_end(a);
                }
                Message::ToolResult(r) => {
                    let result = AgentToolResult {
                        content: r.content.clone(),
                        details: r.details.clone(),
                        ..Default::default()
                    };
                    t.tool_end(&r.tool_call_id, &r.tool_name, result, r.is_error);
                }
            }
        }
        t.settle_all();
        t
    }

    /// The cells.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// The cells, to draw from their caches or change one (fullscreen
    /// draws and expands cells in place).
    pub fn cells_mut(&mut self) -> &mut [Cell] {
        &mut self.cells
    }

    /// Adds a cell.
    pub fn push(&mut self, kind: CellKind, settled: bool) {
        if let CellKind::Tool(call) = &kind {
            self.tools.insert(call.id.clone(), self.cells.len());
        }
        self.cells.push(Cell::new(kind, settled));
    }

    /// Draws with `theme` from now on (give the cells' context the same):
    /// every cell drops its caches, and an answer's Markdown is parsed
    /// again when it is next drawn, so answers already in the scrollback
    /// cost nothing.
    pub fn set_theme(&mut self, theme: UiTheme) {
        self.theme = theme;
        self.generation = next_generation();
        for cell in &mut self.cells {
            cell.invalidate();
        }
    }

    /// A notice cell (command output, errors).
    pub fn notice(&mut self, text: impl Into<String>, error: bool) {
        self.push(
            CellKind::Notice {
                text: text.into(),
                error,
            },
            true,
        );
    }

    /// Whether the scrollback holds any of the transcript.
    pub fn has_history(&self) -> bool {
        self.started
    }

    /// Whether a tool call is running.
    pub fn has_running_tools(&self) -> bool {
        self.cells.iter().any(
            |c| matches!(c.kind(), CellKind::Tool(t) if matches!(t.status, ToolStatus::Running)),
        )
    }

    /// Applies one agent event.
    pub fn apply(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageStart { message } => match message {
                Message::User(u) => self.push(CellKind::User(u.text()), true),
                Message::Assistant(_) => self.blocks.clear(),
                Message::ToolResult(_) => {}
            },
            AgentEvent::MessageUpdate { message, .. } => {
                self.assistant_blocks(message, false, false);
            }
            AgentEvent::MessageEnd {
                message: Message::Assistant(a),
            } => {
                self.assistant_blocks(a, true, false);
                self.assistant_end(a);
            }
            // A call a running tool made is a line inside its parent's cell,
            // never a cell of its own.
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
                parent_tool_call_id: Some(parent),
            } => {
                if let Some(call) = self.running_parent(parent) {
                    call.nested.push(NestedCall {
                        id: tool_call_id.clone(),
                        name: tool_name.clone(),
                        args: args.clone(),
                        status: ToolStatus::Running,
                        error: None,
                    });
                }
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                parent_tool_call_id: Some(parent),
                ..
            } => {
                if let Some(nested) = self.nested_call(parent, tool_call_id) {
                    nested.status = if *is_error {
                        ToolStatus::Error
                    } else {
                        ToolStatus::Ok
                    };
                    nested.error = is_error.then(|| {
                        let text = result.text_content();
                        text.lines().next().unwrap_or_default().to_string()
                    });
                }
            }
            // A nested call's progress is not drawn: its line shows its status.
            AgentEvent::ToolExecutionUpdate {
                parent_tool_call_id: Some(_),
                ..
            } => {}
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
                parent_tool_call_id: None,
            } => {
                if let Some(call) = self.tool_cell(tool_call_id, tool_name) {
                    call.args = args.clone();
                    call.status = ToolStatus::Running;
                }
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                partial_result,
                ..
            } => {
                if let Some(call) = self.tool_cell(tool_call_id, tool_name) {
                    call.partial = Some(partial_result.clone());
                }
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                parent_tool_call_id: None,
            } => self.tool_end(tool_call_id, tool_name, result.clone(), *is_error),
            AgentEvent::AutoCompactionStart { reason } => {
                self.notice(format!("compacting the context ({reason})..."), false);
            }
            AgentEvent::AutoCompactionEnd {
                aborted,
                error_message,
                ..
            } => match (aborted, error_message) {
                (_, Some(e)) => self.notice(format!("compaction failed: {e}"), true),
                (true, None) => self.notice("compaction cancelled", true),
                (false, None) => self.notice("context compacted", false),
            },
            AgentEvent::AgentEnd { .. } => self.settle_all(),
            _ => {}
        }
    }

    /// Cells for the blocks of an assistant message (streaming or final);
    /// `defer` leaves new answers' Markdown to be parsed when drawn.
    fn assistant_blocks(&mut self, message: &AssistantMessage, done: bool, defer: bool) {
        let theme = self.theme;
        for (i, block) in message.content.iter().enumerate() {
            let index = match self.blocks.get(&i) {
                Some(&index) => index,
                None => {
                    let kind = match block {
                        ContentBlock::Text(t) if defer => {
                            CellKind::Assistant(MarkdownStream::deferred(&t.text))
                        }
                        ContentBlock::Text(_) => CellKind::Assistant(MarkdownStream::new()),
                        ContentBlock::Thinking(_) => CellKind::Thinking(String::new()),
                        ContentBlock::ToolCall(call) => CellKind::Tool(Box::new(ToolCell::new(
                            call.id.clone(),
                            call.name.clone(),
                            call.arguments.clone(),
                            ToolStatus::Streaming,
                        ))),
                        ContentBlock::Image(_) => continue,
                    };
                    self.push(kind, false);
                    self.blocks.insert(i, self.cells.len() - 1);
                    self.cells.len() - 1
                }
            };
            let cell = &mut self.cells[index];
            match (block, cell.kind()) {
                (ContentBlock::Text(t), CellKind::Assistant(md)) if md.source() != t.text => {
                    if let CellKind::Assistant(md) = cell.kind_mut() {
                        md.set(&t.text, &theme);
                    }
                }
                (ContentBlock::Thinking(t), CellKind::Thinking(old)) if *old != t.thinking => {
                    *cell.kind_mut() = CellKind::Thinking(t.thinking.clone());
                }
                (ContentBlock::ToolCall(c), CellKind::Tool(old)) if old.args != c.arguments => {
                    if let CellKind::Tool(call) = cell.kind_mut() {
                        call.args = c.arguments.clone();
                    }
                }
                _ => {}
            }
            // A block is finished once the message ends or a later block
            // began (a tool call waits for its result).
            let finished = done || i + 1 < message.content.len();
            if finished && !matches!(block, ContentBlock::ToolCall(_)) {
                cell.settle();
            }
        }
    }

    /// The end of an assistant message: its failure as a notice.
    fn assistant_end(&mut self, a: &AssistantMessage) {
        match a.stop_reason {
            StopReason::Aborted => self.notice("cancelled", true),
            StopReason::Error => self.notice(
                format!(
                    "error: {}",
                    a.error_message.as_deref().unwrap_or("the request failed")
                ),
                true,
            ),
            _ => {}
        }
    }

    /// The cell of the parent of a nested call, to change, while it can
    /// still change: a settled cell may already be in the scrollback, so a
    /// late nested event (from a handle a tool kept) is dropped, as is one
    /// whose parent has no cell.
    fn running_parent(&mut self, parent: &str) -> Option<&mut ToolCell> {
        let &index = self.tools.get(parent)?;
        let cell = self.cells.get_mut(index)?;
        if cell.is_settled() || !matches!(cell.kind(), CellKind::Tool(_)) {
            return None;
        }
        match cell.kind_mut() {
            CellKind::Tool(call) => Some(call),
            _ => None,
        }
    }

    /// Nested call `id` of `parent`, to change, while its parent's cell
    /// can still change (see [`Self::running_parent`]).
    fn nested_call(&mut self, parent: &str, id: &str) -> Option<&mut NestedCall> {
        let &index = self.tools.get(parent)?;
        let cell = self.cells.get_mut(index)?;
        // Looked up before `kind_mut`, which would drop the caches.
        let present = !cell.is_settled()
            && matches!(cell.kind(), CellKind::Tool(call) if call.nested.iter().any(|n| n.id == id));
        if !present {
            return None;
        }
        match cell.kind_mut() {
            CellKind::Tool(call) => call.nested.iter_mut().find(|n| n.id == id),
            _ => None,
        }
    }

    /// The cell of call `id`, made (running) if the call is new.
    fn tool_cell(&mut self, id: &str, name: &str) -> Option<&mut ToolCell> {
        let known = self
            .tools
            .get(id)
            .copied()
            .filter(|&i| matches!(self.cells.get(i).map(Cell::kind), Some(CellKind::Tool(_))));
        let index = match known {
            Some(i) => i,
            None => {
                let call = ToolCell::new(id, name, serde_json::Value::Null, ToolStatus::Running);
                self.push(CellKind::Tool(Box::new(call)), false);
                self.cells.len() - 1
            }
        };
        match self.cells.get_mut(index).map(Cell::kind_mut) {
            Some(CellKind::Tool(call)) => Some(call),
            _ => None,
        }
    }

    fn tool_end(&mut self, id: &str, name: &str, result: AgentToolResult, is_error: bool) {
        if let Some(call) = self.tool_cell(id, name) {
            call.result = Some(result);
            call.partial = None;
            call.status = if is_error {
                ToolStatus::Error
            } else {
                ToolStatus::Ok
            };
        }
        if let Some(&i) = self.tools.get(id) {
            self.cells[i].settle();
        }
    }

    /// Settles every cell (the run ended).
    pub fn settle_all(&mut self) {
        for cell in &mut self.cells {
            let unfinished =
                |s: ToolStatus| matches!(s, ToolStatus::Running | ToolStatus::Streaming);
            if let CellKind::Tool(call) = cell.kind()
                && (unfinished(call.status) || call.nested.iter().any(|n| unfinished(n.status)))
                && let CellKind::Tool(call) = cell.kind_mut()
            {
                if unfinished(call.status) {
                    call.status = ToolStatus::Error;
                }
                for nested in &mut call.nested {
                    if unfinished(nested.status) {
                        nested.status = ToolStatus::Error;
                    }
                }
            }
            cell.settle();
        }
    }

    /// Toggles the expansion of every tool result (settled cells in the
    /// scrollback keep their drawing; the live region's redraw).
    pub fn toggle_expanded(&mut self) {
        self.generation = next_generation();
        for cell in &mut self.cells[self.committed..] {
            if let CellKind::Tool(_) = cell.kind()
                && let CellKind::Tool(call) = cell.kind_mut()
            {
                call.expanded = !call.expanded;
            }
        }
    }

    /// Expands (or collapses) every tool result, wherever it is (what
    /// fullscreen's Ctrl+O does: it draws every cell itself). Only the
    /// cells that change drop their caches; they are drawn again when
    /// next shown. How many changed.
    pub fn set_expanded_all(&mut self, expanded: bool) -> usize {
        let mut changed = 0;
        for cell in &mut self.cells {
            if matches!(cell.kind(), CellKind::Tool(call) if call.expanded != expanded)
                && let CellKind::Tool(call) = cell.kind_mut()
            {
                call.expanded = expanded;
                changed += 1;
            }
        }
        if changed > 0 {
            self.generation = next_generation();
        }
        changed
    }

    /// Toggles the expansion of the tool call in cell `index`; whether
    /// there was one. The transcript's generation stays: the cell's own
    /// version tells a layout it changed.
    pub fn toggle_expanded_at(&mut self, index: usize) -> bool {
        match self.cells.get_mut(index) {
            Some(cell) if matches!(cell.kind(), CellKind::Tool(_)) => {
                if let CellKind::Tool(call) = cell.kind_mut() {
                    call.expanded = !call.expanded;
                }
                true
            }
            _ => false,
        }
    }

    /// The lines newly ready for the scrollback, marked as committed.
    pub fn take_history(&mut self, cx: &CellContext, width: usize) -> Vec<StyledLine> {
        let mut out = Vec::new();
        while self.committed < self.cells.len() {
            let cell = &mut self.cells[self.committed];
            let settled = cell.is_settled();
            let (total, new) = cell.into_history(cx, width, self.head_lines);
            if total > self.head_lines {
                if self.head_lines == 0 && self.started {
                    out.push(StyledLine::new());
                }
                out.extend(new);
                self.head_lines = total;
                self.started = true;
            }
            if !settled {
                break;
            }
            self.committed += 1;
            self.head_lines = 0;
        }
        out
    }

    /// Every line, as a scrollback rebuilt from scratch would hold it,
    /// with nothing marked committed (after a width change or a resume).
    pub fn all_history(&mut self, cx: &CellContext, width: usize) -> Vec<StyledLine> {
        self.committed = 0;
        self.head_lines = 0;
        self.started = false;
        self.take_history(cx, width)
    }

    /// The rows of what is not in the scrollback yet, wrapped to `width`.
    pub fn live_rows(&mut self, cx: &CellContext, width: usize) -> Vec<StyledLine> {
        let mut rows = Vec::new();
        let head_lines = self.head_lines;
        let started = self.started;
        for (i, cell) in self.cells.iter_mut().enumerate().skip(self.committed) {
            if (i > self.committed || head_lines == 0) && (started || !rows.is_empty()) {
                rows.push(StyledLine::new());
            }
            if i == self.committed && head_lines > 0 {
                let rest = cell.lines_from(cx, width, head_lines);
                rows.extend(
                    text::wrap_all(&rest, width)
                        .iter()
                        .map(|r| text::clip(r, width)),
                );
            } else {
                rows.extend_from_slice(cell.rows(cx, width));
            }
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn cx() -> CellContext {
        CellContext {
            theme: crate::theme::UiTheme::plain(),
            registry: None,
            cwd: PathBuf::from("/"),
        }
    }

    #[test]
    fn a_resumed_session_draws_every_message() {
        let messages = vec![
            Message::user("hi"),
            Message::Assistant(AssistantMessage {
                content: vec![ContentBlock::text("**hello**")],
                ..AssistantMessage::empty("p", "m")
            }),
        ];
        let mut t = Transcript::from_messages(&messages, UiTheme::plain());
        let lines = t.take_history(&cx(), 40);
        assert_eq!(text::plain(&lines), "> hi\n\nhello");
        assert!(t.take_history(&cx(), 40).is_empty());
        assert!(t.live_rows(&cx(), 40).is_empty());
    }
}
