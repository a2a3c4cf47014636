//! What the host and a script's VM say to each other, and how a worker
//! process frames it on its pipes.
//!
//! The same messages serve the in-process executor (over channels) and the
//! worker process (as length-prefixed JSON frames), so both run one VM loop.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

/// The largest frame either side accepts. A script's whole output is capped
/// at 16 Mi characters and a result handed in at 1 MiB, so this leaves room
/// for JSON escaping while refusing a frame that would only exhaust memory.
pub const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// One tool a script may call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptTool {
    /// The tool's name, as the loop knows it.
    pub name: String,
    /// The name as a JavaScript identifier (`mcp__dev-x__get` becomes `mcp__dev_x__get`).
    pub js_name: String,
    /// What `ALL_TOOLS` and `describeTool()` show: description and parameters.
    pub description: String,
}

/// The limits a VM enforces on itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmLimits {
    /// QuickJS heap limit in bytes.
    pub memory_bytes: usize,
    /// QuickJS stack limit in bytes.
    pub stack_bytes: usize,
    /// Tool calls one script may make.
    pub max_calls: u32,
    /// Characters of JSON in one call's arguments.
    pub max_arg_chars: usize,
    /// Characters of text and base64 the script may output.
    pub max_output_chars: usize,
    /// `text()`, `image()` and `console` calls the script may make.
    pub max_output_items: usize,
    /// Images the script may show (providers take a few per request).
    pub max_images: usize,
    /// Characters of JSON one stored value may have.
    pub max_store_value_chars: usize,
    /// Characters of JSON (keys included) all stored values may have.
    pub max_store_total_chars: usize,
    /// Milliseconds the script may run, counted by the VM from its start;
    /// `None` for no deadline. The host enforces the deadline as well.
    pub timeout_ms: Option<u64>,
}

impl Default for VmLimits {
    fn default() -> Self {
        VmLimits {
            memory_bytes: 256 * 1024 * 1024,
            stack_bytes: 1024 * 1024,
            max_calls: 1_000,
            max_arg_chars: 8 * 1024 * 1024,
            max_output_chars: 16 * 1024 * 1024,
            max_output_items: 100_000,
            max_images: 20,
            max_store_value_chars: 256 * 1024,
            max_store_total_chars: 1024 * 1024,
            timeout_ms: None,
        }
    }
}

/// Everything a VM needs to run one script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptRequest {
    /// The script: the body of an async function.
    pub code: String,
    /// The tools `tools.<name>()` reaches.
    pub tools: Vec<ScriptTool>,
    /// The store as the script starts: key to JSON text.
    pub store: Vec<(String, String)>,
    /// Limits the VM enforces.
    pub limits: VmLimits,
}

/// The host's messages to a VM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum HostMessage {
    /// Run this script (the first message a worker reads).
    Start(ScriptRequest),
    /// Settle the promise of call `id`: with JSON `payload` when `ok`, else
    /// reject it with an `Error` whose message is `payload`.
    Settle {
        /// The call's id.
        id: u64,
        /// Whether the call succeeded.
        ok: bool,
        /// JSON of the value, or the error text.
        payload: String,
    },
}

/// What kind of output item a script produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputKind {
    /// `text()` (or a returned value).
    Text,
    /// A `console.*` line.
    Console,
    /// `image()`: base64 data with its detected type.
    Image,
}

/// How a script ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ScriptEnd {
    /// It returned (or called `exit()`).
    Completed {
        /// JSON of the returned value, if any.
        value: Option<String>,
        /// The store writes: `(key, Some(json))` sets, `(key, None)` deletes.
        writes: Vec<(String, Option<String>)>,
    },
    /// It threw, or broke a limit the VM enforces.
    Threw {
        /// The error's name (`TypeError`, `InternalError`...).
        name: String,
        /// The error's message.
        message: String,
        /// "Name: message" followed by the script's stack frames.
        stack: String,
    },
    /// The VM's own deadline passed.
    TimedOut,
    /// The host stopped waiting (abort), or went away.
    Interrupted,
}

/// A VM's messages to the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum VmEvent {
    /// The script called `tools.<name>(args)`.
    Call {
        /// Id to settle.
        id: u64,
        /// The tool's name.
        name: String,
        /// JSON of the arguments.
        args: String,
    },
    /// An output item.
    Output {
        /// Text, console or image.
        kind: OutputKind,
        /// The text, or base64 image data.
        data: String,
        /// The image's type (empty for text).
        mime: String,
    },
    /// The VM took the result of call `id` (so the host may send more).
    Took {
        /// The call's id.
        id: u64,
    },
    /// The script ended; nothing follows.
    End(ScriptEnd),
}

/// Writes one frame: a 4-byte big-endian length, then the JSON.
pub fn write_frame<T: Serialize>(out: &mut impl Write, message: &T) -> io::Result<()> {
    let json = serde_json::to_vec(message).map_err(io::Error::other)?;
    if json.len() > MAX_FRAME_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a message of {} bytes of JSON passes the limit of {MAX_FRAME_BYTES}",
                json.len()
            ),
        ));
    }
    let len = u32::try_from(json.len()).map_err(io::Error::other)?;
    out.write_all(&len.to_be_bytes())?;
    out.write_all(&json)?;
    out.flush()
}

/// Reads one frame; `Ok(None)` at a clean end of input.
pub fn read_frame<T: for<'de> Deserialize<'de>>(input: &mut impl Read) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes passes the limit of {MAX_FRAME_BYTES}"),
        ));
    }
    let mut body = vec![0u8; len];
    input.read_exact(&mut body)?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_refuse_oversized_lengths() {
        let mut buf = Vec::new();
        let event = VmEvent::Call {
            id: 7,
            name: "read".into(),
            args: "{\"path\":\"a\"}".into(),
        };
        write_frame(&mut buf, &event).unwrap();
        let back: Option<VmEvent> = read_frame(&mut buf.as_slice()).unwrap();
        assert_eq!(back, Some(event));
        let empty: Option<VmEvent> = read_frame(&mut [].as_slice()).unwrap();
        assert_eq!(empty, None);
        let huge = (u32::MAX).to_be_bytes();
        let err = read_frame::<VmEvent>(&mut huge.as_slice()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
