//! The fleet: enrolled, disposable workers that get jobs through the store alone.
//!
//! The trusted side keeps the fleet's books in `<home>/fleet/` (never in the store):
//! `workers/<name>.json` (written once by `fleet enroll`), `workers/<name>.revoked` (by
//! `fleet revoke`), `queue/<job>.json` + `queue/<job>.token` (0600, by `submit --fleet`) and
//! `state.json` (0600, owned by `airlock watch`: tickets out, heartbeats seen, renewals,
//! counts, superseded jobs). Workers reach only `fleet/<name>/` in the store, through the
//! presigned URLs of their enrolment.
//!
//! Modules: [`enroll`] (enrol, renew, revoke), [`dispatch`] (what `watch` does each tick),
//! [`status`] (`fleet status`), [`state`] (the books).
//!
//! Guards against: a worker holding more than its own prefix (its enrolment is URLs for its
//! own mailbox slots and heartbeat, nothing else), a ticket readable by anyone but its worker
//! (sealed to its key, `airlock_core::seal`), a heartbeat widening what a worker gets (it is
//! read with a cap, held to its shape, and only ever narrows dispatch: a worker never holds
//! more than [`airlock_core::format::fleet::MAILBOX_SLOTS`] tickets whatever it claims), and a
//! job dispatched away from a lost worker landing twice (the old job is superseded: anything
//! it drops later is refused, `fleet-superseded`).

pub mod dispatch;
pub mod enroll;
pub mod resume;
pub mod state;
pub mod status;
pub mod superseded;

use std::path::{Path, PathBuf};

use airlock_core::format::fleet::WorkerName;
use airlock_core::jobid::JobId;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// Most re-dispatches of one job (a lost or failing worker each) before it goes to a human.
pub const MAX_REDISPATCH: u32 = 3;

/// The fleet's directory in the trusted home.
pub fn dir(home: &Path) -> PathBuf {
    home.join("fleet")
}

/// What `fleet enroll` recorded about a worker (written once).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerRecord {
    /// The worker.
    pub name: WorkerName,
    /// Its `age1…` recipient.
    pub recipient: String,
    /// Unix seconds.
    pub enrolled_at: u64,
    /// Lifetime of each enrolment's URLs, seconds.
    pub ttl_secs: u64,
    /// Heartbeat interval asked of the worker, seconds.
    pub heartbeat_secs: u64,
}

impl WorkerRecord {
    /// A worker is lost when its last heartbeat is older than this (seconds).
    pub fn lost_after(&self) -> u64 {
        4 * self.heartbeat_secs + 2
    }
}

/// A job waiting for a fleet worker (`submit --fleet`, or a re-dispatch).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Queued {
    /// The job.
    pub job: JobId,
    /// The label a worker must claim, if any.
    pub label: Option<String>,
    /// Unix seconds.
    pub queued_at: u64,
    /// Re-dispatches so far (0 for a first dispatch).
    pub redispatches: u32,
    /// The jobs this one dispatches again, oldest first.
    pub chain: Vec<JobId>,
    /// The job whose gated checkpoint this one resumes from (its token carries `resume`):
    /// only a worker that reads `airlock.token.resume/v1` gets it.
    #[serde(default)]
    pub resumes: Option<JobId>,
}

/// Writes `bytes` to `path` atomically (temp + rename), mode 0600.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().context("no parent directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("f")
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("{}: cannot create", tmp.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(())
}

/// Reads a small JSON file of the fleet's books.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("{}: malformed", path.display()))
}

/// Every enrolled worker, by name (with whether it is revoked).
pub fn workers(home: &Path) -> Result<Vec<(WorkerRecord, bool)>> {
    let dir = dir(home).join("workers");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        let rec: WorkerRecord = read_json(&e.path())?;
        let revoked = dir.join(format!("{stem}.revoked")).exists();
        out.push((rec, revoked));
    }
    out.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    Ok(out)
}

/// Puts a submitted job in the fleet's queue: its token (0600) and what dispatch needs.
pub fn enqueue(home: &Path, queued: &Queued, token: &str) -> Result<()> {
    let q = dir(home).join("queue");
    write_private(&q.join(format!("{}.token", queued.job)), token.as_bytes())?;
    write_private(
        &q.join(format!("{}.json", queued.job)),
        &serde_json::to_vec(queued)?,
    )
}

/// Takes a job out of the queue (it landed, or was re-dispatched under a new job).
pub(crate) fn forget_queued(home: &Path, job: &JobId) {
    let q = dir(home).join("queue");
    let _ = std::fs::remove_file(q.join(format!("{job}.json")));
    let _ = std::fs::remove_file(q.join(format!("{job}.token")));
}

/// The label of `submit --fleet --label L`: what a worker's heartbeat label must equal.
pub fn check_label(label: &str) -> Result<()> {
    let ok = !label.is_empty()
        && label.len() <= 64
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if !ok {
        anyhow::bail!("--label {label:?}: 1 to 64 of [A-Za-z0-9._-] (fleet.label)");
    }
    Ok(())
}

/// What `airlock fleet` is asked to do.
#[derive(Debug, Clone)]
pub enum FleetOptions {
    /// Enrol a worker.
    Enroll(enroll::EnrollOptions),
    /// Revoke a worker.
    Revoke {
        /// The worker.
        name: String,
    },
    /// Each worker's state.
    Status {
        /// Print JSON.
        json: bool,
    },
}

/// `airlock fleet …`.
pub fn run(
    global: &crate::config::GlobalOptions,
    opts: &FleetOptions,
) -> Result<crate::exit::Outcome> {
    match opts {
        FleetOptions::Enroll(o) => enroll::run(global, o),
        FleetOptions::Revoke { name } => enroll::revoke(global, name),
        FleetOptions::Status { json } => status::run(global, *json),
    }
}

/// `airlock submit --fleet [--label L]`: submits as usual, then queues the job for the fleet
/// instead of handing its token out; `airlock watch` seals it to a worker.
pub fn submit(
    global: &crate::config::GlobalOptions,
    args: &crate::submit::SubmitOptions,
) -> Result<crate::exit::Outcome> {
    let label = args.label.clone();
    if let Some(l) = &label {
        check_label(l)?;
    }
    if args.token_out.is_some() || args.print_token {
        anyhow::bail!("--fleet keeps the token on this host for `airlock watch` to seal to a worker: drop --token-out/--print-token (submit.token-destination)");
    }
    let home = crate::config::Home::load(&global.home)?;
    let key = home.signing_key()?;
    let store = home.open_store()?;
    let out = crate::submit::submit_job_cached(
        &store,
        &key,
        args,
        home.config.model_key.as_ref(),
        global.quiet || args.json,
        crate::pack::cache::dir(&home.dir),
        Some(&home.dir),
    )?;
    let job = JobId::parse(&out.job)?;
    enqueue(
        &home.dir,
        &Queued {
            job,
            label,
            queued_at: airlock_core::clock::now_unix(),
            redispatches: 0,
            chain: Vec::new(),
            resumes: None,
        },
        &out.token,
    )?;
    if args.json {
        let mut v = serde_json::to_value(&out)?;
        if let Some(m) = v.as_object_mut() {
            m.insert("fleet".into(), "queued".into());
        }
        crate::output::print_json(&v)?;
    } else {
        println!("job {}", out.job);
        println!("  bundle   sha256:{}", out.bundle_sha256);
        println!("  fleet    queued: `airlock watch` seals its token to an idle worker");
    }
    Ok(crate::exit::Outcome::Ok)
}
