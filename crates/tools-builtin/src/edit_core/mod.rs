//! The edit engine: exact-then-fuzzy matching against the original text,
//! replacement of only the matched spans, and the diffs shown afterwards.
//!
//! Matching happens in two views of the file: LF-normalised (exact matching)
//! and fuzzy-normalised (NFKC, trailing whitespace dropped, smart quotes,
//! dashes and odd spaces folded). Both views keep the file's line structure, so
//! a match in either view maps back to a byte span of the original text, and
//! only that span is replaced: the rest of a touched line and every untouched
//! line keep their bytes and line endings.

use std::ops::Range;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::canonical_combining_class;

/// One replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// Text to find (must be unique).
    pub old_text: String,
    /// Text to put in its place.
    pub new_text: String,
}

/// The result of applying edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The new content.
    pub content: String,
}

/// Folds one character the way fuzzy matching does (after NFKC).
fn fold_char(c: char) -> char {
    match c {
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// A line in fuzzy form plus `(fuzzy offset, original offset)` pairs at every
/// segment boundary (a segment is a starter with its combining marks).
struct FuzzyLine {
    text: String,
    bounds: Vec<(usize, usize)>,
}

fn fuzzy_line(line: &str) -> FuzzyLine {
    let mut text = String::with_capacity(line.len());
    let mut bounds = vec![(0, 0)];
    let mut seg_start = 0;
    let mut chars = line.char_indices().peekable();
    while let Some((i, _)) = chars.next() {
        // Extend the segment over following combining marks.
        let mut end = line.len();
        while let Some(&(j, c)) = chars.peek() {
            if canonical_combining_class(c) == 0 {
                end = j;
                break;
            }
            chars.next();
        }
        let _ = i;
        let segment = &line[seg_start..end];
        if segment.is_ascii() {
            text.push_str(segment);
        } else {
            text.extend(segment.nfkc().map(fold_char));
        }
        bounds.push((text.len(), end));
        seg_start = end;
    }
    let stripped = text.trim_end().len();
    if stripped < text.len() {
        text.truncate(stripped);
        for b in bounds.iter_mut() {
            b.0 = b.0.min(stripped);
        }
    }
    FuzzyLine { text, bounds }
}

impl FuzzyLine {
    /// Original offset of a fuzzy offset that falls on a segment boundary;
    /// `None` inside a combining sequence or a compatibility expansion (the
    /// `fi` of U+FB01), where no original span corresponds. Several segments
    /// can end at one fuzzy offset (trailing whitespace); a start takes the
    /// last of them, an end the first.
    fn to_original(&self, fuzzy: usize, start: bool) -> Option<usize> {
        let mut at = self.bounds.iter().filter(|b| b.0 == fuzzy).map(|b| b.1);
        if start { at.next_back() } else { at.next() }
    }
}

/// Whether `offset` of `text` is not inside a combining sequence: the
/// character there (if any) is not a combining mark.
fn on_segment_boundary(text: &str, offset: usize) -> bool {
    text[offset..]
        .chars()
        .next()
        .is_none_or(|c| canonical_combining_class(c) == 0)
}

/// Whether fuzzy normalisation would leave `text` unchanged: plain ASCII with
/// no trailing spaces or tabs on any line. Checking is much cheaper than
/// normalising a large file.
fn fuzzy_is_identity(text: &str) -> bool {
    let bytes = text.as_bytes();
    text.is_ascii()
        && !bytes.last().is_some_and(|b| *b == b' ' || *b == b'\t')
        && !memchr::memchr_iter(b'\n', bytes).any(|i| i > 0 && matches!(bytes[i - 1], b' ' | b'\t'))
}

/// Normalises text for fuzzy comparison (line by line, LF joined).
pub fn normalize_for_fuzzy_match(text: &str) -> String {
    text.split('\n')
        .map(|l| fuzzy_line(l).text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `\r\n` and lone `\r` to `\n`.
pub fn normalize_line_endings(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// The file's line ending, from its first line break: `\r\n`, a lone `\r`
/// (classic Mac files) or `\n`.
pub fn detect_line_ending(text: &str) -> &'static str {
    let bytes = text.as_bytes();
    match memchr::memchr2(b'\r', b'\n', bytes) {
        Some(i) if bytes[i] == b'\r' => {
            if bytes.get(i + 1) == Some(&b'\n') {
                "\r\n"
            } else {
                "\r"
            }
        }
        _ => "\n",
    }
}

/// The original text's lines: content range and where the next line starts.
struct Lines {
    /// `(content start, content end)` per line in the original text.
    original: Vec<(usize, usize)>,
}

impl Lines {
    fn new(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut original = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => {
                    original.push((start, i));
                    start = i + 1;
                }
                b'\r' => {
                    original.push((start, i));
                    if bytes.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        original.push((start, bytes.len()));
        Lines { original }
    }
}

/// Line index and column of `offset` in a text whose lines start at `starts`.
fn locate(starts: &[usize], offset: usize) -> (usize, usize) {
    let line = match starts.binary_search(&offset) {
        Ok(i) => i,
        Err(i) => i - 1,
    };
    (line, offset - starts[line])
}

fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
        .collect()
}

/// Why edits were not applied; the text is Pi's, for the model. `index`
/// is the edit's place in the list, `None` for a single edit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// An edit's `oldText` is empty.
    EmptyOldText {
        /// Which edit.
        index: Option<usize>,
        /// The file, as named in messages.
        path: String,
    },
    /// An edit's `oldText` is not in the file.
    NotFound {
        /// Which edit.
        index: Option<usize>,
        /// The file, as named in messages.
        path: String,
        /// The closest match or the file's start, when there is one.
        context: Option<String>,
    },
    /// An edit's `oldText` is in the file more than once.
    NotUnique {
        /// Which edit.
        index: Option<usize>,
        /// The file, as named in messages.
        path: String,
        /// How many times.
        occurrences: usize,
    },
    /// Two edits cover overlapping text.
    Overlap {
        /// The earlier edit.
        first: usize,
        /// The later edit.
        second: usize,
        /// The file, as named in messages.
        path: String,
    },
    /// The edits leave the file as it was.
    NoChange {
        /// Whether there were several edits.
        multi: bool,
        /// The file, as named in messages.
        path: String,
    },
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::EmptyOldText {
                index: Some(index),
                path,
            } => write!(f, "edits[{index}].oldText must not be empty in {path}."),
            EditError::EmptyOldText { index: None, path } => {
                write!(f, "oldText must not be empty in {path}.")
            }
            EditError::NotFound {
                index,
                path,
                context,
            } => {
                match index {
                    Some(index) => write!(
                        f,
                        "Could not find edits[{index}] in {path}. The old text must match exactly including all whitespace and newlines."
                    )?,
                    None => write!(
                        f,
                        "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
                    )?,
                }
                match context {
                    Some(context) => write!(f, "\n{context}"),
                    None => Ok(()),
                }
            }
            EditError::NotUnique {
                index: Some(index),
                path,
                occurrences,
            } => write!(
                f,
                "Found {occurrences} occurrences of edits[{index}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
            ),
            EditError::NotUnique {
                index: None,
                path,
                occurrences,
            } => write!(
                f,
                "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
            ),
            EditError::Overlap {
                first,
                second,
                path,
            } => write!(
                f,
                "edits[{first}] and edits[{second}] overlap in {path}. Merge them into one edit or target disjoint regions."
            ),
            EditError::NoChange { multi: true, path } => write!(
                f,
                "No changes made to {path}. The replacements produced identical content."
            ),
            EditError::NoChange { multi: false, path } => write!(
                f,
                "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
            ),
        }
    }
}

/// Applies every edit to `original` (BOM already removed), all matched against
/// the original, replacing only the matched spans. `path` appears in messages.
///
/// # Errors
/// An empty, missing or repeated `oldText`, overlapping edits, or edits
/// that change nothing.
pub fn apply_edits(original: &str, edits: &[Edit], path: &str) -> Result<Applied, EditError> {
    let multi = edits.len() > 1;
    let which = |index: usize| multi.then_some(index);
    let eol = detect_line_ending(original);
    let lines = Lines::new(original);
    let lf: std::borrow::Cow<'_, str> = if original.contains('\r') {
        std::borrow::Cow::Owned(normalize_line_endings(original))
    } else {
        std::borrow::Cow::Borrowed(original)
    };
    let lf_starts = line_starts(&lf);
    // Occurrences are always counted in the fuzzy view (as Pi does), so it is built once up front.
    let fz: std::borrow::Cow<'_, str> = if fuzzy_is_identity(&lf) {
        std::borrow::Cow::Borrowed(&lf)
    } else {
        std::borrow::Cow::Owned(normalize_for_fuzzy_match(&lf))
    };
    let fz_starts = line_starts(&fz);

    let mut spans: Vec<(Range<usize>, usize, String)> = Vec::with_capacity(edits.len());
    for (index, edit) in edits.iter().enumerate() {
        let old = normalize_line_endings(&edit.old_text);
        let new = normalize_line_endings(&edit.new_text);
        if old.is_empty() {
            return Err(EditError::EmptyOldText {
                index: which(index),
                path: path.to_string(),
            });
        }
        let old_fz = normalize_for_fuzzy_match(&old);
        // Uniqueness and the span come from the same view. Exact matches that
        // start or end inside a combining sequence are not matches at all.
        let to_original = |offset: usize| {
            let (line, col) = locate(&lf_starts, offset);
            lines.original[line].0 + col
        };
        let mut exact_count = 0;
        let mut exact_span = None;
        for (at, _) in lf.match_indices(old.as_str()) {
            if on_segment_boundary(&lf, at) && on_segment_boundary(&lf, at + old.len()) {
                exact_count += 1;
                // An end right after a newline maps to the start of the next
                // line, past the original terminator (which may be CRLF).
                exact_span.get_or_insert_with(|| to_original(at)..to_original(at + old.len()));
            }
        }
        // Fuzzy occurrences count too (Pi's rule: text that differs only in
        // quotes or trailing spaces is ambiguous), but only those that map to
        // a whole original span.
        let mut fuzzy_count = 0;
        let mut fuzzy_span = None;
        if !old_fz.is_empty() {
            let line_text = |l: usize| &original[lines.original[l].0..lines.original[l].1];
            for (at, _) in fz.match_indices(old_fz.as_str()) {
                let (sl, sc) = locate(&fz_starts, at);
                let (el, ec) = locate(&fz_starts, at + old_fz.len());
                let start = fuzzy_line(line_text(sl)).to_original(sc, true);
                let end = fuzzy_line(line_text(el)).to_original(ec, false);
                if let (Some(start), Some(end)) = (start, end) {
                    fuzzy_count += 1;
                    let start = lines.original[sl].0 + start;
                    let end = lines.original[el].0 + end;
                    fuzzy_span.get_or_insert(start..end.max(start));
                }
            }
        }
        let span = exact_span.or(fuzzy_span);
        let Some(span) = span else {
            return Err(EditError::NotFound {
                index: which(index),
                path: path.to_string(),
                context: not_found_context(&lf, &old),
            });
        };
        let occurrences = exact_count.max(fuzzy_count);
        if occurrences > 1 {
            return Err(EditError::NotUnique {
                index: which(index),
                path: path.to_string(),
                occurrences,
            });
        }
        let replacement = if eol == "\n" {
            new
        } else {
            new.replace('\n', eol)
        };
        spans.push((span, index, replacement));
    }

    spans.sort_by_key(|(r, _, _)| (r.start, r.end));
    for pair in spans.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.0.end > b.0.start {
            return Err(EditError::Overlap {
                first: a.1,
                second: b.1,
                path: path.to_string(),
            });
        }
    }
    let mut content = String::with_capacity(original.len());
    let mut cursor = 0;
    for (range, _, replacement) in &spans {
        content.push_str(&original[cursor..range.start]);
        content.push_str(replacement);
        cursor = range.end;
    }
    content.push_str(&original[cursor..]);
    if content == original {
        return Err(EditError::NoChange {
            multi,
            path: path.to_string(),
        });
    }
    Ok(Applied { content })
}

/// The "closest match" / "file starts with" block of a not-found error.
fn not_found_context(content: &str, old: &str) -> Option<String> {
    if content.is_empty() || old.is_empty() {
        return None;
    }
    let first = old.split('\n').next().unwrap_or("").trim();
    if first.is_empty() {
        return Some("File is empty.".to_string());
    }
    let lines: Vec<&str> = content.split('\n').collect();
    let old_line_count = old.split('\n').count();
    let numbered = |range: Range<usize>| {
        range
            .map(|i| format!("  {}: {}", i + 1, lines[i]))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let chars: Vec<char> = first.chars().collect();
    let mut len = chars.len().min(60);
    while len >= 10 {
        let prefix: String = chars[..len].iter().collect();
        let prefix = prefix.trim();
        if let Some(k) = lines.iter().position(|l| l.contains(prefix)) {
            let from = k.saturating_sub(2);
            let to = (k + old_line_count + 2).min(lines.len() - 1);
            return Some(format!(
                "Closest match is around line {}:\n{}",
                k + 1,
                numbered(from..to + 1)
            ));
        }
        len -= 10;
    }
    Some(format!(
        "File starts with:\n{}",
        numbered(0..lines.len().min(5))
    ))
}

/// The numbered display diff, the unified patch and the first changed line
/// (1-based, in the new text) of two LF texts.
pub fn diff_outputs(old: &str, new: &str, path: &str) -> (String, String, usize) {
    use similar::TextDiff;
    let diff = TextDiff::configure()
        .timeout(std::time::Duration::from_secs(5))
        .diff_lines(old, new);
    let width = old
        .split('\n')
        .count()
        .max(new.split('\n').count())
        .to_string()
        .len();
    const CONTEXT: usize = 4;

    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let strip = |l: &str| l.strip_suffix('\n').unwrap_or(l).to_string();
    let ctx = |n: usize| format!(" {:>width$} {}", n + 1, strip(old_lines[n]));
    let elided = format!(" {} ...", " ".repeat(width));
    let ops = diff.ops();
    let mut out: Vec<String> = Vec::new();
    let mut first_changed = None;
    let count = ops.len();
    for (i, op) in ops.iter().enumerate() {
        match *op {
            similar::DiffOp::Equal { old_index, len, .. } => {
                // Only the lines next to a change are shown: never materialise the rest.
                let before_change = i + 1 < count;
                let after_change = i > 0;
                let range = old_index..old_index + len;
                match (after_change, before_change) {
                    (false, true) => {
                        if len > CONTEXT {
                            out.push(elided.clone());
                        }
                        out.extend(
                            (range.end.saturating_sub(CONTEXT).max(range.start)..range.end)
                                .map(ctx),
                        );
                    }
                    (true, false) => {
                        out.extend((range.start..(range.start + CONTEXT).min(range.end)).map(ctx));
                        if len > CONTEXT {
                            out.push(elided.clone());
                        }
                    }
                    (true, true) => {
                        if len <= 2 * CONTEXT {
                            out.extend(range.map(ctx));
                        } else {
                            out.extend((range.start..range.start + CONTEXT).map(ctx));
                            out.push(elided.clone());
                            out.extend((range.end - CONTEXT..range.end).map(ctx));
                        }
                    }
                    (false, false) => {}
                }
            }
            other => {
                let (old_range, new_range) = (other.old_range(), other.new_range());
                first_changed.get_or_insert(new_range.start + 1);
                for n in old_range {
                    out.push(format!("-{:>width$} {}", n + 1, strip(old_lines[n])));
                }
                for n in new_range {
                    out.push(format!("+{:>width$} {}", n + 1, strip(new_lines[n])));
                }
            }
        }
    }
    let patch = diff
        .unified_diff()
        .context_radius(CONTEXT)
        .header(path, path)
        .to_string();
    (out.join("\n"), patch, first_changed.unwrap_or(1))
}

#[cfg(test)]
mod tests;
