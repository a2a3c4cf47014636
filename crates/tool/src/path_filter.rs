//! Path globs as permission rules write them, and [`PathRuleFilter`]: the
//! paths a listing or search must not show and no tool may open.
//!
//! The permission rules (in the product layer) compile their path
//! specifiers into [`PathGlob`]s; the file tools only see the finished
//! [`PathRuleFilter`], so both judge a path with the same matcher and the
//! same resolver ([`crate::path`]).

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use unicode_normalization::UnicodeNormalization;

use crate::path::{normalize_path, real_path};

/// A path glob of a rule, anchored (relative globs at the working
/// directory, `~/` at home), in the forms a path may meet it.
#[derive(Debug, Clone)]
pub struct PathGlob {
    /// Case-sensitive matchers (for allow rules).
    exact: GlobSet,
    /// Case-insensitive matchers, also covering what lies inside a
    /// matching directory (for deny and ask rules).
    folded: GlobSet,
}

/// A path specifier that does not compile (a syntax error, or a pattern
/// past the size limit); its text is globset's.
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct PathGlobError(#[from] globset::Error);

/// Whether a path component holds glob syntax.
fn has_glob_syntax(text: &str) -> bool {
    text.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

impl PathGlob {
    /// Compiles a rule's path specifier, anchored at `cwd`.
    ///
    /// # Errors
    /// A pattern `globset` cannot compile.
    pub fn new(spec: &str, cwd: &Path) -> Result<Self, PathGlobError> {
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
        // One set each, not `compile_matcher`s: those panic where a set's
        // build returns an error (a pattern past the regex size limit), and
        // the patterns come from settings a repository may write.
        let build = |patterns: &[String], fold: bool| -> Result<GlobSet, PathGlobError> {
            let mut set = GlobSetBuilder::new();
            for pattern in patterns {
                let nfc: String = pattern.nfc().collect();
                set.add(
                    GlobBuilder::new(&nfc)
                        .literal_separator(true)
                        .case_insensitive(fold)
                        .build()?,
                );
            }
            Ok(set.build()?)
        };
        Ok(PathGlob {
            exact: build(&patterns, false)?,
            folded: build(&folded, true)?,
        })
    }

    /// Whether `path` (or its NFC form) matches; `fold` ignores case.
    pub fn matches(&self, path: &Path, fold: bool) -> bool {
        use std::os::unix::ffi::OsStrExt;
        let matchers = if fold { &self.folded } else { &self.exact };
        if matchers.is_match(path) {
            return true;
        }
        if path.as_os_str().as_bytes().is_ascii() {
            return false;
        }
        let nfc: String = path.to_string_lossy().nfc().collect();
        matchers.is_match(&nfc)
    }
}

/// The Read rules' paths, for the file operations behind grep, find and
/// ls: what a listing or a search must not show, and what no tool may open.
///
/// Built by the permission rules (`PermissionRules::read_filter` in
/// coding-agent) with [`PathRuleFilter::new`]; matching is on paths only
/// (see [`PathRuleFilter::hides`]), the caller resolves symlinks.
#[derive(Debug, Clone, Default)]
pub struct PathRuleFilter {
    deny: Vec<(String, PathGlob)>,
    ask: Vec<(String, PathGlob)>,
}

impl PathRuleFilter {
    /// A filter of these deny and ask rules, each with its text (named in
    /// refusals) and its glob.
    pub fn new(deny: Vec<(String, PathGlob)>, ask: Vec<(String, PathGlob)>) -> Self {
        PathRuleFilter { deny, ask }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_that_does_not_compile_is_an_error_not_a_panic() {
        let cwd = Path::new("/w");
        assert!(PathGlob::new("src/[a", cwd).is_err());
        let huge = format!("/{}", "a*".repeat(400_000));
        assert!(PathGlob::new(&huge, cwd).is_err());
        let glob = PathGlob::new("src/**", cwd).unwrap();
        assert!(glob.matches(Path::new("/w/src/a/b.rs"), false));
        assert!(glob.matches(Path::new("/w/src"), false));
        assert!(!glob.matches(Path::new("/w/SRC/a.rs"), false));
        assert!(glob.matches(Path::new("/w/SRC/a.rs"), true));
        assert!(!glob.matches(Path::new("/w/other/a.rs"), true));
    }
}
