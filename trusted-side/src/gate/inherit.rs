//! The patch a re-dispatched job inherited (issue #40): the gate reads the trusted side's own
//! copy, `inbox/<job>/resume.diff` (written by `submit` from the old job's gated checkpoint,
//! its digest and size pinned in the signed job record's `resumed_from`), so the review shows
//! which changes the new worker started from, and from which job.
//!
//! Guards against: that copy being taken on trust. Its bytes came from a hostile worker's
//! checkpoint and sit in a store others may write, so: its size is checked before it is read
//! (at most the pinned size and [`MAX_PATCH_BYTES`]: `resume.too-large`), it must hash to the
//! pinned digest (`resume.digest`), and the strict diff parser must accept it
//! (`resume.parse`); an absent or unreadable copy is `resume.missing` (after `airlock gc`
//! deleted the inbox, say). Each refusal is a reject (`resume-patch-refused`) whose detail
//! names the object, the rule and the reason. And a worker claiming another start than it was
//! given: the packet's `resumed_from` (a claim) must equal the record's, else
//! `resume-claim-mismatch` (`human`).
//! On `Ok`: each inherited file's path and lines added and removed. Nothing is written.
//! Does not check: the inherited changes themselves. The final diff, taken against the packed
//! revision, holds them, and every other gate step judges it.

use airlock_core::diff::{parse_patch, DiffLimits};
use airlock_core::digest::Sha256Digest;
use airlock_core::format::ResumedFrom;
use airlock_core::jobid::JobId;
use airlock_core::store_layout as layout;

use super::policy::Verdict;
use crate::fetch::{Fetched, MAX_PATCH_BYTES};
use crate::reasons::ReasonCode;
use crate::report::inherited::{Inherited, InheritedFile};
use crate::report::{GateReport, Reason};
use crate::store::Store;

/// Rule: the inherited patch is not in the store, or cannot be read.
pub const RULE_MISSING: &str = "resume.missing";
/// Rule: the inherited patch is over the pinned size or the patch cap.
pub const RULE_TOO_LARGE: &str = "resume.too-large";
/// Rule: the inherited patch does not hash to the pinned digest.
pub const RULE_DIGEST: &str = "resume.digest";
/// Rule: the strict diff parser refuses the inherited patch.
pub const RULE_PARSE: &str = "resume.parse";

/// Why the inherited patch was refused. Each message names the object, the rule and what to do.
#[derive(Debug, thiserror::Error)]
pub enum InheritError {
    /// `resume.missing`.
    #[error("{key}: refused (resume.missing): {why}; the changes inherited from job {from} cannot be shown: do not approve unseen, `airlock resubmit` the job")]
    Missing {
        /// The object key.
        key: String,
        /// The job the patch came from.
        from: JobId,
        /// Absent, or the store's error.
        why: String,
    },
    /// `resume.too-large`.
    #[error("{key}: refused (resume.too-large): {seen} bytes, over the limit of {limit} (the pinned size, at most the patch cap); `airlock resubmit` the job")]
    TooLarge {
        /// The object key.
        key: String,
        /// The limit.
        limit: u64,
        /// The size seen.
        seen: u64,
    },
    /// `resume.digest`.
    #[error("{key}: refused (resume.digest): hashes to sha256:{seen}, not the pinned sha256:{pinned}: the copy changed after submit; `airlock resubmit` the job")]
    Digest {
        /// The object key.
        key: String,
        /// The digest the job record pinned.
        pinned: Sha256Digest,
        /// The digest of the bytes read.
        seen: Sha256Digest,
    },
    /// `resume.parse`.
    #[error("{key}: refused (resume.parse): {reason}; `airlock resubmit` the job")]
    Parse {
        /// The object key.
        key: String,
        /// The parser's message (its own rule id inside).
        reason: String,
    },
}

impl InheritError {
    /// The rule id.
    pub fn rule(&self) -> &'static str {
        match self {
            InheritError::Missing { .. } => RULE_MISSING,
            InheritError::TooLarge { .. } => RULE_TOO_LARGE,
            InheritError::Digest { .. } => RULE_DIGEST,
            InheritError::Parse { .. } => RULE_PARSE,
        }
    }
}

/// Reads `job`'s inherited patch from the store and lists its files; see the module doc.
pub fn read(store: &Store, job: &JobId, from: &ResumedFrom) -> Result<Inherited, InheritError> {
    let key = layout::inbox_resume(job);
    let missing = |why: String| InheritError::Missing {
        key: key.clone(),
        from: from.job.clone(),
        why,
    };
    let limit = from.patch_bytes.min(MAX_PATCH_BYTES);
    let too_large = |seen| InheritError::TooLarge {
        key: key.clone(),
        limit,
        seen,
    };
    // resume.too-large: the size, before a byte is read.
    let info = store
        .head(&key)
        .map_err(|e| missing(format!("cannot be read ({e:#})")))?
        .ok_or_else(|| missing("not in the store".into()))?;
    if info.size > limit {
        return Err(too_large(info.size));
    }
    let bytes = match store.get_bytes(&key, limit) {
        Ok(Some(b)) => b,
        Ok(None) => return Err(missing("not in the store".into())),
        // It grew between the two requests.
        Err(e) if format!("{e:#}").contains("store.too-large") => return Err(too_large(limit + 1)),
        Err(e) => return Err(missing(format!("cannot be read ({e:#})"))),
    };
    // resume.digest
    let seen = Sha256Digest::of_bytes(&bytes);
    if seen != from.patch_sha256 {
        return Err(InheritError::Digest {
            key,
            pinned: from.patch_sha256,
            seen,
        });
    }
    // resume.parse
    let patch = parse_patch(&bytes, &DiffLimits::default()).map_err(|e| InheritError::Parse {
        key: key.clone(),
        reason: e.to_string(),
    })?;
    Ok(Inherited {
        from_job: from.job.clone(),
        patch_sha256: from.patch_sha256,
        patch_bytes: from.patch_bytes,
        files: patch
            .files
            .iter()
            .map(|f| InheritedFile {
                path: f.path.clone(),
                kind: f.kind.as_str().to_owned(),
                lines_added: f.added,
                lines_removed: f.removed,
            })
            .collect(),
        refused: None,
    })
}

/// The report's `inherited` section for a job whose record names `from`, and the
/// `resume-patch-refused` reject when the patch was refused (the section then says why).
pub fn section(store: &Store, job: &JobId, from: &ResumedFrom) -> (Inherited, Option<Reason>) {
    match read(store, job, from) {
        Ok(i) => (i, None),
        Err(e) => {
            let inherited = Inherited {
                from_job: from.job.clone(),
                patch_sha256: from.patch_sha256,
                patch_bytes: from.patch_bytes,
                files: Vec::new(),
                refused: Some(e.to_string()),
            };
            let reason = Reason::new(
                ReasonCode::ResumePatchRefused,
                Verdict::Reject,
                e.to_string(),
            )
            .rule(e.rule());
            (inherited, Some(reason))
        }
    }
}

/// Step 1b of the gate: the `inherited` section and its reasons, for a job whose verified
/// record names a checkpoint it resumes from; the packet's claim held to the record.
pub fn judge(store: &Store, fetched: &Fetched, report: &mut GateReport) {
    let recorded = fetched.record.resumed_from.as_ref();
    report.extend(check_claim(recorded, fetched.packet.resumed_from.as_ref()));
    if let Some(from) = recorded {
        let (inherited, refused) = section(store, &fetched.record.job, from);
        report.inherited = Some(inherited);
        report.extend(refused);
    }
}

/// `resume-claim-mismatch` (`human`) when the packet's claim (`claimed`) is not the job
/// record's `resumed_from` (`recorded`): the worker says it started from other changes than
/// it was given, or from some when it was given none, or from none when it was given some.
pub fn check_claim(
    recorded: Option<&ResumedFrom>,
    claimed: Option<&ResumedFrom>,
) -> Option<Reason> {
    if recorded == claimed {
        return None;
    }
    let say = |r: Option<&ResumedFrom>| match r {
        Some(r) => format!(
            "job {} (sha256:{}, {} bytes)",
            r.job, r.patch_sha256, r.patch_bytes
        ),
        None => "a fresh start".to_owned(),
    };
    Some(Reason::new(
        ReasonCode::ResumeClaimMismatch,
        Verdict::Human,
        format!(
            "packet.json claims the worker resumed from {}, the job record says {} (packet.resumed-from): the worker's account of what it started from is not what it was given",
            say(claimed),
            say(recorded)
        ),
    ).rule("packet.resumed-from"))
}

#[cfg(test)]
#[path = "inherit_tests.rs"]
mod tests;
