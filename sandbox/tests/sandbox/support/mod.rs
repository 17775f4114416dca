//! Fixtures: a fresh directory per test, specs for probes, running the real host binary,
//! skipping (loudly) when the kernel lacks a feature, and checking for survivors.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use airlock_sandbox::{
    spawn, spawn_with_egress, EgressProxy, LogSink, Mode, Outcome, Running, SandboxError,
    SandboxSpec, HELPER_SUBCOMMAND,
};

pub const PYTHON: &str = "/usr/bin/python3";

/// Generous bound so a broken test cannot hang the suite; no assertion depends on it.
pub const SAFETY_DEADLINE: Duration = Duration::from_secs(120);

pub fn host() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_airlock-sandbox-host"))
}

/// A unique token for this process and call, for marker names and process command lines.
pub fn nonce() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}{:04}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub work: PathBuf,
    pub tmp: PathBuf,
}

impl Fixture {
    /// `<tmp>/airlock-sandbox-test.XXXX` (0711, searchable by the sandbox identity when the
    /// tests run as root) with `work/` and `tmp/` inside.
    pub fn new() -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix("airlock-sandbox-test.")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let work = dir.path().join("work");
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&work).unwrap();
        std::fs::create_dir(&tmp).unwrap();
        Fixture { dir, work, tmp }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn spec(&self, mode: Mode, program: &str, args: &[&str]) -> SandboxSpec {
        let mut s = SandboxSpec::new(program, &self.work, &self.tmp);
        s.args = args.iter().map(Into::into).collect();
        s.env = vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("TMPDIR".into(), self.tmp.display().to_string()),
            ("LC_ALL".into(), "C".into()),
        ];
        s.mode = mode;
        s
    }

    pub fn sh(&self, mode: Mode, script: &str) -> SandboxSpec {
        self.spec(mode, "/bin/sh", &["-c", script])
    }

    pub fn python(&self, mode: Mode, code: &str) -> SandboxSpec {
        self.spec(mode, PYTHON, &["-c", code])
    }

    pub fn log_sink(&self, max_bytes: u64) -> LogSink {
        LogSink {
            path: self.path(&format!("generator-{}.log", nonce())),
            max_bytes,
        }
    }

    pub fn start(&self, spec: &SandboxSpec) -> Result<(Running, PathBuf), SandboxError> {
        self.start_with(spec, None)
    }

    /// Starts with `spawn_with_egress` when a proxy is given.
    pub fn start_with(
        &self,
        spec: &SandboxSpec,
        proxy: Option<&EgressProxy>,
    ) -> Result<(Running, PathBuf), SandboxError> {
        let sink = self.log_sink(1 << 20);
        let r = match proxy {
            Some(p) => spawn_with_egress(host(), &[HELPER_SUBCOMMAND], spec, &sink, p)?,
            None => spawn(host(), &[HELPER_SUBCOMMAND], spec, &sink)?,
        };
        Ok((r, sink.path))
    }

    /// Runs to completion; returns the outcome and the log.
    pub fn run(&self, spec: &SandboxSpec) -> Result<(Outcome, String), SandboxError> {
        self.run_with(spec, None)
    }

    /// [`Fixture::run`], with egress through `proxy` when given.
    pub fn run_with(
        &self,
        spec: &SandboxSpec,
        proxy: Option<&EgressProxy>,
    ) -> Result<(Outcome, String), SandboxError> {
        let (mut r, log) = self.start_with(spec, proxy)?;
        let o = r.wait_until(Instant::now() + SAFETY_DEADLINE)?;
        let text = String::from_utf8_lossy(&std::fs::read(log).unwrap()).into_owned();
        Ok((o, text))
    }

    /// Runs a probe that must be blocked: a probe exiting 0 is a breach.
    pub fn expect_blocked(&self, spec: &SandboxSpec, what: &str) -> String {
        self.expect_blocked_with(spec, what, None)
    }

    /// [`Fixture::expect_blocked`], with egress through `proxy` when given.
    pub fn expect_blocked_with(
        &self,
        spec: &SandboxSpec,
        what: &str,
        proxy: Option<&EgressProxy>,
    ) -> String {
        let (o, log) = self
            .run_with(spec, proxy)
            .unwrap_or_else(|e| panic!("{what}: sandbox error: {e}"));
        assert!(
            !o.status.success(),
            "BREACH ({what}, {}): the probe succeeded\n--- log ---\n{log}",
            o.sandbox
        );
        log
    }
}

/// Prints why a test is skipped; a skip fails under CI (the one helper, `airlock-testkit`).
pub use airlock_testkit::skip;

/// Whether `mode` can be built on this kernel (probed once per mode with `/bin/true`).
pub fn mode_available(mode: Mode) -> Result<(), String> {
    static NS: OnceLock<Result<(), String>> = OnceLock::new();
    static LS: OnceLock<Result<(), String>> = OnceLock::new();
    let cell = match mode {
        Mode::Namespaces => &NS,
        Mode::LandlockSeccomp => &LS,
        _ => return Ok(()),
    };
    cell.get_or_init(|| {
        let f = Fixture::new();
        match f.run(&f.spec(mode, "/bin/true", &[])) {
            Ok(_) => Ok(()),
            Err(SandboxError::Unavailable { reason }) => Err(reason),
            Err(e) => panic!("probing {mode:?}: {e}"),
        }
    })
    .clone()
}

/// `Some(mode)` if the kernel supports it, else prints SKIPPED and returns `None`.
pub fn require(mode: Mode) -> Option<Mode> {
    match mode_available(mode) {
        Ok(()) => Some(mode),
        Err(why) => {
            skip(&format!("{mode:?} unavailable: {why}"));
            None
        }
    }
}

/// Pids of live (non-zombie) host processes whose command line contains `token`.
pub fn processes_with(token: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(token) {
                found.push(pid);
            }
        }
    }
    found
}

/// Generates one `#[test]` per attack and mode: `namespaces::<attack>` and
/// `fallback::<attack>` (landlock+seccomp forced), each calling `super::<attack>(mode)`.
#[macro_export]
macro_rules! in_both_modes {
    ($($attack:ident),* $(,)?) => {
        mod namespaces {
            $(
                #[test]
                fn $attack() {
                    if let Some(m) = $crate::support::require(airlock_sandbox::Mode::Namespaces) {
                        super::$attack(m);
                    }
                }
            )*
        }
        mod fallback {
            $(
                #[test]
                fn $attack() {
                    if let Some(m) = $crate::support::require(airlock_sandbox::Mode::LandlockSeccomp) {
                        super::$attack(m);
                    }
                }
            )*
        }
    };
}

/// A stand-in for an API endpoint on the host's loopback: answers every chunk it reads with
/// the chunk uppercased, and counts the connections it accepted.
pub struct Endpoint {
    pub addr: std::net::SocketAddr,
    accepted: std::sync::Arc<AtomicU64>,
}

impl Endpoint {
    pub fn start() -> Endpoint {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = std::sync::Arc::new(AtomicU64::new(0));
        let count = std::sync::Arc::clone(&accepted);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                count.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = conn.read(&mut buf) {
                        if n == 0 || conn.write_all(&buf[..n].to_ascii_uppercase()).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Endpoint { addr, accepted }
    }

    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// Python run as the generator: `connect(dest)` sends `CONNECT dest` to the proxy named by
/// `HTTPS_PROXY` and returns `(socket, status)`.
pub const PY_CONNECT: &str = r#"
import os, socket, sys, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
def connect(dest):
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=20)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (dest, dest)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            break
        head += c
    status = head.split(b" ")[1].decode() if head.count(b" ") else "EOF"
    return s, status
"#;
