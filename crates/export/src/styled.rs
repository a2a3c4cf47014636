//! A tool renderer's styled text as HTML spans. Colours become classes of
//! the 16-colour palette (the page's policy forbids inline styles), so a
//! card on the page shows what the terminal shows.

use coding_agent::anstyle::{Ansi256Color, AnsiColor, Color, Effects, RgbColor, Style};
use coding_agent::{StyledLine, StyledText};

use crate::escape::push_escaped;

const NAMES: [&str; 16] = [
    "black",
    "red",
    "green",
    "yellow",
    "blue",
    "magenta",
    "cyan",
    "white",
    "bright-black",
    "bright-red",
    "bright-green",
    "bright-yellow",
    "bright-blue",
    "bright-magenta",
    "bright-cyan",
    "bright-white",
];

/// The xterm default palette, to map 256-colour and RGB colours down.
const PALETTE: [(u8, u8, u8); 16] = [
    (0, 0, 0),
    (205, 0, 0),
    (0, 205, 0),
    (205, 205, 0),
    (0, 0, 238),
    (205, 0, 205),
    (0, 205, 205),
    (229, 229, 229),
    (127, 127, 127),
    (255, 0, 0),
    (0, 255, 0),
    (255, 255, 0),
    (92, 92, 255),
    (255, 0, 255),
    (0, 255, 255),
    (255, 255, 255),
];

/// Appends the lines of `text` joined by newlines, each span in a `<span>`
/// carrying its style's classes.
pub(crate) fn push_styled(out: &mut String, text: &StyledText) {
    for (i, line) in text.lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        push_line(out, line);
    }
}

/// Appends one styled line (no newline).
pub(crate) fn push_line(out: &mut String, line: &StyledLine) {
    for span in &line.spans {
        let classes = classes(&span.style);
        if classes.is_empty() {
            push_escaped(out, &span.text);
        } else {
            out.push_str("<span class=\"");
            out.push_str(&classes);
            out.push_str("\">");
            push_escaped(out, &span.text);
            out.push_str("</span>");
        }
    }
}

fn classes(style: &Style) -> String {
    let mut classes = Vec::new();
    if let Some(fg) = style.get_fg_color() {
        classes.push(format!("f-{}", NAMES[palette_index(fg)]));
    }
    if let Some(bg) = style.get_bg_color() {
        classes.push(format!("b-{}", NAMES[palette_index(bg)]));
    }
    let effects = style.get_effects();
    for (effect, name) in [
        (Effects::BOLD, "bold"),
        (Effects::DIMMED, "dim"),
        (Effects::ITALIC, "italic"),
        (Effects::UNDERLINE, "underline"),
        (Effects::STRIKETHROUGH, "strike"),
    ] {
        if effects.contains(effect) {
            classes.push(name.to_string());
        }
    }
    classes.join(" ")
}

fn palette_index(color: Color) -> usize {
    match color {
        Color::Ansi(c) => ansi_index(c),
        Color::Ansi256(Ansi256Color(n)) if n < 16 => usize::from(n),
        Color::Ansi256(Ansi256Color(n)) => nearest(xterm_rgb(n)),
        Color::Rgb(RgbColor(r, g, b)) => nearest((r, g, b)),
    }
}

fn ansi_index(color: AnsiColor) -> usize {
    match color {
        AnsiColor::Black => 0,
        AnsiColor::Red => 1,
        AnsiColor::Green => 2,
        AnsiColor::Yellow => 3,
        AnsiColor::Blue => 4,
        AnsiColor::Magenta => 5,
        AnsiColor::Cyan => 6,
        AnsiColor::White => 7,
        AnsiColor::BrightBlack => 8,
        AnsiColor::BrightRed => 9,
        AnsiColor::BrightGreen => 10,
        AnsiColor::BrightYellow => 11,
        AnsiColor::BrightBlue => 12,
        AnsiColor::BrightMagenta => 13,
        AnsiColor::BrightCyan => 14,
        AnsiColor::BrightWhite => 15,
    }
}

/// The RGB value of an xterm 256-colour index of 16 or more.
fn xterm_rgb(n: u8) -> (u8, u8, u8) {
    if n >= 232 {
        let level = 8 + (n - 232) * 10;
        return (level, level, level);
    }
    let n = n - 16;
    let level = |v: u8| if v == 0 { 0 } else { 55 + v * 40 };
    (level(n / 36), level((n / 6) % 6), level(n % 6))
}

fn nearest((r, g, b): (u8, u8, u8)) -> usize {
    let distance = |(pr, pg, pb): (u8, u8, u8)| {
        let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).pow(2);
        d(r, pr) + d(g, pg) + d(b, pb)
    };
    (0..PALETTE.len())
        .min_by_key(|&i| distance(PALETTE[i]))
        .unwrap_or(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles_become_classes_and_text_stays_text() {
        let style = Style::new().fg_color(Some(AnsiColor::Red.into())).bold();
        let line = StyledLine::styled("<b>x</b>", style).push(" plain", Style::new());
        let mut out = String::new();
        push_line(&mut out, &line);
        assert_eq!(
            out,
            "<span class=\"f-red bold\">&lt;b&gt;x&lt;/b&gt;</span> plain"
        );
    }

    #[test]
    fn deep_colours_map_to_the_palette() {
        assert_eq!(
            NAMES[palette_index(Color::Rgb(RgbColor(250, 10, 10)))],
            "bright-red"
        );
        assert_eq!(
            NAMES[palette_index(Color::Ansi256(Ansi256Color(28)))],
            "green"
        );
        assert_eq!(
            NAMES[palette_index(Color::Ansi256(Ansi256Color(231)))],
            "bright-white"
        );
    }
}
