//! Check 7: no Rust file over [`MAX_LINES`] lines but the listed ones,
//! each held at its length.

use std::path::Path;

use anyhow::Result;

/// The longest a Rust source file may be.
pub(super) const MAX_LINES: usize = 700;

/// Files longer than [`MAX_LINES`]: each may not grow past the length
/// given, and says why it is long.
pub(super) const LONG_FILES: &[(&str, usize, &str)] = &[];

/// Rust files over [`MAX_LINES`] lines that are not in `exceptions`,
/// exceptions that grew, and exceptions no longer needed (a file split
/// or gone leaves no stale licence behind).
pub(super) fn file_lengths(
    root: &Path,
    exceptions: &[(&str, usize, &str)],
    problems: &mut Vec<String>,
) -> Result<()> {
    for path in rust_files(&[root.join("crates"), root.join("tests"), root.join("xtask")])? {
        let lines = std::fs::read_to_string(&path)?.lines().count();
        let relative = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        let cap = exceptions
            .iter()
            .find(|(f, _, _)| *f == relative)
            .map_or(MAX_LINES, |(_, cap, _)| *cap);
        if lines > cap {
            problems.push(format!(
                "{relative} has {lines} lines, over {cap}: split it (one concern per module)"
            ));
        }
        if cap > MAX_LINES && lines <= MAX_LINES {
            problems.push(format!(
                "{relative} has {lines} lines: take it off the list of long files"
            ));
        }
    }
    for (file, _, _) in exceptions {
        if !root.join(file).is_file() {
            problems.push(format!(
                "{file} is on the list of long files but does not exist"
            ));
        }
    }
    Ok(())
}

/// The `.rs` files under `roots`, `target` directories left out (a
/// missing root is no file).
pub(super) fn rust_files(roots: &[std::path::PathBuf]) -> Result<Vec<std::path::PathBuf>> {
    let mut files = Vec::new();
    let mut stack = roots.to_vec();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
    }
    Ok(files)
}
