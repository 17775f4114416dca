//! The audit ledger: append-only, hash-chained entries for submit, fetch, gate and every
//! refused artifact, each a DSSE envelope signed by the trusted key, kept in the store under
//! `ledger/` so that every trusted host (ephemeral CI runners included) shares one chain.
//! The format and the chain rule are specified in `docs/LEDGER.md`.
//!
//! Guards against: edited, dropped, reordered, moved, forged or forked entries. [`verify`]
//! walks `ledger/` in order and names the first broken entry with a stable rule id (see
//! [`rule`]); [`verify_pinned`] also detects a truncated tail or rewritten history against a
//! head pinned elsewhere. [`append`] refuses to extend a tail that is not a valid entry, and
//! retries (bounded) when another host appended concurrently.
//!
//! On `Ok`: [`verify`] saw entries `1..=n` and nothing else under `ledger/`, every one signed by
//! the pinned trusted key, each `prev` the SHA-256 of its predecessor's file bytes, times
//! non-decreasing. [`show_job`] reads only such a ledger.
//!
//! Does not check (cannot): that the tail was not truncated, unless a head is pinned; anything
//! about an entry signed with a compromised trusted key; that the events are true (the ledger
//! records what the trusted side did, it does not re-run it).

mod append;
pub mod bom;
pub mod entry;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use airlock_core::digest::Sha256Digest;
use airlock_core::jobid::JobId;
use airlock_core::keys::PublicKey;
use airlock_core::store_layout::LEDGER_PREFIX;
use anyhow::{Context, Result};
use serde::Serialize;

use crate::store::Store;

pub use append::{append, append_all};
pub use bom::BillOfMaterials;
use entry::{entry_key, open_entry, parse_entry_key, MAX_ENTRY_BYTES, MAX_SEQ};
pub use entry::{Event, GatedFile, LedgerEntry};

/// Stable rule ids of ledger failures (also listed in `docs/LEDGER.md`).
pub mod rule {
    /// An entry number between 1 and the last present entry is missing.
    pub const GAP: &str = "ledger.gap";
    /// An object under `ledger/` is not named `<12 digits>.dsse.json` with a number >= 1.
    pub const NAME: &str = "ledger.name";
    /// The entry is not signed by the pinned trusted key.
    pub const SIGNATURE: &str = "ledger.signature";
    /// The entry is not a strict DSSE envelope over a ledger-entry statement.
    pub const MALFORMED: &str = "ledger.malformed";
    /// The signed sequence number (or subject name) is not the one the object name says.
    pub const SEQ_MISMATCH: &str = "ledger.seq-mismatch";
    /// `prev` is not the SHA-256 of the previous entry's file bytes.
    pub const PREV_MISMATCH: &str = "ledger.prev-mismatch";
    /// `prev` names an earlier entry that another entry already extends: two branches.
    pub const FORK: &str = "ledger.fork";
    /// `at` is earlier than the previous entry's.
    pub const TIME: &str = "ledger.time";
    /// The ledger ends before the pinned head.
    pub const TRUNCATED: &str = "ledger.truncated";
    /// The entry at the pinned head's position is not the pinned one.
    pub const PIN_MISMATCH: &str = "ledger.pin-mismatch";

    /// Every rule id, for the uniqueness test and the docs.
    #[cfg_attr(not(test), allow(dead_code, reason = "read by the uniqueness test"))]
    pub const ALL: [&str; 10] = [
        GAP,
        NAME,
        SIGNATURE,
        MALFORMED,
        SEQ_MISMATCH,
        PREV_MISMATCH,
        FORK,
        TIME,
        TRUNCATED,
        PIN_MISMATCH,
    ];
}

/// Appends give up after this many lost races (each lost race means another append won).
pub const MAX_APPEND_TRIES: u32 = 32;

/// The tail hint: an object beside `ledger/` (not in it, not part of the ledger) holding a
/// copy of the last entry appended, byte for byte (so it carries the entry's own signature).
/// Appends start from it instead of listing `ledger/`, which grows with every entry, and
/// without reading the entry it copies; see [`append`]. Hints written before this format
/// (the number of the entry, `<seq>\n`) are still read, at the price of reading the entry.
/// On a file store it is rewritten in place ([`Store::put_hint`]), so a reader can find it
/// torn: it then does not open, and counts as no hint.
pub const TAIL_HINT: &str = "ledger.tail";

/// After this many lost races in one append, the tail is found by listing `ledger/` again
/// (a hint far behind the tail would otherwise cost two requests per entry it lags).
const HINT_STEPS: u32 = 3;

/// The first broken entry: its object key, the rule and the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BrokenEntry {
    /// Object key, e.g. `ledger/000000000007.dsse.json` (for a gap: the first missing key).
    pub key: String,
    /// Stable rule id (one of [`rule::ALL`]).
    pub rule: &'static str,
    /// Why, naming digests and numbers, never payload text.
    pub reason: String,
}

impl fmt::Display for BrokenEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: rejected ({}): {}", self.key, self.rule, self.reason)
    }
}

/// Why a ledger operation failed (beyond plain store I/O, which is reported with context).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The chain is broken; the first broken entry.
    #[error("{0}")]
    Broken(BrokenEntry),
    /// Every try lost a race against other appenders.
    #[error(
        "ledger: gave up appending after {tries} tries (ledger.contention): other hosts kept \
         appending first"
    )]
    Contention {
        /// Tries made.
        tries: u32,
    },
    /// The entry would be larger than [`MAX_ENTRY_BYTES`].
    #[error("ledger entry for job {job}: too large (ledger.too-large): limit {limit} bytes, seen {seen}")]
    TooLarge {
        /// The job.
        job: JobId,
        /// The limit.
        limit: usize,
        /// The entry's size.
        seen: usize,
    },
    /// The ledger holds [`MAX_SEQ`] entries.
    #[error("ledger is full (ledger.full): {MAX_SEQ} entries")]
    Full,
    /// The event is inconsistent (a caller bug), e.g. a prompt that does not hash to its digest.
    #[error("ledger entry for job {job}: refused (ledger.bad-event): {reason}")]
    BadEvent {
        /// The job.
        job: JobId,
        /// Why.
        reason: String,
    },
    /// `audit show`: the verified ledger has no entry for this job.
    #[error("job {job}: no ledger entries (ledger.unknown-job)")]
    UnknownJob {
        /// The job.
        job: JobId,
    },
}

/// A ledger head: the last entry's number and the SHA-256 of its file bytes. Its text form
/// `<seq>:<sha256>` is what a team pins elsewhere to detect truncation later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LedgerHead {
    /// Entry number.
    pub seq: u64,
    /// SHA-256 of that entry's file bytes.
    pub sha256: Sha256Digest,
}

impl fmt::Display for LedgerHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.seq, self.sha256)
    }
}

impl FromStr for LedgerHead {
    type Err = anyhow::Error;
    /// Parses `<seq>:<64 lowercase hex>` with `seq` in `1..=MAX_SEQ`, decimal without sign or
    /// leading zeros.
    fn from_str(s: &str) -> Result<Self> {
        let err = || {
            anyhow::anyhow!(
                "ledger head {:?} is malformed (ledger.head): expected <seq>:<sha256 hex>",
                s.chars().take(100).collect::<String>()
            )
        };
        let (seq, digest) = s.split_once(':').ok_or_else(err)?;
        let canonical =
            !seq.is_empty() && seq.bytes().all(|c| c.is_ascii_digit()) && !seq.starts_with('0');
        let seq: u64 = seq.parse().map_err(|_| err())?;
        if !canonical || seq > MAX_SEQ {
            return Err(err());
        }
        let sha256 = Sha256Digest::from_hex(digest).map_err(|_| err())?;
        Ok(LedgerHead { seq, sha256 })
    }
}

/// What a successful [`verify`] saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Number of entries (`1..=entries` all present and valid).
    pub entries: u64,
    /// The head (`None` for an empty ledger). Pin it to detect truncation later.
    pub head: Option<LedgerHead>,
    /// Key id (sha256 of the raw public key) of the trusted key every entry was checked with.
    pub trusted_key_id: String,
    /// `at` of the first entry, unix seconds.
    pub first_at: Option<u64>,
    /// `at` of the last entry, unix seconds.
    pub last_at: Option<u64>,
    /// The pinned head that was checked, if any.
    pub pinned: Option<LedgerHead>,
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.head {
            None => write!(f, "ledger OK: empty (trusted key {})", self.trusted_key_id)?,
            Some(head) => {
                write!(
                    f,
                    "ledger OK: {} entries, every signature by trusted key {}, chain intact\nhead {head}",
                    self.entries, self.trusted_key_id
                )?;
                if let (Some(a), Some(b)) = (self.first_at, self.last_at) {
                    write!(
                        f,
                        "\nfrom {} to {}",
                        airlock_core::jobid::rfc3339_utc(a),
                        airlock_core::jobid::rfc3339_utc(b)
                    )?;
                }
            }
        }
        match &self.pinned {
            Some(pin) => write!(f, "\npinned head {pin} matches"),
            None => write!(
                f,
                "\nnote: a truncated tail is only detectable against a pinned head \
                 (record the head elsewhere; check with the pin next time)"
            ),
        }
    }
}

/// Reads an entry file whose listed size is `size`; an oversized one is a broken entry
/// (`ledger.malformed`). The read itself is capped too (the object may change after listing).
fn read_entry(store: &Store, key: &str, size: u64) -> Result<Option<Vec<u8>>> {
    if size > MAX_ENTRY_BYTES as u64 {
        return Err(LedgerError::Broken(BrokenEntry {
            key: key.to_owned(),
            rule: rule::MALFORMED,
            reason: format!("too large: limit {MAX_ENTRY_BYTES} bytes, object is {size}"),
        })
        .into());
    }
    store
        .get_bytes(key, MAX_ENTRY_BYTES as u64)
        .with_context(|| format!("ledger: cannot read {key}"))
}

/// Verifies the whole ledger against the pinned trusted key. A broken chain is an `Err`
/// holding [`LedgerError::Broken`] with the first broken entry; store failures are other
/// errors. The rules, in the order they are checked, are in `docs/LEDGER.md`.
pub fn verify(store: &Store, trusted: &PublicKey) -> Result<VerifyReport> {
    walk(store, trusted, None, None, |_, _| {})
}

/// [`verify`], and also: the ledger reaches `pin.seq` (else `ledger.truncated`) and entry
/// `pin.seq` hashes to `pin.sha256` (else `ledger.pin-mismatch`: history was rewritten).
pub fn verify_pinned(store: &Store, trusted: &PublicKey, pin: &LedgerHead) -> Result<VerifyReport> {
    walk(store, trusted, Some(pin), None, |_, _| {})
}

/// The generation bill of materials of `job`, from a ledger that verifies in full.
pub fn show_job(store: &Store, trusted: &PublicKey, job: &JobId) -> Result<BillOfMaterials> {
    let mut mine = Vec::new();
    let report = walk(store, trusted, None, None, |seq, entry| {
        if entry.job == *job {
            mine.push((seq, entry.clone()));
        }
    })?;
    if mine.is_empty() {
        return Err(LedgerError::UnknownJob { job: job.clone() }.into());
    }
    Ok(BillOfMaterials::from_entries(job.clone(), mine, report))
}

/// The current gate decision of every job, from a ledger that verifies in full: the last
/// `gate` entry's `decision` per job. A broken ledger is an error (fail closed: `gc` deletes
/// by it).
pub fn decisions(
    store: &Store,
    trusted: &PublicKey,
) -> Result<std::collections::BTreeMap<JobId, String>> {
    let mut out = std::collections::BTreeMap::new();
    walk(store, trusted, None, None, |_, entry| {
        if let Event::Gate { decision, .. } = &entry.event {
            out.insert(entry.job.clone(), decision.clone());
        }
    })?;
    Ok(out)
}

/// A job's last `approve` or `decline` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastReview {
    /// `approve` or `decline`.
    pub kind: &'static str,
    /// Who decided.
    pub by: String,
    /// The entry's `at`, unix seconds.
    pub at: u64,
    /// The gate entry decided on.
    pub gate_entry: u64,
}

/// The people's decisions (`approve`, `decline`) per job, from a ledger that verifies in
/// full: for each job, the last one.
pub fn reviews(
    store: &Store,
    trusted: &PublicKey,
) -> Result<std::collections::BTreeMap<JobId, LastReview>> {
    let mut out = std::collections::BTreeMap::new();
    walk(store, trusted, None, None, |_, entry| {
        if let Event::Approve { by, gate_entry, .. } | Event::Decline { by, gate_entry, .. } =
            &entry.event
        {
            let review = LastReview {
                kind: entry.event.kind(),
                by: by.clone(),
                at: entry.at,
                gate_entry: *gate_entry,
            };
            out.insert(entry.job.clone(), review);
        }
    })?;
    Ok(out)
}

/// Verifies the whole ledger (as [`verify`]) and calls `visit` on every entry, in order: for
/// readers that need more than one job's entries (model history, audit export).
pub fn visit_verified(
    store: &Store,
    trusted: &PublicKey,
    visit: impl FnMut(u64, &LedgerEntry),
) -> Result<VerifyReport> {
    walk(store, trusted, None, None, visit)
}

/// [`visit_verified`] for a reader that already read the ledger through `through`: the entries
/// before it are neither listed nor read again (one listing request on S3 for what follows,
/// however long the ledger), `through` itself must still be there (else `ledger.gap`, or
/// `ledger.truncated` when nothing follows) and hash the same (else `ledger.pin-mismatch`)
/// and is not visited, and `visit` sees only the entries after it, chained to it. The report's
/// `first_at` is then the first read entry's.
pub fn visit_verified_after(
    store: &Store,
    trusted: &PublicKey,
    through: &LedgerHead,
    visit: impl FnMut(u64, &LedgerEntry),
) -> Result<VerifyReport> {
    walk(store, trusted, None, Some(through), visit)
}

/// Walks `ledger/` in name order, checking every rule; calls `visit` on each valid entry.
/// With `resume`, the entries before it are not read (see [`visit_verified_after`]).
fn walk(
    store: &Store,
    trusted: &PublicKey,
    pin: Option<&LedgerHead>,
    resume: Option<&LedgerHead>,
    mut visit: impl FnMut(u64, &LedgerEntry),
) -> Result<VerifyReport> {
    let broken = |key: String, rule: &'static str, reason: String| -> anyhow::Error {
        LedgerError::Broken(BrokenEntry { key, rule, reason }).into()
    };
    // Resuming, only `resume` and what follows it is listed (one request on S3 however long
    // the ledger), so the entries before it are not checked again.
    let from = resume.map_or(1, |r| r.seq.max(1));
    let objects = match from {
        1 => store.list(LEDGER_PREFIX),
        _ => store.list_after(LEDGER_PREFIX, &entry_key(from - 1)),
    }
    .context("ledger: cannot list entries")?;
    let mut expected = from;
    let mut last: Option<(Sha256Digest, u64)> = None; // previous entry's digest and `at`
    let mut seen: HashMap<Sha256Digest, u64> = HashMap::new();
    let mut first_at = None;
    for obj in &objects {
        let key = obj.key.as_str();
        let Some(seq) = parse_entry_key(key) else {
            return Err(broken(
                key.chars().take(200).collect(),
                rule::NAME,
                format!(
                    "not an entry name (expected {LEDGER_PREFIX}<12 digits, from 1>.dsse.json)"
                ),
            ));
        };
        if seq != expected {
            return Err(broken(
                entry_key(expected),
                rule::GAP,
                format!("entry {expected} is missing (the next present entry is {key})"),
            ));
        }
        let Some(bytes) = read_entry(store, key, obj.size)? else {
            return Err(broken(
                key.to_owned(),
                rule::GAP,
                "listed but gone when read (deleted during verification)".into(),
            ));
        };
        let entry = open_entry(key, seq, &bytes, trusted).map_err(LedgerError::Broken)?;
        let digest = Sha256Digest::of_bytes(&bytes);
        if let Some(r) = resume.filter(|r| r.seq == seq) {
            if r.sha256 != digest {
                return Err(broken(
                    key.to_owned(),
                    rule::PIN_MISMATCH,
                    format!(
                        "hashes to {digest}, but it was read through as {r} (history rewritten)"
                    ),
                ));
            }
            seen.insert(digest, seq);
            last = Some((digest, entry.at));
            expected += 1;
            continue;
        }
        match (&last, entry.prev) {
            (None, None) => {}
            (None, Some(p)) => {
                return Err(broken(
                    key.to_owned(),
                    rule::PREV_MISMATCH,
                    format!("the first entry must have prev null, found {p}"),
                ))
            }
            (Some(_), None) => {
                return Err(broken(
                    key.to_owned(),
                    rule::PREV_MISMATCH,
                    "prev is null, but only entry 1 may start a chain".into(),
                ))
            }
            (Some((want, _)), Some(p)) if p == *want => {}
            (Some((want, _)), Some(p)) => {
                return Err(match seen.get(&p) {
                    Some(&j) => broken(
                        key.to_owned(),
                        rule::FORK,
                        format!(
                            "prev is entry {j} ({p}), which entry {} already extends: two \
                             branches (concurrent appends on a store without atomic create?)",
                            j + 1
                        ),
                    ),
                    None => broken(
                        key.to_owned(),
                        rule::PREV_MISMATCH,
                        format!(
                            "prev is {p}, but {} hashes to {want} (edited, replaced or reordered)",
                            entry_key(seq - 1)
                        ),
                    ),
                })
            }
        }
        if let Some((_, prev_at)) = last {
            if entry.at < prev_at {
                return Err(broken(
                    key.to_owned(),
                    rule::TIME,
                    format!(
                        "at {} is earlier than the previous entry's {prev_at}",
                        entry.at
                    ),
                ));
            }
        }
        if let Some(pin) = pin {
            if pin.seq == seq && pin.sha256 != digest {
                return Err(broken(
                    key.to_owned(),
                    rule::PIN_MISMATCH,
                    format!("hashes to {digest}, but the pinned head is {pin} (history rewritten)"),
                ));
            }
        }
        visit(seq, &entry);
        first_at.get_or_insert(entry.at);
        seen.insert(digest, seq);
        last = Some((digest, entry.at));
        expected += 1;
    }
    let entries = expected - 1;
    if let Some(pin) = pin.or(resume) {
        if pin.seq > entries {
            return Err(broken(
                entry_key(entries + 1),
                rule::TRUNCATED,
                format!(
                    "the ledger ends at entry {entries}, but the pinned head is {pin} (entries \
                     were removed from the tail)"
                ),
            ));
        }
    }
    Ok(VerifyReport {
        entries,
        head: last.map(|(sha256, _)| LedgerHead {
            seq: entries,
            sha256,
        }),
        trusted_key_id: trusted.key_id(),
        first_at,
        last_at: last.map(|(_, at)| at),
        pinned: pin.copied(),
    })
}
