//! The README's dependency notes name every crate the workspace depends on
//! directly, with its licence and what it is for; a dependency added
//! without a note, or a note left after its dependency went, fails.

use std::collections::BTreeSet;

use super::Package;

/// The heading of the README's section holding the table.
pub(super) const SECTION: &str = "## Dependencies";

/// Direct dependencies of the workspace's packages that are not packages
/// of the workspace.
pub(super) fn external_dependencies(packages: &[Package]) -> BTreeSet<String> {
    let members: BTreeSet<&str> = packages.iter().map(|(n, _, _)| n.as_str()).collect();
    packages
        .iter()
        .flat_map(|(_, _, deps)| deps.iter().map(|(d, _)| d.as_str()))
        .filter(|d| !members.contains(d))
        .map(str::to_string)
        .collect()
}

/// The crate names of the table's rows (`` | `name` | ... ``) in the
/// README's [`SECTION`].
pub(super) fn noted(readme: &str) -> BTreeSet<String> {
    let Some(start) = readme.find(&format!("\n{SECTION}\n")) else {
        return BTreeSet::new();
    };
    let body = &readme[start + SECTION.len() + 2..];
    let end = body.find("\n## ").unwrap_or(body.len());
    body[..end]
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(name, _)| name.to_string())
        .collect()
}

/// Problems: a dependency without a note, a note without a dependency.
pub(super) fn dependency_notes(packages: &[Package], readme: &str, problems: &mut Vec<String>) {
    let used = external_dependencies(packages);
    let noted = noted(readme);
    for missing in used.difference(&noted) {
        problems.push(format!(
            "{missing} is a dependency but has no row in README.md's `{SECTION}` (its licence and what it is for)"
        ));
    }
    for stale in noted.difference(&used) {
        problems.push(format!(
            "README.md's `{SECTION}` has a row for {stale}, which no crate depends on any more"
        ));
    }
}
