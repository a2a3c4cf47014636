//! Code blocks highlighted into CSS classes with syntect's bundled
//! grammars. Classes, not inline styles: the page's Content-Security-Policy
//! allows only its own hashed style sheet.

use std::cell::RefCell;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use syntect::highlighting::ThemeSet;
use syntect::html::{ClassStyle, ClassedHTMLGenerator, css_for_theme_with_class_style};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

use crate::escape::push_escaped;

const CLASS_STYLE: ClassStyle = ClassStyle::SpacedPrefixed { prefix: "hl-" };

/// Larger blocks, or blocks with longer lines, are shown plain: the
/// grammars' regexes are not linear on every input (a 4 KiB line of
/// `a.b.a.b…` takes seconds in the Python grammar), and an export must
/// stay quick on a session an attacker filled.
const MAX_BLOCK_BYTES: usize = 64 * 1024;
const MAX_LINE_BYTES: usize = 512;
/// What one page may spend on highlighting, in total: bytes, distinct
/// languages (loading a grammar the first time costs up to a second or
/// two), and time. Past any of them, code is shown plain.
const PAGE_BYTES: usize = 512 * 1024;
const PAGE_LANGUAGES: usize = 12;
const PAGE_TIME: Duration = Duration::from_secs(2);

/// The page's highlighting budget (one page is drawn on one thread).
struct Budget {
    bytes: usize,
    languages: Vec<String>,
    started: Instant,
    time: Duration,
}

thread_local! {
    static BUDGET: RefCell<Budget> = RefCell::new(Budget::new());
}

impl Budget {
    fn new() -> Self {
        Budget::with_time(PAGE_TIME)
    }

    fn with_time(time: Duration) -> Self {
        Budget {
            bytes: 0,
            languages: Vec::new(),
            started: Instant::now(),
            time,
        }
    }

    /// Whether `code` in `language` may still be highlighted; counts it.
    fn take(&mut self, language: &str, code: &str) -> bool {
        if self.bytes.saturating_add(code.len()) > PAGE_BYTES || self.out_of_time() {
            return false;
        }
        if !self.languages.iter().any(|l| l == language) {
            if self.languages.len() >= PAGE_LANGUAGES {
                return false;
            }
            self.languages.push(language.to_string());
        }
        self.bytes += code.len();
        true
    }

    fn out_of_time(&self) -> bool {
        self.started.elapsed() > self.time
    }
}

/// Starts a fresh highlighting budget for the page being drawn.
pub(crate) fn start_page() {
    BUDGET.with(|b| *b.borrow_mut() = Budget::new());
}

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// Appends `code` as highlighted HTML (spans inside the caller's
/// `<code>`), or escaped plain text when the language is unknown or the
/// block is too large.
pub(crate) fn push_code(out: &mut String, code: &str, language: Option<&str>) {
    let code: String = code
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect();
    let too_big = code.len() > MAX_BLOCK_BYTES || code.lines().any(|l| l.len() > MAX_LINE_BYTES);
    let allowed = |l: &str| !too_big && BUDGET.with(|b| b.borrow_mut().take(l, &code));
    // The budget is asked before the grammars load: a page with no code
    // in a known language never pays for them.
    let syntax = language
        .filter(|l| allowed(l))
        .and_then(|l| syntaxes().find_syntax_by_token(l));
    let Some(syntax) = syntax else {
        push_escaped(out, &code);
        return;
    };
    let mut generator = ClassedHTMLGenerator::new_with_class_style(syntax, syntaxes(), CLASS_STYLE);
    for line in LinesWithEndings::from(&code) {
        if BUDGET.with(|b| b.borrow().out_of_time()) {
            tracing::debug!("the page's highlighting time is spent; the block is shown plain");
            push_escaped(out, &code);
            return;
        }
        if let Err(e) = generator.parse_html_for_line_which_includes_newline(line) {
            tracing::debug!(error = %e, "highlighting failed; the block is shown plain");
            push_escaped(out, &code);
            return;
        }
    }
    out.push_str(&generator.finalize());
}

/// The style sheet for the highlight classes: a light theme, and a dark
/// one under `prefers-color-scheme: dark`.
pub(crate) fn style_sheet() -> String {
    let themes = ThemeSet::load_defaults();
    let mut css = String::new();
    if let Some(theme) = themes.themes.get("InspiredGitHub")
        && let Ok(light) = css_for_theme_with_class_style(theme, CLASS_STYLE)
    {
        css.push_str(&light);
    }
    if let Some(theme) = themes.themes.get("base16-ocean.dark")
        && let Ok(dark) = css_for_theme_with_class_style(theme, CLASS_STYLE)
    {
        css.push_str("@media (prefers-color-scheme: dark) {\n");
        css.push_str(&dark);
        css.push_str("}\n");
    }
    css
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_get_classes_and_markup_stays_text() {
        let mut out = String::new();
        push_code(
            &mut out,
            "fn main() { let s = \"</code><script>\"; }\n",
            Some("rust"),
        );
        assert!(out.contains("hl-"), "{out}");
        assert!(!out.contains("<script>"), "{out}");
        assert!(
            out.contains("&lt;script&gt;") || out.contains("&lt;/code&gt;"),
            "{out}"
        );
    }

    #[test]
    fn unknown_languages_are_plain_and_escaped() {
        let mut out = String::new();
        push_code(&mut out, "<b>x</b>\u{1b}[31m", Some("no-such-language"));
        assert_eq!(out, "&lt;b&gt;x&lt;/b&gt;[31m");
    }

    /// Bytes and languages, on a page whose time budget cannot run out
    /// (a busy machine must not change what this test sees).
    #[test]
    fn the_page_budget_stops_highlighting() {
        let start_page = || BUDGET.with(|b| *b.borrow_mut() = Budget::with_time(Duration::MAX));
        start_page();
        let block = "let x = 1;\n".repeat(1000);
        let mut highlighted = 0;
        for _ in 0..100 {
            let mut out = String::new();
            push_code(&mut out, &block, Some("rust"));
            if out.contains("hl-") {
                highlighted += 1;
            }
        }
        assert!(highlighted > 0 && highlighted < 100, "{highlighted}");
        start_page();
        let mut out = String::new();
        push_code(&mut out, &"a.b".repeat(1000), Some("python"));
        assert!(!out.contains("hl-"), "a long line is plain");
        for (i, lang) in [
            "rust", "python", "c", "go", "java", "ruby", "perl", "lua", "sql", "css", "php",
            "haskell", "scala", "lisp",
        ]
        .iter()
        .enumerate()
        {
            let mut out = String::new();
            push_code(&mut out, "x\n", Some(lang));
            assert_eq!(
                i >= PAGE_LANGUAGES,
                !BUDGET.with(|b| b.borrow().languages.iter().any(|l| l == lang)),
                "{lang}"
            );
        }
    }

    #[test]
    fn a_page_out_of_time_is_plain() {
        BUDGET.with(|b| *b.borrow_mut() = Budget::with_time(Duration::ZERO));
        let mut out = String::new();
        push_code(&mut out, "let x = 1;\n", Some("rust"));
        assert_eq!(out, "let x = 1;\n");
    }

    #[test]
    fn the_style_sheet_has_both_schemes() {
        let css = style_sheet();
        assert!(css.contains(".hl-"), "{css}");
        assert!(css.contains("prefers-color-scheme: dark"));
    }
}
