//! Checks 10 and 11: how the tests are shaped.
//!
//! - No test asserts how long something took: on a busy machine any bound
//!   can fail. The one exception is a hang guard, a bound far above the
//!   expected time that only proves something did not wait for its full
//!   sleep, marked `// hang guard` on the same line.
//! - Each package builds at most one integration-test binary
//!   (`tests/it/main.rs` with a module per theme): every extra binary is
//!   another link of the whole dependency tree.

use std::path::Path;

use anyhow::Result;

/// The marker that lets an elapsed-time bound stand.
pub(super) const HANG_GUARD: &str = "// hang guard";

/// Lines that assert on elapsed time, the way
/// `grep -nE 'elapsed\(\)[^;]*<|assert!\([^;]*elapsed'` finds them, unless
/// marked as a hang guard. `files` are `(path shown, text)`.
pub(super) fn elapsed_assertions(files: &[(String, String)], problems: &mut Vec<String>) {
    for (path, text) in files {
        for (i, line) in text.lines().enumerate() {
            if line.contains(HANG_GUARD) || line.trim_start().starts_with("//") {
                continue;
            }
            if asserts_elapsed(line) {
                problems.push(format!(
                    "{path}:{} asserts elapsed time: assert an order, use paused time or a bounded wait; a bound at least 10x above the expected time that only proves no hang is marked `{HANG_GUARD}`",
                    i + 1
                ));
            }
        }
    }
}

/// `elapsed()` followed by `<` in the same statement, or an `assert!(`
/// whose statement mentions `elapsed`.
fn asserts_elapsed(line: &str) -> bool {
    let statement_after = |at: usize| line[at..].split(';').next().unwrap_or("");
    let compared = line
        .match_indices("elapsed()")
        .any(|(at, m)| statement_after(at + m.len()).contains('<'));
    let asserted = line
        .match_indices("assert!(")
        .any(|(at, m)| statement_after(at + m.len()).contains("elapsed"));
    compared || asserted
}

/// The Rust files under `roots` as `(path relative to root, text)`.
pub(super) fn read_rust_files(root: &Path, roots: &[&str]) -> Result<Vec<(String, String)>> {
    let dirs: Vec<_> = roots.iter().map(|r| root.join(r)).collect();
    let mut files = Vec::new();
    for path in super::lengths::rust_files(&dirs)? {
        let relative = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        files.push((relative, std::fs::read_to_string(&path)?));
    }
    files.sort();
    Ok(files)
}

/// Packages with more than one integration-test target. `targets` are
/// `(package, test target names)` from `cargo metadata`.
pub(super) fn one_test_binary(targets: &[(String, Vec<String>)], problems: &mut Vec<String>) {
    for (package, tests) in targets {
        if tests.len() > 1 {
            problems.push(format!(
                "{package} builds {} integration-test binaries ({}): make them modules of one (`tests/it/main.rs`)",
                tests.len(),
                tests.join(", ")
            ));
        }
    }
}
