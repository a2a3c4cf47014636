//! `grep`: search file contents in-process (ripgrep's crates), sorted by path,
//! stopping once the match limit is certain.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_tool::{
    AgentToolResult, CancellationToken, GREP_MAX_LINE_LENGTH, ToolError, truncate_line,
};
use agent_tool::{
    PathArgument, RenderContext, RenderResultOptions, StyledText, Theme, ToolCallContext,
    ToolDefinition, ToolHints, TypedTool,
};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, sinks};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::blocking::blocking;
use crate::listing::{Listing, listing_view};
use crate::view::header;
use agent_tool::ops::FileOps;
use agent_tool::ops::{WalkEntry, WalkOptions};
use agent_tool::path::{display_relative, resolve_to_cwd};

/// Arguments of `grep`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepParams {
    /// Regular expression (or literal text with literal: true) to search for.
    pub pattern: String,
    /// Directory or file to search (default: the working directory).
    pub path: Option<String>,
    /// Only search files matching this glob, e.g. '*.rs' or '**/*.test.ts'.
    pub glob: Option<String>,
    /// Match case-insensitively (default: false).
    pub ignore_case: Option<bool>,
    /// Treat the pattern as literal text, not a regular expression (default: false).
    pub literal: Option<bool>,
    /// Lines of context to show before and after each match (default: 0).
    pub context: Option<i64>,
    /// Most matching lines to return (default: 100).
    pub limit: Option<i64>,
}

/// Default match limit.
pub const DEFAULT_GREP_LIMIT: usize = 100;

/// The `grep` tool.
pub struct GrepTool {
    cwd: PathBuf,
    files: Arc<dyn FileOps>,
}

impl GrepTool {
    /// A grep tool for `cwd`.
    pub fn new(cwd: impl Into<PathBuf>, files: Arc<dyn FileOps>) -> Self {
        GrepTool {
            cwd: cwd.into(),
            files,
        }
    }
}

/// A fully resolved search.
#[derive(Debug, Clone)]
pub struct GrepRequest {
    /// Directory or file to search.
    pub root: PathBuf,
    /// The pattern.
    pub pattern: String,
    /// Glob filter.
    pub glob: Option<String>,
    /// Case-insensitive.
    pub ignore_case: bool,
    /// Literal pattern.
    pub literal: bool,
    /// Context lines.
    pub context: usize,
    /// Match limit (at least 1).
    pub limit: usize,
}

/// Matches of one file.
struct FileMatches {
    display: String,
    path: PathBuf,
    lines: Vec<(u64, String)>,
    /// The file holds a line longer than [`MAX_SEARCHED_LINE`]: its search
    /// stopped there.
    line_too_long: bool,
}

/// The longest line grep searches (8 MiB). A searcher holds a whole line in
/// memory; a file with a longer one (a 1 GB minified blob) is reported
/// instead of exhausting memory.
pub const MAX_SEARCHED_LINE: usize = 8 * 1024 * 1024;

fn build_matcher(request: &GrepRequest) -> Result<RegexMatcher, ToolError> {
    RegexMatcherBuilder::new()
        .case_insensitive(request.ignore_case)
        .fixed_strings(request.literal)
        .line_terminator(Some(b'\n'))
        .build(&request.pattern)
        .map_err(|e| ToolError::new(format!("Invalid pattern: {e}")))
}

fn searcher() -> Searcher {
    SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .heap_limit(Some(MAX_SEARCHED_LINE))
        .build()
}

fn search_file(
    files: &dyn FileOps,
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    display: String,
    cap: usize,
) -> FileMatches {
    let mut lines = Vec::new();
    let result = files.open_read(path).and_then(|reader| {
        searcher.search_reader(
            matcher,
            reader,
            sinks::Lossy(|line_number, text| {
                let text = text.strip_suffix('\n').unwrap_or(text);
                let text = text.strip_suffix('\r').unwrap_or(text);
                lines.push((line_number, clip(text)));
                Ok(lines.len() < cap)
            }),
        )
    });
    let mut line_too_long = false;
    if let Err(e) = result {
        // grep-searcher's words when a line outgrows the heap limit.
        line_too_long = e.to_string().contains("allocation limit");
        tracing::debug!(path = %path.display(), error = %e, "grep: file skipped");
    }
    FileMatches {
        display,
        path: path.to_path_buf(),
        lines,
        line_too_long,
    }
}

/// Runs a search and formats Pi's output (matches in path order).
pub fn run_grep(
    files: &dyn FileOps,
    request: &GrepRequest,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let info =
        files.metadata(&request.root).map_err(
            |e| match agent_tool::ops::SandboxDenied::message(&e) {
                Some(message) => ToolError::new(message.to_string()),
                None => ToolError::new(format!("Path not found: {}", request.root.display())),
            },
        )?;
    let matcher = build_matcher(request)?;
    let limit = request.limit;

    let per_file = if info.is_dir {
        search_tree(files, request, &matcher, limit, cancel)?
    } else if info.is_file {
        let name = request
            .root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        vec![search_file(
            files,
            &mut searcher(),
            &matcher,
            &request.root,
            name,
            limit,
        )]
    } else {
        return Err(ToolError::new(format!(
            "Not a regular file: {}",
            request.root.display()
        )));
    };
    if cancel.is_cancelled() {
        return Err(ToolError::aborted());
    }
    let mut remaining = limit;
    let mut kept: Vec<FileMatches> = Vec::new();
    let mut unsearched: Vec<String> = Vec::new();
    for mut fm in per_file {
        if remaining == 0 {
            break;
        }
        if fm.line_too_long {
            unsearched.push(fm.display.clone());
        }
        if fm.lines.is_empty() {
            continue;
        }
        fm.lines.truncate(remaining);
        remaining -= fm.lines.len();
        kept.push(fm);
    }
    let per_file = kept;
    let total: usize = per_file.iter().map(|f| f.lines.len()).sum();
    let unsearched_notice = (!unsearched.is_empty()).then(|| {
        format!(
            "Not searched past a line longer than {}: {}",
            agent_tool::format_size(MAX_SEARCHED_LINE as u64),
            unsearched.join(", ")
        )
    });
    if total == 0 {
        return Ok(match unsearched_notice {
            Some(notice) => AgentToolResult::text(format!("No matches found\n\n[{notice}]"))
                .with_details(json!({"linesTooLong": unsearched})),
            None => AgentToolResult::text("No matches found"),
        });
    }
    let limit_reached = total >= limit;

    let mut lines_truncated = false;
    let mut out: Vec<String> = Vec::new();
    // The 500-character cut applies to the line's own text, not to the
    // `path:line: ` prefix.
    let mut emit = |prefix: String, text: &str| {
        let (text, cut) = truncate_line(text, GREP_MAX_LINE_LENGTH);
        lines_truncated |= cut;
        out.push(prefix + &text);
    };
    for fm in &per_file {
        if request.context == 0 {
            for (n, text) in &fm.lines {
                emit(format!("{}:{n}: ", fm.display), text);
            }
            continue;
        }
        let c = request.context as u64;
        match context_lines(files, &fm.path, &fm.lines, c) {
            Some(texts) => {
                // Never walk past the file's last line, however large `context` is.
                let last_line = texts.keys().copied().max().unwrap_or(0);
                for (n, _) in &fm.lines {
                    let from = n.saturating_sub(c).max(1);
                    for k in from..=n.saturating_add(c).min(last_line) {
                        let Some(text) = texts.get(&k) else {
                            continue;
                        };
                        if k == *n {
                            emit(format!("{}:{k}: ", fm.display), text);
                        } else {
                            emit(format!("{}-{k}- ", fm.display), text);
                        }
                    }
                }
            }
            None => {
                for (n, _) in &fm.lines {
                    emit(format!("{}:{n}: ", fm.display), "(unable to read file)");
                }
            }
        }
    }
    let mut listing = Listing::default();
    if limit_reached {
        listing.limit_reached(
            "matchLimitReached",
            limit,
            format!(
                "{limit} matches limit reached. Use limit={} for more, or refine pattern",
                limit * 2
            ),
        );
    }
    let shortened = lines_truncated.then(|| {
        (
            "linesTruncated",
            json!(true),
            format!("Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"),
        )
    });
    let mut result = listing.finish(&out, shortened);
    if let Some(notice) = unsearched_notice {
        append_notice(&mut result, &notice);
        if let Value::Object(map) = &mut result.details {
            map.insert("linesTooLong".into(), json!(unsearched));
        } else {
            result.details = json!({"linesTooLong": unsearched});
        }
    }
    Ok(result)
}

/// Walks `builder` in path order (directories depth first, names sorted) on
/// this thread while worker threads search the files it finds. Results are
/// kept in walk order; once the files finished in order hold `limit` matches,
/// the walk and the workers stop. Deterministic, and early-stopping.
fn search_tree(
    files: &dyn FileOps,
    request: &GrepRequest,
    matcher: &RegexMatcher,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<Vec<FileMatches>, ToolError> {
    let root = request.root.as_path();
    struct Progress {
        pending: HashMap<usize, FileMatches>,
        ordered: Vec<FileMatches>,
        matches: usize,
    }
    let progress = Mutex::new(Progress {
        pending: HashMap::new(),
        ordered: Vec::new(),
        matches: 0,
    });
    let stop = AtomicBool::new(false);
    let mut walk_error: Option<std::io::Error> = None;
    // Files travel in small batches: one channel operation per batch, not per file.
    const BATCH: usize = 16;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(usize, String, PathBuf)>>(64);
    let rx = Mutex::new(rx);
    // Searching many small files is mostly system calls: twice as many workers
    // as cores keeps the cores busy while some workers wait in the kernel.
    let workers = std::thread::available_parallelism()
        .map(|n| n.get() * 2)
        .unwrap_or(4)
        .clamp(2, 16);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let mut searcher = searcher();
                loop {
                    let job = match rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok(batch) = job else {
                        return;
                    };
                    for (index, display, path) in batch {
                        if stop.load(Ordering::SeqCst) || cancel.is_cancelled() {
                            break;
                        }
                        let found =
                            search_file(files, &mut searcher, matcher, &path, display, limit);
                        let Ok(mut p) = progress.lock() else {
                            return;
                        };
                        p.pending.insert(index, found);
                        while let Some(next) = {
                            let at = p.ordered.len();
                            p.pending.remove(&at)
                        } {
                            p.matches += next.lines.len();
                            p.ordered.push(next);
                            if p.matches >= limit {
                                stop.store(true, Ordering::SeqCst);
                                break;
                            }
                        }
                    }
                }
            });
        }
        // The walk runs on this thread, in path order; the visitor is only
        // ever called from here, so the batch lock is never contended.
        let batch = Mutex::new((0usize, Vec::with_capacity(BATCH)));
        let options = WalkOptions {
            root,
            glob: request.glob.as_deref(),
            ordered: true,
        };
        let walked = files.walk(&options, &|entry: WalkEntry| {
            if stop.load(Ordering::SeqCst) || cancel.is_cancelled() {
                return false;
            }
            if !entry.is_file {
                return true;
            }
            let Ok(mut guard) = batch.lock() else {
                return false;
            };
            let (index, pending) = &mut *guard;
            let display = display_relative(&entry.path, root);
            pending.push((*index, display, entry.path));
            *index += 1;
            // The first batches are small so an early match is found early.
            if pending.len() >= BATCH.min(1 + *index / 8) {
                let full = std::mem::replace(pending, Vec::with_capacity(BATCH));
                return tx.send(full).is_ok();
            }
            true
        });
        if let Ok((_, pending)) = batch.into_inner()
            && !pending.is_empty()
        {
            let _ = tx.send(pending);
        }
        walk_error = walked.err();
        drop(tx);
    });
    if let Some(e) = walk_error {
        return Err(ToolError::new(e.to_string()));
    }
    let progress = progress
        .into_inner()
        .map_err(|_| ToolError::new("internal error: grep worker panicked"))?;
    Ok(progress.ordered)
}

/// Keeps one character more than is ever shown, so memory stays bounded on
/// huge lines while `truncate_line` still sees that the line was longer.
fn clip(text: &str) -> String {
    match text.char_indices().nth(GREP_MAX_LINE_LENGTH + 1) {
        Some((cut, _)) => text[..cut].to_string(),
        None => text.to_string(),
    }
}

/// The lines within `context` of any match, read by streaming the file once.
fn context_lines(
    files: &dyn FileOps,
    path: &Path,
    matches: &[(u64, String)],
    context: u64,
) -> Option<HashMap<u64, String>> {
    let file = files.open_read(path).ok()?;
    let wanted = |n: u64| {
        matches
            .iter()
            .any(|(m, _)| n.saturating_add(context) >= *m && n <= m.saturating_add(context))
    };
    let last = matches
        .iter()
        .map(|(m, _)| m.saturating_add(context))
        .max()
        .unwrap_or(0);
    let mut reader = BufReader::new(file);
    let mut texts = HashMap::new();
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        // At most one character (4 bytes) more than is ever shown is kept.
        if !read_capped_line(&mut reader, &mut buf, 4 * (GREP_MAX_LINE_LENGTH + 2)).ok()? {
            break;
        }
        n += 1;
        if n > last {
            break;
        }
        if wanted(n) {
            let text = String::from_utf8_lossy(&buf);
            let text = text.strip_suffix('\n').unwrap_or(&text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            texts.insert(n, clip(text));
        }
    }
    Some(texts)
}

/// Reads one line into `buf`, keeping at most `cap` bytes of it (the rest is
/// consumed, not stored). `false` at end of file.
fn read_capped_line<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<bool> {
    let mut any = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any);
        }
        any = true;
        let (part, used, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..=i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&part[..part.len().min(room)]);
        reader.consume(used);
        if done {
            return Ok(true);
        }
    }
}

/// Adds `notice` to a result's `[...]` notice block (or starts one).
fn append_notice(result: &mut AgentToolResult, notice: &str) {
    if let Some(agent_ai::ContentBlock::Text(t)) = result.content.first_mut() {
        if t.text.ends_with(']') && t.text.contains("\n\n[") {
            t.text.pop();
            t.text.push_str(&format!(". {notice}]"));
        } else {
            t.text.push_str(&format!("\n\n[{notice}]"));
        }
    }
}

impl TypedTool for GrepTool {
    type Params = GrepParams;

    fn name(&self) -> &str {
        "grep"
    }

    fn label(&self) -> &str {
        "Grep"
    }

    fn description(&self) -> &str {
        "Search file contents for a regular expression (or literal text). Returns matching lines as path:line: text, sorted by path. Honours .gitignore. Output stops after 100 matches or 50KB, whichever comes first; lines longer than 500 characters are shortened."
    }

    async fn execute(
        &self,
        params: GrepParams,
        cx: ToolCallContext,
    ) -> Result<AgentToolResult, ToolError> {
        let ctx = &cx;
        let request = GrepRequest {
            root: resolve_to_cwd(params.path.as_deref().unwrap_or("."), &self.cwd),
            pattern: params.pattern,
            glob: params.glob,
            ignore_case: params.ignore_case.unwrap_or(false),
            literal: params.literal.unwrap_or(false),
            context: params.context.unwrap_or(0).max(0) as usize,
            limit: params.limit.unwrap_or(DEFAULT_GREP_LIMIT as i64).max(1) as usize,
        };
        let files = self.files.clone();
        let cancel = ctx.cancel.clone();
        blocking(&ctx.cancel, move || {
            run_grep(files.as_ref(), &request, &cancel)
        })
        .await
    }
}

impl GrepTool {
    /// The tool with its prompt snippet, guidelines, renderers and
    /// declarations, as a session registers it.
    pub fn definition(self) -> ToolDefinition {
        ToolDefinition::typed(self)
            .with_active_by_default(false)
            .with_prompt_snippet("Search file contents by pattern (honours .gitignore)")
            .with_render_call(render_call)
            .with_render_result(render_result)
            .with_path_argument(PathArgument::read("path"))
            .with_hints(ToolHints::read_only())
    }
}

fn render_call(args: &Value, theme: &Theme, _ctx: &RenderContext) -> Option<StyledText> {
    let pattern = args["pattern"].as_str().unwrap_or("?");
    let mut rest = format!("/{pattern}/");
    if let Some(p) = args["path"].as_str() {
        rest.push_str(&format!(" in {p}"));
    }
    if let Some(g) = args["glob"].as_str() {
        rest.push_str(&format!(" ({g})"));
    }
    Some(header("grep", &rest, theme))
}

fn render_result(
    result: &AgentToolResult,
    options: &RenderResultOptions,
    theme: &Theme,
    _ctx: &RenderContext,
) -> Option<StyledText> {
    Some(listing_view(result, options, theme))
}
