//! `airlock fetch JOB`: download the worker's artifact and verify it, trusting none of it.
//!
//! Order (each step fails closed; the first failure is the reason):
//! 1. the job record, signed by the pinned trusted key (names the job key and the bundle);
//! 2. the artifact envelope, verified with the job key from the record and only that key;
//! 3. its statement names `artifact.tar.gz`, this job, this bundle;
//! 4. the artifact, downloaded with a size cap (the job's limit), digest = statement subject;
//! 5. landed inside the token's validity, by the store's own clock (last-modified);
//! 6. `packet.json` read through the safe tar reader from the downloaded copy, re-hashed on the
//!    way (it must still be the verified artifact): digest = statement, job and bundle =
//!    record; the same pass keeps `patch.diff` when the caller asks (the gate);
//! 7. first artifact wins: a different artifact for a job already fetched is tampering; then
//!    the downloaded copy becomes the job directory's `artifact.tar.gz`.
//!
//! `--checkpoint` runs steps 1-6 on each checkpoint slot ([`fetch_checkpoint`], in
//! `fetch/checkpoint.rs`), takes the verified one with the highest sequence number and keeps
//! it apart (`checkpoint.tar.gz`): a partial result is never taken for the final one.
//!
//! Guards against: forged or replayed artifacts (another job's, another key's), artifacts
//! landing after expiry, oversize downloads, and a worker swapping the artifact after a fetch.

use std::path::{Path, PathBuf};

use airlock_core::digest::{sha256_file, Sha256Digest};
use airlock_core::dsse::{self, verify_envelope, Statement};
use airlock_core::format::{
    ArtifactPredicate, JobRecord, Packet, MAX_ENVELOPE_BYTES, PREDICATE_ARTIFACT,
    PREDICATE_JOB_RECORD,
};
use airlock_core::jobid::JobId;
use airlock_core::keys::{PublicKey, SigningKey};
use airlock_core::store_layout as layout;
use airlock_core::Verified;
use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::reasons::ReasonCode;
use crate::store::Store;

mod checkpoint;
mod command;
mod read_back;
pub mod worker_text;

use read_back::read_packet;

pub use checkpoint::fetch_checkpoint;
pub use command::{run, FetchOptions};

/// Seconds of clock skew tolerated between the store and the trusted host.
pub const STORE_SKEW_SECS: u64 = 120;
/// Predicate type of the trusted side's record of the first artifact fetched for a job.
pub const PREDICATE_FETCHED: &str = "urn:airlock:predicate:fetched:v1";
/// Largest `patch.diff` kept; [`Fetched::patch`] holds at most one byte more, for the caller
/// to refuse.
pub const MAX_PATCH_BYTES: u64 = 32 * 1024 * 1024;

/// Characters of a refusal's detail kept for the ledger and the terminal.
const DETAIL_MAX: usize = 1000;

/// The refusal for a store error: a `file://` store's boundary (`store.link`, `store.not-file`,
/// `store.name`) is `drop-not-file`, anything else `fallback`. Only the key and the rule are
/// kept: never a link's target, a size or a digest of what it points to.
fn store_refusal(e: anyhow::Error, what: &str, fallback: ReasonCode) -> FetchError {
    let prefix = if what.is_empty() {
        String::new()
    } else {
        format!("{what}: ")
    };
    match e.downcast_ref::<crate::store::beneath::BeneathError>() {
        Some(crate::store::beneath::BeneathError::Refused(r)) => {
            refuse(ReasonCode::DropNotFile, format!("{prefix}{r}"))
        }
        _ => refuse(fallback, format!("{prefix}{e:#}")),
    }
}

/// Why a fetch refused an artifact: a stable code for the ledger and the exit status.
#[derive(Debug, thiserror::Error)]
#[error("{detail} ({code})")]
pub struct FetchRefused {
    /// Stable code (`artifact-signature`, `artifact-replay`, …; stage `fetch`).
    pub code: ReasonCode,
    /// What was wrong.
    pub detail: String,
    /// The rule id of the format check behind it (`tar.link`, …), when there is one.
    pub rule: Option<&'static str>,
}

/// Why a fetch gave no artifact.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The artifact is refused: a verdict (`reject`), recorded in the ledger.
    #[error("{0}")]
    Refused(FetchRefused),
    /// The fetch could not decide (unknown job, nothing landed yet, store or disk failure).
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// A refusal; its detail (which may quote worker bytes: member names, packet text) becomes one
/// inert line ([`airlock_core::text::detail`]) before it reaches the ledger or a terminal.
fn refuse(code: ReasonCode, detail: impl Into<String>) -> FetchError {
    FetchError::Refused(FetchRefused {
        code,
        detail: airlock_core::text::detail(&detail.into(), DETAIL_MAX),
        rule: None,
    })
}

impl From<std::io::Error> for FetchError {
    fn from(e: std::io::Error) -> FetchError {
        FetchError::Failed(e.into())
    }
}

/// A verified artifact, on local disk in the job directory.
#[derive(Debug)]
pub struct Fetched {
    /// The job record (verified with the trusted key).
    pub record: Verified<JobRecord>,
    /// The packet (from the verified artifact; its claims are still the worker's).
    pub packet: Packet,
    /// Where the artifact is.
    pub artifact_path: PathBuf,
    /// Its digest.
    pub artifact_sha256: Sha256Digest,
    /// Digest of packet.json.
    pub packet_sha256: Sha256Digest,
    /// When it landed (store clock).
    pub landed_at: u64,
    /// `patch.diff`, read in the pass that read the packet, when the caller asked for it:
    /// `None` if the artifact has none, at most [`MAX_PATCH_BYTES`] + 1 bytes.
    pub patch: Option<Vec<u8>>,
    /// The last bytes of `generator.log` (at most `run_account::MAX_TAIL_BYTES`),
    /// read in the same pass; `None` if the artifact has none.
    pub log_tail: Option<Vec<u8>>,
    /// Secret findings in `generator.log` and `review.md` (member, line, rule; never the
    /// value): the gate rejects the job for each (`secret-in-worker-text`).
    pub worker_text_secrets: Vec<worker_text::WorkerTextFinding>,
    /// A checkpoint's signed sequence number in its run (`None` for final artifacts and
    /// older checkpoints).
    pub seq: Option<u64>,
    /// `comments.jsonl` as the worker wrote it (at most its cap + 1 bytes), read in the same
    /// pass; `None` if the artifact has none. The gate checks it (`gate/comments.rs`).
    pub comments: Option<Vec<u8>>,
}

/// Which drop object a fetch reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropObject {
    /// `artifact.tar.gz`: the final result, written once.
    Artifact,
    /// Checkpoint slot `0` (`checkpoint.tar.gz`) or `1` (`checkpoint.1.tar.gz`): a partial
    /// result; the two slots are overwritten in turn while the generator runs.
    Checkpoint(u8),
}

impl DropObject {
    fn subject(self) -> &'static str {
        match self {
            DropObject::Artifact => "artifact.tar.gz",
            DropObject::Checkpoint(_) => "checkpoint.tar.gz",
        }
    }

    /// The tarball's object name in the drop (the subject, but per slot for checkpoints).
    fn object_name(self) -> &'static str {
        match self {
            DropObject::Artifact => "artifact.tar.gz",
            DropObject::Checkpoint(slot) => layout::checkpoint_slot_names(slot).0,
        }
    }

    fn envelope_name(self) -> &'static str {
        match self {
            DropObject::Artifact => "artifact.dsse.json",
            DropObject::Checkpoint(slot) => layout::checkpoint_slot_names(slot).1,
        }
    }

    fn keys(self, job: &JobId) -> (String, String) {
        match self {
            DropObject::Artifact => (
                layout::drop_artifact(job),
                layout::drop_artifact_envelope(job),
            ),
            DropObject::Checkpoint(slot) => (
                layout::drop_checkpoint(job, slot),
                layout::drop_checkpoint_envelope(job, slot),
            ),
        }
    }
}

/// Summary printed by `fetch`.
#[derive(Serialize)]
pub struct FetchSummary<'a> {
    job: &'a JobId,
    artifact_sha256: Sha256Digest,
    packet_sha256: Sha256Digest,
    model_requested: &'a str,
    model_reported: &'a str,
    files_changed: u64,
    lines_added: u64,
    lines_removed: u64,
    partial: bool,
    sandbox: &'a str,
    artifact: &'a Path,
    /// `true` for `fetch --checkpoint`: never a final result.
    checkpoint: bool,
    /// Egress attempts the worker logged (a claim).
    egress: &'a [airlock_core::format::EgressAttempt],
    /// How a failed run ended and its log's tail; absent when the run did not fail.
    #[serde(skip_serializing_if = "Option::is_none")]
    failed_run: Option<crate::run_account::RunAccount>,
}

impl Fetched {
    /// The ledger's `fetch` entry for this artifact.
    pub fn ledger_event(&self) -> crate::ledger::Event {
        crate::ledger::Event::Fetch {
            artifact_sha256: self.artifact_sha256,
            packet_sha256: self.packet_sha256,
            model_reported: self.packet.model_reported.clone(),
            partial: self.packet.partial,
            run_id: self.packet.run_id.clone(),
        }
    }

    /// The summary for output.
    pub fn summary(&self) -> FetchSummary<'_> {
        FetchSummary {
            job: &self.record.job,
            artifact_sha256: self.artifact_sha256,
            packet_sha256: self.packet_sha256,
            model_requested: &self.record.model_requested,
            model_reported: &self.packet.model_reported,
            files_changed: self.packet.files_changed,
            lines_added: self.packet.lines_added,
            lines_removed: self.packet.lines_removed,
            partial: self.packet.partial,
            sandbox: &self.packet.sandbox,
            artifact: &self.artifact_path,
            checkpoint: self.packet.exit.kind == airlock_core::format::ExitKind::Running,
            egress: &self.packet.egress,
            failed_run: crate::run_account::of(
                &self.packet,
                self.log_tail.as_deref(),
                self.record.limits.wall_clock_secs,
            ),
        }
    }
}

/// Loads and verifies the job record with the trusted key.
pub fn load_record(store: &Store, trusted: &PublicKey, job: &JobId) -> Result<Verified<JobRecord>> {
    let bytes = store
        .get_bytes(&layout::job_record(job), MAX_ENVELOPE_BYTES as u64)?
        .with_context(|| format!("job {job}: no job record in the store (unknown job)"))?;
    let statement = verify_envelope(&bytes, std::slice::from_ref(trusted), MAX_ENVELOPE_BYTES)
        .with_context(|| format!("job {job}: job record refused"))?;
    let record: Verified<JobRecord> = statement
        .expect_predicate(PREDICATE_JOB_RECORD)
        .with_context(|| format!("job {job}: job record refused"))?;
    record.check()?;
    if &record.job != job {
        bail!(
            "job {job}: the record is for job {} (record.job)",
            record.job
        );
    }
    Ok(record)
}

pub use crate::config::job_dir;

/// Fetches and verifies a job's final artifact, keeping `patch.diff` in memory if
/// `keep_patch` (the gate). See the module doc for the order.
pub fn fetch(
    store: &Store,
    trusted_key: &SigningKey,
    home: &Path,
    job: &JobId,
    now: u64,
    keep_patch: bool,
) -> Result<Fetched, FetchError> {
    let (fetched, staging, envelope) = verify_drop(
        store,
        trusted_key,
        home,
        job,
        keep_patch,
        DropObject::Artifact,
    )?;
    first_artifact_wins(
        store,
        trusted_key,
        &fetched.record.job,
        fetched.artifact_sha256,
        now,
    )?;
    match sha256_file(&fetched.artifact_path) {
        Ok((existing, _)) if existing == fetched.artifact_sha256 => staging.close()?,
        // Renamed over any earlier copy.
        _ => staging
            .persist(&fetched.artifact_path)
            .map_err(|e| FetchError::Failed(e.error.into()))?,
    }
    // The verified envelope of the first fetch, kept beside the artifact: evidence that
    // outlives `airlock gc` (which deletes payloads from the store, never envelopes) and a
    // later swap of the drop's envelope (`audit export` writes this copy). Written once.
    let kept = fetched.artifact_path.with_file_name("artifact.dsse.json");
    if !kept.exists() {
        std::fs::write(&kept, &envelope)
            .with_context(|| format!("{}: cannot write", kept.display()))?;
    }
    Ok(fetched)
}

/// Steps 1-6 for `object`: the verified copy stays at the returned temporary path; the
/// [`Fetched::artifact_path`] is where it will be kept.
fn verify_drop(
    store: &Store,
    trusted_key: &SigningKey,
    home: &Path,
    job: &JobId,
    keep_patch: bool,
    object: DropObject,
) -> Result<(Fetched, tempfile::TempPath, Vec<u8>), FetchError> {
    let (object_key, envelope_key) = object.keys(job);
    let name = object.subject();
    let object_name = object.object_name();
    let envelope_name = object.envelope_name();
    let record = load_record(store, &trusted_key.public(), job)?;
    let job = &record.job.clone();
    let job_key = PublicKey::from_raw_hex(&record.job_public_key).map_err(anyhow::Error::from)?;

    let (env_bytes, envelope_info) = store
        .get_bytes_info(&envelope_key, MAX_ENVELOPE_BYTES as u64)
        .map_err(|e| store_refusal(e, "", ReasonCode::ArtifactTooLarge))?
        .with_context(|| match object {
            DropObject::Artifact => format!("job {job}: no artifact yet (nothing landed in the drop; `airlock status {job}` shows a checkpoint if one landed)"),
            DropObject::Checkpoint(_) => format!("job {job}: no checkpoint landed"),
        })?;
    let statement: Verified<Statement> = verify_envelope(
        &env_bytes,
        std::slice::from_ref(&job_key),
        MAX_ENVELOPE_BYTES,
    )
    .map_err(|e| {
        refuse(
            ReasonCode::ArtifactSignature,
            format!("{envelope_name}: {e}"),
        )
    })?;
    let predicate: Verified<ArtifactPredicate> = statement
        .expect_predicate(PREDICATE_ARTIFACT)
        .map_err(|e| {
            refuse(
                ReasonCode::ArtifactStatement,
                format!("{envelope_name}: {e}"),
            )
        })?;
    let signed_digest = statement.subject_digest(name).ok_or_else(|| {
        refuse(
            ReasonCode::ArtifactStatement,
            format!("{envelope_name} names no {name}"),
        )
    })?;
    if predicate.job != *job {
        return Err(refuse(
            ReasonCode::ArtifactReplay,
            format!("the artifact statement is for job {}", predicate.job),
        ));
    }
    if predicate.bundle_sha256 != record.bundle_sha256 {
        return Err(refuse(
            ReasonCode::ArtifactReplay,
            "the artifact was made from another bundle",
        ));
    }
    if predicate.partial && object == DropObject::Artifact {
        tracing::warn!("job {job}: the worker marked its artifact partial");
    }

    let dir = job_dir(home, job);
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    // A fresh random name, removed on every early return; the download itself creates the file.
    let staging = tempfile::Builder::new()
        .prefix(".artifact-")
        .make_in(&dir, |_| Ok(()))?
        .into_temp_path();
    let cap = record.limits.max_artifact_bytes;
    let (digest, _, info) = store
        .get_to_file_info(&object_key, cap, &staging)
        .map_err(|e| store_refusal(e, object_name, ReasonCode::ArtifactTooLarge))?
        .with_context(|| match object {
            DropObject::Artifact => gone_after_gc(store, home, job),
            DropObject::Checkpoint(_) => {
                format!("job {job}: {envelope_name} present but {object_name} missing")
            }
        })?;
    if digest != signed_digest {
        return Err(refuse(
            ReasonCode::ArtifactDigest,
            format!("{object_name}: sha256 {digest} differs from the signed {signed_digest} in {envelope_name}"),
        ));
    }
    // Last-modified of exactly the versions read and verified (the GET answers carry it).
    let landed_at = info.last_modified.max(envelope_info.last_modified);
    if landed_at > record.expires_at + STORE_SKEW_SECS {
        return Err(refuse(
            ReasonCode::ArtifactLate,
            format!(
                "landed at {} after the token expired at {}",
                airlock_core::jobid::rfc3339_utc(landed_at),
                airlock_core::jobid::rfc3339_utc(record.expires_at)
            ),
        ));
    }
    if landed_at + STORE_SKEW_SECS < record.issued_at {
        return Err(refuse(
            ReasonCode::ArtifactEarly,
            "landed before the job was submitted",
        ));
    }

    let needles = crate::key_leak::Needles::load(home, job);
    let (packet, packet_sha256, patch, log_tail, worker_text_secrets, comments) =
        read_packet(&staging, digest, keep_patch, needles.as_ref())?;
    if packet_sha256 != predicate.packet_sha256 {
        return Err(refuse(
            ReasonCode::PacketDigest,
            "packet.json differs from the signed packet digest",
        ));
    }
    if packet.job != *job || packet.bundle_sha256 != record.bundle_sha256 {
        return Err(refuse(
            ReasonCode::PacketBinding,
            "packet.json names another job or bundle",
        ));
    }
    if packet.run_id != predicate.run_id || packet.partial != predicate.partial {
        return Err(refuse(
            ReasonCode::PacketBinding,
            "packet.json disagrees with the signed statement (run id or partial)",
        ));
    }

    let fetched = Fetched {
        record,
        packet,
        artifact_path: dir.join(name),
        artifact_sha256: digest,
        packet_sha256,
        landed_at,
        patch,
        log_tail,
        worker_text_secrets,
        seq: predicate.seq,
        comments,
    };
    Ok((fetched, staging, env_bytes))
}

/// Why a signed artifact envelope has no artifact beside it, in words that are true: after
/// `airlock gc` the payload is gone but the envelope, the first-fetch record and the ledger
/// remain (and the home may hold the copy fetched earlier).
fn gone_after_gc(store: &Store, home: &Path, job: &JobId) -> String {
    let fetched = store
        .head(&format!("records/{job}.fetched.dsse.json"))
        .ok()
        .flatten()
        .is_some();
    if !fetched {
        return format!(
            "job {job}: artifact.dsse.json landed but artifact.tar.gz is missing from the drop"
        );
    }
    let kept = job_dir(home, job).join("artifact.tar.gz");
    let local = if kept.exists() {
        format!(
            "; this host keeps the copy it fetched at {}",
            kept.display()
        )
    } else {
        String::new()
    };
    format!(
        "job {job}: artifact.tar.gz was fetched earlier and has since been deleted from the store \
         (airlock gc); its signed envelope, first-fetch record and ledger entries remain: \
         `airlock show {job}` and `airlock audit show {job}` read the decision{local}"
    )
}

/// Records the first artifact fetched for a job (trusted-signed, write-once in the store);
/// a later fetch of a different artifact is reported as tampering.
fn first_artifact_wins(
    store: &Store,
    key: &SigningKey,
    job: &JobId,
    digest: Sha256Digest,
    now: u64,
) -> Result<(), FetchError> {
    let rec_key = format!("records/{job}.fetched.dsse.json");
    let statement = Statement::new(
        "artifact.tar.gz",
        digest,
        PREDICATE_FETCHED,
        serde_json::json!({ "job": job, "fetched_at": now }),
    );
    let envelope = dsse::sign_statement(&statement, key).to_json_pretty();
    if store.put_new(&rec_key, &envelope)? {
        return Ok(());
    }
    let existing = store
        .get_bytes(&rec_key, MAX_ENVELOPE_BYTES as u64)?
        .context("fetch record vanished")?;
    let st = verify_envelope(&existing, &[key.public()], MAX_ENVELOPE_BYTES)
        .context("fetch record refused")?;
    match st.subject_digest("artifact.tar.gz") {
        Some(d) if d == digest => Ok(()),
        Some(d) => Err(refuse(ReasonCode::ArtifactSwapped,
            format!("tampering: job {job} was already fetched with artifact sha256:{d}; the drop now holds sha256:{digest}"),
        )),
        None => Err(anyhow::anyhow!("fetch record for {job} is malformed").into()),
    }
}

#[cfg(test)]
mod tests;
