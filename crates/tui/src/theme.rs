//! The UI's styles: the tools' [`Theme`] plus the roles of the chrome
//! (user messages, Markdown, thinking, tool tints, footer, selection and
//! search), and how one is chosen: the `theme` setting (a built-in `dark`
//! or `light`, a `light/dark` pair, or a Pi theme file's name), the
//! terminal's background, its colour depth and `NO_COLOR`.

use std::path::PathBuf;

use agent_tool::Theme;
use anstyle::{Ansi256Color, AnsiColor, Color, Style};

use crate::palette::{self, Background, ColorDepth};
use crate::pi_theme::{self, PiTheme};

use crate::highlight::SyntaxStyles;

/// Every style the UI draws with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UiTheme {
    /// What tool renderers draw with.
    pub tools: Theme,
    /// The user's own messages.
    pub user: Style,
    /// Markdown headings.
    pub heading: Style,
    /// Inline code and code blocks.
    pub code: Style,
    /// Link text and targets.
    pub link: Style,
    /// Block quotes.
    pub quote: Style,
    /// Thinking blocks.
    pub thinking: Style,
    /// The marker of a tool call still running.
    pub pending: Style,
    /// The marker of a tool call that succeeded.
    pub ok: Style,
    /// The marker of a failed tool call, and error notices.
    pub error: Style,
    /// Warnings (context use at 70 %).
    pub warning: Style,
    /// Footer and hints.
    pub dim: Style,
    /// The spinner.
    pub spinner: Style,
    /// Text selected with the mouse (fullscreen).
    pub selected: Style,
    /// Search matches (fullscreen).
    pub search_match: Style,
    /// Highlighted code, by role (all plain without colour, which also
    /// turns highlighting off).
    pub syntax: SyntaxStyles,
}

impl Default for UiTheme {
    fn default() -> Self {
        let fg = |c: AnsiColor| Style::new().fg_color(Some(Color::Ansi(c)));
        UiTheme {
            tools: Theme::default(),
            user: Style::new().bold(),
            heading: fg(AnsiColor::Cyan).bold(),
            code: fg(AnsiColor::Yellow),
            link: fg(AnsiColor::Blue).underline(),
            quote: Style::new().italic().dimmed(),
            thinking: Style::new().dimmed().italic(),
            pending: fg(AnsiColor::Yellow),
            ok: fg(AnsiColor::Green),
            error: fg(AnsiColor::Red),
            warning: fg(AnsiColor::Yellow),
            dim: Style::new().dimmed(),
            spinner: fg(AnsiColor::Cyan),
            selected: Style::new().invert(),
            search_match: Style::new()
                .fg_color(Some(Color::Ansi(AnsiColor::Black)))
                .bg_color(Some(Color::Ansi(AnsiColor::Yellow))),
            syntax: SyntaxStyles::default(),
        }
    }
}

impl UiTheme {
    /// No styles at all (`NO_COLOR`, tests).
    pub fn plain() -> Self {
        let s = Style::new();
        UiTheme {
            tools: Theme::plain(),
            user: s,
            heading: s,
            code: s,
            link: s,
            quote: s,
            thinking: s,
            pending: s,
            ok: s,
            error: s,
            warning: s,
            dim: s,
            spinner: s,
            // Still visible without colour.
            selected: s.invert(),
            search_match: s.underline(),
            syntax: SyntaxStyles::plain(),
        }
    }

    /// The built-in theme for a light background: the default's roles
    /// with colours that keep their contrast on white.
    pub fn light() -> Self {
        let fg = |c: Color| Style::new().fg_color(Some(c));
        let dark_yellow = Color::Ansi256(Ansi256Color(130));
        let purple = Color::Ansi256(Ansi256Color(90));
        let d = UiTheme::default();
        UiTheme {
            tools: Theme {
                accent: fg(Color::Ansi(AnsiColor::Blue)),
                warning: fg(dark_yellow),
                ..d.tools
            },
            heading: fg(Color::Ansi(AnsiColor::Blue)).bold(),
            code: fg(purple),
            pending: fg(dark_yellow),
            warning: fg(dark_yellow),
            spinner: fg(Color::Ansi(AnsiColor::Blue)),
            search_match: Style::new()
                .fg_color(Some(Color::Ansi(AnsiColor::Black)))
                .bg_color(Some(Color::Ansi256(Ansi256Color(229)))),
            syntax: SyntaxStyles {
                type_name: fg(dark_yellow),
                ..d.syntax
            },
            ..d
        }
    }

    /// The built-in theme for `background`.
    pub fn for_background(background: Background) -> Self {
        match background {
            Background::Dark => Self::default(),
            Background::Light => Self::light(),
        }
    }

    /// A Pi theme's colours on the roles they name; roles the file lacks
    /// keep `base`'s style.
    pub fn from_pi(theme: &PiTheme, base: UiTheme) -> Self {
        let fg = |role: &str, or: Style| theme.fg(role).unwrap_or(or);
        let bg = |role: &str, or: Style| match theme.bg(role) {
            Some(c) => Style::new().bg_color(Some(c)),
            None => or,
        };
        let tools = Theme {
            tool_title: fg("toolTitle", base.tools.tool_title).bold(),
            accent: fg("accent", base.tools.accent),
            muted: fg("muted", base.tools.muted),
            success: fg("success", base.tools.success),
            error: fg("error", base.tools.error),
            warning: fg("warning", base.tools.warning),
            diff_added: fg("toolDiffAdded", base.tools.diff_added),
            diff_removed: fg("toolDiffRemoved", base.tools.diff_removed),
            diff_context: fg("toolDiffContext", base.tools.diff_context),
        };
        let selected = bg("selectedBg", base.selected);
        let search_bg = theme.bg("searchMatchBg").or_else(|| theme.bg("selectedBg"));
        UiTheme {
            tools,
            user: fg("userMessageText", base.user).bold(),
            heading: fg("mdHeading", base.heading).bold(),
            code: fg("mdCode", base.code),
            link: fg("mdLink", base.link).underline(),
            quote: fg("mdQuote", base.quote).italic(),
            thinking: fg("thinkingText", base.thinking).italic(),
            pending: fg("warning", base.pending),
            ok: fg("success", base.ok),
            error: fg("error", base.error),
            warning: fg("warning", base.warning),
            dim: fg("dim", base.dim),
            spinner: fg("accent", base.spinner),
            selected,
            search_match: match search_bg {
                Some(c) => fg("searchMatchText", Style::new()).bg_color(Some(c)),
                None => base.search_match,
            },
            syntax: SyntaxStyles {
                plain: base.syntax.plain,
                comment: fg("syntaxComment", base.syntax.comment),
                keyword: fg("syntaxKeyword", base.syntax.keyword),
                string: fg("syntaxString", base.syntax.string),
                number: fg("syntaxNumber", base.syntax.number),
                function: fg("syntaxFunction", base.syntax.function),
                type_name: fg("syntaxType", base.syntax.type_name),
            },
        }
    }

    /// Every style passed through `f` (the tools' too).
    pub fn map_styles(self, f: impl Fn(Style) -> Style) -> Self {
        let t = self.tools;
        UiTheme {
            tools: Theme {
                tool_title: f(t.tool_title),
                accent: f(t.accent),
                muted: f(t.muted),
                success: f(t.success),
                error: f(t.error),
                warning: f(t.warning),
                diff_added: f(t.diff_added),
                diff_removed: f(t.diff_removed),
                diff_context: f(t.diff_context),
            },
            user: f(self.user),
            heading: f(self.heading),
            code: f(self.code),
            link: f(self.link),
            quote: f(self.quote),
            thinking: f(self.thinking),
            pending: f(self.pending),
            ok: f(self.ok),
            error: f(self.error),
            warning: f(self.warning),
            dim: f(self.dim),
            spinner: f(self.spinner),
            selected: f(self.selected),
            search_match: f(self.search_match),
            syntax: SyntaxStyles {
                plain: f(self.syntax.plain),
                comment: f(self.syntax.comment),
                keyword: f(self.syntax.keyword),
                string: f(self.syntax.string),
                number: f(self.syntax.number),
                function: f(self.syntax.function),
                type_name: f(self.syntax.type_name),
            },
        }
    }

    /// The theme with every colour mapped to what a terminal of `depth`
    /// shows.
    pub fn with_depth(self, depth: ColorDepth) -> Self {
        self.map_styles(|s| palette::map_style(s, depth))
    }

    /// Chooses the theme for `choice` (see [`ThemeChoice`]); warnings for
    /// theme files that could not be read and for a name not found.
    pub fn choose(choice: &ThemeChoice) -> (Self, Vec<String>) {
        if choice.no_color {
            return (Self::plain(), Vec::new());
        }
        let mut warnings = Vec::new();
        let wanted = match choice.setting.as_deref() {
            // `light/dark`: the first for a light terminal.
            Some(pair) if pair.contains('/') => {
                let (light, dark) = pair.split_once('/').unwrap_or((pair, pair));
                match choice.background {
                    Background::Light => light.trim(),
                    Background::Dark => dark.trim(),
                }
            }
            Some(name) => name.trim(),
            None => "system",
        };
        let base = UiTheme::for_background(choice.background);
        let theme = match wanted {
            "" | "system" => base,
            "dark" => UiTheme::default(),
            "light" => UiTheme::light(),
            name => {
                let (themes, bad) = match &choice.themes_dir {
                    Some(dir) => pi_theme::load_dir(dir),
                    None => (Vec::new(), Vec::new()),
                };
                warnings.extend(bad);
                match themes.iter().find(|t| t.name == name) {
                    Some(t) => {
                        let base = t.appearance.map_or(base, UiTheme::for_background);
                        UiTheme::from_pi(t, base)
                    }
                    None => {
                        warnings.push(format!(
                            "theme {name:?} not found (built-in: dark, light; files in {})",
                            choice
                                .themes_dir
                                .as_ref()
                                .map_or("no themes directory".into(), |d| d.display().to_string())
                        ));
                        base
                    }
                }
            }
        };
        (theme.with_depth(choice.depth), warnings)
    }

    /// Whether the theme draws any colour or attribute (false for
    /// [`UiTheme::plain`], i.e. with `NO_COLOR`): work that only adds
    /// colour, such as highlighting code, is skipped without it.
    pub fn is_colored(&self) -> bool {
        *self != Self::plain()
    }

    /// [`UiTheme::plain`] when `NO_COLOR` is set (to anything but empty),
    /// else the default.
    pub fn from_env() -> Self {
        match std::env::var_os("NO_COLOR") {
            Some(v) if !v.is_empty() => Self::plain(),
            _ => Self::default(),
        }
    }
}

/// What decides the theme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThemeChoice {
    /// The `theme` setting: `dark`, `light`, `system` (or absent: by the
    /// background), `LIGHT/DARK`, or a theme file's `name`.
    pub setting: Option<String>,
    /// Where theme files are (`<agent dir>/themes`).
    pub themes_dir: Option<PathBuf>,
    /// The terminal's background.
    pub background: Background,
    /// Its colour depth.
    pub depth: ColorDepth,
    /// `NO_COLOR`: no colour at all.
    pub no_color: bool,
}

impl ThemeChoice {
    /// From the environment only (`NO_COLOR`, `COLORTERM` / `TERM`,
    /// `COLORFGBG`), asking the terminal nothing: what a UI started without
    /// a detected choice switches themes with.
    pub fn from_env(setting: Option<String>, themes_dir: Option<PathBuf>) -> Self {
        let env = |k: &str| std::env::var(k).ok();
        ThemeChoice {
            setting,
            themes_dir,
            background: palette::detect_background(&env, None),
            depth: palette::detect_depth(&env),
            no_color: palette::no_color(&env),
        }
    }

    /// Whether `name` is a theme [`UiTheme::choose`] can find: a built-in
    /// (`system`, `dark`, `light`), a `LIGHT/DARK` pair of such names, or
    /// the `name` of a file in the themes directory (read again).
    pub fn knows(&self, name: &str) -> bool {
        let files: Vec<String> = match &self.themes_dir {
            Some(dir) => pi_theme::load_dir(dir)
                .0
                .into_iter()
                .map(|t| t.name)
                .collect(),
            None => Vec::new(),
        };
        let one = |n: &str| {
            let n = n.trim();
            matches!(n, "" | "system" | "dark" | "light") || files.iter().any(|f| f == n)
        };
        match name.split_once('/') {
            Some((light, dark)) => one(light) && one(dark),
            None => !name.trim().is_empty() && one(name),
        }
    }

    /// From the process's environment and terminal: `NO_COLOR`, the depth
    /// from `COLORTERM` / `TERM`, the background from the terminal's answer
    /// to OSC 11 (at most [`palette::BACKGROUND_QUERY_TIMEOUT`]) or
    /// `COLORFGBG`. Call it before the UI reads the terminal.
    pub fn detect(setting: Option<String>, themes_dir: Option<PathBuf>) -> Self {
        let env = |k: &str| std::env::var(k).ok();
        let no_color = palette::no_color(&env);
        let answer = if no_color {
            None
        } else {
            palette::query_background(palette::BACKGROUND_QUERY_TIMEOUT)
        };
        ThemeChoice {
            setting,
            themes_dir,
            background: palette::detect_background(&env, answer),
            depth: palette::detect_depth(&env),
            no_color,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(setting: Option<&str>, dir: Option<PathBuf>) -> ThemeChoice {
        ThemeChoice {
            setting: setting.map(str::to_string),
            themes_dir: dir,
            background: Background::Dark,
            depth: ColorDepth::TrueColor,
            no_color: false,
        }
    }

    /// A fresh directory under the system temp dir for one test.
    fn themes_dir(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agent-tui-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temp dir");
        dir
    }

    #[test]
    fn no_color_wins_and_the_background_picks_the_builtin() {
        let mut c = choice(Some("dark"), None);
        c.no_color = true;
        assert_eq!(UiTheme::choose(&c).0, UiTheme::plain());
        let mut c = choice(None, None);
        c.background = Background::Light;
        assert_eq!(UiTheme::choose(&c).0, UiTheme::light());
        // `light/dark`: the second on a dark terminal.
        let c = choice(Some("light/dark"), None);
        assert_eq!(UiTheme::choose(&c).0, UiTheme::default());
        assert!(palette::no_color(&|k| (k == "NO_COLOR").then(|| "1".into())));
        assert!(!palette::no_color(&|k| (k == "NO_COLOR").then(String::new)));
    }

    #[test]
    fn a_pi_theme_file_is_loaded_by_name_and_mapped_to_the_depth() {
        let dir = themes_dir("pi");
        std::fs::write(
            dir.join("sunset.json"),
            r##"{"name": "sunset", "appearance": "light", "vars": {"hot": "#ff8700"},
                "colors": {"mdHeading": "hot", "error": 196, "selectedBg": "okhsl(250 50% 80%)"}}"##,
        )
        .expect("written");
        let (theme, warnings) = UiTheme::choose(&choice(Some("sunset"), Some(dir.clone())));
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            theme.heading.get_fg_color(),
            Some(Color::Rgb(anstyle::RgbColor(255, 135, 0)))
        );
        assert!(theme.heading.get_effects().contains(anstyle::Effects::BOLD));
        // Roles the file lacks keep the light built-in's style.
        assert_eq!(theme.code, UiTheme::light().code);
        let mut c = choice(Some("sunset"), Some(dir.clone()));
        c.depth = ColorDepth::Ansi256;
        let (theme, _) = UiTheme::choose(&c);
        assert_eq!(
            theme.heading.get_fg_color(),
            Some(Color::Ansi256(Ansi256Color(208)))
        );
        assert_eq!(
            theme.error.get_fg_color(),
            Some(Color::Ansi256(Ansi256Color(196)))
        );
        c.depth = ColorDepth::Ansi16;
        let (theme, _) = UiTheme::choose(&c);
        assert!(matches!(
            theme.selected.get_bg_color(),
            Some(Color::Ansi(_))
        ));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_broken_theme_file_is_a_warning_naming_it() {
        let dir = themes_dir("broken");
        std::fs::write(dir.join("broken.json"), "{ not json").expect("written");
        std::fs::write(
            dir.join("ok.json"),
            r##"{"name": "ok", "colors": {"accent": "#00ff00"}}"##,
        )
        .expect("written");
        let (theme, warnings) = UiTheme::choose(&choice(Some("ok"), Some(dir.clone())));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("broken.json"), "{warnings:?}");
        assert_eq!(
            theme.spinner.get_fg_color(),
            Some(Color::Rgb(anstyle::RgbColor(0, 255, 0)))
        );
        let (theme, warnings) = UiTheme::choose(&choice(Some("missing"), Some(dir.clone())));
        assert!(warnings.iter().any(|w| w.contains("\"missing\" not found")));
        assert_eq!(theme, UiTheme::default());
        let _ = std::fs::remove_dir_all(dir);
    }
}
