//! After each command: the protected paths are the files they were.
//!
//! A protected path is mounted read-only in the command's namespace, but
//! its parent directory is an ordinary, writable one: a command can rename
//! the parent away (`mv sub old`) and build a new `sub/.git` of its own,
//! which git would use later, outside the sandbox. No mount can forbid
//! that without making the parent read-only too, so the check comes
//! afterwards: every protected path is compared with what stood there
//! before the command (device and inode), and anything new in its place is
//! moved aside, with a line in the command's output saying so. The same
//! goes for a root that the command turned into a bare repository (a new
//! `HEAD` beside `objects/` and `refs/`), which git would also pick up.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What stood at the protected paths before a command.
#[derive(Debug)]
pub(crate) struct Integrity {
    paths: Vec<(PathBuf, Option<(u64, u64)>)>,
    roots: Vec<(PathBuf, bool)>,
}

fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

fn looks_like_git_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join("HEAD")).is_ok()
        && dir.join("objects").is_dir()
        && dir.join("refs").is_dir()
}

impl Integrity {
    /// Records `read_only` (placeholders already in place) and whether each
    /// root looks like a git directory.
    pub(crate) fn record(read_only: &[PathBuf], roots: &[PathBuf]) -> Self {
        Integrity {
            paths: read_only.iter().map(|p| (p.clone(), identity(p))).collect(),
            roots: roots
                .iter()
                .map(|r| (r.clone(), looks_like_git_dir(r)))
                .collect(),
        }
    }

    /// Moves aside whatever replaced a protected path (or made a root a
    /// repository); one line per move, for the command's output.
    pub(crate) fn restore(&self) -> Vec<String> {
        let mut notes = Vec::new();
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
        for (path, before) in &self.paths {
            let now = identity(path);
            if now.is_some() && now != *before {
                set_aside(path, "was replaced by the command");
            }
        }
        for (root, was_git_dir) in &self.roots {
            if !was_git_dir && looks_like_git_dir(root) {
                set_aside(&root.join("HEAD"), "made the workspace a git repository");
            }
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let notes = check.restore();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(!root.join("sub/.git").exists());
        assert!(!root.join("HEAD").exists());
        assert!(
            root.join("old/.git").exists(),
            "the original is left where it went"
        );
        // Nothing changed: nothing to say.
        let check = Integrity::record(&protected, &[root.to_path_buf()]);
        assert!(check.restore().is_empty());
    }
}
