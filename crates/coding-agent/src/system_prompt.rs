//! System prompt assembly from the active tools, guidelines and project context.

use std::path::{Path, PathBuf};

/// Our preamble (replaced entirely by a custom prompt).
const PREAMBLE: &str = "You are an expert coding assistant working inside coding-agent, a tool-driven agent harness. You help users by reading files, running commands, editing code and writing new files.";

/// Said after the tool list, since extensions may add tools later.
const CUSTOM_TOOLS_NOTE: &str = "Depending on the project, further custom tools may be available besides the ones listed above.";

/// The heuristic guideline when bash is the only way to explore files.
pub const BASH_EXPLORATION_GUIDELINE: &str = "Use bash for file operations such as ls, rg and find";

/// Guidelines every prompt ends with.
pub const CLOSING_GUIDELINES: [&str; 2] = [
    "Keep your answers short and to the point",
    "Name file paths clearly whenever you work with files",
];

/// A project instruction file (AGENTS.md or CLAUDE.md) and its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// Where it was found.
    pub path: PathBuf,
    /// Its text.
    pub content: String,
}

/// Everything the prompt is built from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemPromptOptions {
    /// Active tool names, in order.
    pub selected_tools: Vec<String>,
    /// `(name, snippet)` for the active tools that have one.
    pub tool_snippets: Vec<(String, String)>,
    /// The active tools' guidelines, flattened in active order.
    pub tool_guidelines: Vec<String>,
    /// Extra guidelines from the caller.
    pub extra_guidelines: Vec<String>,
    /// Replaces preamble, tools and guidelines when set.
    pub custom_prompt: Option<String>,
    /// Appended after the main text (joined by blank lines).
    pub append_prompts: Vec<String>,
    /// Project instruction files, outermost first.
    pub context_files: Vec<ContextFile>,
    /// The skills block ([`agent_skills::skills_prompt`]), placed after the
    /// project context; empty for none.
    pub skills_block: String,
    /// Date line value (`YYYY-MM-DD`); today when `None`.
    pub date: Option<String>,
    /// Working directory line.
    pub cwd: PathBuf,
}

/// Collapses line breaks and runs of whitespace; `None` when nothing is left.
fn normalize_snippet(snippet: &str) -> Option<String> {
    let joined = snippet.split_whitespace().collect::<Vec<_>>().join(" ");
    (!joined.is_empty()).then_some(joined)
}

/// The guideline list: bash heuristic, tools' guidelines, extras, closing ones;
/// trimmed, empty ones dropped, first occurrence wins.
pub fn build_guidelines(options: &SystemPromptOptions) -> Vec<String> {
    let has = |name: &str| options.selected_tools.iter().any(|t| t == name);
    let mut raw: Vec<String> = Vec::new();
    if has("bash") && !has("grep") && !has("find") && !has("ls") {
        raw.push(BASH_EXPLORATION_GUIDELINE.to_string());
    }
    raw.extend(options.tool_guidelines.iter().cloned());
    raw.extend(options.extra_guidelines.iter().cloned());
    raw.extend(CLOSING_GUIDELINES.iter().map(|s| s.to_string()));
    let mut out: Vec<String> = Vec::new();
    for g in raw {
        let g = g.trim().to_string();
        if !g.is_empty() && !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

/// Builds the system prompt.
///
/// Layout: preamble; `Available tools:` with one `- name: snippet` line per
/// active tool that has a snippet (`(none)` when none); a note on custom tools;
/// `Guidelines:` as `- text` lines; then the appended prompts, the project
/// context, `Current date: ...` and `Current working directory: ...`. A custom
/// prompt replaces everything before the appended prompts.
///
/// ```
/// use coding_agent::{SystemPromptOptions, build_system_prompt};
/// let prompt = build_system_prompt(&SystemPromptOptions {
///     selected_tools: vec!["read".into(), "bash".into()],
///     tool_snippets: vec![("read".into(), "Read file contents".into())],
///     date: Some("2026-01-01".into()),
///     cwd: "/work".into(),
///     ..Default::default()
/// });
/// assert!(prompt.contains("Available tools:\n- read: Read file contents\n"));
/// assert!(prompt.ends_with("Current date: 2026-01-01\nCurrent working directory: /work"));
/// ```
pub fn build_system_prompt(options: &SystemPromptOptions) -> String {
    let mut prompt = match &options.custom_prompt {
        Some(custom) => custom.clone(),
        None => {
            let snippets: Vec<String> = options
                .selected_tools
                .iter()
                .filter_map(|name| {
                    options
                        .tool_snippets
                        .iter()
                        .find(|(n, _)| n == name)
                        .and_then(|(_, s)| normalize_snippet(s))
                        .map(|s| format!("- {name}: {s}"))
                })
                .collect();
            let tools = if snippets.is_empty() {
                "(none)".to_string()
            } else {
                snippets.join("\n")
            };
            let guidelines = build_guidelines(options)
                .iter()
                .map(|g| format!("- {g}"))
                .collect::<Vec<_>>()
                .join("\n");
            format!(
                "{PREAMBLE}\n\nAvailable tools:\n{tools}\n\n{CUSTOM_TOOLS_NOTE}\n\nGuidelines:\n{guidelines}"
            )
        }
    };
    let appended: Vec<&str> = options
        .append_prompts
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect();
    if !appended.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(&appended.join("\n\n"));
    }
    if !options.context_files.is_empty() {
        prompt.push_str("\n\n<project_context>\n");
        for file in &options.context_files {
            prompt.push_str(&format!(
                "<project_instructions path=\"{}\">\n{}\n</project_instructions>\n",
                file.path.display(),
                file.content.trim_end()
            ));
        }
        prompt.push_str("</project_context>");
    }
    if !options.skills_block.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(&options.skills_block);
    }
    let date = options.date.clone().unwrap_or_else(today);
    prompt.push_str(&format!("\nCurrent date: {date}"));
    prompt.push_str(&format!(
        "\nCurrent working directory: {}",
        options.cwd.display().to_string().replace('\\', "/")
    ));
    prompt
}

/// Finds project instruction files: the agent directory's `AGENTS.md`, then
/// for each project directory from the outermost down to `cwd` its
/// `AGENTS.md`, or `CLAUDE.md` when there is no `AGENTS.md`.
///
/// The project is `cwd` and its ancestors up to the repository root (the
/// nearest directory holding `.git`) or the home directory, whichever comes
/// first; without either, `cwd` alone. Directories above (say `/tmp`, or `/`)
/// are never read. A file is skipped, and the skip logged at `info` level
/// (`--verbose` shows it), when it is not owned by the current user or root,
/// when it or its directory is writable by everyone, or when it is not a
/// regular file of at most [`MAX_PROJECT_FILE_BYTES`](agent_trust::MAX_PROJECT_FILE_BYTES).
pub fn load_context_files(cwd: &Path, agent_dir: Option<&Path>) -> Vec<ContextFile> {
    let mut files = Vec::new();
    let read = |path: PathBuf| -> Option<ContextFile> {
        match trusted_context_file(&path) {
            Ok(Some(content)) => Some(ContextFile { path, content }),
            Ok(None) => None,
            Err(reason) => {
                tracing::info!(path = %path.display(), %reason, "skipping context file");
                None
            }
        }
    };
    if let Some(dir) = agent_dir
        && let Some(f) = read(dir.join("AGENTS.md"))
    {
        files.push(f);
    }
    let mut dirs = project_dirs(cwd);
    dirs.reverse();
    // A link may lead anywhere inside the repository; without one (the
    // walk went up to home), only inside the working directory.
    let top = dirs
        .first()
        .filter(|d| d.join(".git").exists())
        .map(|d| d.to_path_buf())
        .or_else(|| Some(cwd.to_path_buf()));
    let read_in_project = |path: PathBuf| -> Option<ContextFile> {
        if let Some(top) = &top
            && let Err(reason) = link_stays_in_project(&path, top)
        {
            tracing::info!(path = %path.display(), %reason, "skipping context file");
            return None;
        }
        read(path)
    };
    for dir in dirs {
        let found = read_in_project(dir.join("AGENTS.md"))
            .or_else(|| read_in_project(dir.join("CLAUDE.md")));
        if let Some(f) = found
            && !files.iter().any(|e: &ContextFile| e.path == f.path)
        {
            files.push(f);
        }
    }
    files
}

/// The user's own `AGENTS.md` in the agent directory, if there is one we
/// may trust.
pub fn agent_dir_context_file(agent_dir: &Path) -> Option<ContextFile> {
    let path = agent_dir.join("AGENTS.md");
    match trusted_context_file(&path) {
        Ok(Some(content)) => Some(ContextFile { path, content }),
        Ok(None) => None,
        Err(reason) => {
            tracing::info!(path = %path.display(), %reason, "skipping context file");
            None
        }
    }
}

/// The context files of a working directory on another file system (a
/// remote machine), read through `files`: `AGENTS.md` (or `CLAUDE.md`) in
/// `cwd` and its ancestors up to the repository root (a directory holding
/// `.git`), farthest first; only `cwd`'s own outside a repository. A file
/// that resolves (through links) outside that root, to a non-Markdown file
/// or a hidden one, or that is larger than the project-file limit, is
/// skipped.
pub fn context_files_through(files: &dyn agent_tool::FileOps, cwd: &Path) -> Vec<ContextFile> {
    let ancestors: Vec<&Path> = cwd.ancestors().collect();
    let top_index = ancestors.iter().position(|d| files.exists(&d.join(".git")));
    let dirs: Vec<&Path> = match top_index {
        Some(i) => ancestors[..=i].iter().rev().copied().collect(),
        None => vec![cwd],
    };
    let top = files.real_path(dirs[0]);
    let read = |path: PathBuf| -> Option<ContextFile> {
        let info = files.metadata(&path).ok()?;
        if !info.is_file || info.len > agent_trust::MAX_PROJECT_FILE_BYTES {
            return None;
        }
        let real = files.real_path(&path);
        let markdown = real
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"));
        let inside = real.strip_prefix(&top).is_ok_and(|rest| {
            !rest.components().any(|c| {
                let name = c.as_os_str().to_string_lossy();
                name.starts_with('.') && name != ".github"
            })
        });
        if !markdown || !inside {
            tracing::info!(path = %path.display(), "skipping a context file that leads elsewhere");
            return None;
        }
        let content = String::from_utf8(files.read_file(&path).ok()?).ok()?;
        Some(ContextFile { path, content })
    };
    dirs.into_iter()
        .filter_map(|dir| read(dir.join("AGENTS.md")).or_else(|| read(dir.join("CLAUDE.md"))))
        .collect()
}

/// A project's context file that is a symbolic link must name a Markdown
/// file inside the project (`CLAUDE.md -> AGENTS.md`); a link to
/// `~/.ssh/id_rsa` or `/etc/shadow` would put a secret into the prompt.
fn link_stays_in_project(path: &Path, top: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {}
        _ => return Ok(()),
    }
    let target = std::fs::canonicalize(path).map_err(|e| e.to_string())?;
    let top = std::fs::canonicalize(top).map_err(|e| e.to_string())?;
    let markdown = target
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md"));
    let hidden = target
        .strip_prefix(&top)
        .map(|rest| {
            rest.components().any(|c| {
                let name = c.as_os_str().to_string_lossy();
                // `.github/copilot-instructions.md` is a common target.
                name.starts_with('.') && name != ".github"
            })
        })
        .unwrap_or(true);
    if !markdown || hidden {
        return Err(format!(
            "a link to {}, which is not a Markdown file in the project",
            target.display()
        ));
    }
    Ok(())
}

/// `cwd` and its ancestors up to the repository root or home (innermost first).
fn project_dirs(cwd: &Path) -> Vec<&Path> {
    let home = std::env::home_dir();
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir);
        if dir.join(".git").exists() || home.as_deref() == Some(dir) {
            return dirs;
        }
    }
    // Neither a repository nor home above: only the working directory.
    dirs.truncate(1);
    dirs
}

/// The content of a context file we may trust, `Ok(None)` when absent, or
/// why it is skipped.
fn trusted_context_file(path: &Path) -> Result<Option<String>, String> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(format!("owned by uid {}, not by you or root", meta.uid()));
    }
    if meta.mode() & 0o002 != 0 {
        return Err("writable by everyone".to_string());
    }
    if let Some(dir) = path.parent()
        && let Ok(d) = std::fs::metadata(dir)
        && d.mode() & 0o002 != 0
    {
        return Err(format!(
            "its directory {} is writable by everyone",
            dir.display()
        ));
    }
    agent_tool::regular_file::read_regular_file(path, agent_trust::MAX_PROJECT_FILE_BYTES)
        .map_err(|e| e.to_string())
}

/// Today's date as `YYYY-MM-DD` (UTC).
pub fn today() -> String {
    utc_date(jiff::Timestamp::now())
}

/// The `YYYY-MM-DD` of an instant in UTC.
fn utc_date(timestamp: jiff::Timestamp) -> String {
    jiff::tz::Offset::UTC
        .to_datetime(timestamp)
        .date()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A context file linked out of the project, or to something that is
    /// not Markdown, is not read; a link to another Markdown file of the
    /// project is.
    #[test]
    fn linked_context_files_stay_in_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let project = base.join("p");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(project.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(base.join("home/.ssh")).unwrap();
        std::fs::write(base.join("home/.ssh/id_rsa"), "PRIVATE KEY").unwrap();
        std::fs::create_dir_all(project.join(".secret")).unwrap();
        std::fs::write(project.join(".secret/notes.md"), "HIDDEN NOTES").unwrap();
        std::os::unix::fs::symlink(base.join("home/.ssh/id_rsa"), project.join("AGENTS.md"))
            .unwrap();
        std::os::unix::fs::symlink("/etc/passwd", project.join("sub/AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(
            "../../.secret/notes.md",
            project.join("sub/deeper/AGENTS.md"),
        )
        .unwrap();
        let texts: Vec<String> = load_context_files(&project.join("sub/deeper"), None)
            .into_iter()
            .map(|f| f.content)
            .collect();
        assert!(texts.is_empty(), "{texts:?}");
        // CLAUDE.md -> AGENTS.md inside the project is read.
        std::fs::remove_file(project.join("AGENTS.md")).unwrap();
        std::fs::write(project.join("GUIDE.md"), "project rules").unwrap();
        std::os::unix::fs::symlink("GUIDE.md", project.join("CLAUDE.md")).unwrap();
        let texts: Vec<String> = load_context_files(&project, None)
            .into_iter()
            .map(|f| f.content)
            .collect();
        assert_eq!(texts, ["project rules"]);
        // Without a repository, a link may not leave the working directory
        // (the walk up to home would otherwise take in the whole home).
        let home_like = base.join("nogit");
        std::fs::create_dir_all(home_like.join("dl/x")).unwrap();
        std::fs::create_dir_all(home_like.join("vault")).unwrap();
        std::fs::write(home_like.join("vault/passwords.md"), "hunter2").unwrap();
        std::os::unix::fs::symlink("../../vault/passwords.md", home_like.join("dl/x/AGENTS.md"))
            .unwrap();
        let texts: Vec<String> = load_context_files(&home_like.join("dl/x"), None)
            .into_iter()
            .map(|f| f.content)
            .collect();
        assert!(texts.is_empty(), "{texts:?}");
    }

    #[test]
    fn dates_are_utc_days() {
        let at = |secs| utc_date(jiff::Timestamp::from_second(secs).unwrap());
        assert_eq!(at(0), "1970-01-01");
        assert_eq!(at(1_767_225_599), "2025-12-31");
        assert_eq!(at(1_767_225_600), "2026-01-01");
        assert_eq!(at(951_782_400), "2000-02-29");
        assert_eq!(at(-1), "1969-12-31");
        let before = utc_date(jiff::Timestamp::now());
        let date = today();
        let after = utc_date(jiff::Timestamp::now());
        assert!(date == before || date == after, "{date}");
    }
}
