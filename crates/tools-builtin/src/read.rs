//! `read`: text files by line range (streamed, never loaded whole), images as
//! attachments, everything else refused with a clear message.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_tool::ContentBlock;
use agent_tool::{
    AgentToolResult, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, ToolError, TruncatedBy,
    TruncationResult, format_size,
};
use agent_tool::{
    PathArgument, RenderContext, RenderResultOptions, StyledText, Theme, ToolCallContext,
    ToolDefinition, ToolHints, ToolSettings, TypedTool,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::blocking::{blocking, describe_io_error};
use crate::image::{ImageOutcome, detect_image_mime, process_image};
use crate::view::{PREVIEW_LINES, header, preview};
use agent_tool::ops::FileOps;
use agent_tool::path::resolve_read_path_with;

/// Arguments of `read`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ReadParams {
    /// Path of the file to read, relative to the working directory or absolute.
    pub path: String,
    /// First line to show, counting from 1.
    pub offset: Option<i64>,
    /// How many lines to show at most.
    pub limit: Option<i64>,
}

/// Bytes sniffed to tell text, images and other binary files apart.
const SNIFF_BYTES: usize = 8192;

/// The `read` tool.
pub struct ReadTool {
    cwd: PathBuf,
    files: Arc<dyn FileOps>,
}

impl ReadTool {
    /// A read tool resolving paths against `cwd`, using `files` for I/O.
    pub fn new(cwd: impl Into<PathBuf>, files: Arc<dyn FileOps>) -> Self {
        ReadTool {
            cwd: cwd.into(),
            files,
        }
    }
}

impl TypedTool for ReadTool {
    type Params = ReadParams;

    fn name(&self) -> &str {
        "read"
    }

    fn label(&self) -> &str {
        "Read"
    }

    fn description(&self) -> &str {
        "Read a file. Text files come back as text; images (jpg, png, gif, webp, bmp) come back as image attachments. Text output stops after 2000 lines or 50KB, whichever comes first; use offset and limit to page through larger files, continuing with the offset the notice gives until you have what you need."
    }

    async fn execute(
        &self,
        params: ReadParams,
        cx: ToolCallContext,
    ) -> Result<AgentToolResult, ToolError> {
        let ctx = &cx;
        let cancel = ctx.cancel.clone();
        if cancel.is_cancelled() {
            return Err(ToolError::aborted());
        }
        if let Some(limit) = params.limit
            && limit < 1
        {
            return Err(ToolError::new(format!(
                "Invalid limit {limit}: limit must be 1 or more"
            )));
        }
        let path = resolve_read_path_with(&params.path, &self.cwd, |p| self.files.exists(p));
        let files = self.files.clone();
        let auto_resize = ctx
            .get::<ToolSettings>()
            .and_then(|s| s.read::<ReadSettings>().images.auto_resize)
            .unwrap_or(true);
        let model_sees_images = ctx
            .get::<agent_tool::Model>()
            .is_none_or(|m| m.supports_images());
        let task_cancel = cancel.clone();
        blocking(&cancel, move || {
            read_blocking(
                files.as_ref(),
                &path,
                &params,
                auto_resize,
                model_sees_images,
                &task_cancel,
            )
        })
        .await
    }
}

impl ReadTool {
    /// The tool with its prompt snippet, guidelines, renderers and
    /// declarations, as a session registers it.
    pub fn definition(self) -> ToolDefinition {
        ToolDefinition::typed(self)
            .with_prompt_snippet("Read the contents of files (text and images)")
            .with_guidelines(guidelines())
            .with_render_call(render_call)
            .with_render_result(render_result)
            .with_path_argument(PathArgument::read("path"))
            .with_hints(ToolHints::read_only())
    }
}

fn guidelines() -> Vec<String> {
    vec!["Use read to look at files instead of cat, head or sed".to_string()]
}

fn render_call(args: &Value, theme: &Theme, _ctx: &RenderContext) -> Option<StyledText> {
    let path = args["path"].as_str().unwrap_or("?");
    let mut rest = path.to_string();
    let offset = args["offset"].as_i64();
    let limit = args["limit"].as_i64();
    match (offset, limit) {
        (Some(o), Some(l)) => {
            rest.push_str(&format!(":{o}-{}", o.saturating_add(l).saturating_sub(1)))
        }
        (Some(o), None) => rest.push_str(&format!(":{o}")),
        (None, Some(l)) => rest.push_str(&format!(":1-{l}")),
        (None, None) => {}
    }
    Some(header("read", &rest, theme))
}

fn render_result(
    result: &AgentToolResult,
    options: &RenderResultOptions,
    theme: &Theme,
    _ctx: &RenderContext,
) -> Option<StyledText> {
    if result
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::Image(_)))
    {
        return Some(StyledText::from_text(&result.text_content(), theme.muted));
    }
    let style = if options.is_error {
        theme.error
    } else {
        theme.muted
    };
    let n = if options.expanded {
        usize::MAX
    } else {
        PREVIEW_LINES
    };
    Some(preview(&result.text_content(), n, false, style, theme))
}

fn read_blocking(
    files: &dyn FileOps,
    path: &Path,
    params: &ReadParams,
    auto_resize: bool,
    model_sees_images: bool,
    cancel: &agent_tool::CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let info = files
        .metadata(path)
        .map_err(|e| ToolError::new(describe_io_error(&e, path)))?;
    if info.is_dir {
        return Err(ToolError::new(format!(
            "Path is a directory: {}. Use ls to list its contents.",
            path.display()
        )));
    }
    if !info.is_file {
        // FIFOs, sockets and devices: opening may block or never end.
        return Err(ToolError::new(format!(
            "Not a regular file: {}. read only opens regular files.",
            path.display()
        )));
    }
    files
        .check_access(path, false)
        .map_err(|e| ToolError::new(describe_io_error(&e, path)))?;
    let file = files
        .open_read(path)
        .map_err(|e| ToolError::new(describe_io_error(&e, path)))?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let head = reader
        .fill_buf()
        .map_err(|e| ToolError::new(describe_io_error(&e, path)))?;
    let sniff = &head[..head.len().min(SNIFF_BYTES)];

    if let Some(mime) = detect_image_mime(sniff) {
        drop(reader);
        return read_image(files, path, mime, info.len, auto_resize, model_sees_images);
    }
    if memchr::memchr(0, sniff).is_some() {
        return Err(ToolError::new(format!(
            "Cannot read binary file: {} ({}). read shows text files and images (jpg, png, gif, webp, bmp) only.",
            path.display(),
            format_size(info.len)
        )));
    }
    read_text(reader, &params.path, params.offset, params.limit, cancel)
}

fn read_image(
    files: &dyn FileOps,
    path: &Path,
    mime: &'static str,
    len: u64,
    auto_resize: bool,
    model_sees_images: bool,
) -> Result<AgentToolResult, ToolError> {
    let mut text = format!("Read image file [{mime}]");
    let outcome = if len > crate::image::MAX_IMAGE_FILE_BYTES {
        ImageOutcome::Omitted(format!(
            "[Image omitted: the file is {}, too large to process.]",
            format_size(len)
        ))
    } else {
        let bytes = files
            .read_file(path)
            .map_err(|e| ToolError::new(describe_io_error(&e, path)))?;
        process_image(bytes, mime, auto_resize)
    };
    match outcome {
        ImageOutcome::Omitted(message) => {
            text = format!("Read image file [{mime}]\n{message}");
            Ok(AgentToolResult::text(text))
        }
        ImageOutcome::Inline { data, mime, hints } => {
            let mut text = format!("Read image file [{mime}]");
            for hint in hints {
                text.push('\n');
                text.push_str(&hint);
            }
            if !model_sees_images {
                text.push_str("\n[Current model does not support images. The image will be omitted from this request.]");
            }
            Ok(AgentToolResult {
                content: vec![ContentBlock::text(text), ContentBlock::image(data, mime)],
                ..Default::default()
            })
        }
    }
}

/// Streams a reader line by line, counting lines the one way the workspace
/// counts them (a trailing newline does not start another line).
struct LineScanner<R> {
    reader: R,
    newlines: usize,
    last_byte: Option<u8>,
    consumed: u64,
}

/// One line read with a cap on stored bytes.
struct CappedLine {
    bytes: Vec<u8>,
    len: usize,
    newline: bool,
}

impl<R: BufRead> LineScanner<R> {
    fn new(reader: R) -> Self {
        LineScanner {
            reader,
            newlines: 0,
            last_byte: None,
            consumed: 0,
        }
    }

    fn advance(&mut self, n: usize, last: Option<u8>) {
        self.reader.consume(n);
        self.consumed += n as u64;
        if last.is_some() {
            self.last_byte = last;
        }
    }

    /// Consumes whole lines until `count` newlines are passed or EOF.
    fn skip_lines(
        &mut self,
        mut count: usize,
        cancel: &agent_tool::CancellationToken,
    ) -> std::io::Result<()> {
        while count > 0 {
            if cancel.is_cancelled() {
                return Err(std::io::Error::other(agent_tool::ABORTED_MESSAGE));
            }
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            let mut used = buf.len();
            for pos in memchr::memchr_iter(b'\n', buf) {
                self.newlines += 1;
                count -= 1;
                if count == 0 {
                    used = pos + 1;
                    break;
                }
            }
            let last = buf.get(used - 1).copied();
            self.advance(used, last);
        }
        Ok(())
    }

    /// Reads one line, storing at most `cap` bytes of it. `None` at EOF.
    fn read_line(&mut self, cap: usize) -> std::io::Result<Option<CappedLine>> {
        let mut line = CappedLine {
            bytes: Vec::new(),
            len: 0,
            newline: false,
        };
        let mut any = false;
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(any.then_some(line));
            }
            any = true;
            let (chunk, used, newline) = match memchr::memchr(b'\n', buf) {
                Some(pos) => (&buf[..pos], pos + 1, true),
                None => (buf, buf.len(), false),
            };
            let room = cap.saturating_sub(line.bytes.len());
            line.bytes
                .extend_from_slice(&chunk[..chunk.len().min(room)]);
            line.len += chunk.len();
            let last = buf.get(used - 1).copied();
            self.advance(used, last);
            if newline {
                self.newlines += 1;
                line.newline = true;
                return Ok(Some(line));
            }
        }
    }

    /// Consumes the rest, counting newlines, until EOF or until `budget`
    /// more bytes were read; returns the byte position right after
    /// `mark_after` more newlines (if reached) and whether EOF was reached.
    fn count_rest(
        &mut self,
        mark_after: Option<usize>,
        budget: u64,
        cancel: &agent_tool::CancellationToken,
    ) -> std::io::Result<(Option<u64>, bool)> {
        let mut remaining = mark_after;
        let mut mark = None;
        if remaining == Some(0) {
            mark = Some(self.consumed);
            remaining = None;
        }
        let stop_at = self.consumed.saturating_add(budget);
        loop {
            if cancel.is_cancelled() {
                return Err(std::io::Error::other(agent_tool::ABORTED_MESSAGE));
            }
            if self.consumed >= stop_at {
                return Ok((mark, false));
            }
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok((mark, true));
            }
            let len = buf.len();
            match remaining {
                Some(ref mut left) => {
                    for pos in memchr::memchr_iter(b'\n', buf) {
                        self.newlines += 1;
                        *left -= 1;
                        if *left == 0 && mark.is_none() {
                            mark = Some(self.consumed + pos as u64 + 1);
                        }
                    }
                    if mark.is_some() {
                        remaining = None;
                    }
                }
                None => self.newlines += memchr::memchr_iter(b'\n', buf).count(),
            }
            let last = buf.last().copied();
            self.advance(len, last);
        }
    }

    /// Lines in everything consumed so far (valid once EOF was reached).
    fn total_lines(&self) -> usize {
        self.newlines + usize::from(self.last_byte.is_some_and(|b| b != b'\n'))
    }
}

/// Bytes read past the requested lines to count the file's remaining lines.
/// Reading the head of a huge file must not cost a scan of all of it.
const COUNT_BUDGET: u64 = 32 * 1024 * 1024;

/// Why collecting stopped.
enum Stop {
    EndOfFile,
    Limit,
    Lines,
    Bytes,
    FirstLineTooLong(usize),
}

fn read_text<R: Read>(
    reader: BufReader<R>,
    raw_path: &str,
    offset: Option<i64>,
    limit: Option<i64>,
    cancel: &agent_tool::CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let io = |e: std::io::Error| ToolError::new(e.to_string());
    let start = offset.map(|o| (o.max(1) - 1) as usize).unwrap_or(0);
    let limit = limit.map(|l| l as usize);
    let mut scanner = LineScanner::new(reader);
    scanner.skip_lines(start, cancel).map_err(io)?;
    let selection_start = scanner.consumed;

    let mut kept: Vec<String> = Vec::new();
    let mut kept_bytes = 0usize;
    let mut stop = Stop::EndOfFile;
    // Lines of the selection read so far (kept or not).
    let mut selected = 0usize;
    loop {
        if limit == Some(kept.len()) {
            stop = Stop::Limit;
            break;
        }
        if cancel.is_cancelled() {
            return Err(ToolError::aborted());
        }
        let Some(line) = scanner.read_line(DEFAULT_MAX_BYTES + 1).map_err(io)? else {
            break;
        };
        selected += 1;
        if kept.len() == DEFAULT_MAX_LINES {
            stop = Stop::Lines;
            break;
        }
        if kept.is_empty() && line.len > DEFAULT_MAX_BYTES {
            stop = Stop::FirstLineTooLong(line.len);
            break;
        }
        let cost = line.len + usize::from(!kept.is_empty());
        if kept_bytes + cost > DEFAULT_MAX_BYTES {
            stop = Stop::Bytes;
            break;
        }
        kept_bytes += cost;
        kept.push(String::from_utf8_lossy(&line.bytes).into_owned());
        if !line.newline {
            break;
        }
    }
    // Lines of the selection still unread. Counting the rest of the file
    // costs at most COUNT_BUDGET bytes: past that the total stays unknown.
    let selection_left = limit.map(|l| l.saturating_sub(selected));
    let (selection_end, counted_all) = scanner
        .count_rest(selection_left, COUNT_BUDGET, cancel)
        .map_err(io)?;
    let total = scanner.total_lines();
    // How the total is shown: exact, or a lower bound.
    let of_total = if counted_all {
        total.to_string()
    } else {
        format!("at least {}", total + 1)
    };
    let file_ends_with_newline = scanner.last_byte == Some(b'\n');

    if start >= total && !(start == 0 && total == 0) {
        return Err(ToolError::new(format!(
            "Offset {} is beyond end of file ({total} lines total)",
            offset.unwrap_or(1)
        )));
    }

    let first = start + 1;
    let selection_lines = match limit {
        Some(l) => l.min(total - start),
        None => total - start,
    };
    let selection_bytes = selection_end.unwrap_or(scanner.consumed) - selection_start;
    let truncation = |by: TruncatedBy, content: &str, output_lines: usize, first_too_long: bool| {
        TruncationResult {
            content: content.to_string(),
            truncated: true,
            truncated_by: Some(by),
            total_lines: selection_lines,
            total_bytes: selection_bytes as usize,
            output_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: first_too_long,
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    };
    let content = kept.join("\n");
    let result = match stop {
        Stop::FirstLineTooLong(len) => {
            let text = format!(
                "[Line {first} is {}, exceeds {} limit. Use bash: sed -n '{first}p' {raw_path} | head -c {DEFAULT_MAX_BYTES}]",
                format_size(len as u64),
                format_size(DEFAULT_MAX_BYTES as u64)
            );
            AgentToolResult::text(text).with_details(json!({
                "truncation": truncation(TruncatedBy::Bytes, "", 0, true)
            }))
        }
        Stop::Lines | Stop::Bytes => {
            let last = start + kept.len();
            let (by, notice) = if matches!(stop, Stop::Lines) {
                (
                    TruncatedBy::Lines,
                    format!(
                        "[Showing lines {first}-{last} of {of_total}. Use offset={} to continue.]",
                        last + 1
                    ),
                )
            } else {
                (
                    TruncatedBy::Bytes,
                    format!(
                        "[Showing lines {first}-{last} of {of_total} ({} limit). Use offset={} to continue.]",
                        format_size(DEFAULT_MAX_BYTES as u64),
                        last + 1
                    ),
                )
            };
            let details = json!({"truncation": truncation(by, &content, kept.len(), false)});
            AgentToolResult::text(format!("{content}\n\n{notice}")).with_details(details)
        }
        Stop::Limit if !counted_all => AgentToolResult::text(format!(
            "{content}\n\n[At least {} more lines in file (the rest was not counted). Use offset={} to continue.]",
            (total + 1).saturating_sub(start + kept.len()).max(1),
            start + kept.len() + 1
        )),
        Stop::Limit if start + kept.len() < total => {
            let remaining = total - (start + kept.len());
            AgentToolResult::text(format!(
                "{content}\n\n[{remaining} more lines in file. Use offset={} to continue.]",
                start + kept.len() + 1
            ))
        }
        _ => {
            let mut text = content;
            if file_ends_with_newline && start + kept.len() == total && !kept.is_empty() {
                text.push('\n');
            }
            AgentToolResult::text(text)
        }
    };
    Ok(result)
}

/// The settings the read tool reads (`images.autoResize`).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct ReadSettings {
    images: ImageSettings,
}

/// `images.*` as the read tool reads it.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ImageSettings {
    /// Shrink large images before the model sees them (default on).
    auto_resize: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        text: &str,
        offset: Option<i64>,
        limit: Option<i64>,
    ) -> Result<AgentToolResult, ToolError> {
        read_text(
            BufReader::with_capacity(7, text.as_bytes()),
            "f.txt",
            offset,
            limit,
            &Default::default(),
        )
    }

    #[test]
    fn whole_file_is_verbatim() {
        assert_eq!(run("a\nb\n", None, None).unwrap().text_content(), "a\nb\n");
        assert_eq!(run("a\nb", None, None).unwrap().text_content(), "a\nb");
        assert_eq!(run("", None, None).unwrap().text_content(), "");
    }

    #[test]
    fn offset_and_limit() {
        let text = "1\n2\n3\n4\n5\n";
        assert_eq!(
            run(text, Some(2), Some(2)).unwrap().text_content(),
            "2\n3\n\n[2 more lines in file. Use offset=4 to continue.]"
        );
        assert_eq!(run(text, Some(4), None).unwrap().text_content(), "4\n5\n");
        assert_eq!(
            run(text, Some(4), Some(2)).unwrap().text_content(),
            "4\n5\n"
        );
        assert_eq!(
            run(text, Some(0), Some(1)).unwrap().text_content(),
            "1\n\n[4 more lines in file. Use offset=2 to continue.]"
        );
        assert_eq!(
            run(text, Some(6), None).unwrap_err().to_string(),
            "Offset 6 is beyond end of file (5 lines total)"
        );
    }

    #[test]
    fn line_truncation_notice() {
        let text: String = (1..=2500).map(|i| format!("{i}\n")).collect();
        let r = run(&text, None, None).unwrap();
        let t = r.text_content();
        assert!(
            t.ends_with("2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"),
            "{}",
            &t[t.len() - 100..]
        );
        assert_eq!(r.details["truncation"]["truncatedBy"], "lines");
        assert_eq!(r.details["truncation"]["totalLines"], 2500);
        let r = run(&text, Some(2001), None).unwrap();
        assert!(r.text_content().starts_with("2001\n"));
        assert!(r.text_content().ends_with("2500\n"));
    }

    #[test]
    fn byte_truncation_notice() {
        let line = "x".repeat(1000);
        let text: String = (0..100).map(|_| format!("{line}\n")).collect();
        let r = run(&text, None, None).unwrap();
        let t = r.text_content();
        // 51 lines of 1000 bytes + 50 newlines = 51050 bytes fit; the 52nd does not.
        assert!(
            t.ends_with(
                "\n\n[Showing lines 1-51 of 100 (50.0KB limit). Use offset=52 to continue.]"
            ),
            "{}",
            &t[t.len() - 90..]
        );
        assert_eq!(r.details["truncation"]["truncatedBy"], "bytes");
    }

    #[test]
    fn first_line_over_limit() {
        let text = format!("short\n{}\nend\n", "y".repeat(60_000));
        let r = run(&text, Some(2), None).unwrap();
        assert_eq!(
            r.text_content(),
            "[Line 2 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '2p' f.txt | head -c 51200]"
        );
        assert_eq!(r.details["truncation"]["firstLineExceedsLimit"], true);
    }
}
