//! `airlock approve JOB` and `airlock decline JOB --note TEXT`: a person's decision on a gated
//! artifact, recorded as a signed ledger entry (who, when, which artifact, under which trusted
//! key), so that "someone looked at it" is evidence rather than a memory.
//!
//! Guards against: approving something other than what was gated (the artifact envelope in
//! the store, else the home's kept copy, is verified under the job key from the signed record
//! and must name the digest the last `gate` entry judged; the home's kept artifact, if any,
//! must still hash to it), approving what the gate rejected, deciding on a job never gated,
//! and a decline without a reason.
//!
//! Does not check: that the person read the change (the entry records a claim, signed).

use airlock_core::digest::{sha256_file, Sha256Digest};
use airlock_core::dsse::verify_envelope;
use airlock_core::format::MAX_ENVELOPE_BYTES;
use airlock_core::jobid::JobId;
use airlock_core::keys::PublicKey;
use airlock_core::store_layout as layout;
use anyhow::{Context, Result};
use serde::Serialize;

use crate::exit::{Outcome, Refused};
use crate::ledger::entry::MAX_TEXT_BYTES;
use crate::ledger::{self, Event};
use crate::store::Store;

/// `approve` or `decline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The artifact may be merged (by a person, elsewhere).
    Approve,
    /// The artifact is turned down; the note says why.
    Decline,
}

/// What was recorded.
#[derive(Debug, Serialize)]
pub struct Recorded {
    /// The job.
    pub job: JobId,
    /// `approve` or `decline`.
    pub decision: &'static str,
    /// Who decided.
    pub by: String,
    /// The artifact decided on.
    pub artifact_sha256: Sha256Digest,
    /// The gate entry decided on.
    pub gate_entry: u64,
    /// The new ledger entry's number.
    pub entry: u64,
    /// The trusted key that signed it.
    pub trusted_key_id: String,
}

/// The OS user running this process (`USER`, then `LOGNAME`), for `--by` left out.
fn os_user() -> Option<String> {
    ["USER", "LOGNAME"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|u| !u.trim().is_empty())
}

/// The artifact digest the job's envelope names, verified under the job key: the store's
/// `drop/<job>/artifact.dsse.json`, else the copy kept in the home beside the artifact.
pub fn enveloped_artifact_digest(
    store: &Store,
    trusted: &PublicKey,
    home: &std::path::Path,
    job: &JobId,
) -> Result<Sha256Digest> {
    let record = crate::fetch::load_record(store, trusted, job)?;
    let job_key = PublicKey::from_raw_hex(&record.job_public_key)?;
    let kept = crate::fetch::job_dir(home, job).join("artifact.dsse.json");
    let bytes = match store.get_bytes(
        &layout::drop_artifact_envelope(job),
        MAX_ENVELOPE_BYTES as u64,
    )? {
        Some(b) => b,
        None => std::fs::read(&kept).with_context(|| {
            format!(
                "job {job}: no artifact envelope in the store nor at {}",
                kept.display()
            )
        })?,
    };
    let statement = verify_envelope(&bytes, std::slice::from_ref(&job_key), MAX_ENVELOPE_BYTES)
        .with_context(|| format!("job {job}: artifact.dsse.json"))?;
    statement
        .subject_digest("artifact.tar.gz")
        .with_context(|| format!("job {job}: artifact.dsse.json names no artifact.tar.gz"))
}

/// Records `decision` on `job`. Refusals (exit 4): never gated, rejected (approve only),
/// artifact changed since the gate.
pub fn decide(
    home: &crate::config::Home,
    job: &JobId,
    decision: Decision,
    by: Option<&str>,
    note: &str,
    now: u64,
) -> Result<Recorded> {
    let key = home.signing_key()?;
    let trusted = key.public();
    let store = home.open_store()?;
    let by = match by.map(str::to_owned).or_else(os_user) {
        Some(b) if !b.trim().is_empty() => b,
        _ => anyhow::bail!("who is deciding? pass --by NAME (no USER or LOGNAME set)"),
    };
    if decision == Decision::Decline && note.trim().is_empty() {
        return Err(Refused("decline needs --note TEXT saying why".into()).into());
    }
    let bom = ledger::show_job(&store, &trusted, job)?;
    let last_gate_seq = bom.gates.last().map_or(0, |g| g.seq);
    if let Some(r) = bom.rejects.iter().rev().find(|r| r.seq > last_gate_seq) {
        if decision == Decision::Approve {
            return Err(Refused(format!(
                "job {job} was rejected at {} ({}, entry {}): a rejected artifact cannot be \
                 approved",
                r.event.stage, r.event.reason_code, r.seq
            ))
            .into());
        }
    }
    let Some(gate) = bom.gates.last() else {
        return Err(Refused(format!(
            "job {job} was never gated: run `airlock gate {job}` first, then decide"
        ))
        .into());
    };
    let gated = gate.event.artifact_sha256;
    if decision == Decision::Approve {
        if gate.event.decision == "reject" {
            return Err(Refused(format!(
                "job {job} was rejected by the gate (entry {}): a rejected artifact cannot be \
                 approved; `airlock decline {job} --note ...` records a decision",
                gate.seq
            ))
            .into());
        }
        let signed = enveloped_artifact_digest(&store, &trusted, &home.dir, job)?;
        if signed != gated {
            return Err(Refused(format!(
                "job {job}: the artifact changed since it was gated: the gate (entry {}) judged \
                 sha256:{gated}, the signed envelope now names sha256:{signed}; gate it again",
                gate.seq
            ))
            .into());
        }
        let kept = crate::fetch::job_dir(&home.dir, job).join("artifact.tar.gz");
        if kept.exists() {
            let (local, _) =
                sha256_file(&kept).with_context(|| format!("{}: cannot hash", kept.display()))?;
            if local != gated {
                return Err(Refused(format!(
                    "job {job}: the artifact changed since it was gated: {} hashes to \
                     sha256:{local}, the gate (entry {}) judged sha256:{gated}",
                    kept.display(),
                    gate.seq
                ))
                .into());
            }
        }
    }
    // `by` and `note` are a person's text, but they come from a command line another tool may
    // have filled: recorded as one inert line each (`text::detail`), like every ledger detail.
    let by = airlock_core::text::detail(&by, MAX_TEXT_BYTES);
    let (note, trusted_key_id, artifact_sha256, gate_entry) = (
        airlock_core::text::detail(note, MAX_TEXT_BYTES),
        trusted.key_id(),
        gated,
        gate.seq,
    );
    let event = match decision {
        Decision::Approve => Event::Approve {
            by: by.clone(),
            note,
            trusted_key_id,
            artifact_sha256,
            gate_entry,
        },
        Decision::Decline => Event::Decline {
            by: by.clone(),
            note,
            trusted_key_id,
            artifact_sha256,
            gate_entry,
        },
    };
    let kind = event.kind();
    let entry = ledger::append(&store, &key, job, event, now)?;
    Ok(Recorded {
        job: job.clone(),
        decision: kind,
        by,
        artifact_sha256: gated,
        gate_entry: gate.seq,
        entry,
        trusted_key_id: trusted.key_id(),
    })
}

/// What `airlock approve` / `airlock decline` is asked to do.
#[derive(Debug, Clone)]
pub struct DecideOptions {
    /// Approve or decline.
    pub decision: Decision,
    /// The job id.
    pub job: String,
    /// Why (required for decline; recorded in the ledger).
    pub note: Option<String>,
    /// Who is deciding (default: the OS user, $USER).
    pub by: Option<String>,
    /// Print the result as JSON.
    pub json: bool,
}

/// `airlock approve` / `airlock decline`.
pub fn run(global: &crate::config::GlobalOptions, args: &DecideOptions) -> Result<Outcome> {
    let decision = args.decision;
    let home = crate::config::Home::load(&global.home)?;
    let job = JobId::parse(&args.job)?;
    let note = args.note.as_deref().unwrap_or("");
    let r = decide(
        &home,
        &job,
        decision,
        args.by.as_deref(),
        note,
        airlock_core::clock::now_unix(),
    )?;
    if args.json {
        crate::output::print_json(&r)?;
    } else {
        println!(
            "{} job {} (artifact sha256:{}, gate entry {}) by {}: ledger entry {}, signed by \
             trusted key {}",
            if decision == Decision::Approve {
                "approved"
            } else {
                "declined"
            },
            r.job,
            r.artifact_sha256,
            r.gate_entry,
            airlock_core::text::line(&r.by),
            r.entry,
            r.trusted_key_id
        );
    }
    Ok(Outcome::Ok)
}
