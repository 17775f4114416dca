//! Step 4: reads the job's bundle back from the inbox for what the gate needs of it: the
//! packed listing, the lines that were redacted at pack time, and the start of each packed file
//! for the classification's tree layers (up to [`KEPT_MAX_BYTES`] in all, so they read the
//! repository only for what a large tree leaves out).
//!
//! The bundle is streamed (capped; read in place from a file store, downloaded to a scratch
//! file in the job directory from others) through the hasher and the safe tar reader at once;
//! nothing read is used unless its sha256 is the signed job record's. When `submit` left an
//! index of this bundle in the home (`index.rs`), the bundle is only hashed, and the gate reads
//! the index instead: the same listing and redacted lines, and what the entry points reach.
//!
//! Guards against: a bundle swapped or edited in the inbox (`bundle-digest-mismatch`), one the
//! safe reader refuses or without a valid manifest, or a manifest naming another revision
//! (`bundle-refused`); a bundle too large to read (the cap).
//! Does not check: the patch against the listing (`checks.rs` does).

use std::collections::{BTreeSet, HashMap};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use airlock_core::digest::{HashingReader, Sha256Digest};
use airlock_core::format::{JobRecord, Manifest, MAX_MANIFEST_BYTES};
use airlock_core::limits::TarLimits;
use airlock_core::store_layout as layout;
use airlock_core::tar::{read_members, AllowedNames, TarError};
use anyhow::{Context, Result};

use super::checks::RedactedLines;
use super::policy::Verdict;
use super::Stop;
use crate::classify::reach::{TreeReach, MAX_READ_BYTES};
use crate::classify::tree::Listing;
use crate::reasons::ReasonCode;
use crate::report::Reason;
use crate::store::Store;

/// The marker the packer writes in place of each line of a redacted secret.
const REDACTION_MARKER: &[u8] = b"[REDACTED:";

/// Bytes of packed files kept for the tree layers, in all.
pub const KEPT_MAX_BYTES: usize = 64 * 1024 * 1024;

/// The parts of the bundle the gate needs.
#[derive(Debug, Default)]
pub struct BundleView {
    /// The packed tree, as listed in the bundle's manifest.
    pub listing: Listing,
    /// Lines redacted at pack time, per path: the manifest's records and every line of a
    /// packed file holding a marker.
    pub redacted: RedactedLines,
    /// The first [`MAX_READ_BYTES`] of packed files, by path, as packed (redacted).
    pub kept: HashMap<String, Vec<u8>>,
    /// Whether every packed file is in `kept` (else the budget ran out).
    pub kept_all: bool,
    /// What the tree's entry points reach, worked out at submit (from the index).
    pub reach: Option<TreeReach>,
    /// The revision's symbolic links, listed at submit (from an index that has them); else
    /// the gate lists them from the repository.
    pub links: Option<Vec<crate::classify::tree::Link>>,
    /// Why an index was there but not used.
    pub warnings: Vec<String>,
}

/// Reads the bundle of `record`'s job, or hashes it and uses `index`, what reading `submit`'s
/// index of it gave ([`super::index::read`]). A refused bundle stops the checks with a reject;
/// a missing one, or a store or disk failure, is an error (exit 1).
pub fn read_bundle(
    store: &Store,
    job_dir: &Path,
    record: &JobRecord,
    index: Result<Option<BundleView>>,
) -> Result<BundleView, Stop> {
    let cap = cap();
    let (path, _scratch) = locate(store, job_dir, record, cap)?;
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(gone(record).into()),
        Err(e) => {
            return Err(anyhow::Error::new(e)
                .context(path.display().to_string())
                .into())
        }
    };
    let mut warnings = Vec::new();
    let index = index.unwrap_or_else(|e| {
        warnings.push(format!("{e:#}; the gate read the bundle instead"));
        None
    });
    let Hashed { digest, size, read } = hash_and_read(file, index.is_none())
        .with_context(|| format!("{}: cannot read the bundle", path.display()))?;
    if size > cap || digest != record.bundle_sha256 {
        let over = if size > cap {
            " (over the size cap)"
        } else {
            ""
        };
        return Err(Stop::Reject(Reason::new(
            ReasonCode::BundleDigestMismatch,
            Verdict::Reject,
            format!(
                "{} hashes to sha256:{digest}{over}; the signed job record says sha256:{}",
                layout::inbox_bundle(&record.job),
                record.bundle_sha256
            ),
        )));
    }
    let (view, manifest) = match (index, read) {
        (Some(view), _) => return Ok(BundleView { warnings, ..view }),
        (None, Some(read)) => read?,
        (None, None) => return Err(anyhow::anyhow!("the bundle was hashed, not read").into()),
    };
    if manifest.source.revision != record.revision {
        return Err(refused(format!(
            "manifest.json names revision {}; the job record says {}",
            manifest.source.revision, record.revision
        )));
    }
    Ok(BundleView { warnings, ..view })
}

/// The largest bundle read.
fn cap() -> u64 {
    let limits = TarLimits::bundle();
    limits
        .max_stream_bytes()
        .saturating_add(limits.max_stream_bytes() / 64)
}

/// A bundle hashed, and read when asked.
pub(crate) struct Hashed {
    /// The sha256 of what was hashed: nothing read may be used unless it is the expected one.
    pub digest: Sha256Digest,
    /// Bytes hashed (at most one more than the cap).
    pub size: u64,
    /// The view and manifest, or the reject that refuses the bundle (`None`: not read).
    pub read: Option<Result<(BundleView, Manifest), Stop>>,
}

/// Hashes `file` up to the cap and, when `read` is set, reads the bundle in the same pass.
pub(crate) fn hash_and_read(file: std::fs::File, read: bool) -> std::io::Result<Hashed> {
    let limits = TarLimits::bundle();
    let mut hashing = HashingReader::new(BufReader::new(file).take(cap() + 1));
    let mut manifest_bytes: Option<Vec<u8>> = None;
    let mut view = BundleView {
        kept_all: true,
        ..BundleView::default()
    };
    let mut markers = MarkerLines::new();
    let mut kept_bytes = 0usize;
    let tar = match read {
        false => Ok(()),
        true => read_members(&mut hashing, &limits, &AllowedNames::Bundle, |m, r| {
            let io = |e| TarError::io(Some(&m.path), "read", e);
            if m.path == "manifest.json" {
                let mut buf = Vec::new();
                r.take(MAX_MANIFEST_BYTES as u64 + 1)
                    .read_to_end(&mut buf)
                    .map_err(io)?;
                manifest_bytes = Some(buf);
            } else if let Some(rel) = m.path.strip_prefix("files/") {
                let room = MAX_READ_BYTES.min(KEPT_MAX_BYTES - kept_bytes);
                let mut start = Vec::new();
                let lines = markers.in_reader(r, &mut start, room).map_err(io)?;
                if !lines.is_empty() {
                    view.redacted.insert(rel.to_owned(), lines);
                }
                if start.len() < room || room == MAX_READ_BYTES {
                    kept_bytes += start.len();
                    view.kept.insert(rel.to_owned(), start);
                } else {
                    view.kept_all = false;
                }
            }
            Ok(())
        })
        .map(drop),
    };
    // Hash what the reader left (trailing bytes, a refused archive's rest) up to the cap.
    std::io::copy(&mut hashing, &mut std::io::sink())?;
    let (_, digest, size) = hashing.finish();
    let view_of = || -> Result<(BundleView, Manifest), Stop> {
        if let Err(e) = tar {
            let rule = e.rule().id();
            let reason = Reason::new(
                ReasonCode::BundleRefused,
                Verdict::Reject,
                e.with_label("bundle.tar.gz").to_string(),
            );
            return Err(Stop::Reject(reason.rule(rule)));
        }
        let manifest = match manifest_bytes.as_deref().map(Manifest::from_json) {
            Some(Ok(m)) => m,
            Some(Err(e)) => return Err(refused(e.to_string())),
            None => return Err(refused("bundle.tar.gz has no manifest.json".to_owned())),
        };
        for r in &manifest.redactions {
            view.redacted
                .entry(r.path.clone())
                .or_default()
                .insert(r.line);
        }
        view.listing = Listing::of_manifest(&manifest);
        Ok((view, manifest))
    };
    Ok(Hashed {
        digest,
        size,
        read: read.then(view_of),
    })
}

/// A `bundle-refused` reject.
fn refused(detail: String) -> Stop {
    Stop::Reject(Reason::new(
        ReasonCode::BundleRefused,
        Verdict::Reject,
        detail,
    ))
}

/// Where the bundle can be read: in place on a file store, else downloaded to a scratch
/// directory in the job directory (removed when the returned guard drops).
fn locate(
    store: &Store,
    job_dir: &Path,
    record: &JobRecord,
    cap: u64,
) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    let key = layout::inbox_bundle(&record.job);
    if let Some(root) = store.local_root() {
        return Ok((root.join(&key), None));
    }
    std::fs::create_dir_all(job_dir)?;
    let dir = tempfile::Builder::new()
        .prefix(".bundle-")
        .tempdir_in(job_dir)
        .with_context(|| format!("{}: cannot create a scratch directory", job_dir.display()))?;
    let path = dir.path().join("bundle.tar.gz");
    if store.get_to_file(&key, cap, &path)?.is_none() {
        return Err(gone(record));
    }
    Ok((path, Some(dir)))
}

/// The error for a bundle no longer in the inbox.
fn gone(record: &JobRecord) -> anyhow::Error {
    let job = &record.job;
    anyhow::anyhow!(
        "job {job}: the bundle is gone from the inbox ({}): it was garbage-collected or never uploaded, and the gate needs its manifest (submit the job again)",
        layout::inbox_bundle(job)
    )
}

/// Finds the lines holding a redaction marker (the marker holds no newline, so a line holds
/// one exactly when the marker occurs between two newlines). One buffer serves every member.
pub(super) struct MarkerLines {
    finder: memchr::memmem::Finder<'static>,
    buf: Vec<u8>,
}

impl MarkerLines {
    /// Bytes read per step.
    const CHUNK: usize = 16 * 1024;

    pub(super) fn new() -> MarkerLines {
        MarkerLines {
            finder: memchr::memmem::Finder::new(REDACTION_MARKER),
            buf: Vec::new(),
        }
    }

    /// 1-based numbers of the lines holding a marker in what `r` yields, read in chunks; a
    /// marker split between two reads is found, because the last `marker - 1` bytes of each
    /// chunk start the next. The first `keep_max` bytes read are appended to `keep`.
    pub(super) fn in_reader(
        &mut self,
        r: &mut dyn Read,
        keep: &mut Vec<u8>,
        keep_max: usize,
    ) -> std::io::Result<BTreeSet<u64>> {
        let carry_max = REDACTION_MARKER.len() - 1;
        self.buf.resize(carry_max + Self::CHUNK, 0);
        let mut out = BTreeSet::new();
        let (mut carried, mut line) = (0usize, 1u64);
        loop {
            let n = match r.read(&mut self.buf[carried..]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let filled = carried + n;
            let room = keep_max.saturating_sub(keep.len());
            keep.extend_from_slice(&self.buf[carried..filled][..n.min(room)]);
            let carry = carry_max.min(filled);
            let data = &self.buf[..filled];
            let (mut at_line, mut counted) = (line, 0usize);
            for at in self.finder.find_iter(data) {
                at_line += memchr::memchr_iter(b'\n', &data[counted..at]).count() as u64;
                counted = at;
                out.insert(at_line);
            }
            line += memchr::memchr_iter(b'\n', &data[..filled - carry]).count() as u64;
            self.buf.copy_within(filled - carry..filled, 0);
            carried = carry;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes per read, to split markers between reads.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn marker_lines_are_found_across_reads_and_chunks() {
        // The definition: lines (split at '\n') containing the marker, 1-based.
        let by_lines = |data: &[u8]| -> BTreeSet<u64> {
            data.split(|b| *b == b'\n')
                .enumerate()
                .filter(|(_, l)| {
                    l.windows(REDACTION_MARKER.len())
                        .any(|w| w == REDACTION_MARKER)
                })
                .map(|(i, _)| i as u64 + 1)
                .collect()
        };
        let mut data = Vec::new();
        for i in 0..5_000u32 {
            match i % 7 {
                0 => data.extend_from_slice(b"x = \"[REDACTED:aws-key]\"\n"),
                3 => data.extend_from_slice(b"[REDACTED:a][REDACTED:b] two on one line\n"),
                5 => data.extend_from_slice(b"[REDACTED\n:not one]\n"),
                _ => data.extend_from_slice(format!("plain line {i}\n").as_bytes()),
            }
        }
        data.extend_from_slice(b"last line without newline [REDACTED:z]");
        let expected = by_lines(&data);
        assert!(expected.len() > 1_000, "{}", expected.len());
        let mut markers = MarkerLines::new();
        assert_eq!(
            markers
                .in_reader(&mut &data[..], &mut Vec::new(), 0)
                .unwrap(),
            expected
        );
        // Reads of every size around the marker's length and the chunk size, and offsets that
        // put a marker across each chunk boundary.
        for step in [
            1,
            2,
            9,
            10,
            11,
            4096,
            MarkerLines::CHUNK,
            MarkerLines::CHUNK + 1,
        ] {
            let mut r = Trickle { data: &data, step };
            assert_eq!(
                markers.in_reader(&mut r, &mut Vec::new(), 0).unwrap(),
                expected,
                "step {step}"
            );
        }
        for offset in 0..REDACTION_MARKER.len() + 2 {
            let mut shifted = vec![b'.'; MarkerLines::CHUNK - offset];
            shifted.extend_from_slice(&data);
            let expected = by_lines(&shifted);
            let mut r = Trickle {
                data: &shifted,
                step: usize::MAX,
            };
            assert_eq!(
                markers.in_reader(&mut r, &mut Vec::new(), 0).unwrap(),
                expected,
                "offset {offset}"
            );
        }
        assert!(markers
            .in_reader(&mut &b""[..], &mut Vec::new(), 0)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn the_start_of_a_member_is_kept_whatever_the_reads() {
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        let mut markers = MarkerLines::new();
        for (step, keep_max) in [
            (1, 10),
            (7, 40_000),
            (4096, 16 * 1024),
            (usize::MAX, 60_000),
        ] {
            let mut r = Trickle { data: &data, step };
            let mut kept = Vec::new();
            markers.in_reader(&mut r, &mut kept, keep_max).unwrap();
            assert_eq!(kept, &data[..keep_max.min(data.len())], "step {step}");
        }
    }
}
