//! The files `@` completes: the working directory walked once through
//! `ignore` (`.gitignore` and hidden-file rules, no `.git`), on a thread
//! of its own, so a keystroke never waits for it. What is found so far is
//! matched at once; each batch found wakes the UI to match again.

use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// At most this many paths are walked (a huge tree still completes what
/// it found first).
pub const MAX_FILES: usize = 50_000;
/// How many paths are found between two wake-ups of the UI.
const BATCH: usize = 2_000;

/// The paths under a directory, relative to it (`/` after a directory),
/// filled in the background.
#[derive(Debug, Clone)]
pub struct FileIndex {
    paths: Arc<Mutex<Vec<String>>>,
    updates: watch::Receiver<(usize, bool)>,
}

impl FileIndex {
    /// Starts walking `root`.
    pub fn spawn(root: &Path) -> FileIndex {
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (tx, updates) = watch::channel((0, false));
        let sink = paths.clone();
        let root = root.to_path_buf();
        let walk = move || {
            let found = walk(&root, &sink, &tx);
            tx.send_replace((found, true));
        };
        if let Err(e) = std::thread::Builder::new()
            .name("file-index".into())
            .spawn(walk)
        {
            tracing::warn!(error = %e, "cannot start the file walk for @ completion");
        }
        FileIndex { paths, updates }
    }

    /// Runs `f` over the paths found so far.
    pub fn with_paths<T>(&self, f: impl FnOnce(&[String]) -> T) -> T {
        f(&self.paths.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Whether the walk is over.
    pub fn done(&self) -> bool {
        self.updates.borrow().1
    }

    /// A receiver that changes with each batch found and at the end.
    pub fn updates(&self) -> watch::Receiver<(usize, bool)> {
        self.updates.clone()
    }
}

fn walk(root: &Path, sink: &Mutex<Vec<String>>, tx: &watch::Sender<(usize, bool)>) -> usize {
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    let mut batch = Vec::with_capacity(BATCH);
    let mut found = 0;
    for entry in walker.flatten() {
        if found >= MAX_FILES {
            break;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let mut path = rel.to_string_lossy().replace('\\', "/");
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            path.push('/');
        }
        batch.push(path);
        found += 1;
        if batch.len() == BATCH {
            sink.lock()
                .unwrap_or_else(|p| p.into_inner())
                .append(&mut batch);
            tx.send_replace((found, false));
        }
    }
    sink.lock()
        .unwrap_or_else(|p| p.into_inner())
        .append(&mut batch);
    found
}
