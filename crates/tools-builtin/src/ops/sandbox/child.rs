//! The one place this workspace runs code between `fork` and `exec`: the
//! set-up of a sandboxed command's first process (which then executes
//! bubblewrap). Everything here must be async-signal-safe: plain system
//! calls on memory prepared before the fork, no allocation, no locks.
#![allow(unsafe_code)]

use std::io;
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
