//! Watching processes from a test: which ones run, and waiting for a
//! condition without depending on how fast the machine is.

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

/// The pids of `uid`'s processes whose command line (arguments joined by
/// spaces) contains `needle`.
pub fn processes_of(uid: u32, needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        // A process may end while it is looked at: then it is not there.
        if !std::fs::metadata(entry.path()).is_ok_and(|m| m.uid() == uid) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .contains(needle)
        {
            found.push(pid);
        }
    }
    found
}

/// Waits until `check` holds, looking every 100 ms.
///
/// # Panics
/// After a minute: a bound against hangs, not a speed requirement.
pub async fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..600 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting until {what}");
}
