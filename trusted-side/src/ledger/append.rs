//! Appending to the ledger: the next entry after a valid tail, under contention from other
//! hosts.
//!
//! Guards against: extending a tail that is not a valid entry (refused, `airlock audit
//! verify` names it), two hosts writing the same entry number (each entry is a create-once
//! object; the loser re-reads the tail and retries, at most [`MAX_APPEND_TRIES`] times), and a
//! forged or torn tail hint (skipped with a warning: the hint is not part of the ledger).

use airlock_core::digest::Sha256Digest;
use airlock_core::jobid::JobId;
use airlock_core::keys::{PublicKey, SigningKey};
use airlock_core::store_layout::LEDGER_PREFIX;
use anyhow::{Context, Result};

use super::entry::{
    entry_key, open_entry, open_entry_copy, parse_entry_key, seal, MAX_ENTRY_BYTES, MAX_SEQ,
};
use super::{read_entry, Event, LedgerEntry, LedgerError, HINT_STEPS, MAX_APPEND_TRIES, TAIL_HINT};
use crate::store::Store;

/// Appends `event` about `job` as the next entry, signed by `key`; returns its number.
/// The same as [`append_all`] with one event.
pub fn append(
    store: &Store,
    key: &SigningKey,
    job: &JobId,
    event: Event,
    now_unix: u64,
) -> Result<u64> {
    let seqs = append_all(store, key, job, vec![event], now_unix)?;
    seqs.last()
        .copied()
        .ok_or_else(|| anyhow::anyhow!("ledger: nothing appended"))
}

/// Appends `events` about `job`, in order, as consecutive entries (unless another host appends
/// in between), signed by `key`; returns their numbers. Every event is checked before the
/// first is written.
///
/// Finds the tail: the entry the tail hint ([`TAIL_HINT`]) holds a copy of, if the copy opens
/// under `key`'s public half, else the highest entry name under `ledger/` (a listing; an
/// old-style hint, a number, names the entry to read instead). A tail read from `ledger/` is
/// opened under `key`'s public half too (a tail that is not a valid entry is refused: run
/// `airlock audit verify`). Chains to the tail with `prev` = SHA-256 of its file bytes and
/// `at` = max(`now_unix`, tail's `at`), and writes the next name with a conditional create.
/// If that name exists (another host appended first, or the hint was behind), the entry there
/// becomes the tail and the append is tried again, at most [`MAX_APPEND_TRIES`] times per
/// event; after [`HINT_STEPS`] such steps the tail is listed again. After a successful create
/// on a remote store the entry is read back: on a store whose create-if-absent is not atomic
/// (see `docs/LEDGER.md`), a racing writer that overwrote it is noticed here and the event is
/// appended again ([`Store::create_is_atomic`] stores skip this). The entry just written is
/// the next event's tail candidate (no further read). Last, the hint is set to a copy of the
/// last new entry (best effort: a hint is never trusted, only tried).
pub fn append_all(
    store: &Store,
    key: &SigningKey,
    job: &JobId,
    events: Vec<Event>,
    now_unix: u64,
) -> Result<Vec<u64>> {
    let mut bounded = Vec::with_capacity(events.len());
    for event in events {
        let event = event.bounded();
        event.check().map_err(|reason| LedgerError::BadEvent {
            job: job.clone(),
            reason,
        })?;
        bounded.push(event);
    }
    let public = key.public();
    // The first tail candidate: the entry the hint holds; else where to look for it: an
    // old-style hint's number, then each entry that beat us to a name.
    let (mut known, mut probe) = match read_hint(store, &public) {
        Some(Hint::Copy(tail)) => (Some(tail), None),
        Some(Hint::Number(seq)) => (None, Some(seq)),
        None => (None, None),
    };
    let mut seqs = Vec::with_capacity(bounded.len());
    let mut last = None;
    for event in bounded {
        let (seq, bytes) = append_one(
            store,
            key,
            &public,
            job,
            event,
            now_unix,
            (&mut probe, &mut known),
        )?;
        seqs.push(seq);
        last = Some(bytes);
    }
    if let Some(bytes) = last {
        if let Err(e) = store.put_hint(TAIL_HINT, &bytes) {
            tracing::debug!("ledger: tail hint not updated: {e:#}");
        }
    }
    Ok(seqs)
}

/// One event of [`append_all`]; returns the new entry's number and file bytes. `known` is a
/// tail candidate already opened (the hint's copy, or the entry this process wrote); it is
/// tried first, and replaced by the new entry on success. On a lost race the entry that won
/// is read and becomes the candidate.
fn append_one(
    store: &Store,
    key: &SigningKey,
    public: &PublicKey,
    job: &JobId,
    event: Event,
    now_unix: u64,
    (probe, known): (&mut Option<u64>, &mut Option<Tail>),
) -> Result<(u64, Vec<u8>)> {
    let mut steps = 0u32;
    for _ in 0..MAX_APPEND_TRIES {
        let tail = match (known.take(), probe.take()) {
            (Some(t), _) => t,
            (None, Some(seq)) if steps <= HINT_STEPS => match read_at(store, public, seq)? {
                Some(t) => t,
                None => read_tail(store, public)?,
            },
            _ => read_tail(store, public)?,
        };
        let (seq, prev, at) = match tail {
            Tail::Missing => continue,
            Tail::Empty => (1, None, now_unix),
            Tail::At(seq, digest, tail_at) => {
                if seq >= MAX_SEQ {
                    return Err(LedgerError::Full.into());
                }
                (seq + 1, Some(digest), now_unix.max(tail_at))
            }
        };
        let entry = LedgerEntry {
            seq,
            prev,
            at,
            job: job.clone(),
            event: event.clone(),
        };
        let bytes = seal(&entry, key)?;
        if bytes.len() > MAX_ENTRY_BYTES {
            return Err(LedgerError::TooLarge {
                job: job.clone(),
                limit: MAX_ENTRY_BYTES,
                seen: bytes.len(),
            }
            .into());
        }
        let name = entry_key(seq);
        if !store.put_new(&name, &bytes)? {
            tracing::debug!(entry = %name, "ledger: lost an append race, retrying");
            steps += 1;
            *probe = Some(seq);
            continue;
        }
        // On a store whose create can be a check-then-write, a racing writer may have
        // replaced the entry between the check and our write: read it back.
        let back = if store.create_is_atomic() {
            None
        } else {
            Some(store.get_bytes(&name, MAX_ENTRY_BYTES as u64)?)
        };
        if back.is_some_and(|back| back.as_deref() != Some(bytes.as_slice())) {
            tracing::warn!(
                entry = %name,
                "ledger: entry was overwritten by a concurrent writer (store create-if-absent \
                 is not atomic); appending again"
            );
            *probe = Some(seq);
            steps += 1;
            continue;
        }
        tracing::debug!(entry = %name, job = %job, kind = entry.event.kind(), "ledger: appended");
        *known = Some(Tail::At(seq, Sha256Digest::of_bytes(&bytes), at));
        return Ok((seq, bytes));
    }
    Err(LedgerError::Contention {
        tries: MAX_APPEND_TRIES,
    }
    .into())
}

enum Tail {
    /// No entries yet.
    Empty,
    /// The listed tail vanished before it could be read (retry).
    Missing,
    /// The tail's number, file digest and `at`.
    At(u64, Sha256Digest, u64),
}

/// What a tail hint offers.
enum Hint {
    /// A copy of an entry that opens under the trusted key: a tail candidate as it is.
    Copy(Tail),
    /// An old-style hint: the number of the entry to read.
    Number(u64),
}

/// The tail hint, if it exists and is usable: a copy of an entry that opens under `trusted`
/// (numbered 1 to [`MAX_SEQ`]), or a canonical entry number. Anything else is no hint at all:
/// the hint is not part of the ledger, so a copy that does not open (forged, torn, from
/// another trusted key) is skipped with a warning and the append lists `ledger/` instead,
/// where an invalid tail is refused.
fn read_hint(store: &Store, trusted: &PublicKey) -> Option<Hint> {
    let bytes = store.get_bytes(TAIL_HINT, MAX_ENTRY_BYTES as u64).ok()??;
    if bytes.first() == Some(&b'{') {
        return match copy_as_tail(&bytes, trusted) {
            Ok(tail) => Some(Hint::Copy(tail)),
            Err(why) => {
                tracing::warn!("ledger: tail hint ignored: {why}");
                None
            }
        };
    }
    let text = std::str::from_utf8(&bytes).ok()?.strip_suffix('\n')?;
    let canonical =
        !text.is_empty() && text.bytes().all(|c| c.is_ascii_digit()) && !text.starts_with('0');
    let seq: u64 = text.parse().ok()?;
    (canonical && seq <= MAX_SEQ).then_some(Hint::Number(seq))
}

/// A hint's bytes as a tail candidate: a copy of an entry, numbered 1 to [`MAX_SEQ`], that
/// opens under `trusted`. The error says why not (for the log).
fn copy_as_tail(bytes: &[u8], trusted: &PublicKey) -> std::result::Result<Tail, String> {
    let entry = open_entry_copy(TAIL_HINT, bytes, trusted).map_err(|broken| broken.to_string())?;
    if !(1..=MAX_SEQ).contains(&entry.seq) {
        return Err(format!("no such entry number: {}", entry.seq));
    }
    Ok(Tail::At(entry.seq, Sha256Digest::of_bytes(bytes), entry.at))
}

/// Entry `seq` as a candidate tail (opened under the trusted key); `None` if it does not exist.
fn read_at(store: &Store, trusted: &PublicKey, seq: u64) -> Result<Option<Tail>> {
    let name = entry_key(seq);
    let Some(bytes) = read_entry(store, &name, 0)? else {
        return Ok(None);
    };
    let entry = open_entry(&name, seq, &bytes, trusted).map_err(|b| {
        anyhow::Error::new(LedgerError::Broken(b)).context(
            "ledger: refusing to append after an invalid tail (run `airlock audit verify`)",
        )
    })?;
    Ok(Some(Tail::At(
        seq,
        Sha256Digest::of_bytes(&bytes),
        entry.at,
    )))
}

fn read_tail(store: &Store, trusted: &PublicKey) -> Result<Tail> {
    let objects = store
        .list(LEDGER_PREFIX)
        .context("ledger: cannot list entries")?;
    let Some((seq, size)) = objects
        .iter()
        .filter_map(|o| parse_entry_key(&o.key).map(|seq| (seq, o.size)))
        .max()
    else {
        return Ok(Tail::Empty);
    };
    let name = entry_key(seq);
    let Some(bytes) = read_entry(store, &name, size)? else {
        return Ok(Tail::Missing);
    };
    let entry = open_entry(&name, seq, &bytes, trusted).map_err(|b| {
        anyhow::Error::new(LedgerError::Broken(b)).context(
            "ledger: refusing to append after an invalid tail (run `airlock audit verify`)",
        )
    })?;
    Ok(Tail::At(seq, Sha256Digest::of_bytes(&bytes), entry.at))
}
