//! Command-line surface of `airlock-worker`.

use std::path::PathBuf;

use airlock_worker::options::{JobOptions, RunOptions, ServeOptions, WatchOptions};
use clap::{Args, Parser, Subcommand};

/// airlock-worker: run one airlock job on an untrusted machine.
///
/// Holds only a job token. Verifies the token and the bundle against the pinned trusted
/// public key, runs GENERATOR ARGS... in a sandbox (egress denied) with `{prompt_file}` and
/// `{workdir}` substituted, and drops one signed artifact (diff + packet).
///
/// Exit codes: 0 artifact dropped (the generator exited 0 and changed something), 1 error or
/// refusal before the generator ran (nothing dropped), 2 usage, 3 the generator failed
/// (exited non-zero, killed by a signal or at the wall clock; a partial artifact was
/// dropped), 4 refused: the job already has a final artifact (nothing ran), 5 the generator
/// exited 0 but changed nothing (an empty artifact was dropped). On 3 and 5 the last lines of
/// generator.log are printed.
#[derive(Debug, Parser)]
#[command(name = "airlock-worker", version, about, long_about)]
pub struct Cli {
    /// More logging on stderr (-v info, -vv debug). RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one job from a token.
    Run(RunArgs),
    /// Watch DIR/tickets/ for token files and run them one at a time (local-drop mode).
    Watch(WatchArgs),
    /// Make this worker's own key pair for a fleet: DIR/worker.key (private, 0600, never
    /// leaves this machine) and DIR/worker.pub (give it to `airlock fleet enroll`).
    Keygen(KeygenArgs),
    /// Serve a fleet: heartbeat, poll this worker's mailbox, open each ticket with the key
    /// and run its job as `run` does, one at a time. SIGTERM: a last checkpoint, then exit.
    /// Exits 0 when revoked. See docs/FLEET.md.
    Serve(ServeArgs),
}

/// `airlock-worker keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Directory for worker.key and worker.pub (created 0700; existing keys are never
    /// overwritten).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// `airlock-worker serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The signed enrolment from `airlock fleet enroll --out FILE`.
    #[arg(long, value_name = "FILE")]
    pub enrollment: PathBuf,
    /// The key directory of `airlock-worker keygen --out DIR`.
    #[arg(long = "key", value_name = "DIR")]
    pub key_dir: PathBuf,
    /// A label the heartbeat claims (repeatable), e.g. the agents installed; `submit --fleet
    /// --label L` jobs go only to workers claiming L.
    #[arg(long = "label", value_name = "L")]
    pub labels: Vec<String>,
    /// Stop after this many jobs (tests, batch use); default: until revoked or terminated.
    #[arg(long)]
    pub max_jobs: Option<u64>,
    #[command(flatten)]
    pub job: JobArgs,
}

/// Flags shared by `run` and `watch`.
#[derive(Debug, Args, Clone)]
pub struct JobArgs {
    /// The trusted public key (SPKI PEM). Pinned: never taken from the token or the bundle.
    #[arg(long, value_name = "FILE")]
    pub trusted_pub: PathBuf,
    /// Base directory for per-run directories (each 0700, removed at exit).
    /// Default: $XDG_RUNTIME_DIR/airlock-worker or /tmp/airlock-worker-<uid>.
    #[arg(long, value_name = "DIR")]
    pub work_root: Option<PathBuf>,
    /// Pass this variable of the worker's environment to the generator (repeatable).
    /// Everything else is cleared.
    #[arg(long = "pass-env", value_name = "NAME")]
    pub pass_env: Vec<String>,
    /// Make DIR readable and executable inside the sandbox (repeatable): the generator's
    /// install (a virtualenv, an npm prefix, a tool directory). DIR/bin, if any, is put on the
    /// generator's PATH. A root worker's sandbox binds DIR in at the same path (the host's
    /// modes are left alone). Refused if DIR holds the token file, the trusted key or this
    /// binary.
    #[arg(long = "readable", value_name = "DIR")]
    pub readable: Vec<PathBuf>,
    /// Copy DIR into the generator's HOME at start (agent settings such as
    /// .claude/settings.json, .codex/config.toml, .aider.conf.yml). The HOME itself is new and
    /// private for every run. Refused if DIR holds a link, the job token or the trusted key.
    #[arg(long = "home-template", value_name = "DIR")]
    pub home_template: Option<PathBuf>,
    /// Let the generator reach a model server on this host or its private network
    /// (repeatable): HOST is an IP address (loopback or RFC 1918) or `localhost`. Reached
    /// through the egress proxy (CONNECT, or plain HTTP), logged in the packet like any
    /// egress. Only this flag grants such a destination; a request never can.
    #[arg(long = "allow-local", value_name = "HOST:PORT")]
    pub allow_local: Vec<String>,
    /// Run the generator WITHOUT a sandbox when none can be had. The packet says
    /// `sandbox: none` and the default gate policy never queues such an artifact.
    #[arg(long)]
    pub unsafe_no_sandbox: bool,
    /// The generator command and its arguments. `{prompt_file}` and `{workdir}` are
    /// substituted; it runs with cwd = workdir, AIRLOCK_REPORT=<path> and
    /// AIRLOCK_COMMENTS=<path> (review comments; docs/GENERATORS.md) set.
    #[arg(last = true, required = true, value_name = "GENERATOR")]
    pub generator: Vec<String>,
}

/// `airlock-worker run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The job token (prefer --token-file or AIRLOCK_JOB_TOKEN: argv is visible to other users).
    #[arg(long, conflicts_with = "token_file")]
    pub token: Option<String>,
    /// File holding the job token.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    #[command(flatten)]
    pub job: JobArgs,
}

/// `airlock-worker watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Directory whose `tickets/` subdirectory receives token files.
    pub dir: PathBuf,
    /// Stop after this many tickets (for tests and batch use); default: run forever.
    #[arg(long)]
    pub max_jobs: Option<u64>,
    #[command(flatten)]
    pub job: JobArgs,
}

impl From<JobArgs> for JobOptions {
    fn from(a: JobArgs) -> JobOptions {
        JobOptions {
            trusted_pub: a.trusted_pub,
            work_root: a.work_root,
            pass_env: a.pass_env,
            readable: a.readable,
            home_template: a.home_template,
            allow_local: a.allow_local,
            unsafe_no_sandbox: a.unsafe_no_sandbox,
            generator: a.generator,
        }
    }
}

impl From<RunArgs> for RunOptions {
    fn from(a: RunArgs) -> RunOptions {
        RunOptions {
            token: a.token,
            token_file: a.token_file,
            job: a.job.into(),
        }
    }
}

impl From<WatchArgs> for WatchOptions {
    fn from(a: WatchArgs) -> WatchOptions {
        WatchOptions {
            dir: a.dir,
            max_jobs: a.max_jobs,
            job: a.job.into(),
        }
    }
}

impl From<ServeArgs> for ServeOptions {
    fn from(a: ServeArgs) -> ServeOptions {
        ServeOptions {
            enrollment: a.enrollment,
            key_dir: a.key_dir,
            labels: a.labels,
            max_jobs: a.max_jobs,
            job: a.job.into(),
        }
    }
}
