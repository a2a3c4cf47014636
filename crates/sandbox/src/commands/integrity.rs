//! After each command: the protected paths are the files they were.
//!
//! A protected path is mounted read-only in the command's namespace, but
//! its parent directory is an ordinary, writable one: a command can rename
//! the parent away (`mv sub old`) and build a new `sub/.git` of its own,
//! which git would use later, outside the sandbox. No mount can forbid
//! that without making the parent read-only too, so the check comes
//! afterwards: every protected path is compared with what stood there
//! before the command (device and inode), and anything new in its place is
//! moved aside, with a line in the command's output saying so. So is a
//! directory on the way to a protected path that became a symbolic link
//! (`mv sub d/sub && ln -s d/sub sub`): the gitfile is the same file, but
//! its relative `gitdir:` now leads where the command wrote. The same
//! goes for a root that the command turned into a git directory (a new
//! `HEAD` beside `objects` and `refs`, or a `commondir`, in any form git
//! accepts), which git would also pick up.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Device and inode of what stands at a path, `None` when nothing does.
type Identity = Option<(u64, u64)>;

/// What stood at the protected paths and the roots before a command.
#[derive(Debug)]
pub(crate) struct Integrity {
    paths: Vec<(PathBuf, Identity)>,
    /// Directories on the way to a protected path that were links already.
    linked: Vec<PathBuf>,
    /// Each root, what it was, and whether it looked like a git directory.
    roots: Vec<(PathBuf, Identity, bool)>,
}

/// What the check after a command found.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// One line per thing moved aside or replaced, for the command's output.
    pub(crate) notes: Vec<String>,
    /// The sandbox's mounts no longer stand on what they were made on (a
    /// protected path or a root was moved, removed or replaced): the kept
    /// namespaces must be built anew.
    pub(crate) rebuild: bool,
}

fn identity(path: &Path) -> Identity {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// Whether git could take `dir` for a git directory: it needs a `HEAD`,
/// and finds `objects` and `refs` (files or directories) there or through
/// a `commondir` file. A `HEAD` is enough to say yes: no check here may be
/// weaker than git's.
fn looks_like_git_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join("HEAD")).is_ok()
        && ["objects", "refs", "commondir"]
            .iter()
            .any(|n| std::fs::symlink_metadata(dir.join(n)).is_ok())
}

/// The directories on the way from a root to each of `paths` that are
/// symbolic links now.
fn linked_parents_of(paths: &[PathBuf], roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut linked = Vec::new();
    for path in paths {
        for root in roots.iter().filter(|r| path.starts_with(r)) {
            let parent_dir = path.parent().unwrap_or(root);
            for parent in crate::policy::links_on_the_way(root, parent_dir) {
                if !linked.contains(&parent) {
                    linked.push(parent);
                }
            }
        }
    }
    linked
}

impl Integrity {
    /// Records `read_only` (placeholders already in place) and whether each
    /// root looks like a git directory.
    pub(crate) fn record(read_only: &[PathBuf], roots: &[PathBuf]) -> Self {
        Integrity {
            paths: read_only.iter().map(|p| (p.clone(), identity(p))).collect(),
            linked: linked_parents_of(read_only, roots),
            roots: roots
                .iter()
                .map(|r| (r.clone(), identity(r), looks_like_git_dir(r)))
                .collect(),
        }
    }

    /// Moves aside whatever replaced a protected path (or made a root a
    /// repository), and says whether the sandbox must be built anew.
    pub(crate) fn restore(&self) -> Findings {
        let mut notes = Vec::new();
        let mut rebuild = false;
        let mut set_aside = |path: &Path, why: &str| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let aside = path.with_file_name(format!(
                "{name}.set-aside-by-sandbox-{}",
                agent_ai::now_millis()
            ));
            match std::fs::rename(path, &aside) {
                Ok(()) => notes.push(format!(
                    "[Sandbox: {} {why}; it was moved to {} (protected paths stay as they were).]",
                    path.display(),
                    aside.display()
                )),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot set aside a replaced protected path");
                    notes.push(format!(
                        "[Sandbox: {} {why}, and it could not be moved aside ({e}).]",
                        path.display()
                    ));
                }
            }
        };
        for parent in linked_parents_of(
            &self
                .paths
                .iter()
                .map(|(p, _)| p.clone())
                .collect::<Vec<_>>(),
            &self
                .roots
                .iter()
                .map(|(r, _, _)| r.clone())
                .collect::<Vec<_>>(),
        ) {
            if !self.linked.contains(&parent) {
                rebuild = true;
                set_aside(
                    &parent,
                    "became a symbolic link on the way to a protected path",
                );
            }
        }
        for (path, before) in &self.paths {
            let now = identity(path);
            if now != *before {
                rebuild = true;
            }
            if now.is_some() && now != *before {
                set_aside(path, "was replaced by the command");
            }
        }
        let mut replaced_roots = Vec::new();
        for (root, before, was_git_dir) in &self.roots {
            if identity(root) != *before {
                rebuild = true;
                replaced_roots.push(format!(
                    "[Sandbox: the workspace directory {} was moved or replaced by the command; later commands get a new sandbox over what stands there now.]",
                    root.display()
                ));
            }
            if !was_git_dir && looks_like_git_dir(root) {
                set_aside(&root.join("HEAD"), "made the workspace a git repository");
            }
        }
        notes.extend(replaced_roots);
        Findings {
            rebuild: rebuild || !notes.is_empty(),
            notes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Git takes a directory with `HEAD` and plain files `objects` and
    /// `refs` (or a `commondir`) for a git directory; so does the check.
    #[test]
    fn any_form_of_git_directory_at_a_root_is_set_aside() {
        for extra in [&["objects", "refs"][..], &["commondir"][..]] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            let check = Integrity::record(&[root.join(".git")], &[root.to_path_buf()]);
            std::fs::write(root.join("HEAD"), "ref: refs/heads/main\n").unwrap();
            for name in extra {
                std::fs::write(root.join(name), "x\n").unwrap();
            }
            let found = check.restore();
            assert_eq!(found.notes.len(), 1, "{extra:?}: {:?}", found.notes);
            assert!(!root.join("HEAD").exists(), "{extra:?}");
        }
    }

    /// `mv sub d/sub && ln -s d/sub sub`: `sub/.git` is still the same
    /// gitfile, but its relative `gitdir:` now starts from `d/sub`.
    #[test]
    fn a_parent_turned_into_a_link_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        let check = Integrity::record(&[root.join("sub/.git")], &[root.to_path_buf()]);
        std::fs::create_dir(root.join("d")).unwrap();
        std::fs::rename(root.join("sub"), root.join("d/sub")).unwrap();
        std::os::unix::fs::symlink("d/sub", root.join("sub")).unwrap();
        let found = check.restore();
        assert!(found.rebuild);
        assert_eq!(found.notes.len(), 1, "{:?}", found.notes);
        assert!(std::fs::symlink_metadata(root.join("sub")).is_err());
        assert!(root.join("d/sub/.git").exists(), "the real one stays");
    }

    #[test]
    fn a_replaced_protected_path_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        let protected = [root.join("sub/.git"), root.join(".pi")];
        let check = Integrity::record(&protected, &[root.to_path_buf()]);
        // What a command can do around a read-only mount.
        std::fs::rename(root.join("sub"), root.join("old")).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../evil\n").unwrap();
        std::fs::create_dir_all(root.join("objects")).unwrap();
        std::fs::create_dir_all(root.join("refs")).unwrap();
        std::fs::write(root.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let found = check.restore();
        assert!(found.rebuild);
        let notes = found.notes;
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(!root.join("sub/.git").exists());
        assert!(!root.join("HEAD").exists());
        assert!(
            root.join("old/.git").exists(),
            "the original is left where it went"
        );
        // Nothing changed: nothing to say.
        let check = Integrity::record(&protected, &[root.to_path_buf()]);
        let found = check.restore();
        assert!(found.notes.is_empty() && !found.rebuild);
        // A protected path that went away: nothing to move, but the mounts
        // stood on it.
        std::fs::rename(root.join("old"), root.join("gone")).unwrap();
        let check = Integrity::record(&[root.join("gone/.git")], &[root.to_path_buf()]);
        std::fs::rename(root.join("gone"), root.join("old2")).unwrap();
        let found = check.restore();
        assert!(found.notes.is_empty() && found.rebuild);
    }
}
