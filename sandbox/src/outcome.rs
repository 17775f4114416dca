//! What happened to a generator run: exit status, which sandbox actually ran, limits hit.

use serde::Serialize;

/// The sandbox that actually confined the generator, as the packet names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SandboxKind {
    /// User, mount, pid, ipc, uts and network namespaces, plus landlock and seccomp.
    #[serde(rename = "namespaces+landlock+seccomp")]
    Namespaces,
    /// Landlock and seccomp without namespaces (user namespaces unavailable, or forced).
    #[serde(rename = "landlock+seccomp")]
    LandlockSeccomp,
    /// Nothing (`--unsafe-no-sandbox`).
    #[serde(rename = "none")]
    None,
}

impl SandboxKind {
    /// The name used in the packet: `namespaces+landlock+seccomp`, `landlock+seccomp`, `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxKind::Namespaces => "namespaces+landlock+seccomp",
            SandboxKind::LandlockSeccomp => "landlock+seccomp",
            SandboxKind::None => "none",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Self> {
        [
            SandboxKind::Namespaces,
            SandboxKind::LandlockSeccomp,
            SandboxKind::None,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for SandboxKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the generator ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitStatus {
    /// It exited with this code.
    Exited(i32),
    /// It was killed by this signal.
    Signaled(i32),
    /// The wall-clock deadline passed; the whole process tree was killed.
    TimedOut,
}

impl ExitStatus {
    /// `true` for `Exited(0)` only.
    pub fn success(self) -> bool {
        self == ExitStatus::Exited(0)
    }
}

/// A limit the generator ran into, when it can be told from the outside.
///
/// Only limits the kernel signals are detectable: a process that fails to fork or allocate
/// under `processes` / `address_space_bytes` just sees an error and exits as it likes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitHit {
    /// Killed by `SIGXCPU` (`RLIMIT_CPU`).
    CpuSecs,
    /// Killed by `SIGXFSZ` (`RLIMIT_FSIZE`).
    FileSize,
    /// The wall-clock deadline passed.
    WallClock,
}

impl LimitHit {
    /// The packet name: `cpu-secs`, `file-size`, `wall-clock`.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitHit::CpuSecs => "cpu-secs",
            LimitHit::FileSize => "file-size",
            LimitHit::WallClock => "wall-clock",
        }
    }
}

/// The result of one generator run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// How the generator ended.
    pub status: ExitStatus,
    /// The sandbox that actually ran.
    pub sandbox: SandboxKind,
    /// Why `Mode::Auto` fell back to landlock+seccomp, if it did.
    pub fallback_reason: Option<String>,
    /// What the kernel did not enforce, when the spec allowed a partial landlock ruleset.
    pub degraded: Option<String>,
    /// The log hit `max_bytes`; later output was drained and dropped.
    pub log_truncated: bool,
    /// Bytes kept in the log.
    pub log_bytes: u64,
    /// The limit that ended the run, when detectable.
    pub limit_hit: Option<LimitHit>,
    /// Wall time from spawn to the end of the run, in milliseconds.
    pub elapsed_ms: u64,
    /// Whether the spec's memory ceiling held the sandbox's processes together.
    pub memory: MemoryCeiling,
}

/// The memory ceiling of the sandbox's processes together ([`SandboxSpec::memory_bytes`]).
///
/// [`SandboxSpec::memory_bytes`]: crate::SandboxSpec::memory_bytes
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "state")]
pub enum MemoryCeiling {
    /// The spec asked for none.
    NotAsked,
    /// A memory cgroup held the sandbox; the kernel's OOM killer killed `oom_kills`
    /// processes in it (more than 0: the ceiling was hit).
    Enforced {
        /// The ceiling, in bytes.
        bytes: u64,
        /// Processes killed for want of memory.
        oom_kills: u64,
    },
    /// No memory cgroup could be made here (the reason); only `RLIMIT_AS` held each process.
    Unenforced {
        /// Why not.
        reason: String,
    },
}

impl MemoryCeiling {
    /// `true` when the kernel killed a process of the sandbox at the ceiling.
    pub fn hit(&self) -> bool {
        matches!(self, MemoryCeiling::Enforced { oom_kills, .. } if *oom_kills > 0)
    }
}
