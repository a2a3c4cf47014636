//! Pi's theme files (`<agent dir>/themes/*.json`): a `name`, optional
//! `appearance` and `vars`, and `colors` by role. A colour is `#rgb` /
//! `#rrggbb`, `oklch(L% C H)`, `okhsl(H S% L%)`, a 256-palette index, the
//! name of a var (vars may name vars), or `""` for the terminal's default.
//!
//! OKLCH is converted exactly (gamut-mapped by lowering the chroma);
//! OKHSL is read as lightness through Ottosson's toe and saturation as a
//! share of the largest in-gamut chroma at that hue and lightness, which
//! is close to, not the same as, the exact OKHSL formula. Roles this UI
//! has no place for are ignored; roles a file lacks keep the built-in
//! style.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anstyle::{Ansi256Color, Color, RgbColor, Style};
use serde_json::{Map, Value};

use crate::palette::Background;

/// Why a theme file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ThemeError {
    /// The file cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a theme.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// A colour of a theme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThemeColor {
    /// The terminal's default colour.
    Default,
    /// A palette index.
    Index(u8),
    /// 24-bit.
    Rgb(u8, u8, u8),
}

impl ThemeColor {
    /// As an `anstyle` colour (`None` for the terminal's default).
    pub fn to_color(self) -> Option<Color> {
        match self {
            ThemeColor::Default => None,
            ThemeColor::Index(i) => Some(Color::Ansi256(Ansi256Color(i))),
            ThemeColor::Rgb(r, g, b) => Some(Color::Rgb(RgbColor(r, g, b))),
        }
    }
}

/// A theme file, its colours resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct PiTheme {
    /// Its `name`.
    pub name: String,
    /// Its `appearance`, when given.
    pub appearance: Option<Background>,
    /// Every role in `colors`, resolved.
    pub colors: HashMap<String, ThemeColor>,
}

impl PiTheme {
    /// A role's colour as a foreground style (`None` when the role is
    /// absent).
    pub fn fg(&self, role: &str) -> Option<Style> {
        self.colors
            .get(role)
            .map(|c| Style::new().fg_color(c.to_color()))
    }

    /// A role's colour as a background.
    pub fn bg(&self, role: &str) -> Option<Color> {
        self.colors.get(role).and_then(|c| c.to_color())
    }
}

/// Parses a theme file's text; `path` names it in errors.
pub fn parse(path: &Path, json: &str) -> Result<PiTheme, ThemeError> {
    let invalid = |reason: String| ThemeError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let value: Value = serde_json::from_str(json).map_err(|e| invalid(e.to_string()))?;
    let obj = value
        .as_object()
        .ok_or_else(|| invalid("not a JSON object".into()))?;
    let name = match obj.get("name") {
        Some(Value::String(n)) if !n.is_empty() && !n.contains('/') => n.clone(),
        _ => return Err(invalid("`name` must be a string without `/`".into())),
    };
    let appearance = match obj.get("appearance") {
        None => None,
        Some(Value::String(a)) if a == "dark" => Some(Background::Dark),
        Some(Value::String(a)) if a == "light" => Some(Background::Light),
        Some(_) => return Err(invalid("`appearance` must be \"dark\" or \"light\"".into())),
    };
    let empty = Map::new();
    let vars = match obj.get("vars") {
        None => &empty,
        Some(Value::Object(v)) => v,
        Some(_) => return Err(invalid("`vars` must be an object".into())),
    };
    let Some(Value::Object(raw)) = obj.get("colors") else {
        return Err(invalid("`colors` must be an object".into()));
    };
    let mut colors = HashMap::new();
    for (role, v) in raw {
        let c = resolve(v, vars, 0).map_err(|e| invalid(format!("colors.{role}: {e}")))?;
        colors.insert(role.clone(), c);
    }
    Ok(PiTheme {
        name,
        appearance,
        colors,
    })
}

/// How deep vars may refer to vars (deeper is taken for a cycle).
const MAX_VAR_DEPTH: usize = 32;

fn resolve(v: &Value, vars: &Map<String, Value>, depth: usize) -> Result<ThemeColor, String> {
    if depth > MAX_VAR_DEPTH {
        return Err("vars refer to each other in a circle".into());
    }
    match v {
        Value::Number(n) => n
            .as_u64()
            .and_then(|i| u8::try_from(i).ok())
            .map(ThemeColor::Index)
            .ok_or_else(|| format!("{n} is not a palette index (0-255)")),
        Value::String(s) => {
            if let Some(c) = literal(s)? {
                return Ok(c);
            }
            match vars.get(s.as_str()) {
                Some(next) => resolve(next, vars, depth + 1),
                None => Err(format!("{s:?} is neither a colour nor a var")),
            }
        }
        other => Err(format!("{other} is not a colour")),
    }
}

/// A colour written out (`None` for a var's name).
fn literal(s: &str) -> Result<Option<ThemeColor>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(Some(ThemeColor::Default));
    }
    if let Some(hex) = s.strip_prefix('#') {
        return hex_color(hex)
            .map(Some)
            .ok_or_else(|| format!("{s:?} is not #rgb or #rrggbb"));
    }
    for (prefix, convert) in [
        ("oklch(", oklch as fn(f64, f64, f64) -> (u8, u8, u8)),
        ("okhsl(", okhsl),
    ] {
        if let Some(body) = s.strip_prefix(prefix).and_then(|b| b.strip_suffix(')')) {
            let nums: Vec<f64> = body
                .split([' ', ','])
                .filter(|p| !p.is_empty())
                .map(number)
                .collect::<Option<_>>()
                .ok_or_else(|| format!("{s:?}: three numbers expected"))?;
            let [a, b, c] = nums[..] else {
                return Err(format!("{s:?}: three numbers expected"));
            };
            let (r, g, b) = convert(a, b, c);
            return Ok(Some(ThemeColor::Rgb(r, g, b)));
        }
    }
    Ok(None)
}

/// A number, `%` meaning hundredths.
fn number(p: &str) -> Option<f64> {
    let v = match p.strip_suffix('%') {
        Some(n) => n.parse::<f64>().ok()? / 100.0,
        None => p.parse::<f64>().ok()?,
    };
    v.is_finite().then_some(v)
}

fn hex_color(hex: &str) -> Option<ThemeColor> {
    let digits: Vec<u8> = hex
        .chars()
        .map(|c| c.to_digit(16).and_then(|d| u8::try_from(d).ok()))
        .collect::<Option<_>>()?;
    match digits[..] {
        [r, g, b] => Some(ThemeColor::Rgb(r * 17, g * 17, b * 17)),
        [r1, r2, g1, g2, b1, b2] => Some(ThemeColor::Rgb(r1 * 16 + r2, g1 * 16 + g2, b1 * 16 + b2)),
        _ => None,
    }
}

/// OKLab to linear sRGB (Ottosson's matrices).
fn oklab_to_linear(l: f64, a: f64, b: f64) -> [f64; 3] {
    let l_ = l + 0.396_337_777_4 * a + 0.215_803_757_3 * b;
    let m_ = l - 0.105_561_345_8 * a - 0.063_854_172_8 * b;
    let s_ = l - 0.089_484_177_5 * a - 1.291_485_548 * b;
    let (l3, m3, s3) = (l_.powi(3), m_.powi(3), s_.powi(3));
    [
        4.076_741_662_1 * l3 - 3.307_711_591_3 * m3 + 0.230_969_929_2 * s3,
        -1.268_438_004_6 * l3 + 2.609_757_401_1 * m3 - 0.341_319_396_5 * s3,
        -0.004_196_086_3 * l3 - 0.703_418_614_7 * m3 + 1.707_614_701 * s3,
    ]
}

fn in_gamut(rgb: [f64; 3]) -> bool {
    rgb.iter().all(|&c| (-1e-6..=1.0 + 1e-6).contains(&c))
}

fn linear_to_srgb(rgb: [f64; 3]) -> (u8, u8, u8) {
    let encode = |c: f64| {
        let c = c.clamp(0.0, 1.0);
        let v = if c <= 0.003_130_8 {
            12.92 * c
        } else {
            1.055 * c.powf(1.0 / 2.4) - 0.055
        };
        // In 0..=255 after the clamp.
        (v * 255.0).round().clamp(0.0, 255.0) as u8
    };
    (encode(rgb[0]), encode(rgb[1]), encode(rgb[2]))
}

/// The largest chroma in the sRGB gamut at `l` and hue `h` (radians).
fn max_chroma(l: f64, h: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 0.5);
    for _ in 0..30 {
        let mid = (lo + hi) / 2.0;
        if in_gamut(oklab_to_linear(l, mid * h.cos(), mid * h.sin())) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `oklch(L C H)`: lightness 0–1, chroma, hue in degrees; out-of-gamut
/// chroma is lowered to the gamut.
fn oklch(l: f64, c: f64, h: f64) -> (u8, u8, u8) {
    let l = l.clamp(0.0, 1.0);
    let h = h.to_radians();
    let c = c.max(0.0).min(max_chroma(l, h));
    linear_to_srgb(oklab_to_linear(l, c * h.cos(), c * h.sin()))
}

/// `okhsl(H S L)`: hue in degrees, saturation and lightness 0–1.
fn okhsl(h: f64, s: f64, l: f64) -> (u8, u8, u8) {
    // Ottosson's toe, inverted: OKHSL's lightness to OKLab's.
    const K1: f64 = 0.206;
    const K2: f64 = 0.03;
    const K3: f64 = (1.0 + K1) / (1.0 + K2);
    let l = l.clamp(0.0, 1.0);
    let lab_l = (l * l + K1 * l) / (K3 * (l + K2));
    let h = h.to_radians();
    let c = s.clamp(0.0, 1.0) * max_chroma(lab_l, h);
    linear_to_srgb(oklab_to_linear(lab_l, c * h.cos(), c * h.sin()))
}

/// Every theme in `dir` (`*.json`), and a warning naming each file that
/// is not one. A missing directory is no themes.
pub fn load_dir(dir: &Path) -> (Vec<PiTheme>, Vec<String>) {
    let mut themes = Vec::new();
    let mut warnings = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (themes, warnings);
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for path in paths {
        let loaded = std::fs::read_to_string(&path)
            .map_err(|source| ThemeError::Read {
                path: path.clone(),
                source,
            })
            .and_then(|text| parse(&path, &text));
        match loaded {
            Ok(theme) => themes.push(theme),
            Err(e) => warnings.push(format!("theme file skipped: {e}")),
        }
    }
    (themes, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_forms_resolve() {
        let json = r##"{"name": "t", "vars": {"a": "b", "b": "#0af"},
            "colors": {"accent": "a", "text": "", "muted": 244,
                       "x": "#ff8000", "white": "oklch(100% 0 0)", "grey": "okhsl(0 0% 50%)"}}"##;
        let t = parse(Path::new("t.json"), json).expect("a theme");
        assert_eq!(t.colors["accent"], ThemeColor::Rgb(0, 170, 255));
        assert_eq!(t.colors["text"], ThemeColor::Default);
        assert_eq!(t.colors["muted"], ThemeColor::Index(244));
        assert_eq!(t.colors["x"], ThemeColor::Rgb(255, 128, 0));
        assert_eq!(t.colors["white"], ThemeColor::Rgb(255, 255, 255));
        let ThemeColor::Rgb(r, g, b) = t.colors["grey"] else {
            panic!("rgb")
        };
        assert!(r == g && g == b && (100..140).contains(&r), "{r}");
    }

    #[test]
    fn bad_themes_say_what_is_wrong() {
        let err = |json: &str| parse(Path::new("bad.json"), json).unwrap_err().to_string();
        assert!(err("{").starts_with("bad.json: "));
        assert!(err(r#"{"colors": {}}"#).contains("name"));
        assert!(err(r#"{"name": "a", "colors": {"text": "nope"}}"#).contains("colors.text"));
        let cycle = r#"{"name": "a", "vars": {"x": "y", "y": "x"}, "colors": {"text": "x"}}"#;
        assert!(err(cycle).contains("circle"));
        assert!(err(r#"{"name": "a", "colors": {"text": 300}}"#).contains("palette index"));
    }
}
