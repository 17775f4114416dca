//! `airlock status [JOB]`: every job's state, read from the store alone (any trusted host can
//! answer, whichever host packed the job).
//!
//! States: `packed` (record, nothing in the drop), `running` (a checkpoint landed within
//! the last [`STALL_INTERVALS`] checkpoint intervals), `stalled` (the last checkpoint is
//! older than that: the worker may have been preempted; `airlock fetch JOB --checkpoint`
//! reads what it left, `airlock resubmit JOB` dispatches the job again), `landed` (final
//! artifact present), `gated` (a gate decision is in the ledger), `expired` (token expired
//! with no artifact).

use std::collections::BTreeMap;

use airlock_core::jobid::JobId;
use airlock_core::keys::PublicKey;
use airlock_core::store_layout as layout;
use airlock_core::text;
use anyhow::Result;
use serde::Serialize;

use crate::store::Store;

/// One job's state.
#[derive(Debug, Clone, Serialize)]
pub struct JobStatus {
    /// The job.
    pub job: JobId,
    /// `packed`, `running`, `stalled`, `landed`, `gated`, `expired`.
    pub state: String,
    /// Unix seconds the job was submitted.
    pub issued_at: u64,
    /// Unix seconds the token expires.
    pub expires_at: u64,
    /// Model asked for.
    pub model_requested: String,
    /// Last checkpoint (store clock), if any.
    pub last_checkpoint_at: Option<u64>,
    /// When the final artifact landed (store clock), if it did.
    pub landed_at: Option<u64>,
    /// The gate's decision, if gated.
    pub decision: Option<String>,
    /// A person's decision on the gated artifact (`approved by NAME` / `declined by NAME`,
    /// from the ledger), if any.
    pub review: Option<String>,
}

/// Checkpoint intervals without a new checkpoint after which a job is `stalled`.
pub const STALL_INTERVALS: u64 = 3;
/// A job is never `stalled` sooner than this many seconds after its last checkpoint (store
/// and host clocks differ, uploads take time).
pub const MIN_STALL_SECS: u64 = 60;

/// Job ids that have a record in the store.
pub fn list_jobs(store: &Store) -> Result<Vec<JobId>> {
    let mut jobs = Vec::new();
    for o in store.list("records/")? {
        let Some(name) = o.key.strip_prefix("records/") else {
            continue;
        };
        let Some(id) = name.strip_suffix(".dsse.json") else {
            continue;
        };
        if let Ok(job) = JobId::parse(id) {
            jobs.push(job);
        }
    }
    Ok(jobs)
}

/// HEAD of a drop object, a worker-written path: one a `file://` store refuses (a link, a
/// device, a directory: `store/beneath.rs`) counts as absent and is logged by key and rule
/// only, so one hostile drop neither stops `status`, `gc` or `watch` for every other job nor
/// tells anyone about what a link points to.
fn head_drop(store: &Store, key: &str) -> Result<Option<crate::store::ObjectInfo>> {
    match store.head(key) {
        Ok(h) => Ok(h),
        Err(e) => match e.downcast_ref::<crate::store::beneath::BeneathError>() {
            Some(crate::store::beneath::BeneathError::Refused(r)) => {
                tracing::warn!("{r}");
                Ok(None)
            }
            _ => Err(e),
        },
    }
}

/// The state of one job.
pub fn job_status(
    store: &Store,
    trusted: &PublicKey,
    job: &JobId,
    decisions: &BTreeMap<JobId, String>,
    now: u64,
) -> Result<JobStatus> {
    let record = crate::fetch::load_record(store, trusted, job)?;
    // The later of the two checkpoint slots' envelopes (either may be absent).
    let mut checkpoint: Option<crate::store::ObjectInfo> = None;
    for slot in 0..layout::CHECKPOINT_SLOTS {
        if let Some(h) = head_drop(store, &layout::drop_checkpoint_envelope(job, slot))? {
            if checkpoint
                .as_ref()
                .is_none_or(|c| h.last_modified > c.last_modified)
            {
                checkpoint = Some(h);
            }
        }
    }
    // A final drop is both objects, each a regular file beneath the store root (a link in
    // their place is absent: nothing is said about what it points to).
    let landed = match head_drop(store, &layout::drop_artifact_envelope(job))? {
        Some(env) if head_drop(store, &layout::drop_artifact(job))?.is_some() => Some(env),
        _ => None,
    };
    let decision = decisions.get(job).cloned();
    let state = if decision.is_some() {
        "gated"
    } else if landed.is_some() {
        "landed"
    } else if now > record.expires_at {
        "expired"
    } else if let Some(c) = &checkpoint {
        let every = record.limits.checkpoint_every_secs.max(1);
        let stale_after = every.saturating_mul(STALL_INTERVALS).max(MIN_STALL_SECS);
        if now.saturating_sub(c.last_modified) > stale_after {
            "stalled"
        } else {
            "running"
        }
    } else {
        "packed"
    };
    Ok(JobStatus {
        job: job.clone(),
        state: state.to_owned(),
        issued_at: record.issued_at,
        expires_at: record.expires_at,
        model_requested: record.model_requested.clone(),
        last_checkpoint_at: checkpoint.map(|c| c.last_modified),
        landed_at: landed.map(|l| l.last_modified),
        decision,
        review: None,
    })
}

/// What `airlock status` is asked to do.
#[derive(Debug, Clone)]
pub struct StatusOptions {
    /// Only this job.
    pub job: Option<String>,
    /// Print JSON.
    pub json: bool,
}

/// `airlock status [JOB] [--json]`.
pub fn run(
    global: &crate::config::GlobalOptions,
    args: &StatusOptions,
) -> Result<crate::exit::Outcome> {
    let home = crate::config::Home::load(&global.home)?;
    let trusted = home.public_key()?;
    let store = home.open_store()?;
    let now = airlock_core::clock::now_unix();
    let decisions = crate::ledger::decisions(&store, &trusted)?;
    let jobs = match &args.job {
        Some(j) => vec![JobId::parse(j)?],
        None => list_jobs(&store)?,
    };
    let reviews = crate::ledger::reviews(&store, &trusted)?;
    let mut out = Vec::with_capacity(jobs.len());
    for job in &jobs {
        let mut s = job_status(&store, &trusted, job, &decisions, now)?;
        s.review = reviews.get(job).map(|r| {
            let verb = if r.kind == "approve" {
                "approved"
            } else {
                "declined"
            };
            format!(
                "{verb} by {} at {} (gate entry {})",
                r.by,
                airlock_core::jobid::rfc3339_utc(r.at),
                r.gate_entry
            )
        });
        out.push(s);
    }
    if args.json {
        crate::output::print_json(&out)?;
    } else if out.is_empty() {
        println!("no jobs in {}", store.url());
    } else {
        let fmt =
            |t: Option<u64>| t.map_or_else(|| "-".to_owned(), airlock_core::jobid::rfc3339_utc);
        println!(
            "{:<38} {:<8} {:<20} {:<20} {:<8} REVIEW",
            "JOB", "STATE", "CHECKPOINT", "LANDED", "DECISION"
        );
        for s in &out {
            println!(
                "{:<38} {:<8} {:<20} {:<20} {:<8} {}",
                s.job.as_str(),
                s.state,
                fmt(s.last_checkpoint_at),
                fmt(s.landed_at),
                s.decision.as_deref().unwrap_or("-"),
                s.review
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), text::line)
            );
        }
    }
    Ok(crate::exit::Outcome::Ok)
}
