//! `airlock audit export [--since DATE] --out FILE`: every envelope of the selected jobs as
//! in-toto JSON lines (`.intoto.jsonl`: one DSSE envelope per line), for a security team to
//! verify offline with standard tools (`docs/AUDIT.md`, `examples/verify-ledger.py --export`).
//!
//! Per job, in this order: the job record (`records/<job>.dsse.json`, trusted key), the bundle
//! statement (`inbox/<job>/bundle.dsse.json`, trusted key), the artifact statement (job key:
//! the copy the home kept at the first fetch, the store's `drop/<job>/artifact.dsse.json` only
//! when there is none), the first-fetch record (`records/<job>.fetched.dsse.json`, trusted
//! key), then the job's ledger entries in order; after every job, the other jobs' entries from
//! the selection's first entry to the head, so the chain is unbroken. Envelopes outlive
//! `airlock gc`, so an export after gc is complete.
//!
//! Guards against: exporting from a broken ledger (the ledger is verified in full first, and
//! the record of each job under the trusted key), and half-written output (temp file, rename).
//! Does not check: the artifact envelope's signature (the export carries evidence; the
//! verifier checks it, with the job key from the record).

use std::io::Write;
use std::path::Path;

use airlock_core::format::MAX_ENVELOPE_BYTES;
use airlock_core::jobid::JobId;
use airlock_core::keys::PublicKey;
use airlock_core::store_layout as layout;
use anyhow::{Context, Result};
use serde::Serialize;

use crate::exit::Outcome;
use crate::ledger::entry::{entry_key, MAX_ENTRY_BYTES};
use crate::store::Store;

/// What an export wrote.
#[derive(Debug, Serialize)]
pub struct ExportSummary {
    /// The output file.
    pub out: String,
    /// Jobs exported.
    pub jobs: usize,
    /// Lines (envelopes) written.
    pub envelopes: usize,
    /// Envelopes that should exist but were not found (object key or path), e.g. an artifact
    /// that never landed.
    pub missing: Vec<String>,
    /// Key id of the trusted key the ledger verified under.
    pub trusted_key_id: String,
}

/// `YYYY-MM-DD` (UTC) as unix seconds at 00:00.
pub fn parse_date(s: &str) -> Result<u64> {
    let bad = || anyhow::anyhow!("--since {s:?}: expected a date YYYY-MM-DD (UTC)");
    let parts: Vec<&str> = s.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return Err(bad());
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let (y, m, d): (i64, i64, i64) = (
        y.parse().map_err(|_| bad())?,
        m.parse().map_err(|_| bad())?,
        d.parse().map_err(|_| bad())?,
    );
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(bad());
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400).map_err(|_| bad())
}

/// The envelope bytes as one line: parsed, re-encoded compactly (the signatures cover the
/// payload, not the envelope's whitespace).
fn one_line(bytes: &[u8], what: &str) -> Result<Vec<u8>> {
    let v: serde_json::Value =
        serde_json::from_slice(bytes).with_context(|| format!("{what}: not JSON"))?;
    let mut line = serde_json::to_vec(&v)?;
    line.push(b'\n');
    Ok(line)
}

/// The artifact envelope to export: the copy the home kept at the first fetch, never the
/// store's current one when there is a kept copy (a worker may swap the drop's envelope after
/// the fetch wherever the store does not enforce write-once). Without a kept copy (never
/// fetched here) the store's, read beneath the store root; one the store refuses (a link, a
/// device: `store/beneath.rs`) is missing, not followed.
fn artifact_envelope(home: &Path, store: &Store, job: &JobId) -> Result<Option<Vec<u8>>> {
    let kept = crate::fetch::job_dir(home, job).join("artifact.dsse.json");
    match std::fs::read(&kept) {
        Ok(b) => return Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("{}: cannot read", kept.display())),
    }
    match store.get_bytes(
        &layout::drop_artifact_envelope(job),
        MAX_ENVELOPE_BYTES as u64,
    ) {
        Ok(b) => Ok(b),
        Err(e) => match e.downcast_ref::<crate::store::beneath::BeneathError>() {
            Some(crate::store::beneath::BeneathError::Refused(r)) => {
                tracing::warn!("{r}");
                Ok(None)
            }
            _ => Err(e),
        },
    }
}

/// Ledger entry `seq` as one export line.
fn entry_line(store: &Store, seq: u64) -> Result<Vec<u8>> {
    let key = entry_key(seq);
    let b = store
        .get_bytes(&key, MAX_ENTRY_BYTES as u64)?
        .with_context(|| format!("{key}: gone since the ledger was verified"))?;
    one_line(&b, &key)
}

/// Writes the export of the jobs submitted at or after `since` (unix seconds) to `out`.
pub fn export(
    home: &Path,
    store: &Store,
    trusted: &PublicKey,
    since: Option<u64>,
    out: &Path,
) -> Result<ExportSummary> {
    let mut entries: std::collections::BTreeMap<JobId, Vec<u64>> = Default::default();
    let report = crate::ledger::visit_verified(store, trusted, |seq, entry| {
        entries.entry(entry.job.clone()).or_default().push(seq);
    })?;
    let mut jobs = Vec::new();
    for job in crate::status::list_jobs(store)? {
        let record = crate::fetch::load_record(store, trusted, &job)?;
        if since.is_none_or(|s| record.issued_at >= s) {
            jobs.push((record.issued_at, job));
        }
    }
    jobs.sort();
    let mut lines: Vec<u8> = Vec::new();
    let mut missing = Vec::new();
    let mut envelopes = 0usize;
    for (_, job) in &jobs {
        let keys = [
            layout::job_record(job),
            layout::inbox_bundle_envelope(job),
            layout::drop_artifact_envelope(job),
            format!("records/{job}.fetched.dsse.json"),
        ];
        for key in keys {
            let bytes = if key == layout::drop_artifact_envelope(job) {
                artifact_envelope(home, store, job)?
            } else {
                store.get_bytes(&key, MAX_ENVELOPE_BYTES as u64)?
            };
            match bytes {
                Some(b) => {
                    lines.extend(one_line(&b, &key)?);
                    envelopes += 1;
                }
                None => missing.push(key),
            }
        }
        for &seq in entries.get(job).map(Vec::as_slice).unwrap_or_default() {
            lines.extend(entry_line(store, seq)?);
            envelopes += 1;
        }
    }
    // The chain links every entry to the one before it, whatever its job: every entry from the
    // selection's first to the head goes in (other jobs' after the blocks, in order), so a
    // verifier can require an unbroken run and see any line deleted, repeated or moved.
    let selected: std::collections::BTreeSet<&JobId> = jobs.iter().map(|(_, j)| j).collect();
    let first = selected
        .iter()
        .filter_map(|j| entries.get(*j).and_then(|s| s.first()))
        .min()
        .copied();
    if let Some(first) = first {
        let mut others: Vec<u64> = entries
            .iter()
            .filter(|(j, _)| !selected.contains(j))
            .flat_map(|(_, s)| s.iter().copied().filter(|&q| q >= first))
            .collect();
        others.sort_unstable();
        for seq in others {
            lines.extend(entry_line(store, seq)?);
            envelopes += 1;
        }
    }
    let dir = out.parent().filter(|p| !p.as_os_str().is_empty());
    let mut tmp = tempfile::NamedTempFile::new_in(dir.unwrap_or(Path::new(".")))
        .with_context(|| format!("{}: cannot create a file beside it", out.display()))?;
    tmp.write_all(&lines)?;
    tmp.persist(out)
        .with_context(|| format!("{}: cannot write", out.display()))?;
    Ok(ExportSummary {
        out: out.display().to_string(),
        jobs: jobs.len(),
        envelopes,
        missing,
        trusted_key_id: report.trusted_key_id,
    })
}

/// `airlock audit export`.
pub fn run(
    home: &crate::config::Home,
    store: &Store,
    trusted: &PublicKey,
    since: Option<&str>,
    out: &Path,
    json: bool,
) -> Result<Outcome> {
    let since = since.map(parse_date).transpose()?;
    let s = export(&home.dir, store, trusted, since, out)?;
    if json {
        crate::output::print_json(&s)?;
    } else {
        println!(
            "wrote {} envelope(s) of {} job(s) to {} (ledger verified under trusted key {})",
            s.envelopes, s.jobs, s.out, s.trusted_key_id
        );
        for m in &s.missing {
            println!("  not found: {m}");
        }
        println!("verify offline: python3 examples/verify-ledger.py --export FILE TRUSTED_PUB (docs/AUDIT.md)");
    }
    Ok(Outcome::Ok)
}

#[cfg(test)]
mod tests {
    use super::parse_date;

    #[test]
    fn dates_parse_to_utc_midnight_and_nonsense_is_refused() {
        assert_eq!(parse_date("1970-01-01").unwrap(), 0);
        assert_eq!(parse_date("2026-12-01").unwrap(), 1_796_083_200);
        for bad in [
            "2026-1-01",
            "26-12-01",
            "2026-13-01",
            "2026-12-01T00",
            "",
            "x",
        ] {
            assert!(parse_date(bad).is_err(), "{bad}");
        }
    }
}
