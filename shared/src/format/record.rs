//! The job record: the trusted side's signed statement of what a job is, kept in the store at
//! `records/<job>.dsse.json`, so that a fetcher on another host knows which key must have
//! signed the artifact and which bundle it must be bound to.

use serde::{Deserialize, Serialize};

use super::{check_tag, FormatError, JobKind};
use crate::digest::Sha256Digest;
use crate::jobid::JobId;
use crate::limits::JobLimits;

/// The `format` tag of this record version.
pub const JOB_RECORD_FORMAT: &str = "airlock.job-record/v1";

/// What the trusted side committed to when it submitted a job. This is the predicate of the
/// statement over `bundle.tar.gz` stored at `records/<job>.dsse.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobRecord {
    /// Always [`JOB_RECORD_FORMAT`].
    pub format: String,
    /// The job.
    pub job: JobId,
    /// Raw ed25519 public key of the per-job key, lowercase hex (64 chars).
    pub job_public_key: String,
    /// SHA-256 of `bundle.tar.gz`.
    pub bundle_sha256: Sha256Digest,
    /// SHA-256 of `request.json` inside the bundle.
    pub request_sha256: Sha256Digest,
    /// SHA-256 of the prompt text (UTF-8).
    pub prompt_sha256: Sha256Digest,
    /// The model asked for.
    pub model_requested: String,
    /// The source revision (full commit id).
    pub revision: String,
    /// Unix seconds when the token was minted.
    pub issued_at: u64,
    /// Unix seconds when the token expires; artifacts landing later are refused.
    pub expires_at: u64,
    /// The job's limits (as in the request), so the fetcher and gate enforce them without
    /// the bundle.
    pub limits: JobLimits,
    /// What the job may return (as in the request). OPTIONAL, default `change`, written only
    /// when `review`: the gate judges a review job by its comments.
    #[serde(default, skip_serializing_if = "JobKind::is_change")]
    pub kind: JobKind,
    /// The checkpoint this job resumes from (a fleet re-dispatch). OPTIONAL, absent for a
    /// fresh job: the trusted side's own account of the chain, which the gate reads the
    /// inherited patch by and holds the packet's claim to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<ResumedFrom>,
}

/// Which checkpoint a re-dispatched job resumes from: the job whose gated checkpoint patch was
/// copied into the new job's inbox (`inbox/<job>/resume.diff`), and that patch's digest and
/// size as pinned in the new job's token. The same object in the job record (the trusted
/// side's account), the ledger's `submit` entry and the packet (the worker's claim).
/// Closed: an unknown member is refused (`format.unknown-member`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumedFrom {
    /// The job whose checkpoint was resumed from.
    pub job: JobId,
    /// SHA-256 of the inherited patch (`resume.diff`).
    pub patch_sha256: Sha256Digest,
    /// Its size in bytes.
    pub patch_bytes: u64,
}

impl JobRecord {
    /// Checks the fields a parser cannot: format tag, key shape, time order.
    pub fn check(&self) -> Result<(), FormatError> {
        check_tag("job record", &self.format, JOB_RECORD_FORMAT)?;
        let key_ok = self.job_public_key.len() == 64
            && self
                .job_public_key
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c));
        if !key_ok {
            return Err(FormatError::Field {
                what: "job record",
                field: "job_public_key",
                rule: "record.key",
                reason: "must be 64 lowercase hex characters".into(),
            });
        }
        if self.expires_at <= self.issued_at {
            return Err(FormatError::Field {
                what: "job record",
                field: "expires_at",
                rule: "record.window",
                reason: "expires before it was issued".into(),
            });
        }
        Ok(())
    }
}

impl ResumedFrom {
    /// The chain entry for resuming from `patch`, the checkpoint patch of job `from`.
    pub fn of_patch(from: &JobId, patch: &[u8]) -> ResumedFrom {
        ResumedFrom {
            job: from.clone(),
            patch_sha256: Sha256Digest::of_bytes(patch),
            patch_bytes: patch.len() as u64,
        }
    }

    /// The worker's copy of its token's `resume` claim, as it writes it in the packet.
    pub fn of_claim(r: &crate::token::ResumeRef) -> ResumedFrom {
        ResumedFrom {
            job: r.from_job.clone(),
            patch_sha256: r.sha256,
            patch_bytes: r.max_bytes,
        }
    }
}
