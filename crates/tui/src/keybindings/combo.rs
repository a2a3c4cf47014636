//! Pi's key syntax (`ctrl+shift+x`, `alt+enter`, `pageUp`) and how a
//! crossterm key event matches it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// One key with its modifiers, as written in `keybindings.json`
/// (`ctrl+shift+x`, `alt+enter`, `pageUp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyCombo {
    code: KeyCode,
    ctrl: bool,
    alt: bool,
    shift: bool,
    sup: bool,
}

impl KeyCombo {
    /// Parses Pi's key syntax; `None` for anything else.
    pub fn parse(text: &str) -> Option<KeyCombo> {
        let mut combo = KeyCombo {
            code: KeyCode::Null,
            ctrl: false,
            alt: false,
            shift: false,
            sup: false,
        };
        // The key is the last part; `ctrl++` binds the plus sign.
        let (mods, key) = match text.strip_suffix("++") {
            Some(m) => (m, "+"),
            None => match text.rsplit_once('+') {
                Some((m, k)) => (m, k),
                None => ("", text),
            },
        };
        if !mods.is_empty() {
            for m in mods.split('+') {
                let flag = match m.to_ascii_lowercase().as_str() {
                    "ctrl" => &mut combo.ctrl,
                    "alt" => &mut combo.alt,
                    "shift" => &mut combo.shift,
                    "super" => &mut combo.sup,
                    _ => return None,
                };
                if *flag {
                    return None; // Pi refuses a modifier named twice.
                }
                *flag = true;
            }
        }
        combo.code = match key.to_ascii_lowercase().as_str() {
            "escape" | "esc" => KeyCode::Esc,
            "enter" | "return" => KeyCode::Enter,
            "tab" => KeyCode::Tab,
            "space" => KeyCode::Char(' '),
            "backspace" => KeyCode::Backspace,
            "delete" => KeyCode::Delete,
            "insert" => KeyCode::Insert,
            "clear" => KeyCode::KeypadBegin,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" => KeyCode::PageUp,
            "pagedown" => KeyCode::PageDown,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            k if k.len() > 1 && k.starts_with('f') => {
                let n: u8 = k[1..].parse().ok()?;
                if !(1..=12).contains(&n) {
                    return None;
                }
                KeyCode::F(n)
            }
            k => {
                let mut chars = k.chars();
                let c = chars.next()?;
                if chars.next().is_some() || !(c.is_ascii_graphic()) {
                    return None;
                }
                KeyCode::Char(c)
            }
        };
        Some(combo)
    }

    /// Whether `key` is this combination. Legacy terminals send a few
    /// control keys as other codes (Ctrl+- as Ctrl+_ or Ctrl+7, Ctrl+] as
    /// Ctrl+5, Shift+Tab as BackTab, Shift+letter as the capital); those
    /// match too.
    pub fn matches(&self, key: &KeyEvent) -> bool {
        let m = key.modifiers;
        let mut code = key.code;
        let mut shift = m.contains(KeyModifiers::SHIFT);
        match code {
            KeyCode::BackTab => {
                code = KeyCode::Tab;
                shift = true;
            }
            KeyCode::Char(c) if c.is_ascii_uppercase() => {
                code = KeyCode::Char(c.to_ascii_lowercase());
                shift = true;
            }
            // A symbol's shift is in the symbol itself.
            KeyCode::Char(c) if !c.is_ascii_alphanumeric() && !self.shift => shift = false,
            _ => {}
        }
        if self.ctrl != m.contains(KeyModifiers::CONTROL)
            || self.alt != m.contains(KeyModifiers::ALT)
            || self.shift != shift
            || self.sup != m.contains(KeyModifiers::SUPER)
        {
            return false;
        }
        if code == self.code {
            return true;
        }
        // What a legacy terminal sends for Ctrl with a symbol.
        let aliases: &[char] = match self.code {
            KeyCode::Char('-' | '_') if self.ctrl => &['-', '_', '7'],
            KeyCode::Char(']') if self.ctrl => &['5'],
            KeyCode::Char('\\') if self.ctrl => &['4'],
            KeyCode::Char('^') if self.ctrl => &['6'],
            _ => &[],
        };
        matches!(code, KeyCode::Char(c) if aliases.contains(&c))
    }
}
