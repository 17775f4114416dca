//! `airlock pack`: a git revision in, a redacted, signed, deterministic bundle out.
//!
//! Stages, in order (the body of [`pack_bundle`] is these calls):
//! 1. resolve the revision and list its tree (never the working tree);
//! 2. select paths: deny-list, `--include`, `--exclude`, links, submodules, size, bad names;
//! 3. stream each selected blob (each worker from a `git cat-file --batch` of its own, see
//!    `files.rs`, or from its file in the working tree where that file is the blob, see
//!    `git/worktree.rs`), scan every byte of it
//!    (text, UTF-16, printable runs of binaries, one level of decoding, joined literals),
//!    refuse, redact in place, or (binary/UTF-16 with a finding, under `--redact`) omit it
//!    with a manifest entry; archives are always omitted with a manifest entry;
//! 4. write `files/…`, `manifest.json`, `request.json` into a deterministic tar.gz (temp file);
//! 5. scan again what was written last (the manifest and the request; every redacted file
//!    was scanned again after its redaction);
//! 6. sign the statement over the bundle digest with the trusted key;
//! 7. move bundle and envelope into place (temp then rename; nothing half-written on error).
//!
//! Guards against: secrets leaving trusted ground (deny-list + scan + rescan), the trusted
//! home (`.airlock/`, any directory holding a `trusted.key`), links and
//! submodules smuggled in the tree, names that collide by case or normalisation on the worker,
//! and a bundle held in memory (one file at a time, bounded queues between threads).

mod ahead;
pub mod cache;
mod command;
mod files;
pub mod groups;
mod listing;
pub mod select;
mod sink;
mod tail;

pub use command::{run, PackCommandOptions, PackInputs};
pub use files::CacheStats;

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, Statement};
use airlock_core::format::{self, BundlePredicate, Request, Source, PREDICATE_BUNDLE};
use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;
use airlock_core::tar::{DeterministicTarWriter, GZIP_HEADER};
use airlock_scan::Scanner;
use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::exit::Refused;
use crate::git::Repo;
use files::write_files;
use groups::redaction_of;
use tail::{finish_bundle, manifest_of, rescan_tail, resume_bundle, ManifestBytes, Names};

/// The bundle's writer.
type Tar = DeterministicTarWriter<sink::Sink>;

/// Largest prompt file accepted.
pub const MAX_PROMPT_BYTES: u64 = 256 * 1024;
/// Name of the bundle file.
pub const BUNDLE_FILE: &str = "bundle.tar.gz";
/// Name of the bundle's envelope.
pub const ENVELOPE_FILE: &str = "bundle.dsse.json";
/// Manifest rule of an archive left out (zip, jar, whl, gzip, tar...).
pub const ARCHIVE_RULE: &str = "pack.archive";
/// Skip count of files left out for a finding that could not be redacted in place.
pub const UNREDACTABLE_RULE: &str = "pack.unredactable";

/// What to pack.
pub struct PackOptions<'a> {
    /// Repository directory.
    pub repo: &'a Path,
    /// Revision.
    pub rev: &'a str,
    /// Repository name for the manifest.
    pub repo_name: String,
    /// The request to pack (prompt, model, limits).
    pub request: Request,
    /// `--include` globs.
    pub include: &'a [String],
    /// `--exclude` globs.
    pub exclude: &'a [String],
    /// Redact instead of refusing.
    pub redact: bool,
    /// Per-file size cap.
    pub max_file_bytes: u64,
    /// The job this bundle is signed for.
    pub job: JobId,
    /// Hide progress.
    pub quiet: bool,
    /// The home under which the pack cache lives (`cache/pack/`, see [`cache`]); `None` packs
    /// from scratch and keeps nothing.
    pub cache_dir: Option<PathBuf>,
    /// Sync the bundle and envelope to disk (an `--out` directory the user keeps); a staging
    /// directory that is uploaded and deleted needs no sync.
    pub durable: bool,
}

/// What a pack produced.
#[derive(Debug, Serialize)]
pub struct PackSummary {
    /// The job the envelope names.
    pub job: JobId,
    /// Packed commit.
    pub revision: String,
    /// Its tree.
    pub tree: String,
    /// Files packed.
    pub files: u64,
    /// Bytes of file content packed.
    pub bytes: u64,
    /// Paths left out, per rule.
    pub skipped: BTreeMap<String, u64>,
    /// Redactions, per rule.
    pub redacted: BTreeMap<String, u64>,
    /// Files with at least one redaction.
    pub redacted_files: u64,
    /// SHA-256 of bundle.tar.gz.
    pub bundle_sha256: Sha256Digest,
    /// SHA-256 of manifest.json.
    pub manifest_sha256: Sha256Digest,
    /// SHA-256 of request.json.
    pub request_sha256: Sha256Digest,
    /// Compressed size.
    pub bundle_bytes: u64,
    /// Where the bundle is (`airlock pack`); empty and left out of the JSON when the bundle
    /// was uploaded from a staging directory that is gone (`airlock submit`).
    #[serde(skip_serializing_if = "path_is_empty")]
    pub bundle_path: PathBuf,
    /// Where the envelope is; empty and left out as `bundle_path`.
    #[serde(skip_serializing_if = "path_is_empty")]
    pub envelope_path: PathBuf,
    /// Key id of the signer.
    pub key_id: String,
    /// What the pack cache saved.
    pub cache: CacheStats,
}

fn path_is_empty(p: &Path) -> bool {
    p.as_os_str().is_empty()
}

/// Reads a prompt file: UTF-8, at most [`MAX_PROMPT_BYTES`].
pub fn read_prompt(path: &Path) -> Result<String> {
    let f = File::open(path).with_context(|| format!("{}: cannot read prompt", path.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_PROMPT_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{}: cannot read prompt", path.display()))?;
    if bytes.len() as u64 > MAX_PROMPT_BYTES {
        bail!(
            "{}: prompt larger than {MAX_PROMPT_BYTES} bytes",
            path.display()
        );
    }
    let prompt = String::from_utf8(bytes)
        .with_context(|| format!("{}: prompt is not UTF-8", path.display()))?;
    if prompt.trim().is_empty() {
        bail!(
            "{}: prompt is empty: write the task for the generator in it",
            path.display()
        );
    }
    Ok(prompt)
}

/// A fresh job id from the clock and the OS's random source.
pub fn new_job_id() -> Result<JobId> {
    use rand_core::RngCore;
    let now = airlock_core::clock::now_unix();
    if now == 0 {
        anyhow::bail!("the system clock reads before 1970: set the clock, then submit again");
    }
    let mut random = [0u8; airlock_core::jobid::RANDOM_BYTES];
    rand_core::OsRng
        .try_fill_bytes(&mut random)
        .map_err(|e| anyhow::anyhow!("no OS randomness: {e}"))?;
    Ok(JobId::new(now, random))
}

/// Packs, rescans, signs and writes `out/bundle.tar.gz` + `out/bundle.dsse.json`.
///
/// With a cache directory, what an earlier pack with the same rules and options produced for a
/// file (same path, mode and content) and for a group of files (same members) is reused, and
/// only the rest is scanned and compressed (see [`cache`]). Both routes give the same bytes.
pub fn pack_bundle(opts: &PackOptions<'_>, key: &SigningKey, out: &Path) -> Result<PackSummary> {
    let scanner = Scanner::with_default_detectors().context("secret scanner")?;
    pack_bundle_with(opts, scanner, key, out)
}

/// [`pack_bundle`] with the rules of `scanner`.
pub(crate) fn pack_bundle_with(
    opts: &PackOptions<'_>,
    scanner: Scanner,
    key: &SigningKey,
    out: &Path,
) -> Result<PackSummary> {
    let made_out = std::fs::symlink_metadata(out).is_err();
    let packed = pack_bundle_into(opts, scanner, key, out);
    if packed.is_err() && made_out {
        // A refused pack leaves no empty --out behind; remove_dir removes only an empty
        // directory, so nothing else can be lost here.
        let _ = std::fs::remove_dir(out);
    }
    packed
}

/// Below this many bytes to scan, the keyword index that is quick to build suits better than
/// the DFA that is quick to run (same matches): the DFA takes about half a millisecond more
/// to build and scans about twice as fast (docs/PERFORMANCE.md, "pack").
const SMALL_SCAN_BYTES: u64 = 256 * 1024;
/// What the manifest takes per file, about: it is scanned too, in every pack.
const MANIFEST_BYTES_PER_FILE: u64 = 200;

fn pack_bundle_into(
    opts: &PackOptions<'_>,
    scanner: Scanner,
    key: &SigningKey,
    out: &Path,
) -> Result<PackSummary> {
    let started = std::time::Instant::now();
    // Where the time goes, with -vv (docs/PERFORMANCE.md, "pack").
    let phase = |what: &str| {
        let ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::debug!("pack: {what} at {ms:.1} ms");
    };
    let repo = Repo::open(opts.repo)?;
    let (revision, tree) = repo.resolve(opts.rev)?;
    let cache = (opts.cache_dir.as_deref())
        .and_then(|home| cache::PackCache::new(home, opts, &scanner, key));
    // The tree is listed beside the reading of the cache entry: with a cache, as the changes
    // from the tree of the entry most likely used (or without sizes: the entry knows most).
    let candidates = (cache.as_ref()).map_or_else(Vec::new, |c| c.candidates(&tree));
    let from = candidates
        .first()
        .and_then(|n| cache::PackCache::tree_of(n));
    let (base, ahead, listing) = std::thread::scope(|s| {
        let listing = s.spawn(|| listing::start(&repo, (&revision, &tree), cache.is_some(), from));
        let base = cache.as_ref().and_then(|c| c.base(&candidates));
        // The cached groups are read and checked while the tree is listed and selected.
        let ahead = base.as_ref().and_then(cache::Base::read_ahead);
        (base, ahead, listing.join())
    });
    let listing = listing.map_err(|_| anyhow::anyhow!("the tree's listing panicked"))??;
    phase("tree listed, cache entry read");
    let mut plan = match &base {
        // The same tree: its listing and selection are in the entry.
        Some(b) if b.meta.tree == tree => files::Plan {
            groups: b.meta.groups.iter().map(|g| g.first..g.end).collect(),
            members: b.meta.files.iter().map(|f| f.member.clone()).collect(),
            skipped: b.meta.skipped.clone(),
            others: b.meta.others.clone(),
        },
        _ => {
            let entries = listing::entries(&repo, &revision, listing, base.as_ref())?;
            select::plan(entries, opts, |p| {
                base.as_ref().is_some_and(|b| b.selected(p))
            })?
        }
    };
    phase("files selected");
    let to_scan: u64 = (plan.members.iter())
        .filter(|m| base.as_ref().and_then(|b| b.file(m)).is_none())
        .map(|m| m.size)
        .sum::<u64>()
        + MANIFEST_BYTES_PER_FILE * plan.members.len() as u64;
    let scanner = if to_scan < SMALL_SCAN_BYTES {
        scanner.with_small_inputs()
    } else {
        scanner
    };

    std::fs::create_dir_all(out).with_context(|| format!("{}: cannot create", out.display()))?;
    let tmp_bundle = tempfile::Builder::new()
        .prefix(".bundle-")
        .suffix(".tmp")
        .tempfile_in(out)
        .with_context(|| format!("{}: cannot write", out.display()))?;

    let mut request = opts.request.clone();
    let mut redactions = Vec::new();
    let mut findings = Vec::new();
    // The prompt is scanned like a file: it leaves trusted ground too.
    let prompt_findings = scanner.scan("request.json", request.prompt.as_bytes());
    if !prompt_findings.is_empty() {
        if opts.redact {
            let redacted = airlock_scan::redact(request.prompt.as_bytes(), &prompt_findings);
            request.prompt = String::from_utf8_lossy(&redacted).into_owned();
            redactions.extend(prompt_findings.iter().map(redaction_of));
        } else {
            findings.extend(prompt_findings);
        }
    }
    let request_bytes = format::to_json_bytes(&request);
    let request_sha256 = Sha256Digest::of_bytes(&request_bytes);
    let source = Source {
        repo: opts.repo_name.clone(),
        revision: revision.clone(),
        tree: tree.clone(),
    };

    // The groups go straight to the bundle (hashed on the way) and, with the cache on, to
    // the new cache entry.
    let staging = cache.as_ref().and_then(|c| {
        c.begin()
            .map_err(|e| tracing::debug!("pack cache: not kept: {e:#}"))
            .ok()
    });
    let mut bundle = sink::Sink::new(tmp_bundle.as_file().try_clone()?, opts.durable);
    bundle.write_all(&GZIP_HEADER)?;
    // A prompt with findings (and no --redact) is refused after the whole tree was scanned,
    // so that the refusal lists every finding at once.
    let mut part = write_files(
        &repo,
        &plan,
        (base.as_ref(), ahead.as_ref()),
        opts,
        &scanner,
        staging.as_ref(),
        &mut bundle,
    )?;
    drop(ahead);
    phase("files written");
    findings.extend(part.findings.iter().cloned());
    redactions.extend(part.redactions.iter().cloned());
    if !findings.is_empty() {
        let mut msg = format!(
            "refusing to pack: {} secret(s) found (use --redact to replace them, or --exclude the files)",
            findings.len()
        );
        for f in &findings {
            msg.push_str(&format!("\n  {f}"));
        }
        return Err(Refused(msg).into());
    }
    let mut skipped = plan.skipped.clone();
    let mut paths = HashSet::new();
    for o in &part.omitted {
        if paths.insert(&o.path) {
            let rule = if o.rule == ARCHIVE_RULE {
                ARCHIVE_RULE
            } else {
                UNREDACTABLE_RULE
            };
            *skipped.entry(rule.to_owned()).or_insert(0) += 1;
        }
    }
    // The manifest takes the files' entries; the writer, their names and sizes.
    let names = Names::of(&part.files);
    let files = std::mem::take(&mut part.files);
    let (written, tail) = std::thread::scope(|s| {
        // Every file was scanned (or its result for the same content, rules and options
        // reused), and every redacted file scanned again after redaction; the members written
        // last are built and scanned here, beside the bundle's writing.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Arc<ManifestBytes>>(1);
        let (part, request, scanner, source) = (&part, &request_bytes, &scanner, source.clone());
        let tail = s.spawn(move || {
            let manifest = Arc::new(manifest_of(files, part, skipped, source, request_sha256));
            let _ = tx.send(Arc::clone(&manifest));
            rescan_tail(&manifest.bytes, request, scanner).map(|()| manifest)
        });
        let written = resume_bundle(&names, &part.cut, bundle).and_then(|tar| {
            let manifest = rx.recv().context("the manifest was not built")?;
            finish_bundle(tar, &manifest, request)
        });
        (written, tail.join())
    });
    let manifest = tail.map_err(|_| anyhow::anyhow!("the rescan of the bundle panicked"))??;
    phase("manifest written and scanned");
    let written = written?;
    let synced = std::thread::scope(|s| {
        // The bundle reaches the disk while the cache entry is stored.
        let sync = s.spawn(|| match opts.durable {
            true => written.file.sync_all(),
            false => Ok(()),
        });
        if let (Some(c), Some(staging)) = (&cache, staging) {
            // Best effort: a cache that cannot be written only costs the next pack time.
            let others = std::mem::take(&mut plan.others);
            if let Err(e) = c.commit(
                staging,
                part.cut.compressed_bytes,
                &tree,
                part.records,
                (&plan.skipped, others),
            ) {
                tracing::debug!("pack cache: not stored: {e:#}");
            }
        }
        sync.join()
    });
    synced
        .map_err(|_| anyhow::anyhow!("the bundle's sync panicked"))?
        .context("cannot write the bundle")?;

    phase("bundle synced, cache entry stored");
    let predicate = BundlePredicate {
        job: opts.job.clone(),
        manifest_sha256: manifest.sha256,
        request_sha256,
        source,
    };
    let statement = Statement::new(
        BUNDLE_FILE,
        written.bundle_sha256,
        PREDICATE_BUNDLE,
        serde_json::to_value(&predicate)?,
    );
    let envelope = dsse::sign_statement(&statement, key);
    let bundle_path = out.join(BUNDLE_FILE);
    let envelope_path = out.join(ENVELOPE_FILE);
    crate_atomic_write(
        out,
        &envelope_path,
        &envelope.to_json_pretty(),
        opts.durable,
        || {
            tmp_bundle
                .persist(&bundle_path)
                .map(|_| ())
                .with_context(|| format!("{}: cannot write", bundle_path.display()))
        },
    )?;

    let mut redacted = BTreeMap::new();
    let mut redacted_paths = HashSet::new();
    for r in &redactions {
        *redacted.entry(r.rule.clone()).or_insert(0) += 1;
        redacted_paths.insert(r.path.clone());
    }
    let summary = PackSummary {
        job: opts.job.clone(),
        revision,
        tree,
        files: manifest.files as u64,
        bytes: part.bytes,
        skipped: manifest.skipped.clone(),
        redacted,
        redacted_files: redacted_paths.len() as u64,
        bundle_sha256: written.bundle_sha256,
        manifest_sha256: manifest.sha256,
        request_sha256,
        bundle_bytes: written.bundle_bytes,
        bundle_path,
        envelope_path,
        key_id: key.public().key_id(),
        cache: part.stats,
    };
    drop_aside((plan, part.redactions, part.omitted, base, manifest, names));
    Ok(summary)
}

/// Drops `what` on a thread of its own (here if none starts): freeing a large tree's plan,
/// entry and manifest, tens of thousands of allocations, took milliseconds after the work.
pub(crate) fn drop_aside<T: Send + 'static>(what: T) {
    let _ = std::thread::Builder::new().spawn(move || drop(what));
}

/// Writes the envelope to a temp file, runs `place_bundle` (which renames the bundle into
/// place), then renames the envelope: the envelope appears last, and only if both succeed.
fn crate_atomic_write(
    dir: &Path,
    dest: &Path,
    bytes: &[u8],
    durable: bool,
    place_bundle: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".envelope-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("{}: cannot write", dir.display()))?;
    tmp.write_all(bytes)?;
    if durable {
        tmp.as_file().sync_all()?;
    }
    place_bundle()?;
    tmp.persist(dest)
        .with_context(|| format!("{}: cannot write", dest.display()))?;
    Ok(())
}
