//! Mount points for protected paths that do not exist yet.
//!
//! bubblewrap can only mount a protected path read-only if something is
//! there to mount. A `.git`, `.pi` or agent directory that does not exist
//! when a command starts would otherwise be an ordinary name in a writable
//! root, and the command could create it: a `.git` with a hook or
//! `core.fsmonitor` in a subdirectory of a repository, or the user's global
//! settings, both run later outside the sandbox. So an empty directory
//! stands there (mounted read-only) while a command or the standing
//! sandbox (see `resident`) needs it, and it is removed again when the
//! last holder lets go, if it is still empty.
//!
//! Directories created here are counted per process, so parallel commands
//! share one placeholder. Another agent process on the same workspace may
//! remove a placeholder this one still relies on; the after-command check
//! (see `integrity`) then moves aside whatever a command built there.
//!
//! Commands running in parallel may swap any directory of a writable place
//! for a link while a placeholder is made or removed: both walk down from
//! the place with `O_NOFOLLOW` handles and act with `mkdirat` and
//! `unlinkat` on the handle of the parent (see [`crate::beneath`]), so no
//! directory is ever made or removed outside the writable places.

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{AtFlags, Mode};

use crate::beneath;

/// Placeholders in use, with the number of commands holding each.
static HELD: Mutex<BTreeMap<PathBuf, usize>> = Mutex::new(BTreeMap::new());

/// The placeholders one command holds; dropping it releases them.
#[derive(Debug, Default)]
pub(crate) struct Placeholders {
    /// Directories this command holds, in creation order (parents first).
    held: Vec<PathBuf>,
    /// The writable places they lie in, where every walk starts.
    places: Vec<PathBuf>,
}

impl Placeholders {
    /// Makes every missing path of `protected` that lies in one of `places`
    /// (the places commands may write) exist as an empty directory (with
    /// any missing parents), for as long as the value lives.
    ///
    /// A path that cannot be created is skipped: the user cannot create it
    /// either, and neither can a command running as that user. So is one
    /// with a link or a file on the way: nothing is made through a link.
    pub(crate) fn hold(protected: &[PathBuf], places: &[PathBuf]) -> Self {
        let mut held_now = Vec::new();
        let mut held = HELD
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for path in protected {
            let Some((place, rel)) = beneath::base_of(places, path) else {
                continue;
            };
            let (Some(names), Ok(mut dir)) = (beneath::plain_names(rel), beneath::open_dir(place))
            else {
                continue;
            };
            // Parents first, so that each one created is released after its
            // children.
            let mut at = place.to_path_buf();
            for name in names {
                at.push(name);
                let ours = held.contains_key(&at);
                match beneath::open_child_dir(dir.as_fd(), name) {
                    Ok(next) => {
                        if let Some(count) = held.get_mut(&at) {
                            *count += 1;
                            held_now.push(at.clone());
                        }
                        dir = next;
                        continue;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && !ours => {}
                    Err(e) => {
                        tracing::debug!(path = %at.display(), error = %e, "no placeholder: not a directory on the way");
                        break;
                    }
                }
                if let Err(e) = rustix::fs::mkdirat(dir.as_fd(), name, Mode::from_raw_mode(0o777)) {
                    tracing::debug!(path = %at.display(), error = %e, "no placeholder for a protected path");
                    break;
                }
                // Made: ours to remove, even if a command swaps it before
                // it is opened.
                held.insert(at.clone(), 1);
                held_now.push(at.clone());
                match beneath::open_child_dir(dir.as_fd(), name) {
                    Ok(next) => dir = next,
                    Err(_) => break,
                }
            }
        }
        Placeholders {
            held: held_now,
            places: places.to_vec(),
        }
    }
}

/// Removes the directory at `dir` if it is empty, through its parent's
/// handle walked down from its place.
fn remove_if_empty(places: &[PathBuf], dir: &Path) {
    if beneath::base_of(places, dir).is_none() {
        return;
    }
    let Some((parent, name)) = beneath::parent_handle(places, dir) else {
        tracing::debug!(path = %dir.display(), "placeholder left in place: its parent is no directory of the place now");
        return;
    };
    // Only an empty directory goes (`unlinkat` follows no link): a parent
    // that a command filled (it was writable) keeps what it holds.
    if let Err(e) = rustix::fs::unlinkat(parent.as_fd(), &name, AtFlags::REMOVEDIR) {
        tracing::debug!(path = %dir.display(), error = %e, "placeholder left in place");
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        let mut held = HELD
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Children before parents.
        for dir in self.held.drain(..).rev() {
            let Some(count) = held.get_mut(&dir) else {
                continue;
            };
            *count -= 1;
            if *count == 0 {
                held.remove(&dir);
                remove_if_empty(&self.places, &dir);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_paths_exist_while_held_and_go_afterwards() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join(".pi")).unwrap();
        let protected = [
            root.join(".git"),
            root.join(".pi"),
            root.join("home/.pi/agent"),
        ];
        let places = [root.to_path_buf()];
        let first = Placeholders::hold(&protected, &places);
        let second = Placeholders::hold(&protected, &places);
        assert!(root.join(".git").is_dir());
        assert!(root.join("home/.pi/agent").is_dir());
        drop(first);
        assert!(root.join(".git").is_dir(), "still held by the second");
        // A parent the command wrote into stays, with its content.
        std::fs::write(root.join("home/note"), "kept").unwrap();
        drop(second);
        assert!(!root.join(".git").exists());
        assert!(!root.join("home/.pi").exists());
        assert_eq!(
            std::fs::read_to_string(root.join("home/note")).unwrap(),
            "kept"
        );
        // What existed before is never removed.
        assert!(root.join(".pi").is_dir());
    }

    /// A parent swapped for a link to a directory outside (by a command
    /// running in parallel): no placeholder is made through it, and none
    /// is removed through it.
    #[test]
    fn no_placeholder_is_made_or_removed_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("lnk")).unwrap();
        let places = [root.clone()];
        let held = Placeholders::hold(&[root.join("lnk/.git"), root.join("sub/.git")], &places);
        assert!(!outside.join(".git").exists(), "made through a link");
        assert!(root.join("sub/.git").is_dir());
        // `sub` swapped for a link to a directory with an empty `.git`.
        std::fs::create_dir(outside.join(".git")).unwrap();
        std::fs::rename(root.join("sub"), root.join("subreal")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("sub")).unwrap();
        drop(held);
        assert!(outside.join(".git").is_dir(), "removed through a link");
    }
}
