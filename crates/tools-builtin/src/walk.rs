//! The directory walk grep and find share: ignore files honoured the same way
//! inside and outside git repositories, hidden files included, `.git` skipped.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agent_core::CancellationToken;
use ignore::{WalkBuilder, WalkState};

/// A walker over `root` with the workspace's ignore rules.
pub fn walk_builder(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        .parents(true)
        .follow_links(false)
        .add_custom_ignore_filename(".rgignore")
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
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
