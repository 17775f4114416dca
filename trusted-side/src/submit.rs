//! `airlock submit`: pack, upload to the inbox, write the signed job record, mint the token
//! (and, when `.airlock/config.toml` says how, the job's scoped model key).
//!
//! Guards against: a worker holding more than one job's worth of access (the token carries
//! only URLs for this job's objects: GET for the bundle and its envelope, PUT for its drop
//! objects, expiring with the token; never a store credential), and a fetcher on another host
//! not knowing which key must sign the artifact (the job record, trusted-signed, names it),
//! an `--egress` destination the worker's proxy would always refuse being accepted silently
//! (`egress_check`), and a model key landing anywhere but the token (the bundle's
//! request names its variable, the ledger its fingerprint).

use std::path::{Path, PathBuf};
use std::time::Duration;

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, Statement};
use airlock_core::format::{JobRecord, Request, ResumedFrom};
use airlock_core::format::{JOB_RECORD_FORMAT, PREDICATE_JOB_RECORD};
use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;
use airlock_core::store_layout as layout;
use airlock_core::token::{mint_token, BundleRef, DropTargets, JobClaims, JobKey, ModelKey};
use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::config::GlobalOptions;
use crate::config::Home;
use crate::egress_check::check_egress_reachable;
use crate::exit::Outcome;
use crate::model_key::ModelKeyConfig;
use crate::pack::PackInputs;
use crate::pack::{self, PackOptions, PackSummary};
use crate::store::{Access, Store};

/// What `submit` printed.
#[derive(Serialize)]
pub struct Submitted {
    /// The job id.
    pub job: String,
    /// The token (a bearer secret for this one job, carrying the job's model key when one was
    /// minted): printed only with `--print-token` ([`print_submitted`]).
    #[serde(skip)]
    pub token: String,
    /// Unix seconds when it expires.
    pub expires_at: u64,
    /// Where the token was also written, if asked.
    pub token_file: Option<PathBuf>,
    /// SHA-256 of the bundle dispatched.
    pub bundle_sha256: Sha256Digest,
    /// The pack summary (`submit`; `resubmit` dispatches a bundle packed earlier).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pack: Option<PackSummary>,
    /// Fingerprint of the job's model key (`sha256:` + 16 hex digits), if one was minted.
    pub model_key_fingerprint: Option<String>,
    /// The job this one dispatches again, for `resubmit`.
    pub redispatch_of: Option<String>,
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

/// What `airlock submit` is asked to do.
#[derive(Debug, Clone)]
pub struct SubmitOptions {
    /// What to pack.
    pub pack: PackInputs,
    /// How long the job token (and every URL in it) stays valid: 90s, 20m, 1h (max 24h).
    pub ttl: String,
    /// Also write the token to this file (created new, mode 0600).
    pub token_out: Option<PathBuf>,
    /// Print the token (it carries the job's model key, if one is minted): only when asked.
    pub print_token: bool,
    /// Print the result as JSON (the token only with `print_token`).
    pub json: bool,
    /// What the job may return: `change` (a diff) or `review` (comments only).
    pub kind: airlock_core::format::JobKind,
    /// Queue the job for the fleet (`fleet::submit`; `airlock watch` seals its token to a
    /// worker). [`run`] refuses it.
    pub fleet: bool,
    /// With `fleet`: only a worker whose heartbeat claims this label gets the job.
    pub label: Option<String>,
}

/// Refuses, before anything is packed or minted, a run whose token would reach no one or be
/// printed unasked: with `--json` or a model key minted, the token goes to `--token-out` or is
/// printed with `--print-token`; a token carrying a model key is never printed by default
/// (`docs/THREAT-MODEL.md` P17).
pub fn check_token_destination(
    token_out: bool,
    print_token: bool,
    json: bool,
    model_key: bool,
) -> Result<()> {
    if token_out || print_token || !(json || model_key) {
        return Ok(());
    }
    let why = if model_key {
        "the token carries the job's model key"
    } else {
        "--json does not print the token"
    };
    bail!("{why}: pass --token-out FILE (0600) to hand it to a worker, or --print-token to print it (submit.token-destination)")
}

/// `airlock submit`.
pub fn run(global: &GlobalOptions, args: &SubmitOptions) -> Result<Outcome> {
    anyhow::ensure!(
        !args.fleet,
        "a fleet job is queued by fleet::submit, not dispatched here"
    );
    let home = Home::load(&global.home)?;
    check_token_destination(
        args.token_out.is_some(),
        args.print_token,
        args.json,
        home.config.model_key.is_some(),
    )?;
    let key = home.signing_key()?;
    let store = home.open_store()?;
    let cache = crate::pack::cache::dir(&home.dir);
    let out = submit_job_cached(
        &store,
        &key,
        args,
        home.config.model_key.as_ref(),
        global.quiet || args.json,
        cache,
        Some(&home.dir),
    )?;
    if !global.quiet {
        if let Some(p) = &out.pack {
            warn_if_dirty(args, &p.revision);
        }
    }
    print_submitted(&out, args.json, args.print_token)?;
    Ok(Outcome::Ok)
}

/// Prints what `submit` or `resubmit` did: the token only with `print_token`, or in text when
/// it went to no file and carries no model key ([`check_token_destination`] refused the rest).
pub fn print_submitted(out: &Submitted, json: bool, print_token: bool) -> Result<()> {
    if json {
        let mut v = serde_json::to_value(out)?;
        if print_token {
            if let Some(m) = v.as_object_mut() {
                m.insert("token".into(), out.token.clone().into());
            }
        }
        return crate::output::print_json(&v);
    }
    println!("job {}", out.job);
    if let Some(of) = &out.redispatch_of {
        println!("  re-dispatch of {of}");
    }
    match &out.pack {
        Some(p) => {
            println!("  revision {}", p.revision);
            println!(
                "  bundle   sha256:{} ({} files)",
                out.bundle_sha256, p.files
            );
        }
        None => println!("  bundle   sha256:{}", out.bundle_sha256),
    }
    if let Some(fp) = &out.model_key_fingerprint {
        println!("  model key {fp} (in the token only)");
    }
    println!(
        "  expires  {}",
        airlock_core::jobid::rfc3339_utc(out.expires_at)
    );
    if let Some(p) = &out.token_file {
        println!("  token    written to {} (0600)", p.display());
    }
    if print_token || (out.token_file.is_none() && out.model_key_fingerprint.is_none()) {
        println!("  token    {}", out.token);
    }
    Ok(())
}

/// Packing reads the committed tree only: say so when HEAD was packed from a working tree
/// with changes the user may have meant to send.
fn warn_if_dirty(args: &SubmitOptions, revision: &str) {
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
    args: &SubmitOptions,
    quiet: bool,
) -> Result<Submitted> {
    submit_job_cached(store, key, args, None, quiet, None, None)
}

/// [`submit_job`], reusing the `files/` part of earlier packs kept in `cache_dir`; see
/// [`crate::pack::cache`]. With `model_key`, each job gets a scoped key minted for it.
pub fn submit_job_cached(
    store: &Store,
    key: &SigningKey,
    args: &SubmitOptions,
    model_key: Option<&ModelKeyConfig>,
    quiet: bool,
    cache_dir: Option<PathBuf>,
    index_home: Option<&Path>,
) -> Result<Submitted> {
    let ttl = check_ttl(&args.ttl)?;
    for rule in &args.pack.egress {
        check_egress_reachable(rule)?;
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
        limits: args.pack.limits.clone(),
        egress: args.pack.egress.clone(),
        model_key_env: model_key.map(|m| m.env.clone()),
        kind: args.kind,
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
    let envelope = std::fs::read(&summary.envelope_path)?;
    let bundle = Bundle {
        path: summary.bundle_path.clone(),
        sha256: summary.bundle_sha256,
        bytes: summary.bundle_bytes,
        request_sha256: summary.request_sha256,
        revision: summary.revision.clone(),
    };
    let mut out = dispatch(
        store,
        key,
        Dispatch {
            job,
            bundle,
            envelope,
            request,
            ttl,
            model_key,
            redispatch_of: None,
            token_slot,
            home: index_home,
            resume: None,
        },
    )?;
    // The gate's index of a large tree's bundle (`gate/index.rs`): without it the gate reads
    // the bundle.
    if let (Some(home), true) = (index_home, summary.files >= crate::gate::index::MIN_FILES) {
        let written = crate::gate::index::write(
            home,
            &repo_dir,
            &summary.bundle_path,
            &summary.bundle_sha256,
            &summary.revision,
        );
        if let (Err(e), false) = (written, quiet) {
            eprintln!("warning: job {}: the gate's index of the bundle was not written ({e:#}); the gate will read the bundle", out.job);
        }
    }
    // The staging directory goes when this returns: no path into it is printed.
    let mut summary = summary;
    summary.bundle_path = PathBuf::new();
    summary.envelope_path = PathBuf::new();
    out.pack = Some(summary);
    Ok(out)
}

/// Parses `--ttl` and holds it to the token's bounds.
pub fn check_ttl(ttl: &str) -> Result<u64> {
    let ttl = parse_duration(ttl)?;
    if ttl == 0 || ttl > airlock_core::token::MAX_LIFETIME_SECS {
        bail!("--ttl must be between 1s and 24h");
    }
    Ok(ttl)
}

/// A packed bundle on local disk, as `dispatch` needs it.
pub struct Bundle {
    /// Where `bundle.tar.gz` is.
    pub path: PathBuf,
    /// Its SHA-256.
    pub sha256: Sha256Digest,
    /// Its size.
    pub bytes: u64,
    /// SHA-256 of its `request.json`.
    pub request_sha256: Sha256Digest,
    /// The packed revision.
    pub revision: String,
}

/// One job to dispatch: a packed bundle (on local disk) and its request, under `job`.
pub(crate) struct Dispatch<'a> {
    /// The new job's id (the bundle's envelope must name it).
    pub job: JobId,
    /// The bundle.
    pub bundle: Bundle,
    /// The bundle's signed envelope, for `job`.
    pub envelope: Vec<u8>,
    /// The request packed in the bundle.
    pub request: Request,
    /// Token lifetime, seconds.
    pub ttl: u64,
    /// How to mint the job's model key, if the request names a variable for one.
    pub model_key: Option<&'a ModelKeyConfig>,
    /// The job this one dispatches again (`airlock resubmit`).
    pub redispatch_of: Option<JobId>,
    /// Where to write the token (0600, created new).
    pub token_slot: Option<SecretSlot>,
    /// The trusted home, which keeps a minted model key until the job ends (`key_leak.rs`).
    pub home: Option<&'a Path>,
    /// A gated checkpoint patch this job resumes from (fleet re-dispatch): uploaded to the
    /// new job's inbox and pinned in its token.
    pub resume: Option<Resume>,
}

/// A checkpoint patch a re-dispatched job resumes from.
pub struct Resume {
    /// The patch bytes (the old job's verified, gated checkpoint `patch.diff`).
    pub patch: Vec<u8>,
    /// The job whose checkpoint it is.
    pub from_job: JobId,
}

/// Uploads the bundle and its envelope, writes the signed job record, mints the model key
/// and the token, and appends the `submit` entry: the part of `submit` that `resubmit` shares.
pub(crate) fn dispatch(store: &Store, key: &SigningKey, d: Dispatch<'_>) -> Result<Submitted> {
    let Dispatch {
        job,
        bundle: summary,
        envelope,
        request,
        ttl,
        model_key,
        redispatch_of,
        token_slot,
        home,
        resume,
    } = d;
    let issued_at = airlock_core::clock::now_unix();
    let expires_at = issued_at + ttl;
    // The model key first: a minting command that fails leaves nothing behind.
    let model_key = match (&request.model_key_env, model_key) {
        (Some(_), Some(config)) => Some(crate::model_key::mint(
            config,
            &crate::model_key::MintFor {
                job: &job,
                model: &request.model,
                ttl_secs: ttl,
                expires_at,
                egress: &request.egress,
            },
        )?),
        (Some(env), None) => bail!("job {job}: the request names a model key variable ({env}) but .airlock/config.toml has no [model_key] to mint one (config.model-key)"),
        (None, _) => None,
    };
    // Upload bundle, then its envelope; then the record; the token last.
    store.put_file(&layout::inbox_bundle(&job), &summary.path)?;
    store.put_bytes(&layout::inbox_bundle_envelope(&job), &envelope)?;
    let resumed_from = resume
        .as_ref()
        .map(|r| ResumedFrom::of_patch(&r.from_job, &r.patch));
    let job_key = SigningKey::generate();
    let record = JobRecord {
        format: JOB_RECORD_FORMAT.to_owned(),
        job: job.clone(),
        job_public_key: job_key.public().raw_hex(),
        bundle_sha256: summary.sha256,
        request_sha256: summary.request_sha256,
        prompt_sha256: Sha256Digest::of_bytes(request.prompt.as_bytes()),
        model_requested: request.model.clone(),
        revision: summary.revision.clone(),
        issued_at,
        expires_at,
        limits: request.limits.clone(),
        kind: request.kind,
        resumed_from: resumed_from.clone(),
    };
    let statement = Statement::new(
        "bundle.tar.gz",
        summary.sha256,
        PREDICATE_JOB_RECORD,
        serde_json::to_value(&record)?,
    );
    let record_envelope = dsse::sign_statement(&statement, key).to_json_pretty();
    if !store.put_new(&layout::job_record(&job), &record_envelope)? {
        bail!("job {job}: a record already exists (job ids are random: this should not happen)");
    }

    let model_key_fingerprint = model_key.as_ref().map(ModelKey::fingerprint);
    if let (Some(home), Some(k)) = (home, &model_key) {
        crate::key_leak::keep(home, &job, k)?;
    }

    let ttl_d = Duration::from_secs(ttl);
    let resume = match resume {
        Some(r) => {
            store.put_bytes(&layout::inbox_resume(&job), &r.patch)?;
            Some(airlock_core::token::ResumeRef {
                url: store.worker_url(&layout::inbox_resume(&job), Access::Get, ttl_d)?,
                sha256: Sha256Digest::of_bytes(&r.patch),
                max_bytes: r.patch.len() as u64,
                from_job: r.from_job,
            })
        }
        None => None,
    };
    let claims = JobClaims {
        job: job.clone(),
        bundle: BundleRef {
            url: store.worker_url(&layout::inbox_bundle(&job), Access::Get, ttl_d)?,
            sha256: summary.sha256,
            max_bytes: summary.bytes,
        },
        bundle_envelope_url: store.worker_url(
            &layout::inbox_bundle_envelope(&job),
            Access::Get,
            ttl_d,
        )?,
        drop: DropTargets {
            checkpoint: store.worker_url(&layout::drop_checkpoint(&job, 0), Access::Put, ttl_d)?,
            checkpoint_envelope: store.worker_url(
                &layout::drop_checkpoint_envelope(&job, 0),
                Access::Put,
                ttl_d,
            )?,
            checkpoint_1: store.worker_url(
                &layout::drop_checkpoint(&job, 1),
                Access::Put,
                ttl_d,
            )?,
            checkpoint_1_envelope: store.worker_url(
                &layout::drop_checkpoint_envelope(&job, 1),
                Access::Put,
                ttl_d,
            )?,
            artifact: store.worker_url(&layout::drop_artifact(&job), Access::PutNew, ttl_d)?,
            artifact_envelope: store.worker_url(
                &layout::drop_artifact_envelope(&job),
                Access::PutNew,
                ttl_d,
            )?,
            // A finished job is refused before its generator starts (worker.finished).
            artifact_envelope_get: Some(store.worker_url(
                &layout::drop_artifact_envelope(&job),
                Access::Get,
                ttl_d,
            )?)
            .filter(|u| !u.starts_with("file://")),
        },
        job_key: JobKey::from_signing_key(&job_key),
        limits: request.limits.clone(),
        model_key,
        // The versions of the worker's documents this trusted side reads (docs/FORMATS.md,
        // "Negotiation").
        formats: Some(
            airlock_core::format::READS
                .iter()
                .map(|v| (*v).to_owned())
                .collect(),
        ),
        resume,
    };
    let token = mint_token(key, &claims, issued_at, ttl).context("cannot mint the job token")?;
    drop(claims);
    drop(job_key);

    crate::ledger::append(
        store,
        key,
        &job,
        crate::ledger::Event::Submit {
            prompt_sha256: record.prompt_sha256,
            prompt: request.prompt.clone(),
            model_requested: request.model.clone(),
            bundle_sha256: summary.sha256,
            request_sha256: summary.request_sha256,
            revision: summary.revision.clone(),
            expires_at,
            model_key_fingerprint: model_key_fingerprint.clone(),
            redispatch_of: redispatch_of.clone(),
            resumed_from,
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
        bundle_sha256: summary.sha256,
        pack: None,
        model_key_fingerprint,
        redispatch_of: redispatch_of.map(|j| j.to_string()),
    })
}

/// A secret file created empty (new, mode 0600) before the work that produces its content;
/// removed again if dropped unfilled, so a failed command leaves no empty file behind.
pub(crate) struct SecretSlot {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl SecretSlot {
    pub(crate) fn claim(path: &std::path::Path) -> Result<SecretSlot> {
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

    pub(crate) fn fill(mut self, text: &str) -> Result<PathBuf> {
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
