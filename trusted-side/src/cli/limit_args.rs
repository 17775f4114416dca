//! The job's limits as flags (`pack` and `submit` share them), with their conversion into
//! the limits recorded in the signed request.

use clap::Args;

// The job's limits, recorded in the signed request; the worker and the gate enforce them.
// (A plain comment: see `Command`.)
#[derive(Debug, Args, Clone)]
pub struct LimitArgs {
    /// Wall-clock seconds the generator may run before its whole process tree is killed.
    #[arg(long, default_value_t = 900, value_name = "SECS")]
    pub wall_clock_secs: u64,
    /// Seconds between checkpoints while the generator runs.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub checkpoint_secs: u64,
    /// Files the diff may change.
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub max_changed_files: u64,
    /// Lines the diff may add plus remove.
    #[arg(long, default_value_t = 20_000, value_name = "N")]
    pub max_changed_lines: u64,
    /// Bytes of the compressed artifact.
    #[arg(long, default_value_t = 16 * 1024 * 1024, value_name = "BYTES")]
    pub max_artifact_bytes: u64,
    /// Bytes of generator output kept in generator.log.
    #[arg(long, default_value_t = 1024 * 1024, value_name = "BYTES")]
    pub max_log_bytes: u64,
    /// Tokens (in + out) the generator may report using.
    #[arg(long, default_value_t = 2_000_000, value_name = "N")]
    pub max_tokens: u64,
    /// Bytes the generator may write under its workdir and private tmp; past it (or on a full
    /// disk) the worker stops it and drops a partial artifact saying `disk`.
    #[arg(long, default_value_t = airlock_core::limits::DEFAULT_MAX_DISK_BYTES, value_name = "BYTES")]
    pub max_disk_bytes: u64,
    /// Bytes of memory the generator's processes may hold together; the worker enforces it
    /// with a memory cgroup where it can make one, and says `memory` when it was hit.
    #[arg(long, default_value_t = airlock_core::limits::DEFAULT_MAX_MEMORY_BYTES, value_name = "BYTES")]
    pub max_memory_bytes: u64,
}

impl From<LimitArgs> for airlock_core::limits::JobLimits {
    /// The limits as recorded in the request.
    fn from(a: LimitArgs) -> Self {
        Self {
            wall_clock_secs: a.wall_clock_secs,
            checkpoint_every_secs: a.checkpoint_secs,
            max_changed_files: a.max_changed_files,
            max_changed_lines: a.max_changed_lines,
            max_artifact_bytes: a.max_artifact_bytes,
            max_log_bytes: a.max_log_bytes,
            max_tokens: a.max_tokens,
            allow_binary: false,
            max_disk_bytes: a.max_disk_bytes,
            max_memory_bytes: a.max_memory_bytes,
        }
    }
}
