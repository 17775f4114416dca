//! `airlock-worker run`: one job, from token to dropped artifact.
//!
//! Steps, in order (the body of [`run_job`] is these calls):
//! 1. verify the token against the pinned trusted key (signature, audience, expiry, claims);
//! 2. make a fresh 0700 run directory (leftovers of dead runs removed first);
//! 3. fetch the bundle with the token's size cap; its SHA-256 must equal the token's;
//! 4. fetch and verify `bundle.dsse.json` with the pinned key; it must name this bundle and job;
//! 5. unpack the bundle with the safe reader; manifest and request must match the statement;
//! 6. copy `files/` into the workdir, write the prompt;
//! 7. run the generator in the sandbox, checkpointing every N seconds;
//! 8. diff the workdir against the bundle, build the packet, sign and drop the artifact;
//! 9. remove the run directory (also on error and on SIGTERM/SIGINT).
//!
//! Guards against: running anything on unverified input (steps 1-5 all precede 7), a token or
//! bundle meant for another job, and leaving the bundle's contents on the host.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use airlock_core::diff::{diff_trees, DiffOptions};
use airlock_core::digest::{sha256_file, Sha256Digest};
use airlock_core::dsse::verify_envelope;
use airlock_core::format::{
    BundlePredicate, ExitInfo, ExitKind, Manifest, Packet, Request, Timings, MAX_ENVELOPE_BYTES,
    MODEL_UNREPORTED, PACKET_FORMAT, PREDICATE_BUNDLE,
};
use airlock_core::keys::{load_public_key, PublicKey};
use airlock_core::limits::TarLimits;
use airlock_core::tar::{unpack_into, AllowedNames};
use airlock_core::token::{verify_token, JobClaims};
use airlock_core::Verified;
use anyhow::{bail, Context, Result};

use crate::artifact::{self, DropKind};
use crate::cli::{JobArgs, RunArgs};
use crate::generate::{self, GeneratorRun, Report};
use crate::workspace::{self, RunDir, Termination};

/// Largest token file accepted.
const MAX_TOKEN_FILE_BYTES: u64 = 64 * 1024;

/// What a finished job dropped.
#[derive(Debug)]
pub struct Dropped {
    /// The job.
    pub job: String,
    /// Whether the packet says partial.
    pub partial: bool,
}

/// `airlock-worker run`: reads the token from `--token`, `--token-file` or `AIRLOCK_JOB_TOKEN`.
pub fn run_cli(args: &RunArgs) -> Result<Dropped> {
    let token = read_token(args.token.as_deref(), args.token_file.as_deref())?;
    let term = Termination::install()?;
    let dropped = run_job(&token, &args.job, &term)?;
    eprintln!(
        "job {}: artifact dropped{}",
        dropped.job,
        if dropped.partial { " (partial)" } else { "" }
    );
    Ok(dropped)
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

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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
    /// The unpacked tree (`files/`), pristine.
    pub base: PathBuf,
}

/// Runs one job. See the module doc for the steps.
pub fn run_job(token: &str, args: &JobArgs, term: &Termination) -> Result<Dropped> {
    let started_at_ms = now_ms();
    let trusted = load_public_key(&args.trusted_pub).context("trusted public key")?;
    let claims = verify_token(token, &trusted, now_unix()).context("job token refused")?;
    let root = args
        .work_root
        .clone()
        .unwrap_or_else(workspace::default_root);
    workspace::prepare_root(&root)?;
    workspace::remove_leftovers(&root);
    let run_id = new_run_id()?;
    let run_dir = RunDir::create(&root, &run_id)?;
    tracing::info!(job = %claims.job, run = %run_id, "job accepted");

    let job = fetch_and_verify(claims, &trusted, run_dir.path())?;
    let work = run_dir.path().join("work");
    copy_tree(&job.base, &work)?;
    let tmp = run_dir.path().join("tmp");
    std::fs::create_dir(&tmp)?;
    let prompt_file = tmp.join("prompt.txt");
    std::fs::write(&prompt_file, &job.request.prompt)?;
    let job_key = job.claims.job_key.signing_key()?;

    let mut ctx = RunContext {
        job: &job,
        job_key: &job_key,
        run_id: &run_id,
        run_dir: run_dir.path(),
        started_at_ms,
        checkpoints: 0,
    };
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
            secret_paths: secret_paths(args),
        },
        term,
        &mut |elapsed_ms| ctx.checkpoint(&work, elapsed_ms),
    )?;
    if term.requested() {
        bail!("terminated by signal; run directory removed, nothing dropped");
    }
    let report = generate::read_report(&tmp);
    let partial = ctx.finish(&work, &gen, &report)?;
    Ok(Dropped {
        job: job.claims.job.to_string(),
        partial,
    })
}

/// Paths the generator must never reach: the token file, the trusted key, this binary.
fn secret_paths(args: &JobArgs) -> Vec<PathBuf> {
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
        .context("bundle refused")?;
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
        .context("bundle.dsse.json names no bundle.tar.gz")?;
    signed
        .expect_eq("bundle.tar.gz (statement)", digest)
        .context("bundle refused")?;
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

    let unpacked = run_dir.join("bundle");
    let file = std::fs::File::open(&bundle_path)?;
    unpack_into(
        std::io::BufReader::new(file),
        &unpacked,
        &TarLimits::bundle(),
        &AllowedNames::Bundle,
    )
    .map_err(|e| e.with_label("bundle.tar.gz"))?;
    std::fs::remove_file(&bundle_path)?;
    let manifest_path = unpacked.join("manifest.json");
    let request_path = unpacked.join("request.json");
    let (manifest_sha, _) = sha256_file(&manifest_path).context("bundle has no manifest.json")?;
    let (request_sha, _) = sha256_file(&request_path).context("bundle has no request.json")?;
    predicate
        .manifest_sha256
        .expect_eq("manifest.json", manifest_sha)?;
    predicate
        .request_sha256
        .expect_eq("request.json", request_sha)?;
    let request = Request::from_json(&std::fs::read(&request_path)?)?;
    let manifest = Manifest::from_json(&std::fs::read(&manifest_path)?)?;
    check_tree_matches_manifest(&unpacked.join("files"), &manifest)?;
    Ok(VerifiedJob {
        claims,
        request,
        base: unpacked.join("files"),
    })
}

/// Every file the manifest lists is present with its size and digest, and nothing else is.
fn check_tree_matches_manifest(files: &Path, manifest: &Manifest) -> Result<()> {
    let mut count = 0usize;
    for entry in &manifest.files {
        let p = files.join(&entry.path);
        let (d, n) = sha256_file(&p)
            .with_context(|| format!("bundle refused (bundle.manifest): {} missing", entry.path))?;
        if n != entry.size || d != entry.sha256 {
            bail!(
                "bundle refused (bundle.manifest): {} differs from the manifest",
                entry.path
            );
        }
        count += 1;
    }
    let on_disk = count_files(files)?;
    if on_disk != count {
        bail!("bundle refused (bundle.manifest): {on_disk} files unpacked, manifest lists {count}");
    }
    Ok(())
}

fn count_files(dir: &Path) -> Result<usize> {
    if !dir.exists() {
        return Ok(0);
    }
    let mut n = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            if e.file_type()?.is_dir() {
                stack.push(e.path());
            } else {
                n += 1;
            }
        }
    }
    Ok(n)
}

/// Copies the pristine tree into the workdir (regular files and directories only: the
/// unpacked bundle holds nothing else).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir(to).with_context(|| format!("{}: cannot create", to.display()))?;
    if !from.exists() {
        return Ok(());
    }
    let mut stack = vec![(from.to_owned(), to.to_owned())];
    while let Some((src, dst)) = stack.pop() {
        for e in std::fs::read_dir(&src)? {
            let e = e?;
            let ty = e.file_type()?;
            let target = dst.join(e.file_name());
            if ty.is_dir() {
                std::fs::create_dir(&target)?;
                stack.push((e.path(), target));
            } else if ty.is_file() {
                std::fs::copy(e.path(), &target)?;
            }
        }
    }
    Ok(())
}

/// What the run did, for the packet.
struct RunFacts<'a> {
    exit: ExitInfo,
    limits_hit: Vec<String>,
    report: &'a Report,
    generator_ms: u64,
    sandbox: &'a str,
    partial: bool,
}

struct RunContext<'a> {
    job: &'a VerifiedJob,
    job_key: &'a airlock_core::keys::SigningKey,
    run_id: &'a str,
    run_dir: &'a Path,
    started_at_ms: u64,
    checkpoints: u64,
}

impl RunContext<'_> {
    fn packet(
        &self,
        patch: &[u8],
        stats: &airlock_core::diff::DiffStats,
        facts: RunFacts<'_>,
    ) -> Packet {
        let RunFacts {
            exit,
            limits_hit,
            report,
            generator_ms,
            sandbox,
            partial,
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
            diff_sha256: Sha256Digest::of_bytes(patch),
            files_changed: stats.files_changed,
            lines_added: stats.lines_added,
            lines_removed: stats.lines_removed,
            refused: stats.refused.clone(),
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
        }
    }

    fn diff(&self, work: &Path) -> Result<airlock_core::diff::TreeDiff> {
        let mut opts = DiffOptions::for_job(&self.job.request.limits);
        opts.max_diff_bytes = opts
            .max_diff_bytes
            .min(self.job.request.limits.max_artifact_bytes);
        Ok(diff_trees(&self.job.base, work, &opts)?)
    }

    /// Writes a checkpoint: the diff so far, `partial: true`, signed, overwriting the last.
    fn checkpoint(&mut self, work: &Path, elapsed_ms: u64) -> Result<()> {
        let d = self.diff(work)?;
        let no_report = Report::default();
        let packet = self.packet(
            &d.patch,
            &d.stats,
            RunFacts {
                exit: ExitInfo {
                    kind: ExitKind::Running,
                    code: None,
                },
                limits_hit: d
                    .stats
                    .limit_hit
                    .iter()
                    .map(|l| l.as_str().to_owned())
                    .collect(),
                report: &no_report,
                generator_ms: elapsed_ms,
                sandbox: "pending",
                partial: true,
            },
        );
        self.checkpoints += 1;
        let path = self
            .run_dir
            .join(format!("checkpoint-{}.tar.gz", self.checkpoints));
        let built = artifact::build(&path, &packet, &d.patch, None)?;
        artifact::sign_and_drop(
            &self.job.claims,
            self.job_key,
            DropKind::Checkpoint,
            &built,
            &packet,
        )?;
        let _ = std::fs::remove_file(&path);
        tracing::info!(n = self.checkpoints, "checkpoint dropped");
        Ok(())
    }

    /// Builds, signs and drops the final artifact. Returns whether it is partial.
    fn finish(&mut self, work: &Path, gen: &GeneratorRun, report: &Report) -> Result<bool> {
        let limits = &self.job.request.limits;
        let d = self.diff(work)?;
        let mut limits_hit: Vec<String> = gen.limits_hit.clone();
        if let Some(l) = d.stats.limit_hit {
            limits_hit.push(l.as_str().to_owned());
        }
        if report.tokens_in.unwrap_or(0) + report.tokens_out.unwrap_or(0) > limits.max_tokens {
            limits_hit.push("tokens".to_owned());
        }
        let clean_exit = gen.exit.kind == ExitKind::Exited && gen.exit.code == Some(0);
        let mut patch = d.patch;
        let mut stats = d.stats;
        let partial = !clean_exit || !limits_hit.is_empty();
        let log = self.run_dir.join("generator.log");
        let log = log.exists().then_some(log);
        let path = self.run_dir.join("artifact.tar.gz");
        let mut packet = self.packet(
            &patch,
            &stats,
            RunFacts {
                exit: gen.exit.clone(),
                limits_hit: limits_hit.clone(),
                report,
                generator_ms: gen.elapsed_ms,
                sandbox: &gen.sandbox,
                partial,
            },
        );
        let mut built = artifact::build(&path, &packet, &patch, log.as_deref())?;
        if built.bytes > limits.max_artifact_bytes {
            // Over the cap: drop the patch and the log, keep the account of what happened.
            std::fs::remove_file(&path)?;
            patch.clear();
            stats = airlock_core::diff::DiffStats::default();
            limits_hit.push("artifact-bytes".to_owned());
            packet = self.packet(
                &patch,
                &stats,
                RunFacts {
                    exit: gen.exit.clone(),
                    limits_hit,
                    report,
                    generator_ms: gen.elapsed_ms,
                    sandbox: &gen.sandbox,
                    partial: true,
                },
            );
            built = artifact::build(&path, &packet, &patch, None)?;
        }
        artifact::sign_and_drop(
            &self.job.claims,
            self.job_key,
            DropKind::Final,
            &built,
            &packet,
        )?;
        Ok(packet.partial)
    }
}
