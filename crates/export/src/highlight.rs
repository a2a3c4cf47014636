//! Code blocks highlighted into CSS classes with syntect's bundled
//! grammars. Classes, not inline styles: the page's Content-Security-Policy
//! allows only its own hashed style sheet.

use std::sync::OnceLock;

use syntect::highlighting::ThemeSet;
use syntect::html::{ClassStyle, ClassedHTMLGenerator, css_for_theme_with_class_style};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

use crate::escape::push_escaped;

const CLASS_STYLE: ClassStyle = ClassStyle::SpacedPrefixed { prefix: "hl-" };

/// Larger blocks, or blocks with longer lines, are shown plain: the
/// grammars' regexes are not linear on every input, and an export must
/// stay quick on a session an attacker filled.
const MAX_BLOCK_BYTES: usize = 128 * 1024;
const MAX_LINE_BYTES: usize = 4 * 1024;

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
    let syntax = language.and_then(|l| syntaxes().find_syntax_by_token(l));
    let too_big = code.len() > MAX_BLOCK_BYTES || code.lines().any(|l| l.len() > MAX_LINE_BYTES);
    let Some(syntax) = syntax.filter(|_| !too_big) else {
        push_escaped(out, &code);
        return;
    };
    let mut generator = ClassedHTMLGenerator::new_with_class_style(syntax, syntaxes(), CLASS_STYLE);
    for line in LinesWithEndings::from(&code) {
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

    #[test]
    fn the_style_sheet_has_both_schemes() {
        let css = style_sheet();
        assert!(css.contains(".hl-"), "{css}");
        assert!(css.contains("prefers-color-scheme: dark"));
    }
}
