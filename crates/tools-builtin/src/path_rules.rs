//! [`RuleFilteredFileOps`]: the permission rules' Read paths applied to every
//! file the tools touch, not only to the `path` argument the permission gate
//! sees.
//!
//! The gate judges a call on its argument (`grep SECRET .` is a search of
//! `.`); the files a search or listing then opens are judged here, the way
//! the sandbox's deny globs hide files from walks: entries a Read deny or ask
//! rule covers are left out of grep's, find's and ls's walks and listings,
//! and a file a Read deny rule covers is neither opened nor written.
//! Matching is on the path and on the file it leads to (symlinks followed),
//! through [`agent_tool::path_filter::PathRuleFilter`].

use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use agent_tool::path_filter::PathRuleFilter;

use agent_tool::ops::{
    DirEntryInfo, FileInfo, FileOps, SandboxDenied, WalkEntry, WalkOptions, WalkVisitor,
    WriteOutcome,
};

/// File operations that hide and refuse what the Read rules cover (see the
/// module docs); everything else is passed to the wrapped operations.
pub struct RuleFilteredFileOps {
    inner: Arc<dyn FileOps>,
    filter: PathRuleFilter,
}

impl std::fmt::Debug for RuleFilteredFileOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleFilteredFileOps")
            .field("filter", &self.filter)
            .finish()
    }
}

impl RuleFilteredFileOps {
    /// `inner`, filtered by `filter`.
    pub fn new(inner: Arc<dyn FileOps>, filter: PathRuleFilter) -> Self {
        RuleFilteredFileOps { inner, filter }
    }

    /// `files` filtered by `filter`, or `files` itself when `filter` is empty.
    pub fn wrap(files: Arc<dyn FileOps>, filter: &PathRuleFilter) -> Arc<dyn FileOps> {
        if filter.is_empty() {
            files
        } else {
            Arc::new(RuleFilteredFileOps::new(files, filter.clone()))
        }
    }

    /// The refusal for opening or writing `path`, when a Read deny rule
    /// covers it or the file it leads to.
    fn refusal(&self, path: &Path, always_resolve: bool) -> Option<io::Error> {
        let rule = self.filter.denying_rule(path).or_else(|| {
            let real = self.inner.real_path(path);
            (always_resolve || real != path)
                .then_some(real)
                .and_then(|real| self.filter.denying_rule(&real))
        })?;
        Some(io::Error::new(
            io::ErrorKind::PermissionDenied,
            SandboxDenied(format!(
                "Permission denied by rule {rule} (matched: {})",
                path.display()
            )),
        ))
    }

    /// Whether a walk or listing hides `path`, found under `dir`, which is
    /// `real_dir` with symlinks resolved (when that differs). `maybe_link`:
    /// the entry may be a symlink, so its target is judged too.
    fn hides_entry(
        &self,
        path: &Path,
        dir: &Path,
        real_dir: Option<&Path>,
        maybe_link: bool,
    ) -> bool {
        if self.filter.hides(path) {
            return true;
        }
        if let Some(real_dir) = real_dir
            && let Ok(rest) = path.strip_prefix(dir)
            && self.filter.hides(&real_dir.join(rest))
        {
            return true;
        }
        maybe_link && {
            let real = self.inner.real_path(path);
            real != path && self.filter.hides(&real)
        }
    }

    /// `dir` with its symlinks resolved, when that differs from `dir`.
    fn real_dir(&self, dir: &Path) -> Option<std::path::PathBuf> {
        Some(self.inner.real_path(dir)).filter(|real| real != dir)
    }
}

impl FileOps for RuleFilteredFileOps {
    fn metadata(&self, path: &Path) -> io::Result<FileInfo> {
        self.inner.metadata(path)
    }

    fn real_path(&self, path: &Path) -> std::path::PathBuf {
        self.inner.real_path(path)
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        if let Some(refusal) = self.refusal(path, false) {
            return Err(refusal);
        }
        self.inner.open_read(path)
    }

    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        if let Some(refusal) = self.refusal(path, false) {
            return Err(refusal);
        }
        self.inner.read_file(path)
    }

    fn check_access(&self, path: &Path, write: bool) -> io::Result<()> {
        self.inner.check_access(path, write)
    }

    fn write_file(&self, path: &Path, data: &[u8]) -> io::Result<WriteOutcome> {
        if let Some(refusal) = self.refusal(path, true) {
            return Err(refusal);
        }
        self.inner.write_file(path, data)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntryInfo>> {
        let entries = self.inner.read_dir(path)?;
        let real = self.real_dir(path);
        Ok(entries
            .into_iter()
            .filter(|e| !self.hides_entry(&path.join(&e.name), path, real.as_deref(), true))
            .collect())
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn walk(&self, options: &WalkOptions<'_>, visit: WalkVisitor<'_>) -> io::Result<()> {
        let root = options.root;
        let real = self.real_dir(root);
        let filter = |entry: WalkEntry| {
            // The walk follows no symlinks: only an entry that is neither a
            // file nor a directory may be one.
            let maybe_link = !entry.is_dir && !entry.is_file;
            if self.hides_entry(&entry.path, root, real.as_deref(), maybe_link) {
                return true;
            }
            visit(entry)
        };
        self.inner.walk(options, &filter)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use agent_permissions::PermissionRules;

    use super::*;
    use agent_tool::ops::LocalFileOps;

    fn setup() -> (tempfile::TempDir, PathBuf, RuleFilteredFileOps) {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(base.join(".env"), "SECRET=1\n").unwrap();
        std::fs::write(base.join("notes.txt"), "SECRET is elsewhere\n").unwrap();
        std::os::unix::fs::symlink(".env", base.join("envlink")).unwrap();
        std::os::unix::fs::symlink(".", base.join("self")).unwrap();
        let rules = PermissionRules::from_lists(&[], &[], &["Read(./.env)"], &base).unwrap();
        let ops = RuleFilteredFileOps::new(Arc::new(LocalFileOps), rules.read_filter());
        (dir, base, ops)
    }

    #[test]
    fn listings_and_walks_hide_denied_files() {
        let (_dir, base, ops) = setup();
        let names: Vec<String> = ops
            .read_dir(&base)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert!(names.contains(&"notes.txt".to_string()), "{names:?}");
        assert!(!names.contains(&".env".to_string()), "{names:?}");
        assert!(!names.contains(&"envlink".to_string()), "{names:?}");
        let through_link: Vec<String> = ops
            .read_dir(&base.join("self"))
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert!(!through_link.contains(&".env".to_string()));
        for root in [base.clone(), base.join("self")] {
            let seen = std::sync::Mutex::new(Vec::new());
            ops.walk(
                &WalkOptions {
                    root: &root,
                    glob: None,
                    ordered: true,
                },
                &|e| {
                    seen.lock().unwrap().push(e.path);
                    true
                },
            )
            .unwrap();
            let seen = seen.into_inner().unwrap();
            assert!(seen.contains(&root.join("notes.txt")), "{seen:?}");
            assert!(!seen.contains(&root.join(".env")), "{seen:?}");
            assert!(!seen.contains(&root.join("envlink")), "{seen:?}");
        }
    }

    #[test]
    fn denied_files_are_neither_opened_nor_written() {
        let (_dir, base, ops) = setup();
        for p in [".env", "envlink"] {
            let e = ops.open_read(&base.join(p)).err().unwrap();
            assert!(
                SandboxDenied::message(&e).is_some_and(|m| m.contains("Read(./.env)")),
                "{e}"
            );
            assert!(ops.write_file(&base.join(p), b"x").is_err());
        }
        assert!(ops.write_file(&base.join("self/.env"), b"x").is_err());
        assert!(ops.read_file(&base.join("notes.txt")).is_ok());
        assert_eq!(std::fs::read(base.join(".env")).unwrap(), b"SECRET=1\n");
    }
}
