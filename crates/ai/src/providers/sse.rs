//! A Server-Sent Events parser that accepts arbitrary chunk boundaries.

/// One SSE event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental SSE parser: feed bytes as they arrive, get complete events.
///
/// ```
/// use agent_ai::providers::sse::SseParser;
/// let mut p = SseParser::default();
/// assert!(p.push(b"data: hel").is_empty());
/// let events = p.push(b"lo\n\n");
/// assert_eq!(events[0].data, "hello");
/// ```
#[derive(Debug, Default)]
pub struct SseParser {
    pending: Vec<u8>,
    current: SseEvent,
    has_data: bool,
}

/// Longest line kept (guards memory against a server that never sends a newline).
const MAX_LINE: usize = 16 * 1024 * 1024;

impl SseParser {
    /// Feeds bytes; returns the events completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(pos) = memchr_newline(&self.pending[start..]) {
            let end = start + pos;
            let mut line = &self.pending[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            self.line(&line, &mut events);
        }
        self.pending.drain(..start);
        if self.pending.len() > MAX_LINE {
            self.pending.clear();
        }
        events
    }

    /// Ends the stream: a final event without its blank line is still delivered.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if !self.pending.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
            self.line(line.trim_end_matches('\r'), &mut events);
        }
        self.line("", &mut events);
        events
    }

    fn line(&mut self, line: &str, events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data || self.current.event.is_some() {
                events.push(std::mem::take(&mut self.current));
                self.has_data = false;
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.current.event = Some(value.to_string()),
            _ => {}
        }
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_events_across_chunks_and_crlf() {
        let mut p = SseParser::default();
        let mut all = Vec::new();
        for chunk in [
            &b"event: a\r\ndata: 1\r"[..],
            b"\n\r\n: comment\n",
            b"data: x\ndata: y\n\n",
            b"data: tail",
        ] {
            all.extend(p.push(chunk));
        }
        all.extend(p.finish());
        assert_eq!(
            all,
            vec![
                SseEvent {
                    event: Some("a".into()),
                    data: "1".into()
                },
                SseEvent {
                    event: None,
                    data: "x\ny".into()
                },
                SseEvent {
                    event: None,
                    data: "tail".into()
                },
            ]
        );
    }

    #[test]
    fn multibyte_split() {
        let mut p = SseParser::default();
        let bytes = "data: é\n\n".as_bytes();
        let mut all = p.push(&bytes[..7]);
        all.extend(p.push(&bytes[7..]));
        assert_eq!(all[0].data, "é");
    }
}
