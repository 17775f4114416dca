//! The helper: a fresh, single-threaded process (the host binary re-executed with a hidden
//! subcommand) that builds the sandbox layer by layer and finally `execve`s the generator.
//!
//! Process shapes (all in the one process group the supervisor created):
//! - none: `helper` applies the runner's parts to itself and execs the generator. With
//!   egress, `helper` first listens on the host's loopback (ephemeral port) and hands the
//!   socket to the supervisor.
//! - landlock+seccomp: `helper` (the guard, unconfined, the process group's leader) forks the
//!   generator, which takes the sandbox identity, applies the layers and execs; the guard
//!   reports the exec and the generator's status, and kills the whole process group if the
//!   supervisor dies first. The fallback refuses egress.
//! - namespaces: `helper` (host namespaces; writes the uid/gid maps) -> `ns` (unshares the
//!   user, mount, pid, ipc, uts and network namespaces; with egress, brings the namespace's
//!   loopback up, listens on `127.0.0.1:EGRESS_PROXY_PORT` and hands the socket to the
//!   supervisor, keeping no copy) -> `init` (pid 1 of the new pid
//!   namespace; mounts a fresh /proc, drops capabilities, reaps, reports the generator's
//!   status) -> the generator (applies no_new_privs, rlimits, landlock, seccomp; execs).
//!   Killing `init` kills everything in the pid namespace, whatever its process group.
//!
//! Guards against: a spec that does not parse or validate, a host binary that started
//! threads before handing over (fork would be unsafe), a layer that fails or is not
//! enforced (reported as an error, the generator never starts), orphaning (every process
//! has a parent-death signal).
//! On success: does not return; the generator runs with every layer of its mode in force.
//! Does not check: the generator's behaviour; that is what the layers are for.

use std::convert::Infallible;
use std::ffi::CString;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use super::binds;
use super::identity::{self, Identity};
use super::landlock_layer::{self, LandlockFailure};
use super::newroot;
use super::reach::Who;
use super::runner::EGRESS_NEEDS_NAMESPACES;
use super::seccomp::{self, FilterOptions};
use super::sys::{self, ExecImage, Forked};
use crate::outcome::SandboxKind;
use crate::proto::{HelperInput, Report, MAX_SPEC_BYTES};
use crate::spec::{Mode, Network, Rlimits, SandboxSpec, EGRESS_PROXY_PORT};

/// Helper processes counted by `RLIMIT_NPROC` in namespace mode (`ns` and `init`).
const NS_HELPER_PROCESSES: u64 = 2;

const CAP_SETPCAP: u32 = 8;

/// Proxy variables replaced (or removed) in the generator's environment when egress is on.
const PROXY_VARS: &[&str] = &[
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// A layer that failed, reported to the supervisor as `Report::Error`.
struct Fail {
    layer: &'static str,
    detail: String,
}

impl Fail {
    fn new(layer: &'static str, detail: impl Into<String>) -> Self {
        Fail {
            layer,
            detail: detail.into(),
        }
    }

    fn report(&self) -> Report {
        Report::Error {
            layer: self.layer.to_owned(),
            detail: self.detail.clone(),
        }
    }
}

fn fail(layer: &'static str, what: &'static str) -> impl FnOnce(io::Error) -> Fail {
    move |e| Fail::new(layer, format!("{what}: {e}"))
}

/// The back-channel to the supervisor (close-on-exec, so the generator never holds it).
struct Chan(UnixStream);

impl Chan {
    fn send(&self, r: &Report) {
        // Nothing useful can be done if the supervisor is gone.
        let _ = (&self.0).write_all(&r.encode());
    }
}

/// Entry point of the helper process; see [`crate::child_main`].
pub(crate) fn child_main() -> ! {
    let (chan, input) = match take_channel() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("airlock-sandbox helper: {e}");
            sys::exit(125);
        }
    };
    let input = match input {
        Ok(i) => i,
        Err(f) => {
            chan.send(&f.report());
            sys::exit(127);
        }
    };
    match run(&chan, input) {
        Ok(never) => match never {},
        Err(f) => {
            chan.send(&f.report());
            sys::exit(127);
        }
    }
}

/// Reads the spec from stdin (the supervisor's socket), keeps the socket as the report
/// channel on a close-on-exec descriptor, and puts /dev/null on stdin.
#[allow(clippy::type_complexity)]
fn take_channel() -> io::Result<(Chan, Result<HelperInput, Fail>)> {
    let fd = io::stdin().as_fd().try_clone_to_owned()?;
    let stream = UnixStream::from(fd);
    let mut buf = Vec::new();
    (&stream).take(MAX_SPEC_BYTES + 1).read_to_end(&mut buf)?;
    let devnull = std::fs::File::open("/dev/null")?;
    sys::dup_onto(devnull.as_fd(), 0)?;
    let input = if buf.len() as u64 > MAX_SPEC_BYTES {
        Err(Fail::new(
            "helper",
            format!("spec larger than {MAX_SPEC_BYTES} bytes"),
        ))
    } else {
        serde_json::from_slice::<HelperInput>(&buf)
            .map_err(|e| Fail::new("helper", format!("spec does not parse: {e}")))
    };
    Ok((Chan(stream), input))
}

fn run(chan: &Chan, input: HelperInput) -> Result<Infallible, Fail> {
    let spec = input.spec;
    guard_parent(input.parent_pid)?;
    sys::reset_signals();
    single_threaded()?;
    spec.validate()
        .map_err(|e| Fail::new("helper", e.to_string()))?;
    let program = resolve_program(&spec)?;
    let egress = spec.network == Network::Egress;
    match spec.mode {
        Mode::Unsandboxed => {
            chan.send(&kind(SandboxKind::None));
            let port = if egress {
                Some(host_egress_listener(chan)?)
            } else {
                None
            };
            let image = exec_image(&spec, &program, port)?;
            unconfined_exec(&spec, &image)
        }
        Mode::LandlockSeccomp if egress => Err(Fail::new(
            "unavailable",
            format!("landlock+seccomp: {EGRESS_NEEDS_NAMESPACES}"),
        )),
        Mode::LandlockSeccomp => {
            let image = exec_image(&spec, &program, None)?;
            let id = identity::prepare(&spec).map_err(|d| Fail::new("identity", d))?;
            bind_readable(&spec, id)?;
            chan.send(&kind(SandboxKind::LandlockSeccomp));
            fallback(chan, &spec, id, input.parent_pid, &program, &image)
        }
        Mode::Namespaces | Mode::Auto => {
            let image = exec_image(&spec, &program, egress.then_some(EGRESS_PROXY_PORT))?;
            let id = identity::prepare(&spec).map_err(|d| Fail::new("identity", d))?;
            bind_readable(&spec, id)?;
            match namespaces(chan, &spec, id, &program, &image) {
                Ok(never) => match never {},
                Err(NsError::Fail(f)) => Err(f),
                Err(NsError::Unavailable(reason)) if spec.mode == Mode::Auto && !egress => {
                    chan.send(&Report::Fallback { reason });
                    chan.send(&kind(SandboxKind::LandlockSeccomp));
                    fallback(chan, &spec, id, input.parent_pid, &program, &image)
                }
                Err(NsError::Unavailable(reason)) if egress => Err(Fail::new(
                    "unavailable",
                    format!("user namespaces: {reason}; {EGRESS_NEEDS_NAMESPACES}"),
                )),
                Err(NsError::Unavailable(reason)) => Err(Fail::new(
                    "unavailable",
                    format!("user namespaces: {reason}"),
                )),
            }
        }
    }
}

/// A root worker's readable roots its generator's identity could not reach, bound in (see
/// `binds`); nothing for another worker, whose generator keeps its uid.
fn bind_readable(spec: &SandboxSpec, id: Identity) -> Result<(), Fail> {
    if !id.switch_from_root {
        return Ok(());
    }
    binds::apply(&binds::unreachable(spec, &who(id))).map_err(|d| Fail::new("readable", d))
}

fn who(id: Identity) -> Who {
    Who {
        uid: id.uid,
        gid: id.gid,
        groups: Vec::new(),
    }
}

fn kind(k: SandboxKind) -> Report {
    Report::Kind {
        kind: k.as_str().to_owned(),
    }
}

/// Dies with the supervisor; exits at once if it is already gone.
fn guard_parent(parent_pid: u32) -> Result<(), Fail> {
    sys::set_parent_death_signal(libc::SIGKILL)
        .map_err(fail("helper", "prctl(PR_SET_PDEATHSIG)"))?;
    if i64::from(sys::getppid()) != i64::from(parent_pid) {
        sys::exit(0);
    }
    Ok(())
}

/// `fork` is only safe here because nothing else runs in this process.
fn single_threaded() -> Result<(), Fail> {
    let n = std::fs::read_dir("/proc/self/task")
        .map_err(fail("helper", "/proc/self/task"))?
        .count();
    if n != 1 {
        return Err(Fail::new(
            "helper",
            format!("the host process runs {n} threads; call child_main before starting any"),
        ));
    }
    Ok(())
}

/// The file to exec (see `SandboxSpec::resolve_program`).
fn resolve_program(spec: &SandboxSpec) -> Result<PathBuf, Fail> {
    spec.resolve_program().ok_or_else(|| {
        // The sandbox's PATH is not the worker's: say which was searched and how to do better.
        Fail::new(
            "exec",
            format!(
                "{}: not found in the sandbox's PATH ({}); give the generator's absolute path or --readable its install",
                spec.program.display(),
                spec.path_var()
            ),
        )
    })
}

fn cstring(what: &str, bytes: Vec<u8>) -> Result<CString, Fail> {
    CString::new(bytes).map_err(|_| Fail::new("helper", format!("{what} contains a NUL byte")))
}

/// Hands the egress listener to the supervisor (the socket travels with the report).
fn send_listener(chan: &Chan, listener: &TcpListener) -> Result<(), Fail> {
    sys::send_with_fd(
        chan.0.as_fd(),
        &Report::EgressListener {}.encode(),
        listener.as_fd(),
    )
    .map_err(fail("egress", "hand the proxy listener to the supervisor"))
}

/// `Mode::Unsandboxed` with egress: a listener on the host's loopback (nothing is enforced;
/// the generator is only pointed at the proxy). Returns its port.
fn host_egress_listener(chan: &Chan) -> Result<u16, Fail> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(fail("egress", "listen on the host's loopback"))?;
    let port = l
        .local_addr()
        .map_err(fail("egress", "listener address"))?
        .port();
    send_listener(chan, &l)?;
    Ok(port)
}

/// Namespace mode with egress, in `ns` (inside the new network namespace, still holding
/// `CAP_NET_ADMIN` over it): loopback up, the one listener, handed over, no copy kept.
fn namespace_egress_listener(chan: &Chan) -> Result<(), Fail> {
    sys::loopback_up().map_err(fail("egress", "bring the namespace's loopback up"))?;
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, EGRESS_PROXY_PORT))
        .map_err(fail("egress", "listen on the namespace's loopback"))?;
    send_listener(chan, &l)
}

/// The generator's image. With an egress port, the proxy variables point at
/// `http://127.0.0.1:<port>` (replacing the spec's) and `NO_PROXY` is dropped.
fn exec_image(
    spec: &SandboxSpec,
    program: &Path,
    proxy_port: Option<u16>,
) -> Result<ExecImage, Fail> {
    let path = cstring("program", program.as_os_str().as_bytes().to_vec())?;
    let mut argv = vec![cstring(
        "program",
        spec.program.as_os_str().as_bytes().to_vec(),
    )?];
    for a in &spec.args {
        argv.push(cstring("argument", a.as_bytes().to_vec())?);
    }
    let mut envp = Vec::with_capacity(spec.env.len() + 4);
    for (k, v) in &spec.env {
        if proxy_port.is_some() && PROXY_VARS.contains(&k.as_str()) {
            continue;
        }
        envp.push(cstring("environment", format!("{k}={v}").into_bytes())?);
    }
    if let Some(port) = proxy_port {
        for k in &PROXY_VARS[..4] {
            envp.push(cstring(
                "environment",
                format!("{k}=http://127.0.0.1:{port}").into_bytes(),
            )?);
        }
    }
    Ok(ExecImage::new(path, argv, envp))
}

/// `Mode::Unsandboxed`: only the runner's parts (workdir, rlimits, clean descriptors).
fn unconfined_exec(spec: &SandboxSpec, image: &ExecImage) -> Result<Infallible, Fail> {
    std::env::set_current_dir(&spec.workdir).map_err(fail("workdir", "chdir"))?;
    apply_rlimits(&spec.rlimits, 0)?;
    sys::cloexec_from(3).map_err(fail("fds", "close_range"))?;
    Err(exec_failed(spec, image))
}

fn exec_failed(spec: &SandboxSpec, image: &ExecImage) -> Fail {
    let e = image.exec();
    Fail::new(
        "exec",
        format!(
            "execve {} ({}): {e}",
            image.path().to_string_lossy(),
            spec.program.display()
        ),
    )
}

/// landlock+seccomp without namespaces. This process stays outside the sandbox as the
/// *guard* (the process group's leader): it forks the generator, which confines itself and
/// execs; the guard reports the exec, waits for the generator and reports its status. If
/// the supervisor dies first (its end of the report channel closes), the guard kills the
/// whole process group, which the generator cannot leave (seccomp pins it): a parent-death
/// signal is not inherited across `fork`, so without the guard a process the generator
/// forked would outlive a killed worker. The generator cannot signal or trace the guard
/// (landlock's signal scope and ptrace rule, seccomp), and as a root worker's guard it is
/// another uid anyway.
fn fallback(
    chan: &Chan,
    spec: &SandboxSpec,
    id: Identity,
    parent_pid: u32,
    program: &Path,
    image: &ExecImage,
) -> Result<Infallible, Fail> {
    let (exec_r, exec_w) = io::pipe().map_err(fail("helper", "pipe"))?;
    let guard_pid = sys::getpid();
    match sys::fork() {
        Err(e) => Err(Fail::new("helper", format!("fork the generator: {e}"))),
        Ok(Forked::Child) => {
            drop(exec_r);
            let f = match fallback_generator(chan, spec, id, guard_pid, program, image) {
                Ok(never) => match never {},
                Err(f) => f,
            };
            chan.send(&f.report());
            let _ = (&exec_w).write_all(&[1]);
            sys::exit(127);
        }
        Ok(Forked::Parent(generator)) => {
            drop(exec_w);
            guard(chan, generator, &exec_r, parent_pid)
        }
    }
}

/// The generator's side of the fallback: identity, then every layer, then `execve`.
fn fallback_generator(
    chan: &Chan,
    spec: &SandboxSpec,
    id: Identity,
    guard_pid: libc::pid_t,
    program: &Path,
    image: &ExecImage,
) -> Result<Infallible, Fail> {
    let die_with_guard = || -> Result<(), Fail> {
        sys::set_parent_death_signal(libc::SIGKILL)
            .map_err(fail("helper", "prctl(PR_SET_PDEATHSIG)"))?;
        if sys::getppid() != guard_pid {
            sys::exit(1);
        }
        Ok(())
    };
    die_with_guard()?;
    if id.switch_from_root {
        drop_bounding_set().map_err(|d| Fail::new("capabilities", d))?;
        switch_identity(id)?;
        // Changing the effective uid cleared the parent-death signal.
        die_with_guard()?;
    }
    confine_and_exec(
        chan,
        spec,
        program,
        image,
        Confine {
            pin_process_group: true,
            // A non-root worker's guard runs as the generator's uid and counts.
            nproc_extra: u64::from(!id.switch_from_root),
            tcp_connect_port: None,
        },
    )
}

/// The fallback's guard: reports the generator's exec and status; kills the process group
/// if the supervisor goes away first. Never returns.
fn guard(chan: &Chan, generator: libc::pid_t, exec_r: &io::PipeReader, parent_pid: u32) -> ! {
    // EOF: the generator's execve closed the close-on-exec pipe. A byte: it failed (and
    // reported why).
    let mut b = [0u8; 1];
    let mut r = exec_r;
    let started = loop {
        match r.read(&mut b) {
            Ok(n) => break n == 0,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break false,
        }
    };
    if !started {
        let _ = sys::waitpid(generator, 0);
        sys::exit(127);
    }
    chan.send(&Report::Started {});
    let kill_all = || -> ! {
        let _ = sys::kill(-sys::getpid(), libc::SIGKILL);
        sys::exit(137)
    };
    // The guard must live to act on the supervisor's death, not die of it.
    if sys::set_parent_death_signal(0).is_err()
        || i64::from(sys::getppid()) != i64::from(parent_pid)
    {
        kill_all();
    }
    let Ok(pidfd) = sys::pidfd_open(generator) else {
        kill_all();
    };
    loop {
        // No events asked on the channel: the supervisor shut down its writing side long
        // ago; only its closing (POLLHUP) or an error matters.
        let mut fds = [
            libc::pollfd {
                fd: chan.0.as_raw_fd(),
                events: 0,
                revents: 0,
            },
            libc::pollfd {
                fd: pidfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        if sys::poll(&mut fds, -1).is_err() {
            kill_all();
        }
        if fds[1].revents != 0 {
            match sys::waitpid(generator, 0) {
                Ok(Some((_, st))) => {
                    chan.send(&Report::Status { raw: st });
                    sys::exit(0);
                }
                _ => kill_all(),
            }
        }
        if fds[0].revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            kill_all();
        }
    }
}

fn switch_identity(id: Identity) -> Result<(), Fail> {
    sys::clear_groups().map_err(fail("identity", "setgroups"))?;
    sys::set_gid(id.gid).map_err(fail("identity", "setresgid"))?;
    sys::set_uid(id.uid).map_err(fail("identity", "setresuid"))?;
    Ok(())
}

struct Confine {
    pin_process_group: bool,
    nproc_extra: u64,
    /// Egress (namespace mode): the proxy's port, the only TCP connect landlock allows; also
    /// lets seccomp allow TCP stream sockets.
    tcp_connect_port: Option<u16>,
}

/// The last layers, in the documented order, then `execve`. Runs in the process that
/// becomes the generator.
fn confine_and_exec(
    chan: &Chan,
    spec: &SandboxSpec,
    program: &Path,
    image: &ExecImage,
    how: Confine,
) -> Result<Infallible, Fail> {
    std::env::set_current_dir(&spec.workdir).map_err(fail("workdir", "chdir"))?;
    drop_capabilities().map_err(|d| Fail::new("capabilities", d))?;
    sys::set_no_new_privs().map_err(fail("no-new-privs", "prctl(PR_SET_NO_NEW_PRIVS)"))?;
    if !sys::no_new_privs().map_err(fail("no-new-privs", "prctl(PR_GET_NO_NEW_PRIVS)"))? {
        return Err(Fail::new(
            "no-new-privs",
            "the kernel reports no_new_privs unset",
        ));
    }
    apply_rlimits(&spec.rlimits, how.nproc_extra)?;
    match landlock_layer::restrict(spec, program, how.tcp_connect_port) {
        Ok(None) => {}
        Ok(Some(what)) => chan.send(&Report::Degraded { what }),
        Err(LandlockFailure::Unavailable(d)) => return Err(Fail::new("unavailable", d)),
        Err(LandlockFailure::Failed(d)) => return Err(Fail::new("landlock", d)),
    }
    seccomp::install(FilterOptions {
        pin_process_group: how.pin_process_group,
        allow_tcp: how.tcp_connect_port.is_some(),
        // Without namespaces (the fallback) there is no IPC namespace of the sandbox's own.
        deny_sysv_ipc: how.pin_process_group,
    })
    .map_err(|e| match e {
        seccomp::SeccompFailure::Unavailable(d) => Fail::new("unavailable", d),
        seccomp::SeccompFailure::Failed(d) => Fail::new("seccomp", d),
    })?;
    sys::cloexec_from(3).map_err(fail("fds", "close_range"))?;
    Err(exec_failed(spec, image))
}

/// Drops every capability: the bounding set when we may, then ambient, effective,
/// permitted and inheritable; then checks that all three sets read back empty.
fn drop_capabilities() -> Result<(), String> {
    let (eff, _, _) = sys::capabilities().map_err(|e| format!("capget: {e}"))?;
    if eff & (1 << CAP_SETPCAP) != 0 {
        drop_bounding_set()?;
    }
    // EINVAL before Linux 4.3, which has no ambient set to clear.
    let _ = sys::clear_ambient_caps();
    sys::clear_capabilities().map_err(|e| format!("capset: {e}"))?;
    let (e, p, i) = sys::capabilities().map_err(|e| format!("capget: {e}"))?;
    if e | p | i != 0 {
        return Err(format!(
            "capabilities still set after dropping (effective {e:#x}, permitted {p:#x}, inheritable {i:#x})"
        ));
    }
    Ok(())
}

fn drop_bounding_set() -> Result<(), String> {
    for cap in 0..64 {
        match sys::bounding_has(cap) {
            Ok(true) => sys::drop_bounding_cap(cap)
                .map_err(|e| format!("prctl(PR_CAPBSET_DROP, {cap}): {e}"))?,
            Ok(false) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => break,
            Err(e) => return Err(format!("prctl(PR_CAPBSET_READ, {cap}): {e}")),
        }
    }
    Ok(())
}

/// Lowers the limits (never raises a hard limit); core dumps are always off.
fn apply_rlimits(r: &Rlimits, nproc_extra: u64) -> Result<(), Fail> {
    lower(libc::RLIMIT_CORE, "core", Some(0), 0)?;
    lower(libc::RLIMIT_CPU, "cpu-secs", r.cpu_secs, 1)?;
    lower(libc::RLIMIT_AS, "address-space", r.address_space_bytes, 0)?;
    lower(libc::RLIMIT_FSIZE, "file-size", r.file_size_bytes, 0)?;
    lower(libc::RLIMIT_NOFILE, "open-files", r.open_files, 0)?;
    lower(
        libc::RLIMIT_NPROC,
        "processes",
        r.processes.map(|p| p.saturating_add(nproc_extra)),
        0,
    )
}

/// Sets soft = `value`, hard = `value + hard_extra` (CPU: `SIGXCPU` first, `SIGKILL` a
/// second later), both capped by the current hard limit.
fn lower(
    resource: sys::Resource,
    name: &str,
    value: Option<u64>,
    hard_extra: u64,
) -> Result<(), Fail> {
    let Some(v) = value else { return Ok(()) };
    let (_, cur_hard) = sys::getrlimit(resource)
        .map_err(|e| Fail::new("rlimits", format!("getrlimit {name}: {e}")))?;
    let hard = v.saturating_add(hard_extra).min(cur_hard);
    let soft = v.min(hard);
    sys::setrlimit(resource, soft, hard)
        .map_err(|e| Fail::new("rlimits", format!("setrlimit {name} = {soft}: {e}")))
}

/// Why the namespace path did not produce a generator.
enum NsError {
    /// The kernel refused a namespace step (Auto falls back).
    Unavailable(String),
    /// Something else failed.
    Fail(Fail),
}

const NS_STEPS: [&str; 5] = [
    "ok",
    "unshare(user, mount, pid, ipc, uts, net)",
    "set the sandbox identity in the user namespace",
    "make mounts private",
    "set the hostname",
];

/// Namespace mode, in this (host-namespace) process: forks `ns`, writes its uid/gid maps,
/// then mirrors its exit.
fn namespaces(
    chan: &Chan,
    spec: &SandboxSpec,
    id: Identity,
    program: &Path,
    image: &ExecImage,
) -> Result<Infallible, NsError> {
    if id.switch_from_root {
        sys::clear_groups()
            .map_err(|e| NsError::Fail(Fail::new("identity", format!("setgroups: {e}"))))?;
    }
    let pipes = || -> io::Result<_> { Ok((io::pipe()?, io::pipe()?)) };
    let ((to_ns_r, to_ns_w), (from_ns_r, from_ns_w)) =
        pipes().map_err(|e| NsError::Fail(Fail::new("namespaces", format!("pipe: {e}"))))?;
    let helper_pid = sys::getpid();
    match sys::fork() {
        Err(e) => Err(NsError::Fail(Fail::new("namespaces", format!("fork: {e}")))),
        Ok(Forked::Child) => {
            drop(to_ns_w);
            drop(from_ns_r);
            ns_main(
                chan, spec, id, program, image, helper_pid, to_ns_r, from_ns_w,
            )
        }
        Ok(Forked::Parent(ns)) => {
            drop(to_ns_r);
            drop(from_ns_w);
            if let Err(e) = drive_ns(chan, ns, id, &to_ns_w, &from_ns_r) {
                let _ = sys::kill(ns, libc::SIGKILL);
                let _ = sys::waitpid(ns, 0);
                return Err(e);
            }
            drop(to_ns_w);
            drop(from_ns_r);
            match sys::waitpid(ns, 0) {
                Ok(Some((_, st))) if libc::WIFEXITED(st) => sys::exit(libc::WEXITSTATUS(st)),
                Ok(Some((_, st))) if libc::WIFSIGNALED(st) => {
                    sys::die_by_signal(libc::WTERMSIG(st))
                }
                _ => sys::exit(126),
            }
        }
    }
}

fn drive_ns(
    chan: &Chan,
    ns: libc::pid_t,
    id: Identity,
    to_ns: &io::PipeWriter,
    from_ns: &io::PipeReader,
) -> Result<(), NsError> {
    read_step(from_ns)?;
    write_maps(ns, id).map_err(NsError::Unavailable)?;
    go(to_ns)?;
    read_step(from_ns)?;
    chan.send(&kind(SandboxKind::Namespaces));
    go(to_ns)
}

fn go(to_ns: &io::PipeWriter) -> Result<(), NsError> {
    let mut w = to_ns;
    w.write_all(&[1])
        .map_err(|e| NsError::Unavailable(format!("namespace child gone: {e}")))
}

fn read_step(from_ns: &io::PipeReader) -> Result<(), NsError> {
    let mut buf = [0u8; 8];
    let mut r = from_ns;
    r.read_exact(&mut buf)
        .map_err(|e| NsError::Unavailable(format!("namespace child died: {e}")))?;
    let step = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    let errno = i32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]);
    if errno == 0 {
        return Ok(());
    }
    Err(NsError::Unavailable(format!(
        "{}: {}",
        NS_STEPS.get(step).copied().unwrap_or("namespace step"),
        io::Error::from_raw_os_error(errno)
    )))
}

fn write_maps(ns: libc::pid_t, id: Identity) -> Result<(), String> {
    let proc = PathBuf::from(format!("/proc/{ns}"));
    match std::fs::write(proc.join("setgroups"), "deny") {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("setgroups deny: {e}")),
    }
    std::fs::write(proc.join("uid_map"), format!("{0} {0} 1\n", id.uid))
        .map_err(|e| format!("uid_map: {e}"))?;
    std::fs::write(proc.join("gid_map"), format!("{0} {0} 1\n", id.gid))
        .map_err(|e| format!("gid_map: {e}"))
}

/// Reports step `step`'s result; exits if it failed.
fn step(from_ns: &io::PipeWriter, step: u32, r: io::Result<()>) {
    let errno = match &r {
        Ok(()) => 0,
        Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
    };
    let mut buf = [0u8; 8];
    buf[..4].copy_from_slice(&step.to_ne_bytes());
    buf[4..].copy_from_slice(&errno.to_ne_bytes());
    let mut w = from_ns;
    if w.write_all(&buf).is_err() || r.is_err() {
        sys::exit(1);
    }
}

fn wait_go(to_ns: &io::PipeReader) {
    let mut b = [0u8; 1];
    let mut r = to_ns;
    if r.read_exact(&mut b).is_err() {
        sys::exit(1);
    }
}

/// `ns`: unshares every namespace, takes the sandbox identity, then forks `init`.
#[allow(clippy::too_many_arguments)]
fn ns_main(
    chan: &Chan,
    spec: &SandboxSpec,
    id: Identity,
    program: &Path,
    image: &ExecImage,
    helper_pid: libc::pid_t,
    to_ns: io::PipeReader,
    from_ns: io::PipeWriter,
) -> ! {
    let orphaned = || sys::getppid() != helper_pid;
    if sys::set_parent_death_signal(libc::SIGKILL).is_err() || orphaned() {
        sys::exit(1);
    }
    let flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWNET;
    step(&from_ns, 1, sys::unshare(flags));
    wait_go(&to_ns);
    let mut r = (2, Ok(()));
    if id.switch_from_root {
        r = (2, sys::set_gid(id.gid).and_then(|()| sys::set_uid(id.uid)));
    }
    // A uid change clears the parent-death signal.
    if r.1.is_ok() && (sys::set_parent_death_signal(libc::SIGKILL).is_err() || orphaned()) {
        sys::exit(1);
    }
    if r.1.is_ok() {
        r = (
            3,
            sys::mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE),
        );
    }
    if r.1.is_ok() {
        r = (4, sys::sethostname(b"airlock"));
    }
    step(&from_ns, r.0, r.1);
    wait_go(&to_ns);
    drop(to_ns);
    drop(from_ns);
    if spec.network == Network::Egress {
        if let Err(f) = namespace_egress_listener(chan) {
            chan.send(&f.report());
            sys::exit(127);
        }
    }
    match sys::fork() {
        Err(e) => {
            chan.send(&Fail::new("namespaces", format!("fork init: {e}")).report());
            sys::exit(127);
        }
        Ok(Forked::Child) => init_main(chan, spec, program, image),
        Ok(Forked::Parent(init)) => match sys::waitpid(init, 0) {
            Ok(Some((_, st))) if libc::WIFEXITED(st) => sys::exit(libc::WEXITSTATUS(st)),
            Ok(Some((_, st))) if libc::WIFSIGNALED(st) => sys::die_by_signal(libc::WTERMSIG(st)),
            _ => sys::exit(126),
        },
    }
}

/// `init`: pid 1 of the sandbox's pid namespace. Mounts /proc, drops capabilities, forks the
/// generator, reaps everything, reports the generator's status, and exits, which makes the
/// kernel kill whatever is left in the namespace.
fn init_main(chan: &Chan, spec: &SandboxSpec, program: &Path, image: &ExecImage) -> ! {
    let _ = sys::set_parent_death_signal(libc::SIGKILL);
    let setup = || -> Result<(), Fail> {
        // The root of granted paths only, with a fresh /proc of the pid namespace.
        newroot::enter(spec, program).map_err(|d| Fail::new("root", d))?;
        drop_capabilities().map_err(|d| Fail::new("capabilities", d))
    };
    if let Err(f) = setup() {
        chan.send(&f.report());
        sys::exit(127);
    }
    let (exec_r, exec_w) = match io::pipe() {
        Ok(p) => p,
        Err(e) => {
            chan.send(&Fail::new("namespaces", format!("pipe: {e}")).report());
            sys::exit(127);
        }
    };
    let generator = match sys::fork() {
        Err(e) => {
            chan.send(&Fail::new("namespaces", format!("fork generator: {e}")).report());
            sys::exit(127);
        }
        Ok(Forked::Child) => {
            drop(exec_r);
            let _ = sys::set_parent_death_signal(libc::SIGKILL);
            let how = Confine {
                pin_process_group: false,
                nproc_extra: NS_HELPER_PROCESSES,
                tcp_connect_port: (spec.network == Network::Egress).then_some(EGRESS_PROXY_PORT),
            };
            let f = match confine_and_exec(chan, spec, program, image, how) {
                Ok(never) => match never {},
                Err(f) => f,
            };
            chan.send(&f.report());
            let _ = (&exec_w).write_all(&[1]);
            sys::exit(127);
        }
        Ok(Forked::Parent(pid)) => pid,
    };
    drop(exec_w);
    // EOF: the generator's execve closed the close-on-exec pipe. A byte: it failed.
    let mut b = [0u8; 1];
    let started = loop {
        match (&exec_r).read(&mut b) {
            Ok(n) => break n == 0,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break false,
        }
    };
    drop(exec_r);
    if started {
        chan.send(&Report::Started {});
    }
    loop {
        match sys::waitpid(-1, 0) {
            Ok(Some((pid, st))) if pid == generator => {
                if started {
                    chan.send(&Report::Status { raw: st });
                }
                sys::exit(0);
            }
            Ok(_) => {}
            Err(_) => sys::exit(0),
        }
    }
}
