//! The files `@` completes: the working directory walked once through
//! `ignore` (`.gitignore` and hidden-file rules, no `.git`) on a thread,
//! and matched on another, so a keystroke never waits for either. The UI
//! asks for a query and shows the answer when it comes; each batch the
//! walk finds, and each answer, wakes the UI.

use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::Item;

/// At most this many paths are walked (a huge tree still completes what
/// it found first).
pub const MAX_FILES: usize = 50_000;
/// How many paths are found between two wake-ups of the UI.
const BATCH: usize = 2_000;

#[derive(Default)]
struct Shared {
    paths: Vec<String>,
    walked: bool,
    /// The last answer: the query and its best matches.
    answer: Option<(String, Vec<Item>)>,
}

enum Job {
    /// Match this query.
    Query(String),
    /// More paths came: match the last query again.
    Rematch,
}

/// The paths under a directory, relative to it (`/` after a directory),
/// walked and matched in the background.
#[derive(Debug, Clone)]
pub struct FileIndex {
    shared: Arc<Mutex<Shared>>,
    jobs: mpsc::Sender<Job>,
    updates: watch::Receiver<u64>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("paths", &self.paths.len())
            .field("walked", &self.walked)
            .finish_non_exhaustive()
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

impl FileIndex {
    /// Starts walking `root`, and the matcher.
    pub fn spawn(root: &Path) -> FileIndex {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (tx, updates) = watch::channel(0u64);
        let tx = Arc::new(tx);
        let (jobs, inbox) = mpsc::channel();
        let index = FileIndex {
            shared: shared.clone(),
            jobs: jobs.clone(),
            updates,
        };
        let (walk_shared, walk_tx, root) = (shared.clone(), tx.clone(), root.to_path_buf());
        let walker = move || {
            walk(&root, &walk_shared, &jobs);
            lock(&walk_shared).walked = true;
            let _ = jobs.send(Job::Rematch);
            walk_tx.send_modify(|n| *n += 1);
        };
        let matcher = move || match_loop(&shared, &inbox, &tx);
        for (name, job) in [
            ("file-walk", Box::new(walker) as Box<dyn FnOnce() + Send>),
            ("file-match", Box::new(matcher)),
        ] {
            if let Err(e) = std::thread::Builder::new().name(name.into()).spawn(job) {
                tracing::warn!(error = %e, "cannot start the @ completion's {name} thread");
            }
        }
        index
    }

    /// Asks for the matches of `query`; [`FileIndex::matches_for`] has
    /// them once the UI is woken.
    pub fn request(&self, query: &str) {
        let answered = lock(&self.shared)
            .answer
            .as_ref()
            .is_some_and(|(q, _)| q == query);
        if !answered {
            let _ = self.jobs.send(Job::Query(query.to_string()));
        }
    }

    /// The best matches of `query`, if that is the query last answered.
    pub fn matches_for(&self, query: &str) -> Option<Vec<Item>> {
        let shared = lock(&self.shared);
        let (q, items) = shared.answer.as_ref()?;
        (q == query && !items.is_empty()).then(|| items.clone())
    }

    /// Whether the walk is over.
    pub fn walked(&self) -> bool {
        lock(&self.shared).walked
    }

    /// A receiver that changes with each batch found and each answer.
    pub fn updates(&self) -> watch::Receiver<u64> {
        self.updates.clone()
    }
}

fn match_loop(shared: &Mutex<Shared>, inbox: &mpsc::Receiver<Job>, tx: &watch::Sender<u64>) {
    let mut query: Option<String> = None;
    while let Ok(job) = inbox.recv() {
        // Only the newest query matters: skip what typing left behind.
        let mut jobs = vec![job];
        jobs.extend(inbox.try_iter());
        for job in jobs {
            if let Job::Query(q) = job {
                query = Some(q);
            }
        }
        let Some(q) = &query else { continue };
        // Matched on a copy: the walk keeps adding meanwhile.
        let paths = lock(shared).paths.clone();
        let items = super::best_files(&paths, q);
        lock(shared).answer = Some((q.clone(), items));
        tx.send_modify(|n| *n += 1);
    }
}

fn walk(root: &Path, shared: &Mutex<Shared>, jobs: &mpsc::Sender<Job>) {
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
            lock(shared).paths.append(&mut batch);
            let _ = jobs.send(Job::Rematch);
        }
    }
    lock(shared).paths.append(&mut batch);
}
