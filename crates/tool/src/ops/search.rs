//! Content search for grep: walk, match and collect context in one
//! operation, so a backend that is far away (a remote machine) runs a whole
//! search as one request instead of one round trip per file.
//!
//! [`search_files`] is the implementation every [`FileOps`] gets by default
//! (it walks with [`FileOps::walk`] and reads with [`FileOps::open_read`], so
//! confining wrappers see every file); a remote backend forwards the
//! [`SearchRequest`] and runs the same function on the other side.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_core::CancellationToken;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, sinks};
use serde::{Deserialize, Serialize};

use super::FileOps;
use super::walk::{WalkEntry, WalkOptions};
use crate::path::display_relative;
use crate::truncate::GREP_MAX_LINE_LENGTH;

/// The longest line grep searches (8 MiB). A searcher holds a whole line in
/// memory; a file with a longer one (a 1 GB minified blob) is reported
/// instead of exhausting memory.
pub const MAX_SEARCHED_LINE: usize = 8 * 1024 * 1024;

/// A fully resolved content search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchRequest {
    /// Directory or file to search.
    pub root: PathBuf,
    /// The pattern.
    pub pattern: String,
    /// Only files matching this glob (see [`WalkOptions::glob`]).
    pub glob: Option<String>,
    /// Case-insensitive.
    pub ignore_case: bool,
    /// The pattern is literal text.
    pub literal: bool,
    /// Lines of context around each match (0: none).
    pub context: usize,
    /// Most matching lines in total (at least 1).
    pub limit: usize,
}

/// The matches of one file, in line order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileMatches {
    /// The path relative to the search root (the file name when the root is
    /// the file).
    pub display: String,
    /// The file's full path.
    pub path: PathBuf,
    /// `(line number, text)` of each matching line; the text is clipped to
    /// one character more than [`GREP_MAX_LINE_LENGTH`], so a caller still
    /// sees that it was longer.
    pub lines: Vec<(u64, String)>,
    /// The file holds a line longer than [`MAX_SEARCHED_LINE`]: its search
    /// stopped there.
    pub line_too_long: bool,
    /// With context requested: the text of every line within the context of
    /// a match (clipped like `lines`); `None` when the file could not be read
    /// again for them.
    pub context: Option<BTreeMap<u64, String>>,
}

/// Searches `request.root` (a directory, walked in path order, or one file)
/// and returns the files with matches (and files whose search stopped at an
/// over-long line) in path order, holding at most `request.limit` matching
/// lines in total. With `request.context`, the context lines of each kept
/// file are read too.
///
/// # Errors
/// `InvalidInput` for a pattern or glob that does not parse ("Invalid
/// pattern: ..."), `NotFound` for a missing root, and walk errors.
pub fn search_files<F: FileOps + ?Sized>(
    files: &F,
    request: &SearchRequest,
    cancel: &CancellationToken,
) -> io::Result<Vec<FileMatches>> {
    let info = files.metadata(&request.root)?;
    let matcher = build_matcher(request)?;
    let limit = request.limit.max(1);
    let found = if info.is_dir {
        search_tree(files, request, &matcher, limit, cancel)?
    } else {
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
    };
    let mut remaining = limit;
    let mut kept = Vec::new();
    for mut fm in found {
        if remaining == 0 {
            break;
        }
        if fm.lines.is_empty() && !fm.line_too_long {
            continue;
        }
        fm.lines.truncate(remaining);
        remaining -= fm.lines.len();
        if request.context > 0 && !fm.lines.is_empty() {
            fm.context = context_lines(files, &fm.path, &fm.lines, request.context as u64);
        }
        kept.push(fm);
    }
    Ok(kept)
}

fn build_matcher(request: &SearchRequest) -> io::Result<RegexMatcher> {
    RegexMatcherBuilder::new()
        .case_insensitive(request.ignore_case)
        .fixed_strings(request.literal)
        .line_terminator(Some(b'\n'))
        .build(&request.pattern)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("Invalid pattern: {e}")))
}

fn searcher() -> Searcher {
    SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .heap_limit(Some(MAX_SEARCHED_LINE))
        .build()
}

fn search_file<F: FileOps + ?Sized>(
    files: &F,
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
        context: None,
    }
}

/// Walks `builder` in path order (directories depth first, names sorted) on
/// this thread while worker threads search the files it finds. Results are
/// kept in walk order; once the files finished in order hold `limit` matches,
/// the walk and the workers stop. Deterministic, and early-stopping.
fn search_tree<F: FileOps + ?Sized>(
    files: &F,
    request: &SearchRequest,
    matcher: &RegexMatcher,
    limit: usize,
    cancel: &CancellationToken,
) -> io::Result<Vec<FileMatches>> {
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
        return Err(e);
    }
    let progress = progress
        .into_inner()
        .map_err(|_| io::Error::other("internal error: a search worker panicked"))?;
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
fn context_lines<F: FileOps + ?Sized>(
    files: &F,
    path: &Path,
    matches: &[(u64, String)],
    context: u64,
) -> Option<BTreeMap<u64, String>> {
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
    let mut texts = BTreeMap::new();
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
