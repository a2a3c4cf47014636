//! bash's output in bounded memory: incremental UTF-8 decoding, a rolling
//! tail for the model, and a spill file holding every raw byte once the
//! output outgrows the limits.

use std::io::Write;
use std::sync::Arc;

use agent_tool::ops::{OutputFile, ProcessOps};

use agent_tool::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncatedBy, TruncationOptions, TruncationResult,
    format_size, truncate_tail,
};
use serde_json::{Value, json};

/// Decoded output kept in memory for the tail (at least twice the byte budget).
const TAIL_KEEP: usize = 2 * DEFAULT_MAX_BYTES;

/// Incremental UTF-8 decoding: characters split across chunks decode correctly,
/// invalid bytes become U+FFFD.
#[derive(Default)]
pub(crate) struct Utf8Stream {
    pub(crate) pending: Vec<u8>,
}

impl Utf8Stream {
    pub(crate) fn decode(&mut self, chunk: &[u8], out: &mut String) {
        // Fast path: nothing carried over from the previous chunk.
        if self.pending.is_empty() {
            match std::str::from_utf8(chunk) {
                Ok(s) => {
                    out.push_str(s);
                    return;
                }
                Err(e) if e.error_len().is_none() => {
                    let (valid, rest) = chunk.split_at(e.valid_up_to());
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    self.pending.extend_from_slice(rest);
                    return;
                }
                Err(_) => {}
            }
        }
        self.pending.extend_from_slice(chunk);
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    out.push_str(s);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            out.push('\u{FFFD}');
                            rest = &after[n..];
                        }
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        self.pending = rest.to_vec();
    }

    pub(crate) fn finish(&mut self, out: &mut String) {
        if !self.pending.is_empty() {
            out.push_str(&String::from_utf8_lossy(&self.pending));
            self.pending.clear();
        }
    }
}

/// Everything a command printed, in bounded memory: counts, a rolling tail, and
/// (once the limits are passed) a spill file with every raw byte.
pub(crate) struct OutputAccumulator {
    pub(crate) decoder: Utf8Stream,
    pub(crate) tail: String,
    pub(crate) total_bytes: usize,
    pub(crate) newlines: usize,
    pub(crate) open_line_bytes: usize,
    pub(crate) last_line_bytes: usize,
    pub(crate) raw: Vec<u8>,
    pub(crate) spill: Option<Box<dyn OutputFile>>,
    /// Where spill files come from: the machine the command runs on.
    pub(crate) processes: Arc<dyn ProcessOps>,
    pub(crate) spill_error: Option<String>,
    /// Bytes written to the spill file; it stops at [`MAX_SPILL_BYTES`].
    pub(crate) spilled: u64,
}

/// The most a full-output file holds: a command printing without end must
/// not fill the disk (the tail the model sees keeps coming).
pub(crate) const MAX_SPILL_BYTES: u64 = 128 * 1024 * 1024;

/// A view of the output for the model.
pub(crate) struct Snapshot {
    pub(crate) text: String,
    pub(crate) truncation: Option<TruncationResult>,
    pub(crate) notice: String,
}

impl OutputAccumulator {
    pub(crate) fn new(processes: Arc<dyn ProcessOps>) -> Self {
        OutputAccumulator {
            processes,
            decoder: Utf8Stream::default(),
            tail: String::new(),
            total_bytes: 0,
            newlines: 0,
            open_line_bytes: 0,
            last_line_bytes: 0,
            raw: Vec::new(),
            spill: None,
            spill_error: None,
            spilled: 0,
        }
    }

    pub(crate) fn total_lines(&self) -> usize {
        self.newlines + usize::from(self.open_line_bytes > 0)
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        match &mut self.spill {
            Some(file) => {
                let room = MAX_SPILL_BYTES.saturating_sub(self.spilled);
                let part = &chunk[..chunk.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
                if !part.is_empty() {
                    match file.write_all(part) {
                        Ok(()) => self.spilled += part.len() as u64,
                        Err(e) => {
                            self.spill_error.get_or_insert(e.to_string());
                        }
                    }
                }
            }
            None => self.raw.extend_from_slice(chunk),
        }
        let before = self.tail.len();
        self.decoder.decode(chunk, &mut self.tail);
        self.account(before);
    }

    pub(crate) fn finish(&mut self) {
        let before = self.tail.len();
        self.decoder.finish(&mut self.tail);
        self.account(before);
        if let Some(file) = &mut self.spill {
            file.finish(self.spilled);
        }
    }

    pub(crate) fn account(&mut self, from: usize) {
        let added = &self.tail[from..];
        self.total_bytes += added.len();
        let mut last = 0;
        for pos in memchr::memchr_iter(b'\n', added.as_bytes()) {
            self.newlines += 1;
            self.last_line_bytes = self.open_line_bytes + (pos - last);
            self.open_line_bytes = 0;
            last = pos + 1;
        }
        self.open_line_bytes += added.len() - last;
        if self.spill.is_none()
            && self.spill_error.is_none()
            && (self.total_bytes > DEFAULT_MAX_BYTES || self.total_lines() > DEFAULT_MAX_LINES)
        {
            self.start_spill();
        }
        if self.tail.len() > 2 * TAIL_KEEP {
            let cut = self.tail.len() - TAIL_KEEP;
            let cut = (cut..self.tail.len())
                .find(|&i| self.tail.is_char_boundary(i))
                .unwrap_or(self.tail.len());
            self.tail.drain(..cut);
        }
    }

    pub(crate) fn start_spill(&mut self) {
        match self.processes.create_output_file() {
            Ok(mut file) => {
                match file.write_all(&self.raw) {
                    Ok(()) => self.spilled = self.raw.len() as u64,
                    Err(e) => self.spill_error = Some(e.to_string()),
                }
                self.raw = Vec::new();
                self.spill = Some(file);
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot create the bash full-output file");
                self.spill_error = Some(e.to_string());
                self.raw = Vec::new();
            }
        }
    }

    pub(crate) fn full_output_path(&self) -> Option<String> {
        self.spill.as_ref().map(|f| f.path().display().to_string())
    }

    /// Whether the spill file stopped at [`MAX_SPILL_BYTES`].
    pub(crate) fn spill_capped(&self) -> bool {
        self.spilled >= MAX_SPILL_BYTES
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        let total_lines = self.total_lines();
        if self.total_bytes <= DEFAULT_MAX_BYTES && total_lines <= DEFAULT_MAX_LINES {
            return Snapshot {
                text: self.tail.clone(),
                truncation: None,
                notice: String::new(),
            };
        }
        let mut t = truncate_tail(&self.tail, TruncationOptions::default());
        t.total_lines = total_lines;
        t.total_bytes = self.total_bytes;
        t.truncated = true;
        if t.truncated_by.is_none() {
            t.truncated_by = Some(if self.total_bytes > DEFAULT_MAX_BYTES {
                TruncatedBy::Bytes
            } else {
                TruncatedBy::Lines
            });
        }
        let mut full = self.full_output_path().unwrap_or_else(|| {
            format!(
                "(not saved: {})",
                self.spill_error.clone().unwrap_or_default()
            )
        });
        if self.spill_capped() {
            full.push_str(&format!(
                " (its first {} only)",
                format_size(MAX_SPILL_BYTES)
            ));
        }
        let end = total_lines;
        let start = end + 1 - t.output_lines.max(1).min(end.max(1));
        let notice = if t.last_line_partial {
            let line_bytes = if self.open_line_bytes > 0 {
                self.open_line_bytes
            } else {
                self.last_line_bytes
            };
            format!(
                "[Showing last {} of line {end} (line is {}). Full output: {full}]",
                format_size(t.output_bytes as u64),
                format_size(line_bytes as u64)
            )
        } else if t.truncated_by == Some(TruncatedBy::Lines) {
            format!("[Showing lines {start}-{end} of {total_lines}. Full output: {full}]")
        } else {
            format!(
                "[Showing lines {start}-{end} of {total_lines} ({} limit). Full output: {full}]",
                format_size(DEFAULT_MAX_BYTES as u64)
            )
        };
        Snapshot {
            text: t.content.clone(),
            truncation: Some(t),
            notice,
        }
    }
}

impl Snapshot {
    /// Output plus notice; `(no output)` when both are empty and `placeholder`.
    pub(crate) fn render(&self, placeholder: bool) -> String {
        let mut text = self.text.clone();
        if !self.notice.is_empty() {
            text.push_str("\n\n");
            text.push_str(&self.notice);
        }
        if text.is_empty() && placeholder {
            "(no output)".to_string()
        } else {
            text
        }
    }

    pub(crate) fn details(&self, full_output_path: Option<String>) -> Value {
        match &self.truncation {
            Some(t) => json!({"truncation": t, "fullOutputPath": full_output_path}),
            None => Value::Null,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spill_file_stops_at_its_cap() {
        let mut acc = OutputAccumulator::new(Arc::new(agent_local_ops::LocalProcessOps));
        let chunk = vec![b'y'; 1 << 20];
        for _ in 0..(MAX_SPILL_BYTES / (1 << 20) + 8) {
            acc.push(&chunk);
        }
        acc.finish();
        let path = acc.full_output_path().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        let _ = std::fs::remove_file(&path);
        assert_eq!(len, MAX_SPILL_BYTES);
        assert!(acc.spill_capped());
        assert!(
            acc.snapshot().notice.contains("first 128.0MB only"),
            "{}",
            acc.snapshot().notice
        );
    }

    #[test]
    fn utf8_split_across_chunks() {
        let mut d = Utf8Stream::default();
        let mut out = String::new();
        let bytes = "é€😀".as_bytes();
        for b in bytes {
            d.decode(std::slice::from_ref(b), &mut out);
        }
        d.finish(&mut out);
        assert_eq!(out, "é€😀");
        let mut out = String::new();
        d.decode(b"a\xffb", &mut out);
        assert_eq!(out, "a\u{FFFD}b");
    }

    #[test]
    fn accumulator_counts_and_tails() {
        let mut acc = OutputAccumulator::new(Arc::new(agent_local_ops::LocalProcessOps));
        for i in 0..3000 {
            acc.push(format!("line {i}\n").as_bytes());
        }
        acc.finish();
        assert_eq!(acc.total_lines(), 3000);
        let snap = acc.snapshot();
        assert!(snap.text.ends_with("line 2999"));
        assert!(
            snap.notice
                .starts_with("[Showing lines 1001-3000 of 3000. Full output: "),
            "{}",
            snap.notice
        );
        let path = acc.full_output_path().unwrap();
        let saved = std::fs::read_to_string(&path).unwrap();
        assert_eq!(saved.lines().count(), 3000);
        std::fs::remove_file(path).unwrap();
    }
}
