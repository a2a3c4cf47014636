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

/// Device and inode of what stands at a path, `None` when nothing does.
type Identity = Option<(u64, u64)>;

/// What stood at the protected paths and the roots before a command.
#[derive(Debug)]
pub(crate) struct Integrity {
    paths: Vec<(PathBuf, Identity)>,
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
