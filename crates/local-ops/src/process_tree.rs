//! Finding and killing every process a bash call started, including those
//! that left its process group (`setsid`), dropped its environment
//! (`env -i`) or lost their parent (double forks).
//!
//! Three nets, none of which a child can slip through alone:
//!
//! 1. **The process tree.** Before anything is killed, the call's shell and
//!    all its descendants are read from `/proc` (parentage cannot be shed).
//! 2. **Child subreaper.** The first bash call makes this process a child
//!    subreaper (`PR_SET_CHILD_SUBREAPER`): a descendant whose parent exits
//!    is re-parented to us rather than to init, so it stays findable. Such
//!    orphans are attributed to a call by their process group (which they
//!    keep unless they call `setsid`) or, for `setsid`'d ones, by having
//!    started after the call's shell.
//! 3. **The environment marker** ([`CALL_MARKER_VAR`](crate::CALL_MARKER_VAR))
//!    for descendants that are neither (a process re-parented before the
//!    subreaper was set, for instance).
//!
//! Orphans re-parented to us are reaped here when they exit, so none stays a
//! zombie.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, Once};

use rustix::process::{Pid, Signal};

/// One line of `/proc/<pid>/stat`, the fields we need.
#[derive(Debug, Clone, Copy)]
struct ProcInfo {
    pid: u32,
    ppid: u32,
    pgrp: u32,
    session: u32,
    state: u8,
    /// Clock ticks since boot.
    start: u64,
}

/// Shells of bash calls that are running now (our own children, reaped by
/// tokio; never touched by the orphan sweep).
static ACTIVE_SHELLS: Mutex<Vec<u32>> = Mutex::new(Vec::new());
static SUBREAPER: Once = Once::new();

/// Makes this process a child subreaper, once (Linux; a no-op elsewhere).
pub(crate) fn become_subreaper() {
    SUBREAPER.call_once(|| {
        if let Err(e) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
            tracing::debug!(error = %e, "cannot become a child subreaper");
        }
    });
}

/// A bash call's shell, registered while it runs.
pub(crate) struct ShellGuard {
    pid: u32,
    /// When the shell started (clock ticks since boot).
    pub(crate) start: u64,
}

impl ShellGuard {
    /// Starts a call's shell with `spawn` and registers it in one step.
    ///
    /// The registry's lock is held from before the fork until the pid is
    /// recorded, and every sweep reads the process table before it takes
    /// that lock. So a sweep run by another call can never mistake a shell
    /// that has just started (and perhaps already exited) for an orphan:
    /// reaping it would leave tokio's wait with ECHILD, and killing it would
    /// end someone else's command.
    pub(crate) fn spawn(
        spawn: impl FnOnce() -> std::io::Result<tokio::process::Child>,
    ) -> std::io::Result<(tokio::process::Child, Option<Self>)> {
        let mut shells = active_shells();
        let child = spawn()?;
        let guard = child.id().map(|pid| {
            shells.push(pid);
            let start = read_stat(pid).map(|p| p.start).unwrap_or(0);
            ShellGuard { pid, start }
        });
        Ok((child, guard))
    }
}

/// The registry of running shells; a panic elsewhere while it was held
/// leaves a list that is still valid, so poisoning is ignored.
fn active_shells() -> std::sync::MutexGuard<'static, Vec<u32>> {
    ACTIVE_SHELLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Drop for ShellGuard {
    fn drop(&mut self) {
        active_shells().retain(|p| *p != self.pid);
        reap_orphans();
    }
}

fn parse_stat(text: &str) -> Option<ProcInfo> {
    let pid = text.split(' ').next()?.parse().ok()?;
    // `comm` may hold spaces and parentheses: the fields start after the last `)`.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    Some(ProcInfo {
        pid,
        state: *fields.first()?.as_bytes().first()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn read_stat(pid: u32) -> Option<ProcInfo> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process we can see.
fn process_table() -> Vec<ProcInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_stat)
        .collect()
}

/// `root` and all its descendants in `table`.
fn descendants(table: &[ProcInfo], roots: &[u32]) -> HashSet<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for p in table {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut found: HashSet<u32> = HashSet::new();
    let mut stack: Vec<u32> = roots.to_vec();
    while let Some(pid) = stack.pop() {
        if found.insert(pid)
            && let Some(kids) = children.get(&pid)
        {
            stack.extend(kids);
        }
    }
    found
}

/// Our re-parented orphans that belong to the call whose shell is
/// `shell` (started at `shell_start`).
fn orphans_of(table: &[ProcInfo], shell: u32, shell_start: u64) -> Vec<u32> {
    let me = std::process::id();
    // After the table was read (see `ShellGuard::spawn`).
    let active: Vec<u32> = active_shells().clone();
    table
        .iter()
        .filter(|p| p.ppid == me && p.pid != shell && !active.contains(&p.pid))
        .filter(|p| {
            // Still in the call's group, or a session leader of its own
            // (setsid) started during the call and not in another call's group.
            p.pgrp == shell
                || (p.session == p.pid && p.start >= shell_start && !active.contains(&p.pgrp))
        })
        .map(|p| p.pid)
        .collect()
}

/// SIGKILLs the call whose shell is `shell`: its process group, its whole
/// tree, its re-parented orphans and anything carrying `marker`; then reaps
/// what was re-parented to us.
pub(crate) fn kill_call_tree(shell: Option<u32>, shell_start: u64, marker: &str) {
    let mut killed: HashSet<u32> = HashSet::new();
    // A process may fork while we look: sweep until nothing new turns up.
    for _ in 0..3 {
        let table = process_table();
        let mut victims: HashSet<u32> = HashSet::new();
        if let Some(shell) = shell {
            let mut roots = vec![shell];
            roots.extend(orphans_of(&table, shell, shell_start));
            victims = descendants(&table, &roots);
            if let Some(pid) = Pid::from_raw(shell as i32) {
                let _ = rustix::process::kill_process_group(pid, Signal::KILL);
            }
        }
        let me = std::process::id();
        victims.extend(marked(&table, marker));
        victims.remove(&me);
        victims.retain(|pid| {
            !killed.contains(pid) || read_stat(*pid).is_some_and(|p| p.state != b'Z')
        });
        if victims.is_empty() {
            break;
        }
        for pid in &victims {
            if let Some(p) = Pid::from_raw(*pid as i32) {
                let _ = rustix::process::kill_process(p, Signal::KILL);
            }
        }
        killed.extend(victims);
    }
    // SIGKILLed orphans become our zombies within moments: reap them.
    let me = std::process::id();
    for _ in 0..20 {
        reap_orphans();
        let pending = killed
            .iter()
            .filter_map(|pid| read_stat(*pid))
            .any(|p| p.ppid == me && p.state != b'Z');
        if !pending {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    reap_orphans();
}

/// Processes whose environment holds `CALL_MARKER_VAR=marker`.
fn marked(table: &[ProcInfo], marker: &str) -> Vec<u32> {
    let needle = format!("{}={marker}", crate::CALL_MARKER_VAR);
    table
        .iter()
        .filter(|p| {
            std::fs::read(format!("/proc/{}/environ", p.pid))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .map(|p| p.pid)
        .collect()
}

/// Reaps exited orphans that bash calls left with us (never a running
/// call's shell, which tokio waits for). A zombie is only reaped when it is
/// outside this program's process group or leads its own session, as every
/// bash call's processes are; the exit status of any other child of the
/// program is left to whoever spawned it.
fn reap_orphans() {
    let me = std::process::id();
    // From /proc, not getpgrp(): in a pid namespace whose process group
    // leader lives outside it (a container started with `unshare --pid`),
    // the group is 0, which rustix's getpgrp asserts against.
    let our_group = read_stat(me).map_or(0, |s| s.pgrp);
    // The table first, then the registry (see `ShellGuard::spawn`).
    let table = process_table();
    let active: Vec<u32> = active_shells().clone();
    for p in table {
        if p.ppid == me
            && p.state == b'Z'
            && !active.contains(&p.pid)
            && (p.pgrp != our_group || p.session == p.pid)
            && let Some(pid) = Pid::from_raw(p.pid as i32)
        {
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let line = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 100";
        let p = parse_stat(line).unwrap();
        assert_eq!((p.pid, p.ppid, p.pgrp, p.session), (4242, 1, 4242, 4242));
        assert_eq!(p.state, b'S');
        assert_eq!(p.start, 987654);
    }
}
