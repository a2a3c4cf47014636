//! The one place this workspace runs code between `fork` and `exec`: the
//! set-up of a sandboxed command's first process, which then executes
//! bubblewrap ([`confine_before_exec`]) or joins the namespaces of a
//! resident sandbox ([`join_before_exec`]). Everything here must be
//! async-signal-safe: plain system calls on memory prepared before the
//! fork, no allocation, no locks. One helper outside a fork lives here
//! too, since it also needs a raw system call: [`parent_user_namespace`].
#![allow(unsafe_code)]

use std::ffi::CString;
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

/// Makes `command`'s process join `namespaces` (in their order) and run
/// the command there, as bubblewrap would have:
///
/// ```text
/// spawned process: setns, chdir                    (outside the sandbox)
///   relay: waits, then exits with the status        (in the sandbox)
///     supervisor: child subreaper; waits for the shell, then kills
///     whatever the command left behind
///       the shell: new session, no capabilities, no-new-privs,
///       seccomp `filter`, every descriptor above 2 closed on exec
/// ```
///
/// The command runs in the sandbox's own pid namespace, whose `/proc`
/// bubblewrap mounted (with `/proc/sys` and the like read-only), so the
/// pids it sees are the ones `/proc` knows. Everything it started ends
/// with it, as when bubblewrap's init exits: orphans are re-parented to
/// the supervisor, which kills them all once the shell exits. The relay
/// and the supervisor drop their capabilities, become non-dumpable (no
/// process of the sandbox can read or trace them), close every
/// descriptor and exit with the shell's status (128 + the signal number
/// for a signal, as bubblewrap reports it); each process dies with its
/// parent.
///
/// Both are copies of this process, and the supervisor is visible in the
/// sandbox's `/proc`: before anything else, the first process blanks its
/// copy of this process's command line and environment (`own_strings`,
/// see [`ProcessStrings`]), so that no copy shows an `--api-key` given on
/// the agent's command line, and names itself `sandbox-relay`.
pub(crate) fn join_before_exec(
    command: &mut std::process::Command,
    namespaces: Arc<Vec<Namespace>>,
    cwd: CString,
    filter: Arc<Vec<Instruction>>,
    own_strings: Option<ProcessStrings>,
) {
    // SAFETY: the closure makes system calls (setns, chdir, fork, waitpid,
    // kill, open, read, prctl, capset, setsid, close_range, seccomp) on
    // data allocated before the fork (`namespaces`, `cwd`, `filter`) and
    // on stack locals; it allocates nothing and takes no lock, and each
    // forked process has a single thread.
    unsafe {
        command.pre_exec(move || {
            if let Some(strings) = own_strings {
                // This process's private copy of the memory (copy on
                // write): the agent's own strings stay as they are.
                libc::memset(strings.start as *mut libc::c_void, 0, strings.len);
            }
            libc::prctl(libc::PR_SET_NAME, c"sandbox-relay".as_ptr(), 0, 0, 0);
            close_on_exec_above_stderr()?;
            for (fd, kind) in namespaces.iter() {
                if libc::setns(fd.as_raw_fd(), *kind) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            // Joining a mount namespace moves to its root.
            if libc::chdir(cwd.as_ptr()) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The pid namespace applies to children only.
            continue_in_child(Parent::Relay)?;
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            continue_in_child(Parent::Supervisor)?;
            // The shell.
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            drop_capabilities()?;
            install(&filter)
        });
    }
}

/// What the parent side of [`continue_in_child`] does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parent {
    /// Waits for the child, exits with its status.
    Relay,
    /// The same, then kills every process left under it.
    Supervisor,
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

/// Forks. The child returns `Ok` and goes on; the parent does as `role`
/// says and never returns (see [`join_before_exec`]).
unsafe fn continue_in_child(role: Parent) -> io::Result<()> {
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
        if role == Parent::Supervisor {
            // The shell led a session and a process group of its own.
            libc::kill(-child, libc::SIGKILL);
            kill_children();
        }
        libc::_exit(code);
    }
}

/// Kills every child of this process until none is left: each killed
/// child's own children are re-parented here (a child subreaper), and go
/// in the next round.
unsafe fn kill_children() {
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: a NUL-terminated literal path; a stack buffer that the
        // read fills at most up to its length.
        let read = unsafe {
            let fd = libc::open(
                c"/proc/thread-self/children".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            if fd < 0 {
                -1
            } else {
                let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                libc::close(fd);
                n
            }
        };
        let mut killed = false;
        let mut pid: libc::pid_t = 0;
        let len = read.max(0) as usize;
        // A full buffer may end inside a number: that one waits for the
        // next round, never a truncated pid.
        let end: &[u8] = if len < buf.len() { b" " } else { b"" };
        for &b in buf[..len].iter().chain(end) {
            if b.is_ascii_digit() {
                pid = pid
                    .saturating_mul(10)
                    .saturating_add((b - b'0') as libc::pid_t);
            } else if pid > 0 {
                // SAFETY: integer arguments only.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                killed = true;
                pid = 0;
            }
        }
        let mut status: libc::c_int = 0;
        // SAFETY: a stack local for the status. Blocks until one child has
        // gone (each was sent SIGKILL); -1 once there is none.
        let reaped =
            unsafe { libc::waitpid(-1, &mut status, if killed { 0 } else { libc::WNOHANG }) };
        if reaped < 0 && unsafe { *libc::__errno_location() } != libc::EINTR {
            return;
        }
        if !killed && reaped == 0 {
            // No child listed, none exited: nothing can be listed (no
            // `children` file); the process group was all there was to kill.
            return;
        }
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
