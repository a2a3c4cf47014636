//! Markdown to styled logical lines (`pulldown-cmark`), and the streaming
//! form that re-parses only the open block.
//!
//! Lines are *logical*: a paragraph is one line however long, for the
//! terminal to wrap (copying from scrollback gives clean text). Top-level
//! blocks are parsed and drawn one at a time, separated by a blank line;
//! while an answer streams, every block but the last is settled (a later
//! block has begun), drawn once and kept.

use std::ops::Range;

use agent_tool::{Span, StyledLine};
use anstyle::Style;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::highlight::{FinishedCode, SyntaxHighlighter};
use crate::theme::UiTheme;

/// Colours code blocks: [`SyntaxHighlighter`] by default, [`PlainCode`]
/// for none. Span texts may hold anything the code held; the renderer
/// sanitizes them.
pub trait CodeHighlighter: Send + Sync {
    /// The lines of `code` (language `lang`, the fence's first word,
    /// possibly empty) styled with `theme`'s roles, one per line of
    /// `code`, or `None` for the plain code style.
    fn highlight(&self, lang: &str, code: &str, theme: &UiTheme) -> Option<Vec<StyledLine>>;
}

/// No highlighting.
#[derive(Debug, Default, Clone, Copy)]
pub struct PlainCode;

impl CodeHighlighter for PlainCode {
    fn highlight(&self, _lang: &str, _code: &str, _theme: &UiTheme) -> Option<Vec<StyledLine>> {
        None
    }
}

fn options() -> Options {
    Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS
}

/// The byte ranges of the top-level blocks of `src`, in order, each from
/// the start of its first line (an indented code block's indentation is
/// part of it).
pub fn top_level_blocks(src: &str) -> Vec<Range<usize>> {
    let line_start = |at: usize| src[..at].rfind('\n').map_or(0, |i| i + 1);
    let mut blocks = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (event, range) in Parser::new_ext(src, options()).into_offset_iter() {
        match event {
            Event::Start(_) => {
                if depth == 0 {
                    start = line_start(range.start);
                }
                depth += 1;
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    blocks.push(start..range.end.max(start));
                }
            }
            _ if depth == 0 => blocks.push(line_start(range.start)..range.end),
            _ => {}
        }
    }
    blocks
}

/// Draws a whole Markdown text: each top-level block, a blank line between;
/// code blocks highlighted ([`SyntaxHighlighter`], each block once:
/// [`FinishedCode`]).
///
/// ```
/// use agent_tui::{markdown::render, UiTheme};
/// let lines = render("# Title\n\nSome *text*.", &UiTheme::plain());
/// let text: Vec<String> = lines.iter().map(|l| l.to_plain()).collect();
/// assert_eq!(text, ["# Title", "", "Some text."]);
/// ```
pub fn render(src: &str, theme: &UiTheme) -> Vec<StyledLine> {
    let mut out = Vec::new();
    for range in top_level_blocks(src) {
        join_block(&mut out, render_block(&src[range], theme, &FinishedCode));
    }
    out
}

fn join_block(out: &mut Vec<StyledLine>, block: Vec<StyledLine>) {
    if block.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push(StyledLine::new());
    }
    out.extend(block);
}

/// One block's lines (the block parsed on its own).
pub fn render_block(src: &str, theme: &UiTheme, code: &dyn CodeHighlighter) -> Vec<StyledLine> {
    let mut r = BlockRenderer {
        theme,
        code,
        lines: Vec::new(),
        line: StyledLine::new(),
        styles: Vec::new(),
        prefixes: Vec::new(),
        lists: Vec::new(),
        code_block: None,
        link: None,
        at_line_start: true,
    };
    for event in Parser::new_ext(src, options()) {
        r.event(event);
    }
    r.flush_line();
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

struct BlockRenderer<'a> {
    theme: &'a UiTheme,
    code: &'a dyn CodeHighlighter,
    lines: Vec<StyledLine>,
    line: StyledLine,
    /// Inline styles in force, innermost last.
    styles: Vec<Style>,
    /// Line prefixes (quotes, list indents), outermost first.
    prefixes: Vec<(String, Style)>,
    /// Open lists: the next number, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// An open code block: language and text so far.
    code_block: Option<(String, String)>,
    /// An open link's target.
    link: Option<String>,
    at_line_start: bool,
}

impl BlockRenderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, add: impl Fn(Style) -> Style) {
        let next = add(self.style());
        self.styles.push(next);
    }

    fn text(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        if self.at_line_start {
            self.at_line_start = false;
            let prefixes = self.prefixes.clone();
            for (p, s) in prefixes {
                self.raw(&p, s);
            }
        }
        self.raw(&crate::text::clean(text), style);
    }

    fn raw(&mut self, text: &str, style: Style) {
        match self.line.spans.last_mut() {
            Some(last) if last.style == style => last.text.push_str(text),
            _ => self.line.spans.push(Span {
                text: text.to_string(),
                style,
            }),
        }
    }

    fn flush_line(&mut self) {
        if !self.line.spans.is_empty() {
            self.lines.push(std::mem::take(&mut self.line));
        }
        self.at_line_start = true;
    }

    fn blank(&mut self) {
        self.flush_line();
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(StyledLine::new());
        }
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some((_, buf)) = &mut self.code_block {
            match event {
                Event::Text(t) => buf.push_str(&t),
                Event::End(TagEnd::CodeBlock) => self.end_code_block(),
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                let s = self.style();
                self.text(&t, s);
            }
            Event::Code(t) => {
                let s = self.theme.code;
                self.text(&t, s);
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                let s = self.theme.code;
                self.text(&t, s);
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                let s = self.style();
                self.text(t.trim_end_matches('\n'), s);
                if t.ends_with('\n') {
                    self.flush_line();
                }
            }
            Event::SoftBreak => {
                let s = self.style();
                self.text(" ", s);
            }
            Event::HardBreak => self.flush_line(),
            Event::Rule => {
                self.flush_line();
                let s = self.theme.dim;
                self.text("---", s);
                self.flush_line();
            }
            Event::TaskListMarker(done) => {
                let s = self.theme.dim;
                self.text(if done { "[x] " } else { "[ ] " }, s);
            }
            Event::FootnoteReference(t) => {
                let s = self.theme.dim;
                self.text(&format!("[^{t}]"), s);
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.flush_line();
                let n = match level {
                    HeadingLevel::H1 => 1,
                    HeadingLevel::H2 => 2,
                    HeadingLevel::H3 => 3,
                    HeadingLevel::H4 => 4,
                    HeadingLevel::H5 => 5,
                    HeadingLevel::H6 => 6,
                };
                let h = self.theme.heading;
                self.styles.push(h);
                self.text(&format!("{} ", "#".repeat(n)), h);
            }
            Tag::BlockQuote(_) => {
                self.flush_line();
                self.prefixes.push(("> ".into(), self.theme.quote));
                let q = self.theme.quote;
                self.styles.push(q);
            }
            Tag::CodeBlock(kind) => {
                self.flush_line();
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => l.split_whitespace().next().unwrap_or("").into(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code_block = Some((lang, String::new()));
            }
            Tag::List(first) => {
                self.flush_line();
                self.lists.push(first);
            }
            Tag::Item => {
                self.flush_line();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "- ".to_string(),
                };
                let s = self.theme.dim;
                self.text(&marker, s);
                // Continuation lines (and nested lists) line up under its text.
                let width = crate::text::str_width(&marker);
                self.prefixes.push((" ".repeat(width), Style::new()));
            }
            Tag::Emphasis => self.push_style(|s| s.italic()),
            Tag::Strong => self.push_style(|s| s.bold()),
            Tag::Strikethrough => self.push_style(|s| s.strikethrough()),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                let l = self.theme.link;
                self.styles.push(l);
            }
            Tag::Image { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                let l = self.theme.link;
                self.styles.push(l);
                self.text("[image: ", l);
            }
            Tag::Table(_) | Tag::TableHead | Tag::TableRow => self.flush_line(),
            Tag::TableCell => {
                let s = self.theme.dim;
                if self.line.spans.is_empty() {
                    self.text("| ", s);
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush_line();
                // Paragraphs inside items and quotes stay together.
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush_line();
            }
            TagEnd::BlockQuote(_) => {
                self.flush_line();
                self.prefixes.pop();
                self.styles.pop();
            }
            TagEnd::List(_) => {
                self.flush_line();
                self.lists.pop();
            }
            TagEnd::Item => {
                self.flush_line();
                self.prefixes.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                self.styles.pop();
                let image = matches!(tag, TagEnd::Image);
                if let Some(url) = self.link.take() {
                    let shown: String = self.line.to_plain();
                    if image {
                        let l = self.theme.link;
                        self.text("]", l);
                    }
                    if !url.is_empty() && !shown.ends_with(url.as_str()) {
                        let d = self.theme.dim;
                        self.text(&format!(" ({url})"), d);
                    }
                }
            }
            TagEnd::TableCell => {
                let s = self.theme.dim;
                self.text(" | ", s);
            }
            TagEnd::TableHead | TagEnd::TableRow => self.flush_line(),
            _ => {}
        }
    }

    fn end_code_block(&mut self) {
        let Some((lang, code)) = self.code_block.take() else {
            return;
        };
        let dim = self.theme.dim;
        self.text(&format!("```{lang}"), dim);
        self.flush_line();
        let body = code.strip_suffix('\n').unwrap_or(&code);
        let highlighted = self.code.highlight(&lang, body, self.theme);
        match highlighted {
            Some(lines) => {
                for line in lines {
                    for span in line.spans {
                        self.text(&span.text, span.style);
                    }
                    self.line_or_empty();
                }
            }
            None => {
                let style = self.theme.code;
                for line in body.split('\n') {
                    self.text(line, style);
                    self.line_or_empty();
                }
            }
        }
        self.text("```", dim);
        self.flush_line();
    }

    /// Ends a code line, keeping it even when empty.
    fn line_or_empty(&mut self) {
        if self.line.spans.is_empty() {
            let prefixes = self.prefixes.clone();
            for (p, s) in prefixes {
                self.raw(&p, s);
            }
            self.lines.push(std::mem::take(&mut self.line));
            self.at_line_start = true;
        } else {
            self.flush_line();
        }
    }
}

/// Whether `before` ends with a blank line (spaces allowed on it).
fn blank_line_before(before: &str) -> bool {
    let spaces = |c: char| c == ' ' || c == '\t';
    before
        .trim_end_matches(spaces)
        .strip_suffix('\n')
        .is_some_and(|b| b.trim_end_matches(spaces).ends_with('\n'))
}

/// A Markdown text that grows: settled blocks are drawn once, the open
/// (last) block again at each change. `render` of the same text gives the
/// same lines ([`MarkdownStream::lines`]).
#[derive(Debug, Default, Clone)]
pub struct MarkdownStream {
    src: String,
    /// Where the open block starts in `src`.
    settled_end: usize,
    settled: Vec<StyledLine>,
    open: Vec<StyledLine>,
    /// Blocks drawn since the stream began (counts work, for tests).
    parsed_blocks: usize,
    /// Times it started over (a text that does not extend the old one, a
    /// new theme): lines kept from before such a time are stale.
    restarts: u64,
    /// The theme the lines were drawn with (styles are set while parsing);
    /// boxed, since a theme is large and every answer holds one.
    theme: Option<Box<UiTheme>>,
    /// The text is held but not parsed yet ([`MarkdownStream::deferred`]).
    deferred: bool,
}

impl MarkdownStream {
    /// An empty stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// A stream holding `text`, parsed only at its first
    /// [`MarkdownStream::restyle`] (or change): what a resumed session's
    /// answers are, so one that is never shown (fullscreen draws only what
    /// is on the screen) is never parsed. Until then it has no lines;
    /// cells call `restyle` before drawing.
    pub fn deferred(text: &str) -> Self {
        MarkdownStream {
            src: text.to_string(),
            deferred: true,
            ..Self::default()
        }
    }

    /// The text so far.
    pub fn source(&self) -> &str {
        &self.src
    }

    /// Replaces the text. When it extends the old one only the open block
    /// (and any blocks it settled) is parsed; otherwise everything is.
    pub fn set(&mut self, text: &str, theme: &UiTheme) {
        if text == self.src {
            return;
        }
        if !text.starts_with(&self.src) {
            let restarts = self.restarts + 1;
            *self = MarkdownStream::new();
            self.restarts = restarts;
        }
        self.src.clear();
        self.src.push_str(text);
        self.reparse(theme);
    }

    /// Appends a delta.
    pub fn push(&mut self, delta: &str, theme: &UiTheme) {
        if delta.is_empty() {
            return;
        }
        self.src.push_str(delta);
        self.reparse(theme);
    }

    /// Draws the text again with `theme` when it was drawn with another;
    /// whether it did. (A theme chosen live reaches each answer when it is
    /// next drawn, so answers no one draws again cost nothing.)
    pub fn restyle(&mut self, theme: &UiTheme) -> bool {
        if self.deferred {
            // Nothing was parsed: the whole text is the open part.
            self.reparse(theme);
            return true;
        }
        if self.theme.as_deref().is_none_or(|t| t == theme) {
            return false;
        }
        let src = std::mem::take(&mut self.src);
        let (parsed, restarts) = (self.parsed_blocks, self.restarts + 1);
        *self = MarkdownStream::new();
        self.parsed_blocks = parsed;
        self.restarts = restarts;
        self.set(&src, theme);
        true
    }

    fn reparse(&mut self, theme: &UiTheme) {
        self.deferred = false;
        if self.theme.as_deref() != Some(theme) {
            self.theme = Some(Box::new(*theme));
        }
        let tail = &self.src[self.settled_end..];
        let blocks = top_level_blocks(tail);
        let base = self.settled_end;
        // A block is settled once the next one began after a blank line
        // and its first line is complete: before that, what looks like a
        // new block can still join it (`1. a` then `2` then `2. b`, a table
        // row after a table).
        let mut settled = 0;
        while settled + 1 < blocks.len() {
            let next = blocks[settled + 1].start;
            if !(blank_line_before(&tail[..next]) && tail[next..].contains('\n')) {
                break;
            }
            settled += 1;
        }
        for range in &blocks[..settled] {
            let lines = render_block(&tail[range.clone()], theme, &FinishedCode);
            self.parsed_blocks += 1;
            join_block(&mut self.settled, lines);
        }
        self.open.clear();
        for range in &blocks[settled..] {
            let lines = render_block(&tail[range.clone()], theme, SyntaxHighlighter::shared());
            self.parsed_blocks += 1;
            join_block(&mut self.open, lines);
        }
        if let Some(first_open) = blocks.get(settled) {
            self.settled_end = base + first_open.start;
        }
    }

    /// Drops the drawn lines and keeps the text, as if made by
    /// [`MarkdownStream::deferred`]: drawn again (the same lines) when next
    /// restyled.
    pub fn forget_lines(&mut self) {
        let (src, parsed, restarts) = (
            std::mem::take(&mut self.src),
            self.parsed_blocks,
            self.restarts,
        );
        *self = MarkdownStream::deferred("");
        self.src = src;
        self.parsed_blocks = parsed;
        self.restarts = restarts;
    }

    /// Lines of the settled blocks: they never change while the text grows.
    pub fn settled_lines(&self) -> &[StyledLine] {
        &self.settled
    }

    /// All lines: the settled blocks, then the open one.
    pub fn lines(&self) -> Vec<StyledLine> {
        self.lines_from(0)
    }

    /// The lines from index `start` on, without copying the ones before
    /// (what a live region shows once the settled part is in history).
    pub fn lines_from(&self, start: usize) -> Vec<StyledLine> {
        let mut out: Vec<StyledLine> = self.settled.get(start..).unwrap_or_default().to_vec();
        if !self.open.is_empty() {
            if !self.settled.is_empty() && start <= self.settled.len() {
                out.push(StyledLine::new());
            }
            let open_start = start.saturating_sub(self.settled.len() + 1);
            out.extend_from_slice(self.open.get(open_start..).unwrap_or_default());
        }
        out
    }

    /// How many block parses the stream did (a measure of its work).
    pub fn parsed_blocks(&self) -> usize {
        self.parsed_blocks
    }

    /// How many times it started over (its text replaced by one that does
    /// not extend it, or drawn again for a new theme): while this stays
    /// the same, [`MarkdownStream::settled_lines`] only grows, so what was
    /// made from them holds.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::plain;

    fn md(src: &str) -> String {
        plain(&render(src, &UiTheme::plain()))
    }

    #[test]
    fn draws_the_common_blocks() {
        assert_eq!(md("# A\n\n## B"), "# A\n\n## B");
        assert_eq!(md("a **b** `c` [d](http://e)"), "a b c d (http://e)");
        assert_eq!(md("- x\n- y\n  1. z"), "- x\n- y\n  1. z");
        assert_eq!(md("```rust\nfn f() {}\n\n```"), "```rust\nfn f() {}\n\n```");
        assert_eq!(md("> quoted\n> more"), "> quoted more");
        assert_eq!(md("one\ntwo\n\nthree"), "one two\n\nthree");
        assert_eq!(md("<http://x>"), "http://x");
    }

    #[test]
    fn lines_from_is_a_suffix_of_lines() {
        let theme = UiTheme::plain();
        let mut s = MarkdownStream::new();
        s.set("one\n\ntwo\n\n- three\n", &theme);
        let all = s.lines();
        assert!(!s.settled_lines().is_empty());
        for start in 0..=all.len() + 1 {
            assert_eq!(s.lines_from(start), all.get(start..).unwrap_or_default());
        }
    }

    #[test]
    fn escapes_in_markdown_stay_inert() {
        let out = md("hi \x1b]52;c;aGk=\x07 there");
        assert!(!out.contains('\x1b'), "{out:?}");
    }

    #[test]
    fn streaming_parses_only_the_open_block() {
        let theme = UiTheme::plain();
        let text = "para one\n\npara two\n\n```\ncode\n```\n\nlast";
        let mut s = MarkdownStream::new();
        for c in text.chars() {
            s.push(&c.to_string(), &theme);
        }
        assert_eq!(plain(&s.lines()), md(text));
        // One parse per delta of the open block plus one per settled block:
        // nothing earlier is drawn again.
        assert!(s.parsed_blocks() <= 2 * text.chars().count() + 4);
        // The fence settled once a blank line and a whole line followed it;
        // "last" may still grow.
        assert_eq!(plain(s.settled_lines()), "para one\n\npara two");
    }
}
