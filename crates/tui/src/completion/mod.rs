//! Completion in the editor: `/commands` at the start of the message,
//! `@files` anywhere (fuzzy, over a background walk of the working
//! directory) and paths on Tab. A [`Menu`] is drawn under the editor;
//! Up/Down choose, Tab or Enter take, Esc closes.

pub mod files;
pub mod fuzzy;

use std::path::Path;

use agent_tool::StyledLine;

use crate::editor::Editor;
use crate::text;
use crate::theme::UiTheme;
use files::FileIndex;

/// Rows the menu shows at once.
pub const MAX_VISIBLE: usize = 5;
/// At most this many items are offered (the best ones).
pub const MAX_ITEMS: usize = 50;
/// At most this many directory entries are read for a path completion.
const MAX_DIR_ENTRIES: usize = 5_000;

/// A `/command` the menu offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandHint {
    /// Its name, without the slash (`tree`, `skill:review`).
    pub name: String,
    /// What it does, one line.
    pub description: String,
}

/// What a menu completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A `/command` name: Enter takes it and sends the line.
    Command,
    /// An `@file`.
    File,
    /// A path (Tab).
    Path,
}

/// One choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The text that replaces what was typed.
    pub value: String,
    /// What the menu shows.
    pub label: String,
    /// Shown dim beside the label.
    pub description: String,
}

/// An open completion menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Menu {
    /// What it completes.
    pub kind: Kind,
    /// Where the text it replaces starts (a byte offset; it ends at the
    /// caret).
    pub start: usize,
    /// The choices, best first.
    pub items: Vec<Item>,
    /// The one highlighted.
    pub selected: usize,
}

/// What the text before the caret could complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Context {
    /// `/na`: a command name being typed, `start` at the slash.
    Command {
        /// The slash's offset.
        start: usize,
        /// What follows it.
        query: String,
    },
    /// `@sr`: a file, `start` at the `@`.
    File {
        /// The `@`'s offset.
        start: usize,
        /// What follows it.
        query: String,
    },
    /// Any other word: a path.
    Path {
        /// The word's offset.
        start: usize,
        /// The word.
        token: String,
    },
}

/// What `text` before `cursor` asks to complete.
///
/// ```
/// use agent_tui::completion::{context, Context};
/// assert_eq!(context("/tr", 3), Context::Command { start: 0, query: "tr".into() });
/// assert_eq!(context("see @src/ma", 11), Context::File { start: 4, query: "src/ma".into() });
/// assert_eq!(context("ls ./cra", 8), Context::Path { start: 3, token: "./cra".into() });
/// ```
pub fn context(text: &str, cursor: usize) -> Context {
    let before = &text[..cursor.min(text.len())];
    let trimmed = before.trim_start();
    if !before.contains('\n')
        && let Some(query) = trimmed.strip_prefix('/')
        && !query.contains(char::is_whitespace)
    {
        return Context::Command {
            start: before.len() - trimmed.len(),
            query: query.to_string(),
        };
    }
    let start = before
        .rfind([' ', '\t', '\n', '"', '\'', '=', '(', '[', '{', '<', '`'])
        .map_or(0, |i| i + 1);
    let token = &before[start..];
    // `@"path with spaces`: the quote belongs to the token.
    let (start, token) = match before[..start].strip_suffix("@\"") {
        Some(rest) => (rest.len(), &before[rest.len()..]),
        None => (start, token),
    };
    match token.strip_prefix('@') {
        Some(query) => Context::File {
            start,
            query: query.trim_start_matches('"').to_string(),
        },
        None => Context::Path {
            start,
            token: token.to_string(),
        },
    }
}

/// The commands matching `query`, best first (a skill also by its name
/// without `skill:`).
pub fn command_menu(commands: &[CommandHint], start: usize, query: &str) -> Option<Menu> {
    let mut scored: Vec<(i64, usize)> = commands
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let bare = c.name.strip_prefix("skill:").unwrap_or(&c.name);
            let s = fuzzy::score(query, bare).or_else(|| fuzzy::score(query, &c.name))?;
            Some((if c.name == query { s + 1_000 } else { s }, i))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let items: Vec<Item> = scored
        .into_iter()
        .take(MAX_ITEMS)
        .map(|(_, i)| Item {
            value: format!("/{} ", commands[i].name),
            label: format!("/{}", commands[i].name),
            description: commands[i].description.clone(),
        })
        .collect();
    menu(Kind::Command, start, items)
}

fn menu(kind: Kind, start: usize, items: Vec<Item>) -> Option<Menu> {
    (!items.is_empty()).then_some(Menu {
        kind,
        start,
        items,
        selected: 0,
    })
}

/// The `@` menu for `query` from the matcher's answer, once it has
/// answered this very query (`None` until then, or when nothing matches).
pub fn file_menu(index: &FileIndex, start: usize, query: &str) -> Option<Menu> {
    menu(Kind::File, start, index.matches_for(query)?)
}

/// The best [`MAX_ITEMS`] of `paths` for `query`: `@path`, quoted when it
/// has a blank; a directory keeps its `/` so the next Tab goes on.
pub fn best_files(paths: &[String], query: &str) -> Vec<Item> {
    let mut scored: Vec<(i64, &String)> = paths
        .iter()
        .filter_map(|p| Some((fuzzy::score(query, p.trim_end_matches('/'))?, p)))
        .collect();
    // Only the best few are sorted: the walk may have found 50,000.
    let keep = MAX_ITEMS.min(scored.len());
    if keep > 0 && keep < scored.len() {
        scored.select_nth_unstable_by(keep - 1, rank);
        scored.truncate(keep);
    }
    scored.sort_by(rank);
    scored
        .into_iter()
        .map(|(_, path)| {
            let bare = path.trim_end_matches('/');
            let name = bare.rsplit('/').next().unwrap_or(bare);
            let dir = path.ends_with('/');
            Item {
                value: if path.contains(char::is_whitespace) {
                    format!("@\"{path}\"")
                } else {
                    format!("@{path}")
                },
                label: if dir {
                    format!("{name}/")
                } else {
                    name.to_string()
                },
                description: path.clone(),
            }
        })
        .collect()
}

/// Better score first, then the shallower and shorter path.
fn rank(a: &(i64, &String), b: &(i64, &String)) -> std::cmp::Ordering {
    let depth = |p: &str| p.trim_end_matches('/').matches('/').count();
    b.0.cmp(&a.0)
        .then(depth(a.1).cmp(&depth(b.1)))
        .then(a.1.len().cmp(&b.1.len()))
        .then(a.1.cmp(b.1))
}

/// The entries of the directory `token` names (relative to `cwd`, `~/`
/// for home) whose names start with its last part: directories first,
/// each with a `/`.
pub fn path_menu(cwd: &Path, start: usize, token: &str) -> Option<Menu> {
    let (dir_part, base) = match token.rfind('/') {
        Some(i) => (&token[..=i], &token[i + 1..]),
        None => ("", token),
    };
    let dir = if let Some(rest) = dir_part.strip_prefix("~/") {
        std::env::var_os("HOME").map(|h| Path::new(&h).join(rest))?
    } else if dir_part.is_empty() {
        cwd.to_path_buf()
    } else {
        cwd.join(dir_part)
    };
    let mut found: Vec<(bool, String)> = std::fs::read_dir(&dir)
        .ok()?
        .take(MAX_DIR_ENTRIES)
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let wanted =
                name.starts_with(base) && (base.starts_with('.') || !name.starts_with('.'));
            let is_dir = e.path().is_dir();
            wanted.then_some((is_dir, name))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let items = found
        .into_iter()
        .take(MAX_ITEMS)
        .map(|(is_dir, name)| {
            let slash = if is_dir { "/" } else { "" };
            Item {
                value: format!("{dir_part}{name}{slash}"),
                label: format!("{name}{slash}"),
                description: String::new(),
            }
        })
        .collect();
    menu(Kind::Path, start, items)
}

impl Menu {
    /// The highlighted item.
    pub fn current(&self) -> Option<&Item> {
        self.items.get(self.selected)
    }

    /// Moves the highlight by `by` (wrapping at the ends for single
    /// steps, stopping there for pages).
    pub fn step(&mut self, by: isize) {
        let n = self.items.len();
        if n == 0 {
            return;
        }
        let at = self.selected as isize + by;
        self.selected = if by.abs() == 1 {
            at.rem_euclid(n as isize) as usize
        } else {
            at.clamp(0, n as isize - 1) as usize
        };
    }

    /// Puts the highlighted item in `editor` in place of what was typed
    /// (a file gets a blank after it).
    pub fn apply(&self, editor: &mut Editor) {
        let Some(item) = self.current() else {
            return;
        };
        let mut value = item.value.clone();
        if self.kind == Kind::File && !item.label.ends_with('/') {
            value.push(' ');
        }
        editor.replace_range(self.start, editor.cursor(), &value);
    }

    /// The menu's rows at `width`: a window of [`MAX_VISIBLE`] items
    /// around the highlight, and where it is when there are more.
    pub fn rows(&self, width: usize, theme: &UiTheme) -> Vec<StyledLine> {
        let n = self.items.len();
        let first = self
            .selected
            .saturating_sub(MAX_VISIBLE - 1)
            .min(n.saturating_sub(MAX_VISIBLE));
        let label_width = self.items[first..(first + MAX_VISIBLE).min(n)]
            .iter()
            .map(|i| text::str_width(&i.label))
            .max()
            .unwrap_or(0)
            .min(width / 2);
        let mut rows: Vec<StyledLine> = self.items[first..(first + MAX_VISIBLE).min(n)]
            .iter()
            .enumerate()
            .map(|(k, item)| {
                let chosen = first + k == self.selected;
                let (lead, style) = if chosen {
                    ("> ", theme.user)
                } else {
                    ("  ", anstyle::Style::new())
                };
                let pad = label_width.saturating_sub(text::str_width(&item.label));
                let row = StyledLine::styled(lead, theme.dim)
                    .push(text::clean(&item.label), style)
                    .push(" ".repeat(pad + 2), anstyle::Style::new())
                    .push(text::clean(&item.description), theme.dim);
                text::clip(&row, width)
            })
            .collect();
        if n > MAX_VISIBLE {
            rows.push(text::clip(
                &StyledLine::styled(format!("  ({}/{n})", self.selected + 1), theme.dim),
                width,
            ));
        }
        rows
    }
}
