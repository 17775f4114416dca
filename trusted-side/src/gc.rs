//! `airlock gc [--older-than DUR] [--dry-run]`: delete the payloads (bundle, checkpoint and
//! artifact tarballs, and a resumed job's inherited `inbox/<job>/resume.diff`) of jobs that
//! are gated or expired and older than DUR. Envelopes (`*.dsse.json`), records and the ledger
//! stay: they are the audit trail, and a job's whole chain of signatures still verifies after
//! gc (`docs/AUDIT.md`).
//!
//! Guards against: deleting a job still in flight (only gated, or expired past the token's
//! lifetime, jobs qualify), deleting evidence (only `.tar.gz` payloads and the inherited patch,
//! whose digest the record and the ledger keep, are ever removed), and
//! silent deletion (every object removed is listed, and `--dry-run` lists without removing),
//! and deleting outside the store: on a `file://` store the worker writes `drop/<job>/` itself,
//! and may make it (or anything in it) a symbolic link; listing and deletion open every path
//! beneath the store root without following links (`store/beneath.rs`), so a link is reported
//! (`store.link`, by its key only) and skipped, and nothing it points to is listed or removed.

use airlock_core::jobid::JobId;
use anyhow::Result;
use serde::Serialize;

use crate::store::Store;

/// What gc removed (or would remove).
#[derive(Debug, Serialize)]
pub struct GcReport {
    /// Whether anything was actually deleted.
    pub dry_run: bool,
    /// Object keys removed, sorted.
    pub removed: Vec<String>,
    /// Jobs whose objects were removed.
    pub jobs: Vec<JobId>,
    /// Paths refused and left alone (`<key>: refused (<rule>): <why>`): links, devices, odd
    /// names a worker planted in its drop.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
}

/// Collects (and unless `dry_run`, deletes) inbox and drop objects of finished jobs.
pub fn gc(
    store: &Store,
    trusted: &airlock_core::keys::PublicKey,
    older_than_secs: u64,
    dry_run: bool,
    now: u64,
) -> Result<GcReport> {
    let decisions = crate::ledger::decisions(store, trusted)?;
    let mut removed = Vec::new();
    let mut jobs = Vec::new();
    let mut refused = Vec::new();
    for job in crate::status::list_jobs(store)? {
        let s = crate::status::job_status(store, trusted, &job, &decisions, now)?;
        let finished = s.state == "gated" || s.state == "expired";
        if !finished || s.issued_at.saturating_add(older_than_secs) > now {
            continue;
        }
        let mut keys = Vec::new();
        // The inherited patch is a payload too: its digest and size stay in the signed record
        // and the ledger; `airlock show` says `resume.missing` once it is gone.
        let resume = airlock_core::store_layout::inbox_resume(&job);
        for prefix in [format!("inbox/{job}/"), format!("drop/{job}/")] {
            // Payloads only: an envelope is evidence (a signature over a digest), never garbage.
            let (objects, bad) = store.list_checked(&prefix)?;
            refused.extend(bad.into_iter().map(|r| r.to_string()));
            keys.extend(
                objects
                    .into_iter()
                    .map(|o| o.key)
                    .filter(|k| is_payload(k) || *k == resume),
            );
        }
        if keys.is_empty() {
            continue;
        }
        for k in &keys {
            if !dry_run {
                store.delete(k)?;
            }
        }
        removed.extend(keys);
        jobs.push(job);
    }
    removed.sort();
    Ok(GcReport {
        dry_run,
        removed,
        jobs,
        refused,
    })
}

/// Whether gc may delete this object: a tarball payload, not an envelope or anything else.
fn is_payload(key: &str) -> bool {
    key.ends_with(".tar.gz")
}

/// What `airlock gc` is asked to do.
#[derive(Debug, Clone)]
pub struct GcOptions {
    /// Only jobs submitted at least this long ago (90s, 20m, 1h, 7d).
    pub older_than: String,
    /// List what would be removed; remove nothing.
    pub dry_run: bool,
    /// Print JSON.
    pub json: bool,
}

/// `airlock gc`.
pub fn run(
    global: &crate::config::GlobalOptions,
    args: &GcOptions,
) -> Result<crate::exit::Outcome> {
    let home = crate::config::Home::load(&global.home)?;
    let trusted = home.public_key()?;
    let store = home.open_store()?;
    let older = crate::submit::parse_duration(&args.older_than)?;
    let report = gc(
        &store,
        &trusted,
        older,
        args.dry_run,
        airlock_core::clock::now_unix(),
    )?;
    if args.json {
        crate::output::print_json(&report)?;
    } else {
        let verb = if report.dry_run {
            "would remove"
        } else {
            "removed"
        };
        for k in &report.removed {
            println!("{verb} {}", airlock_core::text::line(k));
        }
        for r in &report.refused {
            println!("left alone: {r}");
        }
        println!(
            "{verb} {} payload(s) of {} job(s); envelopes, records and ledger kept",
            report.removed.len(),
            report.jobs.len()
        );
    }
    Ok(crate::exit::Outcome::Ok)
}
