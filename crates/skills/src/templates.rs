//! Prompt templates: `*.md` files that become `/name` commands.

use std::path::{Path, PathBuf};

use crate::frontmatter::{parse_frontmatter, read_bounded};
use crate::{Diagnostic, Origin};

/// One prompt template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTemplate {
    /// The command name: the file name without `.md`.
    pub name: String,
    /// The frontmatter `description`, else the first non-empty body line (cut
    /// to 60 characters and `...`).
    pub description: String,
    /// The frontmatter `argument-hint` (`<required> [optional]`).
    pub argument_hint: Option<String>,
    /// The body after the frontmatter, trimmed.
    pub content: String,
    /// The file.
    pub file_path: PathBuf,
    /// Where it came from.
    pub origin: Origin,
}

/// Loads one template; a read or frontmatter error is a warning naming the file.
pub fn load_template_file(
    path: &Path,
    origin: Origin,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<PromptTemplate> {
    let fm = match read_bounded(path).and_then(|text| parse_frontmatter(&text)) {
        Ok(fm) => fm,
        Err(e) => {
            diagnostics.push(Diagnostic::warning(path, format!("skipped: {e}")));
            return None;
        }
    };
    let file_name = path.file_name()?.to_string_lossy();
    let name = file_name
        .strip_suffix(".md")
        .unwrap_or(&file_name)
        .to_string();
    let mut description = fm.string("description").unwrap_or("").to_string();
    if description.is_empty()
        && let Some(line) = fm.body.split('\n').find(|l| !l.trim().is_empty())
    {
        description = line.chars().take(60).collect();
        if line.chars().count() > 60 {
            description.push_str("...");
        }
    }
    Some(PromptTemplate {
        name,
        description,
        argument_hint: fm.string("argument-hint").map(String::from),
        content: fm.body.trim().to_string(),
        file_path: path.to_path_buf(),
        origin,
    })
}

/// The `*.md` files directly in `dir` (symlinks followed), sorted by name.
pub(crate) fn template_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_falls_back_to_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("review.md");
        let long = "x".repeat(70);
        std::fs::write(&path, format!("\n\n{long}\nmore")).unwrap();
        let mut d = Vec::new();
        let t = load_template_file(&path, Origin::User, &mut d).unwrap();
        assert_eq!(t.name, "review");
        assert_eq!(t.description, format!("{}...", "x".repeat(60)));
        std::fs::write(
            &path,
            "---\ndescription: Review\nargument-hint: \"<file>\"\n---\nBody $1\n",
        )
        .unwrap();
        let t = load_template_file(&path, Origin::User, &mut d).unwrap();
        assert_eq!(t.description, "Review");
        assert_eq!(t.argument_hint.as_deref(), Some("<file>"));
        assert_eq!(t.content, "Body $1");
        assert!(d.is_empty());
    }

    #[test]
    fn bad_frontmatter_is_a_warning_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.md");
        std::fs::write(&path, "---\ndescription: a: b\n---\nx").unwrap();
        let mut d = Vec::new();
        assert!(load_template_file(&path, Origin::User, &mut d).is_none());
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].path, path);
    }
}
