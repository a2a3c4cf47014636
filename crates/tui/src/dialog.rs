//! The permission dialog: what the shown question looks like and what
//! keys do to it.
//!
//! It replaces the editor. Its body is the call through its renderer and
//! then the whole call (the declared command, else every argument), and
//! scrolls when taller than the room it has, so a long command or edit
//! can be read in full before answering. Keys: `y` yes, `a` always, `n`
//! or Esc no, `r` no with a reason: a text row opens, Enter sends the
//! reason to the model with the refusal, Esc goes back to the question.

use agent_permissions::{PermissionAnswer, PermissionRequest};
use agent_tool::StyledLine;
use coding_agent::{RenderContext, ToolRegistry};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;

use crate::permission::PermissionQueue;
use crate::text;
use crate::theme::UiTheme;

/// Longest reason kept (a paste beyond it is cut).
pub const MAX_REASON_CHARS: usize = 4_000;

/// What a key did to the dialog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialogKey {
    /// Nothing for the runner to do.
    Handled,
    /// Refused, and the run is to be interrupted (Ctrl+C).
    Interrupt,
}

/// The dialog's rows and, while a reason is typed, where the caret is.
#[derive(Debug, Clone, Default)]
pub struct DialogView {
    /// At most the height asked for.
    pub rows: Vec<StyledLine>,
    /// `(row, column)` of the caret in the reason row.
    pub caret: Option<(usize, usize)>,
}

impl PermissionQueue {
    /// A key while a question is shown.
    pub fn key_event(&mut self, key: KeyEvent) -> DialogKey {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if ctrl && key.code == KeyCode::Char('c') {
            self.answer(PermissionAnswer::No);
            return DialogKey::Interrupt;
        }
        if let Some(reason) = &mut self.reason {
            match key.code {
                KeyCode::Esc => self.reason = None,
                KeyCode::Enter => {
                    let text = reason.trim().to_string();
                    let answer = if text.is_empty() {
                        PermissionAnswer::No
                    } else {
                        PermissionAnswer::NoBecause(text)
                    };
                    self.answer(answer);
                }
                KeyCode::Backspace if ctrl || alt => {
                    let kept = reason.trim_end().len();
                    reason.truncate(kept);
                    let word = reason.rfind(' ').map_or(0, |i| i + 1);
                    reason.truncate(word);
                }
                KeyCode::Backspace => {
                    reason.pop();
                }
                KeyCode::Char('u') if ctrl => reason.clear(),
                KeyCode::Char(c) if !ctrl && !alt => push_reason(reason, &c.to_string()),
                _ => {}
            }
            return DialogKey::Handled;
        }
        match key.code {
            KeyCode::Esc => self.answer(PermissionAnswer::No),
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll += 1,
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::PageDown => self.scroll += 10,
            KeyCode::Home => self.scroll = 0,
            KeyCode::End => self.scroll = usize::MAX,
            KeyCode::Char(c) if !ctrl && !alt => {
                self.key(c);
            }
            _ => {}
        }
        DialogKey::Handled
    }

    /// A bracketed paste: into the reason, when one is typed.
    pub fn paste(&mut self, text: &str) {
        if let Some(reason) = &mut self.reason {
            push_reason(reason, text);
        }
    }

    /// The dialog at `ctx.width`, at most `max_rows` high: title, the
    /// body's window, why it asks, and the keys (or the reason row).
    pub fn view(
        &mut self,
        registry: Option<&ToolRegistry>,
        ctx: &RenderContext,
        theme: &UiTheme,
        max_rows: usize,
    ) -> DialogView {
        let Some(request) = self.front() else {
            return DialogView::default();
        };
        let width = ctx.width.max(1);
        let fit = |lines: Vec<StyledLine>| -> Vec<StyledLine> {
            text::wrap_all(&lines, width)
                .iter()
                .map(|r| text::clip(r, width))
                .collect()
        };
        let title = fit(vec![StyledLine::styled(
            format!("Allow {}?", text::clean(&request.tool)),
            theme.warning.bold(),
        )]);
        let body = fit(body_lines(request, registry, ctx, theme));
        // Why it asks, on one row: the call itself is in the body.
        let why = match (&request.decision.rule, &request.decision.subject) {
            (Some(rule), _) => format!("(rule {rule})"),
            (None, Some(subject)) => format!("(no allow rule covers {subject})"),
            (None, None) => "(no allow rule covers it)".to_string(),
        };
        let mut tail = vec![text::clip(
            &StyledLine::styled(text::clean(&why), theme.dim),
            width,
        )];
        let more = match self.len() - 1 {
            0 => String::new(),
            n => format!("  ({n} more waiting)"),
        };
        let mut caret = None;
        let question_rows = tail.len();
        match &self.reason {
            Some(reason) => {
                let label = "Reason: ";
                let row =
                    StyledLine::styled(label, theme.tools.accent).push(reason.clone(), theme.user);
                // The reason's end stays in view: the row shows its tail.
                let shown = tail_to_width(&row, label, width);
                caret = Some(text::line_width(&shown).min(width - 1));
                tail.push(shown);
                tail.extend(fit(vec![StyledLine::styled(
                    "enter: send to the model  esc: back to the question",
                    theme.dim,
                )]));
            }
            None => tail.extend(fit(vec![
                StyledLine::styled(
                    "[y] yes  [a] always  [n] no  [r] no, with a reason  (esc: no)",
                    theme.tools.accent,
                )
                .push(more, theme.dim),
            ])),
        }
        let max_rows = max_rows.max(1);
        let fixed = title.len() + tail.len();
        let room = max_rows.saturating_sub(fixed);
        let mut rows = title;
        if body.len() <= room {
            self.scroll = 0;
            rows.extend(body);
        } else if room >= 2 {
            // One row for where the window is.
            let window = room - 1;
            self.scroll = self.scroll.min(body.len() - window);
            rows.extend_from_slice(&body[self.scroll..self.scroll + window]);
            rows.push(text::clip(
                &StyledLine::styled(
                    format!(
                        "  (lines {}-{} of {}; up/down, pgup/pgdn to scroll)",
                        self.scroll + 1,
                        self.scroll + window,
                        body.len()
                    ),
                    theme.dim,
                ),
                width,
            ));
        }
        let top = rows.len();
        rows.extend(tail);
        // A screen too small for it all keeps the keys (the end).
        let cut = rows.len().saturating_sub(max_rows);
        let rows = rows.split_off(cut);
        let caret = caret.and_then(|col| Some(((top + question_rows).checked_sub(cut)?, col)));
        DialogView { rows, caret }
    }
}

/// The call through its renderer, then the whole call when the renderer
/// did not show it all: the declared command's text, else every argument.
fn body_lines(
    request: &PermissionRequest,
    registry: Option<&ToolRegistry>,
    ctx: &RenderContext,
    theme: &UiTheme,
) -> Vec<StyledLine> {
    let fallback = || coding_agent::default_render_call(&request.tool, &request.args, &theme.tools);
    let call = crate::terminal::catch_renderer_panic(|| match registry {
        Some(r) => r.render_call(&request.tool, &request.args, &theme.tools, ctx),
        None => fallback(),
    })
    .unwrap_or_else(fallback);
    let shown = call.to_plain();
    let mut lines: Vec<StyledLine> = call
        .lines
        .iter()
        .map(|line| {
            let mut l = StyledLine::plain("  ");
            l.spans.extend(text::clean_line(line).spans);
            l
        })
        .collect();
    let command = request
        .shape
        .command
        .as_deref()
        .and_then(|name| request.args.get(name))
        .and_then(Value::as_str);
    let full: Vec<String> = match command {
        Some(cmd) if shown.contains(cmd) => Vec::new(),
        Some(cmd) => cmd.split('\n').map(|l| format!("$ {l}")).collect(),
        None if shown.contains(&request.args.to_string()) => Vec::new(),
        None => {
            let mut out = Vec::new();
            outline(&request.args, 0, &mut out);
            out
        }
    };
    for line in full {
        lines.push(StyledLine::styled(
            format!("  {}", text::clean(&line)),
            theme.tools.muted,
        ));
    }
    lines
}

/// A JSON value as indented `key: value` lines, strings as they are (a
/// multi-line string on lines of its own): readable where JSON escapes
/// would hide an edit's text.
fn outline(value: &Value, depth: usize, out: &mut Vec<String>) {
    let pad = "  ".repeat(depth);
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match v {
                    Value::String(s) if !s.contains('\n') => out.push(format!("{pad}{key}: {s}")),
                    Value::Object(_) | Value::Array(_) | Value::String(_) => {
                        out.push(format!("{pad}{key}:"));
                        outline(v, depth + 1, out);
                    }
                    other => out.push(format!("{pad}{key}: {other}")),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                out.push(format!("{pad}-"));
                outline(item, depth + 1, out);
            }
        }
        Value::String(s) => out.extend(s.split('\n').map(|l| format!("{pad}{l}"))),
        other => out.push(format!("{pad}{other}")),
    }
}

/// Appends typed or pasted text to a reason: one line, no control
/// characters, at most [`MAX_REASON_CHARS`].
fn push_reason(reason: &mut String, text: &str) {
    let room = MAX_REASON_CHARS.saturating_sub(reason.chars().count());
    let cleaned = text
        .chars()
        .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
        .filter(|c| !c.is_control())
        .take(room);
    reason.extend(cleaned);
}

/// The row with as much of its end as fits `width`, the label kept.
fn tail_to_width(row: &StyledLine, label: &str, width: usize) -> StyledLine {
    if text::line_width(row) < width {
        return row.clone();
    }
    let keep = width.saturating_sub(text::str_width(label) + 1);
    let typed: String = row.spans.iter().skip(1).map(|s| s.text.as_str()).collect();
    let mut tail = String::new();
    let mut used = 0;
    for g in unicode_segmentation::UnicodeSegmentation::graphemes(typed.as_str(), true).rev() {
        let w = text::grapheme_width(g);
        if used + w > keep {
            break;
        }
        used += w;
        tail.insert_str(0, g);
    }
    let style = row.spans.get(1).map(|s| s.style).unwrap_or_default();
    let head = StyledLine {
        spans: row.spans.first().cloned().into_iter().collect(),
    };
    text::clip(&head.push(tail, style), width)
}
