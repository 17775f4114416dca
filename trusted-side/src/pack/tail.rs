//! The members a bundle ends with, `manifest.json` and `request.json`, after the `files/` part:
//! the manifest built from the files part, the writer resumed after the groups, the rescan of
//! what is written last.
//!
//! Guards against: a secret in the manifest or the request (both scanned here: a finding
//! refuses the pack), a member the writer would refuse (the resumed writer checks every
//! `files/` member's name, order and size again before the manifest is appended), and, on a
//! large tree, an allocation a member name (the names are one string: musl's allocator takes
//! a lock, which the manifest's thread contends for meanwhile).

use std::collections::BTreeMap;
use std::fs::File;

use airlock_core::digest::Sha256Digest;
use airlock_core::format::{self, FileEntry, Manifest, Packer, Source, MANIFEST_FORMAT};
use airlock_core::limits::TarLimits;
use airlock_core::tar::{Cut, DeterministicTarWriter};
use airlock_scan::Scanner;
use anyhow::{Context, Result};

use super::files::FilesPart;
use super::{groups, sink, Tar};
use crate::exit::Refused;

/// The bundle writer continuing `bundle`, which holds the gzip header and the `files/` part.
/// The writer checks every member again (paths, order, collisions, limits).
pub(super) fn resume_bundle(names: &Names, cut: &Cut, bundle: sink::Sink) -> Result<Tar> {
    let starts = std::iter::once(0).chain(names.ends.iter().copied());
    let members = (starts.zip(&names.ends).zip(&names.sizes))
        .map(|((from, &to), &size)| (names.text.get(from..to).unwrap_or_default(), false, size));
    DeterministicTarWriter::resume(
        bundle,
        TarLimits::bundle(),
        cut,
        groups::TAIL_LEVEL,
        members,
    )
    .context("cannot write the bundle")
}

/// The `files/…` members' names, in one string (an allocation a name, on a large tree, cost
/// more than the names' checks: musl's allocator takes a lock), and their sizes.
pub(super) struct Names {
    text: String,
    ends: Vec<usize>,
    sizes: Vec<u64>,
}

impl Names {
    pub(super) fn of(files: &[FileEntry]) -> Names {
        let mut text = String::with_capacity(files.iter().map(|f| 6 + f.path.len()).sum());
        let mut ends = Vec::with_capacity(files.len());
        for f in files {
            text.push_str("files/");
            text.push_str(&f.path);
            ends.push(text.len());
        }
        let sizes = files.iter().map(|f| f.size).collect();
        Names { text, ends, sizes }
    }
}

/// The manifest, serialized, and the document (kept to be dropped aside).
pub(super) struct ManifestBytes {
    pub(super) bytes: Vec<u8>,
    pub(super) sha256: Sha256Digest,
    pub(super) skipped: BTreeMap<String, u64>,
    pub(super) files: usize,
    _doc: Manifest,
}

/// The manifest of the `files/` part: files, redactions, paths left out.
pub(super) fn manifest_of(
    files: Vec<FileEntry>,
    part: &FilesPart,
    skipped: BTreeMap<String, u64>,
    source: Source,
    request_sha256: Sha256Digest,
) -> ManifestBytes {
    let manifest = Manifest {
        format: MANIFEST_FORMAT.to_owned(),
        packer: Packer {
            name: "airlock".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        source,
        request_sha256,
        files,
        redactions: {
            let mut r = part.redactions.clone();
            r.sort_by(|a, b| (&a.path, a.line, &a.rule).cmp(&(&b.path, b.line, &b.rule)));
            r
        },
        skipped: skipped.clone(),
        omitted: {
            let mut o = part.omitted.clone();
            o.sort_by(|a, b| (&a.path, &a.rule).cmp(&(&b.path, &b.rule)));
            o
        },
    };
    let bytes = format::to_json_bytes(&manifest);
    let sha256 = Sha256Digest::of_bytes(&bytes);
    ManifestBytes {
        bytes,
        sha256,
        skipped,
        files: manifest.files.len(),
        _doc: manifest,
    }
}

/// The bundle as written (not yet synced).
pub(super) struct Written {
    pub(super) file: File,
    pub(super) bundle_sha256: Sha256Digest,
    pub(super) bundle_bytes: u64,
}

/// Writes `manifest.json` and `request.json` after the files part and finishes the bundle.
pub(super) fn finish_bundle(
    mut tar: Tar,
    manifest: &ManifestBytes,
    request_bytes: &[u8],
) -> Result<Written> {
    tar.append_file(
        "manifest.json",
        false,
        manifest.bytes.len() as u64,
        manifest.bytes.as_slice(),
    )?;
    tar.append_file(
        "request.json",
        false,
        request_bytes.len() as u64,
        request_bytes,
    )?;
    let sink = tar.finish()?;
    let (file, bundle_sha256, bundle_bytes) = sink.finish().context("cannot write the bundle")?;

    Ok(Written {
        file,
        bundle_sha256,
        bundle_bytes,
    })
}

/// The rescan of the members written last: the manifest and the request.
pub(super) fn rescan_tail(manifest: &[u8], request_bytes: &[u8], scanner: &Scanner) -> Result<()> {
    let mut findings = scanner.scan("manifest.json", manifest);
    findings.extend(scanner.scan("request.json", request_bytes));
    if findings.is_empty() {
        return Ok(());
    }
    let mut msg = format!(
        "refusing to pack: the rescan of manifest.json and request.json found {} secret(s) (pack.rescan): rename or --exclude the paths named, or change the prompt",
        findings.len()
    );
    for f in &findings {
        msg.push_str(&format!("\n  {f}"));
    }
    Err(Refused(msg).into())
}
