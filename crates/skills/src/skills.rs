//! Skills: loading one `SKILL.md`, walking a root under bounds, and the
//! `/skill:name` user message.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::frontmatter::{parse_frontmatter, read_bounded};
use crate::{Diagnostic, Error, Origin};

/// Deepest directory level below a root that is searched.
pub const MAX_DEPTH: usize = 6;
/// Directories visited per root before the walk stops with a warning.
pub const MAX_DIRS_PER_ROOT: usize = 2_000;
const MAX_NAME_CHARS: usize = 64;
const MAX_DESCRIPTION_CHARS: usize = 1024;

/// One loaded skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name: the frontmatter `name`, else the parent directory's name.
    pub name: String,
    /// Its description (required).
    pub description: String,
    /// The Markdown file, absolute.
    pub file_path: PathBuf,
    /// The directory references resolve against (the file's parent).
    pub base_dir: PathBuf,
    /// `disable-model-invocation: true`: usable as `/skill:name`, not listed.
    pub disable_model_invocation: bool,
    /// `allowed-tools`, parsed (space-separated string or list). Informational
    /// only: it never grants a permission.
    pub allowed_tools: Vec<String>,
    /// Where it came from.
    pub origin: Origin,
    /// The body as read when the skill was loaded: kept for a project's
    /// skills, whose content trust pinned at start, so that a file changed
    /// during the session (by a command the model ran) is not what
    /// `/skill:` sends. `None`: the file is read at use, as Pi does for the
    /// user's own skills.
    pub body: Option<String>,
}

/// Whether `name` follows the specification; each broken rule is a message.
fn name_problems(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let len = name.chars().count();
    if len > MAX_NAME_CHARS {
        out.push(format!("name exceeds {MAX_NAME_CHARS} characters ({len})"));
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        out.push(
            "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)".into(),
        );
    }
    if name.starts_with('-') || name.ends_with('-') {
        out.push("name must not start or end with a hyphen".into());
    }
    if name.contains("--") {
        out.push("name must not contain consecutive hyphens".into());
    }
    out
}

/// Loads one skill file. `declared` is true for a `SKILL.md`; any other
/// Markdown file without a description is ignored silently (a README is not a
/// broken skill). Problems become diagnostics naming the file.
pub fn load_skill_file(
    path: &Path,
    origin: Origin,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Skill> {
    let declared = path.file_name().is_some_and(|n| n == "SKILL.md");
    let warn = |diagnostics: &mut Vec<Diagnostic>, message: String| {
        diagnostics.push(Diagnostic::warning(path, message));
    };
    let parsed = read_bounded(path).and_then(|text| parse_frontmatter(&text));
    let body = match &parsed {
        Ok(fm) if origin == Origin::Project => Some(fm.body.trim().to_string()),
        _ => None,
    };
    let fm = match parsed {
        Ok(fm) => fm,
        Err(e) => {
            if declared {
                warn(diagnostics, format!("skipped: {e}"));
            }
            return None;
        }
    };
    let description = fm.string("description").unwrap_or("").to_string();
    if description.trim().is_empty() {
        if declared {
            warn(diagnostics, "skipped: description is required".into());
        }
        return None;
    }
    let len = description.chars().count();
    if len > MAX_DESCRIPTION_CHARS {
        warn(
            diagnostics,
            format!("description exceeds {MAX_DESCRIPTION_CHARS} characters ({len})"),
        );
    }
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir_name = base_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match fm.string("name") {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => dir_name,
    };
    for problem in name_problems(&name) {
        warn(diagnostics, problem);
    }
    let allowed_tools = match fm.fields.get("allowed-tools") {
        Some(serde_json::Value::String(s)) => s.split_whitespace().map(String::from).collect(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    };
    Some(Skill {
        name,
        description,
        file_path: path.to_path_buf(),
        base_dir,
        disable_model_invocation: fm.fields.get("disable-model-invocation")
            == Some(&serde_json::Value::Bool(true)),
        allowed_tools,
        origin,
        body,
    })
}

/// The skill files under `root`, in a stable order, walked as Pi does and
/// bounded: a directory holding `SKILL.md` is a skill and is not entered
/// further; dot entries and `node_modules` are skipped; `.gitignore`,
/// `.ignore` and `.fdignore` are honoured; symlinks are followed (loops are
/// cut); at most [`MAX_DEPTH`] levels and [`MAX_DIRS_PER_ROOT`] directories.
/// Loose `*.md` files directly in `root` count only when `root_markdown`.
pub fn skill_files(
    root: &Path,
    root_markdown: bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<PathBuf> {
    let dirs = Arc::new(AtomicUsize::new(0));
    let truncated = Arc::new(AtomicBool::new(false));
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .max_depth(Some(MAX_DEPTH))
        .follow_links(true)
        .hidden(true)
        .parents(false)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .add_custom_ignore_filename(".fdignore")
        .sort_by_file_name(|a, b| a.cmp(b));
    let (d, t) = (Arc::clone(&dirs), Arc::clone(&truncated));
    builder.filter_entry(move |entry| {
        if entry.file_name() == "node_modules" {
            return false;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if !is_dir {
            return true;
        }
        // Inside a skill (its parent holds SKILL.md): not a place for more skills.
        if entry.depth() > 0
            && entry
                .path()
                .parent()
                .is_some_and(|p| p.join("SKILL.md").is_file())
        {
            return false;
        }
        if d.fetch_add(1, Ordering::Relaxed) >= MAX_DIRS_PER_ROOT {
            t.store(true, Ordering::Relaxed);
            return false;
        }
        true
    });
    let mut files = Vec::new();
    for entry in builder.build() {
        let Ok(entry) = entry else { continue };
        if entry.file_type().is_none_or(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        // A SKILL.md; or another Markdown file outside a skill, below the
        // root (or at the root of a `.pi`-style root).
        let loose = || {
            name.ends_with(".md")
                && (entry.depth() > 1 || root_markdown)
                && !path.parent().is_some_and(|p| p.join("SKILL.md").exists())
        };
        if name == "SKILL.md" || loose() {
            files.push(path.to_path_buf());
        }
    }
    if truncated.load(Ordering::Relaxed) {
        diagnostics.push(Diagnostic::warning(
            root,
            format!(
                "stopped after {MAX_DIRS_PER_ROOT} directories; skills further down are not loaded"
            ),
        ));
    }
    files
}

/// Adds skills to `out`, first name wins; a clash warns naming both files and
/// the same file reached twice (symlinks) is dropped silently.
pub(crate) fn add_skills(
    out: &mut Vec<Skill>,
    seen_paths: &mut HashSet<PathBuf>,
    files: Vec<PathBuf>,
    origin: Origin,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for file in files {
        let canonical = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
        if !seen_paths.insert(canonical) {
            continue;
        }
        let Some(skill) = load_skill_file(&file, origin, diagnostics) else {
            continue;
        };
        if let Some(first) = out.iter().find(|s| s.name == skill.name) {
            diagnostics.push(Diagnostic::warning(
                &file,
                format!(
                    "skill name \"{}\" collides with {}; that one is used",
                    skill.name,
                    first.file_path.display()
                ),
            ));
            continue;
        }
        out.push(skill);
    }
}

/// The user message for `/skill:name args`, as Pi writes it: the file is read
/// again, frontmatter stripped, the body trimmed.
///
/// ```no_run
/// # use agent_skills::{Skill, Origin, skill_message};
/// # fn f(skill: &Skill) -> Result<(), agent_skills::Error> {
/// let text = skill_message(skill, "fix the tests")?;
/// assert!(text.starts_with("<skill name="));
/// # Ok(()) }
/// ```
pub fn skill_message(skill: &Skill, args: &str) -> Result<String, Error> {
    let body = match &skill.body {
        Some(body) => body.clone(),
        None => {
            let text = read_bounded(&skill.file_path)?;
            parse_frontmatter(&text)?.body.trim().to_string()
        }
    };
    let block = format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{}\n</skill>",
        skill.name,
        skill.file_path.display(),
        skill.base_dir.display(),
        body
    );
    Ok(if args.is_empty() {
        block
    } else {
        format!("{block}\n\n{args}")
    })
}

/// The skill block ([`skill_message`]) a user message starts with, without
/// the arguments after it; `None` when the text is not one.
///
/// ```
/// let text = "<skill name=\"x\" location=\"/s/x/SKILL.md\">\nReferences are relative to /s/x.\n\nBody\n</skill>\n\nargs";
/// assert!(agent_skills::skill_block_of(text).unwrap().ends_with("Body\n</skill>"));
/// assert!(agent_skills::skill_block_of("hello").is_none());
/// ```
pub fn skill_block_of(text: &str) -> Option<&str> {
    if !text.starts_with("<skill name=\"") {
        return None;
    }
    let end = text.rfind("\n</skill>")? + "\n</skill>".len();
    Some(&text[..end])
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
