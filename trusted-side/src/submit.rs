//! `airlock submit`: pack, upload to the inbox, write the signed job record, mint the token.
//!
//! Guards against: a worker holding more than one job's worth of access (the token carries
//! only URLs for this job's objects: GET for the bundle and its envelope, PUT for its drop
//! objects, expiring with the token; never a store credential), and a fetcher on another host
//! not knowing which key must sign the artifact (the job record, trusted-signed, names it).

use std::path::PathBuf;
use std::time::Duration;

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, Statement};
use airlock_core::format::{JobRecord, Request, JOB_RECORD_FORMAT, PREDICATE_JOB_RECORD};
use airlock_core::keys::SigningKey;
use airlock_core::store_layout as layout;
use airlock_core::token::{mint_token, BundleRef, DropTargets, JobClaims, JobKey};
use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::cli::{GlobalArgs, SubmitArgs};
use crate::config::Home;
use crate::exit::Outcome;
use crate::pack::{self, PackOptions, PackSummary};
use crate::store::{Access, Store};

/// What `submit` printed.
#[derive(Serialize)]
pub struct Submitted {
    /// The job id.
    pub job: String,
    /// The token (a bearer secret for this one job).
    pub token: String,
    /// Unix seconds when it expires.
    pub expires_at: u64,
    /// Where the token was also written, if asked.
    pub token_file: Option<PathBuf>,
    /// The pack summary.
    pub pack: PackSummary,
}

/// Parses `20m`, `90s`, `1h`, `3600`.
pub fn parse_duration(s: &str) -> Result<u64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, 's')) => (&s[..i], 1),
        Some((i, 'm')) => (&s[..i], 60),
        Some((i, 'h')) => (&s[..i], 3600),
        Some((i, 'd')) => (&s[..i], 86_400),
        _ => (s, 1),
    };
    let n: u64 = num
        .parse()
        .with_context(|| format!("duration {s:?}: expected e.g. 90s, 20m, 1h, 7d"))?;
    n.checked_mul(mult)
        .with_context(|| format!("duration {s:?} is too long"))
}

/// The current time in unix seconds.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `airlock submit`.
pub fn run(global: &GlobalArgs, args: &SubmitArgs) -> Result<Outcome> {
    let home = Home::load(&global.home)?;
    let key = home.signing_key()?;
    let store = home.open_store()?;
    let cache = crate::pack::cache::dir(&home.dir);
    let out = submit_job_cached(&store, &key, args, global.quiet || args.json, cache)?;
    if !global.quiet {
        warn_if_dirty(args, &out.pack.revision);
    }
    if args.json {
        crate::output::print_json(&out)?;
    } else {
        println!("job {}", out.job);
        println!("  revision {} ({})", out.pack.revision, args.pack.rev);
        println!(
            "  bundle   sha256:{} ({} files)",
            out.pack.bundle_sha256, out.pack.files
        );
        println!(
            "  expires  {}",
            airlock_core::jobid::rfc3339_utc(out.expires_at)
        );
        match &out.token_file {
            Some(p) => println!("  token    written to {} (0600)", p.display()),
            None => println!("  token    {}", out.token),
        }
    }
    Ok(Outcome::Ok)
}

/// Packing reads the committed tree only: say so when HEAD was packed from a working tree
/// with changes the user may have meant to send.
fn warn_if_dirty(args: &SubmitArgs, revision: &str) {
    if args.pack.rev != "HEAD" {
        return;
    }
    let Ok(repo) = crate::git::Repo::open(&args.pack.repo) else {
        return;
    };
    match repo.uncommitted_paths() {
        Ok(0) | Err(_) => {}
        Ok(n) => eprintln!(
            "warning: {}: {n} uncommitted path(s) in the working tree were not packed; the job has revision {revision} (commit them and submit again to include them)",
            args.pack.repo.display()
        ),
    }
}

/// Packs, uploads, records and mints; see the module doc.
pub fn submit_job(
    store: &Store,
    key: &SigningKey,
    args: &SubmitArgs,
    quiet: bool,
) -> Result<Submitted> {
    submit_job_cached(store, key, args, quiet, None)
}

/// [`submit_job`], reusing the `files/` part of earlier packs kept in `cache_dir`; see
/// [`crate::pack::cache`].
pub fn submit_job_cached(
    store: &Store,
    key: &SigningKey,
    args: &SubmitArgs,
    quiet: bool,
    cache_dir: Option<PathBuf>,
) -> Result<Submitted> {
    let ttl = parse_duration(&args.ttl)?;
    if ttl == 0 || ttl > airlock_core::token::MAX_LIFETIME_SECS {
        bail!("--ttl must be between 1s and 24h");
    }
    let prompt = pack::read_prompt(&args.pack.prompt_file)?;
    // Every output is claimed before anything is created: an existing --token-out refuses
    // the job here, not after the bundle, record and ledger entry exist with the token lost.
    let token_slot = args
        .token_out
        .as_deref()
        .map(SecretSlot::claim)
        .transpose()?;
    let repo_dir = crate::config::absolute(&args.pack.repo)?;
    let repo_name = match &args.pack.repo_name {
        Some(n) => n.clone(),
        None => repo_dir
            .file_name()
            .map_or_else(|| "repo".to_owned(), |n| n.to_string_lossy().into_owned()),
    };
    let job = pack::new_job_id()?;
    let request = Request {
        limits: args.pack.limits.to_job_limits(),
        egress: args.pack.egress.clone(),
        ..Request::new(prompt, args.pack.model.clone())
    };
    let opts = PackOptions {
        repo: &repo_dir,
        rev: &args.pack.rev,
        repo_name,
        request: request.clone(),
        include: &args.pack.include,
        exclude: &args.pack.exclude,
        redact: args.pack.redact,
        max_file_bytes: args.pack.max_file_bytes,
        job: job.clone(),
        quiet,
        cache_dir,
        // The staging directory is uploaded and deleted: nothing there needs to survive a crash.
        durable: false,
    };
    let staging = tempfile::tempdir().context("cannot create a staging directory")?;
    let summary = pack::pack_bundle(&opts, key, staging.path())?;

    // Upload bundle, then its envelope; then the record; the token last.
    store.put_file(&layout::inbox_bundle(&job), &summary.bundle_path)?;
    store.put_bytes(
        &layout::inbox_bundle_envelope(&job),
        &std::fs::read(&summary.envelope_path)?,
    )?;
    let job_key = SigningKey::generate();
    let issued_at = now_unix();
    let expires_at = issued_at + ttl;
    let record = JobRecord {
        format: JOB_RECORD_FORMAT.to_owned(),
        job: job.clone(),
        job_public_key: job_key.public().raw_hex(),
        bundle_sha256: summary.bundle_sha256,
        request_sha256: summary.request_sha256,
        prompt_sha256: Sha256Digest::of_bytes(request.prompt.as_bytes()),
        model_requested: request.model.clone(),
        revision: summary.revision.clone(),
        issued_at,
        expires_at,
        limits: request.limits.clone(),
    };
    let statement = Statement::new(
        "bundle.tar.gz",
        summary.bundle_sha256,
        PREDICATE_JOB_RECORD,
        serde_json::to_value(&record)?,
    );
    let envelope = dsse::sign_statement(&statement, key).to_json_pretty();
    if !store.put_new(&layout::job_record(&job), &envelope)? {
        bail!("job {job}: a record already exists (job ids are random: this should not happen)");
    }

    let ttl_d = Duration::from_secs(ttl);
    let claims = JobClaims {
        job: job.clone(),
        bundle: BundleRef {
            url: store.worker_url(&layout::inbox_bundle(&job), Access::Get, ttl_d)?,
            sha256: summary.bundle_sha256,
            max_bytes: summary.bundle_bytes,
        },
        bundle_envelope_url: store.worker_url(
            &layout::inbox_bundle_envelope(&job),
            Access::Get,
            ttl_d,
        )?,
        drop: DropTargets {
            checkpoint: store.worker_url(&layout::drop_checkpoint(&job), Access::Put, ttl_d)?,
            checkpoint_envelope: store.worker_url(
                &layout::drop_checkpoint_envelope(&job),
                Access::Put,
                ttl_d,
            )?,
            artifact: store.worker_url(&layout::drop_artifact(&job), Access::PutNew, ttl_d)?,
            artifact_envelope: store.worker_url(
                &layout::drop_artifact_envelope(&job),
                Access::PutNew,
                ttl_d,
            )?,
        },
        job_key: JobKey::from_signing_key(&job_key),
        limits: request.limits.clone(),
    };
    let token = mint_token(key, &claims, issued_at, ttl).context("cannot mint the job token")?;
    drop(job_key);

    crate::ledger::append(
        store,
        key,
        &job,
        crate::ledger::Event::Submit {
            prompt_sha256: record.prompt_sha256,
            prompt: request.prompt.clone(),
            model_requested: request.model.clone(),
            bundle_sha256: summary.bundle_sha256,
            request_sha256: summary.request_sha256,
            revision: summary.revision.clone(),
            expires_at,
        },
        issued_at,
    )?;

    let token_file = match token_slot {
        Some(slot) => Some(slot.fill(token.expose())?),
        None => None,
    };
    Ok(Submitted {
        job: job.to_string(),
        token: token.expose().to_owned(),
        expires_at,
        token_file,
        pack: summary,
    })
}

/// A secret file created empty (new, mode 0600) before the work that produces its content;
/// removed again if dropped unfilled, so a failed command leaves no empty file behind.
struct SecretSlot {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl SecretSlot {
    fn claim(path: &std::path::Path) -> Result<SecretSlot> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .with_context(|| {
                format!("{}: cannot create (refusing to overwrite)", path.display())
            })?;
        Ok(SecretSlot {
            path: path.to_owned(),
            file: Some(file),
        })
    }

    fn fill(mut self, text: &str) -> Result<PathBuf> {
        use std::io::Write;
        let f = self.file.as_mut().context("secret file already written")?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.write_all(b"\n"))
            .and_then(|()| f.sync_all())
            .with_context(|| format!("{}: cannot write", self.path.display()))?;
        self.file = None;
        Ok(std::mem::take(&mut self.path))
    }
}

impl Drop for SecretSlot {
    fn drop(&mut self) {
        if self.file.is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
