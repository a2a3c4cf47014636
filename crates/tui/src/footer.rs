//! The status rows: a spinner with the elapsed time while a run goes, and
//! the footer (directory, tokens, cost, context use, model, thinking).
//!
//! The chrome uses ASCII and Braille only: no East Asian ambiguous-width
//! glyph whose width a terminal could disagree on.

use std::time::Duration;

use agent_ai::Usage;
use agent_tool::StyledLine;

use crate::text;
use crate::theme::UiTheme;

/// The spinner's frames (Braille patterns are one column everywhere).
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Context use from which the percentage is a warning.
pub const CONTEXT_WARNING: u64 = 70;
/// Context use from which the percentage is an error.
pub const CONTEXT_ERROR: u64 = 90;

/// What the footer shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    /// The working directory (with `~` for home).
    pub cwd: String,
    /// The git branch of the working directory, if it is in a repository.
    pub branch: Option<String>,
    /// The session's name (`/name`), if it has one.
    pub session_name: Option<String>,
    /// `provider/model`.
    pub model: String,
    /// The thinking level (`off`..`xhigh`).
    pub thinking: String,
    /// Tokens and cost of the session so far.
    pub usage: Usage,
    /// Tokens the context holds.
    pub context_tokens: u64,
    /// The model's context window (0 when unknown).
    pub context_window: u64,
}

/// `1234` as `1.2k`, `1234567` as `1.2M`.
///
/// ```
/// assert_eq!(agent_tui::footer::tokens(999), "999");
/// assert_eq!(agent_tui::footer::tokens(12_345), "12k");
/// assert_eq!(agent_tui::footer::tokens(1_250), "1.2k");
/// assert_eq!(agent_tui::footer::tokens(3_400_000), "3.4M");
/// ```
pub fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..10_000 => format!("{:.1}k", n as f64 / 1e3),
        10_000..1_000_000 => format!("{}k", n / 1_000),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

impl Status {
    /// The context use in percent, when the window is known.
    pub fn context_percent(&self) -> Option<u64> {
        (self.context_window > 0).then(|| self.context_tokens * 100 / self.context_window)
    }

    /// The footer's rows at `width`: directory, then usage and model.
    pub fn rows(&self, width: usize, theme: &UiTheme) -> Vec<StyledLine> {
        let dim = theme.dim;
        let mut first = StyledLine::styled(self.cwd.clone(), dim);
        if let Some(branch) = &self.branch {
            first = first.push(format!(" ({branch})"), dim);
        }
        if let Some(name) = &self.session_name {
            first = first.push(format!(" | {name}"), dim);
        }
        let first = first;
        let u = &self.usage;
        let mut usage = format!("in {} out {}", tokens(u.input), tokens(u.output));
        if u.cache_read > 0 || u.cache_write > 0 {
            usage += &format!(
                " cache r{} w{}",
                tokens(u.cache_read),
                tokens(u.cache_write)
            );
        }
        usage += &format!(" ${:.3}", u.cost.total);
        let mut second = StyledLine::styled(usage, dim);
        if let Some(pct) = self.context_percent() {
            let style = if pct >= CONTEXT_ERROR {
                theme.error
            } else if pct >= CONTEXT_WARNING {
                theme.warning
            } else {
                dim
            };
            second = second
                .push("  ", dim)
                .push(format!("{pct}%"), style)
                .push(format!(" of {}", tokens(self.context_window)), dim);
        }
        let right = if self.thinking.is_empty() || self.thinking == "off" {
            self.model.clone()
        } else {
            format!("{} | {}", self.model, self.thinking)
        };
        let used = text::line_width(&second);
        let right_w = text::str_width(&right);
        if used + 2 + right_w <= width {
            second = second
                .push(" ".repeat(width - used - right_w), dim)
                .push(right, dim);
            return vec![first, second];
        }
        // Narrow: the figures wrap, the model gets a row of its own.
        let mut rows = vec![first];
        rows.extend(text::wrap(&second, width.max(1)));
        rows.extend(text::wrap(&StyledLine::styled(right, dim), width.max(1)));
        rows
    }
}

/// The branch checked out in the repository around `dir`, read from its
/// `.git/HEAD` (a linked worktree's `.git` file is followed); a detached
/// head gives the commit's first 8 characters.
pub fn git_branch(dir: &std::path::Path) -> Option<String> {
    let mut at = Some(dir);
    while let Some(d) = at {
        let git = d.join(".git");
        let git_dir = if git.is_dir() {
            git
        } else if git.is_file() {
            let text = std::fs::read_to_string(&git).ok()?;
            let target = text.strip_prefix("gitdir:")?.trim();
            d.join(target)
        } else {
            at = d.parent();
            continue;
        };
        let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
        let head = head.trim();
        return Some(match head.strip_prefix("ref: refs/heads/") {
            Some(branch) => branch.to_string(),
            None => head.chars().take(8).collect(),
        });
    }
    None
}

/// The running row: spinner, elapsed seconds and the interrupt hint.
pub fn spinner_row(elapsed: Duration, tick: usize, theme: &UiTheme) -> StyledLine {
    StyledLine::styled(SPINNER[tick % SPINNER.len()], theme.spinner)
        .push(format!(" Working... {}s", elapsed.as_secs()), theme.dim)
        .push("  (esc to interrupt)", theme.dim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_use_changes_colour_at_70_and_90() {
        let theme = UiTheme::default();
        let mut s = Status {
            context_window: 100,
            model: "p/m".into(),
            ..Status::default()
        };
        for (used, style) in [(69, theme.dim), (70, theme.warning), (95, theme.error)] {
            s.context_tokens = used;
            let rows = s.rows(80, &theme);
            let span = rows[1]
                .spans
                .iter()
                .find(|sp| sp.text.ends_with('%'))
                .cloned()
                .unwrap_or_default();
            assert_eq!(span.text, format!("{used}%"));
            assert_eq!(span.style, style);
        }
    }

    #[test]
    fn the_branch_comes_from_git_head() {
        let dir = std::env::temp_dir().join(format!("agent-tui-branch-{}", std::process::id()));
        let sub = dir.join("a/b");
        std::fs::create_dir_all(dir.join(".git")).ok();
        std::fs::create_dir_all(&sub).ok();
        std::fs::write(dir.join(".git/HEAD"), "ref: refs/heads/feature/x\n").ok();
        assert_eq!(git_branch(&sub).as_deref(), Some("feature/x"));
        std::fs::write(dir.join(".git/HEAD"), "0123456789abcdef\n").ok();
        assert_eq!(git_branch(&dir).as_deref(), Some("01234567"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn narrow_footer_moves_the_model_to_its_own_row() {
        let s = Status {
            model: "provider/a-long-model-name".into(),
            thinking: "high".into(),
            ..Status::default()
        };
        assert_eq!(s.rows(120, &UiTheme::plain()).len(), 2);
        assert_eq!(s.rows(40, &UiTheme::plain()).len(), 3);
        let rows = s.rows(12, &UiTheme::plain());
        assert_eq!(text::plain(&rows[1..3]), "in 0 out 0\n$0.000");
    }
}
