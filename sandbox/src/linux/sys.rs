//! Thin wrappers over the raw Linux system calls the sandbox needs: the only module of the
//! project with `unsafe`. Each wrapper turns the C return convention into `io::Result` and
//! takes only Rust types whose validity the type system guarantees (`&CStr`, `BorrowedFd`,
//! slices), so the `unsafe` blocks stay one call long.
//!
//! Guards against: unchecked return values (every call's error is returned) and `EINTR`
//! (retried where a retry is correct).
//! Does not check: policy; callers decide what to call and in which order.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn check_long(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Result of [`fork`].
pub(crate) enum Forked {
    /// In the parent, with the child's pid.
    Parent(libc::pid_t),
    /// In the child.
    Child,
}

/// `fork(2)`. Only called from the helper process, which checks that it is single-threaded
/// first, so the child may allocate.
pub(crate) fn fork() -> io::Result<Forked> {
    // SAFETY: fork has no memory-safety preconditions of its own; the callers run in a
    // single-threaded process, so no lock can be held by a thread that does not exist in the
    // child.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// `waitpid(2)`, retried on `EINTR`. `Ok(None)` with `WNOHANG` when nothing changed.
pub(crate) fn waitpid(
    pid: libc::pid_t,
    flags: libc::c_int,
) -> io::Result<Option<(libc::pid_t, i32)>> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a valid, writable c_int for the duration of the call.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        match r {
            -1 => {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            0 => return Ok(None),
            pid => return Ok(Some((pid, status))),
        }
    }
}

/// `kill(2)`. A negative `pid` addresses a process group.
pub(crate) fn kill(pid: libc::pid_t, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: kill takes plain integers.
    check(unsafe { libc::kill(pid, sig) }).map(drop)
}

/// `getpid(2)`.
pub(crate) fn getpid() -> libc::pid_t {
    // SAFETY: getpid cannot fail and takes no arguments.
    unsafe { libc::getpid() }
}

/// `getppid(2)`.
pub(crate) fn getppid() -> libc::pid_t {
    // SAFETY: getppid cannot fail and takes no arguments.
    unsafe { libc::getppid() }
}

/// `geteuid(2)`.
pub(crate) fn geteuid() -> u32 {
    // SAFETY: geteuid cannot fail and takes no arguments.
    unsafe { libc::geteuid() }
}

/// `getegid(2)`.
pub(crate) fn getegid() -> u32 {
    // SAFETY: getegid cannot fail and takes no arguments.
    unsafe { libc::getegid() }
}

/// `_exit(2)`: leaves without running destructors or atexit handlers (correct after fork).
pub(crate) fn exit(code: i32) -> ! {
    // SAFETY: _exit takes a plain integer and never returns.
    unsafe { libc::_exit(code) }
}

/// Dies by `sig` with its default action (no core: `RLIMIT_CORE` is set to 0 first), or
/// exits `128 + sig` if the signal does not terminate.
pub(crate) fn die_by_signal(sig: libc::c_int) -> ! {
    let _ = setrlimit(libc::RLIMIT_CORE, 0, 0);
    // SAFETY: installing SIG_DFL and unblocking a signal take plain integers and a local,
    // fully initialised sigset.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
    }
    exit(128 + sig)
}

/// Resets every catchable signal to its default action and unblocks all signals, so the
/// generator inherits no ignored `SIGXCPU`/`SIGXFSZ`/`SIGTERM` from the host process.
pub(crate) fn reset_signals() {
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: installing SIG_DFL takes plain integers; numbers that are not valid or
        // reserved by libc just return an error, which is ignored.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
    // SAFETY: a local, fully initialised empty sigset passed by reference for the call.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// `prctl(PR_SET_PDEATHSIG, sig)`.
pub(crate) fn set_parent_death_signal(sig: libc::c_int) -> io::Result<()> {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes plain integers.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) }).map(drop)
}

/// `unshare(2)`.
pub(crate) fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: unshare takes plain flags.
    check(unsafe { libc::unshare(flags) }).map(drop)
}

/// `mount(2)` with optional source, filesystem type and data.
pub(crate) fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
) -> io::Result<()> {
    let ptr = |c: Option<&CStr>| c.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: every pointer is either null or a NUL-terminated string borrowed for the call.
    check(unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(fstype),
            flags,
            std::ptr::null(),
        )
    })
    .map(drop)
}

/// `sethostname(2)`.
pub(crate) fn sethostname(name: &[u8]) -> io::Result<()> {
    // SAFETY: the pointer and length describe a live byte slice.
    check(unsafe { libc::sethostname(name.as_ptr().cast(), name.len()) }).map(drop)
}

/// `setgroups(0, NULL)`: drops every supplementary group.
pub(crate) fn clear_groups() -> io::Result<()> {
    // SAFETY: a zero-length list with a null pointer is the documented way to clear.
    check(unsafe { libc::setgroups(0, std::ptr::null()) }).map(drop)
}

/// `setresuid(2)` with the same id for real, effective and saved.
pub(crate) fn set_uid(uid: u32) -> io::Result<()> {
    // SAFETY: plain integers.
    check(unsafe { libc::setresuid(uid, uid, uid) }).map(drop)
}

/// `setresgid(2)` with the same id for real, effective and saved.
pub(crate) fn set_gid(gid: u32) -> io::Result<()> {
    // SAFETY: plain integers.
    check(unsafe { libc::setresgid(gid, gid, gid) }).map(drop)
}

/// `prctl(PR_SET_NO_NEW_PRIVS, 1)`.
pub(crate) fn set_no_new_privs() -> io::Result<()> {
    // SAFETY: plain integers.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }).map(drop)
}

/// `prctl(PR_GET_NO_NEW_PRIVS)`.
pub(crate) fn no_new_privs() -> io::Result<bool> {
    // SAFETY: plain integers.
    check(unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) }).map(|v| v == 1)
}

/// `prctl(PR_GET_SECCOMP)`: 0 none, 1 strict, 2 filter.
pub(crate) fn seccomp_mode() -> io::Result<i32> {
    // SAFETY: plain integers.
    check(unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) })
}

/// `prctl(PR_CAPBSET_DROP, cap)`.
pub(crate) fn drop_bounding_cap(cap: u32) -> io::Result<()> {
    // SAFETY: plain integers.
    check(unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) }).map(drop)
}

/// `prctl(PR_CAPBSET_READ, cap)`: `Ok(true)` if in the bounding set; `EINVAL` past the last cap.
pub(crate) fn bounding_has(cap: u32) -> io::Result<bool> {
    // SAFETY: plain integers.
    check(unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) })
        .map(|v| v == 1)
}

/// `prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)`.
pub(crate) fn clear_ambient_caps() -> io::Result<()> {
    // SAFETY: plain integers.
    check(unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    })
    .map(drop)
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAP_V3: u32 = 0x2008_0522;

/// The calling thread's (effective, permitted, inheritable) capability sets as 64-bit masks.
pub(crate) fn capabilities() -> io::Result<(u64, u64, u64)> {
    let mut header = CapHeader {
        version: CAP_V3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: header and a two-element data array of the v3 layout, both live and writable.
    check_long(unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) })?;
    let join = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    Ok((
        join(data[0].effective, data[1].effective),
        join(data[0].permitted, data[1].permitted),
        join(data[0].inheritable, data[1].inheritable),
    ))
}

/// `capset` with every set empty (always permitted: it only drops).
pub(crate) fn clear_capabilities() -> io::Result<()> {
    let mut header = CapHeader {
        version: CAP_V3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: header and a two-element data array of the v3 layout, both live.
    check_long(unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) }).map(drop)
}

/// The type of an `RLIMIT_*` constant (glibc and musl differ).
#[cfg(target_env = "gnu")]
pub(crate) type Resource = libc::__rlimit_resource_t;
/// The type of an `RLIMIT_*` constant (glibc and musl differ).
#[cfg(not(target_env = "gnu"))]
pub(crate) type Resource = libc::c_int;

/// `setrlimit(2)`.
pub(crate) fn setrlimit(resource: Resource, soft: u64, hard: u64) -> io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: `lim` is a live, initialised rlimit.
    check(unsafe { libc::setrlimit(resource, &lim) }).map(drop)
}

/// `getrlimit(2)`: (soft, hard).
pub(crate) fn getrlimit(resource: Resource) -> io::Result<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a live, writable rlimit.
    check(unsafe { libc::getrlimit(resource, &mut lim) })?;
    Ok((lim.rlim_cur, lim.rlim_max))
}

/// `seccomp(SECCOMP_SET_MODE_FILTER)` with a classic BPF program.
pub(crate) fn install_seccomp_filter(filter: &[libc::sock_filter]) -> io::Result<()> {
    let len = u16::try_from(filter.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "seccomp filter too long"))?;
    let prog = libc::sock_fprog {
        len,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` points at `len` live instructions for the duration of the call; the
    // kernel copies the program and does not write through the pointer.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0 as libc::c_uint,
            &prog as *const libc::sock_fprog,
        )
    })
    .map(drop)
}

/// Marks every descriptor from `first` up as close-on-exec (`close_range` with
/// `CLOSE_RANGE_CLOEXEC`, Linux 5.11).
pub(crate) fn cloexec_from(first: u32) -> io::Result<()> {
    // SAFETY: plain integers; only sets a flag on descriptors.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    })
    .map(drop)
}

/// `dup2(fd, target)`: makes `target` a copy of `fd` (without close-on-exec).
pub(crate) fn dup_onto(fd: BorrowedFd<'_>, target: RawFd) -> io::Result<()> {
    // SAFETY: `fd` is a live descriptor borrowed for the call; replacing `target` is the
    // purpose (callers use it on 0/1/2 only).
    check(unsafe { libc::dup2(fd.as_raw_fd(), target) }).map(drop)
}

/// Sets `O_NONBLOCK` on `fd`.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: fcntl on a live descriptor with integer arguments.
    let flags = check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })?;
    // SAFETY: as above.
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) }).map(drop)
}

/// `pidfd_open(2)` (Linux 5.3): a descriptor that becomes readable when `pid` exits.
pub(crate) fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: plain integers.
    let fd = check_long(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0 as libc::c_uint) })?;
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::other("pidfd out of range"))?;
    // SAFETY: the kernel just returned this descriptor and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `poll(2)` on `fds`, retried on `EINTR` with the same timeout (callers recompute
/// deadlines themselves). `timeout_ms < 0` waits forever.
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout_ms: libc::c_int) -> io::Result<usize> {
    loop {
        // SAFETY: the pointer and length describe a live, writable slice of pollfd.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if r == -1 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok(r as usize);
    }
}

/// A program image ready for `execve`, built before the sandbox is applied so nothing has
/// to be allocated between the last layer and the exec.
pub(crate) struct ExecImage {
    path: CString,
    _argv: Vec<CString>,
    _envp: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    envp_ptrs: Vec<*const libc::c_char>,
}

impl ExecImage {
    pub(crate) fn new(path: CString, argv: Vec<CString>, envp: Vec<CString>) -> Self {
        // The CStrings' heap buffers do not move when the Vecs are moved into the struct.
        let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        argv_ptrs.push(std::ptr::null());
        let mut envp_ptrs: Vec<*const libc::c_char> = envp.iter().map(|e| e.as_ptr()).collect();
        envp_ptrs.push(std::ptr::null());
        ExecImage {
            path,
            _argv: argv,
            _envp: envp,
            argv_ptrs,
            envp_ptrs,
        }
    }

    pub(crate) fn path(&self) -> &CStr {
        &self.path
    }

    /// `execve(2)`; returns only on failure.
    pub(crate) fn exec(&self) -> io::Error {
        // SAFETY: `path` is NUL-terminated; `argv_ptrs`/`envp_ptrs` are null-terminated arrays
        // of pointers into CStrings owned by `self`, alive for the call.
        unsafe {
            libc::execve(
                self.path.as_ptr(),
                self.argv_ptrs.as_ptr(),
                self.envp_ptrs.as_ptr(),
            );
        }
        io::Error::last_os_error()
    }
}
