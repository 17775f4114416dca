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

/// `fallocate(2)` with `FALLOC_FL_KEEP_SIZE`: allocates blocks for `len` bytes from offset 0
/// without changing the file's size.
pub(crate) fn fallocate_keep_size(fd: BorrowedFd<'_>, len: u64) -> io::Result<()> {
    let len = libc::off_t::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    // SAFETY: fallocate takes a descriptor the borrow keeps open and plain integers.
    check(unsafe { libc::fallocate(fd.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, len) }).map(drop)
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

/// `mount(2)` with optional source and filesystem type.
pub(crate) fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
) -> io::Result<()> {
    mount_data(source, target, fstype, flags, None)
}

/// `mount(2)` with optional source, filesystem type and data (options such as `mode=0755`).
pub(crate) fn mount_data(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> io::Result<()> {
    let ptr = |c: Option<&CStr>| c.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: every pointer is either null or a NUL-terminated string borrowed for the call.
    check(unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(fstype),
            flags,
            ptr(data).cast(),
        )
    })
    .map(drop)
}

/// `pivot_root(2)`: `new_root` becomes the root, the old root moves to `put_old`.
pub(crate) fn pivot_root(new_root: &CStr, put_old: &CStr) -> io::Result<()> {
    // SAFETY: both pointers are NUL-terminated strings borrowed for the call.
    check_long(unsafe { libc::syscall(libc::SYS_pivot_root, new_root.as_ptr(), put_old.as_ptr()) })
        .map(drop)
}

/// `umount2(2)`.
pub(crate) fn umount2(target: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: the pointer is a NUL-terminated string borrowed for the call.
    check(unsafe { libc::umount2(target.as_ptr(), flags) }).map(drop)
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

/// Room for the control message of one descriptor, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct ControlBuf([u8; 64]);

/// Sends `data` on the unix stream socket `sock` with the descriptor `fd` attached
/// (`SCM_RIGHTS`): the receiver gets its own copy of `fd`.
pub(crate) fn send_with_fd(
    sock: BorrowedFd<'_>,
    data: &[u8],
    fd: BorrowedFd<'_>,
) -> io::Result<()> {
    let mut control = ControlBuf([0; 64]);
    let fd_len = std::mem::size_of::<RawFd>() as libc::c_uint;
    // SAFETY: CMSG_SPACE is pure arithmetic on its argument.
    let space = unsafe { libc::CMSG_SPACE(fd_len) } as usize;
    if space > control.0.len() {
        return Err(io::Error::other("control buffer too small"));
    }
    let mut iov = libc::iovec {
        iov_base: data.as_ptr().cast_mut().cast(),
        iov_len: data.len(),
    };
    // SAFETY: msghdr is a plain C struct for which all-zero is a valid (empty) value; the
    // fields differ between libcs, so it is zeroed and then filled in by name.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg` describes `control`, which is live, aligned and at least CMSG_SPACE(fd)
    // long, so the first header and its data lie inside it; the kernel only reads `msg`,
    // `iov` (pointing at `data`, live for the call) and `control`.
    let sent = unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return Err(io::Error::other("no room for the control message"));
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(fd_len) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd.as_raw_fd());
        loop {
            let r = libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL);
            if r == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break r;
        }
    };
    if sent == -1 {
        return Err(io::Error::last_os_error());
    }
    if sent as usize != data.len() {
        return Err(io::Error::other("short send with a descriptor attached"));
    }
    Ok(())
}

/// `recvmsg(2)` on the unix stream socket `sock` into `buf`, retried on `EINTR`: the bytes
/// read and every descriptor that arrived with them (close-on-exec, owned by the caller).
/// `Ok((0, _))` at end-of-file. The socket's read timeout applies.
pub(crate) fn recv_with_fds(
    sock: BorrowedFd<'_>,
    buf: &mut [u8],
) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut control = ControlBuf([0; 64]);
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: as in `send_with_fd`: all-zero is a valid msghdr.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = control.0.len() as _;
    let n = loop {
        // SAFETY: `msg` points at `iov` (describing the live, writable `buf`) and at the live,
        // aligned, writable `control`; the kernel writes at most their lengths.
        let r = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if r == -1 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        break r as usize;
    };
    let mut fds = Vec::new();
    // SAFETY: the kernel filled `control` with `msg_controllen` bytes of well-formed control
    // messages; CMSG_FIRSTHDR/NXTHDR stay inside that range and return null at its end. Each
    // SCM_RIGHTS payload is an array of descriptors the kernel just installed in this process
    // (owned by nobody else), read unaligned from the byte buffer.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let header = libc::CMSG_LEN(0) as usize;
                let len = ((*cmsg).cmsg_len as usize).saturating_sub(header);
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(data.add(i));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n, fds))
}

/// Brings the loopback interface of the current network namespace up (`SIOCSIFFLAGS` on
/// `lo`). Needs `CAP_NET_ADMIN` over the namespace (the new user namespace's owner has it).
pub(crate) fn loopback_up() -> io::Result<()> {
    // SAFETY: plain integers; the returned descriptor is owned below.
    let raw =
        check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: the kernel just returned this descriptor and nothing else owns it.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: ifreq is a plain C struct (name array and a union of plain fields); all-zero
    // is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: `ifr` is a live, writable ifreq for the duration of each call; SIOCGIFFLAGS
    // and SIOCSIFFLAGS read and write only `ifr_flags` of the union, which is initialised
    // (zeroed, then filled by the kernel) before it is read.
    unsafe {
        check(libc::ioctl(
            sock.as_raw_fd(),
            libc::SIOCGIFFLAGS as libc::Ioctl,
            &mut ifr,
        ))?;
        ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        check(libc::ioctl(
            sock.as_raw_fd(),
            libc::SIOCSIFFLAGS as libc::Ioctl,
            &mut ifr,
        ))?;
    }
    Ok(())
}
