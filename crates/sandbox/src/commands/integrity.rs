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
//!
//! The check runs unconfined (as the agent's user, possibly root) while
//! other commands may still run and change the very directories it looks
//! at. So it never acts on a path: it walks down from each writable place
//! with `O_NOFOLLOW` handles, a link met on the way is set aside itself
//! (nothing below it is followed), and a thing is moved aside by
//! `renameat` within its own directory's handle (see [`crate::beneath`]).

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use crate::beneath::{self, Identity, Walk};

/// What stood at the protected paths and the roots before a command.
#[derive(Debug)]
pub(crate) struct Integrity {
    /// The places commands may write (the roots, the shared temp dir):
    /// every look below one starts from its handle.
    places: Vec<PathBuf>,
    /// Each protected path inside a place, and what stood there (`None`:
    /// nothing, or no directory on the way).
    paths: Vec<(PathBuf, Option<Identity>)>,
    /// Each root, what it was, and whether it looked like a git directory.
    roots: Vec<(PathBuf, Option<Identity>, bool)>,
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

/// What stands at `path` below one of `places`, reached without following
/// a link; `None` when nothing does or the way is blocked.
fn identity(places: &[PathBuf], path: &Path) -> Option<Identity> {
    let (dir, name) = beneath::parent_handle(places, path)?;
    beneath::stat_at(dir.as_fd(), &name)
        .ok()
        .map(|s| beneath::identity_of(&s))
}

/// A root's own identity: the directory itself, a link there not followed.
fn root_identity(root: &Path) -> Option<Identity> {
    let fd = beneath::open_dir(root).ok()?;
    rustix::fs::fstat(&fd)
        .ok()
        .map(|s| beneath::identity_of(&s))
}

/// Whether git could take the directory `dir` for a git directory: it
/// needs a `HEAD`, and finds `objects` and `refs` (files or directories)
/// there or through a `commondir` file. A `HEAD` is enough to say yes: no
/// check here may be weaker than git's.
fn looks_like_git_dir(dir: BorrowedFd<'_>) -> bool {
    let there = |name: &str| beneath::stat_at(dir, OsStr::new(name)).is_ok();
    there("HEAD") && ["objects", "refs", "commondir"].into_iter().any(there)
}

impl Integrity {
    /// Records the paths of `read_only` that lie in one of `places` (the
    /// places commands may write; placeholders already in place) and
    /// whether each root looks like a git directory.
    pub(crate) fn record(read_only: &[PathBuf], places: &[PathBuf], roots: &[PathBuf]) -> Self {
        Integrity {
            paths: read_only
                .iter()
                .filter(|p| beneath::base_of(places, p).is_some())
                .map(|p| (p.clone(), identity(places, p)))
                .collect(),
            places: places.to_vec(),
            roots: roots
                .iter()
                .map(|r| {
                    let git_dir =
                        beneath::open_dir(r).is_ok_and(|fd| looks_like_git_dir(fd.as_fd()));
                    (r.clone(), root_identity(r), git_dir)
                })
                .collect(),
        }
    }

    /// Moves aside whatever replaced a protected path (or made a root a
    /// repository), and says whether the sandbox must be built anew.
    ///
    /// Commands may still be running (in parallel with the one that ended)
    /// and swap any directory for a link while this runs: every step is
    /// taken on directory handles walked down from the place without
    /// following a link (see [`beneath`]), and a thing is moved aside by
    /// renaming it within its own directory's handle, so nothing outside
    /// the places is ever moved, and nothing is moved in from outside.
    pub(crate) fn restore(&self) -> Findings {
        let mut notes = Vec::new();
        let mut rebuild = false;
        let mut set_aside = |dir: BorrowedFd<'_>, name: &OsStr, shown: &Path, why: &str| {
            #[cfg(test)]
            tests::between_look_and_act();
            match beneath::set_aside(dir, name) {
                Ok(aside) => notes.push(format!(
                    "[Sandbox: {} {why}; it was moved to {} (protected paths stay as they were).]",
                    shown.display(),
                    shown.with_file_name(aside).display()
                )),
                Err(e) => {
                    tracing::warn!(path = %shown.display(), error = %e, "cannot set aside a replaced protected path");
                    notes.push(format!(
                        "[Sandbox: {} {why}, and it could not be moved aside ({e}).]",
                        shown.display()
                    ));
                }
            }
        };
        for (path, before) in &self.paths {
            let Some((place, rel)) = beneath::base_of(&self.places, path) else {
                continue;
            };
            let (Some(name), Some(parent)) = (rel.file_name(), rel.parent()) else {
                continue;
            };
            let Ok(base) = beneath::open_dir(place) else {
                // The place itself went (reported with the roots below).
                rebuild |= before.is_some();
                continue;
            };
            match beneath::walk(base.as_fd(), parent) {
                // A link on the way is the finding itself (`mv sub d/sub &&
                // ln -s d/sub sub`): it goes, and nothing below it is
                // looked at. Several protected paths below one link find it
                // once: the next walk finds nothing there.
                Walk::Link {
                    parent,
                    name: link,
                    at,
                    ..
                } => {
                    rebuild = true;
                    set_aside(
                        parent.as_fd(),
                        &link,
                        &place.join(at),
                        "became a symbolic link on the way to a protected path",
                    );
                }
                Walk::Stopped => rebuild |= before.is_some(),
                Walk::Reached(dir) => {
                    let now = beneath::stat_at(dir.as_fd(), name)
                        .ok()
                        .map(|s| beneath::identity_of(&s));
                    if now != *before {
                        rebuild = true;
                    }
                    if now.is_some() && now != *before {
                        set_aside(dir.as_fd(), name, path, "was replaced by the command");
                    }
                }
            }
        }
        let mut replaced_roots = Vec::new();
        for (root, before, was_git_dir) in &self.roots {
            let handle = beneath::open_dir(root).ok();
            let now = handle
                .as_ref()
                .and_then(|fd| rustix::fs::fstat(fd).ok())
                .map(|s| beneath::identity_of(&s));
            if now != *before {
                rebuild = true;
                replaced_roots.push(format!(
                    "[Sandbox: the workspace directory {} was moved or replaced by the command; later commands get a new sandbox over what stands there now.]",
                    root.display()
                ));
            }
            if let Some(fd) = handle
                && !was_git_dir
                && looks_like_git_dir(fd.as_fd())
            {
                set_aside(
                    fd.as_fd(),
                    OsStr::new("HEAD"),
                    &root.join("HEAD"),
                    "made the workspace a git repository",
                );
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

    type Hook = Box<dyn FnMut()>;

    thread_local! {
        /// Run between the look and the act (see [`between_look_and_act`]).
        static HOOK: std::cell::RefCell<Option<Hook>> = const { std::cell::RefCell::new(None) };
    }

    /// The test seam: what a command running in parallel could do after
    /// the check looked and before it acts.
    pub(super) fn between_look_and_act() {
        // Taken out while it runs, so that a hook may not run itself again.
        let hook = HOOK.with(|h| h.borrow_mut().take());
        if let Some(mut hook) = hook {
            hook();
            HOOK.with(|h| *h.borrow_mut() = Some(hook));
        }
    }

    /// `ws/sub/.git` replaced, and `outside/.git` a repository of its own.
    fn replaced_gitfile() -> (tempfile::TempDir, PathBuf, PathBuf, Integrity) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(outside.join(".git/hooks")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        let places = [root.clone()];
        let check = Integrity::record(&[root.join("sub/.git")], &places, &places);
        // A new inode (written beside, renamed over), as a command would.
        std::fs::write(root.join("evil"), "gitdir: ../evil\n").unwrap();
        std::fs::rename(root.join("evil"), root.join("sub/.git")).unwrap();
        (dir, root, outside, check)
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The race of the review, made deterministic: after the check saw a
    /// replaced `sub/.git` and before it moves it aside, a parallel
    /// command turns `sub` into a link to a repository outside the roots.
    /// A rename by path would move `outside/.git`; the handle-relative one
    /// moves the replaced gitfile in the directory it was found in.
    #[test]
    fn a_parent_swapped_between_look_and_act_moves_nothing_outside() {
        let (_dir, root, outside, check) = replaced_gitfile();
        let (r, o) = (root.clone(), outside.clone());
        HOOK.with(|h| {
            *h.borrow_mut() = Some(Box::new(move || {
                if !r.join("subreal").exists() {
                    std::fs::rename(r.join("sub"), r.join("subreal")).unwrap();
                    std::os::unix::fs::symlink(&o, r.join("sub")).unwrap();
                }
            }));
        });
        let found = check.restore();
        HOOK.with(|h| *h.borrow_mut() = None);
        assert_eq!(names_in(&outside), [".git"], "moved outside the root");
        assert_eq!(names_in(&outside.join(".git")), ["hooks"]);
        assert!(found.rebuild);
        assert_eq!(found.notes.len(), 1, "{:?}", found.notes);
        // The replaced gitfile went aside where it was, inside the root.
        let moved = names_in(&root.join("subreal"));
        assert_eq!(moved.len(), 1, "{moved:?}");
        assert!(
            moved[0].starts_with(".git.set-aside-by-sandbox-"),
            "{moved:?}"
        );
    }

    /// A parent made a link to a directory outside that holds a `.git` of
    /// its own: the link is set aside, and what it names is not touched.
    #[test]
    fn a_parent_linked_outside_is_set_aside_and_not_followed() {
        let (_dir, root, outside, check) = replaced_gitfile();
        std::fs::rename(root.join("sub"), root.join("subreal")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("sub")).unwrap();
        let found = check.restore();
        assert!(found.rebuild);
        assert_eq!(found.notes.len(), 1, "{:?}", found.notes);
        assert!(
            found.notes[0].contains("became a symbolic link"),
            "{:?}",
            found.notes
        );
        assert!(std::fs::symlink_metadata(root.join("sub")).is_err());
        assert_eq!(names_in(&outside), [".git"]);
        assert_eq!(names_in(&outside.join(".git")), ["hooks"]);
        // The link itself went aside, still a link.
        let aside = names_in(&root)
            .into_iter()
            .find(|n| n.starts_with("sub.set-aside-by-sandbox-"))
            .unwrap();
        assert!(
            std::fs::symlink_metadata(root.join(aside))
                .unwrap()
                .is_symlink()
        );
    }

    /// A protected path replaced by a link to a repository outside: the
    /// link goes aside, not what it names.
    #[test]
    fn a_protected_path_replaced_by_a_link_moves_the_link() {
        let (_dir, root, outside, check) = replaced_gitfile();
        // As a command does around the read-only mount: the parent moved
        // away (the original stays alive there), a new one built.
        std::fs::rename(root.join("sub"), root.join("subold")).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::os::unix::fs::symlink(outside.join(".git"), root.join("sub/.git")).unwrap();
        let found = check.restore();
        assert_eq!(found.notes.len(), 1, "{:?}", found.notes);
        assert_eq!(names_in(&outside), [".git"]);
        assert_eq!(names_in(&outside.join(".git")), ["hooks"]);
        assert_eq!(names_in(&root.join("sub")).len(), 1);
        assert!(std::fs::symlink_metadata(root.join("sub/.git")).is_err());
    }

    /// The root swapped for a link between the look and the act (another
    /// agent process, the user): its handle still names the directory the
    /// check looked at, and the `HEAD` set aside is that one.
    #[test]
    fn a_root_swapped_between_look_and_act_moves_nothing_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(outside.join("objects")).unwrap();
        std::fs::write(outside.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let places = [root.clone()];
        let check = Integrity::record(&[root.join(".git")], &places, &places);
        std::fs::write(root.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir(root.join("refs")).unwrap();
        let (r, o) = (root.clone(), outside.clone());
        let moved = dir.path().join("moved");
        let m = moved.clone();
        HOOK.with(|h| {
            *h.borrow_mut() = Some(Box::new(move || {
                if !m.exists() {
                    std::fs::rename(&r, &m).unwrap();
                    std::os::unix::fs::symlink(&o, &r).unwrap();
                }
            }));
        });
        let _ = check.restore();
        HOOK.with(|h| *h.borrow_mut() = None);
        assert_eq!(names_in(&outside), ["HEAD", "objects"]);
        assert!(!moved.join("HEAD").exists());
    }

    /// Git takes a directory with `HEAD` and plain files `objects` and
    /// `refs` (or a `commondir`) for a git directory; so does the check.
    #[test]
    fn any_form_of_git_directory_at_a_root_is_set_aside() {
        for extra in [&["objects", "refs"][..], &["commondir"][..]] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            let check = Integrity::record(
                &[root.join(".git")],
                &[root.to_path_buf()],
                &[root.to_path_buf()],
            );
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
        let check = Integrity::record(
            &[root.join("sub/.git")],
            &[root.to_path_buf()],
            &[root.to_path_buf()],
        );
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
        let check = Integrity::record(&protected, &[root.to_path_buf()], &[root.to_path_buf()]);
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
        let check = Integrity::record(&protected, &[root.to_path_buf()], &[root.to_path_buf()]);
        let found = check.restore();
        assert!(found.notes.is_empty() && !found.rebuild);
        // A protected path that went away: nothing to move, but the mounts
        // stood on it.
        std::fs::rename(root.join("old"), root.join("gone")).unwrap();
        let check = Integrity::record(
            &[root.join("gone/.git")],
            &[root.to_path_buf()],
            &[root.to_path_buf()],
        );
        std::fs::rename(root.join("gone"), root.join("old2")).unwrap();
        let found = check.restore();
        assert!(found.notes.is_empty() && found.rebuild);
    }
}
