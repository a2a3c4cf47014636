//! A message being streamed, handed out as shared snapshots.
//!
//! Every streamed event carries the whole message so far. Copying it for
//! each event makes a turn quadratic: a response of 100 tool calls streams
//! some 300 events, each copying up to 100 blocks. [`PartialMessage`] keeps
//! two buffers instead. The consumer holds the newest snapshot; the producer
//! brings the other buffer up to date by replaying only the edits it missed,
//! then hands that one out. Each event then costs the size of its change,
//! as long as the consumer lets go of a snapshot once it has the next one
//! (the agent loop does).

use std::sync::Arc;

use crate::content::ContentBlock;
use crate::message::AssistantMessage;

/// Above this many edits not yet replayed onto the spare buffer, the spare
/// is dropped: a consumer that never keeps snapshots does not need it, and
/// the edits would only pile up.
const MAX_LAG: usize = 256;

/// One change to a streamed message.
///
/// ```
/// use agent_ai::{AssistantMessage, ContentBlock, MessageEdit};
/// let mut m = AssistantMessage::empty("p", "m");
/// MessageEdit::Push(ContentBlock::text("he")).apply(&mut m);
/// MessageEdit::AppendText(0, "llo".into()).apply(&mut m);
/// assert_eq!(m.text(), "hello");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MessageEdit {
    /// Appends a block to `content`.
    Push(ContentBlock),
    /// Replaces the block at an index (ignored when there is none).
    Set(usize, ContentBlock),
    /// Appends to the text block at an index.
    AppendText(usize, String),
    /// Appends to the thinking block at an index.
    AppendThinking(usize, String),
    /// Sets the signature of the thinking block at an index.
    Signature(usize, Option<String>),
}

impl MessageEdit {
    /// Applies the edit to `message`. An index that names no block of the
    /// right kind changes nothing.
    pub fn apply(&self, message: &mut AssistantMessage) {
        match self {
            MessageEdit::Push(block) => message.content.push(block.clone()),
            MessageEdit::Set(index, block) => {
                if let Some(slot) = message.content.get_mut(*index) {
                    slot.clone_from(block);
                }
            }
            MessageEdit::AppendText(index, delta) => {
                if let Some(ContentBlock::Text(t)) = message.content.get_mut(*index) {
                    t.text.push_str(delta);
                }
            }
            MessageEdit::AppendThinking(index, delta) => {
                if let Some(ContentBlock::Thinking(t)) = message.content.get_mut(*index) {
                    t.thinking.push_str(delta);
                }
            }
            MessageEdit::Signature(index, signature) => {
                if let Some(ContentBlock::Thinking(t)) = message.content.get_mut(*index) {
                    t.thinking_signature.clone_from(signature);
                }
            }
        }
    }

    /// [`MessageEdit::apply`], moving the edit's contents instead of copying them.
    fn apply_owned(self, message: &mut AssistantMessage) {
        match self {
            MessageEdit::Push(block) => message.content.push(block),
            MessageEdit::Set(index, block) => {
                if let Some(slot) = message.content.get_mut(index) {
                    *slot = block;
                }
            }
            other => other.apply(message),
        }
    }
}

/// The message a provider is streaming, from which each event takes a
/// shared snapshot ([`PartialMessage::snapshot`]) in time proportional to
/// the change since the last one, not to the message.
///
/// A snapshot never changes once handed out: an edit made while a consumer
/// holds it goes to the other buffer (or, when that one is held too, to a
/// fresh copy).
///
/// ```
/// use agent_ai::{AssistantMessage, ContentBlock, MessageEdit, PartialMessage};
/// let mut partial = PartialMessage::new(AssistantMessage::empty("p", "m"));
/// partial.apply(MessageEdit::Push(ContentBlock::text("a")));
/// let first = partial.snapshot();
/// partial.apply(MessageEdit::AppendText(0, "b".into()));
/// let second = partial.snapshot();
/// assert_eq!(first.text(), "a");
/// assert_eq!(second.text(), "ab");
/// drop(first); // let go, as the loop does: the next edit reuses that buffer
/// partial.apply(MessageEdit::AppendText(0, "c".into()));
/// assert_eq!(partial.snapshot().text(), "abc");
/// assert_eq!(second.text(), "ab");
/// ```
#[derive(Debug)]
pub struct PartialMessage {
    /// The newest state; shared once a snapshot of it was taken.
    current: Arc<AssistantMessage>,
    /// An older state, `lag` edits behind `current`.
    spare: Option<Arc<AssistantMessage>>,
    lag: Vec<MessageEdit>,
}

impl PartialMessage {
    /// Starts from `base` (usually an empty message with the provider and model set).
    pub fn new(base: AssistantMessage) -> Self {
        PartialMessage {
            current: Arc::new(base),
            spare: None,
            lag: Vec::new(),
        }
    }

    /// The message as it stands.
    pub fn get(&self) -> &AssistantMessage {
        &self.current
    }

    /// A shared snapshot of the message as it stands.
    pub fn snapshot(&self) -> Arc<AssistantMessage> {
        Arc::clone(&self.current)
    }

    /// A copy of the message as it stands, owned (for the final event).
    pub fn to_message(&self) -> AssistantMessage {
        AssistantMessage::clone(&self.current)
    }

    /// Applies one edit.
    pub fn apply(&mut self, edit: MessageEdit) {
        if let Some(message) = Arc::get_mut(&mut self.current) {
            edit.apply(message);
            if self.spare.is_some() {
                self.lag.push(edit);
                if self.lag.len() > MAX_LAG {
                    self.spare = None;
                    self.lag.clear();
                }
            }
            return;
        }
        // A consumer holds `current`: write to the spare, brought up to
        // date, or to a copy when the spare is held as well.
        let reusable = self.spare.take().and_then(|mut spare| {
            let message = Arc::get_mut(&mut spare)?;
            for missed in self.lag.drain(..) {
                missed.apply_owned(message);
            }
            Some(spare)
        });
        let mut next = reusable.unwrap_or_else(|| Arc::new(AssistantMessage::clone(&self.current)));
        self.lag.clear();
        if let Some(message) = Arc::get_mut(&mut next) {
            edit.apply(message);
        }
        self.lag.push(edit);
        self.spare = Some(std::mem::replace(&mut self.current, next));
    }

    /// Changes the message in any other way (usage, stop reason, ...). This
    /// copies the message when a consumer holds a snapshot, so it suits the
    /// end of a stream, not each delta.
    pub fn update(&mut self, change: impl FnOnce(&mut AssistantMessage)) {
        self.spare = None;
        self.lag.clear();
        change(Arc::make_mut(&mut self.current));
    }
}

impl Clone for PartialMessage {
    fn clone(&self) -> Self {
        PartialMessage::new(self.to_message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(m: &AssistantMessage) -> Vec<String> {
        m.content
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => t.text.clone(),
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn a_consumer_that_keeps_one_snapshot_at_a_time_gets_every_state_right() {
        let mut partial = PartialMessage::new(AssistantMessage::empty("p", "m"));
        let mut held = partial.snapshot();
        let mut expected = AssistantMessage::empty("p", "m");
        for i in 0..50 {
            let edits = [
                MessageEdit::Push(ContentBlock::text(format!("{i}"))),
                MessageEdit::AppendText(i, "x".into()),
                MessageEdit::AppendText(i, "y".into()),
            ];
            for edit in edits {
                edit.apply(&mut expected);
                partial.apply(edit);
                let next = partial.snapshot();
                assert_eq!(texts(&next), texts(&expected));
                held = next; // the previous snapshot is let go here
            }
        }
        assert_eq!(texts(&held), texts(&expected));
    }

    #[test]
    fn snapshots_kept_by_a_consumer_never_change() {
        let mut partial = PartialMessage::new(AssistantMessage::empty("p", "m"));
        let mut kept = Vec::new();
        for i in 0..20 {
            partial.apply(MessageEdit::Push(ContentBlock::text(format!("{i}"))));
            kept.push(partial.snapshot());
        }
        for (i, snapshot) in kept.iter().enumerate() {
            assert_eq!(snapshot.content.len(), i + 1);
        }
    }

    #[test]
    fn the_spare_buffer_is_reused_instead_of_copied() {
        let mut partial = PartialMessage::new(AssistantMessage::empty("p", "m"));
        partial.apply(MessageEdit::Push(ContentBlock::text("a")));
        let first = partial.snapshot();
        partial.apply(MessageEdit::AppendText(0, "b".into()));
        let second = partial.snapshot();
        drop(first);
        let spare = partial.spare.as_ref().map(Arc::as_ptr);
        partial.apply(MessageEdit::AppendText(0, "c".into()));
        // The buffer written is the one `first` used to be.
        assert_eq!(Some(Arc::as_ptr(&partial.current)), spare);
        assert_eq!(partial.get().text(), "abc");
        assert_eq!(second.text(), "ab");
    }

    #[test]
    fn a_consumer_that_keeps_nothing_leaves_no_backlog() {
        let mut partial = PartialMessage::new(AssistantMessage::empty("p", "m"));
        partial.apply(MessageEdit::Push(ContentBlock::text("")));
        let held = partial.snapshot();
        partial.apply(MessageEdit::AppendText(0, "a".into()));
        drop(held);
        for _ in 0..(MAX_LAG * 2) {
            partial.apply(MessageEdit::AppendText(0, "a".into()));
        }
        assert!(partial.lag.len() <= MAX_LAG);
        assert_eq!(partial.get().text().len(), MAX_LAG * 2 + 1);
    }

    #[test]
    fn update_changes_the_message_not_earlier_snapshots() {
        let mut partial = PartialMessage::new(AssistantMessage::empty("p", "m"));
        let before = partial.snapshot();
        partial.update(|m| m.stop_reason = crate::StopReason::ToolUse);
        assert_eq!(partial.get().stop_reason, crate::StopReason::ToolUse);
        assert_eq!(before.stop_reason, crate::StopReason::Stop);
    }
}
