//! An incremental decoder of AWS event-stream frames
//! (`application/vnd.amazon.eventstream`), the binary framing of Bedrock's
//! streaming answers.
//!
//! A frame, all integers big-endian: total length (u32), headers length
//! (u32), CRC32 of those 8 bytes, the headers, the payload, CRC32 of
//! everything before it. A header is a name (u8 length, bytes), a type
//! byte and a value whose size the type says (strings and byte arrays
//! carry a u16 length). Both checksums are checked; a frame longer than
//! the decoder's bound is refused before it is buffered.

/// The largest frame accepted by default: 16 MiB (Bedrock's frames are a
/// few kilobytes; the format allows up to 16 MiB of payload).
pub(crate) const MAX_FRAME: usize = 16 * 1024 * 1024;

/// Prelude (12 bytes) plus the message CRC (4).
const OVERHEAD: usize = 16;

/// Why a stream is not valid event-stream framing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrameError {
    #[error(
        "event-stream frame prelude checksum mismatch (expected {expected:08x}, got {actual:08x})"
    )]
    PreludeCrc { expected: u32, actual: u32 },
    #[error("event-stream frame checksum mismatch (expected {expected:08x}, got {actual:08x})")]
    MessageCrc { expected: u32, actual: u32 },
    #[error("event-stream frame of {len} bytes exceeds the {max}-byte limit")]
    TooLarge { len: usize, max: usize },
    #[error("event-stream frame of {total} bytes cannot hold {headers} bytes of headers")]
    BadLengths { total: usize, headers: usize },
    #[error("event-stream frame has a malformed header: {0}")]
    BadHeader(String),
    #[error("the event stream ended inside a frame ({0} bytes left over)")]
    Truncated(usize),
}

/// One decoded frame: its string headers (other header types are checked
/// and skipped) and its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) payload: Vec<u8>,
}

impl Frame {
    /// The value of a string header.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Decodes frames from bytes that arrive in pieces of any size.
#[derive(Debug)]
pub(crate) struct FrameDecoder {
    buf: Vec<u8>,
    max_frame: usize,
    /// Set after an error: the rest of the stream cannot be trusted.
    failed: bool,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new(MAX_FRAME)
    }
}

fn be32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    if let Some(src) = bytes.get(at..at + 4) {
        word.copy_from_slice(src);
    }
    u32::from_be_bytes(word)
}

impl FrameDecoder {
    /// A decoder refusing frames longer than `max_frame` bytes.
    pub(crate) fn new(max_frame: usize) -> Self {
        FrameDecoder {
            buf: Vec::new(),
            max_frame,
            failed: false,
        }
    }

    /// Adds bytes; returns the frames they complete, or the first error
    /// (after which the decoder refuses everything).
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<Frame>, FrameError> {
        if self.failed {
            return Err(FrameError::BadHeader("the stream failed before".into()));
        }
        self.buf.extend_from_slice(bytes);
        let mut frames = Vec::new();
        let mut at = 0;
        let result = loop {
            match self.next_frame(at) {
                Ok(Some((frame, len))) => {
                    frames.push(frame);
                    at += len;
                }
                Ok(None) => break Ok(frames),
                Err(e) => break Err(e),
            }
        };
        if result.is_err() {
            self.failed = true;
            self.buf = Vec::new();
        } else {
            self.buf.drain(..at);
        }
        result
    }

    /// Checks that the stream ended on a frame boundary.
    pub(crate) fn finish(&self) -> Result<(), FrameError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(FrameError::Truncated(self.buf.len()))
        }
    }

    /// The frame starting at `at`, if it is complete, and its length.
    fn next_frame(&self, at: usize) -> Result<Option<(Frame, usize)>, FrameError> {
        let data = &self.buf[at..];
        if data.len() < 12 {
            return Ok(None);
        }
        let total = be32(data, 0) as usize;
        let headers_len = be32(data, 4) as usize;
        let expected = be32(data, 8);
        let actual = crc32fast::hash(&data[..8]);
        if expected != actual {
            return Err(FrameError::PreludeCrc { expected, actual });
        }
        if total > self.max_frame {
            return Err(FrameError::TooLarge {
                len: total,
                max: self.max_frame,
            });
        }
        if total < OVERHEAD || headers_len > total - OVERHEAD {
            return Err(FrameError::BadLengths {
                total,
                headers: headers_len,
            });
        }
        if data.len() < total {
            return Ok(None);
        }
        let expected = be32(data, total - 4);
        let actual = crc32fast::hash(&data[..total - 4]);
        if expected != actual {
            return Err(FrameError::MessageCrc { expected, actual });
        }
        let headers = parse_headers(&data[12..12 + headers_len])?;
        let payload = data[12 + headers_len..total - 4].to_vec();
        Ok(Some((Frame { headers, payload }, total)))
    }
}

/// The string headers of a frame's header block.
fn parse_headers(mut block: &[u8]) -> Result<Vec<(String, String)>, FrameError> {
    let short = || FrameError::BadHeader("a header runs past the header block".into());
    let take = |block: &mut &[u8], n: usize| -> Result<Vec<u8>, FrameError> {
        if block.len() < n {
            return Err(short());
        }
        let (head, rest) = block.split_at(n);
        *block = rest;
        Ok(head.to_vec())
    };
    let mut headers = Vec::new();
    while !block.is_empty() {
        let name_len = usize::from(take(&mut block, 1)?[0]);
        let name = String::from_utf8(take(&mut block, name_len)?)
            .map_err(|_| FrameError::BadHeader("a header name is not UTF-8".into()))?;
        let kind = take(&mut block, 1)?[0];
        let fixed = match kind {
            0 | 1 => Some(0),
            2 => Some(1),
            3 => Some(2),
            4 => Some(4),
            5 | 8 => Some(8),
            9 => Some(16),
            6 | 7 => None,
            other => {
                return Err(FrameError::BadHeader(format!(
                    "header {name:?} has unknown type {other}"
                )));
            }
        };
        match fixed {
            Some(n) => {
                take(&mut block, n)?;
            }
            None => {
                let len = take(&mut block, 2)?;
                let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
                let value = take(&mut block, len)?;
                if kind == 7 {
                    let value = String::from_utf8(value).map_err(|_| {
                        FrameError::BadHeader(format!("header {name:?} is not UTF-8"))
                    })?;
                    headers.push((name, value));
                }
            }
        }
    }
    Ok(headers)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Encodes a frame with string headers (the test fake's encoder is
    /// separate, in test-support).
    pub(crate) fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
        let mut block = Vec::new();
        for (k, v) in headers {
            block.push(k.len() as u8);
            block.extend_from_slice(k.as_bytes());
            block.push(7);
            block.extend_from_slice(&(v.len() as u16).to_be_bytes());
            block.extend_from_slice(v.as_bytes());
        }
        let total = (OVERHEAD + block.len() + payload.len()) as u32;
        let mut out = Vec::new();
        out.extend_from_slice(&total.to_be_bytes());
        out.extend_from_slice(&(block.len() as u32).to_be_bytes());
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out.extend_from_slice(&block);
        out.extend_from_slice(payload);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    fn event(kind: &str, payload: &str) -> Vec<u8> {
        frame(
            &[
                (":event-type", kind),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload.as_bytes(),
        )
    }

    #[test]
    fn decodes_frames_split_at_every_byte_boundary() {
        let mut stream = event("messageStart", r#"{"role":"assistant"}"#);
        stream.extend(event("contentBlockDelta", r#"{"delta":{"text":"hé"}}"#));
        stream.extend(frame(&[], b""));
        for cut in 0..=stream.len() {
            let mut d = FrameDecoder::default();
            let mut frames = d.push(&stream[..cut]).unwrap();
            frames.extend(d.push(&stream[cut..]).unwrap());
            d.finish().unwrap();
            assert_eq!(frames.len(), 3, "cut at {cut}");
            assert_eq!(frames[0].header(":event-type"), Some("messageStart"));
            assert_eq!(frames[1].payload, r#"{"delta":{"text":"hé"}}"#.as_bytes());
            assert!(frames[2].headers.is_empty() && frames[2].payload.is_empty());
        }
        // One byte at a time.
        let mut d = FrameDecoder::default();
        let n: usize = stream.iter().map(|b| d.push(&[*b]).unwrap().len()).sum();
        assert_eq!(n, 3);
    }

    #[test]
    fn checksum_mismatches_are_errors() {
        let good = event("messageStop", r#"{"stopReason":"end_turn"}"#);
        let mut bad_payload = good.clone();
        bad_payload[good.len() - 6] ^= 1;
        assert!(matches!(
            FrameDecoder::default().push(&bad_payload),
            Err(FrameError::MessageCrc { .. })
        ));
        let mut bad_prelude = good.clone();
        bad_prelude[3] ^= 1;
        assert!(matches!(
            FrameDecoder::default().push(&bad_prelude),
            Err(FrameError::PreludeCrc { .. })
        ));
        // After an error, nothing more is decoded.
        let mut d = FrameDecoder::default();
        assert!(d.push(&bad_payload).is_err());
        assert!(d.push(&good).is_err());
    }

    #[test]
    fn oversized_and_inconsistent_frames_are_refused_early() {
        let big = frame(&[], &vec![b'x'; 2000]);
        let mut d = FrameDecoder::new(1024);
        // Refused from the prelude alone, before the body is buffered.
        assert_eq!(
            d.push(&big[..12]),
            Err(FrameError::TooLarge {
                len: big.len(),
                max: 1024
            })
        );
        let mut lying = Vec::new();
        lying.extend_from_slice(&20u32.to_be_bytes());
        lying.extend_from_slice(&10u32.to_be_bytes());
        let crc = crc32fast::hash(&lying);
        lying.extend_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            FrameDecoder::default().push(&lying),
            Err(FrameError::BadLengths { .. })
        ));
    }

    #[test]
    fn malformed_headers_and_truncation_are_errors_not_panics() {
        let good = event("x", "{}");
        // A header block that claims a longer string than it holds.
        let mut block = vec![1u8, b'a', 7, 0, 50];
        block.extend_from_slice(b"short");
        let total = (OVERHEAD + block.len()) as u32;
        let mut f = Vec::new();
        f.extend_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&(block.len() as u32).to_be_bytes());
        let crc = crc32fast::hash(&f);
        f.extend_from_slice(&crc.to_be_bytes());
        f.extend_from_slice(&block);
        let crc = crc32fast::hash(&f);
        f.extend_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            FrameDecoder::default().push(&f),
            Err(FrameError::BadHeader(_))
        ));
        let mut d = FrameDecoder::default();
        assert!(d.push(&good[..good.len() - 1]).unwrap().is_empty());
        assert_eq!(d.finish(), Err(FrameError::Truncated(good.len() - 1)));
        // Garbage of every length never panics.
        for n in 0..64u8 {
            let junk: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
            let _ = FrameDecoder::default().push(&junk);
        }
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::FrameDecoder;
        use super::frame;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]

            /// Any bytes, cut anywhere: frames or an error, never a panic.
            #[test]
            fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512), cut in 0usize..512) {
                let mut d = FrameDecoder::new(4096);
                let cut = cut.min(bytes.len());
                if d.push(&bytes[..cut]).is_ok() {
                    let _ = d.push(&bytes[cut..]);
                }
                let _ = d.finish();
            }

            /// Valid frames with a corrupted byte are refused, never
            /// decoded as something else.
            #[test]
            fn a_flipped_byte_is_caught(payload in proptest::collection::vec(any::<u8>(), 0..200), at in any::<usize>(), bit in 0u8..8) {
                let mut f = frame(&[(":event-type", "x")], &payload);
                let at = at % f.len();
                f[at] ^= 1 << bit;
                let mut d = FrameDecoder::default();
                match d.push(&f) {
                    Err(_) => {}
                    // A length grown by the flip: the frame is still incomplete.
                    Ok(frames) => prop_assert!(frames.is_empty() && d.finish().is_err()),
                }
            }
        }
    }
}
