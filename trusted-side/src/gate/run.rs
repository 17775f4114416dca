//! `airlock gate JOB`: everything after the fetch. Judges a worker's artifact and decides
//! `queue`, `human` or `reject`, with reasons; optionally commits it on a review branch.
//!
//! Steps of [`run_gate`], in order (each a call below; a reject in steps 1–4 ends the checks,
//! from step 5 on every check runs so the report is complete):
//! 1. fetch and verify ([`crate::fetch::fetch_unclaimed`]); a refusal is a `reject` with the
//!    fetch's code (`artifact-signature`, `artifact-replay`, `artifact-tar` + the tar rule, …).
//!    The fetch reads the downloaded artifact once through the safe reader (exact member names,
//!    every tar rule of the unpacker), re-hashing it on the way, and keeps `packet.json` and
//!    `patch.diff`. Its last step, first artifact wins ([`crate::fetch::Claim`]), runs on a
//!    thread of its own from there, beside steps 2-8; the gate waits for it before it
//!    concludes, and a refusal there (`artifact-swapped`) ends the gate as any fetch refusal
//!    does. `git apply` (step 8) is started before the fetch, so that its start-up overlaps it;
//! 2. `patch.diff` must be in the artifact and within its cap;
//! 3. `patch.diff` must hash to the packet's `diff_sha256`, then the strict parser;
//! 4. the bundle's manifest: stream `inbox/<job>/bundle.tar.gz` (capped; read in place from a
//!    file store, downloaded to a scratch file from others) through the hasher and the safe
//!    reader, keeping `manifest.json`, the line numbers of redaction markers in packed files,
//!    and the packed bytes of the files the patch changes (for step 8); its sha256 must be the
//!    record's (checked before anything read is used); a missing bundle is an error (exit 1);
//! 5. path checks against the manifest and (for added files) the deny-list;
//! 6. change limits (the request's, tightened by the policy) and the packet's counts;
//! 7. hunks covering redacted lines;
//! 8. apply with real git against the packed revision: `git apply --cached --check` against an
//!    index of only the patched files (`sparse_apply.rs`), or, with `--review-branch`, in a
//!    temporary index of the whole revision (`review.rs`); never the user's checkout;
//!    cross-checked with the exact applier; a revision missing from the local repository is
//!    an error (exit 1);
//! 9. secret scan of added lines (on a thread, while git applies, after step 14's fetch
//!    entry: one thread for both, the gate has 2 CPUs and git takes one). The thread starts
//!    once git has the whole patch (`Meanwhile`), not before the apply: started earlier it
//!    took the CPU the gate's own way to git's input needed. The scanner it needs is built
//!    by step 1's claim thread once the claim is settled (`Tables`); the classification
//!    table is `static` data, nothing to build (`classify_globs.rs`);
//! 10. classification and policy per path; new dependencies from manifest edits;
//! 11. the packet's flags (partial, unsandboxed, limits hit, model reported);
//! 12. decision = the strictest verdict over all reasons;
//! 13. `--review-branch` (unless rejected): commit on `airlock/<job>` with the trailers;
//! 14. ledger entries: the fetch's is appended while git checks the patch (step 8), on the
//!     scan's thread before the scan, once the claim of step 1 holds and after a read of the
//!     tail hint; the gate's (and a reject's, for a rejection) follow it once the verdict is
//!     known, with no read in between
//!     ([`crate::ledger::append_all_after`] and the tail it returns). When the
//!     checks stop before step 8, all of them are appended in one go with the verdict; when
//!     the gate stops with an error after the fetch, the fetch entry alone. Return the report.
//!
//! Guards against: everything the threat model lists for the return hop; see each step's
//! module (`checks.rs`, `review.rs`, `deps.rs`). Nothing is written outside the job directory
//! except the apply check's index (a reused slot in the home's `cache/index/`,
//! `sparse_apply.rs`), the ledger and the claim in the store, and, with `--review-branch`, new
//! objects and one ref in the repository.
//! Does not check: the wisdom of the change. A `queue` decision means "ordinary review".

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use airlock_core::diff::{parse_patch, DiffLimits, FileKind, FileMode, ParsedPatch};
use airlock_core::digest::{HashingReader, Sha256Digest};
use airlock_core::format::{JobRecord, Manifest};
use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;
use airlock_core::limits::TarLimits;
use airlock_core::store_layout as layout;
use airlock_core::tar::{read_members, AllowedNames, TarError};
use anyhow::{Context, Result};

use super::checks::{self, code, RedactedLines};
use super::classify::classify_path;
use super::deps;
use super::policy::{Policy, Verdict};
use super::report::{ChangeStats, ChangedFile, GateReport, Reason, ReviewBranch};
use super::review::{self, AppliedFile, ApplyOutcome, ReviewCommit, MAX_BLOB_BYTES};
use super::sparse_apply::{Meanwhile, PackedFiles, Prepared};
use crate::fetch::{self, FetchRefused, Fetched, MAX_PATCH_BYTES};
use crate::ledger::{self, Event};
use crate::pack::select::Selector;
use crate::store::Store;

/// The marker the packer writes in place of each line of a redacted secret.
const REDACTION_MARKER: &[u8] = b"[REDACTED:";

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
    let now = crate::submit::now_unix();
    let mut report = GateReport::new(job);
    report.bom.policy_sha256 = Some(opts.policy.digest());

    // 1. fetch + verify. git starts first (step 8): its start-up overlaps the fetch and the
    // reading of the artifact and the bundle. Nothing is written before the record verifies.
    let job_dir = fetch::job_dir(&home.dir, job);
    let tables = &TABLES;
    let sparse = if opts.review_branch {
        None
    } else {
        let slots = home.dir.join("cache").join("index");
        Some(Prepared::start(&opts.repo, &job_dir, Some(&slots))?)
    };
    let (mut fetched, claim) = match fetch::fetch_unclaimed(store, key, &home.dir, job, now, true) {
        Ok(f) => f,
        Err(e) => {
            let Some(refused) = e.downcast_ref::<FetchRefused>() else {
                return Err(e);
            };
            let record = fetch::load_record(store, &key.public(), job).ok();
            return refusal(store, key, job, report, record.as_deref(), refused, now);
        }
    };
    let patch = fetched.patch.take();
    fill_bom_from_fetch(&mut report, &fetched);
    check_model_drift(store, key, &fetched, &opts.policy, &mut report);
    std::thread::scope(|scope| {
        // 1, the last part, meanwhile: first artifact wins (see `ClaimState`). Then, on the
        // same thread once the outcome is sent, the scan's tables if git's starter has not
        // built them (see `Tables`).
        let (settled, claim_outcome) = std::sync::mpsc::sync_channel(1);
        scope.spawn(move || {
            // The receiver is gone only when the gate stopped with an error: nothing to tell.
            let _ = settled.send(claim.settle(store, key));
            tables.get_or_init(build_tables);
        });
        // Recorded while git checks the patch, or with the verdict when the checks stop
        // before that; on an error, alone.
        let mut fetch_record = FetchRecord {
            ledger: Ledger { store, key, now },
            event: Event::Fetch {
                artifact_sha256: fetched.artifact_sha256,
                packet_sha256: fetched.packet_sha256,
                model_reported: fetched.packet.model_reported.clone(),
                partial: fetched.packet.partial,
                run_id: fetched.packet.run_id.clone(),
            },
            claim: ClaimState::Settling(claim_outcome),
            appended: None,
        };
        let judged = match judge_and_review(
            store,
            &job_dir,
            (&fetched, patch),
            (opts, tables),
            sparse,
            &mut fetch_record,
            &mut report,
        ) {
            Ok(Ok(j)) => j,
            Ok(Err(swapped)) => {
                let report = GateReport::new(job);
                return refusal(
                    store,
                    key,
                    job,
                    report,
                    Some(&fetched.record),
                    &swapped,
                    now,
                );
            }
            Err(e) => {
                // The fetch is recorded only if its artifact was this job's first.
                let recorded = match (fetch_record.claim.outcome(), fetch_record.appended) {
                    (Ok(None), None) => {
                        ledger::append(store, key, job, fetch_record.event, now).map(drop)
                    }
                    (Ok(None), Some(appended)) => appended.map(drop),
                    // Another artifact was first, or the claim failed (then its error is the
                    // gate's, or it was lost with the thread that held it): no fetch entry.
                    (Ok(Some(_)) | Err(_), _) => Ok(()),
                };
                if let Err(l) = recorded {
                    tracing::error!("ledger: the fetch of job {job} is not recorded: {l:#}");
                }
                return Err(e);
            }
        };

        // 14. ledger
        let (fetch_event, tail) = match fetch_record.appended {
            None => (Some(fetch_record.event), None),
            Some(appended) => (None, Some(appended?)),
        };
        let diff_sha256 = judged.as_ref().map(|j| j.diff_sha256);
        record_in_ledger(
            store,
            key,
            job,
            &report,
            (fetch_event, tail),
            diff_sha256.map(|d| (fetched.artifact_sha256, d)),
            now,
        )?;
        Ok(report)
    })
}

/// The verdict on an artifact the fetch refused: the job record's bill of materials (when it
/// verifies), the refusal as the only reason, and its ledger entry.
fn refusal(
    store: &Store,
    key: &SigningKey,
    job: &JobId,
    mut report: GateReport,
    record: Option<&JobRecord>,
    refused: &FetchRefused,
    now: u64,
) -> Result<GateReport> {
    if let Some(record) = record {
        fill_bom_from_record(&mut report, record);
    }
    report.push(checks::fetch_refusal(refused));
    report.conclude();
    record_in_ledger(store, key, job, &report, (None, None), None, now)?;
    Ok(report)
}

/// Where the gate appends to the ledger: the store, the trusted key, the gate's clock.
#[derive(Clone, Copy)]
struct Ledger<'a> {
    store: &'a Store,
    key: &'a SigningKey,
    now: u64,
}

/// The fetch's ledger entry. Appended (after a read of the tail hint) while git checks the
/// patch, on the thread that then runs the secret scan, which takes it off the gate's critical
/// path; when the checks stop before git runs, appended with the verdict instead. Either way
/// only once the claim says the artifact is this job's first.
struct FetchRecord<'a> {
    ledger: Ledger<'a>,
    event: Event,
    claim: ClaimState,
    /// Set once appended: the new entry, the tail candidate for the verdict's entries (or the
    /// append's error, which the gate reports after its checks).
    appended: Option<Result<ledger::TailProbe>>,
}

/// The secret scanner (the classification table is `static` data). It does not depend on the
/// job: built once per process ([`TABLES`]), so `airlock watch` builds it once and no gate
/// frees it on its way out. A gate builds it on the claim's thread once the claim's outcome is sent (see
/// [`ClaimState`]). (From 2026-11-30's second round to its fourth, the thread that starts
/// `git apply` built them once git was started, 0.21 ms faster then; measured again with that
/// thread let run at once, on a scheduler that packs threads onto the busy vCPU, it took the
/// CPU from the main thread's fetch instead: 6 pairs of 30 gates, all faster this way, -0.32 ms
/// on average.) The scan takes them from here, waiting for the build if it is not done (or
/// building them itself if it was never started).
type Tables = std::sync::OnceLock<Result<airlock_scan::Scanner>>;

/// The process's [`Tables`].
static TABLES: Tables = std::sync::OnceLock::new();

/// The fetch's last step, first artifact wins ([`fetch::Claim`]: a signed record written once
/// in the store, then the job directory's copy), settled on a thread of its own from the end
/// of the fetch: it overlaps the patch's parse and the bundle's read. The gate waits for it
/// before it concludes anything (the review branch, the verdict, the fetch's ledger entry).
/// The thread sends its outcome, then builds the [`Tables`]: one thread where there were two
/// (each start and exit costs the gate's 2 CPUs a stack, a signal stack, a malloc arena and
/// the TLB flushes of tearing them down).
enum ClaimState {
    /// Still on its thread: the outcome arrives here.
    Settling(std::sync::mpsc::Receiver<Result<()>>),
    /// Done: `Ok(None)` this job's first artifact, `Ok(Some(why))` another was fetched first.
    Settled(Result<Option<FetchRefused>>),
    /// Handed to the thread that appends the fetch's ledger entry.
    Lent,
}

impl ClaimState {
    /// Waits for the claim and takes its outcome.
    fn outcome(&mut self) -> Result<Option<FetchRefused>> {
        match std::mem::replace(self, ClaimState::Lent) {
            ClaimState::Settling(outcome) => match outcome.recv() {
                Err(_) => anyhow::bail!("the first-artifact claim panicked"),
                Ok(Ok(())) => Ok(None),
                Ok(Err(e)) => e.downcast::<FetchRefused>().map(Some),
            },
            ClaimState::Settled(outcome) => outcome,
            ClaimState::Lent => anyhow::bail!("the first-artifact claim was not returned"),
        }
    }
}

/// Steps 2–13: the checks, the decision and, if asked for, the review branch. `Ok(Err(why))`:
/// another artifact was fetched first for this job (the claim's refusal), nothing concluded.
fn judge_and_review(
    store: &Store,
    job_dir: &Path,
    (fetched, patch): (&Fetched, Option<Vec<u8>>),
    (opts, tables): (&GateOptions, &Tables),
    sparse: Option<Prepared>,
    fetch_record: &mut FetchRecord<'_>,
    report: &mut GateReport,
) -> Result<Result<Option<Judged>, FetchRefused>> {
    let judged = judge(
        store,
        job_dir,
        (fetched, patch),
        (opts, tables),
        sparse,
        fetch_record,
        report,
    )?;
    match fetch_record.claim.outcome()? {
        None => fetch_record.claim = ClaimState::Settled(Ok(None)),
        Some(swapped) => return Ok(Err(swapped)),
    }
    report.conclude();
    // 13. review branch
    if let Some(j) = &judged {
        if opts.review_branch && report.decision != Verdict::Reject {
            let (name, commit) = review::write_review_branch(
                &opts.repo,
                job_dir,
                &review_commit(report, fetched, j),
            )?;
            report.review_branch = Some(ReviewBranch {
                name,
                commit,
                parent: fetched.record.revision.clone(),
            });
        }
    }
    Ok(Ok(judged))
}

/// The secret scanner for added lines (it does not depend on the job).
fn build_tables() -> Result<airlock_scan::Scanner> {
    let scanner = airlock_scan::Scanner::with_default_detectors()
        .context("secret scanner rules")?
        .with_inline_allow(false)
        .with_small_inputs();
    scanner.warm_up();
    Ok(scanner)
}

/// What the checks leave for the review branch.
struct Judged {
    diff_sha256: Sha256Digest,
    patch_bytes: Vec<u8>,
    tree: Option<String>,
}

/// Steps 2–11. `Ok(None)` when a reject in steps 2–4 stopped the checks before a patch was read.
fn judge(
    store: &Store,
    job_dir: &Path,
    (fetched, patch): (&Fetched, Option<Vec<u8>>),
    (opts, tables): (&GateOptions, &Tables),
    sparse: Option<Prepared>,
    fetch_record: &mut FetchRecord<'_>,
    report: &mut GateReport,
) -> Result<Option<Judged>> {
    let record = &fetched.record;
    // 2. the patch the fetch kept (before the bundle: the patch names the files step 4 keeps)
    let Some(patch_bytes) = check_patch_member(patch, report) else {
        return Ok(None);
    };
    // 3. digest, strict parse
    let diff_sha256 = Sha256Digest::of_bytes(&patch_bytes);
    report.bom.diff_sha256 = Some(diff_sha256);
    if diff_sha256 != fetched.packet.diff_sha256 {
        report.push(Reason::new(
            code::DIFF_DIGEST,
            Verdict::Reject,
            format!(
                "patch.diff hashes to sha256:{diff_sha256}; the signed packet says sha256:{}",
                fetched.packet.diff_sha256
            ),
        ));
        return Ok(Some(Judged {
            diff_sha256,
            patch_bytes,
            tree: None,
        }));
    }
    let patch = match parse_patch(&patch_bytes, &DiffLimits::default()) {
        Ok(p) => p,
        Err(e) => {
            report.push(checks::diff_refusal(&e));
            return Ok(Some(Judged {
                diff_sha256,
                patch_bytes,
                tree: None,
            }));
        }
    };
    report.stats = ChangeStats {
        files_changed: patch.files_changed(),
        lines_added: patch.lines_added(),
        lines_removed: patch.lines_removed(),
    };
    // An empty change: nothing to apply or review.
    if let Some(r) = checks::check_no_change(&patch) {
        report.push(r);
        return Ok(Some(Judged {
            diff_sha256,
            patch_bytes,
            tree: None,
        }));
    }
    // 4. the manifest, and the packed bytes of the files the patch changes
    let wanted: BTreeSet<&str> = patch
        .files
        .iter()
        .filter(|f| f.kind != FileKind::Added)
        .map(|f| f.path.as_str())
        .collect();
    let Some(bundle) = read_bundle(store, job_dir, record, &wanted, report)? else {
        return Ok(None);
    };
    // The deny-list judges added paths only.
    let deny = if patch.files.iter().any(|f| f.kind == FileKind::Added) {
        Some(Selector::new(&[], &[])?)
    } else {
        None
    };
    // 14 and 9, meanwhile: the fetch's ledger entry, then the secret scan of added lines, run
    // on one thread while git checks the patch, started once git has its input (see
    // `Meanwhile`: started before, they took the CPU the way to git's input needed). One
    // thread, not one each: git has the other CPU, and a thread's start and exit cost more
    // than running the two one after the other.
    let (applied, secrets) = std::thread::scope(|scope| -> Result<_> {
        let mut helper = None;
        let Ledger { store, key, now } = fetch_record.ledger;
        let fetch_event = fetch_record.event.clone();
        let mut claim = std::mem::replace(&mut fetch_record.claim, ClaimState::Lent);
        let patch = &patch;
        let mut meanwhile = Meanwhile::new(|| {
            helper = Some(scope.spawn(move || {
                // The fetch's entry once the claim holds; the verdict's entries follow it.
                let claimed = claim.outcome();
                let appended = matches!(claimed, Ok(None)).then(|| {
                    let tail = ledger::probe_tail(store, &key.public());
                    ledger::append_all_after(store, key, &record.job, vec![fetch_event], now, tail)
                        .map(|appended| appended.tail)
                });
                let scanned = tables
                    .get_or_init(build_tables)
                    .as_ref()
                    .map_err(|e| anyhow::anyhow!("{e:#}"))
                    .map(|scanner| checks::scan_added_lines(scanner, patch));
                (claimed, appended, scanned)
            }));
        });
        // 5. paths
        for r in checks::check_paths(patch, &bundle.manifest, deny.as_ref()) {
            report.push(r);
        }
        // 6. limits
        let lines = patch.lines_added() + patch.lines_removed();
        for r in opts
            .policy
            .check_limits(&record.limits, patch.files_changed(), lines)
        {
            report.push(from_policy(r, None));
        }
        // 7. redacted lines
        for r in checks::check_redacted(patch, &bundle.redacted) {
            report.push(r);
        }
        // 8. apply with real git
        let checked = review::apply_check(
            &opts.repo,
            job_dir,
            &record.revision,
            (&patch_bytes, patch),
            sparse.map(|p| (p, &bundle.packed)),
            &mut meanwhile,
        );
        meanwhile.run(); // when the check stopped before git had the patch
        drop(meanwhile);
        let Some(helper) = helper else {
            anyhow::bail!("the secret scan and the ledger append were not started");
        };
        let (claimed, appended, scanned) = helper.join().unwrap_or_else(|_| {
            let panicked = || anyhow::anyhow!("the ledger append and the secret scan panicked");
            (Err(panicked()), None, Err(panicked()))
        });
        fetch_record.claim = ClaimState::Settled(claimed);
        fetch_record.appended = appended;
        let applied = match checked? {
            ApplyOutcome::Applied { tree, files } => Some((tree, files)),
            ApplyOutcome::Failed(why) => {
                report.push(Reason::new(
                    super::policy::ReasonCode::ApplyFailed.code(),
                    Verdict::Reject,
                    format!(
                        "the patch does not apply to revision {}: {why}",
                        record.revision
                    ),
                ));
                None
            }
        };
        Ok((applied, scanned?))
    })?;
    // 9. secret scan (reasons)
    for r in secrets {
        report.push(r);
    }
    // 10. classification, policy, dependencies
    let empty = std::collections::BTreeMap::new();
    let files = applied.as_ref().map_or(&empty, |(_, f)| f);
    classify_and_decide(&patch, files, &opts.policy, report);
    let mut seen: Vec<String> = bundle
        .manifest
        .files
        .iter()
        .map(|f| f.path.clone())
        .collect();
    seen.extend(patch.files.iter().map(|f| f.path.clone()));
    for unused in opts.policy.unused_rules(&seen) {
        report.warnings.push(unused.to_string());
    }
    // 11. packet flags
    for r in checks::check_packet(&fetched.packet, record, &patch) {
        report.push(r);
    }
    Ok(Some(Judged {
        diff_sha256,
        patch_bytes,
        tree: applied.and_then(|(t, _)| t),
    }))
}

/// The parts of the bundle the gate needs.
struct BundleView {
    manifest: Manifest,
    redacted: RedactedLines,
    /// The packed bytes and mode of each wanted file packed unredacted (the revision's blob).
    packed: PackedFiles,
}

/// Step 4. `Ok(None)` after pushing a reject (digest mismatch, unreadable bundle).
fn read_bundle(
    store: &Store,
    job_dir: &Path,
    record: &JobRecord,
    wanted: &BTreeSet<&str>,
    report: &mut GateReport,
) -> Result<Option<BundleView>> {
    let job = &record.job;
    let limits = TarLimits::bundle();
    let cap = limits
        .max_stream_bytes()
        .saturating_add(limits.max_stream_bytes() / 64);
    let key = layout::inbox_bundle(job);
    let gone = || {
        anyhow::anyhow!(
            "job {job}: the bundle is gone from the inbox ({key}): it was garbage-collected or never uploaded, and the gate needs its manifest (submit the job again)"
        )
    };
    // A file store is read in place; other stores are downloaded to a scratch file first.
    let mut _scratch = None;
    let path = match store.local_root() {
        Some(root) => root.join(&key),
        None => {
            std::fs::create_dir_all(job_dir)?;
            let dir = tempfile::Builder::new()
                .prefix(".bundle-")
                .tempdir_in(job_dir)
                .with_context(|| {
                    format!("{}: cannot create a scratch directory", job_dir.display())
                })?;
            let path = dir.path().join("bundle.tar.gz");
            if store.get_to_file(&key, cap, &path)?.is_none() {
                return Err(gone());
            }
            _scratch = Some(dir);
            path
        }
    };
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(gone()),
        Err(e) => return Err(e).with_context(|| format!("{}", path.display())),
    };
    // The bytes are parsed while they are hashed; nothing read is used unless the digest is
    // the signed record's (the safe reader is built for hostile input either way).
    let mut hashing = HashingReader::new(BufReader::new(file).take(cap + 1));
    let mut manifest_bytes: Option<Vec<u8>> = None;
    let mut redacted = RedactedLines::new();
    let mut kept: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut markers = MarkerLines::new();
    let read = read_members(&mut hashing, &limits, &AllowedNames::Bundle, |m, r| {
        if m.path == "manifest.json" {
            let max = airlock_core::format::MAX_MANIFEST_BYTES as u64;
            let mut buf = Vec::new();
            r.take(max + 1)
                .read_to_end(&mut buf)
                .map_err(|e| TarError::io(Some(&m.path), "read", e))?;
            manifest_bytes = Some(buf);
        } else if let Some(rel) = m.path.strip_prefix("files/") {
            let io = |e| TarError::io(Some(&m.path), "read", e);
            let lines = if wanted.contains(rel) && m.size <= MAX_BLOB_BYTES {
                let mut bytes = Vec::with_capacity(usize::try_from(m.size).unwrap_or(0));
                r.take(MAX_BLOB_BYTES + 1)
                    .read_to_end(&mut bytes)
                    .map_err(io)?;
                let lines = markers.in_bytes(&bytes);
                kept.insert(rel.to_owned(), bytes);
                lines
            } else {
                markers.in_reader(r).map_err(io)?
            };
            if !lines.is_empty() {
                redacted.insert(rel.to_owned(), lines);
            }
        }
        Ok(())
    });
    // Hash what the reader left (trailing bytes, a refused archive's rest) up to the cap.
    let _ = std::io::copy(&mut hashing, &mut std::io::sink());
    let (_, digest, size) = hashing.finish();
    if size > cap || digest != record.bundle_sha256 {
        report.push(Reason::new(
            code::BUNDLE_DIGEST,
            Verdict::Reject,
            format!(
                "{key} hashes to sha256:{digest}{}; the signed job record says sha256:{}",
                if size > cap {
                    " (over the size cap)"
                } else {
                    ""
                },
                record.bundle_sha256
            ),
        ));
        return Ok(None);
    }
    if let Err(e) = read {
        let rule = e.rule().id();
        report.push(
            Reason::new(
                code::BUNDLE_REFUSED,
                Verdict::Reject,
                e.with_label("bundle.tar.gz").to_string(),
            )
            .rule(rule),
        );
        return Ok(None);
    }
    let parsed = manifest_bytes
        .as_deref()
        .map(Manifest::from_json)
        .transpose();
    let manifest = match parsed {
        Ok(Some(m)) => m,
        Ok(None) => {
            report.push(Reason::new(
                code::BUNDLE_REFUSED,
                Verdict::Reject,
                "bundle.tar.gz has no manifest.json",
            ));
            return Ok(None);
        }
        Err(e) => {
            report.push(Reason::new(
                code::BUNDLE_REFUSED,
                Verdict::Reject,
                e.to_string(),
            ));
            return Ok(None);
        }
    };
    if manifest.source.revision != record.revision {
        report.push(Reason::new(
            code::BUNDLE_REFUSED,
            Verdict::Reject,
            format!(
                "manifest.json names revision {}; the job record says {}",
                manifest.source.revision, record.revision
            ),
        ));
        return Ok(None);
    }
    for r in &manifest.redactions {
        redacted.entry(r.path.clone()).or_default().insert(r.line);
    }
    // A file's packed bytes are its blob at the revision unless they were redacted (or
    // simply hold a marker); the manifest says its mode and that it was packed.
    let mut packed = PackedFiles::new();
    for (path, bytes) in kept {
        let Some(entry) = manifest.file(&path) else {
            continue;
        };
        if redacted.contains_key(&path) || entry.size != bytes.len() as u64 {
            continue;
        }
        let mode = if entry.executable() {
            FileMode::Executable
        } else {
            FileMode::Regular
        };
        packed.insert(path, (bytes, mode));
    }
    Ok(Some(BundleView {
        manifest,
        redacted,
        packed,
    }))
}

/// Finds the lines holding a redaction marker (the marker holds no newline, so a line holds
/// one exactly when the marker occurs between two newlines). One buffer serves every member.
struct MarkerLines {
    finder: memchr::memmem::Finder<'static>,
    buf: Vec<u8>,
}

impl MarkerLines {
    /// Bytes read per step from a member that is not kept.
    const CHUNK: usize = 16 * 1024;

    fn new() -> MarkerLines {
        MarkerLines {
            finder: memchr::memmem::Finder::new(REDACTION_MARKER),
            buf: Vec::new(),
        }
    }

    /// 1-based numbers of the lines of `bytes` holding a marker.
    fn in_bytes(&self, bytes: &[u8]) -> BTreeSet<u64> {
        let mut out = BTreeSet::new();
        self.scan(bytes, 1, &mut out);
        out
    }

    /// [`MarkerLines::in_bytes`] of what `r` yields, read in chunks; a marker split between
    /// two reads is found, because the last `marker - 1` bytes of each chunk start the next.
    fn in_reader(&mut self, r: &mut dyn Read) -> std::io::Result<BTreeSet<u64>> {
        let keep_max = REDACTION_MARKER.len() - 1;
        self.buf.resize(keep_max + Self::CHUNK, 0);
        let mut out = BTreeSet::new();
        let (mut kept, mut line) = (0usize, 1u64);
        loop {
            let n = match r.read(&mut self.buf[kept..]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let filled = kept + n;
            let keep = keep_max.min(filled);
            let data = &self.buf[..filled];
            self.scan(data, line, &mut out);
            line += memchr::memchr_iter(b'\n', &data[..filled - keep]).count() as u64;
            self.buf.copy_within(filled - keep..filled, 0);
            kept = keep;
        }
        Ok(out)
    }

    /// Adds the numbers of the lines of `data` holding a marker, `data` starting on line
    /// `first_line`.
    fn scan(&self, data: &[u8], first_line: u64, out: &mut BTreeSet<u64>) {
        let (mut line, mut counted) = (first_line, 0usize);
        for at in self.finder.find_iter(data) {
            line += memchr::memchr_iter(b'\n', &data[counted..at]).count() as u64;
            counted = at;
            out.insert(line);
        }
    }
}

/// Step 2. The fetch read the artifact through the safe reader (every tar rule, exact member
/// names) and re-hashed it on the way; `patch.diff` must be there and within the cap. Returns
/// its bytes, or `None` after pushing a reject.
fn check_patch_member(patch: Option<Vec<u8>>, report: &mut GateReport) -> Option<Vec<u8>> {
    let Some(bytes) = patch else {
        report.push(
            Reason::new(
                code::ARTIFACT_INCOMPLETE,
                Verdict::Reject,
                "artifact.tar.gz has no patch.diff",
            )
            .rule("artifact.missing-member"),
        );
        return None;
    };
    if bytes.len() as u64 > MAX_PATCH_BYTES {
        report.push(
            Reason::new(
                code::ARTIFACT_INCOMPLETE,
                Verdict::Reject,
                format!("patch.diff is larger than {MAX_PATCH_BYTES} bytes"),
            )
            .rule(airlock_core::diff::rule::TOO_LARGE),
        );
        return None;
    }
    Some(bytes)
}

/// Step 10: one policy reason per changed path, the changed-file table, new dependencies.
/// The content hint is the new content (added, modified) or the old one (deleted), when the
/// apply step produced them; for added files it can also be read from the patch itself.
fn classify_and_decide(
    patch: &ParsedPatch,
    files: &std::collections::BTreeMap<String, AppliedFile>,
    policy: &Policy,
    report: &mut GateReport,
) {
    for fp in &patch.files {
        let applied = files.get(&fp.path);
        let from_patch;
        let hint: Option<&[u8]> = match (fp.kind, applied) {
            (FileKind::Deleted, Some(a)) => a.old.as_deref(),
            (_, Some(a)) => a.new.as_deref(),
            (FileKind::Added, None) => {
                from_patch = airlock_core::diff::apply_file(None, fp).ok().flatten();
                from_patch.as_deref()
            }
            _ => None,
        };
        let class = classify_path(&fp.path, hint);
        let decided = policy.decide_path(&fp.path, &class);
        let verdict = decided.verdict;
        report.push(from_policy(decided, Some(class.rule)));
        report.files.push(ChangedFile {
            path: fp.path.clone(),
            kind: fp.kind.as_str(),
            bucket: class.bucket,
            class_rule: class.rule,
            verdict,
            lines_added: fp.added,
            lines_removed: fp.removed,
            new_mode: fp.new_mode.map(|m| m.as_str()),
        });
        if let Some(a) = applied {
            match deps::new_dependencies(&fp.path, a.old.as_deref(), a.new.as_deref()) {
                Ok(list) => report.new_dependencies.extend(list),
                Err(e) => report.push(
                    Reason::new(code::DEPS_UNPARSED, Verdict::Human, e.to_string())
                        .at(&fp.path)
                        .rule("deps.unparsed"),
                ),
            }
        }
    }
}

/// A policy reason in the report's shape.
fn from_policy(r: super::policy::Reason, class_rule: Option<&str>) -> Reason {
    Reason {
        code: r.code.code(),
        verdict: r.verdict,
        detail: r.detail,
        path: r.path,
        rule: class_rule.map(str::to_owned),
    }
}

/// Step 11, the ledger's half: `model-drift` when the model reported answers this job's model
/// request for the first time (`drift.rs`). An unreadable history is a warning, not an error.
fn check_model_drift(
    store: &Store,
    key: &SigningKey,
    fetched: &Fetched,
    policy: &Policy,
    report: &mut GateReport,
) {
    let job = &fetched.record.job;
    match super::drift::ModelHistory::read(store, &key.public(), job) {
        Ok(history) => report.reasons.extend(history.check(
            &fetched.record.model_requested,
            &fetched.packet.model_reported,
            policy.model_drift_verdict(),
        )),
        Err(e) => report.warnings.push(format!(
            "model history unavailable, model drift not checked: {e:#}"
        )),
    }
}

fn fill_bom_from_record(report: &mut GateReport, record: &JobRecord) {
    let b = &mut report.bom;
    b.prompt_sha256 = Some(record.prompt_sha256);
    b.model_requested = Some(record.model_requested.clone());
    b.revision = Some(record.revision.clone());
    b.bundle_sha256 = Some(record.bundle_sha256);
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

/// The review commit: subject, the notable reasons, and the trailers.
fn review_commit<'a>(report: &GateReport, fetched: &'a Fetched, j: &'a Judged) -> ReviewCommit<'a> {
    let st = report.stats;
    let mut message = format!(
        "airlock: job {} ({})\n\nGenerated on an untrusted worker; gated by {}: {} files, +{} -{}.\n",
        fetched.record.job, report.decision, super::report::GATE_VERSION, st.files_changed, st.lines_added, st.lines_removed
    );
    let notable: Vec<&Reason> = report
        .reasons
        .iter()
        .filter(|r| r.verdict != Verdict::Queue)
        .take(20)
        .collect();
    if !notable.is_empty() {
        message.push('\n');
        for r in notable {
            let path = r
                .path
                .as_deref()
                .map(|p| format!(" {p}"))
                .unwrap_or_default();
            message.push_str(&format!("- {} {}{path}\n", r.verdict, r.code));
        }
    }
    let record = &fetched.record;
    ReviewCommit {
        job: record.job.as_str(),
        revision: &record.revision,
        expected_tree: j.tree.as_deref().unwrap_or(""),
        patch_bytes: &j.patch_bytes,
        message,
        trailers: vec![
            ("Airlock-Job", record.job.to_string()),
            ("Airlock-Bundle", format!("sha256:{}", record.bundle_sha256)),
            (
                "Airlock-Artifact",
                format!("sha256:{}", fetched.artifact_sha256),
            ),
            ("Airlock-Model-Requested", record.model_requested.clone()),
            (
                "Airlock-Model-Reported",
                fetched.packet.model_reported.clone(),
            ),
            ("Airlock-Decision", report.decision.to_string()),
            (
                "Airlock-Gate-Version",
                super::report::GATE_VERSION.to_owned(),
            ),
        ],
        date_unix: fetched.landed_at,
    }
}

/// Step 14: a `gate` entry when a patch was read (`digests` = artifact and diff sha256), and a
/// `reject` entry for every rejection (stage `fetch` for a fetch refusal, `gate` otherwise),
/// naming the first rejecting reason's code.
fn record_in_ledger(
    store: &Store,
    key: &SigningKey,
    job: &JobId,
    report: &GateReport,
    (fetch_event, tail): (Option<Event>, Option<ledger::TailProbe>),
    digests: Option<(Sha256Digest, Sha256Digest)>,
    now: u64,
) -> Result<()> {
    let mut events: Vec<Event> = fetch_event.into_iter().collect();
    if let Some((artifact_sha256, diff_sha256)) = digests {
        let reasons = report
            .reasons
            .iter()
            .map(|r| match &r.path {
                Some(p) => format!("{} {}: {}", r.code, p, r.detail),
                None => format!("{}: {}", r.code, r.detail),
            })
            .collect();
        events.push(Event::Gate {
            decision: report.decision.to_string(),
            reasons,
            policy_sha256: report
                .bom
                .policy_sha256
                .unwrap_or_else(|| Sha256Digest::of_bytes(b"")),
            gate_version: super::report::GATE_VERSION.to_owned(),
            artifact_sha256,
            diff_sha256,
        });
    }
    if report.decision == Verdict::Reject {
        if let Some(r) = report.first_decisive() {
            let stage = if checks::FETCH_CODES.contains(&r.code) {
                "fetch"
            } else {
                "gate"
            };
            let detail = match &r.rule {
                Some(rule) => format!("[{rule}] {}", r.detail),
                None => r.detail.clone(),
            };
            events.push(Event::Reject {
                stage: stage.to_owned(),
                reason_code: r.code.to_owned(),
                detail,
            });
        }
    }
    match tail {
        Some(tail) => drop(ledger::append_all_after(
            store, key, job, events, now, tail,
        )?),
        None => drop(ledger::append_all(store, key, job, events, now)?),
    };
    Ok(())
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
