//! What `run` and `watch` are told: the options the binary's command line fills in
//! (`cli.rs`), so that the library does not depend on the CLI. The meaning of each field is
//! its flag's `--help`.

use std::path::PathBuf;

/// Options shared by `run` and `watch`.
#[derive(Debug, Clone, Default)]
pub struct JobOptions {
    /// The pinned trusted public key (SPKI PEM file).
    pub trusted_pub: PathBuf,
    /// Base directory for per-run directories; `None`: the default.
    pub work_root: Option<PathBuf>,
    /// Variables of the worker's environment passed to the generator.
    pub pass_env: Vec<String>,
    /// Directories made readable and executable inside the sandbox.
    pub readable: Vec<PathBuf>,
    /// Directory copied into the generator's new HOME.
    pub home_template: Option<PathBuf>,
    /// Local model servers (`HOST:PORT`) the generator may reach.
    pub allow_local: Vec<String>,
    /// Run the generator unconfined when no sandbox can be had.
    pub unsafe_no_sandbox: bool,
    /// The generator command and its arguments.
    pub generator: Vec<String>,
}

/// Options of one `run`.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The job token, given on the command line.
    pub token: Option<String>,
    /// File holding the job token.
    pub token_file: Option<PathBuf>,
    /// The job's options.
    pub job: JobOptions,
}

/// Options of `watch`.
#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    /// Directory whose `tickets/` subdirectory receives token files.
    pub dir: PathBuf,
    /// Stop after this many tickets; `None`: run forever.
    pub max_jobs: Option<u64>,
    /// The options of every job.
    pub job: JobOptions,
}

/// Options of `serve`.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The signed enrolment (`airlock fleet enroll --out`).
    pub enrollment: PathBuf,
    /// The directory of `keygen --out` (the worker's key pair; serve keeps its state there).
    pub key_dir: PathBuf,
    /// Labels the heartbeat claims (agents installed, hardware).
    pub labels: Vec<String>,
    /// Stop after this many jobs; `None`: until revoked or terminated.
    pub max_jobs: Option<u64>,
    /// The options of every job.
    pub job: JobOptions,
}
