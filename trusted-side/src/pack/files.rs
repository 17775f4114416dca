//! The `files/` part of a bundle: every selected blob streamed from one `git cat-file
//! --batch`, scanned (every byte: text, UTF-16, printable runs of binaries, one level of
//! decoding), refused, redacted in place or omitted, and written to the tar, one file at a
//! time.
//!
//! Guards against: a secret in a packed file leaving trusted ground (refused, or redacted and
//! recorded under `--redact`; a binary or UTF-16 file with a finding is omitted), an archive
//! smuggling unscanned content (always omitted), and a bundle held in memory (bounded queues
//! between the reader, the scanner and the writer).

use std::fs::File;
use std::io::BufWriter;
use std::sync::mpsc::sync_channel;

use airlock_core::digest::{HashingWriter, Sha256Digest};
use airlock_core::format::{FileEntry, Omission, Redaction};
use airlock_core::tar::{Cut, DeterministicTarWriter};
use airlock_scan::{Finding, Scanner};
use anyhow::Result;

use super::{PackOptions, ARCHIVE_RULE};
use crate::git::{Repo, TreeEntry};

/// The bundle's writer after its `files/` members, cut (see `DeterministicTarWriter::cut`).
pub(super) type Tar = DeterministicTarWriter<HashingWriter<BufWriter<File>>>;

/// The `files/` part of a bundle: its members (already in `tar`), what the scan found and
/// redacted, and where the compressed stream was cut after them.
pub(super) struct FilesPart {
    pub(super) files: Vec<FileEntry>,
    pub(super) tar: Tar,
    pub(super) findings: Vec<Finding>,
    pub(super) redactions: Vec<Redaction>,
    pub(super) omitted: Vec<Omission>,
    pub(super) bytes: u64,
    pub(super) cut: Cut,
}

pub(super) fn redaction_of(f: &Finding) -> Redaction {
    Redaction {
        path: f.path.clone(),
        line: f.line,
        rule: f.rule_id.clone(),
        fingerprint: f.fingerprint.clone(),
    }
}

/// One file on its way from git to the tar writer.
pub(super) struct Blob {
    path: String,
    executable: bool,
    content: Vec<u8>,
}

/// Selects, scans, redacts and writes every `files/` member, then cuts the stream.
pub(super) fn write_files(
    repo: &Repo,
    keep: &[(String, TreeEntry)],
    opts: &PackOptions<'_>,
    scanner: &Scanner,
    file: File,
) -> Result<FilesPart> {
    let (mut requests, mut responses) = repo.blobs()?.split()?;
    let bar = crate::output::progress(keep.len() as u64, "pack", opts.quiet);
    let max = opts.max_file_bytes;

    std::thread::scope(|s| -> Result<FilesPart> {
        // Thread 1 feeds object ids to git; thread 2 reads blobs; this thread scans and
        // redacts; thread 3 compresses. Queues are bounded: memory stays flat.
        s.spawn(move || {
            for (_, e) in keep {
                if requests.request(&e.oid).is_err() {
                    break;
                }
            }
        });
        let (blob_tx, blob_rx) = sync_channel::<Result<Blob>>(8);
        s.spawn(move || {
            for (path, e) in keep {
                let mut content = Vec::new();
                let r = responses
                    .next_blob(&e.oid, max, &mut content)
                    .map(|()| Blob {
                        path: path.clone(),
                        executable: e.mode == "100755",
                        content,
                    });
                let failed = r.is_err();
                if blob_tx.send(r).is_err() || failed {
                    break;
                }
            }
        });
        let (out_tx, out_rx) = sync_channel::<Blob>(8);
        let writer = s.spawn(move || -> Result<(Vec<FileEntry>, Tar)> {
            let hashing = HashingWriter::new(BufWriter::with_capacity(256 * 1024, file));
            let mut tar = DeterministicTarWriter::new(hashing);
            let mut entries = Vec::new();
            for b in out_rx {
                let sha256 = Sha256Digest::of_bytes(&b.content);
                tar.append_file(
                    &format!("files/{}", b.path),
                    b.executable,
                    b.content.len() as u64,
                    b.content.as_slice(),
                )?;
                entries.push(FileEntry {
                    path: b.path,
                    size: b.content.len() as u64,
                    mode: if b.executable { "0755" } else { "0644" }.to_owned(),
                    sha256,
                });
            }
            Ok((entries, tar))
        });

        let mut findings = Vec::new();
        let mut redactions = Vec::new();
        let mut omitted = Vec::new();
        let mut bytes = 0u64;
        let mut receive_error = None;
        for blob in blob_rx {
            let mut blob = match blob {
                Ok(b) => b,
                Err(e) => {
                    receive_error = Some(e);
                    break;
                }
            };
            bar.inc(1);
            // Archives never ship: their compressed members cannot be scanned byte for byte
            // (see scan/RULES.md), so they are not scanned either.
            if airlock_scan::content::archive_kind(&blob.content).is_some() {
                omitted.push(Omission {
                    path: blob.path,
                    rule: ARCHIVE_RULE.to_owned(),
                    fingerprint: None,
                });
                continue;
            }
            let scanned = scanner.scan_content(&blob.path, &blob.content);
            let found = scanned.findings;
            if !found.is_empty() {
                if !opts.redact {
                    findings.extend(found);
                    continue;
                }
                if !scanned.form.redactable() {
                    // Binary or UTF-16: the finding cannot be cut out in place; the file stays.
                    omitted.extend(found.iter().map(|f| Omission {
                        path: f.path.clone(),
                        rule: f.rule_id.clone(),
                        fingerprint: Some(f.fingerprint.clone()),
                    }));
                    continue;
                }
                blob.content = airlock_scan::redact(&blob.content, &found);
                redactions.extend(found.iter().map(redaction_of));
            }
            bytes += blob.content.len() as u64;
            if !findings.is_empty() {
                continue; // refusing anyway: stop feeding the writer, keep scanning
            }
            if out_tx.send(blob).is_err() {
                break;
            }
        }
        drop(out_tx);
        bar.finish_and_clear();
        let joined = writer
            .join()
            .map_err(|_| anyhow::anyhow!("bundle writer panicked"))?;
        if let Some(e) = receive_error {
            return Err(e);
        }
        let (files, mut tar) = joined?;
        let cut = tar.cut()?;
        Ok(FilesPart {
            files,
            tar,
            findings,
            redactions,
            omitted,
            bytes,
            cut,
        })
    })
}
