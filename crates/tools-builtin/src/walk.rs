//! The directory walk grep and find share: hidden files included, `.git`
//! skipped, and ignore files (`.gitignore`, `.ignore`, `.rgignore`, the global
//! git excludes) honoured as follows:
//!
//! - Inside a git repository (the search root or one of its ancestors holds
//!   `.git`), as git does: the `.gitignore` files from the repository root
//!   down to the searched files apply, none above the repository root.
//! - Outside any repository, only the ignore files from the search root down
//!   apply: a `~/.gitignore` holding `*` (a common dotfiles setup) or any
//!   other ignore file above the search root hides nothing.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agent_core::CancellationToken;
use ignore::{WalkBuilder, WalkState};

/// A walker over `root` with the workspace's ignore rules (see the module docs).
pub fn walk_builder(root: &Path) -> WalkBuilder {
    let absolute = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    // Ignore files between the repository root and the search root (the
    // walker reads those from the search root down itself).
    let above = absolute
        .ancestors()
        .position(|dir| dir.join(".git").exists())
        .map(|depth| repository_ignores(&absolute, depth))
        .unwrap_or_default();
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        // Never read ignore files of parent directories: inside a repository
        // the ones up to its root come from `above`, outside one none apply.
        .parents(false)
        .follow_links(false)
        .add_custom_ignore_filename(".rgignore");
    let walk_root = root.to_path_buf();
    builder.filter_entry(move |entry| {
        if entry.file_name() == ".git" {
            return false;
        }
        if above.is_empty() || entry.depth() == 0 {
            return true;
        }
        // The same entry as seen from the canonical root.
        let path = match entry.path().strip_prefix(&walk_root) {
            Ok(relative) => absolute.join(relative),
            Err(_) => entry.path().to_path_buf(),
        };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        // The deepest ignore file with an opinion decides.
        for matcher in &above {
            match matcher.matched(&path, is_dir) {
                ignore::Match::Ignore(_) => return false,
                ignore::Match::Whitelist(_) => return true,
                ignore::Match::None => {}
            }
        }
        true
    });
    builder
}

/// Matchers for the ignore files of the directories from the search root's
/// parent up to the repository root (`depth` levels above `root`), deepest
/// first, plus the repository's `.git/info/exclude`.
fn repository_ignores(root: &Path, depth: usize) -> Vec<ignore::gitignore::Gitignore> {
    let mut matchers = Vec::new();
    for dir in root.ancestors().skip(1).take(depth) {
        let mut builder = ignore::gitignore::GitignoreBuilder::new(dir);
        for name in [".gitignore", ".ignore", ".rgignore"] {
            let file = dir.join(name);
            if file.is_file() {
                let _ = builder.add(file);
            }
        }
        if let Ok(matcher) = builder.build()
            && !matcher.is_empty()
        {
            matchers.push(matcher);
        }
    }
    if let Some(repo) = root.ancestors().nth(depth) {
        let mut builder = ignore::gitignore::GitignoreBuilder::new(repo);
        let _ = builder.add(repo.join(".git").join("info").join("exclude"));
        if let Ok(matcher) = builder.build()
            && !matcher.is_empty()
        {
            matchers.push(matcher);
        }
    }
    matchers
}

/// One walked entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkedEntry {
    /// Full path.
    pub path: PathBuf,
    /// Whether it is a directory (not following symlinks).
    pub is_dir: bool,
    /// Whether it is a regular file (not following symlinks).
    pub is_file: bool,
}

/// Walks `builder` in parallel and returns every entry `keep` accepts (the root
/// itself excluded), in no particular order. Stops early when `cancel` fires.
pub fn collect_parallel(
    builder: &WalkBuilder,
    cancel: &CancellationToken,
    keep: impl Fn(&WalkedEntry) -> bool + Sync,
) -> Vec<WalkedEntry> {
    let out = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(8);
    let mut builder = builder.clone();
    builder.threads(threads).build_parallel().run(|| {
        let out = &out;
        let keep = &keep;
        // Flush the thread's batch when the visitor is dropped.
        struct Flush<'a> {
            local: Vec<WalkedEntry>,
            out: &'a Mutex<Vec<WalkedEntry>>,
        }
        impl Drop for Flush<'_> {
            fn drop(&mut self) {
                if let Ok(mut out) = self.out.lock() {
                    out.append(&mut self.local);
                }
            }
        }
        let mut flush = Flush {
            local: Vec::new(),
            out,
        };
        Box::new(move |result| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = result else {
                return WalkState::Continue;
            };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let file_type = entry.file_type();
            let walked = WalkedEntry {
                is_dir: file_type.is_some_and(|t| t.is_dir()),
                is_file: file_type.is_some_and(|t| t.is_file()),
                path: entry.into_path(),
            };
            if keep(&walked) {
                flush.local.push(walked);
            }
            WalkState::Continue
        })
    });
    out.into_inner().unwrap_or_default()
}
