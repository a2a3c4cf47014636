//! ARCHITECTURE.md's table of source lines per crate stays true: every
//! workspace package has a row, and each row is within [`SLACK_PERCENT`]
//! of the lines its `src/` holds today (so the table is updated when a
//! crate grows or shrinks by more than that, not on every commit).

use std::path::Path;

use anyhow::Result;

use super::Package;

/// The heading of the section holding the table.
pub(super) const SECTION: &str = "## Source lines per crate";

/// How far a row may drift from the count before tidy asks for an update.
pub(super) const SLACK_PERCENT: usize = 10;

/// Lines of the `.rs` files under `dir/src`, tests included.
pub(super) fn source_lines(dir: &Path) -> Result<usize> {
    let mut total = 0;
    for path in super::lengths::rust_files(&[dir.join("src")])? {
        total += std::fs::read_to_string(&path)?.lines().count();
    }
    Ok(total)
}

/// Crates held under a number of non-test source lines, and why: a crate
/// that keeps growing is doing more than its one job.
pub(super) const BUDGETS: &[(&str, usize, &str)] = &[(
    "coding-agent",
    4_500,
    "the product's own jobs only; a new capability goes into a crate of its own",
)];

/// Lines of the `.rs` files under `dir/src` that are not tests: test files
/// left out, each file counted up to its `#[cfg(test)]`.
pub(super) fn non_test_lines(dir: &Path) -> Result<usize> {
    let mut total = 0;
    for path in super::lengths::rust_files(&[dir.join("src")])? {
        if super::is_test_file(&path) {
            continue;
        }
        total += std::fs::read_to_string(&path)?
            .lines()
            .take_while(|l| !l.trim_start().starts_with("#[cfg(test)]"))
            .count();
    }
    Ok(total)
}

/// Problems: a crate over its budget, a budget naming no package.
pub(super) fn budgets(
    packages: &[Package],
    budgets: &[(&str, usize, &str)],
    problems: &mut Vec<String>,
) -> Result<()> {
    for (name, budget, why) in budgets {
        let Some((_, dir, _)) = packages.iter().find(|(n, _, _)| n == name) else {
            problems.push(format!("{name} has a line budget but is no package"));
            continue;
        };
        let lines = non_test_lines(dir)?;
        if lines > *budget {
            problems.push(format!(
                "{name} has {lines} lines of non-test source, over its budget of {budget} ({why})"
            ));
        }
    }
    Ok(())
}

/// `(crate, lines)` of the table's rows (`` | `name` | 1234 | ... ``).
pub(super) fn rows(architecture: &str) -> Vec<(String, usize)> {
    let Some(start) = architecture.find(&format!("\n{SECTION}\n")) else {
        return Vec::new();
    };
    let body = &architecture[start + SECTION.len() + 2..];
    let end = body.find("\n## ").unwrap_or(body.len());
    body[..end]
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| {
            let (name, rest) = l.split_once('`')?;
            let count = rest.trim_start_matches([' ', '|']).split('|').next()?;
            let count = count.trim().replace(',', "").parse().ok()?;
            Some((name.to_string(), count))
        })
        .collect()
}

/// Problems: a package without a row, a row off by more than the slack.
pub(super) fn check(
    packages: &[Package],
    architecture: &str,
    problems: &mut Vec<String>,
) -> Result<()> {
    let rows = rows(architecture);
    for (name, dir, _) in packages {
        let actual = source_lines(dir)?;
        match rows.iter().find(|(n, _)| n == name) {
            None => problems.push(format!(
                "ARCHITECTURE.md's `{SECTION}` has no row for {name} ({actual} lines)"
            )),
            Some((_, listed)) if listed.abs_diff(actual) * 100 > listed * SLACK_PERCENT => {
                problems.push(format!(
                    "ARCHITECTURE.md's `{SECTION}` says {name} has {listed} lines; it has {actual}: update the row"
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}
