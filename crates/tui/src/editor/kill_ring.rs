//! The kill ring: what Ctrl+K, Ctrl+U, Ctrl+W and Alt+D deleted, for
//! Ctrl+Y to put back and Alt+Y to cycle. Consecutive kills join into one
//! entry, in reading order.

/// At most this many kills are kept (the oldest go first).
pub const KILL_RING_SIZE: usize = 60;

/// Killed text, newest last.
#[derive(Debug, Clone, Default)]
pub struct KillRing {
    ring: Vec<String>,
}

impl KillRing {
    /// Adds `text`; with `accumulate` it joins the newest entry instead,
    /// before it (`prepend`, a backward kill) or after it.
    pub fn push(&mut self, text: &str, prepend: bool, accumulate: bool) {
        if text.is_empty() {
            return;
        }
        match self.ring.last_mut() {
            Some(last) if accumulate => {
                if prepend {
                    last.insert_str(0, text);
                } else {
                    last.push_str(text);
                }
            }
            _ => {
                self.ring.push(text.to_string());
                if self.ring.len() > KILL_RING_SIZE {
                    self.ring.remove(0);
                }
            }
        }
    }

    /// The newest entry.
    pub fn peek(&self) -> Option<&str> {
        self.ring.last().map(String::as_str)
    }

    /// The newest entry goes to the back: the one before it is newest.
    pub fn rotate(&mut self) {
        if let Some(last) = self.ring.pop() {
            self.ring.insert(0, last);
        }
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    /// Whether nothing was killed.
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }
}
