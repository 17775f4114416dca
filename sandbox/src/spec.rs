//! What to run and how to confine it: the [`SandboxSpec`] the worker hands to [`spawn`](crate::spawn).
//!
//! Guards against: invalid combinations reaching a fork: relative paths, NUL bytes in
//! anything that becomes a C string, malformed or duplicate environment names, a writable
//! root at `/`, a zero limit, a secret path (the job token, the worker binary) lying under a
//! readable or writable root, and root as the sandbox identity.
//! On `Ok` from [`SandboxSpec::validate`]: every path is absolute, every string converts to a
//! C string, and no secret path is reachable through a rule the sandbox will grant.
//! Does not check: that the paths exist or that the kernel can enforce anything; the helper
//! process checks that when it applies each layer, and fails closed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::SandboxError;

/// Directories and device files the generator may read (and execute from) by default.
///
/// The system, not the user: no home directory, no `/root`, no `/tmp`, no `/var`, no `/run`.
/// `/proc` is the fresh one of the sandbox's own pid namespace in namespace mode; in the
/// landlock+seccomp fallback it is the host's (landlock still forbids reading another
/// process's environment or memory; see the crate docs).
pub const DEFAULT_READABLE: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/dev/urandom",
    "/dev/random",
    "/dev/full",
];

/// Smallest memory ceiling a spec may ask for ([`SandboxSpec::memory_bytes`]).
pub const MIN_MEMORY_BYTES: u64 = 16 << 20;

/// Device files the generator may read and write: sinks and sources of nothing.
pub const READ_WRITE_DEVICES: &[&str] = &["/dev/null", "/dev/zero"];

/// The uid/gid the generator runs as when the worker itself runs as root (`nobody:nogroup`).
///
/// Root is exempt from `RLIMIT_NPROC` in the kernel (and owns most files), so a root worker
/// hands the workdir and private tmp to this identity and drops to it.
pub const DEFAULT_UNPRIVILEGED_ID: u32 = 65534;

/// Everything the helper needs to confine and start one generator. Serialised as JSON on the
/// helper's stdin (never on its command line, which any local user can read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSpec {
    /// The generator executable. A name without `/` is looked up in the spec's own `PATH`
    /// (or a fixed system `PATH`); the file found is made readable and executable inside.
    pub program: PathBuf,
    /// Arguments after `argv[0]` (which is `program` as given).
    pub args: Vec<OsString>,
    /// The generator's working directory; readable and writable inside.
    pub workdir: PathBuf,
    /// A private scratch directory; readable and writable inside. Point `TMPDIR` at it.
    pub private_tmp: PathBuf,
    /// The complete environment of the generator, already filtered to the allowlist.
    /// Nothing else is inherited.
    pub env: Vec<(String, String)>,
    /// Paths the generator may read and execute from (directories cover their subtree).
    /// Missing paths are skipped. Default: [`DEFAULT_READABLE`].
    pub readable: Vec<PathBuf>,
    /// Paths that must stay out of reach (the job token file, the worker's own binary, its
    /// home). `validate` refuses a spec in which any of them lies under a granted root.
    pub secret_paths: Vec<PathBuf>,
    /// Resource limits applied to the generator and everything it starts.
    pub rlimits: Rlimits,
    /// Network policy.
    pub network: Network,
    /// Which sandbox to build; see [`Mode`].
    pub mode: Mode,
    /// Accept a landlock ruleset the kernel enforces only in part (an older kernel). Off by
    /// default: a partially enforced ruleset is `SandboxError::Unavailable`. When on, the
    /// outcome's `degraded` says what was missing.
    pub allow_partial_landlock: bool,
    /// Identity (uid, gid) the generator runs as when the worker runs as root. Must not be 0.
    pub unprivileged_id: (u32, u32),
    /// Bytes of memory the generator's processes may hold together (a memory cgroup; at
    /// least 16 MiB). `None`: no ceiling beyond each process's `RLIMIT_AS`.
    #[serde(default)]
    pub memory_bytes: Option<u64>,
}

/// Resource limits (`setrlimit`). `None` leaves the inherited limit in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rlimits {
    /// CPU seconds (`RLIMIT_CPU`): `SIGXCPU` at the limit, `SIGKILL` one second later.
    pub cpu_secs: Option<u64>,
    /// Address space in bytes (`RLIMIT_AS`): allocations beyond it fail.
    pub address_space_bytes: Option<u64>,
    /// Largest file the generator may write, in bytes (`RLIMIT_FSIZE`): `SIGXFSZ` beyond it.
    pub file_size_bytes: Option<u64>,
    /// Open file descriptors per process (`RLIMIT_NOFILE`).
    pub open_files: Option<u64>,
    /// Processes (`RLIMIT_NPROC`): in namespace mode, processes of the sandbox, the
    /// generator included; in the landlock+seccomp fallback, all processes of the sandbox's
    /// uid on the host (the kernel counts per user).
    pub processes: Option<u64>,
}

impl Default for Rlimits {
    /// One CPU hour, 16 GiB of address space, 1 GiB files, 1024 descriptors, 512 processes.
    fn default() -> Self {
        Rlimits {
            cpu_secs: Some(3600),
            address_space_bytes: Some(16 << 30),
            file_size_bytes: Some(1 << 30),
            open_files: Some(1024),
            processes: Some(512),
        }
    }
}

/// Network policy of the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Network {
    /// No network at all: an empty network namespace (namespace mode), no socket other than
    /// an `AF_UNIX` `socketpair` (seccomp), no TCP bind or connect (landlock).
    Deny,
    /// Egress through an [`EgressProxy`](crate::EgressProxy) only; start the sandbox with
    /// [`spawn_with_egress`](crate::spawn_with_egress). Namespace mode: the network
    /// namespace's loopback comes up with one listener, `127.0.0.1:`[`EGRESS_PROXY_PORT`],
    /// whose connections the proxy (outside the sandbox) accepts; seccomp allows TCP stream
    /// sockets and nothing else (no UDP, so no DNS); landlock allows a TCP connect to that
    /// port only and no bind. The generator's environment gets `HTTPS_PROXY`, `HTTP_PROXY`,
    /// `https_proxy` and `http_proxy` = `http://127.0.0.1:<port>` (overriding the spec's,
    /// and `NO_PROXY`/`no_proxy` removed).
    ///
    /// Refused in the landlock+seccomp fallback (and `Mode::Auto` does not fall back with
    /// it): without a network namespace the generator shares the host's network, landlock's
    /// TCP rules name a port but no address, and seccomp cannot read `connect()`'s address,
    /// so "only the proxy" cannot be enforced: any host listening on the proxy's port
    /// would be reachable. In `Mode::Unsandboxed` the listener is on the host's loopback
    /// (ephemeral port) and nothing is enforced.
    Egress,
}

/// The proxy's port on the sandbox's own loopback (namespace mode; the network namespace
/// is empty, so the port is always free).
pub const EGRESS_PROXY_PORT: u16 = 3128;

/// Which sandbox to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Namespaces + landlock + seccomp when user namespaces work, else landlock + seccomp,
    /// else `SandboxError::Unavailable`.
    Auto,
    /// Namespaces + landlock + seccomp, or `SandboxError::Unavailable`.
    Namespaces,
    /// Landlock + seccomp only (the fallback, forced), or `SandboxError::Unavailable`.
    LandlockSeccomp,
    /// No confinement at all: only the runner (process group, cleared environment, rlimits,
    /// capped log, wall clock). For `--unsafe-no-sandbox`; the packet must say `none`.
    Unsandboxed,
}

impl FromStr for Mode {
    type Err = SandboxError;

    /// Parses `auto`, `namespaces` (or `namespaces+landlock+seccomp`), `landlock+seccomp`
    /// and `none` (or `unsandboxed`), e.g. from a test-only environment variable.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Mode::Auto),
            "namespaces" | "namespaces+landlock+seccomp" => Ok(Mode::Namespaces),
            "landlock+seccomp" | "landlock-seccomp" => Ok(Mode::LandlockSeccomp),
            "none" | "unsandboxed" => Ok(Mode::Unsandboxed),
            other => Err(SandboxError::Spec {
                field: "mode".into(),
                rule: "sandbox.spec.mode",
                reason: format!(
                    "unknown mode {other:?}: expected auto, namespaces, landlock+seccomp or none"
                ),
            }),
        }
    }
}

/// Where the generator's stdout and stderr go: one file, capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSink {
    /// The log file. Created new (mode 0600); an existing file is an error. Keep it outside
    /// the workdir.
    pub path: PathBuf,
    /// Bytes kept. Past the cap the output is still drained (the generator never blocks on a
    /// full pipe) but dropped, and the outcome says `log_truncated`.
    pub max_bytes: u64,
}

impl SandboxSpec {
    /// A spec with the defaults: no arguments, empty environment, [`DEFAULT_READABLE`],
    /// default [`Rlimits`], network denied, [`Mode::Auto`], full landlock required,
    /// `nobody:nogroup` when root.
    pub fn new(
        program: impl Into<PathBuf>,
        workdir: impl Into<PathBuf>,
        private_tmp: impl Into<PathBuf>,
    ) -> Self {
        SandboxSpec {
            program: program.into(),
            args: Vec::new(),
            workdir: workdir.into(),
            private_tmp: private_tmp.into(),
            env: Vec::new(),
            readable: DEFAULT_READABLE.iter().map(PathBuf::from).collect(),
            secret_paths: Vec::new(),
            rlimits: Rlimits::default(),
            network: Network::Deny,
            mode: Mode::Auto,
            allow_partial_landlock: false,
            unprivileged_id: (DEFAULT_UNPRIVILEGED_ID, DEFAULT_UNPRIVILEGED_ID),
            memory_bytes: None,
        }
    }

    /// Refuses invalid combinations before anything is forked (see the module header).
    pub fn validate(&self) -> Result<(), SandboxError> {
        if self.program.as_os_str().is_empty() {
            return Err(spec_err("program", "sandbox.spec.program", "empty"));
        }
        no_nul("program", self.program.as_os_str().as_encoded_bytes())?;
        for (i, a) in self.args.iter().enumerate() {
            no_nul(&format!("args[{i}]"), a.as_encoded_bytes())?;
        }
        absolute("workdir", &self.workdir)?;
        absolute("private_tmp", &self.private_tmp)?;
        if self.memory_bytes.is_some_and(|b| b < MIN_MEMORY_BYTES) {
            return Err(spec_err(
                "memory_bytes",
                "sandbox.spec.memory",
                "a memory ceiling under 16 MiB leaves nothing room to start",
            ));
        }
        for (field, p) in [
            ("workdir", &self.workdir),
            ("private_tmp", &self.private_tmp),
        ] {
            if lexical(p) == Path::new("/") {
                return Err(spec_err(
                    field,
                    "sandbox.spec.writable-root",
                    "the filesystem root cannot be writable",
                ));
            }
        }
        for (i, p) in self.readable.iter().enumerate() {
            absolute(&format!("readable[{i}]"), p)?;
        }
        for (i, p) in self.secret_paths.iter().enumerate() {
            absolute(&format!("secret_paths[{i}]"), p)?;
        }
        let mut names: Vec<&str> = Vec::with_capacity(self.env.len());
        for (name, value) in &self.env {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(spec_err(
                    &format!("env {name:?}"),
                    "sandbox.spec.env-name",
                    "an environment name must be non-empty and contain no '=' or NUL",
                ));
            }
            // The value is never echoed: it may be an API key.
            if value.contains('\0') {
                return Err(spec_err(
                    &format!("env {name}"),
                    "sandbox.spec.nul-byte",
                    "value contains a NUL byte",
                ));
            }
            if names.contains(&name.as_str()) {
                return Err(spec_err(
                    &format!("env {name}"),
                    "sandbox.spec.env-duplicate",
                    "set twice",
                ));
            }
            names.push(name);
        }
        let r = &self.rlimits;
        for (field, v) in [
            ("rlimits.cpu_secs", r.cpu_secs),
            ("rlimits.address_space_bytes", r.address_space_bytes),
            ("rlimits.file_size_bytes", r.file_size_bytes),
            ("rlimits.open_files", r.open_files),
            ("rlimits.processes", r.processes),
        ] {
            if v == Some(0) {
                return Err(spec_err(
                    field,
                    "sandbox.spec.rlimit-zero",
                    "a limit of 0 leaves nothing to run",
                ));
            }
        }
        if self.unprivileged_id.0 == 0 || self.unprivileged_id.1 == 0 {
            return Err(spec_err(
                "unprivileged_id",
                "sandbox.spec.run-as-root",
                "the sandbox identity must not be root",
            ));
        }
        self.check_secrets_unreachable()
    }

    /// `sandbox.spec.secret-reachable`: no secret path may lie under (or be) a root the
    /// sandbox grants, compared after resolving symlinks where the path exists.
    fn check_secrets_unreachable(&self) -> Result<(), SandboxError> {
        if self.mode == Mode::Unsandboxed || self.secret_paths.is_empty() {
            // Nothing is confined (the caller asked for exactly that), or nothing to keep out.
            return Ok(());
        }
        let mut granted: Vec<(String, PathBuf)> = vec![
            ("workdir".into(), resolved(&self.workdir)),
            ("private_tmp".into(), resolved(&self.private_tmp)),
        ];
        for (i, p) in self.readable.iter().enumerate() {
            granted.push((format!("readable[{i}]"), resolved(p)));
        }
        if self.program.is_absolute() {
            granted.push(("program".into(), resolved(&self.program)));
        }
        for (i, secret) in self.secret_paths.iter().enumerate() {
            let secret = resolved(secret);
            for (field, root) in &granted {
                if secret.starts_with(root) {
                    return Err(spec_err(
                        &format!("secret_paths[{i}] {}", secret.display()),
                        "sandbox.spec.secret-reachable",
                        &format!("lies under {field} {}", root.display()),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `PATH` used to find a bare program name when the spec's environment has none.
pub(crate) const DEFAULT_PATH: &str =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

impl SandboxSpec {
    /// The generator's `PATH`: the spec's own, else [`DEFAULT_PATH`].
    pub(crate) fn path_var(&self) -> &str {
        self.env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map_or(DEFAULT_PATH, |(_, v)| v.as_str())
    }

    /// `name` looked up in the generator's `PATH` (absolute entries only): the first
    /// executable regular file.
    pub(crate) fn lookup(&self, name: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        self.path_var()
            .split(':')
            .filter(|d| d.starts_with('/'))
            .map(|d| Path::new(d).join(name))
            .find(|c| {
                std::fs::metadata(c)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    }

    /// The file to exec: a program with `/` as given (relative to the workdir), a bare name
    /// looked up in the generator's `PATH`.
    pub(crate) fn resolve_program(&self) -> Option<PathBuf> {
        let p = &self.program;
        if p.as_os_str().as_encoded_bytes().contains(&b'/') {
            return Some(self.workdir.join(p));
        }
        self.lookup(&p.to_string_lossy())
    }
}

fn spec_err(field: &str, rule: &'static str, reason: &str) -> SandboxError {
    SandboxError::Spec {
        field: field.to_owned(),
        rule,
        reason: reason.to_owned(),
    }
}

fn absolute(field: &str, p: &Path) -> Result<(), SandboxError> {
    if !p.is_absolute() {
        return Err(spec_err(
            &format!("{field} {}", p.display()),
            "sandbox.spec.relative-path",
            "must be absolute",
        ));
    }
    no_nul(field, p.as_os_str().as_encoded_bytes())
}

fn no_nul(field: &str, bytes: &[u8]) -> Result<(), SandboxError> {
    if bytes.contains(&0) {
        return Err(spec_err(
            field,
            "sandbox.spec.nul-byte",
            "contains a NUL byte",
        ));
    }
    Ok(())
}

/// `p` without `.` components and with `..` applied lexically (for comparisons only).
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The canonical path where it exists, else the lexical one.
fn resolved(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| lexical(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> SandboxSpec {
        SandboxSpec::new("/bin/sh", "/nonexistent/run/work", "/nonexistent/run/tmp")
    }

    fn rule(e: SandboxError) -> &'static str {
        match e {
            SandboxError::Spec { rule, .. } => rule,
            other => panic!("not a spec error: {other}"),
        }
    }

    #[test]
    fn accepts_the_defaults() {
        spec().validate().unwrap();
    }

    #[test]
    fn rejects_relative_workdir() {
        let mut s = spec();
        s.workdir = "work".into();
        assert_eq!(
            rule(s.validate().unwrap_err()),
            "sandbox.spec.relative-path"
        );
    }

    #[test]
    fn rejects_root_as_writable_dir() {
        let mut s = spec();
        s.private_tmp = "/tmp/..".into();
        assert_eq!(
            rule(s.validate().unwrap_err()),
            "sandbox.spec.writable-root"
        );
    }

    #[test]
    fn rejects_token_under_a_readable_root() {
        let mut s = spec();
        s.secret_paths = vec!["/etc/airlock/../airlock/token".into()];
        assert_eq!(
            rule(s.validate().unwrap_err()),
            "sandbox.spec.secret-reachable"
        );
    }

    #[test]
    fn rejects_token_inside_the_workdir() {
        let mut s = spec();
        s.secret_paths = vec!["/nonexistent/run/work/.token".into()];
        assert_eq!(
            rule(s.validate().unwrap_err()),
            "sandbox.spec.secret-reachable"
        );
    }

    #[test]
    fn accepts_token_beside_the_workdir() {
        let mut s = spec();
        s.secret_paths = vec!["/nonexistent/run/token".into()];
        s.validate().unwrap();
    }

    #[test]
    fn rejects_env_name_with_equals_without_echoing_the_value() {
        let mut s = spec();
        s.env = vec![("A=B".into(), "sk-secret".into())];
        let e = s.validate().unwrap_err();
        assert!(!e.to_string().contains("sk-secret"), "{e}");
        assert_eq!(rule(e), "sandbox.spec.env-name");
    }

    #[test]
    fn rejects_duplicate_env_name() {
        let mut s = spec();
        s.env = vec![("A".into(), "1".into()), ("A".into(), "2".into())];
        assert_eq!(
            rule(s.validate().unwrap_err()),
            "sandbox.spec.env-duplicate"
        );
    }

    #[test]
    fn rejects_nul_in_argument() {
        let mut s = spec();
        s.args = vec![OsString::from("a\0b")];
        assert_eq!(rule(s.validate().unwrap_err()), "sandbox.spec.nul-byte");
    }

    #[test]
    fn rejects_zero_limit_and_root_identity() {
        let mut s = spec();
        s.rlimits.processes = Some(0);
        assert_eq!(rule(s.validate().unwrap_err()), "sandbox.spec.rlimit-zero");
        let mut s = spec();
        s.unprivileged_id = (0, 65534);
        assert_eq!(rule(s.validate().unwrap_err()), "sandbox.spec.run-as-root");
    }

    #[test]
    fn mode_parses_the_packet_names() {
        assert_eq!(
            "landlock+seccomp".parse::<Mode>().unwrap(),
            Mode::LandlockSeccomp
        );
        assert_eq!("none".parse::<Mode>().unwrap(), Mode::Unsandboxed);
        assert_eq!(
            "namespaces+landlock+seccomp".parse::<Mode>().unwrap(),
            Mode::Namespaces
        );
        assert!("off".parse::<Mode>().is_err());
    }

    #[test]
    fn spec_round_trips_through_json_and_refuses_unknown_fields() {
        let mut s = spec();
        s.args = vec!["-c".into(), "echo hi".into()];
        s.env = vec![("PATH".into(), "/usr/bin".into())];
        let json = serde_json::to_string(&s).unwrap();
        let back: SandboxSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v["extra"] = serde_json::Value::Bool(true);
        assert!(serde_json::from_value::<SandboxSpec>(v).is_err());
    }
}
