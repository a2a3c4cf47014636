//! The sandboxed file operations against a path that changes under them:
//! a directory swapped, again and again, with a symlink into `.git`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_sandbox::ConfinedFileOps;
use agent_sandbox::{SandboxMode, SandboxPolicy};
use agent_tool::ops::FileOps;

/// While another thread exchanges `d` (a real directory) and `l` (a
/// symlink to `.git`) as fast as it can, writes to `l/config` land in the
/// directory or are refused; `.git/config` never changes.
#[test]
fn a_swapped_symlink_never_leads_a_write_into_git() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir(ws.join("d")).unwrap();
    std::os::unix::fs::symlink(".git", ws.join("l")).unwrap();
    let ops = ConfinedFileOps::new(&SandboxPolicy::new(SandboxMode::WorkspaceWrite, &ws)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let ws = ws.clone();
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let _ = rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    ws.join("d"),
                    rustix::fs::CWD,
                    ws.join("l"),
                    rustix::fs::RenameFlags::EXCHANGE,
                );
                swaps += 1;
            }
            swaps
        })
    };
    let mut written = 0;
    for i in 0..3000 {
        let content = format!("[core]\n\tfsmonitor = planted-{i}\n");
        for path in ["l/config", "l/hooks-new"] {
            if ops.write_file(&ws.join(path), content.as_bytes()).is_ok() {
                written += 1;
            }
        }
        if i % 500 == 0 {
            let _ = ops.write_file_if_unchanged(&ws.join("l/config"), b"x", content.as_bytes());
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0);
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n",
        "({written} writes succeeded)"
    );
    let planted: Vec<_> = std::fs::read_dir(ws.join(".git"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(planted, [std::ffi::OsString::from("config")]);
}
