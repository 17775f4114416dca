//! The supervising side: starts the helper in its own process group with an empty
//! environment, pumps its stdout+stderr into one capped log, waits with timeouts, and kills
//! the whole group.
//!
//! Guards against: output floods (the log is capped; the pipe keeps draining so the
//! generator never blocks), process trees outliving the run (the group is killed when the
//! main process ends, on timeout, and on drop; `wait` returns only once no member is
//! left), signalling a recycled process group (the helper is reaped only after its group
//! has been killed), a helper that never reports (setup deadline), a broken report
//! channel (fail closed), egress combinations that cannot be enforced (refused before
//! fork), and an egress run starting without its proxy listener (fail closed).
//! On `Ok` from [`spawn`]: the generator has been exec'd with every layer of the reported
//! sandbox kind in force.
//! Does not check: what the generator writes; the worker diffs the workdir afterwards.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, PipeReader, PipeWriter, Read, Write};
use std::net::{Shutdown, TcpListener};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::cgroup::{MemoryCgroup, NoCgroup};
use super::sys;
use crate::egress::{EgressProxy, Serving};
use crate::error::SandboxError;
use crate::outcome::{ExitStatus, LimitHit, MemoryCeiling, Outcome, SandboxKind};
use crate::proto::{HelperInput, Report, MAX_LINE_BYTES};
use crate::spec::{LogSink, Mode, Network, SandboxSpec};

/// How long the helper may take to build the sandbox and exec the generator.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long to wait for killed group members to disappear before giving up.
const GROUP_GONE_TIMEOUT: Duration = Duration::from_secs(10);
/// After the run, how much output still in flight the log pump drains before it stops.
const DRAIN_AFTER_STOP_BYTES: u64 = 1 << 20;

/// A running generator. Dropping it kills the whole process group and reaps it.
#[derive(Debug)]
pub struct Running {
    pid: libc::pid_t,
    pidfd: OwnedFd,
    chan: ReportChan,
    program: String,
    kind: Option<SandboxKind>,
    fallback_reason: Option<String>,
    degraded: Option<String>,
    started: Instant,
    pump: Option<JoinHandle<PumpStats>>,
    stop_pump: Option<PipeWriter>,
    /// The proxy serving this sandbox's egress listener; dropped when the run ends.
    egress: Option<Serving>,
    /// The run's memory cgroup (removed when the run ends), or why there is none.
    memory: Result<Option<MemoryCgroup>, String>,
    outcome: Option<Outcome>,
}

/// Why egress cannot be granted without a network namespace.
pub(crate) const EGRESS_NEEDS_NAMESPACES: &str =
    "egress needs the network namespace: without it the generator shares the host's network, \
     landlock's TCP rules name a port but no address and seccomp cannot read connect()'s \
     address, so every host listening on the proxy's port would be reachable";

/// The helper's report channel: lines, and the descriptors that arrive with them.
#[derive(Debug)]
struct ReportChan {
    sock: UnixStream,
    buf: Vec<u8>,
    eof: bool,
    fds: VecDeque<OwnedFd>,
}

impl ReportChan {
    /// One line without its newline (over-long or unterminated lines are returned as they
    /// are, for `Report::decode` to refuse); `None` at end-of-file.
    fn read_line(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            if let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=pos).collect();
                line.pop();
                return Ok(Some(line));
            }
            if self.buf.len() > MAX_LINE_BYTES || (self.eof && !self.buf.is_empty()) {
                return Ok(Some(std::mem::take(&mut self.buf)));
            }
            if self.eof {
                return Ok(None);
            }
            let mut chunk = [0u8; 4096];
            let (n, fds) = sys::recv_with_fds(self.sock.as_fd(), &mut chunk)?;
            self.fds.extend(fds);
            if n == 0 {
                self.eof = true;
            } else {
                self.buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

/// Starts `host_exe hidden_args...` as the sandbox helper (which must call
/// [`crate::child_main`]) and waits until the generator has been exec'd inside the sandbox
/// or a layer has failed. The spec's network must be [`Network::Deny`].
pub fn spawn(
    host_exe: &Path,
    hidden_args: &[&str],
    spec: &SandboxSpec,
    log: &LogSink,
) -> Result<Running, SandboxError> {
    spawn_inner(host_exe, hidden_args, spec, log, None)
}

/// [`spawn`] for a spec whose network is [`Network::Egress`]: the sandbox's proxy listener
/// is served by `proxy` (outside the sandbox) until the run ends, after which `proxy`'s log
/// is final for this run. Refused before anything starts in the landlock+seccomp fallback
/// (`SandboxError::Unavailable`; see [`Network::Egress`] for why), and `Mode::Auto` does not
/// fall back with egress.
pub fn spawn_with_egress(
    host_exe: &Path,
    hidden_args: &[&str],
    spec: &SandboxSpec,
    log: &LogSink,
    proxy: &EgressProxy,
) -> Result<Running, SandboxError> {
    spawn_inner(host_exe, hidden_args, spec, log, Some(proxy))
}

/// Refuses network settings that cannot be honoured, before anything is created.
fn check_network(spec: &SandboxSpec, proxy: bool) -> Result<(), SandboxError> {
    let mismatch = |reason: &str| SandboxError::Spec {
        field: "network".into(),
        rule: "sandbox.spec.egress-proxy",
        reason: reason.into(),
    };
    match (spec.network, proxy) {
        (Network::Deny, false) => Ok(()),
        (Network::Deny, true) => Err(mismatch(
            "an egress proxy was given but the spec denies the network",
        )),
        (Network::Egress, false) => Err(mismatch(
            "network egress needs spawn_with_egress and an EgressProxy",
        )),
        (Network::Egress, true) if spec.mode == Mode::LandlockSeccomp => {
            Err(SandboxError::Unavailable {
                reason: format!("landlock+seccomp: {EGRESS_NEEDS_NAMESPACES}"),
            })
        }
        (Network::Egress, true) => Ok(()),
    }
}

/// Most of the log preallocated: an artifact member holds no more (`TarLimits::artifact`).
const MAX_LOG_PREALLOC: u64 = 32 << 20;

fn spawn_inner(
    host_exe: &Path,
    hidden_args: &[&str],
    spec: &SandboxSpec,
    log: &LogSink,
    proxy: Option<&EgressProxy>,
) -> Result<Running, SandboxError> {
    spec.validate()?;
    check_network(spec, proxy.is_some())?;
    // The preflight may widen a grant (a node package); a widened spec is validated again.
    let widened = super::preflight::preflight(spec)?;
    if widened != *spec {
        widened.validate()?;
    }
    let spec = &widened;
    let input = serde_json::to_vec(&HelperInput {
        spec: spec.clone(),
        parent_pid: std::process::id(),
    })
    .map_err(|e| SandboxError::Protocol {
        detail: format!("spec does not serialise: {e}"),
    })?;
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&log.path)
        .map_err(SandboxError::io("create the log file"))?;
    // The log's blocks are taken now, so a generator that fills the disk cannot cut the log
    // short of its cap (its last lines are what tells why it stopped). Best effort: a file
    // system without fallocate gets the plain writes.
    let _ = sys::fallocate_keep_size(file.as_fd(), log.max_bytes.min(MAX_LOG_PREALLOC));
    let (log_r, log_w) = io::pipe().map_err(SandboxError::io("create the log pipe"))?;
    let log_w2 = log_w
        .try_clone()
        .map_err(SandboxError::io("create the log pipe"))?;
    let (stop_r, stop_w) = io::pipe().map_err(SandboxError::io("create the log pipe"))?;
    let (ours, theirs) =
        UnixStream::pair().map_err(SandboxError::io("create the helper channel"))?;

    let mut cmd = Command::new(host_exe);
    cmd.args(hidden_args)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(log_w)
        .stderr(log_w2)
        .process_group(0);
    let child = cmd
        .spawn()
        .map_err(SandboxError::io("start the sandbox helper"))?;
    // Close our copies of the child's ends, or the pipes never reach end-of-file.
    drop(cmd);
    let pid = libc::pid_t::try_from(child.id()).map_err(|_| SandboxError::Protocol {
        detail: "helper pid out of range".into(),
    })?;
    // The child is reaped by our own waitpid (after its group is killed), not by std.
    drop(child);
    let pidfd = match sys::pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) => {
            let _ = sys::kill(-pid, libc::SIGKILL);
            let _ = sys::waitpid(pid, 0);
            return Err(SandboxError::Io {
                what: "pidfd_open the sandbox helper",
                source: e,
            });
        }
    };
    let mut running = Running {
        pid,
        pidfd,
        chan: ReportChan {
            sock: ours,
            buf: Vec::new(),
            eof: false,
            fds: VecDeque::new(),
        },
        program: spec.program.display().to_string(),
        kind: None,
        fallback_reason: None,
        degraded: None,
        started: Instant::now(),
        pump: None,
        stop_pump: Some(stop_w),
        egress: None,
        memory: Ok(None),
        outcome: None,
    };
    // Before the helper reads its spec (it starts nothing until then), so every process of
    // the sandbox is born inside the ceiling. A cgroup made but not joined is an error.
    if let Some(bytes) = spec.memory_bytes {
        running.memory = match MemoryCgroup::create(bytes, pid) {
            Ok(cg) => Ok(Some(cg)),
            Err(NoCgroup::NotJoined(detail)) => {
                return Err(SandboxError::Layer {
                    layer: "memory".into(),
                    detail,
                })
            }
            Err(NoCgroup::Unavailable(reason)) => Err(reason),
        };
    }
    // From here on, returning early drops `running`, which kills and reaps the group.
    let max = log.max_bytes;
    running.pump = Some(
        std::thread::Builder::new()
            .name("airlock-sandbox-log".into())
            .spawn(move || pump(log_r, file, max, stop_r))
            .map_err(SandboxError::io("start the log pump"))?,
    );
    running.handshake(&input, proxy)?;
    Ok(running)
}

impl Running {
    /// The helper's pid, which is also the process group id of the whole sandbox.
    pub fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// The sandbox that is confining the generator.
    pub fn sandbox(&self) -> SandboxKind {
        self.kind.unwrap_or(SandboxKind::None)
    }

    /// Why `Mode::Auto` fell back to landlock+seccomp, if it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// Waits up to `timeout` for the generator to end. `Ok(None)`: still running (the caller
    /// may checkpoint and wait again). Once it has ended, returns the same outcome each time.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Result<Option<Outcome>, SandboxError> {
        if let Some(o) = &self.outcome {
            return Ok(Some(o.clone()));
        }
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        let mut fds = [libc::pollfd {
            fd: self.pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        let ready = sys::poll(&mut fds, ms).map_err(SandboxError::io("wait for the generator"))?;
        if ready == 0 {
            return Ok(None);
        }
        self.finish(false).map(Some)
    }

    /// Waits for the generator to end.
    pub fn wait(&mut self) -> Result<Outcome, SandboxError> {
        loop {
            if let Some(o) = self.wait_timeout(Duration::from_secs(3600))? {
                return Ok(o);
            }
        }
    }

    /// Waits until `deadline`; past it, kills the whole process tree and reports
    /// `ExitStatus::TimedOut` (limit `wall-clock`).
    pub fn wait_until(&mut self, deadline: Instant) -> Result<Outcome, SandboxError> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                if let Some(o) = self.wait_timeout(Duration::ZERO)? {
                    return Ok(o);
                }
                self.kill_group()?;
                return self.finish(true);
            }
            if let Some(o) = self.wait_timeout(deadline - now)? {
                return Ok(o);
            }
        }
    }

    /// Sends `SIGKILL` to the whole process group (in namespace mode this includes the pid
    /// namespace's init, whose death kills every process in the namespace). A later wait
    /// reports how the generator ended (`Signaled(9)`).
    pub fn kill_group(&mut self) -> Result<(), SandboxError> {
        if self.outcome.is_some() {
            return Ok(());
        }
        // The helper is not reaped before `finish`, so the group id cannot have been reused.
        match sys::kill(-self.pid, libc::SIGKILL) {
            Err(e) if e.raw_os_error() != Some(libc::ESRCH) => Err(SandboxError::Io {
                what: "kill the sandbox process group",
                source: e,
            }),
            _ => Ok(()),
        }
    }

    /// Sends the spec, then reads reports until the generator runs or a layer fails.
    fn handshake(&mut self, input: &[u8], proxy: Option<&EgressProxy>) -> Result<(), SandboxError> {
        let sent = (|| {
            let mut s = &self.chan.sock;
            s.write_all(input)?;
            s.shutdown(Shutdown::Write)?;
            self.chan.sock.set_read_timeout(Some(SETUP_TIMEOUT))
        })();
        if let Err(e) = sent {
            return Err(SandboxError::Protocol {
                detail: format!("could not hand the spec to the helper: {e}"),
            });
        }
        loop {
            let report = match self.read_report()? {
                Some(r) => r,
                None => {
                    // The helper closed the channel: in `none` that is the close-on-exec of a
                    // successful execve (the other modes report `Started`).
                    return match self.kind {
                        Some(SandboxKind::None) => self.egress_ready(proxy),
                        _ => Err(SandboxError::Protocol {
                            detail: "the helper exited before starting the generator".into(),
                        }),
                    };
                }
            };
            match report {
                Report::Kind { kind } if self.kind.is_none() => {
                    self.kind =
                        Some(
                            SandboxKind::parse(&kind).ok_or_else(|| SandboxError::Protocol {
                                detail: format!("unknown sandbox kind {kind:?}"),
                            })?,
                        );
                }
                Report::Fallback { reason } if self.fallback_reason.is_none() => {
                    self.fallback_reason = Some(reason);
                }
                Report::Degraded { what } => self.degraded = Some(what),
                Report::EgressListener {} if self.egress.is_none() => {
                    let Some(proxy) = proxy else {
                        return Err(SandboxError::Protocol {
                            detail: "egress listener for a run without egress".into(),
                        });
                    };
                    self.egress = Some(self.serve_listener(proxy)?);
                }
                Report::Started {} if self.reports_status() => return self.egress_ready(proxy),
                Report::Error { layer, detail } => {
                    return Err(match layer.as_str() {
                        "unavailable" => SandboxError::Unavailable { reason: detail },
                        "exec" => SandboxError::Exec {
                            program: self.program.clone(),
                            detail,
                        },
                        _ => SandboxError::Layer { layer, detail },
                    })
                }
                other => {
                    return Err(SandboxError::Protocol {
                        detail: format!("unexpected report during setup: {other:?}"),
                    })
                }
            }
        }
    }

    /// The listening socket that arrived with `Report::EgressListener`, served by `proxy`.
    fn serve_listener(&mut self, proxy: &EgressProxy) -> Result<Serving, SandboxError> {
        let fd = self
            .chan
            .fds
            .pop_front()
            .ok_or_else(|| SandboxError::Protocol {
                detail: "the egress listener report arrived without a socket".into(),
            })?;
        let listener = TcpListener::from(fd);
        match listener.local_addr() {
            Ok(a) if a.ip().is_loopback() => {}
            other => {
                return Err(SandboxError::Protocol {
                    detail: format!("the egress listener is not a loopback TCP socket ({other:?})"),
                })
            }
        }
        proxy.serve(listener)
    }

    /// At the end of the handshake: with egress, the proxy must be serving.
    fn egress_ready(&mut self, proxy: Option<&EgressProxy>) -> Result<(), SandboxError> {
        self.chan.fds.clear();
        if proxy.is_some() && self.egress.is_none() {
            return Err(SandboxError::Protocol {
                detail: "the helper started the generator without handing over the egress \
                         listener"
                    .into(),
            });
        }
        Ok(())
    }

    /// One report line, `None` at end-of-file.
    fn read_report(&mut self) -> Result<Option<Report>, SandboxError> {
        let line = self.chan.read_line().map_err(|e| SandboxError::Protocol {
            detail: format!("reading the helper's reports: {e}"),
        })?;
        match line {
            None => Ok(None),
            Some(line) => Report::decode(&line).map(Some),
        }
    }

    /// The generator's process has ended (or was killed): kill the rest of the group, reap
    /// the helper, wait for the group to be gone, stop the log pump, build the outcome.
    fn finish(&mut self, timed_out: bool) -> Result<Outcome, SandboxError> {
        // Still unreaped: the group id is ours. Stragglers die with the main process.
        let _ = sys::kill(-self.pid, libc::SIGKILL);
        let reaped =
            sys::waitpid(self.pid, 0).map_err(SandboxError::io("reap the sandbox helper"))?;
        let elapsed_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let helper_status = reaped.map_or(0, |(_, st)| st);
        self.wait_group_gone();
        let memory = self.memory_ceiling();
        // Nothing of the sandbox is left: close its listener and tunnels, finalising the log.
        drop(self.egress.take());
        let (log_bytes, log_truncated) = self.stop_log_pump();
        let raw = self.generator_status().unwrap_or(helper_status);
        let status = if timed_out {
            ExitStatus::TimedOut
        } else if libc::WIFEXITED(raw) {
            ExitStatus::Exited(libc::WEXITSTATUS(raw))
        } else if libc::WIFSIGNALED(raw) {
            ExitStatus::Signaled(libc::WTERMSIG(raw))
        } else {
            ExitStatus::Exited(-1)
        };
        let limit_hit = match status {
            ExitStatus::TimedOut => Some(LimitHit::WallClock),
            ExitStatus::Signaled(libc::SIGXCPU) => Some(LimitHit::CpuSecs),
            ExitStatus::Signaled(libc::SIGXFSZ) => Some(LimitHit::FileSize),
            _ => None,
        };
        let outcome = Outcome {
            status,
            sandbox: self.sandbox(),
            fallback_reason: self.fallback_reason.clone(),
            degraded: self.degraded.clone(),
            log_truncated,
            log_bytes,
            limit_hit,
            elapsed_ms,
            memory,
        };
        self.outcome = Some(outcome.clone());
        Ok(outcome)
    }

    /// Processes the kernel killed at the memory ceiling so far (0 without a ceiling).
    pub fn memory_oom_kills(&self) -> u64 {
        match &self.memory {
            Ok(Some(cg)) => cg.oom_kills(),
            _ => 0,
        }
    }

    /// The memory ceiling's record for the outcome; removes the run's cgroup.
    fn memory_ceiling(&mut self) -> MemoryCeiling {
        match std::mem::replace(&mut self.memory, Ok(None)) {
            Ok(Some(cg)) => MemoryCeiling::Enforced {
                bytes: cg.bytes(),
                oom_kills: cg.oom_kills(),
            },
            Ok(None) => MemoryCeiling::NotAsked,
            Err(reason) => MemoryCeiling::Unenforced { reason },
        }
    }

    /// Waits (bounded) until no process of the group is left, reaping any member that was
    /// re-parented to us (when this process is a subreaper or pid 1).
    fn wait_group_gone(&self) {
        let deadline = Instant::now() + GROUP_GONE_TIMEOUT;
        loop {
            while let Ok(Some(_)) = sys::waitpid(-self.pid, libc::WNOHANG) {}
            if let Err(e) = sys::kill(-self.pid, 0) {
                if e.raw_os_error() == Some(libc::ESRCH) {
                    return;
                }
            }
            if Instant::now() >= deadline {
                return;
            }
            let _ = sys::kill(-self.pid, libc::SIGKILL);
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn stop_log_pump(&mut self) -> (u64, bool) {
        drop(self.stop_pump.take());
        match self.pump.take().map(JoinHandle::join) {
            Some(Ok(stats)) => (stats.kept, stats.truncated),
            _ => (0, true),
        }
    }

    /// Namespace mode and the fallback: a process outside the sandbox (the pid namespace's
    /// init, the fallback's guard) reports `Started` and the generator's status.
    fn reports_status(&self) -> bool {
        matches!(
            self.kind,
            Some(SandboxKind::Namespaces | SandboxKind::LandlockSeccomp)
        )
    }

    /// The generator's own status, as its init or guard reported it.
    fn generator_status(&mut self) -> Option<i32> {
        if !self.reports_status() {
            return None;
        }
        // Every holder of the channel is gone: this reads to end-of-file without blocking.
        let _ = self
            .chan
            .sock
            .set_read_timeout(Some(Duration::from_secs(1)));
        let mut status = None;
        while let Ok(Some(r)) = self.read_report() {
            if let Report::Status { raw } = r {
                status = Some(raw);
            }
        }
        status
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.outcome.is_none() {
            let _ = self.kill_group();
            let _ = self.finish(false);
        }
    }
}

struct PumpStats {
    kept: u64,
    truncated: bool,
}

/// Copies the generator's output into `file` up to `max` bytes, then keeps draining and
/// dropping. Stops at end-of-file, or once `stop` closes and the pipe is drained.
fn pump(log: PipeReader, mut file: File, max: u64, stop: PipeReader) -> PumpStats {
    let mut buf = vec![0u8; 64 << 10];
    let mut stats = PumpStats {
        kept: 0,
        truncated: false,
    };
    let mut file_ok = true;
    let mut after_stop: Option<u64> = None;
    loop {
        if after_stop.is_none() {
            let mut fds = [
                libc::pollfd {
                    fd: log.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: stop.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            if sys::poll(&mut fds, -1).is_err() {
                break;
            }
            if fds[1].revents != 0 {
                // Drain what is in flight, without blocking, then stop.
                if sys::set_nonblocking(log.as_fd()).is_err() {
                    break;
                }
                after_stop = Some(0);
            }
        }
        let n = match (&log).read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let room = usize::try_from(max.saturating_sub(stats.kept)).unwrap_or(usize::MAX);
        let keep = n.min(room);
        if keep > 0 && file_ok {
            if file.write_all(&buf[..keep]).is_ok() {
                stats.kept += keep as u64;
            } else {
                file_ok = false;
            }
        }
        if keep < n || !file_ok {
            stats.truncated = true;
        }
        if let Some(drained) = after_stop.as_mut() {
            *drained += n as u64;
            if *drained > DRAIN_AFTER_STOP_BYTES {
                break;
            }
        }
    }
    let _ = file.flush();
    stats
}
