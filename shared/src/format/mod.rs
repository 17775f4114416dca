//! The JSON documents that cross the boundary: manifest, request, job record, packet, and the
//! predicates of the DSSE statements over bundle, artifact and job record.
//!
//! Guards against: oversized documents (the size is checked before parsing), missing members,
//! unknown members of closed objects (`deny_unknown_fields`, rule `format.unknown-member`),
//! values outside a version's closed sets (rule `format.closed-set`), wrong format tags, and
//! non-canonical paths in file lists.
//! On `Ok`: the document has the shape `docs/FORMATS.md` ("Evolution") describes: every member
//! this version must understand is there and valid; members of extensible objects that this
//! version does not know were ignored (dropped by the parser, never read).
//! Does not check: signatures or digests; callers verify the envelope first.

mod comments;
pub mod fleet;
mod manifest;
mod negotiate;
mod packet;
mod record;
mod request;

pub use comments::{
    check_comment, parse_comment, parse_comments, to_jsonl, Comment, CommentError, ParsedComments,
    Severity, COMMENTS_FORMAT, COMMENTS_MEMBER, MAX_COMMENTS, MAX_COMMENTS_BYTES,
    MAX_COMMENT_BODY_BYTES, MAX_COMMENT_LINE_BYTES, MAX_COMMENT_SPAN, MAX_SUGGESTION_BYTES,
};
pub use manifest::{FileEntry, Manifest, Omission, Packer, Redaction, Source, MANIFEST_FORMAT};
pub use negotiate::{
    formats_claim_well_formed, negotiate, reads_comments, NegotiationError, Reader, READS, WRITES,
};
pub use packet::{
    EgressAttempt, ExitInfo, ExitKind, ModelUsage, Packet, RefusedPath, Timings, LIMITS_HIT_VALUES,
    MAX_PACKET_MODELS, MODEL_UNREPORTED, PACKET_FORMAT, PACKET_MEMBERS_0_6, SANDBOX_VALUES,
};
pub use record::{JobRecord, ResumedFrom, JOB_RECORD_FORMAT};
pub use request::{check_model_key_env, EgressRule, JobKind, Request, REQUEST_FORMAT};

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
    /// A closed object has a member this version does not know (`docs/FORMATS.md`,
    /// "Evolution": only objects marked extensible may gain members a reader ignores).
    #[error("{what}: unknown member {member} (format.unknown-member): this object is closed in the version this reader reads; {}", reads_note())]
    UnknownMember {
        /// Which document.
        what: &'static str,
        /// The member's name (schema text from serde, truncated).
        member: String,
    },
    /// An enumerated member holds a value outside the closed set of this version.
    #[error("{what}: {field}: value {found} is not in this version's closed set (format.closed-set): expected one of {expected}")]
    ClosedSet {
        /// Which document.
        what: &'static str,
        /// The member.
        field: &'static str,
        /// The value seen, escaped and truncated (or `(not shown)`).
        found: String,
        /// The values this version lists.
        expected: String,
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

fn reads_note() -> String {
    format!(
        "airlock {} reads the formats of docs/FORMATS.md for this version and the previous release",
        crate::VERSION
    )
}

impl FormatError {
    /// The rule id of this error (`format.json`, `format.unknown-member`, ...).
    pub fn rule(&self) -> &'static str {
        match self {
            FormatError::TooLarge { .. } => "format.too-large",
            FormatError::Json { .. } => "format.json",
            FormatError::UnknownMember { .. } => "format.unknown-member",
            FormatError::ClosedSet { .. } => "format.closed-set",
            FormatError::Tag { .. } => "format.tag",
            FormatError::Field { rule, .. } => rule,
        }
    }
}

/// A value seen in a closed set, for a message: escaped (`{:?}`) and at most 32 characters
/// before escaping, so no control character or long worker text reaches a terminal.
pub(crate) fn shown_value(value: &str) -> String {
    let cut: String = value.chars().take(32).collect();
    if cut.len() < value.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

/// Checks that `value` is one of `allowed` (exactly: no case folding, no trimming), rule
/// `format.closed-set`.
pub(crate) fn check_closed(
    what: &'static str,
    field: &'static str,
    value: &str,
    allowed: &[&str],
) -> Result<(), FormatError> {
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(FormatError::ClosedSet {
        what,
        field,
        found: shown_value(value),
        expected: allowed
            .iter()
            .map(|a| format!("{a:?}"))
            .collect::<Vec<_>>()
            .join(", "),
    })
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
    serde_json::from_slice(bytes).map_err(|e| from_serde(what, &e))
}

/// Maps serde's error to ours: an unknown member of a closed object and a value outside an
/// enum's closed set get their own rules; the rest is `format.json`.
pub fn from_serde(what: &'static str, e: &serde_json::Error) -> FormatError {
    let msg = e.to_string();
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let member = rest.split('`').next().unwrap_or("?");
        return FormatError::UnknownMember {
            what,
            member: shown_value(member),
        };
    }
    if msg.starts_with("unknown variant") {
        // serde quotes the value first, then the expected variants (schema text).
        let expected = msg
            .split(", expected ")
            .nth(1)
            .and_then(|s| s.split(" at line ").next())
            .unwrap_or("the values of docs/FORMATS.md")
            .trim_start_matches("one of ")
            .to_owned();
        return FormatError::ClosedSet {
            what,
            field: "an enumerated member",
            found: "(not shown)".to_owned(),
            expected,
        };
    }
    FormatError::Json {
        what,
        reason: format!("line {} column {}: {}", e.line(), e.column(), classify(e)),
    }
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
