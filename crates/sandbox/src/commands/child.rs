//! The one place this workspace runs code between `fork` and `exec`: the
//! set-up of a sandboxed command's first process, which then executes
//! bubblewrap ([`confine_before_exec`]) or joins the namespaces of a
//! resident sandbox ([`join_before_exec`]). Everything here must be
//! async-signal-safe: plain system calls on memory prepared before the
//! fork, no allocation, no locks. One helper outside a fork lives here
//! too, since it also needs a raw system call: [`parent_user_namespace`].
#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::sync::Arc;

use super::seccomp::Instruction;

/// Makes `command`'s process, before it executes anything:
/// 1. mark every descriptor above 2 close-on-exec, so nothing the agent
///    inherited or opened (say `exec 7>>/outside` in the shell that started
///    it) reaches the sandbox;
/// 2. set no-new-privileges and install `filter` (see
///    [`seccomp`](super::seccomp)), inherited by everything it starts.
pub(crate) fn confine_before_exec(
    command: &mut std::process::Command,
    filter: Arc<Vec<Instruction>>,
) {
    // SAFETY: the closure only makes system calls (close_range, fcntl,
    // getrlimit, prctl, seccomp) on data that lives in `filter`, allocated
    // before the fork and not touched by any other thread of the child
    // (there is none); it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(move || {
            close_on_exec_above_stderr()?;
            install(&filter)
        });
    }
}

fn close_on_exec_above_stderr() -> io::Result<()> {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on
    // descriptors of this process; no memory is passed.
    let done = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
        )
    };
    if done == 0 {
        return Ok(());
    }
    // Kernels before 5.11: one fcntl per possible descriptor.
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into `limit`, a local of the right type.
    let highest = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur.min(1 << 20) as libc::c_int
    } else {
        1 << 16
    };
    for fd in 3..highest {
        // SAFETY: F_SETFD on a number that may not be open: EBADF is
        // harmless and ignored.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    Ok(())
}

fn install(filter: &[Instruction]) -> io::Result<()> {
    let program = libc::sock_fprog {
        len: filter.len() as libc::c_ushort,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `program` points at `filter`, which outlives the call; the
    // kernel copies the program.
    let installed = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0 as libc::c_uint,
            &program as *const libc::sock_fprog,
        )
    };
    if installed != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One namespace to join: an open `/proc/<pid>/ns/<kind>` and its
/// `CLONE_NEW*` flag.
pub(crate) type Namespace = (OwnedFd, libc::c_int);

/// The namespaces of a standing sandbox, as a command joins them.
#[derive(Debug)]
pub(crate) struct Joinable {
    /// Joined first, in order: the user namespace owning the others, then
    /// mount, ipc, uts, network and cgroup.
    pub(crate) first: Vec<Namespace>,
    /// bubblewrap's nested user namespace (`--disable-userns`), joined
    /// last, once the command's `/proc` is mounted.
    pub(crate) nested_user: Option<OwnedFd>,
}

/// The parts of `/proc` that stay read-only, as bubblewrap and container
/// runtimes keep them: as root, the sandbox's root is the host's, and the
/// kernel lets the host's root write `kernel.core_pattern` (a program run
/// as root outside on the next crash), `sysrq-trigger` (reboot) and IRQ
/// affinities without any capability.
pub(crate) const PROC_READ_ONLY: [&CStr; 5] = [
    c"/proc/sys",
    c"/proc/sysrq-trigger",
    c"/proc/irq",
    c"/proc/bus",
    c"/proc/fs",
];

/// Makes `command`'s process join `namespaces` and run the command there,
/// as bubblewrap would have:
///
/// ```text
/// spawned process: setns, then a mount and a pid namespace of its own;
/// waits, then exits with the status                 (outside the sandbox)
///   supervisor: init of the command's pid namespace; mounts its /proc
///   (PROC_READ_ONLY read-only), waits for the shell, reaps orphans
///     the shell: new session, no capabilities, no-new-privs,
///     seccomp `filter`, every descriptor above 2 closed on exec
/// ```
///
/// The command's pid namespace holds nothing but the command: no process
/// of the agent or of another command is visible, and its `/proc` knows
/// the pids it sees. The supervisor is its init: nothing inside can
/// signal it (the kernel ignores signals to an init from its own
/// namespace), trace it or read its memory (non-dumpable, no
/// capabilities), and when the shell exits it exits, which kills whatever
/// the command left behind, as when bubblewrap's init exits. It dies with
/// the first process, which the agent kills on a timeout or cancel.
///
/// The supervisor is a copy of this process and visible in the command's
/// `/proc`: before anything else, the first process blanks its copy of
/// this process's command line and environment (`own_strings`, see
/// [`ProcessStrings`]), so that it shows no `--api-key` given on the
/// agent's command line, and names itself `sandbox-init`.
pub(crate) fn join_before_exec(
    command: &mut std::process::Command,
    namespaces: Arc<Joinable>,
    cwd: CString,
    filter: Arc<Vec<Instruction>>,
    own_strings: Option<ProcessStrings>,
) {
    let agent = std::process::id() as libc::pid_t;
    // SAFETY: the closure makes system calls (setns, unshare, mount, chdir,
    // fork, waitpid, prctl, capset, setsid, close_range, seccomp) on data
    // allocated before the fork (`namespaces`, `cwd`, `filter`), on string
    // literals and on stack locals; it allocates nothing and takes no lock,
    // and each forked process has a single thread.
    unsafe {
        command.pre_exec(move || {
            if let Some(strings) = own_strings {
                // This process's private copy of the memory (copy on
                // write): the agent's own strings stay as they are.
                libc::memset(strings.start as *mut libc::c_void, 0, strings.len);
            }
            libc::prctl(libc::PR_SET_NAME, c"sandbox-init".as_ptr(), 0, 0, 0);
            // Dies with the agent (even by SIGKILL, which runs no cleanup
            // and no after-command check), and with it the whole command.
            // The signal comes when the spawning thread ends: a tokio
            // worker lives as long as the runtime.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != agent {
                return Err(io::Error::other("the agent is gone"));
            }
            close_on_exec_above_stderr()?;
            for (fd, kind) in namespaces.first.iter() {
                if libc::setns(fd.as_raw_fd(), *kind) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            // A copy of the sandbox's mounts for this command alone, and
            // a pid namespace for its children.
            if libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWPID) != 0 {
                return Err(io::Error::last_os_error());
            }
            mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE)?;
            // Joining a mount namespace moved to its root.
            if libc::chdir(cwd.as_ptr()) != 0 {
                return Err(io::Error::last_os_error());
            }
            continue_in_child()?;
            // The supervisor, pid 1 of the command's namespace.
            let hardened = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            mount(Some(c"proc"), c"/proc", Some(c"proc"), hardened)?;
            for path in PROC_READ_ONLY {
                if libc::access(path.as_ptr(), libc::F_OK) != 0 {
                    continue;
                }
                mount(Some(path), path, None, libc::MS_BIND | libc::MS_REC)?;
                mount(
                    None,
                    path,
                    None,
                    libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | hardened,
                )?;
            }
            if let Some(nested) = &namespaces.nested_user
                && libc::setns(nested.as_raw_fd(), libc::CLONE_NEWUSER) != 0
            {
                return Err(io::Error::last_os_error());
            }
            continue_in_child()?;
            // The shell.
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            drop_capabilities()?;
            install(&filter)
        });
    }
}

/// `mount(2)`, with an error for a failure.
unsafe fn mount(
    source: Option<&CStr>,
    target: &CStr,
    kind: Option<&CStr>,
    flags: libc::c_ulong,
) -> io::Result<()> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: NUL-terminated strings or null pointers, as mount(2) takes.
    let done = unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(kind),
            flags,
            std::ptr::null(),
        )
    };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Where this process's command line and environment strings lie (what
/// `/proc/<pid>/cmdline` and `environ` read), from `/proc/self/stat`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProcessStrings {
    start: usize,
    len: usize,
}

impl ProcessStrings {
    /// This process's, or `None` when `/proc` does not say or says
    /// something implausible.
    pub(crate) fn of_this_process() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command name, which may hold spaces: the first
        // is field 3 (state); arg_start is field 48, env_end field 51.
        let (_, rest) = stat.rsplit_once(')')?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3)?.parse::<usize>().ok();
        let (start, env_end) = (field(48)?, field(51)?);
        let len = env_end.checked_sub(start)?;
        // The strings sit together at the top of the stack; anything else
        // is not what we think it is.
        (start != 0 && len != 0 && len <= 4 << 20).then_some(ProcessStrings { start, len })
    }
}

/// Forks. The child returns `Ok` and goes on; the parent waits for it
/// (reaping any orphan too, as an init must), then exits with its status
/// and never returns (see [`join_before_exec`]).
unsafe fn continue_in_child() -> io::Result<()> {
    // SAFETY: this process has one thread; the child only goes on with the
    // async-signal-safe set-up.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(io::Error::last_os_error());
    }
    if child == 0 {
        // SAFETY: integer arguments only. Should the parent already be
        // gone, the agent's kill of the call's process tree still ends it.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        return Ok(());
    }
    // SAFETY: integer arguments and stack locals only.
    unsafe {
        let _ = drop_capabilities();
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        // Nothing to keep: above all not the pipe on which std learns that
        // the exec succeeded, nor the command's output pipe.
        libc::syscall(
            libc::SYS_close_range,
            0 as libc::c_uint,
            libc::c_uint::MAX,
            0 as libc::c_uint,
        );
        let mut code = 127;
        loop {
            let mut status: libc::c_int = 0;
            let reaped = libc::waitpid(-1, &mut status, 0);
            if reaped == child {
                code = if libc::WIFEXITED(status) {
                    libc::WEXITSTATUS(status)
                } else if libc::WIFSIGNALED(status) {
                    128 + libc::WTERMSIG(status)
                } else {
                    1
                };
                break;
            }
            if reaped < 0 && *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        libc::_exit(code);
    }
}

/// Empties the capability bounding, ambient, effective, permitted and
/// inheritable sets: nothing executed later regains any.
fn drop_capabilities() -> io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    for cap in 0..64 {
        // SAFETY: integer arguments; capabilities past the last one give
        // EINVAL, which is expected.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
    }
    // SAFETY: integer arguments only.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads a header and two data structs laid out as the
    // kernel's (`_LINUX_CAPABILITY_VERSION_3`), both locals.
    let done =
        unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The user namespace that owns the one `user_ns` refers to
/// (`NS_GET_PARENT`).
///
/// # Errors
/// The kernel refuses (the parent is outside this process's reach, or the
/// kernel predates 4.9).
pub(crate) fn parent_user_namespace(user_ns: &OwnedFd) -> io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    const NS_GET_PARENT: libc::c_ulong = 0xb702; // _IO(0xb7, 0x2)
    // SAFETY: NS_GET_PARENT takes no argument and returns a new descriptor
    // (or -1); `user_ns` is open for the duration of the call.
    let fd = unsafe { libc::ioctl(user_ns.as_raw_fd(), NS_GET_PARENT as _) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by the kernel and is owned by no one
    // else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
