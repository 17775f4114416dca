//! The gate's index of a bundle: what the gate reads of a packed revision (the listing, the
//! redacted lines, what the tree's entry points reach), worked out by `submit` from the bundle
//! it has just built and kept in the trusted home under the bundle's digest. With it, the gate
//! of a large tree hashes the bundle instead of decompressing and parsing every member, and
//! the tree layers look only at the change (`classify::reach::TreeReach`): the gate costs the
//! size of the change, not of the repository. Written for trees of [`MIN_FILES`] or more.
//!
//! Guards against: an index of another bundle or revision (the file is named by the digest, and
//! its content must name the signed job record's digest and revision); one that is damaged or
//! too large (parsed with a cap; what does not parse is not used, the gate reads the bundle and
//! says so in a warning). The gate uses an index only after the inbox copy of the bundle hashed
//! to the record's digest, so a swapped bundle is still a reject. The index is as trusted as
//! the home holding the signing key: no worker writes there.
//! Does not hold: the start of each packed file. A change that touches what the entry points
//! read makes the tree layers read those files from the repository at the revision.

use std::path::{Path, PathBuf};

use airlock_core::digest::Sha256Digest;
use airlock_core::format::JobRecord;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::bundle::BundleView;
use super::checks::RedactedLines;
use crate::classify::reach::TreeReach;
use crate::classify::tree::{links_of, GitTree, Link, Listing, PackedTree, TreeFile};

/// The format tag of an index file.
pub const INDEX_FORMAT: &str = "airlock-gate-index/v1";

/// The largest index read (a listing of a million files fits).
const MAX_INDEX_BYTES: u64 = 256 * 1024 * 1024;

/// Indexes kept in a home: the newest, by the time they were written.
pub const MAX_INDEXES: usize = 64;

/// Packed files from which `submit` writes an index. Below it the gate reads the bundle in about
/// the time it takes to read an index, and writing one would only slow `submit` down.
pub const MIN_FILES: u64 = 1_000;

/// An index file: `<home>/cache/gate/<sha256>.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Index {
    format: String,
    bundle_sha256: Sha256Digest,
    revision: String,
    /// Path and executable bit of every packed file, sorted.
    files: Vec<(String, bool)>,
    redacted: RedactedLines,
    reach: TreeReach,
    /// The revision's symbolic links (absent from an index written before they were kept:
    /// the gate then lists them).
    #[serde(default)]
    links: Option<Vec<Link>>,
}

/// Where the index of the bundle `sha256` is kept in `home`.
pub fn path(home: &Path, sha256: &Sha256Digest) -> PathBuf {
    home.join("cache")
        .join("gate")
        .join(format!("{sha256}.json"))
}

/// Reads `bundle` (a bundle just packed from `revision` of `repo`, hashing to `sha256`) as the
/// gate would and writes its index into `home`, replacing any; only the newest [`MAX_INDEXES`]
/// are kept (a gate whose index is gone reads the bundle).
pub fn write(
    home: &Path,
    repo: &Path,
    bundle: &Path,
    sha256: &Sha256Digest,
    revision: &str,
) -> Result<()> {
    let file = std::fs::File::open(bundle).with_context(|| bundle.display().to_string())?;
    let hashed = super::bundle::hash_and_read(file, true)?;
    let read = hashed.read.context("the bundle was not read")?;
    let (view, manifest) = read.map_err(|stop| match stop {
        super::Stop::Reject(r) => anyhow::anyhow!("{}", r.detail),
        super::Stop::Error(e) => e,
    })?;
    anyhow::ensure!(
        hashed.digest == *sha256 && manifest.source.revision == revision,
        "{}: not the bundle of revision {revision} hashing to sha256:{sha256}",
        bundle.display()
    );
    // The links too: an entry point that exists only under a link's name reaches files.
    let links = links_of(repo, revision)?;
    let tree = PackedTree::new(
        GitTree::new(repo, revision, view.listing).with_links(links.clone()),
        view.kept,
        view.kept_all,
    );
    let reach = TreeReach::of_tree(&tree);
    let files = crate::classify::tree::Tree::files(&tree)
        .iter()
        .map(|f| (f.path.clone(), f.executable))
        .collect();
    let index = Index {
        format: INDEX_FORMAT.to_owned(),
        bundle_sha256: *sha256,
        revision: revision.to_owned(),
        files,
        redacted: view.redacted,
        reach,
        links: Some(links),
    };
    let to = path(home, sha256);
    let dir = to.parent().context("index path has no parent")?;
    crate::pack::cache::create_private_dir(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer(std::io::BufWriter::new(tmp.as_file_mut()), &index)?;
    tmp.persist(&to)
        .with_context(|| format!("{}: cannot write", to.display()))?;
    crate::pack::cache::prune_oldest(dir, |name| name.ends_with(".json"), MAX_INDEXES);
    Ok(())
}

/// The view of `record`'s bundle from its index in `home`: `None` when there is none; `Err`
/// when there is one the gate cannot use (it then reads the bundle).
pub fn read(home: &Path, record: &JobRecord) -> Result<Option<BundleView>> {
    let at = path(home, &record.bundle_sha256);
    let file = match std::fs::File::open(&at) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow::Error::new(e).context(at.display().to_string())),
    };
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_INDEX_BYTES + 1),
        &mut bytes,
    )
    .with_context(|| at.display().to_string())?;
    anyhow::ensure!(
        bytes.len() as u64 <= MAX_INDEX_BYTES,
        "{}: over {MAX_INDEX_BYTES} bytes",
        at.display()
    );
    let index: Index = serde_json::from_slice(&bytes)
        .with_context(|| format!("{}: not an index", at.display()))?;
    anyhow::ensure!(
        index.format == INDEX_FORMAT
            && index.bundle_sha256 == record.bundle_sha256
            && index.revision == record.revision,
        "{}: the index of another bundle or revision",
        at.display()
    );
    let files = index
        .files
        .into_iter()
        .map(|(path, executable)| TreeFile { path, executable });
    Ok(Some(BundleView {
        listing: Listing::new(files.collect()),
        redacted: index.redacted,
        reach: Some(index.reach),
        links: index.links,
        ..BundleView::default()
    }))
}
