//! Permission questions in the UI: the session's gate asks through
//! [`TuiPermissionPrompt`], the UI shows each question in place of the
//! editor, one at a time, the rest queued ([`PermissionQueue`], drawn
//! and driven by [`crate::dialog`]).

use std::collections::VecDeque;

use agent_permissions::{PermissionAnswer, PermissionPrompt, PermissionRequest};
use coding_agent::prelude::BoxFuture;
use tokio::sync::{mpsc, oneshot};

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

/// Questions waiting, the first one shown; and the dialog's own state:
/// how far its body is scrolled, and the reason being typed after `r`.
#[derive(Debug, Default)]
pub struct PermissionQueue {
    waiting: VecDeque<PermissionQuestion>,
    /// The reason typed so far, while the reason row is open.
    pub(crate) reason: Option<String>,
    /// The first body row shown.
    pub(crate) scroll: usize,
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

    /// How many questions wait, the shown one included.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether no question waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// The question shown.
    pub fn front(&self) -> Option<&PermissionRequest> {
        self.waiting.front().map(|q| &q.request)
    }

    /// Answers the shown question (the next one is shown from the top).
    pub fn answer(&mut self, answer: PermissionAnswer) {
        self.reason = None;
        self.scroll = 0;
        if let Some(q) = self.waiting.pop_front() {
            q.answer(answer);
        }
    }

    /// Answers the shown question with the key pressed: `y`, `a`, `n`, or
    /// Esc (no); `r` opens the reason row instead. Returns whether the key
    /// was one of these.
    pub fn key(&mut self, key: char) -> bool {
        let answer = match key.to_ascii_lowercase() {
            'y' => PermissionAnswer::Yes,
            'a' => PermissionAnswer::Always,
            'n' | '\x1b' => PermissionAnswer::No,
            'r' => {
                self.reason = Some(String::new());
                return true;
            }
            _ => return false,
        };
        self.answer(answer);
        true
    }

    /// Answers every question no (the run was interrupted, the UI ends).
    pub fn refuse_all(&mut self) {
        self.reason = None;
        self.scroll = 0;
        for q in self.waiting.drain(..) {
            q.answer(PermissionAnswer::No);
        }
    }
}
