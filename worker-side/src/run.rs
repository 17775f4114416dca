//! `airlock-worker run`: one job, from token to dropped artifact.
//!
//! Steps, in order (the body of [`run_job`] is these calls):
//! 1. verify the token against the pinned trusted key (signature, audience, expiry, claims);
//!    refuse a job whose final artifact is already in the store (`worker.finished`); check
//!    the `--readable` roots, `--allow-local` grants and `--home-template` (nothing fetched
//!    yet);
//! 2. make a fresh, locked run directory (leftovers of dead runs removed first) and reserve the
//!    disk space the end of the run needs (`disk`);
//! 3. fetch the bundle with the token's size cap; its SHA-256 must equal the token's;
//! 4. fetch and verify `bundle.dsse.json` with the pinned key; it must name this bundle and job;
//! 5. unpack the bundle straight into the workdir with the safe reader, checking every file
//!    against the manifest; manifest and request must match the statement;
//! 6. write the prompt and make the generator's private HOME (from the template);
//! 7. run the generator in the sandbox, checkpointing every N seconds, stopping it at the
//!    job's disk ceiling or a full disk;
//! 8. release the reserve; diff the workdir against the pristine tree (new paths the packed `.gitignore` files
//!    ignore left out unread), build the packet, sign and drop the artifact (out of disk: an
//!    empty patch, then no log either, `limits_hit: disk`); say how the generator ended
//!    (`outcome`);
//! 9. remove the run directory (also on error and on SIGTERM/SIGINT).
//!
//! Guards against: running anything on unverified input (steps 1-5 all precede 7, and a
//! refusal in any of them leaves no drop object and no run directory), a token or bundle meant
//! for another job, a token reaching the generator (never in its environment, its file out of
//! the sandbox's reach), and leaving the bundle's contents on the host.

use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

use airlock_core::clock::{now_unix, now_unix_ms as now_ms};
use airlock_core::diff::{write_tree_diff, DiffOptions, DiffStats};
use airlock_core::digest::{HashingWriter, Sha256Digest};
use airlock_core::dsse::verify_envelope;
use airlock_core::format::{
    self, BundlePredicate, ExitInfo, ExitKind, Packet, Request, Timings, MAX_ENVELOPE_BYTES,
    MODEL_UNREPORTED, PACKET_FORMAT, PREDICATE_BUNDLE,
};
use airlock_core::keys::{load_public_key, PublicKey};
use airlock_core::store_layout as layout;
use airlock_core::token::{verify_token, JobClaims};
use airlock_core::Verified;
use anyhow::{bail, Context, Result};

use crate::artifact::{self, DropKind};
use crate::generate::{self, GeneratorRun, Report};
use crate::options::{JobOptions, RunOptions};
use crate::outcome::RunOutcome;
use crate::tree::Base;
use crate::workspace::{self, RunDir, Termination};

/// Largest token file accepted.
const MAX_TOKEN_FILE_BYTES: u64 = 64 * 1024;

/// Refusal: the job already has a final artifact (`worker.finished`; exit code 4).
#[derive(Debug)]
pub struct AlreadyFinished {
    /// The job.
    pub job: String,
}

impl std::fmt::Display for AlreadyFinished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let job = &self.job;
        write!(
            f,
            "job {job}: refused (worker.finished): the job already has a final artifact in the store; nothing was run. Fetch it with `airlock fetch {job}`, or re-dispatch the job to run it again"
        )
    }
}

impl std::error::Error for AlreadyFinished {}

/// Whether the job's final artifact already landed (the envelope is written last; a
/// `file://` store is also looked at for the tarball, which a write-once drop would refuse).
fn already_finished(claims: &JobClaims) -> bool {
    let d = &claims.drop;
    let mut urls: Vec<&str> = Vec::new();
    if d.artifact_envelope.starts_with("file://") {
        urls.extend([d.artifact_envelope.as_str(), d.artifact.as_str()]);
    }
    if let Some(get) = &d.artifact_envelope_get {
        urls.push(get);
    }
    urls.into_iter()
        .any(|u| crate::transfer::exists(u) == Some(true))
}

/// Where the token came from: decides what the sandbox must keep out of reach.
#[derive(Debug, Clone, Default)]
pub struct TokenOrigin {
    /// Given on the command line (`--token`): visible in `/proc/<pid>/cmdline`.
    pub argv: bool,
    /// Files and directories that hold it (the token file, the tickets directory).
    pub paths: Vec<PathBuf>,
}

/// `airlock-worker run`: reads the token from `--token`, `--token-file` or `AIRLOCK_JOB_TOKEN`.
pub fn run_cli(args: &RunOptions) -> Result<RunOutcome> {
    generate::check_pass_env(&args.job.pass_env)?;
    let token = read_token(args.token.as_deref(), args.token_file.as_deref())?;
    let origin = TokenOrigin {
        argv: args.token.is_some(),
        paths: args.token_file.iter().cloned().collect(),
    };
    let term = Termination::install()?;
    let outcome = run_job(&token, &origin, &args.job, &term)?;
    eprintln!("{}", outcome.message());
    Ok(outcome)
}

/// Reads the token from the flag, the file, or the environment, in that order.
pub fn read_token(flag: Option<&str>, file: Option<&Path>) -> Result<String> {
    let raw = if let Some(t) = flag {
        t.to_owned()
    } else if let Some(path) = file {
        let f = std::fs::File::open(path)
            .with_context(|| format!("{}: cannot read token file", path.display()))?;
        let mut s = String::new();
        f.take(MAX_TOKEN_FILE_BYTES)
            .read_to_string(&mut s)
            .with_context(|| format!("{}: token file is not UTF-8", path.display()))?;
        s
    } else if let Ok(t) = std::env::var("AIRLOCK_JOB_TOKEN") {
        t
    } else {
        bail!("no job token: pass --token-file FILE, --token T, or set AIRLOCK_JOB_TOKEN");
    };
    Ok(raw.trim().to_owned())
}

fn new_run_id() -> Result<String> {
    use rand_core::RngCore;
    let mut r = [0u8; 8];
    rand_core::OsRng
        .try_fill_bytes(&mut r)
        .map_err(|e| anyhow::anyhow!("no OS randomness: {e}"))?;
    Ok(hex::encode(r))
}

/// Everything verified about the job before the generator may start.
pub struct VerifiedJob {
    /// Token claims (verified).
    pub claims: Verified<JobClaims>,
    /// The request from the bundle (bound to the signed statement by digest).
    pub request: Request,
    /// The pristine tree (manifest + pack); the workdir holds a checked copy.
    pub base: Base,
}

/// Logs how long a step took (debug level; ids, never payloads).
fn step(t: &mut Instant, name: &str) {
    tracing::debug!(ms = t.elapsed().as_millis() as u64, "step {name}");
    *t = Instant::now();
}

fn check_term(term: &Termination) -> Result<()> {
    if term.requested() {
        bail!("terminated by signal; run directory removed, nothing dropped");
    }
    Ok(())
}

/// Runs one job. See the module doc for the steps.
pub fn run_job(
    token: &str,
    origin: &TokenOrigin,
    args: &JobOptions,
    term: &Termination,
) -> Result<RunOutcome> {
    let started_at_ms = now_ms();
    let mut t = Instant::now();
    // 1. The token, against the pinned key.
    let trusted = load_public_key(&args.trusted_pub).context("trusted public key")?;
    let claims = verify_token(token, &trusted, now_unix())
        .map_err(|e| anyhow::anyhow!("refused before running anything: {e}"))?;
    // The formats the trusted side reads: write one of them or refuse now (token.formats).
    format::negotiate(claims.formats.as_deref())
        .map_err(|e| anyhow::anyhow!("refused before running anything: {e}"))?;
    step(&mut t, "token");
    // A finished job is never run again (its generator would spend model tokens for a drop
    // that is write-once).
    if already_finished(&claims) {
        return Err(AlreadyFinished {
            job: claims.job.to_string(),
        }
        .into());
    }
    // The generator's readable roots, its home template and local grants, before anything
    // is fetched.
    let mut secret_paths = secret_paths(args);
    secret_paths.extend(
        origin
            .paths
            .iter()
            .filter_map(|p| std::path::absolute(p).ok()),
    );
    let readable = crate::readable::check_roots(&args.readable, &secret_paths)?;
    crate::needs::check(&args.generator, &readable)?;
    let local = generate::check_allow_local(&args.allow_local)?;
    let home_template = match &args.home_template {
        Some(dir) => {
            let key = key_body(&args.trusted_pub);
            let secrets: [&[u8]; 2] = [token.as_bytes(), key.as_bytes()];
            Some(crate::home::check(dir, &secrets, &secret_paths)?)
        }
        None => None,
    };
    // 2. A fresh run directory.
    // Absolute before anything is fetched: the sandbox takes absolute paths only, and a
    // relative root would otherwise fail only after the bundle was downloaded and unpacked.
    let root = match &args.work_root {
        Some(dir) => std::path::absolute(dir)
            .with_context(|| format!("--work-root {}: cannot resolve", dir.display()))?,
        None => workspace::default_root(),
    };
    workspace::prepare_root(&root)?;
    workspace::remove_leftovers(&root);
    let run_id = new_run_id()?;
    let run_dir = RunDir::create(&root, &run_id)?;
    // Room to finish, taken before anything else can fill the disk (released at step 8).
    let mut reserve =
        crate::disk::Reserve::allocate(run_dir.path(), crate::disk::reserve_bytes(&claims.limits))?;
    tracing::info!(job = %claims.job, run = %run_id, "job accepted");
    step(&mut t, "run dir");
    // 3-5. Bundle: fetch, verify, unpack into the workdir.
    let work = run_dir.path().join("work");
    let job = fetch_and_verify(claims, &trusted, run_dir.path(), &work)?;
    step(&mut t, "fetch, verify, unpack");
    // 5b. A re-dispatched job resumes from the gated checkpoint its token pins (resume.rs).
    crate::resume::apply(&job.claims, run_dir.path(), &work, generator_owner())?;
    check_term(term)?;
    // 6. The prompt.
    let tmp = run_dir.path().join("tmp");
    std::fs::create_dir(&tmp)?;
    let prompt_file = tmp.join("prompt.txt");
    std::fs::write(&prompt_file, &job.request.prompt)?;
    let home = crate::home::make(&tmp, home_template.as_ref())?;
    let job_key = job.claims.job_key.signing_key()?;

    // 7. The generator, checkpointing.
    let ignore_new = crate::gitignore::Rules::from_base(&job.base)?.into_filter();
    let mut ctx = RunContext {
        ignore_new,
        job: &job,
        job_key: &job_key,
        run_id: &run_id,
        run_dir: run_dir.path(),
        work: &work,
        started_at_ms,
        checkpoints: 0,
        last_slot: None,
    };
    let disk = crate::disk::DiskWatch::start(
        run_dir.path(),
        &[&work, &tmp],
        job.request.limits.max_disk_bytes,
    );
    let gen = generate::run_generator(
        &generate::GeneratorSetup {
            command: &args.generator,
            workdir: &work,
            tmp: &tmp,
            prompt_file: &prompt_file,
            log: &run_dir.path().join("generator.log"),
            pass_env: &args.pass_env,
            limits: &job.request.limits,
            unsafe_no_sandbox: args.unsafe_no_sandbox,
            secret_paths,
            token_on_argv: origin.argv,
            egress: &job.request.egress,
            readable: &readable,
            home: &home,
            local: &local,
            model_key: generate::model_key_var(
                job.request.model_key_env.as_deref(),
                job.claims.model_key.as_ref(),
            )?,
            disk: &disk,
            model: Some(job.request.model.as_str())
                .filter(|m| *m != airlock_core::model::MODEL_UNSPECIFIED),
        },
        term,
        &mut |elapsed_ms, sandbox| ctx.checkpoint(elapsed_ms, sandbox),
    )?;
    step(&mut t, "generator");
    if term.requested() {
        // An eviction notice (SIGTERM): the work so far goes out as a last checkpoint (one
        // diff and one upload, bounded by the transfer's retries) for a resume elsewhere.
        match ctx.checkpoint(gen.elapsed_ms, &gen.sandbox) {
            Ok(()) => eprintln!("terminated by signal: a final checkpoint was dropped"),
            Err(e) => tracing::warn!("final checkpoint failed: {e:#}"),
        }
    }
    check_term(term)?;
    // 8. Diff, packet, sign, drop (in the room the reserve kept).
    reserve.release()?;
    let report = generate::read_report(&tmp);
    let readable = format::reads_comments(job.claims.formats.as_deref());
    let comments = crate::comments::collect(&tmp, &work, run_dir.path(), readable)?;
    let packet = ctx.finish(&gen, &report, &comments)?;
    step(&mut t, "diff, pack, sign, drop");
    let log_tail = crate::outcome::log_tail(&run_dir.path().join("generator.log"));
    // 9. `run_dir` is removed when dropped, here and on every early return.
    Ok(RunOutcome {
        job: job.claims.job.to_string(),
        exit: packet.exit,
        wall_clock_secs: job.request.limits.wall_clock_secs,
        limits_hit: packet.limits_hit,
        files_changed: packet.files_changed,
        comments: packet.comments,
        review_edits: packet.review_edits,
        ignored: packet.ignored,
        partial: packet.partial,
        log_tail,
        egress_refused: packet
            .egress
            .iter()
            .filter(|a| !a.allowed)
            .map(|a| (a.destination.clone(), a.reason.clone().unwrap_or_default()))
            .collect(),
    })
}

/// The base64 body of a PEM key file (what a copy of the key would contain), or empty.
fn key_body(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<String>()
}

/// Paths the generator must never reach besides the token's: the trusted key, this binary.
fn secret_paths(args: &JobOptions) -> Vec<PathBuf> {
    let mut v = vec![args.trusted_pub.clone()];
    if let Ok(exe) = std::env::current_exe() {
        v.push(exe);
    }
    v.into_iter()
        .filter_map(|p| std::path::absolute(p).ok())
        .collect()
}

/// Steps 3-5.
fn fetch_and_verify(
    claims: Verified<JobClaims>,
    trusted: &PublicKey,
    run_dir: &Path,
    work: &Path,
) -> Result<VerifiedJob> {
    let bundle_path = run_dir.join("bundle.tar.gz");
    let (digest, _) = crate::transfer::get_to_file(
        &claims.bundle.url,
        "bundle",
        claims.bundle.max_bytes,
        &bundle_path,
    )?;
    claims
        .bundle
        .sha256
        .expect_eq("bundle.tar.gz (token)", digest)
        .context("bundle refused: it is not the bundle the token names (altered in the store, or another job's)")?;
    let env_bytes = crate::transfer::get_bytes(
        &claims.bundle_envelope_url,
        "bundle envelope",
        MAX_ENVELOPE_BYTES as u64,
    )?;
    let statement = verify_envelope(
        &env_bytes,
        std::slice::from_ref(trusted),
        MAX_ENVELOPE_BYTES,
    )
    .context("bundle.dsse.json refused")?;
    let signed = statement
        .subject_digest("bundle.tar.gz")
        .context("bundle.dsse.json refused (bundle.subject): it names no bundle.tar.gz")?;
    signed
        .expect_eq("bundle.tar.gz (statement)", digest)
        .context("bundle.dsse.json refused: it was signed for another bundle")?;
    let predicate: Verified<BundlePredicate> = statement
        .expect_predicate(PREDICATE_BUNDLE)
        .context("bundle.dsse.json refused")?;
    if predicate.job != claims.job {
        bail!(
            "bundle refused (bundle.job): the bundle was signed for job {}, the token is for {}",
            predicate.job,
            claims.job
        );
    }

    let bundle = crate::tree::unpack_bundle(
        &bundle_path,
        work,
        &run_dir.join("base.pack"),
        generator_owner(),
    )?;
    std::fs::remove_file(&bundle_path)?;
    predicate
        .manifest_sha256
        .expect_eq("manifest.json", bundle.manifest_sha256)
        .context("bundle refused")?;
    predicate
        .request_sha256
        .expect_eq("request.json", bundle.request_sha256)
        .context("bundle refused")?;
    Ok(VerifiedJob {
        claims,
        request: bundle.request,
        base: bundle.base,
    })
}

/// Who the workdir's files will belong to when the generator starts: a root worker's sandbox
/// hands them to its unprivileged identity (`airlock-sandbox`), which the unpack does as it
/// writes them (the hand-over then leaves them as they are).
fn generator_owner() -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    let id = airlock_sandbox::DEFAULT_UNPRIVILEGED_ID;
    root.then_some((id, id))
}

/// A patch written to disk, with its account.
struct PatchFile {
    path: PathBuf,
    stats: DiffStats,
    sha256: Sha256Digest,
}

/// What the run did, for the packet.
struct RunFacts<'a> {
    exit: ExitInfo,
    limits_hit: Vec<String>,
    report: &'a Report,
    generator_ms: u64,
    sandbox: &'a str,
    partial: bool,
    /// Comments kept and refused; edits a review job made (left out of its diff).
    comments: (u64, u64, u64),
}

struct RunContext<'a> {
    /// The packed revision's `.gitignore` rules, for new paths.
    ignore_new: Option<airlock_core::diff::IgnoreNew>,
    job: &'a VerifiedJob,
    job_key: &'a airlock_core::keys::SigningKey,
    run_id: &'a str,
    run_dir: &'a Path,
    work: &'a Path,
    started_at_ms: u64,
    checkpoints: u64,
    /// The checkpoint slot holding this run's latest complete pair, if one was dropped.
    last_slot: Option<u8>,
}

impl RunContext<'_> {
    /// Whether this is a review job (comments only; no diff).
    fn review(&self) -> bool {
        self.job.request.kind == airlock_core::format::JobKind::Review
    }

    fn packet(&self, patch: &PatchFile, facts: RunFacts<'_>) -> Packet {
        let RunFacts {
            exit,
            limits_hit,
            report,
            generator_ms,
            sandbox,
            partial,
            comments: (comments, comments_refused, review_edits),
        } = facts;
        Packet {
            format: PACKET_FORMAT.to_owned(),
            job: self.job.claims.job.clone(),
            run_id: self.run_id.to_owned(),
            bundle_sha256: self.job.claims.bundle.sha256,
            model_requested: self.job.request.model.clone(),
            model_reported: report
                .model
                .clone()
                .unwrap_or_else(|| MODEL_UNREPORTED.to_owned()),
            tokens_in: report.tokens_in,
            tokens_out: report.tokens_out,
            models: report.models.clone(),
            diff_sha256: patch.sha256,
            files_changed: patch.stats.files_changed,
            lines_added: patch.stats.lines_added,
            lines_removed: patch.stats.lines_removed,
            refused: patch.stats.refused.clone(),
            ignored: patch.stats.ignored,
            limits_hit,
            exit,
            timings: Timings {
                started_at_ms: self.started_at_ms,
                finished_at_ms: now_ms(),
                generator_ms,
            },
            worker_version: env!("CARGO_PKG_VERSION").to_owned(),
            sandbox: sandbox.to_owned(),
            egress: Vec::new(),
            partial,
            comments,
            comments_refused,
            review_edits,
            resumed_from: self
                .job
                .claims
                .resume
                .as_ref()
                .map(airlock_core::format::ResumedFrom::of_claim),
        }
    }

    /// Rebuilds the pristine tree beside the workdir and streams the patch to a file.
    fn diff(&self) -> Result<PatchFile> {
        let before = self.run_dir.join("before");
        let made = self.job.base.build_before(self.work, &before)?;
        tracing::debug!(
            linked = made.linked,
            written = made.written,
            unchanged_tops = made.unchanged_tops.len(),
            "before tree"
        );
        let mut opts = DiffOptions::for_job(&self.job.request.limits);
        opts.ignore = made.unchanged_tops;
        opts.ignore_new = Some(crate::comments::without_comments(self.ignore_new.clone()));
        opts.max_diff_bytes = opts
            .max_diff_bytes
            .min(self.job.request.limits.max_artifact_bytes);
        let path = self.run_dir.join("patch.diff");
        let _ = std::fs::remove_file(&path);
        let file = std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("{}: cannot create", path.display()))?;
        let mut out = HashingWriter::new(BufWriter::new(file));
        let stats = write_tree_diff(&before, self.work, &opts, &mut out)?;
        let (buf, sha256, _) = out.finish();
        buf.into_inner()
            .map_err(|e| anyhow::anyhow!("cannot write the patch: {}", e.error()))?;
        Ok(PatchFile {
            path,
            stats,
            sha256,
        })
    }

    /// Writes a checkpoint: the diff so far, `partial: true`, signed, into the slot that does
    /// not hold the latest complete pair, so a kill mid-write leaves that pair verifiable.
    /// A failed write leaves the slot torn; the next goes there again, not over the good one.
    fn checkpoint(&mut self, elapsed_ms: u64, sandbox: &str) -> Result<()> {
        let patch = if self.review() {
            empty_patch()
        } else {
            self.diff()?
        };
        let no_report = Report::default();
        let limits_hit = patch
            .stats
            .limit_hit
            .iter()
            .map(|l| l.as_str().to_owned())
            .collect();
        let packet = self.packet(
            &patch,
            RunFacts {
                exit: ExitInfo {
                    kind: ExitKind::Running,
                    code: None,
                },
                limits_hit,
                report: &no_report,
                generator_ms: elapsed_ms,
                sandbox,
                partial: true,
                comments: (0, 0, 0),
            },
        );
        self.checkpoints += 1;
        // A token of a release before 0.6.0 names one checkpoint slot.
        let slots = if self.job.claims.drop.checkpoint_1.is_empty() {
            1
        } else {
            layout::CHECKPOINT_SLOTS
        };
        let slot = match self.last_slot {
            Some(last) => (last + 1) % slots,
            None => 0,
        };
        let kind = DropKind::Checkpoint {
            slot,
            seq: self.checkpoints,
        };
        let path = self.run_dir.join("checkpoint.tar.gz");
        let _ = std::fs::remove_file(&path);
        let reader = format::negotiate(self.job.claims.formats.as_deref())?;
        let patch_path = (!self.review()).then_some(patch.path.as_path());
        let built = artifact::build(&path, &packet, reader, patch_path, None, None)?;
        artifact::sign_and_drop(&self.job.claims, self.job_key, kind, &built, &packet)?;
        self.last_slot = Some(slot);
        let _ = std::fs::remove_file(&path);
        tracing::info!(n = self.checkpoints, slot, "checkpoint dropped");
        Ok(())
    }

    /// Builds, signs and drops the final artifact. Returns its packet.
    ///
    /// Out of disk while building it (after a disk limit, or `ENOSPC` on the way), the run's
    /// scratch files go and it is built again with an empty patch, then without the log too:
    /// what is dropped carries a whole diff or none, never a cut one.
    fn finish(
        &mut self,
        gen: &GeneratorRun,
        report: &Report,
        comments: &crate::comments::Collected,
    ) -> Result<Packet> {
        let disk_hit = gen
            .limits_hit
            .iter()
            .any(|l| l == crate::disk::DISK || l == crate::disk::INODES);
        let mut keep = Keep::PatchAndLog;
        let (packet, built) = loop {
            match self.build_final(gen, report, comments, keep) {
                Ok(done) => break done,
                Err(e) if disk_hit || crate::disk::is_out_of_space(&e) => {
                    let Some(next) = keep.less() else {
                        return Err(e);
                    };
                    tracing::warn!("out of disk while building the artifact ({e:#}); building it with {next:?}");
                    self.remove_scratch();
                    keep = next;
                }
                Err(e) => return Err(e),
            }
        };
        let t = Instant::now();
        artifact::sign_and_drop(
            &self.job.claims,
            self.job_key,
            DropKind::Final,
            &built,
            &packet,
        )?;
        tracing::debug!(ms = t.elapsed().as_millis() as u64, "step sign and drop");
        Ok(packet)
    }

    /// Removes what building an artifact leaves in the run directory.
    fn remove_scratch(&self) {
        for f in ["patch.diff", "artifact.tar.gz"] {
            let _ = std::fs::remove_file(self.run_dir.join(f));
        }
        let _ = crate::workspace::remove_all(&self.run_dir.join("before"));
    }

    /// Builds the final artifact with what `keep` says.
    fn build_final(
        &mut self,
        gen: &GeneratorRun,
        report: &Report,
        comments: &crate::comments::Collected,
        keep: Keep,
    ) -> Result<(Packet, artifact::Built)> {
        let limits = &self.job.request.limits;
        let mut limits_hit: Vec<String> = gen.limits_hit.clone();
        let mut patch = if keep == Keep::PatchAndLog {
            let t = Instant::now();
            let patch = self.diff()?;
            tracing::debug!(ms = t.elapsed().as_millis() as u64, "step diff");
            if let Some(l) = patch.stats.limit_hit {
                limits_hit.push(l.as_str().to_owned());
            }
            patch
        } else {
            if !limits_hit.iter().any(|l| l == crate::disk::DISK) {
                limits_hit.push(crate::disk::DISK.to_owned());
            }
            empty_patch()
        };
        // A review job may not change files: its edits are left out, counted for the gate.
        let mut review_edits = 0;
        if self.review() && patch.stats.files_changed + patch.stats.refused.len() as u64 > 0 {
            review_edits = patch.stats.files_changed + patch.stats.refused.len() as u64;
            tracing::warn!("review job: the generator changed {review_edits} file(s); left out of the artifact (review-edited-files)");
            if keep == Keep::PatchAndLog {
                let _ = std::fs::remove_file(&patch.path);
            }
            patch = empty_patch();
        }
        if report
            .tokens_in
            .unwrap_or(0)
            .saturating_add(report.tokens_out.unwrap_or(0))
            > limits.max_tokens
        {
            limits_hit.push("tokens".to_owned());
        }
        let clean_exit = gen.exit.kind == ExitKind::Exited && gen.exit.code == Some(0);
        let partial = !clean_exit || !limits_hit.is_empty();
        let log = self.run_dir.join("generator.log");
        let log = (keep != Keep::Nothing && log.exists()).then_some(log);
        let path = self.run_dir.join("artifact.tar.gz");
        let facts = |limits_hit: Vec<String>, partial: bool| RunFacts {
            exit: gen.exit.clone(),
            limits_hit,
            report,
            generator_ms: gen.elapsed_ms,
            sandbox: &gen.sandbox,
            partial,
            comments: (comments.kept, comments.refused, review_edits),
        };
        let patch_path = (keep == Keep::PatchAndLog && review_edits == 0 && !self.review())
            .then_some(patch.path.as_path());
        let member = comments.member.as_deref();
        let mut packet = self.packet(&patch, facts(limits_hit.clone(), partial));
        packet.egress = gen.egress.clone();
        let reader = format::negotiate(self.job.claims.formats.as_deref())?;
        let mut built =
            artifact::build(&path, &packet, reader, patch_path, log.as_deref(), member)?;
        if built.bytes > limits.max_artifact_bytes {
            // Over the cap: drop the patch and the log, keep the account of what happened.
            std::fs::remove_file(&path)?;
            if patch_path.is_some() {
                let _ = std::fs::remove_file(&patch.path);
            }
            patch = empty_patch();
            limits_hit.push("artifact-bytes".to_owned());
            packet = self.packet(&patch, facts(limits_hit, true));
            packet.egress = gen.egress.clone();
            built = artifact::build(&path, &packet, reader, None, None, member)?;
        }
        Ok((packet, built))
    }
}

/// What the final artifact carries besides its packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// The diff of the workdir and the log.
    PatchAndLog,
    /// An empty patch and the log (out of disk for the diff).
    LogOnly,
    /// An empty patch, no log (out of disk even for the log).
    Nothing,
}

impl Keep {
    /// The next smaller artifact to try.
    fn less(self) -> Option<Keep> {
        match self {
            Keep::PatchAndLog => Some(Keep::LogOnly),
            Keep::LogOnly => Some(Keep::Nothing),
            Keep::Nothing => None,
        }
    }
}

/// The empty patch's account.
fn empty_patch() -> PatchFile {
    PatchFile {
        path: PathBuf::new(),
        stats: DiffStats::default(),
        sha256: Sha256Digest::of_bytes(b""),
    }
}
