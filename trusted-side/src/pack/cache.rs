//! The pack cache: what packing each file produced (its scan result, redactions, digest) and
//! each group's compressed bytes (see [`super::groups`]), kept per tree and options under the
//! home's `cache/pack/`, so that a pack of a new revision scans and compresses only the groups
//! whose files changed, and a pack of the same revision none. A bundle built from the cache is
//! byte-identical to one packed from scratch: a group's compressed bytes depend on its members
//! only, and a member's result on its content, path, mode, the rules and the options.
//!
//! An entry file is `MAGIC`, the groups' compressed bytes, a metadata block ([`Meta`], postcard
//! encoded: every file's result, every group's place, length, SHA-256 and CRC), then a trailer:
//! the two lengths and an HMAC-SHA256 over magic, lengths and metadata under a key derived from the
//! trusted signing key.
//!
//! Guards against: reusing a result produced from other content or under other rules or
//! options (an entry is only read under its key, which binds the scanner's rules and version,
//! `--include`, `--exclude`, `--redact`, `--max-file-bytes`, the formats and this very binary;
//! a file's result is only reused for the same path, mode and blob id); a corrupted or tampered
//! entry (a metadata block whose HMAC fails ignores the whole entry; a group whose bytes do not
//! match their SHA-256 is rebuilt from the repository, its files scanned again: never trusted);
//! a link planted in the cache directory (entries are opened beneath the home without following
//! links, `store/beneath.rs`); unbounded growth (at most [`MAX_ENTRIES`] entries, none above
//! [`MAX_ENTRY_BYTES`]). An entry is only stored after the pack it came from succeeded.
//!
//! Does not check: a writer who holds the trusted key (they can sign bundles anyway).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use airlock_core::digest::Sha256Digest;
use airlock_core::keys::SigningKey;
use airlock_scan::Scanner;
use anyhow::{bail, Context, Result};
use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ahead::{Ahead, Span};
use super::groups::{FileResult, Member};
use super::PackOptions;
use crate::git::TreeEntry;
use crate::store::beneath::Root;

/// Entries whose compressed bytes are larger than this are not kept.
pub const MAX_ENTRY_BYTES: u64 = 256 * 1024 * 1024;
/// At most this many entries are kept (the oldest go first).
pub const MAX_ENTRIES: usize = 16;
/// First bytes of an entry file.
const MAGIC: &[u8; 24] = b"airlock-pack-cache/v5\n\0\0";
/// Trailer: metadata length, data length, HMAC.
const TRAILER: u64 = 8 + 8 + 32;
/// Largest metadata block read back.
const MAX_META_BYTES: u64 = 256 * 1024 * 1024;
/// Where entries live, under the home.
const DIR: &str = "cache/pack";

/// Environment variable that turns the cache off (`AIRLOCK_PACK_CACHE=off`): every pack
/// selects, scans and compresses every file again, and nothing is kept.
pub const ENV_SWITCH: &str = "AIRLOCK_PACK_CACHE";

/// The home the cache lives under (in `cache/pack/`), unless [`ENV_SWITCH`] is `off`.
pub fn dir(home: &Path) -> Option<PathBuf> {
    match std::env::var(ENV_SWITCH) {
        Ok(v) if v == "off" => None,
        _ => Some(home.to_owned()),
    }
}

/// One group of an entry: which files, and where its compressed bytes are.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupRecord {
    /// First file (index into [`Meta::files`]).
    pub first: usize,
    /// One past the last file.
    pub end: usize,
    /// [`super::groups::digest`] of its members.
    pub digest: Sha256Digest,
    /// Offset of its bytes in the entry's data.
    pub offset: u64,
    /// Length of its bytes.
    pub len: u64,
    /// SHA-256 of its bytes.
    pub sha256: Sha256Digest,
    /// CRC-32 of its tar bytes.
    pub crc32: u32,
    /// Its tar bytes.
    pub tar_bytes: u64,
}

/// One file of an entry and what packing it produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRecord {
    /// The file.
    pub member: Member,
    /// Its result.
    pub result: FileResult,
}

/// What an entry records about a pack's `files/` part.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// The key it was stored under.
    pub key: Sha256Digest,
    /// The tree packed.
    pub tree: String,
    /// Every selected file, in bundle order.
    pub files: Vec<FileRecord>,
    /// Every group, in order.
    pub groups: Vec<GroupRecord>,
    /// Paths left out by selection, per rule.
    pub skipped: BTreeMap<String, u64>,
    /// The tree's entries left out by selection, in listing order: with `files`, the tree's
    /// whole listing, from which the next revision's is made (`git/changes.rs`).
    pub others: Vec<TreeEntry>,
}

/// The cache of one pack: the home, the key of its rules and options, the HMAC key.
pub struct PackCache {
    root: Root,
    key: Sha256Digest,
    mac_key: [u8; 32],
}

/// A verified entry of an earlier pack with the same key.
pub struct Base {
    /// Its metadata (HMAC checked).
    pub meta: Meta,
    file: File,
    /// The file after the one found last: a pack asks for paths in the order the entry holds
    /// them (bundle order), so this is the next answer, found without hashing the path.
    next: AtomicUsize,
    by_group: HashMap<Sha256Digest, usize>,
}

/// An entry being written: its data goes to `file`, starting after the magic.
pub struct Staging {
    /// The file (its data starts at [`Staging::data_start`]).
    pub file: File,
    dir: Option<(OwnedFd, String)>,
}

impl PackCache {
    /// The cache under `home` for packs with `opts` and `scanner`'s rules, signed by `signer`;
    /// `None` if this binary's identity cannot be read or the home not opened (then nothing is
    /// reused or kept).
    pub fn new(
        home: &Path,
        opts: &PackOptions<'_>,
        scanner: &Scanner,
        signer: &SigningKey,
    ) -> Option<PackCache> {
        use std::os::unix::fs::MetadataExt;
        let exe = std::env::current_exe().ok()?;
        let m = std::fs::metadata(&exe).ok()?;
        let key_doc = serde_json::json!({
            "cache": std::str::from_utf8(&MAGIC[..21]).ok()?,
            "packer": env!("CARGO_PKG_VERSION"),
            "manifest": airlock_core::format::MANIFEST_FORMAT,
            "groups": [super::groups::ONE_IN as u64, super::groups::GROUP_CAP, super::groups::SOLO_BYTES, super::groups::LEVEL as u64, super::groups::TAIL_LEVEL as u64],
            "binary": [m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()],
            "rules": rules_digest(scanner).ok()?,
            "include": opts.include,
            "exclude": opts.exclude,
            "redact": opts.redact,
            "max_file_bytes": opts.max_file_bytes,
        });
        let key = Sha256Digest::of_bytes(&serde_json::to_vec(&key_doc).ok()?);
        let mut h = Sha256::new();
        h.update(b"airlock pack cache mac v1\0");
        h.update(signer.sign(b"airlock pack cache mac key v1"));
        let root = Root::open(home).ok()?;
        Some(PackCache {
            root,
            key,
            mac_key: h.finalize().into(),
        })
    }

    fn name(&self, tree: &str) -> String {
        format!("{DIR}/{}.{tree}.entry", self.key)
    }

    /// The entries to start from, best first: this tree's, else the newest with the same key
    /// (at most three).
    pub fn candidates(&self, tree: &str) -> Vec<String> {
        let Ok(listing) = self.root.list(&format!("{DIR}/")) else {
            return Vec::new();
        };
        let prefix = format!("{DIR}/{}.", self.key);
        let exact = self.name(tree);
        let mut names: Vec<(bool, u64, String)> = listing
            .files
            .into_iter()
            .filter(|(k, _, _)| k.starts_with(&prefix) && k.ends_with(".entry"))
            .map(|(k, _, ctime)| (k == exact, ctime, k))
            .collect();
        names.sort_by(|a, b| b.cmp(a));
        names.into_iter().take(3).map(|(_, _, name)| name).collect()
    }

    /// The tree a candidate's name says it holds (checked against its metadata when loaded).
    pub fn tree_of(name: &str) -> Option<&str> {
        let stem = name.strip_suffix(".entry")?;
        stem.rsplit_once('.').map(|(_, tree)| tree)
    }

    /// The first of `candidates` that loads and passes its check. Entries that fail are
    /// skipped (and replaced when this pack stores its own).
    pub fn base(&self, candidates: &[String]) -> Option<Base> {
        candidates.iter().find_map(|name| {
            self.load(name)
                .map_err(|e| tracing::debug!("pack cache: {name} ignored: {e:#}"))
                .ok()
        })
    }

    fn load(&self, name: &str) -> Result<Base> {
        let (file, st) = self.root.open_file(name)?.context("gone")?;
        let size = u64::try_from(st.st_size).context("size")?;
        let magic_len = MAGIC.len() as u64;
        if size < magic_len + TRAILER {
            bail!("truncated");
        }
        let mut trailer = [0u8; TRAILER as usize];
        file.read_exact_at(&mut trailer, size - TRAILER)?;
        let (lens, mac) = trailer.split_at(16);
        let meta_len = u64::from_le_bytes(lens[..8].try_into()?);
        let data_len = u64::from_le_bytes(lens[8..].try_into()?);
        if meta_len > MAX_META_BYTES
            || magic_len
                .checked_add(data_len)
                .and_then(|n| n.checked_add(meta_len))
                != Some(size - TRAILER)
        {
            bail!("lengths do not add up");
        }
        let mut magic = [0u8; MAGIC.len()];
        file.read_exact_at(&mut magic, 0)?;
        let mut meta = vec![0u8; usize::try_from(meta_len)?];
        file.read_exact_at(&mut meta, magic_len + data_len)?;
        let want = self.mac(&magic, lens, &meta);
        let equal = want.iter().zip(mac).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
        if &magic != MAGIC || !equal {
            bail!("not an entry of this home (HMAC)");
        }
        let meta: Meta = postcard::from_bytes(&meta).context("metadata")?;
        if meta.key != self.key {
            bail!("entry stored under another key");
        }
        if Self::tree_of(name) != Some(meta.tree.as_str()) {
            bail!("entry stored under another tree's name");
        }
        for g in &meta.groups {
            let fits = g.first <= g.end && g.end <= meta.files.len();
            if !fits || g.offset.checked_add(g.len).is_none_or(|e| e > data_len) {
                bail!("a group outside the entry");
            }
        }
        let by_group = meta
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| (g.digest, i))
            .collect();
        Ok(Base {
            meta,
            file,
            next: AtomicUsize::new(0),
            by_group,
        })
    }

    fn mac(&self, magic: &[u8], lens: &[u8], meta: &[u8]) -> [u8; 32] {
        let mut k = [0u8; 64];
        k[..32].copy_from_slice(&self.mac_key);
        let pad = |b: u8| k.map(|x| x ^ b);
        let inner = Sha256::new()
            .chain_update(pad(0x36))
            .chain_update(magic)
            .chain_update(lens)
            .chain_update(meta)
            .finalize();
        Sha256::new()
            .chain_update(pad(0x5c))
            .chain_update(inner)
            .finalize()
            .into()
    }

    /// A new entry, its magic written, in the cache directory (created, never through a link).
    pub fn begin(&self) -> Result<Staging> {
        let (dir, _) = self
            .root
            .parent(&format!("{DIR}/x"), true)?
            .context("cache directory")?;
        use rand_core::RngCore;
        let tmp = format!(".entry-{:016x}.tmp", rand_core::OsRng.next_u64());
        let fd = rustix::fs::openat(
            &dir,
            &tmp,
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let file = File::from(fd);
        file.write_all_at(MAGIC, 0)?;
        Ok(Staging {
            file,
            dir: Some((dir, tmp)),
        })
    }

    /// Appends the metadata (`files`, `groups`, and `skipped` and `others` of `tree`) and the
    /// trailer to `staging` (whose data is `data_len` bytes) and moves it into place as this
    /// tree's entry; prunes old entries.
    pub fn commit(
        &self,
        mut staging: Staging,
        data_len: u64,
        tree: &str,
        (files, groups): (Vec<FileRecord>, Vec<GroupRecord>),
        (skipped, others): (&BTreeMap<String, u64>, Vec<TreeEntry>),
    ) -> Result<()> {
        let meta = Meta {
            key: self.key,
            tree: tree.to_owned(),
            files,
            groups,
            skipped: skipped.clone(),
            others,
        };
        let (dir, tmp) = staging.dir.take().context("not a cache entry")?;
        let done = (|| -> Result<()> {
            if data_len > MAX_ENTRY_BYTES {
                bail!("entry too large");
            }
            let block = postcard::to_allocvec(&meta)?;
            let mut lens = Vec::with_capacity(16);
            lens.extend((block.len() as u64).to_le_bytes());
            lens.extend(data_len.to_le_bytes());
            let mac = self.mac(MAGIC, &lens, &block);
            let at = MAGIC.len() as u64 + data_len;
            let mut w = BufWriter::new(&staging.file);
            std::io::Seek::seek(&mut w, std::io::SeekFrom::Start(at))?;
            w.write_all(&block)?;
            w.write_all(&lens)?;
            w.write_all(&mac)?;
            w.flush()?;
            let name = self.name(&meta.tree);
            let (_, final_name) = name.rsplit_once('/').context("name")?;
            rustix::fs::renameat(&dir, &tmp, &dir, final_name)?;
            Ok(())
        })();
        if done.is_err() {
            let _ = rustix::fs::unlinkat(&dir, &tmp, rustix::fs::AtFlags::empty());
        }
        super::drop_aside(meta);
        done?;
        self.prune();
        Ok(())
    }

    /// Removes the oldest entries beyond [`MAX_ENTRIES`], and temp files a day old.
    fn prune(&self) {
        let Ok(listing) = self.root.list(&format!("{DIR}/")) else {
            return;
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut entries = Vec::new();
        for (key, _, ctime) in listing.files {
            let name = key.rsplit('/').next().unwrap_or_default();
            if name.starts_with(".entry-") && now.saturating_sub(ctime) > 86_400 {
                let _ = self.root.delete(&key);
            } else if name.ends_with(".entry") {
                entries.push((ctime, key));
            }
        }
        entries.sort();
        let extra = entries.len().saturating_sub(MAX_ENTRIES);
        for (_, key) in &entries[..extra] {
            let _ = self.root.delete(key);
        }
    }
}

impl Staging {
    /// Offset of the data in the file.
    pub fn data_start() -> u64 {
        MAGIC.len() as u64
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some((dir, tmp)) = self.dir.take() {
            let _ = rustix::fs::unlinkat(&dir, &tmp, rustix::fs::AtFlags::empty());
        }
    }
}

impl Base {
    /// The entry's record of `path`: the one after the record found last if it is that path,
    /// else found by bisection (the entry holds its files in bundle order, strictly
    /// ascending; in an entry that did not, a path missed is only a file packed again).
    fn record(&self, path: &[u8]) -> Option<&FileRecord> {
        let files = &self.meta.files;
        let here = |i: usize| files.get(i).filter(|f| f.member.path.as_bytes() == path);
        let next = self.next.load(Ordering::Relaxed);
        let i = match here(next) {
            Some(_) => next,
            None => (files.binary_search_by(|f| f.member.path.as_bytes().cmp(path))).ok()?,
        };
        self.next.store(i + 1, Ordering::Relaxed);
        here(i)
    }

    /// The result of packing this file (same path, mode and blob) before.
    pub fn file(&self, m: &Member) -> Option<&FileResult> {
        let f = self.record(m.path.as_bytes())?;
        (f.member.exec == m.exec && f.member.oid == m.oid).then_some(&f.result)
    }

    /// Whether `path` was selected by the pack that stored this entry (same selection rules:
    /// the key binds them).
    pub fn selected(&self, path: &str) -> bool {
        self.record(path.as_bytes()).is_some()
    }

    /// The size of the blob `oid` at `path`, if this entry packed it.
    pub fn size(&self, path: &[u8], oid: &str) -> Option<u64> {
        let f = self.record(path)?;
        (f.member.oid == oid).then_some(f.member.size)
    }

    /// The whole listing of the entry's tree, in path order: its files (sizes known) and the
    /// entries left out, merged. `None` if a path is in both (no listing of a tree has it
    /// twice: the caller lists the tree whole).
    pub fn listing(&self) -> Option<Vec<TreeEntry>> {
        let files = self.meta.files.iter().map(|f| TreeEntry {
            mode: Cow::Borrowed(if f.member.exec { "100755" } else { "100644" }),
            kind: Cow::Borrowed("blob"),
            oid: f.member.oid.clone(),
            size: f.member.size,
            path: f.member.path.as_bytes().to_vec(),
        });
        let mut all: Vec<TreeEntry> = files.chain(self.meta.others.iter().cloned()).collect();
        all.sort_by(|a, b| a.path.cmp(&b.path));
        crate::git::is_sorted(&all).then_some(all)
    }

    /// The group with these members, if kept: its index in the entry, and its record.
    pub fn group(&self, digest: &Sha256Digest) -> Option<(usize, &GroupRecord)> {
        let i = *self.by_group.get(digest)?;
        Some((i, self.meta.groups.get(i)?))
    }

    /// Starts reading and checking every group's bytes, in the entry's order
    /// (`pack/ahead.rs`); `None` if the file cannot be opened again.
    pub fn read_ahead(&self) -> Option<Ahead> {
        let file = self.file.try_clone().ok()?;
        let spans = (self.meta.groups.iter())
            .map(|g| Span {
                at: MAGIC.len() as u64 + g.offset,
                len: g.len,
                sha256: g.sha256,
            })
            .collect();
        Some(Ahead::start(file, spans))
    }
}

/// Digest of the scanner's rules, global allowlists and version.
fn rules_digest(scanner: &Scanner) -> Result<Sha256Digest> {
    let doc = serde_json::json!({
        "version": airlock_scan::VERSION,
        "rules": scanner.rules(),
        "global": scanner.global_allowlists(),
    });
    Ok(Sha256Digest::of_bytes(&serde_json::to_vec(&doc)?))
}

/// Creates `dir` and its parents, mode 0700.
pub(crate) fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("{}: cannot create", dir.display()))
}

/// Removes the oldest files whose name passes `kind`, beyond the newest `max`.
pub(crate) fn prune_oldest(dir: &Path, kind: impl Fn(&str) -> bool, max: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<_> = rd
        .flatten()
        .filter(|e| kind(&e.file_name().to_string_lossy()))
        .filter_map(|e| {
            let modified = e.metadata().ok()?.modified().ok()?;
            Some((modified, e.path()))
        })
        .collect();
    if files.len() <= max {
        return;
    }
    files.sort();
    for (_, p) in &files[..files.len() - max] {
        let _ = std::fs::remove_file(p);
    }
}

#[cfg(test)]
#[path = "listing_tests.rs"]
mod listing_tests;
#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
