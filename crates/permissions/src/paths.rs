//! Path rules judged on the file a tool opens, not on the text of its
//! argument.
//!
//! A path argument a tool declares ([`PathArgument`]) goes through the
//! resolver the tools use ([`agent_tool::path`]): `@`, `~`, odd spaces, `file://` URLs with `%XX`
//! escapes, the spelling variants `read` falls back to. Each of those paths
//! and the file it leads to ([`real_path`]: symlinks followed, dangling ones
//! too) is matched; deny and ask rules hold if any of them matches, allow
//! rules only if all of them do. Deny and ask globs ignore case and Unicode
//! normalisation form, and a glob's literal directory prefix is also tried
//! with its symlinks resolved, so `/tmp/x/.env` meets a rule written for the
//! directory's other name.
//!
//! Listings and searches open files no argument names: a [`PathRuleFilter`]
//! carries the Read rules to the file operations that walk for grep, find
//! and ls, which hide what it covers.

use std::path::Path;

use serde_json::Value;

use super::rule::{PermissionRule, Specifier};
use super::{Permission, PermissionDecision, PermissionRules, ToolShape};
use agent_tool::path::candidate_paths;
use agent_tool::path_filter::PathRuleFilter;
use agent_tool::{PathAccess, PathArgument};

/// Whether `rule` is a Read rule: its deny and ask forms also keep edit
/// and write away from the file (edit shows the file's lines, and a file
/// the agent may not read is not one it should replace).
fn is_read_rule(rule: &PermissionRule) -> bool {
    rule.tool.eq_ignore_ascii_case("read")
}

impl PermissionRule {
    /// Whether the rule covers `path` (a rule without specifier covers all).
    fn covers_path(&self, path: &Path, fold: bool) -> bool {
        match &self.specifier {
            None => true,
            Some(Specifier::Path(g)) => g.matches(path, fold),
            _ => false,
        }
    }
}

/// Whether `rule` judges `argument` of `tool` in a list of `permission`:
/// a rule naming the tool judges every path argument; a `Read` rule the
/// arguments read (and, denying or asking, those written too); an `Edit`
/// rule the arguments written.
fn judges(
    rule: &PermissionRule,
    tool: &ToolShape,
    argument: &PathArgument,
    permission: Permission,
) -> bool {
    if rule.names_by_name(&tool.name) {
        return true;
    }
    match super::rule::rule_kind(&rule.tool) {
        super::rule::RuleKind::Read => {
            argument.access == PathAccess::Read || permission != Permission::Allow
        }
        super::rule::RuleKind::Edit => argument.access == PathAccess::Write,
        _ => false,
    }
}

/// The decision for a call of a tool that declares path arguments, or
/// `None` for a tool that declares none.
pub(super) fn decide(
    rules: &PermissionRules,
    tool: &ToolShape,
    args: &Value,
    cwd: &Path,
    default: &PermissionDecision,
) -> Option<PermissionDecision> {
    if tool.paths.is_empty() {
        return None;
    }
    // Every path each declared argument may open, with its argument.
    let candidates: Vec<(&PathArgument, std::path::PathBuf)> = tool
        .paths
        .iter()
        .flat_map(|a| {
            candidate_paths(a.value(args), cwd)
                .into_iter()
                .map(move |p| (a, p))
        })
        .collect();
    for (list, permission) in [
        (&rules.deny, Permission::Deny),
        (&rules.ask, Permission::Ask),
    ] {
        for rule in list.iter() {
            if let Some((_, hit)) = candidates
                .iter()
                .find(|(a, c)| judges(rule, tool, a, permission) && rule.covers_path(c, true))
            {
                return Some(PermissionDecision::by(
                    permission,
                    rule,
                    Some(hit.display().to_string()),
                ));
            }
        }
    }
    // Allowed only if every path the arguments may open is allowed.
    let mut first = None;
    for (argument, candidate) in &candidates {
        match rules.allow.iter().find(|r| {
            judges(r, tool, argument, Permission::Allow) && r.covers_path(candidate, false)
        }) {
            Some(rule) => {
                first.get_or_insert(rule);
            }
            None => return Some(default.clone()),
        }
    }
    Some(match first {
        Some(rule) => PermissionDecision::by(
            Permission::Allow,
            rule,
            candidates.first().map(|(_, c)| c.display().to_string()),
        ),
        None => default.clone(),
    })
}

impl PermissionRules {
    /// The Read deny and ask rules with paths, for the file operations
    /// behind listings and searches (see [`PathRuleFilter`]).
    pub fn read_filter(&self) -> PathRuleFilter {
        let paths = |list: &[PermissionRule]| {
            list.iter()
                .filter(|r| is_read_rule(r))
                .filter_map(|r| match &r.specifier {
                    Some(Specifier::Path(g)) => Some((r.text.clone(), g.clone())),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        PathRuleFilter::new(paths(&self.deny), paths(&self.ask))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decide_in(dir: &Path, allow: &[&str], deny: &[&str], tool: &str, path: &str) -> Permission {
        let rules = PermissionRules::from_lists(allow, &[], deny, dir).unwrap();
        rules
            .decide(&crate::shape(tool), &json!({"path": path}), dir)
            .permission
    }

    #[test]
    fn spellings_and_links_meet_the_rule() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(base.join(".env"), "SECRET=1").unwrap();
        std::fs::write(base.join("my secret.txt"), "x").unwrap();
        std::os::unix::fs::symlink(".env", base.join("envlink")).unwrap();
        std::os::unix::fs::symlink(".", base.join("self")).unwrap();
        let deny = ["Read(./.env)", "Read(./my secret.txt)"];
        let b = base.display();
        for path in [
            ".env".to_string(),
            format!("file://localhost{b}/.env"),
            format!("file://{b}/%2Eenv"),
            format!("file://{b}/%2eENV"),
            "@.env".into(),
            "my\u{00A0}secret.txt".into(),
            "my\u{2009}secret.txt".into(),
            "envlink".into(),
            "self/.env".into(),
            "self/self/envlink".into(),
            "sub/../.env".into(),
            ".ENV".into(),
        ] {
            for tool in ["read", "grep", "ls", "edit", "write"] {
                assert_eq!(
                    decide_in(&base, &[], &deny, tool, &path),
                    Permission::Deny,
                    "{tool} {path:?}"
                );
            }
        }
        assert_eq!(
            decide_in(&base, &[], &deny, "read", "README.md"),
            Permission::Allow
        );
    }

    /// Claude Code's grammar: a name without a slash matches at any depth;
    /// `/x` (relative to the project there, absolute here) is denied in
    /// both readings; `//x` is absolute.
    #[test]
    fn rules_are_anchored_as_in_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(base.join("secrets")).unwrap();
        for (rule, path) in [
            ("Read(.env)", "sub/.env"),
            ("Read(.env)", ".env"),
            ("Read(*.env)", "sub/deeper/prod.env"),
            ("Read(a.txt)", "secrets/a.txt"),
            ("Read(/secrets/**)", "secrets/a.txt"),
            ("Read(/secrets/**)", "secrets"),
        ] {
            assert_eq!(
                decide_in(&base, &[], &[rule], "read", path),
                Permission::Deny,
                "{rule} {path}"
            );
        }
        // Anchored ones stay anchored.
        assert_eq!(
            decide_in(&base, &[], &["Read(./.env)"], "read", "sub/.env"),
            Permission::Allow
        );
        assert_eq!(
            decide_in(&base, &[], &["Read(//secrets/**)"], "read", "secrets/a.txt"),
            Permission::Allow
        );
    }

    #[test]
    fn allow_needs_every_path_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("src")).unwrap();
        std::fs::write(base.join("outside.txt"), "x").unwrap();
        std::os::unix::fs::symlink("../outside.txt", base.join("src/link")).unwrap();
        let allow = ["Edit(src/**)"];
        assert_eq!(
            decide_in(&base, &allow, &[], "write", "src/a.rs"),
            Permission::Allow
        );
        assert_eq!(
            decide_in(&base, &allow, &[], "write", "src/link"),
            Permission::Ask
        );
    }

    #[test]
    fn a_dangling_link_is_judged_on_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(".env", base.join("newlink")).unwrap();
        assert_eq!(
            decide_in(&base, &[], &["Edit(./.env)"], "write", "newlink"),
            Permission::Deny
        );
    }

    #[test]
    fn a_rule_under_a_symlinked_directory() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink("real", base.join("alias")).unwrap();
        std::fs::write(base.join("real/.env"), "x").unwrap();
        // The working directory is reached through the link.
        let cwd = base.join("alias");
        let rules = PermissionRules::from_lists(&[], &[], &["Read(./.env)"], &cwd).unwrap();
        let filter = rules.read_filter();
        assert!(filter.hides(&base.join("real/.env")));
        assert!(filter.hides(&cwd.join(".env")));
        assert!(filter.hides_file(&cwd.join(".env")));
        assert!(!filter.hides(&cwd.join("other")));
        assert_eq!(
            filter.denying_rule(&base.join("real/.env")),
            Some("Read(./.env)")
        );
        let rules = PermissionRules::from_lists(&[], &[], &["Read(./secrets/**)"], &cwd).unwrap();
        assert!(rules.read_filter().hides(&cwd.join("secrets")));
        assert!(rules.read_filter().hides(&base.join("real/secrets/k")));
    }
}
