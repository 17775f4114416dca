//! `airlock gate JOB`: everything after the worker finished. Judges its artifact and decides
//! `queue`, `human` or `reject`, with reasons; optionally commits it on a review branch.
//!
//! [`run_gate`] is a straight pipeline, one step after the other, each a function in the
//! module named for it:
//! 1. fetch: verify the artifact, keep `packet.json` and `patch.diff`, first artifact wins
//!    ([`crate::fetch::fetch`]); a refusal is a `reject` with the fetch's code;
//!    1b. for a re-dispatched job, the changes its worker inherited, read from the trusted
//!    side's own copy, and the packet's claim of them held to the record ([`inherit::judge`]);
//! 2. parse: `patch.diff` present and within its cap ([`parse::patch_member`]);
//! 3. parse: it hashes to the packet's digest and passes the strict parser
//!    ([`parse::parse_signed_patch`]); an empty change ends here as `no-change`
//!    ([`checks::check_no_change`]);
//! 4. the bundle: its listing and redacted lines, from a bundle that hashes to the record's
//!    digest, or from `submit`'s index of it ([`bundle::read_bundle`], [`index`]); a missing
//!    bundle is an error (exit 1);
//! 5. checks: paths against the listing and the deny-list ([`checks::check_paths`]);
//! 6. the change limits of the request, tightened by the policy;
//! 7. checks: hunks covering redacted lines ([`checks::check_redacted`]);
//! 8. apply: real git on the changed files in a scratch directory, cross-checked with the
//!    exact applier ([`apply::apply_check`]); a revision missing locally is an error (exit 1);
//! 9. scan: secrets in added lines ([`scan::scan_added_lines`]);
//! 10. classify and policy per path, new dependencies ([`decide::decide_paths`]);
//! 11. checks: the packet's flags ([`checks::check_packet`]);
//! 12. the decision: the strictest verdict over all reasons;
//! 13. `--review-branch` (unless rejected): the commit on `airlock/<job>` ([`review`]);
//! 14. one ledger append: the fetch, the gate's verdict, a reject ([`record`]).
//!
//! A reject in steps 2–4 ends the checks; from step 5 on every check runs, so the report is
//! complete. When the gate stops with an error after the fetch, the fetch alone is recorded.
//!
//! Guards against: everything the threat model lists for the return hop; see each step's
//! module. Nothing is written outside the job directory except the ledger and the claim in
//! the store, and, with `--review-branch`, new objects and one ref in the repository.
//! Does not check: the wisdom of the change. A `queue` decision means "ordinary review".

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use airlock_core::digest::Sha256Digest;
use airlock_core::format::JobRecord;
use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;
use anyhow::Result;

use super::apply::{self, AppliedFile, ApplyOutcome};
use super::bundle;
use super::checks;
use super::comments;
use super::decide::{self, from_policy};
use super::index;
use super::inherit;
use super::parse;
use super::policy::{Policy, Verdict};
use super::record::{self, Ledger};
use super::review;
use super::scan;
use super::Stop;
use crate::classify::tree::{links_of, GitTree, PackedTree, Tree};
use crate::fetch::{self, FetchError, FetchRefused, Fetched};
use crate::pack::select::Selector;
use crate::reasons::ReasonCode;
use crate::report::{ChangeStats, GateReport, Reason, ReviewBranch};
use crate::store::Store;

/// What `airlock gate` is asked to do.
#[derive(Debug, Clone)]
pub struct GateOptions {
    /// The local repository holding the packed revision (never modified except, with
    /// `review_branch`, new objects and `refs/heads/airlock/<job>`).
    pub repo: PathBuf,
    /// The policy (built-in default unless `--policy F`).
    pub policy: Policy,
    /// Commit the result on `airlock/<job>` unless rejected.
    pub review_branch: bool,
}

impl GateOptions {
    /// Options with the policy read from `policy_file` (or the built-in default).
    pub fn new(
        repo: PathBuf,
        policy_file: Option<&Path>,
        review_branch: bool,
    ) -> Result<GateOptions> {
        let policy = match policy_file {
            Some(p) => Policy::from_file(p)?,
            None => Policy::default(),
        };
        Ok(GateOptions {
            repo,
            policy,
            review_branch,
        })
    }
}

/// Runs the gate on `job`. See the module doc for the steps. `Err` means the gate could not
/// decide (exit 1: unknown job, no artifact yet, bundle gone, revision missing locally, I/O);
/// every verdict, rejects included, is `Ok` with the report, and is in the ledger.
pub fn run_gate(
    home: &crate::config::Home,
    store: &Store,
    key: &SigningKey,
    job: &JobId,
    opts: &GateOptions,
) -> Result<GateReport> {
    let report = gate_job(home, store, key, job, opts)?;
    // The job ended: the model key's minting side is told (it may revoke the key now).
    crate::key_leak::job_ended(home, job);
    Ok(report)
}

/// Logs (`-vv`) the time since `started` (the job's gate, or its checks, steps 3-11) at a
/// step's end.
fn phase(started: Instant, what: &str) {
    let ms = started.elapsed().as_secs_f64() * 1e3;
    tracing::debug!("gate: {what} at {ms:.1} ms");
}

/// [`run_gate`] without the end of the job.
fn gate_job(
    home: &crate::config::Home,
    store: &Store,
    key: &SigningKey,
    job: &JobId,
    opts: &GateOptions,
) -> Result<GateReport> {
    let ledger = Ledger {
        store,
        key,
        job,
        now: airlock_core::clock::now_unix(),
    };
    let started = Instant::now();
    let mut report = GateReport::new(job);
    report.bom.policy_sha256 = Some(opts.policy.digest());
    // 1. fetch
    let mut fetched = match fetch::fetch(store, key, &home.dir, job, ledger.now, true) {
        Ok(f) => f,
        Err(FetchError::Refused(refused)) => return refusal(ledger, report, &refused),
        Err(FetchError::Failed(e)) => return Err(e),
    };
    fill_bom_from_fetch(&mut report, &fetched);
    phase(started, "fetched");
    check_model_drift(&home.dir, store, key, &fetched, &opts.policy, &mut report);
    // 1b. what a re-dispatched job inherited, and the packet's claim of it
    inherit::judge(store, &fetched, &mut report);
    // Secrets in the worker's log or review (found by the fetch): reject, value never shown.
    report.extend(scan::worker_text_reasons(&fetched.worker_text_secrets));
    phase(started, "model history, inheritance");
    // 2. the patch
    let patch_bytes = match parse::patch_member(fetched.patch.take()) {
        Ok(bytes) => bytes,
        Err(reject) => {
            report.push(reject);
            report.conclude();
            record::append(ledger, &report, Some(&fetched), None)?;
            return Ok(report);
        }
    };
    let diff_sha256 = Sha256Digest::of_bytes(&patch_bytes);
    report.bom.diff_sha256 = Some(diff_sha256);
    // 3–11
    let job_dir = fetch::job_dir(&home.dir, job);
    let files = match judge(
        &home.dir,
        store,
        &job_dir,
        &fetched,
        &patch_bytes,
        opts,
        &mut report,
    ) {
        Ok(files) => files,
        Err(Stop::Reject(reject)) => {
            report.push(reject);
            None
        }
        Err(Stop::Error(e)) => {
            record::fetch_alone(ledger, &fetched);
            return Err(e);
        }
    };
    // 11b. comments, and a review job's verdict (`comments.rs`)
    if let Err(stop) = comments_step(
        &home.dir,
        store,
        &job_dir,
        &fetched,
        files.as_ref(),
        opts,
        &mut report,
    ) {
        match stop {
            Stop::Reject(reject) => report.push(reject),
            Stop::Error(e) => {
                record::fetch_alone(ledger, &fetched);
                return Err(e);
            }
        }
    }
    if let Err(e) = comments::keep(&job_dir, fetched.artifact_sha256, &report.comments) {
        tracing::warn!("the gated comments were not kept for `airlock show`: {e:#}");
    }
    // 12. decision
    report.conclude();
    // 13. review branch
    if let (true, Some(files)) = (opts.review_branch, &files) {
        if report.decision != Verdict::Reject {
            let commit = review::review_commit(&report, &fetched, &patch_bytes, files);
            let (name, commit) = review::write_review_branch(&opts.repo, &job_dir, &commit)?;
            report.review_branch = Some(ReviewBranch {
                name,
                commit,
                parent: fetched.record.revision.clone(),
            });
        }
    }
    phase(started, "comments, decision");
    // 14. ledger
    record::append(ledger, &report, Some(&fetched), Some(diff_sha256))?;
    phase(started, "ledger appended");
    Ok(report)
}

/// The verdict on an artifact the fetch refused: the job record's bill of materials (when it
/// verifies), the refusal as the only reason, and its ledger entry.
fn refusal(
    ledger: Ledger<'_>,
    mut report: GateReport,
    refused: &FetchRefused,
) -> Result<GateReport> {
    if let Ok(record) = fetch::load_record(ledger.store, &ledger.key.public(), ledger.job) {
        fill_bom_from_record(&mut report, &record);
    }
    let mut reason = Reason::new(refused.code, Verdict::Reject, refused.detail.clone());
    reason.rule = refused.rule.map(str::to_owned);
    report.push(reason);
    report.conclude();
    record::append(ledger, &report, None, None)?;
    Ok(report)
}

/// Steps 3–11. Returns both sides of every changed file when git applied the patch.
fn judge(
    home: &Path,
    store: &Store,
    job_dir: &Path,
    fetched: &Fetched,
    patch_bytes: &[u8],
    opts: &GateOptions,
    report: &mut GateReport,
) -> Result<Option<BTreeMap<String, AppliedFile>>, Stop> {
    let started = Instant::now();
    let record = &fetched.record;
    // 3. digest, strict parse
    let patch = parse::parse_signed_patch(patch_bytes, fetched.packet.diff_sha256)?;
    report.stats = ChangeStats {
        files_changed: patch.files_changed(),
        lines_added: patch.lines_added(),
        lines_removed: patch.lines_removed(),
    };
    // An empty change: nothing to apply or review (`no-change`).
    if let Some(r) = checks::check_no_change(&patch) {
        report.push(r);
        return Ok(None);
    }
    // 4. the bundle's listing and redacted lines
    let bundle = bundle::read_bundle(store, job_dir, record, index::read(home, record))?;
    report.warnings.extend(bundle.warnings);
    phase(started, "checks: bundle read");
    // The revision's links (never packed): listed at submit (the index), else here, by a git
    // of their own while the checks below run.
    let listing_links = bundle.links.is_none().then(|| {
        let (repo, revision) = (opts.repo.clone(), record.revision.clone());
        std::thread::spawn(move || links_of(&repo, &revision))
    });
    // 5. paths (the deny-list judges added paths)
    let deny = Selector::new(&[], &[])?;
    report.extend(checks::check_paths(&patch, &bundle.listing, Some(&deny)));
    // 6. limits
    let lines = patch.lines_added() + patch.lines_removed();
    let limits = opts
        .policy
        .check_limits(&record.limits, patch.files_changed(), lines);
    report.extend(limits.into_iter().map(|r| from_policy(r, None)));
    // 7. redacted lines
    report.extend(checks::check_redacted(&patch, &bundle.redacted));
    phase(started, "checks: paths, limits, redactions checked");
    // 8. apply with real git; beside it, on the other core, the tree layers are set up and the
    // changed paths classified from the packed files with the patch applied in memory (step 10
    // keeps that classification when git produced the same bytes).
    // The tree layers see the packed revision: its listing, the files as packed (kept while the
    // bundle was read; else read from the repository; `tree.rs`), what its entry points reach
    // when the index has it, and its links.
    // A repository git cannot list fails the apply check; the tree layers then see no links.
    let listing = std::sync::Arc::new(bundle.listing);
    let (applied, tree, speculated) = std::thread::scope(|s| {
        let applying = s.spawn(|| {
            apply::apply_check(
                &opts.repo,
                job_dir,
                &record.revision,
                (patch_bytes, &patch),
                &listing,
            )
        });
        let links = match (bundle.links, listing_links) {
            (Some(links), _) => links,
            (None, Some(job)) => job.join().ok().and_then(Result::ok).unwrap_or_default(),
            (None, None) => Vec::new(),
        };
        let in_repo = GitTree::new(&opts.repo, &record.revision, listing.clone()).with_links(links);
        let tree = PackedTree::new(in_repo, bundle.kept, bundle.kept_all).with_reach(bundle.reach);
        let speculated = decide::speculate(&patch, &tree);
        let applied = applying
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the apply check stopped unexpectedly")));
        (applied, tree, speculated)
    });
    let applied = applied?;
    phase(started, "checks: applied, classified from the packed files");
    let files = match applied {
        ApplyOutcome::Applied(files) => Some(files),
        ApplyOutcome::Failed(why) => {
            let detail = format!(
                "the patch does not apply to revision {}: {why}",
                record.revision
            );
            report.push(Reason::new(
                ReasonCode::ApplyFailed,
                Verdict::Reject,
                detail,
            ));
            None
        }
    };
    // 9. secrets in added lines
    report.extend(scan::scan_added_lines(scan::scanner()?, &patch));
    phase(started, "checks: added lines scanned");
    // 10. classification, policy, dependencies; policy rules that matched nothing
    let no_files = BTreeMap::new();
    let checked = files.as_ref().unwrap_or(&no_files);
    decide::decide_paths(&patch, checked, &opts.policy, &tree, speculated, report);
    phase(started, "checks: classified");
    let packed = tree.files().iter().map(|f| f.path.as_str());
    let seen = packed.chain(patch.files.iter().map(|f| f.path.as_str()));
    let unused = opts.policy.unused_rules(seen);
    report
        .warnings
        .extend(unused.iter().map(ToString::to_string));
    // 11. packet flags
    report.extend(checks::check_packet(&fetched.packet, record, &patch));
    Ok(files)
}

/// Step 11b: the comments against the packed revision (the bundle's listing, the repository
/// at the revision) and the changed files; a review job's verdict.
fn comments_step(
    home: &Path,
    store: &Store,
    job_dir: &Path,
    fetched: &Fetched,
    files: Option<&BTreeMap<String, AppliedFile>>,
    opts: &GateOptions,
    report: &mut GateReport,
) -> Result<(), Stop> {
    let record = &fetched.record;
    let listing = match &fetched.comments {
        Some(_) => {
            Some(bundle::read_bundle(store, job_dir, record, index::read(home, record))?.listing)
        }
        None => None,
    };
    let git = crate::git::Git::new(&opts.repo);
    let read = |paths: &[&str]| -> Vec<Option<Vec<u8>>> {
        let asked: Vec<String> = paths
            .iter()
            .map(|p| format!("{}:{p}", record.revision))
            .collect();
        let asked: Vec<&str> = asked.iter().map(String::as_str).collect();
        let max = comments::MAX_ANCHOR_FILE_BYTES;
        match git.cat_file(&asked, max) {
            Ok(found) => found
                .into_iter()
                .map(|o| {
                    o.filter(|o| o.kind == "blob" && o.size <= max)
                        .map(|o| o.data)
                })
                .collect(),
            Err(_) => vec![None; paths.len()],
        }
    };
    let anchors = listing.as_ref().map(|listing| comments::Anchors {
        listing,
        read: &read,
        changed: files,
    });
    let how = comments::Judging {
        kind: record.kind,
        patch_empty: report.stats.files_changed == 0,
        verdicts: opts.policy.review_verdicts(),
    };
    comments::check(
        fetched.comments.as_deref(),
        &fetched.packet,
        how,
        anchors.as_ref(),
        scan::scanner()?,
        report,
    );
    comments::review_is_not_no_change(record.kind, report);
    Ok(())
}

fn fill_bom_from_record(report: &mut GateReport, record: &JobRecord) {
    let b = &mut report.bom;
    b.prompt_sha256 = Some(record.prompt_sha256);
    b.model_requested = Some(record.model_requested.clone());
    b.revision = Some(record.revision.clone());
    b.bundle_sha256 = Some(record.bundle_sha256);
}

/// Step 11, the ledger's half: `model-drift` when the model reported answers this job's model
/// request for the first time (`drift.rs`). An unreadable history is a warning, not an error.
fn check_model_drift(
    home: &Path,
    store: &Store,
    key: &SigningKey,
    fetched: &Fetched,
    policy: &Policy,
    report: &mut GateReport,
) {
    let job = &fetched.record.job;
    let (asked, reported) = (
        &fetched.record.model_requested,
        &fetched.packet.model_reported,
    );
    if !super::drift::ModelHistory::checks(asked, reported) {
        return;
    }
    match super::drift::ModelHistory::read(store, &key.public(), home, job) {
        Ok(history) => {
            report
                .reasons
                .extend(history.check(asked, reported, policy.model_drift_verdict()))
        }
        Err(e) => report.warnings.push(format!(
            "model history unavailable, model drift not checked: {e:#}"
        )),
    }
}

fn fill_bom_from_fetch(report: &mut GateReport, f: &Fetched) {
    fill_bom_from_record(report, &f.record);
    let b = &mut report.bom;
    b.model_reported = Some(f.packet.model_reported.clone());
    b.artifact_sha256 = Some(f.artifact_sha256);
    b.packet_sha256 = Some(f.packet_sha256);
    b.sandbox = Some(f.packet.sandbox.clone());
    b.worker_version = Some(f.packet.worker_version.clone());
    b.run_id = Some(f.packet.run_id.clone());
    b.landed_at = Some(f.landed_at);
    b.tokens = match (f.packet.tokens_in, f.packet.tokens_out) {
        (None, None) => None,
        (i, o) => Some((i.unwrap_or(0), o.unwrap_or(0))),
    };
    // What the operator looks at when a run went wrong: the egress log, the log's tail.
    report.egress = f.packet.egress.clone();
    report.failed_run = crate::run_account::of(
        &f.packet,
        f.log_tail.as_deref(),
        f.record.limits.wall_clock_secs,
    );
}

/// Judges `job`'s latest verified checkpoint as the gate judges a final result (steps 3-11:
/// strict parse, paths, limits, redacted lines, apply with real git, secrets, policy, packet),
/// with no ledger entry and no review branch. The fleet resumes a re-dispatched job only
/// from a checkpoint whose report rejects nothing but what every checkpoint is (partial,
/// `running`). Returns the report and the checkpoint's `patch.diff`.
pub fn judge_checkpoint(
    home: &crate::config::Home,
    store: &Store,
    key: &SigningKey,
    job: &JobId,
    opts: &GateOptions,
) -> Result<(GateReport, Vec<u8>)> {
    let mut fetched = fetch::fetch_checkpoint(store, key, &home.dir, job)
        .map_err(|e| anyhow::anyhow!("checkpoint of job {job}: {e}"))?;
    let mut report = GateReport::new(job);
    let patch_bytes = match parse::patch_member(fetched.patch.take()) {
        Ok(b) => b,
        Err(reject) => {
            report.push(reject);
            report.conclude();
            return Ok((report, Vec::new()));
        }
    };
    let job_dir = fetch::job_dir(&home.dir, job);
    match judge(
        &home.dir,
        store,
        &job_dir,
        &fetched,
        &patch_bytes,
        opts,
        &mut report,
    ) {
        Ok(_) => {}
        Err(Stop::Reject(reject)) => report.push(reject),
        Err(Stop::Error(e)) => return Err(e),
    }
    report.conclude();
    Ok((report, patch_bytes))
}

#[cfg(test)]
#[path = "run_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "run_reject_tests.rs"]
mod reject_tests;

#[cfg(test)]
#[path = "index_tests.rs"]
mod index_tests;
