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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Placeholders in use, with the number of commands holding each.
static HELD: Mutex<BTreeMap<PathBuf, usize>> = Mutex::new(BTreeMap::new());

/// The placeholders one command holds; dropping it releases them.
#[derive(Debug, Default)]
pub(crate) struct Placeholders {
    /// Directories this command holds, in creation order (parents first).
    held: Vec<PathBuf>,
}

impl Placeholders {
    /// Makes every missing path of `protected` exist as an empty directory
    /// (with any missing parents), for as long as the value lives.
    ///
    /// A path that cannot be created is skipped: the user cannot create it
    /// either, and neither can a command running as that user.
    pub(crate) fn hold(protected: &[PathBuf]) -> Self {
        let mut held_now = Vec::new();
        let mut held = HELD
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for path in protected {
            // Parents first, so that each one created is released after its
            // children.
            let mut missing: Vec<&Path> = path
                .ancestors()
                .take_while(|p| std::fs::symlink_metadata(p).is_err() || held.contains_key(*p))
                .collect();
            missing.reverse();
            for dir in missing {
                if let Some(count) = held.get_mut(dir) {
                    *count += 1;
                    held_now.push(dir.to_path_buf());
                    continue;
                }
                match std::fs::create_dir(dir) {
                    Ok(()) => {
                        held.insert(dir.to_path_buf(), 1);
                        held_now.push(dir.to_path_buf());
                    }
                    Err(e) => {
                        tracing::debug!(path = %dir.display(), error = %e, "no placeholder for a protected path");
                        break;
                    }
                }
            }
        }
        Placeholders { held: held_now }
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
                // Only an empty directory goes: a parent that a command
                // filled (it was writable) keeps what it holds.
                if let Err(e) = std::fs::remove_dir(&dir) {
                    tracing::debug!(path = %dir.display(), error = %e, "placeholder left in place");
                }
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
        let first = Placeholders::hold(&protected);
        let second = Placeholders::hold(&protected);
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
}
