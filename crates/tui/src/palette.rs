//! What the terminal can show and what it shows on: colour depth from
//! `COLORTERM` / `TERM` (colours are mapped down to it), a dark or light
//! background from the terminal itself (OSC 11, answered within 100 ms)
//! or `COLORFGBG`, and `NO_COLOR`.
//!
//! Environment lookups go through a function, so detection is testable
//! without touching the process's environment.

use std::io::Write;
use std::time::{Duration, Instant};

use anstyle::{Ansi256Color, AnsiColor, Color, RgbColor, Style};

/// How many colours the terminal draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorDepth {
    /// 24-bit colour.
    TrueColor,
    /// The xterm 256-colour palette.
    Ansi256,
    /// The 16 ANSI colours.
    Ansi16,
}

/// The terminal's background.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Background {
    /// Dark (and the guess when nothing tells).
    #[default]
    Dark,
    /// Light.
    Light,
}

/// How long the terminal has to answer the background query.
pub const BACKGROUND_QUERY_TIMEOUT: Duration = Duration::from_millis(100);

/// Whether `NO_COLOR` asks for no colour (set to anything but empty).
pub fn no_color(env: &dyn Fn(&str) -> Option<String>) -> bool {
    env("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// The colour depth: `COLORTERM=truecolor|24bit` (or a `TERM` ending in
/// `direct`) is 24-bit, a `TERM` with `256color` is 256, anything else 16.
///
/// ```
/// use agent_tui::palette::{ColorDepth, detect_depth};
/// let env = |k: &str| (k == "TERM").then(|| "xterm-256color".to_string());
/// assert_eq!(detect_depth(&env), ColorDepth::Ansi256);
/// ```
pub fn detect_depth(env: &dyn Fn(&str) -> Option<String>) -> ColorDepth {
    let colorterm = env("COLORTERM").unwrap_or_default().to_ascii_lowercase();
    let term = env("TERM").unwrap_or_default().to_ascii_lowercase();
    if matches!(colorterm.as_str(), "truecolor" | "24bit") || term.ends_with("direct") {
        ColorDepth::TrueColor
    } else if term.contains("256color") {
        ColorDepth::Ansi256
    } else {
        ColorDepth::Ansi16
    }
}

/// The background `COLORFGBG` names (`fg;bg`, or `fg;other;bg`): colours
/// 0–6 and 8 are dark, 7 and 9–15 light.
pub fn background_from_colorfgbg(value: &str) -> Option<Background> {
    let bg: u8 = value.rsplit(';').next()?.trim().parse().ok()?;
    match bg {
        0..=6 | 8 => Some(Background::Dark),
        7 | 9..=15 => Some(Background::Light),
        _ => None,
    }
}

/// The background in a terminal's answer to OSC 11
/// (`ESC ] 11 ; rgb:RRRR/GGGG/BBBB` ended by BEL or ST; 1 to 4 hex digits
/// a channel): light when its luminance is above one half.
///
/// ```
/// use agent_tui::palette::{Background, parse_osc11};
/// assert_eq!(parse_osc11(b"\x1b]11;rgb:ffff/ffff/ffff\x07"), Some(Background::Light));
/// assert_eq!(parse_osc11(b"\x1b]11;rgb:1e/1e/2e\x1b\\"), Some(Background::Dark));
/// ```
pub fn parse_osc11(reply: &[u8]) -> Option<Background> {
    let text = std::str::from_utf8(reply).ok()?;
    let start = text.find("]11;")? + 4;
    let body = text.get(start..)?;
    let end = body.find(['\x07', '\x1b']).unwrap_or(body.len());
    let rgb = body.get(..end)?.strip_prefix("rgb:")?;
    let mut channels = rgb.split('/').map(|c| {
        let digits = c.get(..c.len().min(4))?;
        let max = (1u32 << (4 * digits.len())) - 1;
        let v = u32::from_str_radix(digits, 16).ok()?;
        Some(f64::from(v) / f64::from(max))
    });
    let (r, g, b) = (channels.next()??, channels.next()??, channels.next()??);
    let luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b;
    Some(if luminance > 0.5 {
        Background::Light
    } else {
        Background::Dark
    })
}

/// Asks the terminal on stdin/stdout for its background (OSC 11), waiting
/// at most `timeout` (see [`query_terminal`], which this is part of).
/// `None` when there is no answer (or no terminal).
pub fn query_background(timeout: Duration) -> Option<Background> {
    query_terminal(timeout).background
}

/// What the terminal said about itself when asked at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TerminalAnswers {
    /// Its background (OSC 11), when it answered.
    pub background: Option<Background>,
    /// The Kitty keyboard protocol flags in force, when it answered
    /// `CSI ? u` (it speaks the protocol).
    pub kitty_keyboard: Option<u16>,
}

static ANSWERS: std::sync::OnceLock<TerminalAnswers> = std::sync::OnceLock::new();

/// Asks the terminal on stdin/stdout, once per process, for its background
/// (OSC 11) and its Kitty keyboard flags (`CSI ? u`), waiting at most
/// `timeout`; later calls return the first answers without asking again
/// (asking twice would cost two round trips for the same facts).
///
/// A device-attributes query (`CSI c`) goes last: every terminal answers
/// that one, and answers in order, so a terminal that ignores the others
/// costs no wait. Raw mode is on only for the query.
pub fn query_terminal(timeout: Duration) -> TerminalAnswers {
    *ANSWERS.get_or_init(|| {
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
            return TerminalAnswers::default();
        }
        let was_raw = crossterm::terminal::is_raw_mode_enabled().unwrap_or(false);
        if !was_raw && crossterm::terminal::enable_raw_mode().is_err() {
            return TerminalAnswers::default();
        }
        let answers = ask(timeout);
        if !was_raw && let Err(e) = crossterm::terminal::disable_raw_mode() {
            tracing::warn!(error = %e, "cannot leave raw mode after the terminal query");
        }
        tracing::debug!(?answers, "the terminal answered");
        answers
    })
}

fn ask(timeout: Duration) -> TerminalAnswers {
    use rustix::event::{PollFd, PollFlags, poll};
    let mut out = std::io::stdout();
    if out
        .write_all(b"\x1b]11;?\x1b\\\x1b[?u\x1b[c")
        .and_then(|()| out.flush())
        .is_err()
    {
        return TerminalAnswers::default();
    }
    let stdin = std::io::stdin();
    let deadline = Instant::now() + timeout;
    let mut reply = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        let spec = rustix::event::Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        match poll(&mut fds, Some(&spec)) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
        let mut buf = [0u8; 256];
        match rustix::io::read(&stdin, &mut buf) {
            Ok(n) if n > 0 => reply.extend_from_slice(&buf[..n]),
            _ => break,
        }
        // The attributes answer came: everything that will be said was.
        if device_attributes_end(&reply) {
            break;
        }
    }
    TerminalAnswers {
        background: parse_osc11(&reply),
        kitty_keyboard: crate::keyboard::parse_kitty_flags(&reply),
    }
}

/// Whether `reply` holds the end of a primary device attributes answer
/// (`ESC [ ? digits and semicolons c`).
fn device_attributes_end(reply: &[u8]) -> bool {
    let mut rest = reply;
    while let Some(at) = find(rest, b"\x1b[?") {
        let body = &rest[at + 3..];
        let end = body
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b';'))
            .map(|i| body[i]);
        if end == Some(b'c') {
            return true;
        }
        rest = body;
    }
    false
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The background: the terminal's answer, else `COLORFGBG`, else dark.
pub fn detect_background(
    env: &dyn Fn(&str) -> Option<String>,
    answer: Option<Background>,
) -> Background {
    answer
        .or_else(|| env("COLORFGBG").and_then(|v| background_from_colorfgbg(&v)))
        .unwrap_or_default()
}

/// The RGB of an xterm palette index.
pub fn index_rgb(index: u8) -> (u8, u8, u8) {
    match index {
        0..=15 => agent_tool::XTERM_PALETTE[usize::from(index)],
        16..=231 => {
            let i = index - 16;
            let level = |v: u8| if v == 0 { 0 } else { 55 + 40 * v };
            (level(i / 36), level((i / 6) % 6), level(i % 6))
        }
        _ => {
            let v = 8 + 10 * (index - 232);
            (v, v, v)
        }
    }
}

fn distance(a: (u8, u8, u8), b: (u8, u8, u8)) -> u32 {
    let d = |x: u8, y: u8| (i32::from(x) - i32::from(y)).unsigned_abs();
    d(a.0, b.0).pow(2) + d(a.1, b.1).pow(2) + d(a.2, b.2).pow(2)
}

/// The nearest of the 256 palette's cube and grey ramp (16–255).
pub fn rgb_to_256(rgb: (u8, u8, u8)) -> u8 {
    let step = |v: u8| -> u8 {
        match v {
            0..=47 => 0,
            48..=114 => 1,
            _ => (v - 35) / 40,
        }
    };
    let cube = 16 + 36 * step(rgb.0) + 6 * step(rgb.1) + step(rgb.2);
    let avg = (u16::from(rgb.0) + u16::from(rgb.1) + u16::from(rgb.2)) / 3;
    let grey = 232 + u8::try_from((avg.saturating_sub(3) / 10).min(23)).unwrap_or(23);
    if distance(index_rgb(grey), rgb) < distance(index_rgb(cube), rgb) {
        grey
    } else {
        cube
    }
}

/// The nearest of the 16 ANSI colours.
pub fn rgb_to_16(rgb: (u8, u8, u8)) -> AnsiColor {
    let best = (0..16u8)
        .min_by_key(|&i| distance(index_rgb(i), rgb))
        .unwrap_or(7);
    Ansi256Color(best).into_ansi().unwrap_or(AnsiColor::White)
}

/// `color` as the terminal of `depth` can show it.
pub fn map_color(color: Color, depth: ColorDepth) -> Color {
    match (color, depth) {
        (Color::Ansi(_), _) | (_, ColorDepth::TrueColor) => color,
        (Color::Rgb(RgbColor(r, g, b)), ColorDepth::Ansi256) => {
            Color::Ansi256(Ansi256Color(rgb_to_256((r, g, b))))
        }
        (Color::Ansi256(_), ColorDepth::Ansi256) => color,
        (Color::Rgb(RgbColor(r, g, b)), ColorDepth::Ansi16) => Color::Ansi(rgb_to_16((r, g, b))),
        (Color::Ansi256(Ansi256Color(i)), ColorDepth::Ansi16) => {
            Color::Ansi(rgb_to_16(index_rgb(i)))
        }
    }
}

/// `style` with its colours mapped to `depth`.
pub fn map_style(style: Style, depth: ColorDepth) -> Style {
    let fg = style.get_fg_color().map(|c| map_color(c, depth));
    let bg = style.get_bg_color().map(|c| map_color(c, depth));
    style.fg_color(fg).bg_color(bg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn depth_comes_from_colorterm_then_term() {
        assert_eq!(
            detect_depth(&env(&[("COLORTERM", "truecolor"), ("TERM", "xterm")])),
            ColorDepth::TrueColor
        );
        assert_eq!(
            detect_depth(&env(&[("TERM", "xterm-direct")])),
            ColorDepth::TrueColor
        );
        assert_eq!(
            detect_depth(&env(&[("TERM", "screen-256color")])),
            ColorDepth::Ansi256
        );
        assert_eq!(detect_depth(&env(&[("TERM", "xterm")])), ColorDepth::Ansi16);
        assert_eq!(detect_depth(&env(&[])), ColorDepth::Ansi16);
    }

    #[test]
    fn colorfgbg_and_the_terminal_answer_pick_the_background() {
        assert_eq!(background_from_colorfgbg("15;0"), Some(Background::Dark));
        assert_eq!(background_from_colorfgbg("0;15"), Some(Background::Light));
        assert_eq!(
            background_from_colorfgbg("0;default;7"),
            Some(Background::Light)
        );
        assert_eq!(background_from_colorfgbg("garbage"), None);
        let light = env(&[("COLORFGBG", "0;15")]);
        assert_eq!(detect_background(&light, None), Background::Light);
        // The terminal's own answer wins over the variable.
        assert_eq!(
            detect_background(&light, Some(Background::Dark)),
            Background::Dark
        );
        assert_eq!(detect_background(&env(&[]), None), Background::Dark);
        assert_eq!(
            parse_osc11(b"\x1b]11;rgb:f/f/e\x07"),
            Some(Background::Light)
        );
        assert_eq!(parse_osc11(b"\x1b]11;rgb:zz/00/00\x07"), None);
    }

    #[test]
    fn the_attributes_answer_ends_the_query_and_a_kitty_answer_does_not() {
        assert!(!device_attributes_end(b"\x1b]11;rgb:0/0/0\x07\x1b[?1u"));
        assert!(!device_attributes_end(b"\x1b[?1u\x1b[?62;2"));
        assert!(device_attributes_end(b"\x1b[?1u\x1b[?62;22c"));
        assert!(device_attributes_end(b"\x1b[?6c"));
    }

    #[test]
    fn colours_map_down_to_the_depth() {
        let orange = Color::Rgb(RgbColor(255, 135, 0));
        assert_eq!(
            map_color(orange, ColorDepth::Ansi256),
            Color::Ansi256(Ansi256Color(208))
        );
        assert_eq!(
            map_color(orange, ColorDepth::Ansi16),
            Color::Ansi(AnsiColor::Yellow)
        );
        assert_eq!(map_color(orange, ColorDepth::TrueColor), orange);
        let grey = Color::Rgb(RgbColor(128, 128, 128));
        assert_eq!(
            map_color(grey, ColorDepth::Ansi256),
            Color::Ansi256(Ansi256Color(244))
        );
        assert_eq!(
            map_color(Color::Ansi256(Ansi256Color(21)), ColorDepth::Ansi16),
            Color::Ansi(AnsiColor::Blue)
        );
        let s = map_style(
            Style::new().bg_color(Some(orange)).bold(),
            ColorDepth::Ansi16,
        );
        assert_eq!(s.get_bg_color(), Some(Color::Ansi(AnsiColor::Yellow)));
        assert!(s.get_effects().contains(anstyle::Effects::BOLD));
    }
}
