//! `airlock resubmit JOB`: dispatch a job's bundle and request again under a new job, e.g.
//! after its worker was preempted. The new job gets its own id, job key, token and model key;
//! its ledger `submit` entry names JOB in `redispatch_of`.
//!
//! Guards against: re-dispatching bytes other than the ones JOB was submitted with (the
//! inbox bundle must hash to JOB's signed record, its envelope must verify under the trusted
//! key and name JOB, and its `request.json` must hash to the record's digest), and one
//! worker's token serving two jobs (nothing of JOB's token is reused: the bundle is copied
//! to the new job's inbox and its statement signed again for the new job).
//! Does not check: whether JOB's first worker is really gone; its token stays valid until it
//! expires, and whichever artifact lands is judged under its own job.

use std::io::{BufReader, Read};

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, verify_envelope, Statement};
use airlock_core::format::{
    BundlePredicate, Request, MAX_ENVELOPE_BYTES, MAX_REQUEST_BYTES, PREDICATE_BUNDLE,
};
use airlock_core::jobid::JobId;
use airlock_core::limits::TarLimits;
use airlock_core::store_layout as layout;
use airlock_core::tar::{read_members, AllowedNames};
use airlock_core::Verified;
use anyhow::{bail, Context, Result};

use crate::config::GlobalOptions;
use crate::config::Home;
use crate::exit::Outcome;
use crate::submit::{Bundle, Dispatch};

/// What `airlock resubmit` is asked to do.
#[derive(Debug, Clone)]
pub struct ResubmitOptions {
    /// The job to dispatch again.
    pub job: String,
    /// How long the new token stays valid: 90s, 20m, 1h (max 24h); `None`: as long as the
    /// original job's token was.
    pub ttl: Option<String>,
    /// Also write the new token to this file (created new, mode 0600).
    pub token_out: Option<std::path::PathBuf>,
    /// Print the new token (it carries the new model key, if one is minted): only when asked.
    pub print_token: bool,
    /// Print the result as JSON (the token only with `print_token`).
    pub json: bool,
}

/// `airlock resubmit JOB`.
pub fn run(global: &GlobalOptions, args: &ResubmitOptions) -> Result<Outcome> {
    let home = Home::load(&global.home)?;
    crate::submit::check_token_destination(
        args.token_out.is_some(),
        args.print_token,
        args.json,
        home.config.model_key.is_some(),
    )?;
    let key = home.signing_key()?;
    let store = home.open_store()?;
    let old = JobId::parse(&args.job)?;
    let ttl = args
        .ttl
        .as_deref()
        .map(crate::submit::check_ttl)
        .transpose()?;
    let token_slot = args
        .token_out
        .as_deref()
        .map(crate::submit::SecretSlot::claim)
        .transpose()?;
    let out = redispatch(&home, &store, &key, &old, ttl, token_slot, None)?;
    crate::submit::print_submitted(&out, args.json, args.print_token)?;
    Ok(Outcome::Ok)
}

/// Dispatches `old`'s verified bundle and request again under a new job (the part of
/// `resubmit` the fleet's re-dispatch of a lost worker's job shares). `ttl`: `None` is the
/// original token lifetime.
pub(crate) fn redispatch(
    home: &Home,
    store: &crate::store::Store,
    key: &airlock_core::keys::SigningKey,
    old: &JobId,
    ttl: Option<u64>,
    token_slot: Option<crate::submit::SecretSlot>,
    resume: Option<crate::submit::Resume>,
) -> Result<crate::submit::Submitted> {
    let old = old.clone();
    let record = crate::fetch::load_record(store, &key.public(), &old)?;
    let ttl = ttl.unwrap_or_else(|| original_ttl(&record));

    let staging = tempfile::tempdir().context("cannot create a staging directory")?;
    let bundle_path = staging.path().join("bundle.tar.gz");
    let limits = TarLimits::bundle();
    let cap = limits.max_stream_bytes();
    let (digest, bytes) = store
        .get_to_file(&layout::inbox_bundle(&old), cap, &bundle_path)?
        .with_context(|| format!("job {old}: its bundle is gone from the inbox (garbage-collected?): pack it again with `airlock submit`"))?;
    if digest != record.bundle_sha256 {
        return Err(crate::exit::Refused(format!(
            "job {old}: the inbox bundle hashes to sha256:{digest}, not the recorded sha256:{} (bundle-digest-mismatch): refusing to dispatch it",
            record.bundle_sha256
        ))
        .into());
    }
    let env_bytes = store
        .get_bytes(
            &layout::inbox_bundle_envelope(&old),
            MAX_ENVELOPE_BYTES as u64,
        )?
        .with_context(|| format!("job {old}: its bundle envelope is gone from the inbox"))?;
    let statement = verify_envelope(&env_bytes, &[key.public()], MAX_ENVELOPE_BYTES)
        .with_context(|| format!("job {old}: bundle envelope refused"))?;
    if statement.subject_digest(crate::pack::BUNDLE_FILE) != Some(record.bundle_sha256) {
        bail!("job {old}: the bundle envelope names another bundle (bundle-digest-mismatch)");
    }
    let predicate: Verified<BundlePredicate> = statement
        .expect_predicate(PREDICATE_BUNDLE)
        .with_context(|| format!("job {old}: bundle envelope refused"))?;
    if predicate.job != old || predicate.request_sha256 != record.request_sha256 {
        bail!("job {old}: the bundle envelope names another job or request (record.job)");
    }
    let request_json = request_bytes(&bundle_path, &limits)?;
    if Sha256Digest::of_bytes(&request_json) != record.request_sha256 {
        bail!("job {old}: request.json does not hash to the recorded digest (record.request)");
    }
    let request = Request::from_json(&request_json)?;

    let job = crate::pack::new_job_id()?;
    let new_predicate = BundlePredicate {
        job: job.clone(),
        ..(*predicate).clone()
    };
    let new_statement = Statement::new(
        crate::pack::BUNDLE_FILE,
        record.bundle_sha256,
        PREDICATE_BUNDLE,
        serde_json::to_value(&new_predicate)?,
    );
    let envelope = dsse::sign_statement(&new_statement, key).to_json_pretty();
    crate::submit::dispatch(
        store,
        key,
        Dispatch {
            job,
            bundle: Bundle {
                path: bundle_path,
                sha256: digest,
                bytes,
                request_sha256: record.request_sha256,
                revision: record.revision.clone(),
            },
            envelope,
            request,
            ttl,
            model_key: home.config.model_key.as_ref(),
            redispatch_of: Some(old),
            token_slot,
            home: Some(&home.dir),
            resume,
        },
    )
}

/// The raw bytes of `request.json`, read through the safe reader.
fn request_bytes(bundle: &std::path::Path, limits: &TarLimits) -> Result<Vec<u8>> {
    let file = std::fs::File::open(bundle)
        .with_context(|| format!("{}: cannot open", bundle.display()))?;
    let mut reader = BufReader::new(file);
    let mut found = None;
    read_members(&mut reader, limits, &AllowedNames::Bundle, |m, r| {
        if m.path == "request.json" {
            let mut buf = Vec::new();
            r.take(MAX_REQUEST_BYTES as u64 + 1).read_to_end(&mut buf)?;
            found = Some(buf);
        }
        Ok(())
    })
    .map_err(|e| anyhow::anyhow!("{}", e.with_label("bundle.tar.gz")))?;
    found.context("bundle.tar.gz has no request.json")
}

/// The original job's token lifetime (its record's `expires_at - issued_at`), held to the
/// token's bounds (1 s to 24 h).
fn original_ttl(record: &airlock_core::format::JobRecord) -> u64 {
    record
        .expires_at
        .saturating_sub(record.issued_at)
        .clamp(1, airlock_core::token::MAX_LIFETIME_SECS)
}
