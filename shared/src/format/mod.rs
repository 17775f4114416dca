//! The JSON documents that cross the boundary: manifest, request, job record, packet, and the
//! predicates of the DSSE statements over bundle, artifact and job record.
//!
//! Guards against: oversized documents (the size is checked before parsing), unknown or
//! missing fields (`deny_unknown_fields` everywhere, no defaults on the wire), wrong format
//! tags, and non-canonical paths in file lists.
//! On `Ok`: the document has exactly the shape `docs/FORMATS.md` describes.
//! Does not check: signatures or digests; callers verify the envelope first.

mod manifest;
mod packet;
mod record;
mod request;

pub use manifest::{FileEntry, Manifest, Omission, Packer, Redaction, Source, MANIFEST_FORMAT};
pub use packet::{
    EgressAttempt, ExitInfo, ExitKind, ModelUsage, Packet, RefusedPath, Timings, MAX_PACKET_MODELS,
    MODEL_UNREPORTED, PACKET_FORMAT,
};
pub use record::{JobRecord, JOB_RECORD_FORMAT};
pub use request::{check_model_key_env, EgressRule, Request, REQUEST_FORMAT};

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::digest::Sha256Digest;
use crate::jobid::JobId;

/// `predicateType` of the statement over `bundle.tar.gz` (signed by the trusted key).
pub const PREDICATE_BUNDLE: &str = "urn:airlock:predicate:bundle:v1";
/// `predicateType` of the statement over an artifact or checkpoint (signed by the job key).
pub const PREDICATE_ARTIFACT: &str = "urn:airlock:predicate:artifact:v1";
/// `predicateType` of the statement over a job record (signed by the trusted key).
pub const PREDICATE_JOB_RECORD: &str = "urn:airlock:predicate:job-record:v1";

/// Largest `manifest.json` accepted (a tree of 200k files fits).
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024 * 1024;
/// Largest `request.json` accepted.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// Largest `packet.json` accepted.
pub const MAX_PACKET_BYTES: usize = 1024 * 1024;
/// Largest signed envelope accepted (bundle, artifact, record, ledger entry).
pub const MAX_ENVELOPE_BYTES: usize = 1024 * 1024;

/// A JSON document was malformed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The document is larger than its limit; nothing was parsed.
    #[error("{what}: too large (format.too-large): limit {limit} bytes, seen {seen}")]
    TooLarge {
        /// Which document.
        what: &'static str,
        /// The limit in bytes.
        limit: usize,
        /// Bytes seen.
        seen: usize,
    },
    /// The JSON did not match the schema.
    #[error("{what}: malformed (format.json): {reason}")]
    Json {
        /// Which document.
        what: &'static str,
        /// serde's reason (never echoes string values of ours; positions only).
        reason: String,
    },
    /// The `format` tag is not the one this version reads.
    #[error("{what}: unsupported format {found:?} (format.tag): expected {expected:?}")]
    Tag {
        /// Which document.
        what: &'static str,
        /// The tag this version reads.
        expected: &'static str,
        /// The tag found (truncated).
        found: String,
    },
    /// A field broke a rule.
    #[error("{what}: field {field}: {reason} ({rule})")]
    Field {
        /// Which document.
        what: &'static str,
        /// The field.
        field: &'static str,
        /// Rule id.
        rule: &'static str,
        /// Why.
        reason: String,
    },
}

/// Parses a JSON document of at most `max` bytes into `T`. The size is checked first.
pub fn parse_json<T: DeserializeOwned>(
    bytes: &[u8],
    max: usize,
    what: &'static str,
) -> Result<T, FormatError> {
    if bytes.len() > max {
        return Err(FormatError::TooLarge {
            what,
            limit: max,
            seen: bytes.len(),
        });
    }
    serde_json::from_slice(bytes).map_err(|e| FormatError::Json {
        what,
        reason: format!("line {} column {}: {}", e.line(), e.column(), classify(&e)),
    })
}

fn classify(e: &serde_json::Error) -> String {
    // serde_json's messages can quote input (e.g. unknown variant values); keep the category
    // and, for unknown/missing fields, the field name, which is schema text, not data.
    let msg = e.to_string();
    if msg.starts_with("unknown field") || msg.starts_with("missing field") {
        msg.split(", expected")
            .next()
            .unwrap_or("schema")
            .to_owned()
    } else {
        format!("{:?}", e.classify()).to_lowercase()
    }
}

/// Serialises a document the one way airlock writes it: pretty JSON, struct field order,
/// sorted maps, trailing newline. Deterministic for equal values.
pub fn to_json_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    // Serialising our own plain structs cannot fail (no non-string map keys, no I/O).
    let mut out = serde_json::to_vec_pretty(value).unwrap_or_default();
    out.push(b'\n');
    out
}

pub(crate) fn check_tag(
    what: &'static str,
    found: &str,
    expected: &'static str,
) -> Result<(), FormatError> {
    if found == expected {
        Ok(())
    } else {
        Err(FormatError::Tag {
            what,
            expected,
            found: found.chars().take(64).collect(),
        })
    }
}

/// Predicate of the statement over `bundle.tar.gz`: binds the content-addressed bundle to one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundlePredicate {
    /// The job this bundle was packed for.
    pub job: JobId,
    /// SHA-256 of `manifest.json` inside the bundle.
    pub manifest_sha256: Sha256Digest,
    /// SHA-256 of `request.json` inside the bundle.
    pub request_sha256: Sha256Digest,
    /// Where the tree came from.
    pub source: Source,
}

/// Predicate of the statement over an artifact or checkpoint tarball, signed by the job key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactPredicate {
    /// The job.
    pub job: JobId,
    /// The worker's run id (one job may be re-dispatched).
    pub run_id: String,
    /// SHA-256 of the bundle the worker verified and worked on.
    pub bundle_sha256: Sha256Digest,
    /// SHA-256 of `packet.json` inside the artifact.
    pub packet_sha256: Sha256Digest,
    /// `true` for a checkpoint or an unfinished run.
    pub partial: bool,
    /// A checkpoint's sequence number in its run (1, 2, ...): `fetch --checkpoint` takes the
    /// verified slot with the highest. Absent from final artifacts and older checkpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
}
