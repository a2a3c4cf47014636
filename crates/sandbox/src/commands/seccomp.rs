//! The seccomp filter every sandboxed command runs under: a classic BPF
//! program, built here as plain data and installed by
//! [`child`](super::child) between fork and exec.
//!
//! It refuses what the namespaces cannot:
//! - with the network off, every `socket()` but inet, inet6 and netlink
//!   (not its socket diagnostics): the command runs in a network namespace
//!   of its own, where TCP and UDP reach only its own loopback, but a unix
//!   socket would cross it by its path (docker.sock, the ssh agent's,
//!   D-Bus's), and vsock reaches the host. So no unix socket at all;
//!   `socketpair` stays allowed for stream and seqpacket pairs, which are
//!   pipes between a command's own processes (a datagram pair could send
//!   to any socket path);
//! - `mknod`/`mknodat` of block and character devices, whoever asks;
//! - set-user-ID and set-group-ID bits, whether set by `chmod` (all its
//!   forms), at creation (`open`/`openat`/`creat` with `O_CREAT`) or by
//!   `mknod`: as root, the namespace's root is the host's, so a set-id file
//!   made inside would give root to anyone outside; `openat2`, whose mode
//!   sits where a filter cannot read it, is refused as if absent;
//! - io_uring, whose requests would bypass the socket rule, and the kernel
//!   keyrings, shared with the agent's session;
//! - system calls of another ABI (32-bit or x32 entry points), which would
//!   bypass every rule above.
//!
//! Why hand-built and not `seccompiler` (0.5, checked against its source):
//! its programs cannot say three things this one must.
//! - **x32.** It matches a system call by its exact number only. x32 calls
//!   come in on the x86-64 arch value with bit 30 set in the number
//!   (`socket` as `0x4000_0029`), so they would match no rule and be
//!   allowed: every refusal above would be bypassed. We refuse the whole
//!   range with one `JGE` on that bit; seccompiler has no comparison on the
//!   number, and listing every x32 number of every refused call would still
//!   leave x32 open for the rest.
//! - **Another arch.** Its arch check is fixed to `SECCOMP_RET_KILL_PROCESS`;
//!   ours answers `ENOSYS`, so a 32-bit program's probe fails like a missing
//!   call instead of killing the command.
//! - **Several answers.** A filter has one match action; ours answers
//!   `EPERM` (devices, set-id bits), `EACCES` (sockets) and `ENOSYS`
//!   (io_uring, keyrings, `openat2`). Stacking three filters would need
//!   three installs between fork and exec and the kernel's precedence
//!   between equal actions to come out right.
//!
//! It also lacks a masked "not equal" (socketpair's type masked to
//! stream or seqpacket would become fourteen rules), though that alone
//! could be worked around. The program stays small (under a hundred
//! instructions) and `tests::decisions` runs it through an interpreter of
//! the instructions used, case by case.

/// One BPF instruction (`struct sock_filter`).
pub(crate) type Instruction = libc::sock_filter;

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const AND_K: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;

// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// Low 32 bits of argument `n` (little-endian).
const fn arg(n: u32) -> u32 {
    16 + 8 * n
}

#[cfg(target_arch = "x86_64")]
mod abi {
    pub const AUDIT_ARCH: u32 = 0xc000_003e;
    pub const SOCKET: u32 = 41;
    pub const SOCKETPAIR: u32 = 53;
    pub const MKNOD: Option<u32> = Some(133);
    pub const MKNODAT: u32 = 259;
    /// System calls whose argument `.1` is a mode: chmod, fchmod, creat.
    pub const MODE_IN_ARG1: &[u32] = &[90, 91, 85];
    /// fchmodat, fchmodat2.
    pub const MODE_IN_ARG2: &[u32] = &[268, 452];
    /// open(path, flags, mode).
    pub const OPEN: Option<u32> = Some(2);
    /// openat(dirfd, path, flags, mode).
    pub const OPENAT: u32 = 257;
    pub const OPENAT2: u32 = 437;
    /// add_key, request_key, keyctl.
    pub const KEYS: [u32; 3] = [248, 249, 250];
    /// x32 system calls carry this bit; they are another ABI.
    pub const FOREIGN_BIT: Option<u32> = Some(0x4000_0000);
}

#[cfg(target_arch = "aarch64")]
mod abi {
    pub const AUDIT_ARCH: u32 = 0xc000_00b7;
    pub const SOCKET: u32 = 198;
    pub const SOCKETPAIR: u32 = 199;
    pub const MKNOD: Option<u32> = None;
    pub const MKNODAT: u32 = 33;
    pub const MODE_IN_ARG1: &[u32] = &[52];
    pub const MODE_IN_ARG2: &[u32] = &[53, 452];
    pub const OPEN: Option<u32> = None;
    pub const OPENAT: u32 = 56;
    pub const OPENAT2: u32 = 437;
    pub const KEYS: [u32; 3] = [217, 218, 219];
    pub const FOREIGN_BIT: Option<u32> = None;
}

const IO_URING_SETUP: u32 = 425;
const IO_URING_ENTER: u32 = 426;
const IO_URING_REGISTER: u32 = 427;
const AF_INET: u32 = 2;
const AF_INET6: u32 = 10;
const AF_NETLINK: u32 = 16;
const NETLINK_SOCK_DIAG: u32 = 4;
const S_IFMT: u32 = 0o170_000;
const S_IFCHR: u32 = 0o020_000;
const S_IFBLK: u32 = 0o060_000;
/// S_ISUID | S_ISGID.
const SET_ID_BITS: u32 = 0o6000;
/// O_CREAT | __O_TMPFILE: the flags with which open's mode is used.
const CREATING: u32 = 0o100 | 0o2000_0000;
/// The low bits of socketpair's type (SOCK_NONBLOCK/CLOEXEC masked off).
const SOCK_TYPE_MASK: u32 = 0xf;
const SOCK_STREAM: u32 = 1;
const SOCK_SEQPACKET: u32 = 5;

fn op(code: u16, k: u32) -> Instruction {
    Instruction {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

/// `if A == k goto +jt else +jf`.
fn jeq(k: u32, jt: u8, jf: u8) -> Instruction {
    Instruction {
        code: JEQ_K,
        jt,
        jf,
        k,
    }
}

/// Allows the call unless the mode in argument `mode_arg` has set-id
/// bits (EPERM): load, mask, test, allow, refuse.
fn set_id_check(mode_arg: u32) -> [Instruction; 5] {
    [
        op(LD_W_ABS, arg(mode_arg)),
        op(AND_K, SET_ID_BITS),
        jeq(0, 0, 1),
        op(RET_K, RET_ALLOW),
        op(RET_K, RET_ERRNO | libc::EPERM as u32),
    ]
}

/// The filter for a command, or `None` on an architecture this module does
/// not know (the caller refuses to run then).
pub(crate) fn command_filter(network: bool) -> Option<Vec<Instruction>> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        Some(build(network))
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = network;
        None
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn build(network: bool) -> Vec<Instruction> {
    let deny = |errno: i32| op(RET_K, RET_ERRNO | errno as u32);
    // Tails jumped to from the dispatch below; their positions are computed
    // from the end, so the dispatch can be written top-down.
    let mut tails: Vec<Vec<Instruction>> = Vec::new();
    // Tail 0: refuse with EPERM.
    tails.push(vec![deny(libc::EPERM)]);
    // Tail 1: mknod(path, mode): device nodes and set-id files refused.
    // Tail 2: mknodat(dirfd, path, mode): the same on the third argument.
    for mode_arg in [1, 2] {
        let mut tail = vec![
            op(LD_W_ABS, arg(mode_arg)),
            op(AND_K, S_IFMT),
            // Past the set-id check, to its refusal.
            jeq(S_IFCHR, 5, 0),
            jeq(S_IFBLK, 4, 0),
        ];
        tail.extend(set_id_check(mode_arg));
        tails.push(tail);
    }
    // Tail 3: socket(domain, type, protocol) without network: inet and
    // inet6, which reach nothing but the sandbox's own loopback (the
    // command runs in a network namespace of its own), and netlink, but not
    // its socket-diagnostics family. No other family: unix sockets cross
    // network namespaces by their paths (docker.sock), vsock reaches the
    // host, packet and the rest have no use here.
    tails.push(vec![
        op(LD_W_ABS, arg(0)),
        jeq(AF_INET, 4, 0),
        jeq(AF_INET6, 3, 0),
        jeq(AF_NETLINK, 0, 3),
        op(LD_W_ABS, arg(2)),
        jeq(NETLINK_SOCK_DIAG, 1, 0),
        op(RET_K, RET_ALLOW),
        deny(libc::EACCES),
    ]);
    // Tail 4: io_uring (and openat2) refused as if the kernel had none.
    tails.push(vec![deny(libc::ENOSYS)]);
    // Tails 5 and 6: a mode in argument 1 or 2 with set-id bits.
    for mode_arg in [1, 2] {
        tails.push(set_id_check(mode_arg).to_vec());
    }
    // Tails 7 and 8: open (flags 1, mode 2) and openat (flags 2, mode 3):
    // the mode counts only when the call creates.
    for (flags_arg, mode_arg) in [(1, 2), (2, 3)] {
        let mut tail = vec![
            op(LD_W_ABS, arg(flags_arg)),
            op(AND_K, CREATING),
            // Not creating: to the check's allow.
            jeq(0, 3, 0),
        ];
        tail.extend(set_id_check(mode_arg));
        tails.push(tail);
    }
    // Tail 9: socketpair without network: stream and seqpacket pairs only.
    // They are connected to each other from birth; a datagram one could
    // still send to any unix socket by its path.
    tails.push(vec![
        op(LD_W_ABS, arg(1)),
        op(AND_K, SOCK_TYPE_MASK),
        jeq(SOCK_STREAM, 1, 0),
        jeq(SOCK_SEQPACKET, 0, 1),
        op(RET_K, RET_ALLOW),
        deny(libc::EACCES),
    ]);

    let mut head = vec![op(LD_W_ABS, ARCH)];
    // Another ABI: refused outright (ENOSYS), so its socketcall and the
    // like cannot go around the rules.
    head.push(jeq(abi::AUDIT_ARCH, 1, 0));
    head.push(deny(libc::ENOSYS));
    head.push(op(LD_W_ABS, NR));
    let mut checks: Vec<(u32, usize)> = vec![(abi::MKNODAT, 2)];
    if let Some(mknod) = abi::MKNOD {
        checks.push((mknod, 1));
    }
    if !network {
        checks.push((abi::SOCKET, 3));
        checks.push((abi::SOCKETPAIR, 9));
    }
    for nr in [
        IO_URING_SETUP,
        IO_URING_ENTER,
        IO_URING_REGISTER,
        abi::OPENAT2,
    ] {
        checks.push((nr, 4));
    }
    // The kernel keyrings are shared with the agent's session (Kerberos
    // tickets, keyctl secrets): refused as if absent.
    for nr in abi::KEYS {
        checks.push((nr, 4));
    }
    for nr in abi::MODE_IN_ARG1 {
        checks.push((*nr, 5));
    }
    for nr in abi::MODE_IN_ARG2 {
        checks.push((*nr, 6));
    }
    if let Some(open) = abi::OPEN {
        checks.push((open, 7));
    }
    checks.push((abi::OPENAT, 8));
    // Layout: head, [foreign check], checks (one jeq each), allow, tails.
    let tail_lengths: Vec<usize> = tails.iter().map(Vec::len).collect();
    let tail_start = |t: usize| -> usize { tail_lengths[..t].iter().sum() };
    let after_checks = checks.len() + 1; // + the allow
    if let Some(bit) = abi::FOREIGN_BIT {
        // Jump over the checks and the allow to tail 4 (ENOSYS).
        let distance = checks.len() + 1 + tail_start(4);
        head.push(Instruction {
            code: JGE_K,
            jt: distance as u8,
            jf: 0,
            k: bit,
        });
    }
    for (i, (nr, tail)) in checks.iter().enumerate() {
        // From the instruction after this one to the tail's first.
        let remaining = after_checks - i - 1;
        head.push(jeq(*nr, (remaining + tail_start(*tail)) as u8, 0));
    }
    head.push(op(RET_K, RET_ALLOW));
    head.extend(tails.into_iter().flatten());
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny interpreter for the subset of BPF the filter uses, to check
    /// the jump arithmetic without a kernel.
    fn run(program: &[Instruction], arch: u32, nr: u32, args: [u32; 6]) -> u32 {
        let load = |offset: u32| -> u32 {
            match offset {
                ARCH => arch,
                NR => nr,
                o => args[((o - 16) / 8) as usize],
            }
        };
        let mut a = 0u32;
        let mut pc = 0usize;
        loop {
            let i = program[pc];
            pc += 1;
            match i.code {
                LD_W_ABS => a = load(i.k),
                AND_K => a &= i.k,
                JEQ_K => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                JGE_K => pc += usize::from(if a >= i.k { i.jt } else { i.jf }),
                RET_K => return i.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
    }

    #[test]
    fn decisions() {
        let off = build(false);
        let on = build(true);
        let arch = abi::AUDIT_ARCH;
        let errno = |e: i32| RET_ERRNO | e as u32;
        // Without network: unix, packet, vsock refused; inet, inet6 (in
        // the sandbox's own network namespace) and netlink not.
        for domain in [1, 17, 40] {
            let socket = [domain, 1, 0, 0, 0, 0];
            assert_eq!(run(&off, arch, abi::SOCKET, socket), errno(libc::EACCES));
            assert_eq!(run(&on, arch, abi::SOCKET, socket), RET_ALLOW);
        }
        for domain in [2, 10] {
            let socket = [domain, 2, 0, 0, 0, 0];
            assert_eq!(run(&off, arch, abi::SOCKET, socket), RET_ALLOW);
        }
        assert_eq!(run(&off, arch, abi::SOCKET, [16, 3, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(
            run(&off, arch, abi::SOCKET, [16, 3, NETLINK_SOCK_DIAG, 0, 0, 0]),
            errno(libc::EACCES)
        );
        // Pairs: stream and seqpacket (with flags) yes, datagram not.
        let cloexec = 0o2_000_000;
        for (kind, without) in [
            (SOCK_STREAM, RET_ALLOW),
            (SOCK_SEQPACKET | cloexec, RET_ALLOW),
            (2, errno(libc::EACCES)),
        ] {
            assert_eq!(
                run(&off, arch, abi::SOCKETPAIR, [1, kind, 0, 0, 0, 0]),
                without
            );
            assert_eq!(
                run(&on, arch, abi::SOCKETPAIR, [1, kind, 0, 0, 0, 0]),
                RET_ALLOW
            );
        }
        // Devices never, other nodes (FIFOs) yes.
        for p in [&off, &on] {
            assert_eq!(
                run(p, arch, abi::MKNODAT, [0, 0, S_IFBLK | 0o600, 0, 0, 0]),
                errno(libc::EPERM)
            );
            assert_eq!(
                run(p, arch, abi::MKNODAT, [0, 0, S_IFCHR | 0o600, 0, 0, 0]),
                errno(libc::EPERM)
            );
            assert_eq!(
                run(p, arch, abi::MKNODAT, [0, 0, 0o010_000 | 0o600, 0, 0, 0]),
                RET_ALLOW
            );
            if let Some(mknod) = abi::MKNOD {
                assert_eq!(
                    run(p, arch, mknod, [0, S_IFBLK | 0o600, 0, 0, 0, 0]),
                    errno(libc::EPERM)
                );
                assert_eq!(run(p, arch, mknod, [0, 0o010_644, 0, 0, 0, 0]), RET_ALLOW);
            }
            // Set-id bits, however they would be set.
            for nr in abi::MODE_IN_ARG1 {
                assert_eq!(
                    run(p, arch, *nr, [0, 0o4755, 0, 0, 0, 0]),
                    errno(libc::EPERM)
                );
                assert_eq!(
                    run(p, arch, *nr, [0, 0o2755, 0, 0, 0, 0]),
                    errno(libc::EPERM)
                );
                assert_eq!(run(p, arch, *nr, [0, 0o755, 0, 0, 0, 0]), RET_ALLOW);
            }
            for nr in abi::MODE_IN_ARG2 {
                assert_eq!(
                    run(p, arch, *nr, [0, 0, 0o4755, 0, 0, 0]),
                    errno(libc::EPERM)
                );
                assert_eq!(run(p, arch, *nr, [0, 0, 0o1777, 0, 0, 0]), RET_ALLOW);
            }
            let o_creat = 0o100;
            assert_eq!(
                run(p, arch, abi::OPENAT, [0, 0, o_creat | 1, 0o4755, 0, 0]),
                errno(libc::EPERM)
            );
            assert_eq!(
                run(p, arch, abi::OPENAT, [0, 0, o_creat | 1, 0o644, 0, 0]),
                RET_ALLOW
            );
            // Without O_CREAT the mode is not looked at (it may be anything).
            assert_eq!(
                run(p, arch, abi::OPENAT, [0, 0, 0, 0o7777, 0, 0]),
                RET_ALLOW
            );
            if let Some(open) = abi::OPEN {
                assert_eq!(
                    run(p, arch, open, [0, o_creat, 0o6755, 0, 0, 0]),
                    errno(libc::EPERM)
                );
                assert_eq!(run(p, arch, open, [0, 0, 0o6755, 0, 0, 0]), RET_ALLOW);
            }
            assert_eq!(
                run(p, arch, abi::MKNODAT, [0, 0, 0o100_000 | 0o4755, 0, 0, 0]),
                errno(libc::EPERM)
            );
            assert_eq!(run(p, arch, abi::OPENAT2, [0; 6]), errno(libc::ENOSYS));
            for nr in abi::KEYS {
                assert_eq!(run(p, arch, nr, [0; 6]), errno(libc::ENOSYS));
            }
            assert_eq!(run(p, arch, IO_URING_SETUP, [0; 6]), errno(libc::ENOSYS));
            assert_eq!(run(p, arch, IO_URING_REGISTER, [0; 6]), errno(libc::ENOSYS));
            // Ordinary calls pass.
            assert_eq!(run(p, arch, 0, [0; 6]), RET_ALLOW);
            assert_eq!(run(p, arch, 60, [0; 6]), RET_ALLOW);
            // Another ABI does not.
            assert_eq!(run(p, 0x4000_0003, 0, [0; 6]), errno(libc::ENOSYS));
            if let Some(bit) = abi::FOREIGN_BIT {
                assert_eq!(run(p, arch, bit | abi::SOCKET, [1; 6]), errno(libc::ENOSYS));
            }
        }
    }
}
