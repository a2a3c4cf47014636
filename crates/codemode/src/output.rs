//! What the model reads after a script: Pi's layout, with the output
//! budget, the spill file and saved images.
//!
//! ```text
//! Script completed                 (or: Script failed)
//! Wall time 0.4 seconds
//! Output:
//! ==> text 1/2 <==                 (only with more than one text item)
//! ...
//! [Image saved to /tmp/codemode-x.png (image/png, 12 KB)]   then the image
//! <console_output>
//! one line per console call
//! </console_output>
//! Script error:                    (failure only; partial output above)
//! TypeError: ... at f (codemode.js:3)
//!
//! Tool calls made before the failure (they are not undone): read (ok)
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use agent_tool::ContentBlock;
use base64::Engine;
use serde::Serialize;

use crate::protocol::OutputKind;

/// Estimated characters per token.
pub const CHARS_PER_TOKEN: u64 = 4;
/// The output budget when a script sets none.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 10_000;

/// One item a script produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputItem {
    /// Text, console line or image.
    pub kind: OutputKind,
    /// The text, or base64 image data.
    pub data: String,
    /// The image's type.
    pub mime: String,
}

/// One nested tool call, as the result's details and the UI show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    /// The nested call's id (`<parent>/<n>`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, cut to 200 characters.
    pub args: String,
    /// `running`, `ok`, `error` or `cancelled`.
    pub status: &'static str,
    /// How long it ran, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The error text, cut to 500 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How a script ended, for the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It completed.
    Completed,
    /// It threw: the error with its stack.
    Threw(String),
    /// Its deadline passed.
    TimedOut(Duration),
    /// The call was aborted.
    Aborted,
    /// Its VM failed (a crash, a limit only the host could enforce).
    SandboxFailed(String),
    /// It never started.
    NotStarted(String),
}

/// The finished result, before it becomes a tool result.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The content blocks: header first.
    pub content: Vec<ContentBlock>,
    /// Whether the script failed.
    pub failed: bool,
    /// Where the whole text went when it was cut.
    pub full_output_path: Option<PathBuf>,
}

/// Cuts `text` to at most `max` characters.
pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(3)).collect();
    out.push_str("...");
    out
}

fn summary(calls: &[CallRecord]) -> String {
    if calls.is_empty() {
        return "No tool calls were made.".to_string();
    }
    let list: Vec<String> = calls
        .iter()
        .map(|c| format!("{} ({})", c.name, c.status))
        .collect();
    format!(
        "Tool calls made before the failure (they are not undone): {}",
        list.join(", ")
    )
}

enum Item {
    Text(String),
    Image { data: String, mime: String },
}

/// Lays out the output, applies the budget, saves images, adds the header.
pub fn render(
    items: &[OutputItem],
    returned: Option<&str>,
    ending: &Ending,
    calls: &[CallRecord],
    max_output_tokens: u64,
    wall: Duration,
) -> Rendered {
    let failed = !matches!(ending, Ending::Completed);
    let mut texts: Vec<&str> = items
        .iter()
        .filter(|i| i.kind == OutputKind::Text)
        .map(|i| i.data.as_str())
        .collect();
    let returned_text =
        returned.map(
            |json| match serde_json::from_str::<serde_json::Value>(json) {
                Ok(serde_json::Value::String(s)) => s,
                _ => json.to_string(),
            },
        );
    if let Some(text) = &returned_text {
        texts.push(text);
    }
    let total = texts.len();
    let mut laid: Vec<Item> = Vec::new();
    let mut console = Vec::new();
    let mut index = 0;
    let mut push_text = |laid: &mut Vec<Item>, text: &str| {
        index += 1;
        laid.push(Item::Text(if total > 1 {
            format!("==> text {index}/{total} <==\n{text}")
        } else {
            text.to_string()
        }));
    };
    for item in items {
        match item.kind {
            OutputKind::Text => push_text(&mut laid, &item.data),
            OutputKind::Console => console.push(item.data.as_str()),
            OutputKind::Image => laid.push(Item::Image {
                data: item.data.clone(),
                mime: item.mime.clone(),
            }),
        }
    }
    if let Some(text) = &returned_text {
        push_text(&mut laid, text);
    }
    if !console.is_empty() {
        laid.push(Item::Text(format!(
            "<console_output>\n{}\n</console_output>",
            console.join("\n")
        )));
    }
    let head = match ending {
        Ending::Completed => None,
        Ending::Threw(stack) => Some(stack.clone()),
        Ending::TimedOut(after) => Some(format!(
            "Script timed out: Execution timed out after {} ms",
            after.as_millis()
        )),
        Ending::Aborted => Some("Script aborted: Execution aborted".to_string()),
        Ending::SandboxFailed(why) => Some(format!("Script sandbox failed: {why}")),
        Ending::NotStarted(why) => Some(format!("{why}\n\nThe script did not start.")),
    };
    if let Some(head) = head {
        let tail = if matches!(ending, Ending::NotStarted(_)) {
            head
        } else {
            format!("{head}\n\n{}", summary(calls))
        };
        laid.push(Item::Text(format!("Script error:\n{tail}")));
    }
    let joined = join_adjacent(laid);
    let (budgeted, full_output_path) = apply_budget(joined, max_output_tokens);
    let with_images = save_images(budgeted);
    let mut content = vec![ContentBlock::text(format!(
        "{}\nWall time {:.1} seconds\nOutput:\n",
        if failed {
            "Script failed"
        } else {
            "Script completed"
        },
        wall.as_secs_f64()
    ))];
    for item in join_adjacent(with_images) {
        match item {
            Item::Text(text) => content.push(ContentBlock::text(text)),
            Item::Image { data, mime } => content.push(ContentBlock::image(data, mime)),
        }
    }
    Rendered {
        content,
        failed,
        full_output_path,
    }
}

/// Adjacent text items become one, each part on its own line. Parts are
/// collected and joined once (joining as we go would be quadratic).
fn join_adjacent(items: Vec<Item>) -> Vec<Item> {
    let mut out = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    let mut last_ends_line = true;
    let flush = |parts: &mut Vec<String>, out: &mut Vec<Item>| {
        if !parts.is_empty() {
            out.push(Item::Text(parts.concat()));
            parts.clear();
        }
    };
    for item in items {
        match item {
            Item::Text(text) => {
                if !parts.is_empty() && !last_ends_line {
                    parts.push("\n".to_string());
                }
                if !text.is_empty() {
                    last_ends_line = text.ends_with('\n');
                }
                parts.push(text);
            }
            image => {
                flush(&mut parts, &mut out);
                last_ends_line = true;
                out.push(image);
            }
        }
    }
    flush(&mut parts, &mut out);
    out
}

/// Over budget, the text becomes one item keeping its start and end, the
/// whole text goes to a 0600 file, and images follow.
fn apply_budget(items: Vec<Item>, max_tokens: u64) -> (Vec<Item>, Option<PathBuf>) {
    let texts: Vec<&str> = items
        .iter()
        .filter_map(|i| match i {
            Item::Text(t) => Some(t.as_str()),
            Item::Image { .. } => None,
        })
        .collect();
    let combined = texts.join("\n");
    let length = combined.chars().count() as u64;
    let budget = max_tokens.saturating_mul(CHARS_PER_TOKEN);
    if texts.is_empty() || length <= budget {
        return (items, None);
    }
    let head_chars = (budget / 2) as usize;
    let tail_chars = (budget as usize).saturating_sub(head_chars);
    let removed = length as usize - head_chars - tail_chars;
    let head: String = combined.chars().take(head_chars).collect();
    let tail: String = {
        let skip = length as usize - tail_chars;
        combined.chars().skip(skip).collect()
    };
    let mut text = format!(
        "Warning: truncated output (original token count: {})\nTotal output lines: {}\n\n{head}…{} tokens truncated…{tail}",
        length.div_ceil(CHARS_PER_TOKEN),
        combined.split('\n').count(),
        (removed as u64).div_ceil(CHARS_PER_TOKEN),
    );
    let path = match write_private_file(".txt", combined.as_bytes()) {
        Ok(path) => {
            text.push_str(&format!(
                "\n\n[Full output: {} (read with offset/limit)]",
                path.display()
            ));
            Some(path)
        }
        Err(e) => {
            text.push_str(&format!("\n\n[Could not save the full output: {e}]"));
            None
        }
    };
    let mut out = vec![Item::Text(text)];
    out.extend(
        items
            .into_iter()
            .filter(|i| matches!(i, Item::Image { .. })),
    );
    (out, path)
}

/// Each image is checked (a bad one in a result would make every later
/// request to the provider fail) and gets a line naming the file it was
/// saved to, before it; one that fails its check becomes a line saying why.
fn save_images(items: Vec<Item>) -> Vec<Item> {
    let mut saved: std::collections::HashMap<String, Option<String>> = Default::default();
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Item::Image { data, mime } = item else {
            out.push(item);
            continue;
        };
        let (label, keep) = match saved.get(&data) {
            Some(Some(label)) => (label.clone(), true),
            Some(None) => (
                "[Image dropped: shown again, and not a valid image]".to_string(),
                false,
            ),
            None => match checked_image(&data, &mime) {
                Ok(bytes) => {
                    let label = save_image(&bytes, &mime);
                    saved.insert(data.clone(), Some(label.clone()));
                    (label, true)
                }
                Err(why) => {
                    saved.insert(data.clone(), None);
                    (format!("[Image dropped: {why}]"), false)
                }
            },
        };
        out.push(Item::Text(label));
        if keep {
            out.push(Item::Image { data, mime });
        }
    }
    out
}

/// The largest image kept in a result (what providers take inline).
pub const MAX_IMAGE_BYTES: usize = 4_500_000;
/// The largest width or height kept.
const MAX_IMAGE_SIDE: u32 = 8_000;
/// The most pixels decoded to check an image (about 64 MiB as RGBA).
const MAX_IMAGE_PIXELS: u64 = 16_000_000;

/// The image's bytes, when they are what `mime` says and decode whole.
fn checked_image(data: &str, mime: &str) -> Result<Vec<u8>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("its data is not base64 ({e})"))?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(format!(
            "{} is more than the {} a model takes; write it to a file with a tool instead",
            agent_tool::format_size(bytes.len() as u64),
            agent_tool::format_size(MAX_IMAGE_BYTES as u64)
        ));
    }
    let format = match mime {
        "image/png" => image::ImageFormat::Png,
        "image/jpeg" => image::ImageFormat::Jpeg,
        "image/gif" => image::ImageFormat::Gif,
        "image/webp" => image::ImageFormat::WebP,
        other => return Err(format!("{other} is not an image type a model takes")),
    };
    if image::guess_format(&bytes).ok() != Some(format) {
        return Err(format!("its data is not {mime}"));
    }
    // The header first: a small file can claim a huge canvas.
    let (width, height) = image::ImageReader::with_format(std::io::Cursor::new(&bytes), format)
        .into_dimensions()
        .map_err(|e| format!("it does not decode as {mime} ({e})"))?;
    if width > MAX_IMAGE_SIDE
        || height > MAX_IMAGE_SIDE
        || u64::from(width) * u64::from(height) > MAX_IMAGE_PIXELS
    {
        return Err(format!(
            "{width}x{height} pixels is more than a model takes; write it to a file with a tool instead"
        ));
    }
    let mut reader = image::ImageReader::with_format(std::io::Cursor::new(&bytes), format);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    limits.max_alloc = Some(128 * 1024 * 1024);
    reader.limits(limits);
    reader
        .decode()
        .map_err(|e| format!("it does not decode as {mime} ({e})"))?;
    Ok(bytes)
}

fn save_image(bytes: &[u8], mime: &str) -> String {
    let extension = match mime {
        "image/png" => ".png",
        "image/jpeg" => ".jpg",
        "image/gif" => ".gif",
        _ => ".webp",
    };
    let kind = format!("{mime}, {}", agent_tool::format_size(bytes.len() as u64));
    match write_private_file(extension, bytes) {
        Ok(path) => format!("[Image saved to {} ({kind})]", path.display()),
        Err(e) => format!("[Image ({kind}) could not be saved: {e}]"),
    }
}

/// The most bytes scripts' spill files and images may take in this
/// process's output directory.
pub const MAX_SAVED_BYTES: u64 = 256 * 1024 * 1024;

/// This process's directory for scripts' files (0700), made on first use.
fn output_dir() -> std::io::Result<&'static std::path::Path> {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(dir) = DIR.get() {
        return Ok(dir);
    }
    let dir = tempfile::Builder::new()
        .prefix("codemode-")
        .tempdir()?
        .keep();
    Ok(DIR.get_or_init(|| dir))
}

/// A new file in this process's output directory, readable by its owner
/// only; refused once the directory holds [`MAX_SAVED_BYTES`].
fn write_private_file(extension: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    static SAVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let len = bytes.len() as u64;
    let before = SAVED.fetch_add(len, std::sync::atomic::Ordering::SeqCst);
    if before.saturating_add(len) > MAX_SAVED_BYTES {
        SAVED.fetch_sub(len, std::sync::atomic::Ordering::SeqCst);
        return Err(std::io::Error::other(format!(
            "scripts' saved files take {} already",
            agent_tool::format_size(MAX_SAVED_BYTES)
        )));
    }
    let mut file = tempfile::Builder::new()
        .prefix("output-")
        .suffix(extension)
        .tempfile_in(output_dir()?)?;
    file.write_all(bytes)?;
    let (_, path) = file.keep().map_err(|e| e.error)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> OutputItem {
        OutputItem {
            kind: OutputKind::Text,
            data: s.into(),
            mime: String::new(),
        }
    }

    fn all_text(r: &Rendered) -> String {
        r.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("")
    }

    #[test]
    fn several_texts_are_numbered_and_console_follows() {
        let items = vec![
            text("one"),
            OutputItem {
                kind: OutputKind::Console,
                data: "log".into(),
                mime: String::new(),
            },
            text("two"),
        ];
        let r = render(
            &items,
            Some("\"three\""),
            &Ending::Completed,
            &[],
            10_000,
            Duration::from_millis(400),
        );
        assert_eq!(
            all_text(&r),
            "Script completed\nWall time 0.4 seconds\nOutput:\n==> text 1/3 <==\none\n==> text 2/3 <==\ntwo\n==> text 3/3 <==\nthree\n<console_output>\nlog\n</console_output>"
        );
    }

    #[test]
    fn over_budget_keeps_head_and_tail_and_spills_the_rest() {
        let long = "x".repeat(100) + &"y".repeat(100);
        let r = render(
            &[text(&long)],
            None,
            &Ending::Completed,
            &[],
            10,
            Duration::ZERO,
        );
        let shown = all_text(&r);
        assert!(shown.contains("original token count: 50"), "{shown}");
        assert!(
            shown.contains(&format!(
                "{}…40 tokens truncated…{}",
                "x".repeat(20),
                "y".repeat(20)
            )),
            "{shown}"
        );
        let path = r.full_output_path.expect("spilled");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), long);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_failure_keeps_partial_output_and_lists_the_calls() {
        let calls = vec![CallRecord {
            id: "c/1".into(),
            name: "read".into(),
            args: "{}".into(),
            status: "ok",
            duration_ms: Some(1),
            error: None,
        }];
        let r = render(
            &[text("partial")],
            None,
            &Ending::Threw("TypeError: x".into()),
            &calls,
            10_000,
            Duration::ZERO,
        );
        assert!(r.failed);
        assert!(all_text(&r).ends_with("partial\nScript error:\nTypeError: x\n\nTool calls made before the failure (they are not undone): read (ok)"));
    }
}
