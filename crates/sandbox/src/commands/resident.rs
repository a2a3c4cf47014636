//! A sandbox kept standing between commands, so that a bash call pays for
//! a few forks and a `/proc` mount instead of a whole bubblewrap set-up (a
//! user namespace and twenty-odd mounts, several milliseconds).
//!
//! bubblewrap builds the namespaces once, with the same command line a
//! single command would get; their descriptors are kept, and bubblewrap
//! exits. Each command then joins them (see
//! [`child::join_before_exec`](super::child::join_before_exec)) with a
//! mount and a pid namespace of its own, without capabilities, under the
//! same seccomp filter: nothing of one command outlives it or can reach
//! the next. The namespaces are reused only while the bubblewrap command
//! line computed for the next command is identical: a protected path, a
//! hidden directory or a placeholder that appeared or went away since
//! means new ones. So does a command that replaced a protected path (the
//! after-command check found something), since a mount follows what it was
//! made on.
//!
//! The sandbox holds the placeholders of its protected paths (see
//! [`placeholders`](super::placeholders)) for as long as it stands, and
//! goes after [`IDLE`] without a command, when the last
//! `SandboxedProcessOps` or [`SandboxLease`] of the process is dropped, or on
//! [`shut_down`]. Its private temp dir (read-only mode, or
//! `sandbox.excludeTmp`) lasts as long.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::child::{self, Joinable};
use super::placeholders::Placeholders;
use super::seccomp::Instruction;

/// How long a sandbox stands without a command before it is taken down
/// (and its placeholders removed).
pub(crate) const IDLE: Duration = Duration::from_secs(30);

/// One standing sandbox: namespaces, no process.
#[derive(Debug)]
pub(crate) struct Resident {
    /// The bubblewrap options it was built with.
    key: Vec<OsString>,
    /// The namespaces to join.
    pub(crate) namespaces: Arc<Joinable>,
    _placeholders: Placeholders,
}

impl Drop for Resident {
    fn drop(&mut self) {
        tracing::debug!("resident sandbox taken down");
    }
}

/// The standing sandbox, and a count of its uses (for the idle timer).
static CURRENT: Mutex<Option<(Arc<Resident>, u64)>> = Mutex::new(None);

fn current() -> std::sync::MutexGuard<'static, Option<(Arc<Resident>, u64)>> {
    CURRENT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How many [`SandboxLease`]s are alive.
static LEASES: Mutex<usize> = Mutex::new(0);

/// A holder of the standing sandbox: while one is alive the sandbox may
/// stand (between commands, up to its idle time); when the last goes, it
/// is taken down with its placeholders ([`shut_down`]).
///
/// Every [`SandboxedProcessOps`](super::SandboxedProcessOps) holds one. A
/// program that builds its operations anew for each call (the binary's
/// `coding-agent tool --batch` does, per case) holds one of its own for as
/// long as commands should share the standing sandbox.
///
/// ```
/// let lease = agent_sandbox::SandboxLease::take();
/// // ... operations made and dropped meanwhile keep the sandbox standing.
/// drop(lease); // the last holder: the sandbox goes.
/// ```
#[derive(Debug)]
pub struct SandboxLease(());

impl SandboxLease {
    /// Holds the standing sandbox until dropped.
    pub fn take() -> SandboxLease {
        *leases() += 1;
        SandboxLease(())
    }
}

impl Drop for SandboxLease {
    fn drop(&mut self) {
        let mut count = leases();
        *count = count.saturating_sub(1);
        if *count == 0 {
            // Under the count's lock, so a lease taken meanwhile waits
            // and its commands start a sandbox of their own.
            shut_down();
        }
    }
}

fn leases() -> std::sync::MutexGuard<'static, usize> {
    LEASES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Takes the standing sandbox down (after its running commands end) and
/// removes its placeholders. Call it before `std::process::exit`, which
/// runs no destructor; the stock binary does.
pub fn shut_down() {
    let taken = current().take();
    drop(taken);
}

/// The standing sandbox for `key` (bubblewrap's options without the
/// command), started when there is none or it was built with other
/// options.
///
/// # Errors
/// bubblewrap failed; the error holds what it printed.
pub(crate) fn get_or_start(
    bwrap: &Path,
    key: &[OsString],
    placeholders: Placeholders,
    filter: &Arc<Vec<Instruction>>,
    own_network: bool,
) -> io::Result<Arc<Resident>> {
    let mut slot = current();
    if let Some((resident, uses)) = slot.as_mut()
        && resident.key == key
    {
        *uses += 1;
        return Ok(resident.clone());
    }
    // Replaced: the old one goes once its last command ends.
    *slot = None;
    let resident = Arc::new(start(bwrap, key, placeholders, filter, own_network)?);
    *slot = Some((resident.clone(), 0));
    Ok(resident)
}

/// Call when a command run in `resident` ended: after [`IDLE`] without
/// another, the sandbox is taken down.
pub(crate) fn release(resident: Arc<Resident>) {
    let uses = match current().as_ref() {
        Some((standing, uses)) if Arc::ptr_eq(standing, &resident) => *uses,
        _ => return,
    };
    drop(resident);
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        tokio::time::sleep(IDLE).await;
        let mut slot = current();
        let idle = slot
            .as_ref()
            .is_some_and(|(standing, now)| *now == uses && Arc::strong_count(standing) == 1);
        if idle {
            let taken = slot.take();
            drop(slot);
            drop(taken);
        }
    });
}

/// This process's command line and environment strings, found once (see
/// [`ProcessStrings`](child::ProcessStrings)).
pub(crate) fn own_strings() -> Option<child::ProcessStrings> {
    static STRINGS: std::sync::OnceLock<Option<child::ProcessStrings>> = std::sync::OnceLock::new();
    *STRINGS.get_or_init(child::ProcessStrings::of_this_process)
}

/// The kinds of namespace a command joins, in the order it joins them.
const KINDS: [(&str, libc::c_int); 6] = [
    ("user", libc::CLONE_NEWUSER),
    ("mnt", libc::CLONE_NEWNS),
    ("ipc", libc::CLONE_NEWIPC),
    ("uts", libc::CLONE_NEWUTS),
    ("net", libc::CLONE_NEWNET),
    ("cgroup", libc::CLONE_NEWCGROUP),
];

fn start(
    bwrap: &Path,
    key: &[OsString],
    placeholders: Placeholders,
    filter: &Arc<Vec<Instruction>>,
    own_network: bool,
) -> io::Result<Resident> {
    let waiter = if Path::new("/bin/sh").exists() {
        "/bin/sh"
    } else {
        "sh"
    };
    let mut command = std::process::Command::new(bwrap);
    command
        .args(key)
        .args(["--chdir", "/", "--info-fd", "1", "--", waiter, "-c"])
        // The shell says when bubblewrap has finished (mounts included),
        // then waits for the end of its input. bubblewrap closes the info
        // descriptor before the shell starts, so it speaks on stderr.
        .arg("echo ready >&2; read -r _ || :")
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    child::confine_before_exec(&mut command, filter.clone());
    let mut process = command.spawn().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("Sandbox: cannot start {}: {e}", bwrap.display()),
        )
    })?;
    let ready = read_until_ready(&mut process);
    let namespaces = ready
        .and_then(|report| open_namespaces(&report, own_network))
        .and_then(|namespaces| {
            let namespaces = Arc::new(namespaces);
            can_join(&namespaces, filter, waiter)?;
            Ok(namespaces)
        });
    // Its work is done: the descriptors keep the namespaces.
    drop(process.stdin.take());
    if namespaces.is_err() {
        let _ = process.kill();
    }
    let _ = process.wait();
    let namespaces = namespaces?;
    tracing::debug!(
        joined = namespaces.first.len() + usize::from(namespaces.nested_user.is_some()),
        "resident sandbox started"
    );
    Ok(Resident {
        key: key.to_vec(),
        namespaces,
        _placeholders: placeholders,
    })
}

/// Reads bubblewrap's `--info-fd` report (all of stdout) and the shell's
/// `ready` (on stderr); the report.
fn read_until_ready(process: &mut Child) -> io::Result<serde_json::Value> {
    let (Some(stdout), Some(stderr)) = (process.stdout.as_mut(), process.stderr.as_mut()) else {
        return Err(io::Error::other("no pipe from bubblewrap"));
    };
    // Up to the end of the report, which is all bubblewrap writes there.
    let mut report = Vec::new();
    let mut chunk = [0u8; 512];
    let report = loop {
        let n = stdout.read(&mut chunk)?;
        report.extend_from_slice(&chunk[..n]);
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(&report) {
            break Some(value);
        }
        if n == 0 || report.len() > 64 * 1024 {
            break None;
        }
    };
    let mut said = Vec::new();
    let mut byte = [0u8; 1];
    // Byte by byte: what follows `ready` is not ours to take.
    while !said.ends_with(b"ready\n") {
        if stderr.read(&mut byte)? == 0 || said.len() > 64 * 1024 {
            let said = String::from_utf8_lossy(&said).trim().to_string();
            return Err(io::Error::other(if said.is_empty() {
                "bubblewrap ended before the sandbox was ready".to_string()
            } else {
                said
            }));
        }
        said.push(byte[0]);
    }
    report.ok_or_else(|| io::Error::other("bubblewrap wrote no report"))
}

/// Runs a check the way commands will run, once: joining can fail where
/// building did not (a set-user-ID bubblewrap makes namespaces that belong
/// to root), and `/proc`'s host-wide settings must be read-only there.
fn can_join(
    namespaces: &Arc<Joinable>,
    filter: &Arc<Vec<Instruction>>,
    shell: &str,
) -> io::Result<()> {
    let mut probe = std::process::Command::new(shell);
    probe
        .args([
            "-c",
            "for f in /proc/sys/kernel/core_pattern /proc/sysrq-trigger; do if [ -e \"$f\" ] && [ -w \"$f\" ]; then exit 3; fi; done",
        ])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    child::join_before_exec(
        &mut probe,
        namespaces.clone(),
        c"/".to_owned(),
        filter.clone(),
        own_strings(),
    );
    let status = probe.status()?;
    match status.code() {
        Some(0) => Ok(()),
        Some(3) => Err(io::Error::other("/proc/sys stays writable in the sandbox")),
        _ => Err(io::Error::other(format!(
            "joining the sandbox failed ({status})"
        ))),
    }
}

/// Opens the namespaces of `pid` that differ from this process's own, in
/// the order to join them; `own_network` requires a network namespace
/// among them.
///
/// With `--disable-userns`, bubblewrap runs the command in a user
/// namespace nested in the one that owns the other namespaces, so the
/// outer one comes first (to be allowed into the others) and the nested
/// one last (so the command cannot make namespaces either).
///
/// The pid in the report counts in this process's pid namespace, while
/// `/proc` may belong to another (a container that did not mount its own):
/// each namespace bubblewrap reports must then be the one opened, or
/// nothing is joined.
fn open_namespaces(report: &serde_json::Value, own_network: bool) -> io::Result<Joinable> {
    use std::os::unix::fs::MetadataExt;
    let pid = report
        .get("child-pid")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| io::Error::other("bubblewrap reported no child pid"))?;
    let ours = |kind: &str| std::fs::metadata(format!("/proc/self/ns/{kind}"));
    let same =
        |a: &std::fs::Metadata, b: &std::fs::Metadata| a.ino() == b.ino() && a.dev() == b.dev();
    let mut namespaces = Vec::new();
    for (kind, flag) in KINDS {
        let theirs = PathBuf::from(format!("/proc/{pid}/ns/{kind}"));
        let Ok(theirs_meta) = std::fs::metadata(&theirs) else {
            // A kernel without this kind of namespace.
            continue;
        };
        if ours(kind).is_ok_and(|o| same(&o, &theirs_meta)) {
            continue;
        }
        let file = std::fs::File::open(&theirs)?;
        let reported = report
            .get(format!("{kind}-namespace"))
            .and_then(serde_json::Value::as_u64);
        let opened = file.metadata()?.ino();
        if reported.is_some_and(|inode| inode != opened) {
            return Err(io::Error::other(format!(
                "/proc/{pid} is not the process bubblewrap started (/proc belongs to another pid namespace)"
            )));
        }
        namespaces.push((std::os::fd::OwnedFd::from(file), flag));
    }
    for kind in ["mnt", "pid"] {
        if report.get(format!("{kind}-namespace")).is_none() {
            return Err(io::Error::other(format!(
                "bubblewrap reported no {kind} namespace"
            )));
        }
    }
    if namespaces.first().map(|(_, flag)| *flag) != Some(libc::CLONE_NEWUSER) {
        return Err(io::Error::other(
            "the sandbox has no user namespace of its own",
        ));
    }
    if own_network
        && !namespaces
            .iter()
            .any(|(_, flag)| *flag == libc::CLONE_NEWNET)
    {
        return Err(io::Error::other(
            "the sandbox has no network namespace of its own",
        ));
    }
    let parent = child::parent_user_namespace(&namespaces[0].0)?;
    let parent_meta = std::fs::File::from(parent.try_clone()?).metadata()?;
    let mut nested_user = None;
    if !ours("user").is_ok_and(|o| same(&o, &parent_meta)) {
        nested_user = Some(namespaces.remove(0).0);
        namespaces.insert(0, (parent, libc::CLONE_NEWUSER));
    }
    Ok(Joinable {
        first: namespaces,
        nested_user,
    })
}
