//! Serialises mutations of one file while letting different files proceed.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Per-file FIFO queue for operations that change files (edit, write).
///
/// Operations on the same file run one at a time, in the order they asked;
/// operations on different files run concurrently. The key is the file's
/// canonical path, so two symlinks to one file share a queue; a file that does not
/// exist yet is keyed by its canonical parent plus its name. A failing operation
/// does not break the chain, and a key is forgotten when its last waiter leaves.
///
/// Create one queue per environment (file system) and share it between tools.
///
/// ```
/// # tokio_test_block_on(async {
/// use agent_tool::FileMutationQueue;
/// let queue = FileMutationQueue::new();
/// let dir = std::env::temp_dir();
/// let n = queue.run(&dir.join("x.txt"), async { 42 }).await.unwrap();
/// assert_eq!(n, 42);
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Clone, Default)]
pub struct FileMutationQueue {
    entries: Arc<Mutex<HashMap<PathBuf, Entry>>>,
    key: Option<KeyFn>,
}

/// Computes a queue key for a path (see [`FileMutationQueue::keyed_by`]).
pub type KeyFn = Arc<dyn Fn(&Path) -> io::Result<PathBuf> + Send + Sync>;

struct Entry {
    lock: Arc<tokio::sync::Mutex<()>>,
    waiters: usize,
}

impl std::fmt::Debug for FileMutationQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileMutationQueue")
            .field("active_keys", &self.active_keys())
            .finish()
    }
}

/// Leaves the queue (and forgets the key when last) even if the caller's future is dropped.
struct Registration<'a> {
    queue: &'a FileMutationQueue,
    key: PathBuf,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut entries = self.queue.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = entries.get_mut(&self.key) {
            entry.waiters -= 1;
            if entry.waiters == 0 {
                entries.remove(&self.key);
            }
        }
    }
}

impl FileMutationQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty queue for files that live elsewhere (a remote machine, a
    /// container): `key` names a file the way that file system resolves
    /// it, so two spellings of one file share a queue there too. Seen from
    /// here, `/srv/app/../app/x` and a symlink to it mean nothing; only the
    /// other side can tell they are one file.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_tool::FileMutationQueue;
    /// // A file system where every name is one file.
    /// let queue = FileMutationQueue::keyed_by(Arc::new(|_: &std::path::Path| Ok("/one".into())));
    /// # let _ = queue;
    /// ```
    pub fn keyed_by(key: KeyFn) -> Self {
        FileMutationQueue {
            entries: Arc::default(),
            key: Some(key),
        }
    }

    /// Runs `operation` when every earlier operation on the same file has finished.
    ///
    /// Fails only if the path's key cannot be computed (an I/O error other than
    /// "not found" while resolving it).
    pub async fn run<F, T>(&self, path: &Path, operation: F) -> io::Result<T>
    where
        F: Future<Output = T>,
    {
        let key = match &self.key {
            Some(key) => key(path)?,
            None => queue_key(path)?,
        };
        let lock = {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            let entry = entries.entry(key.clone()).or_insert_with(|| Entry {
                lock: Arc::new(tokio::sync::Mutex::new(())),
                waiters: 0,
            });
            entry.waiters += 1;
            entry.lock.clone()
        };
        let _registration = Registration { queue: self, key };
        // tokio's Mutex is fair: waiters acquire in the order they asked.
        let _guard = lock.lock().await;
        Ok(operation.await)
    }

    /// Number of files with an operation running or waiting.
    pub fn active_keys(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// The queue key of `path`: its canonical form, or for a missing file the
/// canonical form of its nearest existing ancestor joined with the rest.
pub fn queue_key(path: &Path) -> io::Result<PathBuf> {
    let absolute = crate::path::normalize_path(&std::path::absolute(path)?);
    match std::fs::canonicalize(&absolute) {
        Ok(p) => Ok(p),
        Err(e) if is_missing(&e) => {
            let mut rest = Vec::new();
            let mut current = absolute.as_path();
            while let Some(parent) = current.parent() {
                if let Some(name) = current.file_name() {
                    rest.push(name.to_os_string());
                }
                match std::fs::canonicalize(parent) {
                    Ok(mut base) => {
                        base.extend(rest.iter().rev());
                        return Ok(base);
                    }
                    Err(e) if is_missing(&e) => current = parent,
                    Err(_) => break,
                }
            }
            Ok(absolute)
        }
        Err(e) => Err(e),
    }
}

fn is_missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}
