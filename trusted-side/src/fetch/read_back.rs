//! One pass over a downloaded artifact: the safe tar reader with the exact member names,
//! every byte re-hashed (it must still be the digest the signature covered), the model key's
//! needles over every member, and what the gate needs kept: the packet, the patch, the log's
//! tail, and the secret findings in the worker's text.
//!
//! Guards against: a copy that changed on disk after it was verified
//! (`artifact-changed-locally`), hostile members (the tar reader's rules), a model key or a
//! secret in what the worker returns (`model-key-leaked`, `secret-in-worker-text`).
//! Does not check: the signature or the binding (`fetch` did that before this runs).

use std::io::{BufReader, Read};
use std::path::Path;

use airlock_core::digest::{HashingReader, Sha256Digest};
use airlock_core::format::{Packet, COMMENTS_MEMBER, MAX_COMMENTS_BYTES, MAX_PACKET_BYTES};
use airlock_core::limits::TarLimits;
use airlock_core::tar::{read_members, AllowedNames};
use anyhow::Context;

use super::{refuse, worker_text, FetchError, FetchRefused, DETAIL_MAX, MAX_PATCH_BYTES};
use crate::reasons::ReasonCode;

/// What [`read_packet`] reads back: the packet, its digest, the patch (when kept), the log's
/// tail, the secret findings in the worker's text (`worker_text.rs`), and `comments.jsonl`
/// (at most [`MAX_COMMENTS_BYTES`] + 1 bytes; `None` when absent).
pub(super) type ReadBack = (
    Packet,
    Sha256Digest,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<worker_text::WorkerTextFinding>,
    Option<Vec<u8>>,
);

/// Reads `packet.json` (and `patch.diff` if `keep_patch`, and the tail of `generator.log`)
/// out of the downloaded artifact through the safe reader (exact member names), hashing every
/// byte of the file on the way: it must still be `verified`, the digest the download was
/// checked against.
pub(super) fn read_packet(
    artifact: &Path,
    verified: Sha256Digest,
    keep_patch: bool,
    needles: Option<&crate::key_leak::Needles>,
) -> Result<ReadBack, FetchError> {
    let file = std::fs::File::open(artifact)
        .with_context(|| format!("{}: cannot open", artifact.display()))?;
    let mut hashing = HashingReader::new(BufReader::new(file));
    let mut kept = Kept::default();
    let mut leaked: Option<String> = None;
    let read = read_members(
        &mut hashing,
        &TarLimits::artifact(),
        &AllowedNames::artifact(),
        |m, r| {
            // Every member passes the model key's needles, whole (`key_leak.rs`).
            let Some(needles) = needles else {
                keep_member(m, r, keep_patch, &mut kept)?;
                return Ok(());
            };
            let mut scanner = needles.scanner(&m.path);
            let mut scanned = crate::key_leak::ScanRead {
                inner: r,
                scanner: &mut scanner,
            };
            keep_member(m, &mut scanned, keep_patch, &mut kept)?;
            std::io::copy(&mut scanned, &mut std::io::sink())?;
            if leaked.is_none() {
                leaked = scanner.finding();
            }
            Ok(())
        },
    );
    // The rest of the file (gzip trailer, padding) goes through the hash too.
    std::io::copy(&mut hashing, &mut std::io::sink())
        .with_context(|| format!("{}: cannot read", artifact.display()))?;
    let (_, local, _) = hashing.finish();
    if local != verified {
        return Err(refuse(
            ReasonCode::ArtifactChangedLocally,
            format!(
                "{} now hashes to sha256:{local}, not the verified sha256:{verified}",
                artifact.display()
            ),
        ));
    }
    read.map_err(|e| {
        FetchError::Refused(FetchRefused {
            code: ReasonCode::ArtifactTar,
            rule: Some(e.rule().id()),
            detail: airlock_core::text::detail(
                &e.with_label("artifact.tar.gz").to_string(),
                DETAIL_MAX,
            ),
        })
    })?;
    if let Some(detail) = leaked {
        return Err(refuse(ReasonCode::ModelKeyLeaked, detail));
    }
    let Kept {
        packet,
        patch,
        log_tail,
        texts,
        comments,
    } = kept;
    let bytes = packet.ok_or_else(|| {
        refuse(
            ReasonCode::ArtifactTar,
            "artifact.tar.gz has no packet.json",
        )
    })?;
    let p = Packet::from_json(&bytes).map_err(|e| {
        FetchError::Refused(FetchRefused {
            code: ReasonCode::PacketFormat,
            rule: Some(e.rule()),
            detail: e.to_string(),
        })
    })?;
    // The packet's strings with their JSON escapes undone (`\u0073k-…` is the key too).
    if let Some(needles) = needles {
        let plain = serde_json::to_vec(&p).map_err(anyhow::Error::from)?;
        if let Some(enc) = needles.find(&plain) {
            return Err(refuse(
                ReasonCode::ModelKeyLeaked,
                format!("packet.json: holds the job's model key ({enc}, JSON-escaped) (model-key-leaked): the job is refused; revoke the key"),
            ));
        }
    }
    // Secrets in the worker's text: the job is rejected by the gate, and the log's tail is
    // withheld so that no output repeats the value.
    let findings = worker_text::scan(&texts)?;
    let log_tail = if findings.iter().any(|f| f.member == "generator.log") {
        log_tail.map(|_| worker_text::WITHHELD_TAIL.to_vec())
    } else {
        log_tail
    };
    Ok((
        p,
        Sha256Digest::of_bytes(&bytes),
        patch,
        log_tail,
        findings,
        comments,
    ))
}

/// Keeps what fetch needs of one artifact member: the packet, the patch (with `keep_patch`),
/// the log's tail.
/// What one pass over the artifact keeps of its members.
#[derive(Default)]
struct Kept {
    packet: Option<Vec<u8>>,
    patch: Option<Vec<u8>>,
    log_tail: Option<Vec<u8>>,
    /// `generator.log` and `review.md`, whole, for the secret scan (`worker_text.rs`).
    texts: Vec<(String, Vec<u8>)>,
    comments: Option<Vec<u8>>,
}

fn keep_member(
    m: &airlock_core::tar::Member,
    r: &mut dyn Read,
    keep_patch: bool,
    kept: &mut Kept,
) -> std::io::Result<()> {
    if worker_text::SCANNED_MEMBERS.contains(&m.path.as_str()) {
        // Whole, for the secret scan (one member is at most `TarLimits::artifact`'s entry size).
        let mut whole = Vec::new();
        r.read_to_end(&mut whole)?;
        if m.path == "generator.log" {
            let mut tail = Vec::new();
            crate::run_account::keep_tail(&mut tail, &whole);
            kept.log_tail = Some(tail);
        }
        kept.texts.push((m.path.clone(), whole));
        return Ok(());
    }
    let (slot, cap) = match m.path.as_str() {
        "packet.json" => (&mut kept.packet, MAX_PACKET_BYTES as u64),
        "patch.diff" if keep_patch => (&mut kept.patch, MAX_PATCH_BYTES),
        COMMENTS_MEMBER => (&mut kept.comments, MAX_COMMENTS_BYTES),
        _ => return Ok(()),
    };
    let mut buf = Vec::new();
    r.take(cap + 1).read_to_end(&mut buf)?;
    *slot = Some(buf);
    Ok(())
}
