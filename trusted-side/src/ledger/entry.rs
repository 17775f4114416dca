//! The ledger entry format: object names, the predicate (`LedgerEntry` and its `Event`s), the
//! canonical predicate digest, and opening one entry file under the pinned trusted key.
//!
//! Guards against: entries not signed by the trusted key (the key is the caller's pin, never
//! one named by the envelope), oversized entries (size checked before parsing), lenient or
//! ambiguous encodings (`deny_unknown_fields`, `prev` required even when null, exact object
//! names), an entry moved to another name (the signed `seq` and subject name must match the
//! object key), and a prompt that does not hash to its recorded digest.
//!
//! On `Ok`: [`open_entry`] returns the entry signed by the trusted key whose `seq` is the
//! one its object key names.
//!
//! Does not check: the chain (`prev`, time order, gaps); [`super::verify`] walks that.

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, EnvelopeError, Statement};
use airlock_core::format::MAX_ENVELOPE_BYTES;
use airlock_core::jobid::JobId;
use airlock_core::keys::{PublicKey, SigningKey};
use airlock_core::store_layout::LEDGER_PREFIX;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::{rule, BrokenEntry};

/// `predicateType` of a ledger entry statement.
pub const PREDICATE_LEDGER_ENTRY: &str = "urn:airlock:predicate:ledger-entry:v1";

/// Digits of the zero-padded sequence number in an entry's object name.
pub const SEQ_DIGITS: usize = 12;

/// The largest sequence number that fits the name (`999999999999`).
pub const MAX_SEQ: u64 = 999_999_999_999;

/// Largest entry file accepted. A submit entry carries the prompt (at most
/// `pack::MAX_PROMPT_BYTES`, 256 KiB): JSON escaping can grow it up to 6x (`\u0001`) and base64
/// by 4/3, about 2 MiB; this leaves room for that worst case.
pub const MAX_ENTRY_BYTES: usize = 4 * MAX_ENVELOPE_BYTES;

/// Free-text fields (reasons, details, names reported by the worker) are cut to this many
/// bytes at append, so a hostile artifact cannot make its own reject unrecordable.
pub const MAX_TEXT_BYTES: usize = 4096;

/// At most this many gate reasons are recorded; the rest are summarised in one line.
pub const MAX_REASONS: usize = 256;

/// One changed file as the gate classified it: a `gate` entry's `files` member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatedFile {
    /// Path in the repository (worker-supplied text, shown through `airlock_core::text`).
    pub path: String,
    /// The classifier's bucket (`ci`, `src`, ...).
    pub bucket: String,
    /// The classifier rule that decided it (`ci.reached`, ...).
    pub rule: String,
    /// The policy's verdict for the path: `queue`, `human` or `reject`.
    pub verdict: String,
}

/// The object key of entry `seq`: `ledger/<seq, 12 digits>.dsse.json`.
pub fn entry_key(seq: u64) -> String {
    format!("{LEDGER_PREFIX}{seq:0width$}.dsse.json", width = SEQ_DIGITS)
}

/// The sequence number an object key names, if it is exactly an entry name with `seq >= 1`.
pub fn parse_entry_key(key: &str) -> Option<u64> {
    let digits = key
        .strip_prefix(LEDGER_PREFIX)?
        .strip_suffix(".dsse.json")?;
    if digits.len() != SEQ_DIGITS || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok().filter(|&s| s >= 1)
}

/// The statement's subject name for entry `seq`: `ledger-entry-<seq>` (decimal, unpadded).
pub fn subject_name(seq: u64) -> String {
    format!("ledger-entry-{seq}")
}

/// The predicate of one ledger entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerEntry {
    /// Position in the chain, from 1; equals the number in the object key.
    pub seq: u64,
    /// SHA-256 of the previous entry's file bytes; `null` only for entry 1. Always present.
    #[serde(deserialize_with = "present")]
    pub prev: Option<Sha256Digest>,
    /// Trusted clock of the appending host, unix seconds, never earlier than the previous
    /// entry's `at`.
    pub at: u64,
    /// The job this entry is about.
    pub job: JobId,
    /// What happened.
    pub event: Event,
}

/// An `Option` field that must be present on the wire (`null` is allowed, absence is not).
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

/// What an entry records, tagged by `kind` (`submit`, `fetch`, `gate`, `reject`, `approve`,
/// `decline`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Event {
    /// A job was packed, uploaded and recorded (`airlock submit`).
    Submit {
        /// SHA-256 of `prompt` (UTF-8 bytes).
        prompt_sha256: Sha256Digest,
        /// The prompt exactly as packed into `request.json` (after any redaction: the ledger
        /// is readable by everyone who can read the store, so it must never hold a secret the
        /// bundle does not).
        prompt: String,
        /// The model asked for.
        model_requested: String,
        /// SHA-256 of `bundle.tar.gz`.
        bundle_sha256: Sha256Digest,
        /// SHA-256 of `request.json` inside the bundle.
        request_sha256: Sha256Digest,
        /// The packed source revision (full commit id).
        revision: String,
        /// Unix seconds when the job token expires.
        expires_at: u64,
        /// Fingerprint of the job's scoped model key (`sha256:` + the first 16 hex digits of
        /// its SHA-256), never the key; absent when none was minted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_key_fingerprint: Option<String>,
        /// The job this one dispatches again (`airlock resubmit`); absent for a first dispatch.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        redispatch_of: Option<JobId>,
        /// The checkpoint this job resumes from (a fleet re-dispatch): the job, the inherited
        /// patch's SHA-256 and size, as in the job record; absent for a fresh job.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resumed_from: Option<airlock_core::format::ResumedFrom>,
    },
    /// An artifact was downloaded and verified (`airlock fetch`).
    Fetch {
        /// SHA-256 of `artifact.tar.gz`.
        artifact_sha256: Sha256Digest,
        /// SHA-256 of `packet.json` inside the artifact.
        packet_sha256: Sha256Digest,
        /// The model the worker reported (`unreported` if none); worker-supplied text.
        model_reported: String,
        /// `true` if the worker marked the artifact partial.
        partial: bool,
        /// The worker's run id; worker-supplied text.
        run_id: String,
    },
    /// The gate decided (`airlock gate`).
    Gate {
        /// `queue`, `human` or `reject`.
        decision: String,
        /// The reasons, each starting with its stable code.
        reasons: Vec<String>,
        /// SHA-256 of the policy's canonical form (`Policy::digest`).
        policy_sha256: Sha256Digest,
        /// The gate's version.
        gate_version: String,
        /// SHA-256 of the artifact the decision is about.
        artifact_sha256: Sha256Digest,
        /// SHA-256 of `patch.diff`.
        diff_sha256: Sha256Digest,
        /// Each changed file as the gate classified it (at most [`MAX_REASONS`]), so `show`
        /// renders what the gate decided instead of classifying again; absent in entries of
        /// gates before it was recorded, and when the patch changed nothing.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files: Vec<GatedFile>,
    },
    /// An artifact was refused.
    Reject {
        /// Where: `fetch` or `gate` (see [`REJECT_STAGES`]).
        stage: String,
        /// The stable rule id of the refusal (e.g. `tar.parent-dir`).
        reason_code: String,
        /// The refusal message (may quote worker-supplied names; shown escaped).
        detail: String,
    },
    /// A person approved the gated artifact (`airlock approve`).
    Approve {
        /// Who: `--by NAME`, else the OS user running `airlock`.
        by: String,
        /// Free text (may be empty).
        note: String,
        /// Key id (sha256 of the raw public key) of the trusted key signing this entry.
        trusted_key_id: String,
        /// SHA-256 of the artifact approved: the one the gate entry `gate_entry` judged.
        artifact_sha256: Sha256Digest,
        /// Number of the `gate` entry this decision is about.
        gate_entry: u64,
    },
    /// A person declined the gated artifact (`airlock decline`); the note says why.
    Decline {
        /// Who: `--by NAME`, else the OS user running `airlock`.
        by: String,
        /// Why (required, not empty).
        note: String,
        /// Key id (sha256 of the raw public key) of the trusted key signing this entry.
        trusted_key_id: String,
        /// SHA-256 of the artifact declined: the one the gate entry `gate_entry` judged.
        artifact_sha256: Sha256Digest,
        /// Number of the `gate` entry this decision is about.
        gate_entry: u64,
    },
}

/// The values `Reject.stage` may take.
pub const REJECT_STAGES: [&str; 2] = ["fetch", "gate"];

impl Event {
    /// The `kind` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Submit { .. } => "submit",
            Event::Fetch { .. } => "fetch",
            Event::Gate { .. } => "gate",
            Event::Reject { .. } => "reject",
            Event::Approve { .. } => "approve",
            Event::Decline { .. } => "decline",
        }
    }

    /// The job this event belongs to is checked by the caller; this checks the event itself:
    /// a submit's prompt hashes to `prompt_sha256`, a reject's stage is one of
    /// [`REJECT_STAGES`].
    pub fn check(&self) -> Result<(), String> {
        match self {
            Event::Submit {
                prompt,
                prompt_sha256,
                ..
            } => {
                let actual = Sha256Digest::of_bytes(prompt.as_bytes());
                if actual != *prompt_sha256 {
                    return Err(format!(
                        "prompt_sha256 {prompt_sha256} but the prompt hashes to {actual}"
                    ));
                }
            }
            Event::Decline { note, .. } if note.trim().is_empty() => {
                return Err("a decline must say why (note is empty)".to_owned());
            }
            Event::Reject { stage, .. } if !REJECT_STAGES.contains(&stage.as_str()) => {
                return Err(format!(
                    "reject stage {:?} is not one of {REJECT_STAGES:?}",
                    stage.chars().take(40).collect::<String>()
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// Cuts free-text fields to [`MAX_TEXT_BYTES`] and reasons to [`MAX_REASONS`] (the prompt
    /// is bounded by pack and the entry size limit instead).
    pub(super) fn bounded(mut self) -> Event {
        match &mut self {
            Event::Submit {
                model_requested,
                revision,
                ..
            } => {
                cap(model_requested);
                cap(revision);
            }
            Event::Fetch {
                model_reported,
                run_id,
                ..
            } => {
                cap(model_reported);
                cap(run_id);
            }
            Event::Gate {
                decision,
                reasons,
                gate_version,
                files,
                ..
            } => {
                cap(decision);
                cap(gate_version);
                files.truncate(MAX_REASONS);
                for f in files.iter_mut() {
                    cap(&mut f.path);
                    cap(&mut f.bucket);
                    cap(&mut f.rule);
                    cap(&mut f.verdict);
                }
                if reasons.len() > MAX_REASONS {
                    let more = reasons.len() - (MAX_REASONS - 1);
                    reasons.truncate(MAX_REASONS - 1);
                    reasons.push(format!("... and {more} more reasons (not recorded)"));
                }
                reasons.iter_mut().for_each(cap);
            }
            Event::Reject {
                reason_code,
                detail,
                ..
            } => {
                cap(reason_code);
                cap(detail);
            }
            Event::Approve { by, note, .. } | Event::Decline { by, note, .. } => {
                cap(by);
                cap(note);
            }
        }
        self
    }
}

/// Cuts `s` to at most [`MAX_TEXT_BYTES`] bytes on a character boundary, marking the cut.
fn cap(s: &mut String) {
    if s.len() <= MAX_TEXT_BYTES {
        return;
    }
    let mut end = MAX_TEXT_BYTES - "...(cut)".len();
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s.push_str("...(cut)");
}

/// The canonical JSON bytes of a value (compact, object keys sorted by byte order, minimal
/// escaping): the same encoding `airlock_core::dsse` uses for signed payloads, so the
/// predicate's bytes here are exactly the `predicate` member's bytes inside the payload.
pub fn canonical_json(v: &Value) -> Vec<u8> {
    // serde_json writes compact JSON with exactly the escaping of the canonical form; only
    // the key order needs fixing (insertion order if `preserve_order` is ever enabled).
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut entries: Vec<(&String, &Value)> = m.iter().collect();
                entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_vec(&sorted(v)).unwrap_or_default()
}

/// Signs `entry` with the trusted key; returns the entry file's bytes (pretty DSSE JSON).
pub fn seal(entry: &LedgerEntry, key: &SigningKey) -> anyhow::Result<Vec<u8>> {
    let predicate = serde_json::to_value(entry)?;
    let digest = Sha256Digest::of_bytes(&canonical_json(&predicate));
    let statement = Statement::new(
        &subject_name(entry.seq),
        digest,
        PREDICATE_LEDGER_ENTRY,
        predicate,
    );
    Ok(dsse::sign_statement(&statement, key).to_json_pretty())
}

/// Opens the entry file `key` (which names `seq`) under the pinned trusted key.
///
/// Rules, in order: `ledger.malformed` for anything that is not a strict DSSE envelope
/// (size, JSON, payload type, base64); `ledger.signature` unless signed by `trusted` (and no
/// signature claiming its key id fails); `ledger.malformed` for a payload that is not a
/// canonical statement with predicate type [`PREDICATE_LEDGER_ENTRY`], exactly one subject
/// whose digest is the SHA-256 of the canonical predicate, and a predicate of exactly the
/// documented shape; `ledger.seq-mismatch` if the predicate's `seq` or the subject name is not
/// the key's; `ledger.malformed` if [`Event::check`] fails (prompt digest, reject stage).
pub fn open_entry(
    key: &str,
    seq: u64,
    bytes: &[u8],
    trusted: &PublicKey,
) -> Result<LedgerEntry, BrokenEntry> {
    open_entry_numbered(key, Some(seq), bytes, trusted)
}

/// [`open_entry`] for a copy of an entry kept outside `ledger/` (the tail hint), whose number
/// is the one it signs: every rule but the name check, which has no name to compare with.
pub fn open_entry_copy(
    key: &str,
    bytes: &[u8],
    trusted: &PublicKey,
) -> Result<LedgerEntry, BrokenEntry> {
    open_entry_numbered(key, None, bytes, trusted)
}

/// [`open_entry`], the number taken from the signed entry itself when `expected` is `None`.
fn open_entry_numbered(
    key: &str,
    expected: Option<u64>,
    bytes: &[u8],
    trusted: &PublicKey,
) -> Result<LedgerEntry, BrokenEntry> {
    let broken = |rule: &'static str, reason: String| BrokenEntry {
        key: key.to_owned(),
        rule,
        reason,
    };
    let statement = dsse::verify_envelope(bytes, std::slice::from_ref(trusted), MAX_ENTRY_BYTES)
        .map_err(|e| match e {
            EnvelopeError::NoTrustedSignature { .. } | EnvelopeError::BadSignature { .. } => {
                broken(
                    rule::SIGNATURE,
                    format!("not signed by the trusted key: {e}"),
                )
            }
            other => broken(rule::MALFORMED, other.to_string()),
        })?;
    let entry = statement
        .expect_predicate::<LedgerEntry>(PREDICATE_LEDGER_ENTRY)
        .map_err(|e| broken(rule::MALFORMED, e.to_string()))?
        .into_inner();
    let [subject] = statement.subject.as_slice() else {
        return Err(broken(
            rule::MALFORMED,
            format!(
                "statement has {} subjects, expected exactly one",
                statement.subject.len()
            ),
        ));
    };
    let seq = expected.unwrap_or(entry.seq);
    if entry.seq != seq {
        return Err(broken(
            rule::SEQ_MISMATCH,
            format!(
                "the signed entry says seq {}, but its name says {seq} (moved or swapped)",
                entry.seq
            ),
        ));
    }
    if subject.name != subject_name(seq) {
        return Err(broken(
            rule::SEQ_MISMATCH,
            format!(
                "subject name {:?}, expected {:?}",
                subject.name.chars().take(80).collect::<String>(),
                subject_name(seq)
            ),
        ));
    }
    let digest = Sha256Digest::of_bytes(&canonical_json(&statement.predicate));
    if subject.digest.sha256 != digest {
        return Err(broken(
            rule::MALFORMED,
            format!(
                "subject digest {} is not the sha256 of the canonical predicate ({digest})",
                subject.digest.sha256
            ),
        ));
    }
    entry
        .event
        .check()
        .map_err(|reason| broken(rule::MALFORMED, reason))?;
    Ok(entry)
}
