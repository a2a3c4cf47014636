//! How a worker process confines itself before it reads a script.
//!
//! In order: descriptors above stderr are closed; resource limits cap its
//! address space (a second memory cap under QuickJS's own), file size, core
//! dumps and open files; it dies with its parent; it cannot be traced or
//! dumped; and, once its VM is made, a seccomp filter allows only what a
//! running VM needs: reading and writing its pipes, memory management
//! without executable mappings, futexes, clocks, signal return and exit.
//! Everything else (open, socket, exec, clone, kill, ptrace...) kills it
//! with SIGSYS. The kernel gives seccomp on x86_64 and aarch64 here; on any other
//! architecture [`install_filter`] refuses, naming it, rather than run a
//! script unconfined.
// The filter and the limits are system calls with no safe wrapper in our
// dependencies; each `unsafe` below passes plain integers or a pointer to a
// live local.
#![allow(unsafe_code)]

/// Address space a worker may map: QuickJS's heap (256 MiB) plus the
/// program's own mappings, with room to spare.
pub const WORKER_ADDRESS_SPACE: u64 = 1024 * 1024 * 1024;

/// Why confinement failed. A worker that cannot confine itself exits
/// without running the script.
#[derive(Debug, thiserror::Error)]
#[error("the script worker could not confine itself: {0}")]
pub struct ConfineError(String);

fn last_error(what: &str) -> ConfineError {
    ConfineError(format!("{what}: {}", std::io::Error::last_os_error()))
}

fn set_limit(
    resource: libc::__rlimit_resource_t,
    value: u64,
    what: &str,
) -> Result<(), ConfineError> {
    let limit = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: a pointer to a live local.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(last_error(what));
    }
    Ok(())
}

/// Closes inherited descriptors, sets resource limits and process flags.
/// Runs before the VM is made.
pub fn limit_process() -> Result<(), ConfineError> {
    // SAFETY: plain integers; descriptors 0-2 are the pipes to the host.
    let closed = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    if closed != 0 {
        return Err(last_error("close_range"));
    }
    set_limit(libc::RLIMIT_AS, WORKER_ADDRESS_SPACE, "RLIMIT_AS")?;
    set_limit(libc::RLIMIT_FSIZE, 0, "RLIMIT_FSIZE")?;
    set_limit(libc::RLIMIT_CORE, 0, "RLIMIT_CORE")?;
    set_limit(libc::RLIMIT_NOFILE, 3, "RLIMIT_NOFILE")?;
    // SAFETY: plain integers.
    unsafe {
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return Err(last_error("PR_SET_PDEATHSIG"));
        }
        if libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(last_error("PR_SET_DUMPABLE"));
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(last_error("PR_SET_NO_NEW_PRIVS"));
        }
    }
    // The parent may have died before the death signal was armed.
    // SAFETY: no arguments.
    if unsafe { libc::getppid() } == 1 {
        return Err(ConfineError("the parent is gone".into()));
    }
    Ok(())
}

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const AND_K: u16 = 0x54;
const RET_K: u16 = 0x06;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
/// Low word of argument 2 (`prot` of mmap and mprotect).
const OFFSET_ARG2: u32 = 16 + 8 * 2;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: Option<u32> = Some(0xc000_003e);
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: Option<u32> = Some(0xc000_00b7);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const AUDIT_ARCH: Option<u32> = None;

/// System calls a running VM makes, allowed with any arguments.
fn allowed() -> Vec<i64> {
    vec![
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_close,
        libc::SYS_munmap,
        libc::SYS_mremap,
        libc::SYS_brk,
        libc::SYS_madvise,
        libc::SYS_futex,
        libc::SYS_clock_gettime,
        libc::SYS_gettimeofday,
        libc::SYS_rt_sigreturn,
        libc::SYS_rt_sigprocmask,
        libc::SYS_sigaltstack,
        libc::SYS_sched_yield,
        libc::SYS_getrandom,
        libc::SYS_restart_syscall,
        libc::SYS_exit,
        libc::SYS_exit_group,
        // Not getpid/gettid/tgkill: with tgkill a compromised worker could
        // signal any process (as root, the agent). An abort() then ends in
        // SIGSYS instead of SIGABRT, which the host reports the same way.
    ]
}

fn statement(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(k: u32, jt: usize, jf: usize) -> Result<libc::sock_filter, ConfineError> {
    let offset = |n: usize| u8::try_from(n).map_err(|_| ConfineError("filter too long".into()));
    Ok(libc::sock_filter {
        code: JEQ_K,
        jt: offset(jt)?,
        jf: offset(jf)?,
        k,
    })
}

/// The filter as BPF instructions.
fn program(arch: u32) -> Result<Vec<libc::sock_filter>, ConfineError> {
    let plain = allowed();
    let n = plain.len();
    // Layout: 0 load arch, 1 check arch, 2 load nr, 3..3+n plain checks,
    // then mmap, mprotect, load prot, and PROT_EXEC, test, kill, allow.
    let mmap_at = 3 + n;
    let kill_at = mmap_at + 5;
    let allow_at = kill_at + 1;
    let mut p = vec![
        statement(LD_W_ABS, OFFSET_ARCH),
        jump(arch, 0, kill_at - 2)?,
        statement(LD_W_ABS, OFFSET_NR),
    ];
    for (i, nr) in plain.iter().enumerate() {
        let at = 3 + i;
        p.push(jump(*nr as u32, allow_at - at - 1, 0)?);
    }
    // mmap and mprotect only without PROT_EXEC: no new executable memory.
    p.push(jump(libc::SYS_mmap as u32, 1, 0)?);
    p.push(jump(
        libc::SYS_mprotect as u32,
        0,
        kill_at - (mmap_at + 1) - 1,
    )?);
    p.push(statement(LD_W_ABS, OFFSET_ARG2));
    p.push(statement(AND_K, libc::PROT_EXEC as u32));
    p.push(jump(0, 1, 0)?);
    p.push(statement(RET_K, RET_KILL_PROCESS));
    p.push(statement(RET_K, RET_ALLOW));
    debug_assert_eq!(p.len(), allow_at + 1);
    Ok(p)
}

/// Installs the seccomp allow-list on this (single-threaded) process.
pub fn install_filter() -> Result<(), ConfineError> {
    let Some(arch) = AUDIT_ARCH else {
        return Err(ConfineError(format!(
            "seccomp filtering is not supported on {}; scripts will not run unconfined",
            std::env::consts::ARCH
        )));
    };
    let mut filter = program(arch)?;
    let prog = libc::sock_fprog {
        len: u16::try_from(filter.len()).map_err(|_| ConfineError("filter too long".into()))?,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `prog` points at `filter`, alive for the call; the kernel copies it.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &prog as *const libc::sock_fprog as libc::c_ulong,
            0,
            0,
        )
    };
    if rc != 0 {
        return Err(last_error("seccomp"));
    }
    Ok(())
}
