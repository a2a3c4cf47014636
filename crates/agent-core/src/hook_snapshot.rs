//! The hooks' view of a run ([`BeforeToolCallContext::context`]), kept
//! from one batch of tool calls to the next.
//!
//! Each batch shows its hooks the transcript as the batch began. Copying
//! the whole transcript for every batch made a long run quadratic (10,000
//! no-op calls in 100 batches: 46 µs a call with hooks set, 5 µs without).
//! So the last snapshot is kept, and when no hook or tool still holds it,
//! the next batch appends only what is new. Whether the transcript changed
//! other than by appending (compaction, a `refresh_context` callback) is
//! checked by comparing the part already copied, which costs no allocation;
//! any difference means a fresh copy.
//!
//! [`BeforeToolCallContext::context`]: crate::BeforeToolCallContext::context

use std::sync::Arc;

use agent_ai::{AssistantMessage, Message};

use crate::AgentContext;

/// The last snapshot handed to hooks, and how many of its messages are the
/// run's own (the rest is the batch's assistant message, when the run had
/// not recorded it yet).
#[derive(Default)]
pub(crate) struct HookSnapshot {
    current: Option<Arc<AgentContext>>,
    copied: usize,
}

impl HookSnapshot {
    /// The run as `assistant`'s batch begins.
    pub(crate) fn take(
        &mut self,
        context: &AgentContext,
        assistant: &AssistantMessage,
    ) -> Arc<AgentContext> {
        let copied = self.copied;
        let reusable = self.current.as_mut().and_then(Arc::get_mut).filter(|snap| {
            copied <= context.messages.len()
                && snap.messages.get(..copied) == context.messages.get(..copied)
        });
        match reusable {
            Some(snap) => {
                snap.messages.truncate(copied);
                snap.messages.extend_from_slice(&context.messages[copied..]);
                snap.system_prompt.clone_from(&context.system_prompt);
                snap.tools.clone_from(&context.tools);
            }
            None => self.current = Some(Arc::new(context.clone())),
        }
        self.copied = context.messages.len();
        let Some(current) = self.current.as_mut() else {
            return Arc::new(context.clone());
        };
        let last_is_assistant = matches!(
            context.messages.last(),
            Some(Message::Assistant(a)) if a.timestamp == assistant.timestamp
        );
        if !last_is_assistant {
            Arc::make_mut(current)
                .messages
                .push(Message::Assistant(assistant.clone()));
        }
        current.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(texts: &[&str]) -> AgentContext {
        AgentContext {
            messages: texts.iter().map(|t| Message::user(*t)).collect(),
            ..Default::default()
        }
    }

    fn texts(snap: &AgentContext) -> Vec<String> {
        snap.messages
            .iter()
            .map(|m| match m {
                Message::User(u) => u.text(),
                Message::Assistant(_) => "<assistant>".into(),
                _ => "<other>".into(),
            })
            .collect()
    }

    #[test]
    fn appends_what_is_new_and_copies_again_after_a_rewrite() {
        let assistant = AssistantMessage::empty("p", "m");
        let mut cache = HookSnapshot::default();
        let mut cx = context(&["a", "b"]);
        let first = cache.take(&cx, &assistant);
        assert_eq!(texts(&first), ["a", "b", "<assistant>"]);
        drop(first);
        cx.messages.push(Message::user("c"));
        let second = cache.take(&cx, &assistant);
        // The assistant message added for the first batch is gone.
        assert_eq!(texts(&second), ["a", "b", "c", "<assistant>"]);
        drop(second);
        // Compaction rewrote the start: a fresh copy.
        cx.messages = vec![Message::user("summary"), Message::user("c")];
        let third = cache.take(&cx, &assistant);
        assert_eq!(texts(&third), ["summary", "c", "<assistant>"]);
    }

    #[test]
    fn a_snapshot_still_held_is_never_changed() {
        let assistant = AssistantMessage::empty("p", "m");
        let mut cache = HookSnapshot::default();
        let mut cx = context(&["a"]);
        let held = cache.take(&cx, &assistant);
        cx.messages.push(Message::user("b"));
        let next = cache.take(&cx, &assistant);
        assert_eq!(texts(&held), ["a", "<assistant>"]);
        assert_eq!(texts(&next), ["a", "b", "<assistant>"]);
        // An edit in place (same length) is seen too.
        drop((held, next));
        cx.messages[0] = Message::user("edited");
        assert_eq!(
            texts(&cache.take(&cx, &assistant)),
            ["edited", "b", "<assistant>"]
        );
    }
}
