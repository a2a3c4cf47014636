//! `bash`: run a shell command, stream its output, keep the tail.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{
    AgentToolResult, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, ToolError, ToolUpdateSink, TruncatedBy,
    TruncationOptions, TruncationResult, format_size, truncate_tail,
};
use coding_agent::{
    MAX_TIMEOUT_SECONDS, RenderContext, RenderResultOptions, StyledLine, StyledText, Theme,
    ToolContext, TypedToolDefinition,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::preview;
use crate::ops::{ExecEnd, ExecRequest, ProcessOps};

/// Arguments of `bash`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct BashParams {
    /// The command to run with bash.
    pub command: String,
    /// Timeout in seconds. Defaults to the session's setting (180 unless configured); 0 disables the timer.
    pub timeout: Option<f64>,
}

/// What a spawn hook may rewrite before a command starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnContext {
    /// The command text (after the command prefix was applied).
    pub command: String,
    /// Working directory.
    pub cwd: PathBuf,
    /// The complete environment.
    pub env: Vec<(OsString, OsString)>,
}

/// Rewrites a command before it is spawned.
pub type SpawnHook = Arc<dyn Fn(SpawnContext) -> SpawnContext + Send + Sync>;

/// Options of the bash tool; unset fields fall back to the settings.
#[derive(Clone, Default)]
pub struct BashOptions {
    /// Prepended as `<prefix>\n<command>` (setting `shellCommandPrefix`).
    pub command_prefix: Option<String>,
    /// Shell binary (setting `shellPath`).
    pub shell_path: Option<String>,
    /// Called with every command before it starts.
    pub spawn_hook: Option<SpawnHook>,
}

impl std::fmt::Debug for BashOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BashOptions")
            .field("command_prefix", &self.command_prefix)
            .field("shell_path", &self.shell_path)
            .field("spawn_hook", &self.spawn_hook.is_some())
            .finish()
    }
}

/// The `bash` tool.
pub struct BashTool {
    cwd: PathBuf,
    processes: Arc<dyn ProcessOps>,
    options: BashOptions,
}

impl BashTool {
    /// A bash tool running commands in `cwd` through `processes`.
    pub fn new(
        cwd: impl Into<PathBuf>,
        processes: Arc<dyn ProcessOps>,
        options: BashOptions,
    ) -> Self {
        BashTool {
            cwd: cwd.into(),
            processes,
            options,
        }
    }
}

/// Decoded output kept in memory for the tail (at least twice the byte budget).
const TAIL_KEEP: usize = 2 * DEFAULT_MAX_BYTES;
/// Minimum time between progress updates.
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);

/// Picks the shell: an explicit path (must exist), `/bin/bash`, `bash` on PATH, `sh`.
pub fn resolve_shell(explicit: Option<&str>) -> Result<PathBuf, ToolError> {
    if let Some(path) = explicit {
        let p = PathBuf::from(path);
        return if p.exists() {
            Ok(p)
        } else {
            Err(ToolError::new(format!(
                "Custom shell path not found: {path}"
            )))
        };
    }
    if Path::new("/bin/bash").exists() {
        return Ok(PathBuf::from("/bin/bash"));
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("bash");
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Ok(PathBuf::from("sh"))
}

/// Incremental UTF-8 decoding: characters split across chunks decode correctly,
/// invalid bytes become U+FFFD.
#[derive(Default)]
struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    fn decode(&mut self, chunk: &[u8], out: &mut String) {
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

    fn finish(&mut self, out: &mut String) {
        if !self.pending.is_empty() {
            out.push_str(&String::from_utf8_lossy(&self.pending));
            self.pending.clear();
        }
    }
}

/// Everything a command printed, in bounded memory: counts, a rolling tail, and
/// (once the limits are passed) a spill file with every raw byte.
struct OutputAccumulator {
    decoder: Utf8Stream,
    tail: String,
    total_bytes: usize,
    newlines: usize,
    open_line_bytes: usize,
    last_line_bytes: usize,
    raw: Vec<u8>,
    spill: Option<(std::fs::File, PathBuf)>,
    spill_error: Option<String>,
}

/// A view of the output for the model.
struct Snapshot {
    text: String,
    truncation: Option<TruncationResult>,
    notice: String,
}

impl OutputAccumulator {
    fn new() -> Self {
        OutputAccumulator {
            decoder: Utf8Stream::default(),
            tail: String::new(),
            total_bytes: 0,
            newlines: 0,
            open_line_bytes: 0,
            last_line_bytes: 0,
            raw: Vec::new(),
            spill: None,
            spill_error: None,
        }
    }

    fn total_lines(&self) -> usize {
        self.newlines + usize::from(self.open_line_bytes > 0)
    }

    fn push(&mut self, chunk: &[u8]) {
        match &mut self.spill {
            Some((file, _)) => {
                if let Err(e) = file.write_all(chunk) {
                    self.spill_error.get_or_insert(e.to_string());
                }
            }
            None => self.raw.extend_from_slice(chunk),
        }
        let before = self.tail.len();
        self.decoder.decode(chunk, &mut self.tail);
        self.account(before);
    }

    fn finish(&mut self) {
        let before = self.tail.len();
        self.decoder.finish(&mut self.tail);
        self.account(before);
        if let Some((file, _)) = &mut self.spill {
            let _ = file.flush();
        }
    }

    fn account(&mut self, from: usize) {
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

    fn start_spill(&mut self) {
        let created = tempfile::Builder::new()
            .prefix("coding-agent-bash-")
            .suffix(".log")
            .tempfile()
            .and_then(|f| f.keep().map_err(|e| e.error));
        match created {
            Ok((mut file, path)) => {
                if let Err(e) = file.write_all(&self.raw) {
                    self.spill_error = Some(e.to_string());
                }
                self.raw = Vec::new();
                self.spill = Some((file, path));
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot create the bash full-output file");
                self.spill_error = Some(e.to_string());
                self.raw = Vec::new();
            }
        }
    }

    fn full_output_path(&self) -> Option<String> {
        self.spill.as_ref().map(|(_, p)| p.display().to_string())
    }

    fn snapshot(&self) -> Snapshot {
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
        let full = self.full_output_path().unwrap_or_else(|| {
            format!(
                "(not saved: {})",
                self.spill_error.clone().unwrap_or_default()
            )
        });
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
    fn render(&self, placeholder: bool) -> String {
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

    fn details(&self, full_output_path: Option<String>) -> Value {
        match &self.truncation {
            Some(t) => json!({"truncation": t, "fullOutputPath": full_output_path}),
            None => Value::Null,
        }
    }
}

/// `1`, `0.5`, `180`: a number of seconds as the caller wrote it; very
/// small values in exponent form (`1e-300`), as JavaScript prints them.
fn format_seconds(s: f64) -> String {
    if s != 0.0 && s.abs() < 1e-6 {
        format!("{s:e}")
    } else {
        format!("{s}")
    }
}

impl TypedToolDefinition for BashTool {
    type Params = BashParams;

    fn name(&self) -> &str {
        "bash"
    }

    fn label(&self) -> &str {
        "Bash"
    }

    fn description(&self) -> &str {
        "Run a bash command in the working directory and return its combined stdout and stderr. Output is cut to the last 2000 lines or 50KB, whichever comes first; the complete output is then saved to a file whose path is given. Commands time out after the session's default (180 seconds unless configured); pass timeout in seconds to change it, 0 for none."
    }

    fn prompt_snippet(&self) -> Option<&str> {
        Some("Run shell commands (tests, builds, git, and anything else the shell can do)")
    }

    fn render_call(&self, args: &Value, theme: &Theme, _ctx: &RenderContext) -> Option<StyledText> {
        let command = args["command"].as_str().unwrap_or("");
        let mut text = StyledText::new();
        for (i, line) in command.lines().enumerate() {
            let prompt = if i == 0 { "$ " } else { "  " };
            text.push(StyledLine::styled(prompt, theme.muted).push(line, theme.accent));
        }
        if let Some(t) = args["timeout"].as_f64() {
            text.push(StyledLine::styled(
                format!("  (timeout {}s)", format_seconds(t)),
                theme.muted,
            ));
        }
        Some(text)
    }

    fn render_result(
        &self,
        result: &AgentToolResult,
        options: &RenderResultOptions,
        theme: &Theme,
        _ctx: &RenderContext,
    ) -> Option<StyledText> {
        let style = if options.is_error {
            theme.error
        } else {
            coding_agent::anstyle::Style::new()
        };
        let n = if options.expanded {
            usize::MAX
        } else if options.is_partial {
            5
        } else {
            20
        };
        Some(preview(&result.text_content(), n, true, style, theme))
    }

    async fn execute(
        &self,
        _call_id: &str,
        params: BashParams,
        on_update: ToolUpdateSink,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, ToolError> {
        let cancel = ctx.cancel.clone();
        if cancel.is_cancelled() {
            return Err(ToolError::new("Command aborted"));
        }
        let timeout = match params.timeout {
            Some(t) if !t.is_finite() || t < 0.0 => {
                return Err(ToolError::new(
                    "Invalid timeout: must be a finite number of seconds, or 0 to disable the timer",
                ));
            }
            Some(t) if t > MAX_TIMEOUT_SECONDS => {
                return Err(ToolError::new(
                    "Invalid timeout: maximum is 2147483.647 seconds",
                ));
            }
            Some(0.0) => None,
            Some(t) => Some(t),
            None => ctx.settings.bash_timeout_seconds(),
        };
        if !self.processes.working_dir_exists(&self.cwd) {
            return Err(ToolError::new(format!(
                "Working directory does not exist: {}\nCannot execute bash commands.",
                self.cwd.display()
            )));
        }
        let shell_path = self
            .options
            .shell_path
            .clone()
            .or_else(|| ctx.settings.shell_path());
        let shell = self.processes.resolve_shell(shell_path.as_deref())?;
        let prefix = self
            .options
            .command_prefix
            .clone()
            .or_else(|| ctx.settings.shell_command_prefix());
        let command = match prefix {
            Some(p) => format!("{p}\n{}", params.command),
            None => params.command.clone(),
        };
        let mut spawn = SpawnContext {
            command,
            cwd: self.cwd.clone(),
            env: std::env::vars_os().collect(),
        };
        if let Some(hook) = &self.options.spawn_hook {
            spawn = hook(spawn);
        }
        let request = ExecRequest {
            shell,
            command: spawn.command,
            cwd: spawn.cwd,
            env: spawn.env,
            timeout: timeout.map(Duration::from_secs_f64),
        };

        on_update.send(AgentToolResult::default());
        let mut output = OutputAccumulator::new();
        let mut last_update = Instant::now();
        let mut dirty = false;
        let ended = {
            let mut on_data = |chunk: &[u8]| {
                output.push(chunk);
                dirty = true;
                if last_update.elapsed() >= UPDATE_INTERVAL {
                    last_update = Instant::now();
                    dirty = false;
                    let snap = output.snapshot();
                    on_update.send(
                        AgentToolResult::text(snap.render(false))
                            .with_details(snap.details(output.full_output_path())),
                    );
                }
            };
            self.processes
                .exec(request, &mut on_data, cancel.clone())
                .await
        };
        output.finish();
        let snapshot = output.snapshot();
        if dirty || snapshot.truncation.is_some() {
            on_update.send(
                AgentToolResult::text(snapshot.render(false))
                    .with_details(snapshot.details(output.full_output_path())),
            );
        }
        let end =
            ended.map_err(|e| ToolError::new(format!("Failed to start {}: {e}", "the shell")))?;
        let with_status = |status: String| {
            let out = snapshot.render(false);
            if out.is_empty() {
                status
            } else {
                format!("{out}\n\n{status}")
            }
        };
        match end {
            ExecEnd::Exited(Some(0)) | ExecEnd::Exited(None) => {
                Ok(AgentToolResult::text(snapshot.render(true))
                    .with_details(snapshot.details(output.full_output_path())))
            }
            ExecEnd::Exited(Some(code)) => Err(ToolError::new(format!(
                "{}\n\nCommand exited with code {code}",
                snapshot.render(true)
            ))),
            ExecEnd::TimedOut => Err(ToolError::new(with_status(format!(
                "Command timed out after {} seconds",
                format_seconds(timeout.unwrap_or_default())
            )))),
            ExecEnd::Aborted => Err(ToolError::new(with_status("Command aborted".to_string()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_print_like_the_caller_wrote_them() {
        assert_eq!(format_seconds(180.0), "180");
        assert_eq!(format_seconds(0.5), "0.5");
        assert_eq!(format_seconds(1e-300), "1e-300");
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
        let mut acc = OutputAccumulator::new();
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

    #[test]
    fn seconds_format() {
        assert_eq!(format_seconds(1.0), "1");
        assert_eq!(format_seconds(0.5), "0.5");
    }
}
