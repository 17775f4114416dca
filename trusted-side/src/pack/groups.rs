//! Groups of files: the unit the packer scans and compresses in parallel and keeps in its cache.
//!
//! The selected files, in bundle order, are cut into groups at places that depend only on the
//! paths and sizes of nearby files, so that changing one file changes one group: after a path
//! whose digest is 0 modulo [`ONE_IN`], once a group's files reach [`GROUP_CAP`] bytes, and
//! around a file of [`SOLO_BYTES`] or more (a group of its own). Each group is compressed by a
//! fresh compressor and ended by a cut (`DeterministicTarWriter::cut`: a sync flush), so its
//! compressed bytes depend on its members only, and the `files/` part of a bundle is the
//! concatenation of its groups' bytes, whichever thread or earlier pack produced them.
//!
//! Guards against: a secret in a packed file leaving trusted ground (every file is scanned,
//! unless the result of packing the same content under the same path, mode, rules and options
//! is reused from the cache; a redacted file is scanned again after redaction and any finding
//! refuses the pack), an archive smuggling unscanned content (always omitted), and a group whose
//! members the bundle writer would refuse (each group is written by the deterministic writer,
//! which checks every path and size).

use std::ops::Range;

use airlock_core::digest::Sha256Digest;
use airlock_core::format::{Omission, Redaction};
use airlock_core::tar::{DeterministicTarWriter, GZIP_HEADER};
use airlock_scan::{Finding, Scanner};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ARCHIVE_RULE;
use crate::exit::Refused;
use crate::git::BlobWant;

/// A group ends after a path whose digest is 0 modulo this (about this many files a group).
pub const ONE_IN: u32 = 16;
/// A group ends once its files reach this many bytes.
pub const GROUP_CAP: u64 = 1024 * 1024;
/// A file this large (or larger) is a group of its own.
pub const SOLO_BYTES: u64 = 64 * 1024;
/// Zlib level of the groups and of the manifest after them: deflate is most of a pack's time
/// at level 6; level 3 takes less than half of it for bundles about 8% larger
/// (docs/PERFORMANCE.md).
pub const LEVEL: u32 = 3;
/// Zlib level of what follows the groups (the manifest and the request): written by every
/// pack, cached by none, so its time counts in full against an incremental pack; level 1
/// takes half of level 3's time on a 12,600-file manifest, for 2% of the bundle
/// (docs/PERFORMANCE.md).
pub const TAIL_LEVEL: u32 = 1;

/// A selected file, as the tree lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Member {
    /// Path in the tree (UTF-8, checked).
    pub path: String,
    /// Mode 100755.
    pub exec: bool,
    /// Blob id: names the content.
    pub oid: String,
    /// Blob size.
    pub size: u64,
}

impl Member {
    /// What to ask the repository for to read this file.
    pub fn want(&self) -> BlobWant {
        BlobWant {
            oid: self.oid.clone(),
            path: self.path.clone(),
            size: self.size,
        }
    }
}

/// What packing one file produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum FileResult {
    /// Packed as `files/<path>`, after these redactions.
    Kept {
        /// Bytes written (after redaction).
        size: u64,
        /// SHA-256 of the bytes written.
        sha256: Sha256Digest,
        /// What was redacted in it.
        redactions: Vec<Redaction>,
    },
    /// Left out for its content (an archive, or a finding that cannot be cut out in place).
    Omitted {
        /// One entry per rule (and finding).
        #[serde(with = "omissions")]
        omissions: Vec<Omission>,
    },
}

/// Omissions as `(path, rule, fingerprint)` triples: the manifest's form leaves out an absent
/// fingerprint, which an encoding without field names (the cache's) cannot tell.
mod omissions {
    use airlock_core::format::Omission;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    type Triple = (String, String, Option<String>);

    pub fn serialize<S: Serializer>(v: &[Omission], s: S) -> Result<S::Ok, S::Error> {
        let triples: Vec<(&str, &str, Option<&str>)> = (v.iter())
            .map(|o| (o.path.as_str(), o.rule.as_str(), o.fingerprint.as_deref()))
            .collect();
        triples.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Omission>, D::Error> {
        let triples = Vec::<Triple>::deserialize(d)?;
        Ok((triples.into_iter())
            .map(|(path, rule, fingerprint)| Omission {
                path,
                rule,
                fingerprint,
            })
            .collect())
    }
}

/// Cuts `members` (in bundle order) into groups of consecutive files.
pub fn partition(members: &[Member]) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let (mut start, mut bytes) = (0usize, 0u64);
    for (i, m) in members.iter().enumerate() {
        if m.size >= SOLO_BYTES {
            if start < i {
                groups.push(start..i);
            }
            groups.push(i..i + 1);
            (start, bytes) = (i + 1, 0);
            continue;
        }
        bytes += m.size;
        let digest = Sha256::digest(m.path.as_bytes());
        let low = u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]]);
        if low % ONE_IN == 0 || bytes >= GROUP_CAP {
            groups.push(start..i + 1);
            (start, bytes) = (i + 1, 0);
        }
    }
    if start < members.len() {
        groups.push(start..members.len());
    }
    groups
}

/// The identity of a group's tar bytes: its kept members' paths, modes, sizes and digests.
/// `None` unless every file has a result.
pub fn digest<'a>(
    members: &[Member],
    results: impl IntoIterator<Item = Option<&'a FileResult>>,
) -> Option<Sha256Digest> {
    let mut h = Sha256::new();
    h.update(b"airlock-pack-group v1\0");
    for (m, r) in members.iter().zip(results) {
        if let FileResult::Kept { size, sha256, .. } = r? {
            h.update(m.path.as_bytes());
            h.update([0, u8::from(m.exec)]);
            h.update(size.to_le_bytes());
            h.update(sha256.0);
        }
    }
    Some(Sha256Digest(h.finalize().into()))
}

/// A group's compressed bytes (without the gzip header) and what they hold.
#[derive(Debug)]
pub struct Piece {
    /// Deflate bytes, ending on a byte boundary after a sync flush; empty for no member.
    pub bytes: Vec<u8>,
    /// CRC-32 of the tar bytes.
    pub crc32: u32,
    /// Tar bytes.
    pub tar_bytes: u64,
    /// SHA-256 of `bytes`, taken by the worker that compressed them when the pack keeps a
    /// cache entry (which checks them with it); `None` otherwise.
    pub sha256: Option<Sha256Digest>,
}

/// One group packed.
#[derive(Debug)]
pub struct Built {
    /// A result per file, in order.
    pub results: Vec<FileResult>,
    /// Findings that refuse the pack (without `--redact`).
    pub findings: Vec<Finding>,
    /// Its compressed bytes.
    pub piece: Piece,
    /// Files scanned now (the others' results were reused).
    pub scanned: u64,
}

/// Scans, redacts and compresses one group. `contents` holds each file's blob, `cached` the
/// result of packing the same file before (reused as it is for a file packed unchanged or
/// omitted; a redacted file is scanned again, since its redacted bytes are not kept);
/// `digest`: take the SHA-256 of the compressed bytes (for a cache entry).
pub fn build(
    members: &[Member],
    contents: Vec<Vec<u8>>,
    cached: &[Option<FileResult>],
    scanner: &Scanner,
    redact: bool,
    digest: bool,
) -> Result<Built> {
    let mut results = Vec::with_capacity(members.len());
    let mut findings = Vec::new();
    let mut kept: Vec<(&Member, Vec<u8>)> = Vec::new();
    let mut scanned = 0;
    for (i, (m, mut content)) in members.iter().zip(contents).enumerate() {
        let reusable = match cached.get(i) {
            Some(Some(
                r @ FileResult::Kept {
                    size, redactions, ..
                },
            )) if redactions.is_empty() && *size == content.len() as u64 => Some(r.clone()),
            Some(Some(r @ FileResult::Omitted { .. })) => Some(r.clone()),
            _ => None,
        };
        if let Some(r) = reusable {
            if matches!(r, FileResult::Kept { .. }) {
                kept.push((m, content));
            }
            results.push(r);
            continue;
        }
        scanned += 1;
        // Archives never ship: their compressed members cannot be scanned byte for byte
        // (see scan/RULES.md), so they are not scanned either.
        if airlock_scan::content::archive_kind(&content).is_some() {
            results.push(omitted(vec![Omission {
                path: m.path.clone(),
                rule: ARCHIVE_RULE.to_owned(),
                fingerprint: None,
            }]));
            continue;
        }
        let scanned_now = scanner.scan_content(&m.path, &content);
        let found = scanned_now.findings;
        let mut redactions = Vec::new();
        if !found.is_empty() {
            if !redact {
                findings.extend(found);
                results.push(omitted(Vec::new()));
                continue;
            }
            if !scanned_now.form.redactable() {
                // Binary or UTF-16: the finding cannot be cut out in place; the file stays.
                results.push(omitted(
                    found
                        .iter()
                        .map(|f| Omission {
                            path: f.path.clone(),
                            rule: f.rule_id.clone(),
                            fingerprint: Some(f.fingerprint.clone()),
                        })
                        .collect(),
                ));
                continue;
            }
            content = airlock_scan::redact(&content, &found);
            redactions = found.iter().map(redaction_of).collect();
            // Second look at what ships: the redacted bytes must scan clean.
            let left = scanner.scan(&m.path, &content);
            if !left.is_empty() {
                let mut msg = format!(
                    "refusing to pack: the rescan of a redacted file found {} secret(s) (pack.rescan)",
                    left.len()
                );
                for f in &left {
                    msg.push_str(&format!("\n  {f}"));
                }
                return Err(Refused(msg).into());
            }
        }
        results.push(FileResult::Kept {
            size: content.len() as u64,
            sha256: Sha256Digest::of_bytes(&content),
            redactions,
        });
        kept.push((m, content));
    }
    let mut piece = if findings.is_empty() {
        compress(&kept)?
    } else {
        compress(&[])? // refusing anyway
    };
    if digest {
        piece.sha256 = Some(Sha256Digest::of_bytes(&piece.bytes));
    }
    Ok(Built {
        results,
        findings,
        piece,
        scanned,
    })
}

/// The manifest's record of a finding redacted.
pub fn redaction_of(f: &Finding) -> Redaction {
    Redaction {
        path: f.path.clone(),
        line: f.line,
        rule: f.rule_id.clone(),
        fingerprint: f.fingerprint.clone(),
    }
}

fn omitted(omissions: Vec<Omission>) -> FileResult {
    FileResult::Omitted { omissions }
}

/// The kept files as `files/…` members, compressed by a fresh writer and cut.
fn compress(kept: &[(&Member, Vec<u8>)]) -> Result<Piece> {
    if kept.is_empty() {
        return Ok(Piece {
            bytes: Vec::new(),
            crc32: 0,
            tar_bytes: 0,
            sha256: None,
        });
    }
    let tar_len: usize = kept
        .iter()
        .map(|(m, c)| 1024 + m.path.len() + c.len())
        .sum();
    let mut out = Vec::with_capacity(tar_len / 3);
    let cut = {
        let mut w = DeterministicTarWriter::with_level(&mut out, LEVEL);
        for (m, content) in kept {
            w.append_file(
                &format!("files/{}", m.path),
                m.exec,
                content.len() as u64,
                content.as_slice(),
            )
            .with_context(|| format!("{}: cannot pack", m.path))?;
        }
        w.cut().context("cannot compress")?
        // The writer is dropped unfinished: whatever it writes after the cut is cut off below.
    };
    let start = GZIP_HEADER.len();
    let end = start + usize::try_from(cut.compressed_bytes).context("piece too large")?;
    let bytes = out.get(start..end).context("cut past the output")?.to_vec();
    Ok(Piece {
        sha256: None,
        bytes,
        crc32: cut.crc32,
        tar_bytes: cut.tar_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(path: &str, size: u64) -> Member {
        Member {
            path: path.into(),
            exec: false,
            oid: "0".repeat(40),
            size,
        }
    }

    #[test]
    fn a_changed_size_moves_no_boundary_but_its_own_group() {
        let mut ms: Vec<Member> = (0..2000)
            .map(|i| member(&format!("f{i:05}"), 900))
            .collect();
        let before = partition(&ms);
        assert!(
            before.len() > 2000 / (ONE_IN as usize * 4),
            "{}",
            before.len()
        );
        ms[1000].size = 5000;
        let after = partition(&ms);
        assert_eq!(before, after);
        ms[1000].size = SOLO_BYTES;
        let solo = partition(&ms);
        assert!(solo.contains(&(1000..1001)));
        let differ = solo.iter().filter(|g| !before.contains(g)).count();
        assert!(differ <= 3, "{differ} groups changed");
    }

    #[test]
    fn groups_concatenate_to_what_one_writer_writes() {
        let ms = [member("a.txt", 3), member("b/c.sh", 5)];
        let contents = vec![b"abc".to_vec(), b"#!x\n\n".to_vec()];
        let scanner = Scanner::with_default_detectors().unwrap();
        let one = build(
            &ms[..1],
            vec![contents[0].clone()],
            &[None],
            &scanner,
            true,
            true,
        )
        .unwrap();
        let two = build(
            &ms[1..],
            vec![contents[1].clone()],
            &[None],
            &scanner,
            true,
            true,
        )
        .unwrap();
        let mut expect = DeterministicTarWriter::new(Vec::new());
        for (m, c) in ms.iter().zip(&contents) {
            expect
                .append_file(&format!("files/{}", m.path), m.exec, c.len() as u64, &c[..])
                .unwrap();
        }
        let expect = expect.finish().unwrap();
        let mut gz = flate2::read::GzDecoder::new(&expect[..]);
        let mut tar = Vec::new();
        std::io::Read::read_to_end(&mut gz, &mut tar).unwrap();
        let mut raw = one.piece.bytes.clone();
        raw.extend(&two.piece.bytes);
        let mut inflated = Vec::new();
        let mut d = flate2::read::DeflateDecoder::new(&raw[..]);
        // A sync-flushed stream has no final block: read what it gives.
        let _ = std::io::Read::read_to_end(&mut d, &mut inflated);
        assert_eq!(inflated, tar[..tar.len() - 1024]);
        assert_eq!(
            one.piece.tar_bytes + two.piece.tar_bytes,
            inflated.len() as u64
        );
    }
}
