//! The pack cache: the `files/` part of a bundle (selected, scanned, redacted, compressed and
//! rescanned), kept per tree and options so that jobs submitted on the same revision skip that
//! work. A bundle built from a cache entry is byte-identical to one packed from scratch: the
//! writer always cuts the deflate stream after the last `files/` member
//! (`DeterministicTarWriter::cut`), and a hit replays the compressed bytes up to that cut.
//!
//! Guards against: reusing a files part packed from other content or under other rules (the key
//! binds the tree id, which names every blob's content, every option that shapes the files part,
//! and the identity of this very binary, whose code holds the deny-list and the scan rules), a
//! corrupted, truncated or renamed entry (the entry names its key, its compressed bytes are bound
//! by SHA-256 and length, and the writer re-checks every member on resume; any mismatch is a
//! miss), and unbounded growth (entries above [`MAX_ENTRY_BYTES`] are not kept, at most
//! [`MAX_ENTRIES`] are).
//!
//! Does not check: a writer of the home directory forging an entry with a matching digest; such
//! a writer holds the trusted key already. An entry is only ever stored after the full rescan of
//! the bundle it came from passed.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use airlock_core::digest::{HashingWriter, Sha256Digest};
use airlock_core::format::{FileEntry, Redaction};
use airlock_core::limits::TarLimits;
use airlock_core::tar::{Cut, DeterministicTarWriter, GZIP_HEADER};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::{PackOptions, Tar};

/// Entries whose compressed files part is larger than this are not kept.
pub const MAX_ENTRY_BYTES: u64 = 256 * 1024 * 1024;
/// At most this many entries are kept (the oldest go first).
pub const MAX_ENTRIES: usize = 16;
/// First line of an entry file.
const MAGIC: &[u8; 24] = b"airlock-pack-cache/v1\n\0\0";
/// Largest metadata block read back.
const MAX_META_BYTES: u64 = 256 * 1024 * 1024;

/// Environment variable that turns the cache off (`AIRLOCK_PACK_CACHE=off`): every pack
/// selects, scans and compresses every file again, and nothing is kept.
pub const ENV_SWITCH: &str = "AIRLOCK_PACK_CACHE";

/// The cache directory under a home, unless [`ENV_SWITCH`] is `off`.
pub fn dir(home: &Path) -> Option<PathBuf> {
    match std::env::var(ENV_SWITCH) {
        Ok(v) if v == "off" => None,
        _ => Some(home.join("cache").join("pack")),
    }
}

/// Where the stream stood at the cut, as kept in an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CutRecord {
    crc32: u32,
    tar_bytes: u64,
    compressed_bytes: u64,
}

impl From<Cut> for CutRecord {
    fn from(c: Cut) -> Self {
        CutRecord {
            crc32: c.crc32,
            tar_bytes: c.tar_bytes,
            compressed_bytes: c.compressed_bytes,
        }
    }
}

impl From<CutRecord> for Cut {
    fn from(c: CutRecord) -> Self {
        Cut {
            crc32: c.crc32,
            tar_bytes: c.tar_bytes,
            compressed_bytes: c.compressed_bytes,
        }
    }
}

/// What an entry records about its files part (everything the manifest and summary need).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// The cut after the last `files/` member.
    pub cut: CutRecord,
    /// SHA-256 of the compressed bytes between the gzip header and the cut (set when stored).
    pub prefix_sha256: Option<Sha256Digest>,
    /// The manifest's file entries.
    pub files: Vec<FileEntry>,
    /// Redactions made in the files.
    pub redactions: Vec<Redaction>,
    /// Files left out for their content.
    #[serde(default)]
    pub omitted: Vec<airlock_core::format::Omission>,
    /// Paths left out, per rule.
    pub skipped: BTreeMap<String, u64>,
    /// Bytes of file content packed.
    pub bytes: u64,
}

/// The entry file's metadata block: the key it was stored under, then [`Meta`].
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    key: Sha256Digest,
    meta: Meta,
}

/// One cache slot: a directory and the key of this pack's tree and options.
pub struct PackCache {
    dir: PathBuf,
    key: Sha256Digest,
}

/// A verified entry, ready to replay.
pub struct Hit {
    /// Its metadata.
    pub meta: Meta,
    file: File,
    offset: u64,
}

impl PackCache {
    /// The slot for `tree` packed with `opts`; `None` if this binary's identity cannot be read
    /// (then nothing is reused).
    pub fn new(dir: &Path, tree: &str, opts: &PackOptions<'_>) -> Option<PackCache> {
        use std::os::unix::fs::MetadataExt;
        // Everything that shapes the files part must be in this key: the tree names the
        // content; the options pick and redact; the binary carries the deny-list, the scan
        // rules and the writer. (Scan rules loaded from a file would have to be added here.)
        let exe = std::env::current_exe().ok()?;
        let m = std::fs::metadata(&exe).ok()?;
        let key_doc = serde_json::json!({
            "cache": "airlock-pack-cache/v1",
            "packer": env!("CARGO_PKG_VERSION"),
            // Entries packed before every byte was scanned must not be reused.
            "scan": "every-byte-v1",
            "binary": [m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()],
            "tree": tree,
            "include": opts.include,
            "exclude": opts.exclude,
            "redact": opts.redact,
            "max_file_bytes": opts.max_file_bytes,
        });
        let key = Sha256Digest::of_bytes(&serde_json::to_vec(&key_doc).ok()?);
        Some(PackCache {
            dir: dir.to_owned(),
            key,
        })
    }

    fn path(&self) -> PathBuf {
        self.dir.join(format!("{}.entry", self.key))
    }

    /// The entry for this slot, verified (key, length and digest of the compressed bytes); any
    /// problem is a miss.
    pub fn load(&self) -> Option<Hit> {
        match self.try_load() {
            Ok(hit) => hit,
            Err(e) => {
                tracing::debug!("pack cache: entry ignored: {e:#}");
                None
            }
        }
    }

    fn try_load(&self) -> Result<Option<Hit>> {
        let mut file = match File::open(self.path()) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let mut head = [0u8; MAGIC.len() + 8];
        file.read_exact(&mut head)?;
        if &head[..MAGIC.len()] != MAGIC {
            bail!("not a cache entry");
        }
        let mut len = [0u8; 8];
        len.copy_from_slice(&head[MAGIC.len()..]);
        let meta_len = u64::from_le_bytes(len);
        if meta_len > MAX_META_BYTES {
            bail!("metadata too large");
        }
        let mut meta = Vec::new();
        (&mut file).take(meta_len).read_to_end(&mut meta)?;
        if meta.len() as u64 != meta_len {
            bail!("truncated metadata");
        }
        let stored: Stored = serde_json::from_slice(&meta).context("metadata")?;
        if stored.key != self.key {
            bail!("entry stored under another key");
        }
        let want = stored.meta.prefix_sha256.context("no digest")?;
        let offset = (MAGIC.len() + 8) as u64 + meta_len;
        let mut hashing = HashingWriter::new(std::io::sink());
        std::io::copy(
            &mut BufReader::with_capacity(256 * 1024, &file),
            &mut hashing,
        )?;
        let (_, digest, n) = hashing.finish();
        if n != stored.meta.cut.compressed_bytes || digest != want {
            bail!("compressed bytes do not match the entry's digest");
        }
        Ok(Some(Hit {
            meta: stored.meta,
            file,
            offset,
        }))
    }

    /// Keeps the files part of a bundle just written (and fully rescanned) under this slot.
    pub fn store(&self, bundle: &Path, mut meta: Meta) -> Result<()> {
        let n = meta.cut.compressed_bytes;
        if n > MAX_ENTRY_BYTES {
            return Ok(());
        }
        create_private_dir(&self.dir)?;
        let mut src = File::open(bundle)?;
        src.seek(SeekFrom::Start(GZIP_HEADER.len() as u64))?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".entry-")
            .suffix(".tmp")
            .tempfile_in(&self.dir)?;
        // Digest first (the metadata block holds it and comes before the bytes).
        let mut hashing = HashingWriter::new(std::io::sink());
        let copied = std::io::copy(&mut (&mut src).take(n), &mut hashing)?;
        let (_, digest, _) = hashing.finish();
        if copied != n {
            bail!("bundle shorter than its cut");
        }
        meta.prefix_sha256 = Some(digest);
        let block = serde_json::to_vec(&Stored {
            key: self.key,
            meta,
        })?;
        {
            let mut w = BufWriter::with_capacity(256 * 1024, tmp.as_file_mut());
            w.write_all(MAGIC)?;
            w.write_all(&(block.len() as u64).to_le_bytes())?;
            w.write_all(&block)?;
            src.seek(SeekFrom::Start(GZIP_HEADER.len() as u64))?;
            std::io::copy(&mut (&mut src).take(n), &mut w)?;
            w.flush()?;
        }
        tmp.persist(self.path())?;
        prune(&self.dir);
        Ok(())
    }
}

impl Hit {
    /// A bundle writer over `file` holding the cached files part, ready for the manifest.
    pub fn resume(&self, file: File) -> Result<Tar> {
        let mut src = &self.file;
        src.seek(SeekFrom::Start(self.offset))?;
        let names: Vec<String> = self
            .meta
            .files
            .iter()
            .map(|f| format!("files/{}", f.path))
            .collect();
        let members = names
            .iter()
            .zip(&self.meta.files)
            .map(|(n, f)| (n.as_str(), false, f.size));
        let out = HashingWriter::new(BufWriter::with_capacity(256 * 1024, file));
        let tar = DeterministicTarWriter::resume(
            out,
            TarLimits::bundle(),
            &self.meta.cut.into(),
            BufReader::with_capacity(256 * 1024, src),
            members,
        )
        .context("pack cache: cannot resume the bundle")?;
        Ok(tar)
    }
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

/// Removes the oldest entries beyond [`MAX_ENTRIES`] (and stale temp files of crashed writers).
fn prune(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let day = std::time::Duration::from_secs(86_400);
    for e in rd.flatten() {
        let stale = e.file_name().to_string_lossy().starts_with(".entry-")
            && e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > day));
        if stale {
            let _ = std::fs::remove_file(e.path());
        }
    }
    prune_oldest(dir, |name| name.ends_with(".entry"), MAX_ENTRIES);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::test_git::git;
    use airlock_core::format::Request;
    use airlock_core::keys::SigningKey;

    /// A repository with a few files, one holding a secret that `--redact` replaces.
    /// A temporary directory holding a committed test repository: (the directory, the
    /// repository, a cache directory, an output directory), the last two not created yet.
    fn workspace() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("repo");
        repo(&r);
        let (cache, out) = (t.path().join("cache"), t.path().join("out"));
        (t, r, cache, out)
    }

    fn repo(dir: &Path) {
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("README.md"), "# demo\n").unwrap();
        std::fs::write(
            dir.join("src/lib.rs"),
            "pub fn f() -> u32 { 7 }\n".repeat(400),
        )
        .unwrap();
        std::fs::write(
            dir.join("src/config.py"),
            "AWS_ACCESS_KEY_ID = \"AKIAQYLPMN5HHHFPZAM2\"\n",
        )
        .unwrap();
        git(dir, &["init", "-q", "-b", "main"]);
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", "x"]);
    }

    struct Packed {
        summary: super::super::PackSummary,
        bytes: Vec<u8>,
    }

    fn pack(
        repo: &Path,
        cache: Option<&Path>,
        exclude: &[String],
        prompt: &str,
        out: &Path,
    ) -> Packed {
        try_pack(repo, cache, exclude, prompt, out).unwrap()
    }

    fn try_pack(
        repo: &Path,
        cache: Option<&Path>,
        exclude: &[String],
        prompt: &str,
        out: &Path,
    ) -> Result<Packed> {
        try_pack_with(repo, cache, exclude, prompt, "HEAD", out)
    }

    fn try_pack_with(
        repo: &Path,
        cache: Option<&Path>,
        exclude: &[String],
        prompt: &str,
        rev: &str,
        out: &Path,
    ) -> Result<Packed> {
        let key = SigningKey::from_seed([7u8; 32]);
        let opts = PackOptions {
            repo,
            rev,
            repo_name: "demo".into(),
            request: Request::new(prompt.to_owned(), "m".into()),
            include: &[],
            exclude,
            redact: true,
            max_file_bytes: 1 << 20,
            job: airlock_core::jobid::JobId::new(
                1_800_000_000,
                [1; airlock_core::jobid::RANDOM_BYTES],
            ),
            quiet: true,
            cache_dir: cache.map(Path::to_owned),
            durable: false,
        };
        let _ = std::fs::remove_dir_all(out);
        let summary = super::super::pack_bundle(&opts, &key, out)?;
        let bytes = std::fs::read(&summary.bundle_path)?;
        Ok(Packed { summary, bytes })
    }

    /// Every member of a bundle, read back with the safe reader: path -> bytes.
    fn read_back(bundle: &[u8]) -> BTreeMap<String, Vec<u8>> {
        let mut members = BTreeMap::new();
        airlock_core::tar::read_members(
            bundle,
            &TarLimits::bundle(),
            &airlock_core::tar::AllowedNames::Bundle,
            |m, rd| {
                let mut b = Vec::new();
                rd.read_to_end(&mut b)?;
                members.insert(m.path.clone(), b);
                Ok(())
            },
        )
        .unwrap();
        members
    }

    /// The files (not directories) in `dir`, sorted.
    fn entries(dir: &Path) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_file())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    #[test]
    fn a_hit_gives_the_same_bytes_as_packing_from_scratch_without_reading_blobs() {
        let (_t, r, cache, out) = workspace();
        let fresh = pack(&r, None, &[], "first prompt", &out);
        let miss = pack(&r, Some(&cache), &[], "first prompt", &out);
        assert_eq!(miss.bytes, fresh.bytes);
        assert_eq!(entries(&cache).len(), 1);
        assert_eq!(fresh.summary.redacted.values().sum::<u64>(), 1);

        // Remove a blob from the repository: a pack that read the files again would fail.
        let blob = git(&r, &["rev-parse", "HEAD:src/lib.rs"]);
        std::fs::remove_file(r.join(".git/objects").join(&blob[..2]).join(&blob[2..])).unwrap();
        let hit = pack(&r, Some(&cache), &[], "another prompt", &out);
        let hit_again = pack(&r, Some(&cache), &[], "first prompt", &out);
        assert_eq!(
            hit_again.bytes, fresh.bytes,
            "a hit must give the uncached bytes"
        );
        assert_ne!(hit.bytes, fresh.bytes);
        assert_eq!(hit.summary.files, fresh.summary.files);
        assert_eq!(hit.summary.redacted, fresh.summary.redacted);
        assert_eq!(hit.summary.skipped, fresh.summary.skipped);
        assert_eq!(
            hit_again.summary.manifest_sha256,
            fresh.summary.manifest_sha256
        );
        // The bundle from a hit reads back whole, with the new request.
        let members = read_back(&hit.bytes);
        assert_eq!(members.len() as u64, fresh.summary.files + 2);
        assert!(String::from_utf8_lossy(&members["request.json"]).contains("another prompt"));
        // Other options are another slot: packing them needs the blobs again.
        let t2 = tempfile::tempdir().unwrap();
        let opts_out = t2.path().join("o");
        let other = try_pack(&r, Some(&cache), &["README.md".into()], "p", &opts_out);
        assert!(other.is_err(), "a pack with other options reused the cache");
    }

    #[test]
    fn a_hit_still_finds_and_redacts_a_secret_in_the_prompt() {
        let (_t, r, cache, out) = workspace();
        pack(&r, Some(&cache), &[], "first prompt", &out);
        // A pack that missed the cache would need this blob: the next one is a hit.
        let blob = git(&r, &["rev-parse", "HEAD:src/lib.rs"]);
        std::fs::remove_file(r.join(".git/objects").join(&blob[..2]).join(&blob[2..])).unwrap();
        let secret = "AKIAQYLPMN5HHHFPZAM2";
        let hit = pack(
            &r,
            Some(&cache),
            &[],
            &format!("use the key {secret} please"),
            &out,
        );
        // One redaction in the tree (cached) and one in the prompt (scanned on this hit).
        assert_eq!(hit.summary.redacted.values().sum::<u64>(), 2);
        let request = String::from_utf8(read_back(&hit.bytes)["request.json"].clone()).unwrap();
        assert!(request.contains("use the key "), "{request}");
        assert!(!request.contains(secret), "{request}");
    }

    #[test]
    fn a_corrupt_or_foreign_entry_is_a_miss_and_is_replaced() {
        let (_t, r, cache, out) = workspace();
        let fresh = pack(&r, Some(&cache), &[], "p", &out);
        let entry = entries(&cache).pop().unwrap();
        let good = std::fs::read(&entry).unwrap();
        // A flipped byte in the compressed part, a truncated file, another slot's entry under
        // this name: each is ignored (the bundle is packed from scratch, identical).
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        let mut truncated = good.clone();
        truncated.truncate(good.len() - 10);
        for bad in [
            flipped,
            truncated,
            b"airlock-pack-cache/v1\n\0\0junk".to_vec(),
        ] {
            std::fs::write(&entry, &bad).unwrap();
            let again = pack(&r, Some(&cache), &[], "p", &out);
            assert_eq!(again.bytes, fresh.bytes);
            assert_eq!(std::fs::read(&entry).unwrap(), good, "entry not replaced");
        }
        let other = cache.join(format!("{}.entry", Sha256Digest::of_bytes(b"other")));
        std::fs::copy(&entry, &other).unwrap();
        std::fs::remove_file(&entry).unwrap();
        std::fs::rename(&other, &entry).unwrap();
        let again = pack(&r, Some(&cache), &[], "p", &out);
        assert_eq!(again.bytes, fresh.bytes);
    }

    #[test]
    fn prune_keeps_the_newest_entries() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        for i in 0..MAX_ENTRIES + 3 {
            let p = d.join(format!("{i:02}.entry"));
            std::fs::write(&p, b"x").unwrap();
            let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + i as u64);
            File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(when)
                .unwrap();
        }
        std::fs::write(d.join("keep.txt"), b"x").unwrap();
        prune(d);
        let left: Vec<String> = entries(d)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left.len(), MAX_ENTRIES + 1);
        assert!(!left.contains(&"00.entry".to_owned()) && left.contains(&"18.entry".to_owned()));
        assert!(left.contains(&"keep.txt".to_owned()));
    }
}
