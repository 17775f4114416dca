//! Runs one untrusted generator confined on Linux (no network, or only an allowlisted
//! egress proxy; writes only to its workdir and a private tmp, limited resources, a capped
//! log, a wall clock that kills the whole process tree), and refuses to run it at all when
//! the kernel cannot confine it.
//!
//! # Layers, in the order they are applied
//!
//! 1. **Runner.** The supervisor (`spawn`, in the worker) starts the helper (the host binary
//!    re-executed with [`HELPER_SUBCOMMAND`]) in a new process group, with an empty
//!    environment, stdin carrying the spec (never argv), stdout+stderr into one pipe drained
//!    into a capped log file.
//! 2. **Identity.** A root worker hands the workdir and private tmp to an unprivileged uid
//!    (default `nobody`) and the generator runs as it: the kernel never applies
//!    `RLIMIT_NPROC` to root. Supplementary groups are dropped. A readable root that
//!    identity cannot reach (a virtualenv under a 0700 `/root`) is bound in at its own path,
//!    in a mount namespace of the helper's own, under a tmpfs covering the blocking directory
//!    (no host file changes). Before anything starts, a preflight checks that the identity
//!    can read the program, its `#!` interpreter and a virtualenv's base interpreter
//!    ([`SandboxError::NotReadable`]); a program inside `node_modules/<package>` gets its
//!    whole package.
//! 3. **Namespaces** (namespace mode): new user, mount, pid, ipc, uts and network
//!    namespaces; the network namespace is empty (loopback down, no route anywhere); the uid
//!    and gid maps contain only the sandbox identity; mounts are made private; the hostname
//!    is `airlock`. With [`Network::Egress`] the loopback comes up with one listener,
//!    `127.0.0.1:`[`EGRESS_PROXY_PORT`], handed to the supervisor and served there by the
//!    [`EgressProxy`] (see [`egress`]); nothing inside the sandbox holds it.
//! 4. **Root and /proc**: the pid namespace's init (pid 1) builds a new root on a tmpfs
//!    holding only the granted paths (readable roots, program, workdir, private tmp, /dev),
//!    each bound in at its own path, mounts a fresh /proc of the pid namespace in it,
//!    `pivot_root`s into it and detaches the old root, so the host's mount table and the
//!    paths it does not grant are not there to see; then it forks the generator (pid 2), so
//!    that killing init kills every process in the sandbox.
//! 5. **Capabilities** dropped: bounding set (where permitted), ambient, effective,
//!    permitted, inheritable; read back empty.
//! 6. **no_new_privs**, read back set.
//! 7. **rlimits**: CPU seconds, address space, file size, open files, processes; core 0.
//!    With [`SandboxSpec::memory_bytes`], the supervisor first puts the helper (before it
//!    starts anything) in a memory cgroup of the run's own with that ceiling for all its
//!    processes together; where none can be made, the outcome says why
//!    ([`MemoryCeiling::Unenforced`]).
//! 8. **Landlock** (ABI 6): read and execute the readable roots (the system by default,
//!    see [`DEFAULT_READABLE`]) and the generator program; read and write the workdir and
//!    private tmp only; `/dev/null` and `/dev/zero` read-write; no TCP bind or connect
//!    (with egress: connect to [`EGRESS_PROXY_PORT`] only); signals and abstract unix
//!    sockets scoped to the sandbox. Anything but
//!    `FullyEnforced` is an error unless the spec sets `allow_partial_landlock`.
//! 9. **Seccomp**: no `socket()` at all (network denied; with egress, TCP stream sockets
//!    only: no UDP, DNS, raw, packet, netlink or unix socket), no `socketpair()` but an
//!    `AF_UNIX` stream or seqpacket pair (no datagram pair: nothing can be re-aimed at a host
//!    datagram socket such as `/dev/log`), no `bind()`, no `sendto()` with an address, no
//!    `io_uring`, `ptrace`, `process_vm_*`, keyring, `bpf`, `perf_event_open`,
//!    `userfaultfd`, no new namespaces; in the fallback also no `setsid`/`setpgid` and no
//!    System V IPC; other architectures' syscalls kill. Read back as filter mode.
//! 10. **Descriptors**: everything above stderr is close-on-exec; then `execve` with exactly
//!     the spec's environment.
//!
//! [`Mode::Auto`] builds 1-10 when user namespaces work, else 1, 2, 5-10
//! (`landlock+seccomp`, the reason in [`Outcome::fallback_reason`]), else fails with
//! [`SandboxError::Unavailable`]. [`Mode::Unsandboxed`] builds only the runner (plus
//! rlimits) and reports `none`. The outcome always says which kind ran.
//!
//! Egress ([`spawn_with_egress`]) needs the network namespace: the landlock+seccomp
//! fallback refuses it before anything starts, and `Mode::Auto` does not fall back with it
//! ([`SandboxError::Unavailable`]), because without a namespace nothing can restrict the
//! generator's TCP connects to the proxy's *address* (landlock names ports only, seccomp
//! cannot read `connect()`'s address). In `Mode::Unsandboxed` the generator is pointed at
//! the proxy (on the host's loopback) and its attempts are logged, but nothing is enforced.
//!
//! # Guarantees
//! - Fails closed: a layer that fails, or that the kernel reports as not in force, stops
//!   the run before the generator exists ([`SandboxError`]); no layer is skipped silently.
//! - The spec is validated before anything is forked, including that no secret path (the
//!   token file, the worker binary) lies under a root the sandbox grants.
//! - [`Running::wait_until`] and [`Running::kill_group`] kill the whole tree: the pid
//!   namespace (namespace mode) or the process group, which the generator cannot leave
//!   (fallback). When the generator's main process ends, whatever it left behind is killed
//!   too, and waits return only once no process of the sandbox is left.
//! - A supervisor killed outright (`kill -9` of the worker) takes the sandbox with it: in
//!   namespace mode through parent-death signals down to the pid namespace's init; in the
//!   fallback the helper stays outside the sandbox as a guard (the group's leader, beyond
//!   the generator's reach) that kills the process group when the supervisor's end of its
//!   channel closes.
//! - The log never exceeds `max_bytes`, and a flood never blocks the generator.
//! - With egress (namespace mode), the only thing the generator can connect to is the
//!   proxy, which admits `CONNECT` to allowlisted `host:port` only, refuses destinations
//!   that resolve to loopback, link-local (metadata), private, reserved or this host's
//!   addresses, and logs every attempt; when the run ends the proxy's tunnels are closed and
//!   its log is final ([`EgressProxy::log`]).
//!
//! # Not guaranteed
//! - In [`Mode::Unsandboxed`] nothing is confined, and a process that calls `setsid` escapes
//!   the group kill.
//! - In the fallback the generator shares the host's /proc (landlock still denies other
//!   processes' memory, environment and descriptors, but command lines are visible: never
//!   pass a secret on a command line) and its network tables (`/proc/net/tcp`,
//!   `/proc/net/unix`: the host's listening sockets are visible, not reachable), and
//!   `RLIMIT_NPROC` counts every process of the sandbox uid on the host.
//! - Limits are reported in [`Outcome::limit_hit`] only when the kernel signals them
//!   (`SIGXCPU`, `SIGXFSZ`) or the wall clock ran out; a failed fork or allocation is seen
//!   only by the generator.
//! - Read access to the readable roots is not a secret boundary: keep secrets out of them
//!   (validation checks the paths you list in `secret_paths`).
//!
//! # Example
//!
//! The host binary dispatches the hidden subcommand first thing in `main` (before any
//! thread or logger exists), then uses [`spawn`]:
//!
//! ```no_run
//! use std::time::{Duration, Instant};
//! use airlock_sandbox::{spawn, child_main, LogSink, Mode, SandboxSpec, HELPER_SUBCOMMAND};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     if std::env::args_os().nth(1).as_deref() == Some(HELPER_SUBCOMMAND.as_ref()) {
//!         child_main();
//!     }
//!     let mut spec = SandboxSpec::new("/bin/sh", "/run/airlock/job/work", "/run/airlock/job/tmp");
//!     spec.args = vec!["-c".into(), "echo hello > out.txt".into()];
//!     spec.env = vec![("PATH".into(), "/usr/bin:/bin".into())];
//!     spec.secret_paths = vec!["/run/airlock/token".into()];
//!     spec.mode = Mode::Auto;
//!     let log = LogSink { path: "/run/airlock/job/generator.log".into(), max_bytes: 1 << 20 };
//!     let mut running = spawn(&std::env::current_exe()?, &[HELPER_SUBCOMMAND], &spec, &log)?;
//!     let deadline = Instant::now() + Duration::from_secs(600);
//!     loop {
//!         if let Some(outcome) = running.wait_timeout(Duration::from_secs(30))? {
//!             println!("{:?} in {}", outcome.status, outcome.sandbox);
//!             break;
//!         }
//!         // checkpoint here
//!         if Instant::now() >= deadline {
//!             println!("{:?}", running.wait_until(deadline)?.status); // TimedOut
//!             break;
//!         }
//!     }
//!     Ok(())
//! }
//! ```
#![deny(unsafe_code)]

pub mod egress;
mod error;
mod outcome;
mod proto;
mod spec;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(not(target_os = "linux"))]
mod unsupported;

pub use egress::{EgressLog, EgressProxy, EgressRule, LocalGrant, ProxyConfig};
pub use error::SandboxError;
pub use outcome::{ExitStatus, LimitHit, MemoryCeiling, Outcome, SandboxKind};
pub use spec::{
    LogSink, Mode, Network, Rlimits, SandboxSpec, DEFAULT_READABLE, DEFAULT_UNPRIVILEGED_ID,
    EGRESS_PROXY_PORT, MIN_MEMORY_BYTES, READ_WRITE_DEVICES,
};

#[cfg(target_os = "linux")]
pub use linux::{spawn, spawn_with_egress, Running};
#[cfg(not(target_os = "linux"))]
pub use unsupported::{spawn, spawn_with_egress, Running};

/// The hidden subcommand a host binary dispatches to [`child_main`].
pub const HELPER_SUBCOMMAND: &str = "__sandbox-exec";

/// The helper process's entry point: reads the spec [`spawn`] wrote on stdin, builds the
/// sandbox layer by layer, and `execve`s the generator; reports failures back to the
/// supervisor and exits. Never returns.
///
/// Call it first thing in the host binary's `main` when `argv[1]` is [`HELPER_SUBCOMMAND`]:
/// the helper refuses to run in a process that has started threads.
pub fn child_main() -> ! {
    #[cfg(target_os = "linux")]
    {
        linux::child_main()
    }
    #[cfg(not(target_os = "linux"))]
    {
        unsupported::child_main()
    }
}
