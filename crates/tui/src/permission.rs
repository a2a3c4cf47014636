//! Permission questions in the UI: the session's gate asks through
//! [`TuiPermissionPrompt`], the UI shows each question in place of the
//! editor, one at a time, the rest queued.

use std::collections::VecDeque;

use agent_tool::StyledLine;
use coding_agent::permissions::{PermissionAnswer, PermissionPrompt, PermissionRequest};
use coding_agent::prelude::BoxFuture;
use coding_agent::{RenderContext, ToolRegistry};
use tokio::sync::{mpsc, oneshot};

use crate::text;
use crate::theme::UiTheme;

/// One question waiting for its answer.
#[derive(Debug)]
pub struct PermissionQuestion {
    /// What is asked.
    pub request: PermissionRequest,
    reply: oneshot::Sender<PermissionAnswer>,
}

impl PermissionQuestion {
    /// Answers it.
    pub fn answer(self, answer: PermissionAnswer) {
        let _ = self.reply.send(answer);
    }
}

/// The session's side: a [`PermissionPrompt`] that hands each question to
/// the UI. Without a UI listening every answer is no.
#[derive(Debug, Clone)]
pub struct TuiPermissionPrompt {
    tx: mpsc::UnboundedSender<PermissionQuestion>,
}

/// The UI's side: questions as they come.
#[derive(Debug)]
pub struct PermissionQuestions {
    rx: mpsc::UnboundedReceiver<PermissionQuestion>,
}

impl PermissionQuestions {
    /// The next question (`None` once every prompt is gone).
    pub async fn recv(&mut self) -> Option<PermissionQuestion> {
        self.rx.recv().await
    }
}

/// A prompt for the session's gate and the receiving end for the UI.
///
/// ```
/// let (prompt, questions) = agent_tui::permission_channel();
/// # let _ = (prompt, questions);
/// ```
pub fn permission_channel() -> (TuiPermissionPrompt, PermissionQuestions) {
    let (tx, rx) = mpsc::unbounded_channel();
    (TuiPermissionPrompt { tx }, PermissionQuestions { rx })
}

impl PermissionPrompt for TuiPermissionPrompt {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'static, PermissionAnswer> {
        let (reply, answer) = oneshot::channel();
        let sent = self.tx.send(PermissionQuestion { request, reply });
        Box::pin(async move {
            if sent.is_err() {
                return PermissionAnswer::No;
            }
            answer.await.unwrap_or(PermissionAnswer::No)
        })
    }
}

/// Questions waiting, the first one shown.
#[derive(Debug, Default)]
pub struct PermissionQueue {
    waiting: VecDeque<PermissionQuestion>,
}

impl PermissionQueue {
    /// Queues a question.
    pub fn push(&mut self, q: PermissionQuestion) {
        self.waiting.push_back(q);
    }

    /// Whether a question is shown.
    pub fn is_open(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Answers the shown question with the key pressed: `y`, `a`, `n`, or
    /// Esc (no). Returns whether the key was an answer.
    pub fn key(&mut self, key: char) -> bool {
        let answer = match key.to_ascii_lowercase() {
            'y' => PermissionAnswer::Yes,
            'a' => PermissionAnswer::Always,
            'n' | '\x1b' => PermissionAnswer::No,
            _ => return false,
        };
        if let Some(q) = self.waiting.pop_front() {
            q.answer(answer);
        }
        true
    }

    /// Answers every question no (the run was interrupted, the UI ends).
    pub fn refuse_all(&mut self) {
        for q in self.waiting.drain(..) {
            q.answer(PermissionAnswer::No);
        }
    }

    /// The dialog's rows: the call through its renderer, why it asks, the
    /// keys, and how many more wait.
    pub fn rows(
        &self,
        registry: Option<&ToolRegistry>,
        ctx: &RenderContext,
        theme: &UiTheme,
    ) -> Vec<StyledLine> {
        let Some(q) = self.waiting.front() else {
            return Vec::new();
        };
        let width = ctx.width.max(1);
        let mut lines = vec![StyledLine::styled(
            format!("Allow {}?", q.request.tool),
            theme.warning.bold(),
        )];
        let call = crate::terminal::catch_renderer_panic(|| match registry {
            Some(r) => r.render_call(&q.request.tool, &q.request.args, &theme.tools, ctx),
            None => {
                coding_agent::default_render_call(&q.request.tool, &q.request.args, &theme.tools)
            }
        })
        .unwrap_or_else(|| {
            coding_agent::default_render_call(&q.request.tool, &q.request.args, &theme.tools)
        });
        for line in &call.lines {
            let mut l = StyledLine::plain("  ");
            l.spans.extend(text::clean_line(line).spans);
            lines.push(l);
        }
        lines.push(StyledLine::styled(q.request.question(), theme.dim));
        let more = match self.waiting.len() - 1 {
            0 => String::new(),
            n => format!("  ({n} more waiting)"),
        };
        lines.push(
            StyledLine::styled("[y] yes  [a] always  [n] no  (esc: no)", theme.tools.accent)
                .push(more, theme.dim),
        );
        text::wrap_all(&lines, width)
            .iter()
            .map(|r| text::clip(r, width))
            .collect()
    }
}
