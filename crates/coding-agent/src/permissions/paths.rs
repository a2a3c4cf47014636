//! Path rules judged on the file a tool opens, not on the text of its
//! argument.
//!
//! A file tool's `path` argument goes through the resolver the tools use
//! ([`crate::path`]): `@`, `~`, odd spaces, `file://` URLs with `%XX`
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

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

use super::{Permission, PermissionDecision, PermissionRule, PermissionRules, Specifier};
use crate::path::{candidate_paths, normalize_path, real_path};

/// The tools whose `path` argument path rules judge: those a `Read` or
/// `Edit` rule covers.
fn is_file_tool(tool: &str) -> bool {
    super::covered_tools("read")
        .into_iter()
        .chain(super::covered_tools("edit"))
        .any(|t| t == tool)
}

/// Whether `rule` is a Read rule: its deny and ask forms also keep edit
/// and write away from the file (edit shows the file's lines, and a file
/// the agent may not read is not one it should replace).
fn is_read_rule(rule: &PermissionRule) -> bool {
    rule.tool.eq_ignore_ascii_case("read")
}

/// A path glob of a rule, anchored (relative globs at the working
/// directory, `~/` at home), in the forms a path may meet it.
#[derive(Debug, Clone)]
pub(super) struct PathGlob {
    /// Case-sensitive matchers (for allow rules).
    exact: Vec<GlobMatcher>,
    /// Case-insensitive matchers, also covering what lies inside a
    /// matching directory (for deny and ask rules).
    folded: Vec<GlobMatcher>,
}

/// Whether a path component holds glob syntax.
fn has_glob_syntax(text: &str) -> bool {
    text.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

impl PathGlob {
    /// Compiles a rule's path specifier.
    pub(super) fn new(spec: &str, cwd: &Path) -> Result<Self, String> {
        let home = std::env::home_dir();
        let anchored = if let (Some(rest), Some(home)) = (spec.strip_prefix("~/"), home.as_ref()) {
            format!("{}/{rest}", home.display())
        } else if let Some(rest) = spec.strip_prefix("//") {
            format!("/{rest}")
        } else if spec.starts_with('/') || spec.starts_with("**") {
            spec.to_string()
        } else if !spec.trim_end_matches('/').contains('/') {
            // Gitignore's rule, as in Claude Code: a name without a slash
            // (`.env`, `*.pem`) matches at any depth.
            format!("{}/**/{}", cwd.display(), spec)
        } else {
            format!(
                "{}/{}",
                cwd.display(),
                spec.strip_prefix("./").unwrap_or(spec)
            )
        };
        let mut patterns = vec![anchored.clone()];
        // The literal directory prefix with its symlinks resolved (a working
        // directory under a symlink), and a `..` in it resolved lexically.
        if anchored.starts_with('/') {
            let path = Path::new(&anchored);
            let mut prefix = PathBuf::new();
            let mut rest = Vec::new();
            for component in path.components() {
                let text = component.as_os_str().to_string_lossy();
                if !rest.is_empty() || has_glob_syntax(&text) {
                    rest.push(text.into_owned());
                } else {
                    prefix.push(component);
                }
            }
            // The last literal component may be the file itself: only
            // directories are resolved.
            if rest.is_empty()
                && let Some(name) = prefix.file_name().map(|n| n.to_string_lossy().into_owned())
            {
                prefix.pop();
                rest.push(name);
            }
            let has_parent = prefix.components().any(|c| c == Component::ParentDir);
            let lexical = normalize_path(&prefix);
            for base in [lexical.clone(), real_path(&lexical)] {
                if base != prefix || has_parent {
                    let mut p = base.display().to_string();
                    for part in &rest {
                        if !p.ends_with('/') {
                            p.push('/');
                        }
                        p.push_str(part);
                    }
                    if !patterns.contains(&p) {
                        patterns.push(p);
                    }
                }
            }
        }
        // `dir/**` also covers `dir` itself.
        for p in patterns.clone() {
            if let Some(dir) = p.strip_suffix("/**")
                && !dir.is_empty()
            {
                patterns.push(dir.to_string());
            }
        }
        // Deny and ask rules on a directory cover what is inside it.
        let mut folded = patterns.clone();
        // `/secrets/**` is absolute here, but relative to the project in
        // Claude Code's grammar: deny and ask rules take both readings.
        if spec.starts_with('/') && !spec.starts_with("//") {
            let relative = format!("{}{}", cwd.display(), spec);
            folded.push(relative.clone());
            if let Some(dir) = relative.strip_suffix("/**") {
                folded.push(dir.to_string());
            }
        }
        for p in &patterns {
            if !p.ends_with("/**") {
                folded.push(format!("{}/**", p.trim_end_matches('/')));
            }
        }
        let build = |pattern: &str, fold: bool| {
            let nfc: String = pattern.nfc().collect();
            GlobBuilder::new(&nfc)
                .literal_separator(true)
                .case_insensitive(fold)
                .build()
                .map(|g| g.compile_matcher())
                .map_err(|e| e.to_string())
        };
        Ok(PathGlob {
            exact: patterns
                .iter()
                .map(|p| build(p, false))
                .collect::<Result<_, _>>()?,
            folded: folded
                .iter()
                .map(|p| build(p, true))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Whether `path` (or its NFC form) matches; `fold` ignores case.
    pub(super) fn matches(&self, path: &Path, fold: bool) -> bool {
        use std::os::unix::ffi::OsStrExt;
        let matchers = if fold { &self.folded } else { &self.exact };
        if matchers.iter().any(|m| m.is_match(path)) {
            return true;
        }
        if path.as_os_str().as_bytes().is_ascii() {
            return false;
        }
        let nfc: String = path.to_string_lossy().nfc().collect();
        matchers.iter().any(|m| m.is_match(&nfc))
    }
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

/// The decision for a file tool's call, or `None` for other tools.
pub(super) fn decide(
    rules: &PermissionRules,
    tool: &str,
    args: &Value,
    cwd: &Path,
    default: &PermissionDecision,
) -> Option<PermissionDecision> {
    if !is_file_tool(tool) {
        return None;
    }
    let raw = args.get("path").and_then(Value::as_str).unwrap_or(".");
    let candidates = candidate_paths(raw, cwd);
    let writes = super::covered_tools("edit").iter().any(|t| t == tool);
    let applies = |r: &PermissionRule| r.names(tool) || (writes && is_read_rule(r));
    for (list, permission) in [
        (&rules.deny, Permission::Deny),
        (&rules.ask, Permission::Ask),
    ] {
        for rule in list.iter().filter(|r| applies(r)) {
            if let Some(hit) = candidates.iter().find(|c| rule.covers_path(c, true)) {
                return Some(PermissionDecision::by(
                    permission,
                    rule,
                    Some(hit.display().to_string()),
                ));
            }
        }
    }
    // Allowed only if every path the argument may open is allowed.
    let allow: Vec<&PermissionRule> = rules.allow.iter().filter(|r| r.names(tool)).collect();
    let mut first = None;
    for candidate in &candidates {
        match allow.iter().find(|r| r.covers_path(candidate, false)) {
            Some(rule) => {
                first.get_or_insert(*rule);
            }
            None => return Some(default.clone()),
        }
    }
    Some(match first {
        Some(rule) => PermissionDecision::by(
            Permission::Allow,
            rule,
            candidates.first().map(|c| c.display().to_string()),
        ),
        None => default.clone(),
    })
}

/// The Read rules' paths, for the file operations behind grep, find and
/// ls: what a listing or a search must not show, and what no tool may open.
///
/// Built by [`PermissionRules::read_filter`]; matching is on paths only
/// (see [`PathRuleFilter::hides`]), the caller resolves symlinks.
#[derive(Debug, Clone, Default)]
pub struct PathRuleFilter {
    deny: Vec<(String, PathGlob)>,
    ask: Vec<(String, PathGlob)>,
}

impl PathRuleFilter {
    /// Whether no rule is in it (nothing hidden).
    pub fn is_empty(&self) -> bool {
        self.deny.is_empty() && self.ask.is_empty()
    }

    /// Whether a listing or search hides `path`: a Read deny or ask rule
    /// covers it (a walk cannot ask about each file, so asked files are
    /// hidden too). Matched as given: pass the real path too.
    pub fn hides(&self, path: &Path) -> bool {
        self.deny
            .iter()
            .chain(self.ask.iter())
            .any(|(_, g)| g.matches(path, true))
    }

    /// The Read deny rule that refuses `path`, if any.
    pub fn denying_rule(&self, path: &Path) -> Option<&str> {
        self.deny
            .iter()
            .find(|(_, g)| g.matches(path, true))
            .map(|(text, _)| text.as_str())
    }

    /// Whether the file `path` leads to is hidden: `path` itself, or the
    /// file its symlinks lead to ([`real_path`]).
    pub fn hides_file(&self, path: &Path) -> bool {
        if self.is_empty() {
            return false;
        }
        self.hides(path) || self.hides(&real_path(path))
    }
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
        PathRuleFilter {
            deny: paths(&self.deny),
            ask: paths(&self.ask),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decide_in(dir: &Path, allow: &[&str], deny: &[&str], tool: &str, path: &str) -> Permission {
        let rules = PermissionRules::from_lists(allow, &[], deny, dir).unwrap();
        rules.decide(tool, &json!({"path": path}), dir).permission
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
