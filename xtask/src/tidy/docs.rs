//! Check 6: the paths the documentation names exist: in the Markdown
//! documents and in the rustdoc of every Rust file (`//!` and `///` lines).

use std::path::Path;

use anyhow::Result;

/// Repository paths named in ARCHITECTURE.md, README.md, docs/ and rustdoc
/// that do not exist from the root, from any crate's directory or from the
/// naming file's own directory.
pub(super) fn documented_paths_exist(root: &Path, problems: &mut Vec<String>) -> Result<()> {
    let mut documents = vec![root.join("ARCHITECTURE.md"), root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "md") {
            documents.push(path);
        }
    }
    let mut bases = vec![root.to_path_buf()];
    for entry in std::fs::read_dir(root.join("crates"))? {
        bases.push(entry?.path());
    }
    let rust = super::lengths::rust_files(&[
        root.join("crates"),
        root.join("tests"),
        root.join("xtask"),
        root.join("examples"),
    ])?;
    for document in documents.into_iter().chain(rust) {
        let text = std::fs::read_to_string(&document)?;
        let text = if document.extension().is_some_and(|x| x == "rs") {
            rustdoc_of(&text)
        } else {
            text
        };
        let base_of_document = document.parent().unwrap_or(root).to_path_buf();
        for path in named_paths(&text) {
            let found = bases
                .iter()
                .chain(std::iter::once(&base_of_document))
                .any(|b| b.join(&path).exists());
            if !found {
                problems.push(format!(
                    "{} names {path}, which does not exist",
                    document.strip_prefix(root).unwrap_or(&document).display()
                ));
            }
        }
    }
    Ok(())
}

/// The rustdoc lines of a Rust file (`//!`, `///`), joined: what a reader
/// of the generated documentation sees. Ordinary comments are left out, as
/// are test modules (from `#[cfg(test)]` on), whose fixtures name paths
/// that need not exist.
fn rustdoc_of(source: &str) -> String {
    let mut out = String::new();
    for line in source.lines() {
        let line = line.trim_start();
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        if let Some(doc) = line
            .strip_prefix("//!")
            .or_else(|| line.strip_prefix("///"))
        {
            out.push_str(doc);
            out.push('\n');
        }
    }
    out
}

/// Paths in backticks or link targets that start with a directory of the
/// repository (`crates/`, `docs/`, `xtask/`, `tests/`, `examples/`,
/// `.ci/`), without a `:line` or `#anchor` suffix.
pub(super) fn named_paths(text: &str) -> Vec<String> {
    const ROOTS: [&str; 6] = ["crates/", "docs/", "xtask/", "tests/", "examples/", ".ci/"];
    let mut out = Vec::new();
    let mut candidates = Vec::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            candidates.push(part.to_string());
        }
    }
    for part in text.split("](").skip(1) {
        if let Some(end) = part.find(')') {
            candidates.push(part[..end].to_string());
        }
    }
    for candidate in candidates {
        let path = candidate
            .split(['#', ' ', ':'])
            .next()
            .unwrap_or("")
            .trim_end_matches(['.', ',']);
        let plausible = ROOTS.iter().any(|r| path.starts_with(r))
            && !path.contains(['*', '<', '>', '{', '$', '?', '|'])
            && !path.ends_with('-');
        if plausible && !out.contains(&path.to_string()) {
            out.push(path.to_string());
        }
    }
    out
}
