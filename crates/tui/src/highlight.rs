//! Syntax highlighting of fenced code blocks with `syntect`.
//!
//! syntect parses the code with its bundled Sublime grammars (the syntax
//! dump, loaded once, on the first fenced block that names a language);
//! the colours are not a Sublime theme's but the UI theme's roles
//! ([`SyntaxStyles`]): comments, keywords, strings, numbers, functions and
//! types. Built on the 16 ANSI colours, they follow the terminal's own
//! palette (dark or light) and vanish with `NO_COLOR` ([`SyntaxStyles::plain`]),
//! in which case nothing is parsed at all.
//!
//! An unknown language, a block over [`MAX_CODE_BYTES`] or with a line over
//! [`MAX_LINE_BYTES`], or a grammar that fails, gives the plain code style.
//! A streaming block is highlighted again at each change, but resumes from
//! the parser state after its last complete line ([`SyntaxHighlighter`]).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::{Mutex, OnceLock};

use agent_tool::{Span, StyledLine};
use anstyle::{AnsiColor, Color as AnsiStyleColor, Style};
use syntect::highlighting::{
    Color, HighlightIterator, HighlightState, Highlighter, ScopeSelectors, StyleModifier, Theme,
    ThemeItem, ThemeSettings,
};
use syntect::parsing::{ParseState, ScopeStack, SyntaxSet};

use crate::markdown::CodeHighlighter;
use crate::theme::UiTheme;

/// Blocks larger than this are drawn plain (highlighting is linear, but a
/// pasted log is not worth the wait).
pub const MAX_CODE_BYTES: usize = 256 * 1024;
/// A block with a line longer than this is drawn plain: backtracking
/// grammars can be slow on one huge line (minified code).
pub const MAX_LINE_BYTES: usize = 8 * 1024;

/// Code of finished blocks kept highlighted (bytes of source): beyond
/// it the cache starts over.
pub const MAX_CACHED_BYTES: usize = 4 * 1024 * 1024;

/// The styles of highlighted code, one per role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SyntaxStyles {
    /// Text no role claims.
    pub plain: Style,
    /// Comments.
    pub comment: Style,
    /// Keywords and storage modifiers (`fn`, `let`, `pub`).
    pub keyword: Style,
    /// String and character literals.
    pub string: Style,
    /// Numbers and language constants (`true`, `None`).
    pub number: Style,
    /// Function names at definitions and calls.
    pub function: Style,
    /// Type, class and struct names.
    pub type_name: Style,
}

impl Default for SyntaxStyles {
    fn default() -> Self {
        let fg = |c: AnsiColor| Style::new().fg_color(Some(AnsiStyleColor::Ansi(c)));
        SyntaxStyles {
            plain: Style::new(),
            comment: Style::new().dimmed().italic(),
            keyword: fg(AnsiColor::Magenta),
            string: fg(AnsiColor::Green),
            number: fg(AnsiColor::Cyan),
            function: fg(AnsiColor::Blue),
            type_name: fg(AnsiColor::Yellow),
        }
    }
}

impl SyntaxStyles {
    /// No styles (`NO_COLOR`): code is not parsed.
    pub fn plain() -> Self {
        let s = Style::new();
        SyntaxStyles {
            plain: s,
            comment: s,
            keyword: s,
            string: s,
            number: s,
            function: s,
            type_name: s,
        }
    }

    /// Whether any role has a style (else highlighting is skipped).
    pub fn is_colored(&self) -> bool {
        *self != Self::plain()
    }

    fn role(&self, index: u8) -> Style {
        match index {
            1 => self.comment,
            2 => self.keyword,
            3 => self.string,
            4 => self.number,
            5 => self.function,
            6 => self.type_name,
            _ => self.plain,
        }
    }
}

/// The scope selectors of each role, by role index (see
/// [`SyntaxStyles::role`]); later rules win over earlier ones of the same
/// specificity, as in a Sublime theme.
const ROLE_SELECTORS: [(u8, &str); 7] = [
    (2, "keyword, storage, entity.name.tag"),
    // Operators and punctuation stay plain: colouring every `=` is noise.
    (0, "keyword.operator, punctuation"),
    (
        6,
        "entity.name.type, entity.name.class, entity.name.struct, entity.name.enum, entity.name.trait, support.type, support.class, entity.other.inherited-class",
    ),
    (
        5,
        "entity.name.function, support.function, variable.function, meta.function-call entity.name, entity.other.attribute-name",
    ),
    (
        4,
        "constant.numeric, constant.language, constant.character, constant.other",
    ),
    (3, "string, string punctuation.definition.string"),
    (1, "comment, comment punctuation.definition.comment"),
];

/// The loaded grammars and the role theme, shared by every highlighter.
struct Assets {
    syntaxes: SyntaxSet,
    theme: Theme,
}

fn assets() -> &'static Assets {
    static ASSETS: OnceLock<Assets> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let started = std::time::Instant::now();
        let syntaxes = SyntaxSet::load_defaults_newlines();
        tracing::debug!(elapsed = ?started.elapsed(), "loaded the syntax definitions");
        Assets {
            syntaxes,
            theme: role_theme(),
        }
    })
}

/// A syntect theme whose "colours" are role indices in the red channel:
/// syntect does the scope matching, [`SyntaxStyles`] the colouring.
fn role_theme() -> Theme {
    let role = |i: u8| Color {
        r: i,
        g: 0,
        b: 0,
        a: 0xff,
    };
    let scopes = ROLE_SELECTORS
        .iter()
        .filter_map(|(i, selectors)| match ScopeSelectors::from_str(selectors) {
            Ok(scope) => Some(ThemeItem {
                scope,
                style: StyleModifier {
                    foreground: Some(role(*i)),
                    ..StyleModifier::default()
                },
            }),
            Err(e) => {
                tracing::warn!(error = %e, selectors, "a built-in scope selector does not parse");
                None
            }
        })
        .collect();
    Theme {
        settings: ThemeSettings {
            foreground: Some(role(0)),
            ..ThemeSettings::default()
        },
        scopes,
        ..Theme::default()
    }
}

/// Where a streaming block's highlighting left off: its language, the
/// complete lines highlighted so far and the parser state after them.
struct Checkpoint {
    lang: String,
    styles: SyntaxStyles,
    prefix: String,
    lines: Vec<StyledLine>,
    parse: ParseState,
    highlight: HighlightState,
}

/// Highlights with syntect; keeps one checkpoint (the parser state after
/// the last complete line of the last block), so the block that
/// is streaming (there is one at a time) costs its new lines, not all of
/// them, at each change.
#[derive(Default)]
pub struct SyntaxHighlighter {
    checkpoint: Mutex<Option<Checkpoint>>,
    finished: Mutex<BlockCache>,
}

/// Finished blocks by a hash of language, code and styles.
#[derive(Default)]
struct BlockCache {
    blocks: HashMap<u64, Vec<StyledLine>>,
    bytes: usize,
}

/// The shared [`SyntaxHighlighter`] for blocks that will not change (a
/// settled Markdown block, a whole text): each is highlighted once and
/// kept, so drawing the transcript again (a resume, a width change)
/// does not parse its code again.
#[derive(Debug, Default, Clone, Copy)]
pub struct FinishedCode;

impl CodeHighlighter for FinishedCode {
    fn highlight(&self, lang: &str, code: &str, theme: &UiTheme) -> Option<Vec<StyledLine>> {
        let shared = SyntaxHighlighter::shared();
        let key = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (lang, code, theme.syntax).hash(&mut h);
            h.finish()
        };
        let cached = {
            let cache = shared.finished.lock().unwrap_or_else(|p| p.into_inner());
            cache.blocks.get(&key).cloned()
        };
        if cached.is_some() {
            return cached;
        }
        let lines = shared.highlight(lang, code, theme)?;
        let mut cache = shared.finished.lock().unwrap_or_else(|p| p.into_inner());
        if cache.bytes + code.len() > MAX_CACHED_BYTES {
            *cache = BlockCache::default();
        }
        cache.bytes += code.len();
        cache.blocks.insert(key, lines.clone());
        Some(lines)
    }
}

impl std::fmt::Debug for SyntaxHighlighter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyntaxHighlighter").finish_non_exhaustive()
    }
}

impl SyntaxHighlighter {
    /// The highlighter Markdown cells share.
    pub fn shared() -> &'static SyntaxHighlighter {
        static SHARED: OnceLock<SyntaxHighlighter> = OnceLock::new();
        SHARED.get_or_init(SyntaxHighlighter::default)
    }

    /// Whether `lang` (a fence's first word: a name or a file extension,
    /// any case) is a language the grammars know. Loads them.
    pub fn knows(lang: &str) -> bool {
        !lang.is_empty() && assets().syntaxes.find_syntax_by_token(lang).is_some()
    }

    fn run(&self, lang: &str, code: &str, styles: &SyntaxStyles) -> Option<Vec<StyledLine>> {
        let assets = assets();
        let syntax = assets.syntaxes.find_syntax_by_token(lang)?;
        let highlighter = Highlighter::new(&assets.theme);
        let mut slot = self.checkpoint.lock().unwrap_or_else(|p| p.into_inner());
        let resumable = slot.take().filter(|c| {
            c.lang == lang && c.styles == *styles && code.starts_with(c.prefix.as_str())
        });
        let (mut prefix, mut lines, mut parse, mut highlight) = match resumable {
            Some(c) => (c.prefix, c.lines, c.parse, c.highlight),
            None => (
                String::new(),
                Vec::new(),
                ParseState::new(syntax),
                HighlightState::new(&highlighter, ScopeStack::new()),
            ),
        };
        let rest = &code[prefix.len()..];
        for piece in rest.split_inclusive('\n') {
            let line = if piece.ends_with('\n') {
                let line = highlight_line(piece, &mut parse, &mut highlight, &highlighter, styles)?;
                prefix.push_str(piece);
                line
            } else {
                // The unfinished last line is drawn but its state not
                // kept: the next delta may extend it.
                let (mut p, mut h) = (parse.clone(), highlight.clone());
                highlight_line(piece, &mut p, &mut h, &highlighter, styles)?
            };
            lines.push(line);
        }
        let mut out = lines.clone();
        if code.is_empty() || code.ends_with('\n') {
            out.push(StyledLine::new());
        }
        // Keep only the complete lines for the next call.
        let complete_lines = prefix.matches('\n').count();
        lines.truncate(complete_lines);
        *slot = Some(Checkpoint {
            lang: lang.to_string(),
            styles: *styles,
            prefix,
            lines,
            parse,
            highlight,
        });
        Some(out)
    }
}

/// One line (with its newline, if any) through the parser and the role
/// theme; `None` when the grammar fails.
fn highlight_line(
    piece: &str,
    parse: &mut ParseState,
    highlight: &mut HighlightState,
    highlighter: &Highlighter<'_>,
    styles: &SyntaxStyles,
) -> Option<StyledLine> {
    let ops = match parse.parse_line(piece, &assets().syntaxes) {
        Ok(ops) => ops,
        Err(e) => {
            tracing::debug!(error = %e, "highlighting failed; drawing plain code");
            return None;
        }
    };
    let mut line = StyledLine::new();
    for (style, text) in HighlightIterator::new(highlight, &ops, piece, highlighter) {
        let text = text.trim_end_matches('\n');
        if text.is_empty() {
            continue;
        }
        let style = styles.role(style.foreground.r);
        match line.spans.last_mut() {
            Some(last) if last.style == style => last.text.push_str(text),
            _ => line.spans.push(Span {
                text: text.to_string(),
                style,
            }),
        }
    }
    Some(line)
}

impl CodeHighlighter for SyntaxHighlighter {
    fn highlight(&self, lang: &str, code: &str, theme: &UiTheme) -> Option<Vec<StyledLine>> {
        let styles = &theme.syntax;
        if lang.is_empty() || !styles.is_colored() {
            return None;
        }
        if code.len() > MAX_CODE_BYTES || code.split('\n').any(|l| l.len() > MAX_LINE_BYTES) {
            return None;
        }
        // A grammar bug must not take the UI down: plain code instead.
        crate::terminal::catch_renderer_panic(|| self.run(lang, code, styles)).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(lines: &[StyledLine], styles: &SyntaxStyles) -> Vec<Vec<(String, &'static str)>> {
        let name = |s: Style| match s {
            s if s == styles.comment => "comment",
            s if s == styles.keyword => "keyword",
            s if s == styles.string => "string",
            s if s == styles.number => "number",
            s if s == styles.function => "function",
            s if s == styles.type_name => "type",
            _ => "plain",
        };
        lines
            .iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| (s.text.clone(), name(s.style)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn rust_tokens_get_their_roles() {
        let theme = UiTheme::default();
        let h = SyntaxHighlighter::default();
        let code = "// hi\nfn main() { let x = 42; println!(\"s\"); }";
        let lines = h.highlight("rust", code, &theme).expect("rust is known");
        let r = roles(&lines, &theme.syntax);
        assert_eq!(r.len(), 2);
        assert!(
            r[0].iter()
                .any(|(t, k)| t.contains("hi") && *k == "comment"),
            "{r:?}"
        );
        let has = |text: &str, kind: &str| r[1].iter().any(|(t, k)| t.contains(text) && *k == kind);
        assert!(has("fn", "keyword") || has("fn", "type"), "{r:?}");
        assert!(has("main", "function"), "{r:?}");
        assert!(has("42", "number"), "{r:?}");
        assert!(has("\"s\"", "string") || has("s", "string"), "{r:?}");
        let text: Vec<String> = lines.iter().map(StyledLine::to_plain).collect();
        assert_eq!(text.join("\n"), code);
    }

    #[test]
    fn unknown_languages_and_no_color_give_plain_code() {
        let h = SyntaxHighlighter::default();
        assert!(
            h.highlight("no-such-lang", "x", &UiTheme::default())
                .is_none()
        );
        assert!(
            h.highlight("rust", "fn f() {}", &UiTheme::plain())
                .is_none()
        );
        assert!(h.highlight("", "fn f() {}", &UiTheme::default()).is_none());
        let long = "x".repeat(MAX_LINE_BYTES + 1);
        assert!(h.highlight("rust", &long, &UiTheme::default()).is_none());
    }

    #[test]
    fn finished_blocks_are_kept_and_give_the_same_lines() {
        let theme = UiTheme::default();
        let code = "let kept = 1; // once";
        let first = FinishedCode.highlight("rust", code, &theme);
        assert!(first.is_some());
        assert_eq!(FinishedCode.highlight("rust", code, &theme), first);
        assert_eq!(
            SyntaxHighlighter::default().highlight("rust", code, &theme),
            first
        );
        assert!(
            FinishedCode
                .highlight("rust", code, &UiTheme::plain())
                .is_none()
        );
    }

    #[test]
    fn a_growing_block_resumes_and_matches_a_fresh_run() {
        let theme = UiTheme::default();
        let code = "/* a\n b */ fn f() -> u8 {\n    \"x\n y\"; 1\n}\n";
        let streamed = SyntaxHighlighter::default();
        let mut last = None;
        for end in 0..=code.len() {
            if code.is_char_boundary(end) {
                last = streamed.highlight("rs", &code[..end], &theme);
            }
        }
        let fresh = SyntaxHighlighter::default().highlight("rs", code, &theme);
        assert_eq!(last, fresh);
        // A different block does not resume from the last one's state.
        let other = streamed.highlight("rs", "let s = 1;", &theme);
        let other_fresh = SyntaxHighlighter::default().highlight("rs", "let s = 1;", &theme);
        assert_eq!(other, other_fresh);
    }
}
