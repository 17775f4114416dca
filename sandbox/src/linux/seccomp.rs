//! The seccomp layer: a hand-written classic BPF filter (no dependency), installed last
//! before `execve`.
//!
//! Guards against, with network denied: any `socket()` (TCP, UDP, DNS, raw, packet,
//! netlink, vsock, and `AF_UNIX` sockets that could reach a host daemon such as a container
//! runtime's socket); with egress granted, every `socket()` but a TCP stream socket
//! (`AF_INET`/`AF_INET6`, `SOCK_STREAM`, protocol 0 or TCP: the network namespace holds
//! only the proxy's loopback port, and landlock allows connecting to that port alone), so
//! still no UDP (DNS), raw, packet, netlink or unix socket; `socketpair()` other than an
//! `AF_UNIX` stream or seqpacket pair (a datagram pair, after `connect(AF_UNSPEC)` or with a
//! `sendto()` address, reaches any host datagram socket the identity may write: `/dev/log`,
//! the journal, a notify socket); `bind()` of any kind (a pair's socket bound to an abstract
//! name receives in the host's namespace in the fallback, and TCP binds are landlock's to
//! refuse already); `sendto()` with a destination address (only unconnected datagram
//! sockets and TCP fast open use one; `sendmsg()`'s name sits behind a pointer seccomp
//! cannot read, so the socket types above are what makes it harmless: a connected stream or
//! seqpacket pair refuses or ignores a name); `io_uring` (its operations bypass
//! seccomp); `ptrace` and cross-process memory access; the kernel keyring (in the fallback
//! the worker's session keyring is shared); `bpf`, `perf_event_open`, `userfaultfd`;
//! creating or entering namespaces (`unshare`, `setns`, `clone` with namespace flags;
//! `clone3` reports `ENOSYS` so libc falls back to `clone`, whose flags can be inspected);
//! and, in the landlock+seccomp fallback where there is no pid namespace, `setsid` and
//! `setpgid`, so no process can leave the process group the wall clock kills, and System V
//! IPC (`shmget`, `msgget`, `semget` and every call on an existing id: the objects would live
//! in the host's IPC namespace, outlive the job and be shared with the next; namespace mode
//! has an IPC namespace of its own that dies with the job).
//! Syscalls of another architecture (x86 `int 0x80`, x32) kill the process.
//! On `Ok` from [`install`]: the kernel reports filter mode for the calling thread, and it is
//! inherited by everything the generator starts. Does not check: anything path-based
//! (landlock does that).

use super::sys;

/// Options for [`filter`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct FilterOptions {
    /// Refuse `setsid`/`setpgid` (no pid namespace to contain escapees).
    pub(crate) pin_process_group: bool,
    /// Allow TCP stream sockets (egress through the proxy's loopback port, namespace mode
    /// only); every other `socket()` stays refused.
    pub(crate) allow_tcp: bool,
    /// Refuse System V IPC (no IPC namespace of the sandbox's own).
    pub(crate) deny_sysv_ipc: bool,
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
#[cfg(target_arch = "x86_64")]
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const JSET_K: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const AND_K: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
/// Low 32 bits of `args[0]` (the kernel reads `int` arguments from there).
#[cfg(target_endian = "little")]
const OFF_ARG0_LO: u32 = 16;
#[cfg(target_endian = "big")]
const OFF_ARG0_LO: u32 = 20;
/// Low 32 bits of `args[1]` and `args[2]`.
const OFF_ARG1_LO: u32 = OFF_ARG0_LO + 8;
const OFF_ARG2_LO: u32 = OFF_ARG0_LO + 16;
/// Both halves of `args[4]` (a pointer: `sendto()`'s destination address).
const OFF_ARG4_LO: u32 = OFF_ARG0_LO + 32;
#[cfg(target_endian = "little")]
const OFF_ARG4_HI: u32 = OFF_ARG4_LO + 4;
#[cfg(target_endian = "big")]
const OFF_ARG4_HI: u32 = OFF_ARG4_LO - 4;
/// `SOCK_TYPE_MASK`: the socket type without `SOCK_NONBLOCK`/`SOCK_CLOEXEC`.
const SOCK_TYPE_MASK: u32 = 0xf;

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;

fn errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA)
}

/// Namespace flags refused in `clone()`'s flags argument. (`CLONE_NEWTIME` shares its bit
/// with the exit signal in `clone()`, and `unshare` is refused outright.)
const CLONE_NS_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

fn nr(n: libc::c_long) -> u32 {
    n as u32
}

/// The syscalls refused outright, with the return they get.
fn refused(opts: FilterOptions) -> Vec<(libc::c_long, u32)> {
    let eperm = errno(libc::EPERM);
    let mut v = Vec::new();
    if !opts.allow_tcp {
        v.push((libc::SYS_socket, errno(libc::EACCES)));
    }
    v.extend([
        (libc::SYS_io_uring_setup, errno(libc::ENOSYS)),
        (libc::SYS_io_uring_enter, errno(libc::ENOSYS)),
        (libc::SYS_io_uring_register, errno(libc::ENOSYS)),
        (libc::SYS_ptrace, eperm),
        (libc::SYS_process_vm_readv, eperm),
        (libc::SYS_process_vm_writev, eperm),
        (libc::SYS_keyctl, eperm),
        (libc::SYS_add_key, eperm),
        (libc::SYS_request_key, eperm),
        (libc::SYS_bpf, eperm),
        (libc::SYS_perf_event_open, eperm),
        (libc::SYS_userfaultfd, eperm),
        (libc::SYS_unshare, eperm),
        (libc::SYS_setns, eperm),
        (libc::SYS_clone3, errno(libc::ENOSYS)),
        (libc::SYS_bind, errno(libc::EACCES)),
    ]);
    if opts.pin_process_group {
        v.push((libc::SYS_setsid, eperm));
        v.push((libc::SYS_setpgid, eperm));
    }
    if opts.deny_sysv_ipc {
        v.extend(SYSV_IPC.iter().map(|&n| (n, eperm)));
    }
    v
}

/// Every System V IPC call (x86_64 and aarch64 have no `ipc()` multiplexer; i386's is killed
/// with its architecture).
const SYSV_IPC: [libc::c_long; 12] = [
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmdt,
    libc::SYS_shmctl,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_semctl,
];

/// Builds the filter program (see the module header for what it refuses).
pub(crate) fn filter(opts: FilterOptions) -> Vec<libc::sock_filter> {
    let mut p = vec![
        stmt(LD_W_ABS, OFF_ARCH),
        jump(JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(RET_K, KILL),
        stmt(LD_W_ABS, OFF_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    {
        // x32 system calls (__X32_SYSCALL_BIT) would bypass the numbers below.
        p.push(jump(JGE_K, 0x4000_0000, 0, 1));
        p.push(stmt(RET_K, KILL));
    }
    for (n, ret) in refused(opts) {
        p.push(jump(JEQ_K, nr(n), 0, 1));
        p.push(stmt(RET_K, ret));
    }
    if opts.allow_tcp {
        // socket: AF_INET or AF_INET6, SOCK_STREAM (any flags), protocol 0 or IPPROTO_TCP.
        let eacces = errno(libc::EACCES);
        p.push(jump(JEQ_K, nr(libc::SYS_socket), 0, 11));
        p.push(stmt(LD_W_ABS, OFF_ARG0_LO));
        p.push(jump(JEQ_K, libc::AF_INET as u32, 1, 0));
        p.push(jump(JEQ_K, libc::AF_INET6 as u32, 0, 6));
        p.push(stmt(LD_W_ABS, OFF_ARG1_LO));
        p.push(stmt(AND_K, SOCK_TYPE_MASK));
        p.push(jump(JEQ_K, libc::SOCK_STREAM as u32, 0, 3));
        p.push(stmt(LD_W_ABS, OFF_ARG2_LO));
        p.push(jump(JEQ_K, 0, 2, 0));
        p.push(jump(JEQ_K, libc::IPPROTO_TCP as u32, 1, 0));
        p.push(stmt(RET_K, eacces));
        p.push(stmt(RET_K, ALLOW));
    }
    // socketpair: AF_UNIX, SOCK_STREAM or SOCK_SEQPACKET (any flags) only. Both are created
    // connected to each other: `connect()` gives EISCONN or EINVAL, a `sendmsg()` name is
    // refused (stream) or ignored (seqpacket). Node's libuv and Python use stream pairs.
    p.push(jump(JEQ_K, nr(libc::SYS_socketpair), 0, 8));
    p.push(stmt(LD_W_ABS, OFF_ARG0_LO));
    p.push(jump(JEQ_K, libc::AF_UNIX as u32, 0, 5));
    p.push(stmt(LD_W_ABS, OFF_ARG1_LO));
    p.push(stmt(AND_K, SOCK_TYPE_MASK));
    p.push(jump(JEQ_K, libc::SOCK_STREAM as u32, 1, 0));
    p.push(jump(JEQ_K, libc::SOCK_SEQPACKET as u32, 0, 1));
    p.push(stmt(RET_K, ALLOW));
    p.push(stmt(RET_K, errno(libc::EACCES)));
    // sendto: no destination address (NULL in both halves of the pointer).
    p.push(jump(JEQ_K, nr(libc::SYS_sendto), 0, 6));
    p.push(stmt(LD_W_ABS, OFF_ARG4_LO));
    p.push(jump(JEQ_K, 0, 0, 2));
    p.push(stmt(LD_W_ABS, OFF_ARG4_HI));
    p.push(jump(JEQ_K, 0, 1, 0));
    p.push(stmt(RET_K, errno(libc::EACCES)));
    p.push(stmt(RET_K, ALLOW));
    // clone: no namespace flags (flags are the first argument on x86_64 and aarch64).
    p.push(jump(JEQ_K, nr(libc::SYS_clone), 0, 4));
    p.push(stmt(LD_W_ABS, OFF_ARG0_LO));
    p.push(jump(JSET_K, CLONE_NS_FLAGS, 0, 1));
    p.push(stmt(RET_K, errno(libc::EPERM)));
    p.push(stmt(RET_K, ALLOW));
    p.push(stmt(RET_K, ALLOW));
    p
}

/// Failure of the seccomp layer.
pub(crate) enum SeccompFailure {
    /// The kernel has no seccomp filter support.
    Unavailable(String),
    /// Installing or checking the filter failed.
    Failed(String),
}

/// Installs the filter on the calling thread and checks the kernel reports filter mode.
/// Requires `no_new_privs` (set earlier).
pub(crate) fn install(opts: FilterOptions) -> Result<(), SeccompFailure> {
    let prog = filter(opts);
    if let Err(e) = sys::install_seccomp_filter(&prog) {
        let what = format!("seccomp(SET_MODE_FILTER): {e}");
        return Err(match e.raw_os_error() {
            Some(libc::EINVAL) | Some(libc::ENOSYS) => SeccompFailure::Unavailable(what),
            _ => SeccompFailure::Failed(what),
        });
    }
    match sys::seccomp_mode() {
        Ok(2) => Ok(()),
        Ok(m) => Err(SeccompFailure::Failed(format!(
            "kernel reports seccomp mode {m} after installing the filter"
        ))),
        Err(e) => Err(SeccompFailure::Failed(format!(
            "prctl(PR_GET_SECCOMP): {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny classic-BPF interpreter for the instructions the filter uses, so the program's
    /// decisions can be checked without installing it.
    fn run(prog: &[libc::sock_filter], arch: u32, nr: u32, arg0: u64) -> u32 {
        run3(prog, arch, nr, [arg0, 0, 0])
    }

    fn run3(prog: &[libc::sock_filter], arch: u32, nr: u32, args: [u64; 3]) -> u32 {
        run6(prog, arch, nr, [args[0], args[1], args[2], 0, 0, 0])
    }

    fn run6(prog: &[libc::sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&arch.to_ne_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        let load = |off: u32| {
            let o = off as usize;
            u32::from_ne_bytes([data[o], data[o + 1], data[o + 2], data[o + 3]])
        };
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let i = prog[pc];
            pc += 1;
            match i.code {
                LD_W_ABS => a = load(i.k),
                AND_K => a &= i.k,
                RET_K => return i.k,
                JEQ_K => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                0x35 => pc += usize::from(if a >= i.k { i.jt } else { i.jf }),
                JSET_K => pc += usize::from(if a & i.k != 0 { i.jt } else { i.jf }),
                c => panic!("unexpected opcode {c:#x}"),
            }
        }
    }

    const OPTS: FilterOptions = FilterOptions {
        pin_process_group: true,
        allow_tcp: false,
        deny_sysv_ipc: true,
    };

    const EGRESS: FilterOptions = FilterOptions {
        pin_process_group: false,
        allow_tcp: true,
        deny_sysv_ipc: false,
    };

    #[test]
    fn refuses_every_socket_family() {
        let p = filter(OPTS);
        for family in [
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_PACKET,
            libc::AF_NETLINK,
            libc::AF_UNIX,
        ] {
            assert_eq!(
                run(&p, AUDIT_ARCH, nr(libc::SYS_socket), family as u64),
                errno(libc::EACCES)
            );
        }
    }

    #[test]
    fn allows_only_unix_stream_and_seqpacket_socketpairs() {
        let p = filter(OPTS);
        let pair = |fam: i32, typ: i32| {
            run3(
                &p,
                AUDIT_ARCH,
                nr(libc::SYS_socketpair),
                [fam as u64, typ as u64, 0],
            )
        };
        let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
        for typ in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
            assert_eq!(pair(libc::AF_UNIX, typ), ALLOW);
            assert_eq!(pair(libc::AF_UNIX, typ | flags), ALLOW);
        }
        for typ in [libc::SOCK_DGRAM, libc::SOCK_RAW, libc::SOCK_RDM, 0, 0xf] {
            assert_eq!(pair(libc::AF_UNIX, typ), errno(libc::EACCES), "{typ}");
            assert_eq!(pair(libc::AF_UNIX, typ | flags), errno(libc::EACCES));
        }
        assert_eq!(
            run(
                &p,
                AUDIT_ARCH,
                nr(libc::SYS_socketpair),
                libc::AF_INET as u64
            ),
            errno(libc::EACCES)
        );
        // High bits are ignored by the kernel (int arguments): the low words decide.
        assert_eq!(
            run3(
                &p,
                AUDIT_ARCH,
                nr(libc::SYS_socketpair),
                [
                    (7u64 << 32) | libc::AF_UNIX as u64,
                    (7u64 << 32) | libc::SOCK_STREAM as u64,
                    0
                ]
            ),
            ALLOW
        );
        assert_eq!(
            run3(
                &p,
                AUDIT_ARCH,
                nr(libc::SYS_socketpair),
                [
                    libc::AF_UNIX as u64,
                    (1u64 << 32) | libc::SOCK_DGRAM as u64,
                    0
                ]
            ),
            errno(libc::EACCES)
        );
    }

    #[test]
    fn refuses_bind_and_sendto_with_an_address_in_every_mode() {
        for opts in [OPTS, EGRESS] {
            let p = filter(opts);
            assert_eq!(
                run(&p, AUDIT_ARCH, nr(libc::SYS_bind), 3),
                errno(libc::EACCES)
            );
            let sendto =
                |addr: u64| run6(&p, AUDIT_ARCH, nr(libc::SYS_sendto), [3, 0, 1, 0, addr, 0]);
            assert_eq!(sendto(0), ALLOW);
            assert_eq!(sendto(0x7fff_0000_1000), errno(libc::EACCES));
            assert_eq!(sendto(0x1000), errno(libc::EACCES));
            assert_eq!(sendto(1 << 32), errno(libc::EACCES));
        }
    }

    #[test]
    fn refuses_sysv_ipc_only_without_an_ipc_namespace() {
        let fallback = filter(OPTS);
        let ns = filter(EGRESS);
        for n in SYSV_IPC {
            assert_eq!(run(&fallback, AUDIT_ARCH, nr(n), 0), errno(libc::EPERM));
            assert_eq!(run(&ns, AUDIT_ARCH, nr(n), 0), ALLOW);
        }
    }

    #[test]
    fn refuses_io_uring_ptrace_and_namespaces() {
        let p = filter(OPTS);
        assert_eq!(
            run(&p, AUDIT_ARCH, nr(libc::SYS_io_uring_setup), 0),
            errno(libc::ENOSYS)
        );
        assert_eq!(
            run(&p, AUDIT_ARCH, nr(libc::SYS_ptrace), 0),
            errno(libc::EPERM)
        );
        assert_eq!(
            run(&p, AUDIT_ARCH, nr(libc::SYS_unshare), 0),
            errno(libc::EPERM)
        );
        assert_eq!(
            run(&p, AUDIT_ARCH, nr(libc::SYS_clone3), 0),
            errno(libc::ENOSYS)
        );
        let newuser = libc::CLONE_NEWUSER as u64 | libc::SIGCHLD as u64;
        assert_eq!(
            run(&p, AUDIT_ARCH, nr(libc::SYS_clone), newuser),
            errno(libc::EPERM)
        );
        let thread = (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u64;
        assert_eq!(run(&p, AUDIT_ARCH, nr(libc::SYS_clone), thread), ALLOW);
    }

    #[test]
    fn allows_ordinary_syscalls() {
        let p = filter(OPTS);
        for n in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_execve,
            libc::SYS_openat,
            libc::SYS_exit_group,
        ] {
            assert_eq!(run(&p, AUDIT_ARCH, nr(n), 0), ALLOW);
        }
    }

    #[test]
    fn process_group_pinned_only_when_asked() {
        let pinned = filter(OPTS);
        assert_eq!(
            run(&pinned, AUDIT_ARCH, nr(libc::SYS_setsid), 0),
            errno(libc::EPERM)
        );
        let free = filter(FilterOptions {
            pin_process_group: false,
            allow_tcp: false,
            deny_sysv_ipc: false,
        });
        assert_eq!(run(&free, AUDIT_ARCH, nr(libc::SYS_setsid), 0), ALLOW);
    }

    #[test]
    fn egress_allows_tcp_stream_sockets_only() {
        let p = filter(EGRESS);
        let socket = nr(libc::SYS_socket);
        let tcp = |fam: i32, typ: i32, proto: i32| {
            run3(
                &p,
                AUDIT_ARCH,
                socket,
                [fam as u64, typ as u64, proto as u64],
            )
        };
        let cloexec = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
        for fam in [libc::AF_INET, libc::AF_INET6] {
            assert_eq!(tcp(fam, libc::SOCK_STREAM, 0), ALLOW);
            assert_eq!(tcp(fam, cloexec, libc::IPPROTO_TCP), ALLOW);
            // UDP (DNS), raw, ICMP datagrams, SCTP or MPTCP over a stream: refused.
            for (typ, proto) in [
                (libc::SOCK_DGRAM, 0),
                (libc::SOCK_DGRAM, libc::IPPROTO_UDP),
                (libc::SOCK_RAW, libc::IPPROTO_ICMP),
                (libc::SOCK_DGRAM, libc::IPPROTO_ICMP),
                (libc::SOCK_SEQPACKET, 0),
                (libc::SOCK_STREAM, libc::IPPROTO_SCTP),
                (libc::SOCK_STREAM, libc::IPPROTO_MPTCP),
            ] {
                assert_eq!(
                    tcp(fam, typ, proto),
                    errno(libc::EACCES),
                    "{fam} {typ} {proto}"
                );
            }
        }
        for fam in [
            libc::AF_UNIX,
            libc::AF_PACKET,
            libc::AF_NETLINK,
            libc::AF_VSOCK,
        ] {
            assert_eq!(tcp(fam, libc::SOCK_STREAM, 0), errno(libc::EACCES), "{fam}");
        }
        // Everything else the filter refuses stays refused with egress.
        assert_eq!(
            run(&p, AUDIT_ARCH, nr(libc::SYS_io_uring_setup), 0),
            errno(libc::ENOSYS)
        );
        assert_eq!(
            run(
                &p,
                AUDIT_ARCH,
                nr(libc::SYS_socketpair),
                libc::AF_INET as u64
            ),
            errno(libc::EACCES)
        );
    }

    #[test]
    fn kills_foreign_architectures() {
        let p = filter(OPTS);
        const AUDIT_ARCH_I386: u32 = 0x4000_0003;
        assert_eq!(run(&p, AUDIT_ARCH_I386, 0, 0), KILL);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            run(&p, AUDIT_ARCH, 0x4000_0000 | nr(libc::SYS_socket), 0),
            KILL
        );
    }
}
