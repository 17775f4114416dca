//! The helper: a fresh, single-threaded process (the host binary re-executed with a hidden
//! subcommand) that builds the sandbox layer by layer and finally `execve`s the generator.
//!
//! Process shapes (all in the one process group the supervisor created):
//! - landlock+seccomp and none: `helper` applies the layers to itself and execs the generator.
//! - namespaces: `helper` (host namespaces; writes the uid/gid maps) -> `ns` (unshares the
//!   user, mount, pid, ipc, uts and network namespaces) -> `init` (pid 1 of the new pid
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
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use super::sys::{self, ExecImage};
use crate::outcome::SandboxKind;
use crate::proto::{HelperInput, Report, MAX_SPEC_BYTES};
use crate::spec::{Mode, SandboxSpec};

/// `PATH` used to find a bare program name when the spec's environment has none.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

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
    let image = exec_image(&spec, &program)?;
    match spec.mode {
        Mode::Unsandboxed => {
            chan.send(&kind(SandboxKind::None));
            unconfined_exec(&spec, &image)
        }
        Mode::LandlockSeccomp | Mode::Namespaces | Mode::Auto => Err(Fail::new(
            "unavailable",
            "no sandbox layer is built yet (runner only)",
        )),
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

/// The file to exec: a path with `/` as given (relative to the workdir), a bare name looked
/// up in the spec's `PATH`.
fn resolve_program(spec: &SandboxSpec) -> Result<PathBuf, Fail> {
    let p = &spec.program;
    if p.as_os_str().as_bytes().contains(&b'/') {
        return Ok(spec.workdir.join(p));
    }
    let path_var = spec
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map_or(DEFAULT_PATH, |(_, v)| v.as_str());
    for dir in path_var.split(':').filter(|d| d.starts_with('/')) {
        let candidate = Path::new(dir).join(p);
        if let Ok(m) = std::fs::metadata(&candidate) {
            if m.is_file() && m.permissions().mode() & 0o111 != 0 {
                return Ok(candidate);
            }
        }
    }
    Err(Fail::new(
        "exec",
        format!("{}: not found in PATH", p.display()),
    ))
}

fn cstring(what: &str, bytes: Vec<u8>) -> Result<CString, Fail> {
    CString::new(bytes).map_err(|_| Fail::new("helper", format!("{what} contains a NUL byte")))
}

fn exec_image(spec: &SandboxSpec, program: &Path) -> Result<ExecImage, Fail> {
    let path = cstring("program", program.as_os_str().as_bytes().to_vec())?;
    let mut argv = vec![cstring(
        "program",
        spec.program.as_os_str().as_bytes().to_vec(),
    )?];
    for a in &spec.args {
        argv.push(cstring("argument", a.as_bytes().to_vec())?);
    }
    let mut envp = Vec::with_capacity(spec.env.len());
    for (k, v) in &spec.env {
        envp.push(cstring("environment", format!("{k}={v}").into_bytes())?);
    }
    Ok(ExecImage::new(path, argv, envp))
}

/// `Mode::Unsandboxed`: only the runner's parts (workdir, rlimits, clean descriptors).
fn unconfined_exec(spec: &SandboxSpec, image: &ExecImage) -> Result<Infallible, Fail> {
    std::env::set_current_dir(&spec.workdir).map_err(fail("workdir", "chdir"))?;
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
