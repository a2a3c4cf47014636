//! The local [`OutputFile`]: a private file in this machine's temp dir,
//! with a budget for all of this process's full-output files together.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agent_tool::ops::OutputFile;

/// The most all full-output files of this process hold together; past it
/// the oldest are removed (their notices named them long ago).
pub const MAX_OUTPUT_FILES_TOTAL: u64 = 1024 * 1024 * 1024;

/// A new full-output file in this machine's temp dir
/// (`coding-agent-bash-*.log`, readable only by this user), counted
/// against [`MAX_OUTPUT_FILES_TOTAL`] when finished.
///
/// # Errors
/// The temp dir is not writable.
pub fn local_output_file() -> io::Result<Box<dyn OutputFile>> {
    let (file, path) = tempfile::Builder::new()
        .prefix("coding-agent-bash-")
        .suffix(".log")
        .tempfile()?
        .keep()
        .map_err(|e| e.error)?;
    Ok(Box::new(LocalOutputFile { file, path }))
}

struct LocalOutputFile {
    file: std::fs::File,
    path: PathBuf,
}

impl Write for LocalOutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl OutputFile for LocalOutputFile {
    fn path(&self) -> &Path {
        &self.path
    }
    fn finish(&mut self, size: u64) {
        let _ = self.file.flush();
        record(self.path.clone(), size);
    }
}

/// This process's finished full-output files, oldest first, with sizes.
static FINISHED: Mutex<VecDeque<(PathBuf, u64)>> = Mutex::new(VecDeque::new());

fn record(path: PathBuf, size: u64) {
    let mut finished = FINISHED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    keep_within(&mut finished, path, size, MAX_OUTPUT_FILES_TOTAL);
}

/// Adds `path` and removes the oldest files while all hold more than
/// `budget` (the newest always stays).
fn keep_within(files: &mut VecDeque<(PathBuf, u64)>, path: PathBuf, size: u64, budget: u64) {
    files.push_back((path, size));
    let mut total: u64 = files.iter().map(|(_, s)| *s).sum();
    while total > budget && files.len() > 1 {
        if let Some((old, size)) = files.pop_front() {
            if let Err(e) = std::fs::remove_file(&old) {
                tracing::debug!(path = %old.display(), error = %e, "old full-output file not removed");
            }
            total -= size;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_files_go_past_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = VecDeque::new();
        let paths: Vec<PathBuf> = (0..4)
            .map(|i| dir.path().join(format!("{i}.log")))
            .collect();
        for p in &paths {
            std::fs::write(p, "x").unwrap();
            keep_within(&mut files, p.clone(), 40, 100);
        }
        assert!(!paths[0].exists() && !paths[1].exists());
        assert!(paths[2].exists() && paths[3].exists());
    }

    #[test]
    fn a_local_output_file_is_private_and_readable_back() {
        use std::os::unix::fs::PermissionsExt;
        let mut f = local_output_file().unwrap();
        f.write_all(b"full output\n").unwrap();
        f.finish(12);
        let path = f.path().to_path_buf();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "full output\n");
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o077,
            0
        );
        std::fs::remove_file(path).unwrap();
    }
}
