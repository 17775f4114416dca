//! The job's trees on disk. The verified bundle is unpacked once, straight into the workdir,
//! in one streaming pass (gunzip, hash, write) that also appends every file's pristine bytes
//! to one pack file. When a diff is due, a `before` tree is rebuilt from that: files the
//! generator left untouched are hard-linked from the workdir, the others are written from the
//! pack. The worker thus creates one inode per bundle file, not two (on ext4, inode creation
//! dominates the fixed cost of a job), and reads every byte of the bundle once before the
//! generator runs. Top-level names below which nothing changed are left out of `before` and
//! skipped by the diff in both trees, so an untouched checkout costs no second tree at all.
//!
//! Guards against: a bundle whose tree disagrees with its signed manifest (every file's size,
//! digest and mode is checked while streaming; no other file may exist), writing outside the
//! workdir (member paths are checked by the core's reader, every parent is created by this
//! unpack, files are created new), and a generator that left links, FIFOs, devices or swapped
//! directories where a packed file was: a workdir file is reused in `before` only if it is a
//! regular file reached through real directories, opened without following a link or blocking
//! on a FIFO, is the very inode that was looked at, and hashes to the manifest's digest with
//! the manifest's executable bit. Everything else in `before` comes from the pack.
//! A file need not be re-read to be known untouched when `lstat` still says what `fstat` said
//! once it was unpacked (device, inode, size, mtime, ctime) and that ctime is strictly
//! before the end of the unpack (git's racy-timestamp rule: the ctime of a stamp file made
//! after the last workdir file; nothing can set a ctime, and any later write, chmod, chown,
//! link or rename gives the inode a ctime at or after the stamp's). Files in the same clock
//! tick as the stamp, or whose stat differs in any field, are hashed as before.
//! On `Ok` from [`unpack_bundle`]: the workdir holds exactly the manifest's files with their
//! digests and modes, and the pack holds the same bytes. On `Ok` from [`Base::build_before`]:
//! `before` holds exactly the manifest's files under every top-level name not listed as
//! unchanged, with their packed content and executable bit, and every name listed as
//! unchanged holds, in the workdir, exactly its packed files (verified as above) and nothing
//! else.
//! Does not check: signatures (the caller verified the bundle's digest and statement first);
//! edits hidden by stepping the system clock back to the unpack's clock tick (needs root on
//! the host; the trusted side re-checks the patch anyway).
//! While the generator still runs (a checkpoint), a file it rewrites in place after being
//! hashed is shared by both trees and missing from that checkpoint's diff; the final diff is
//! taken once no process of the sandbox is left.

use std::collections::HashSet;
use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use airlock_core::digest::{HashingReader, HashingWriter, Sha256Digest};
use airlock_core::format::{Manifest, Request, MAX_MANIFEST_BYTES, MAX_REQUEST_BYTES};
use airlock_core::limits::TarLimits;
use airlock_core::tar::{read_members, AllowedNames, MemberKind, TarError, TarRule};
use anyhow::{bail, Context, Result};

/// The directory of the bundle that holds the tree.
const FILES_PREFIX: &str = "files/";

/// One file as it was unpacked.
struct Unpacked {
    path: String,
    size: u64,
    executable: bool,
    sha256: Sha256Digest,
    offset: u64,
    seen: Seen,
}

/// What `stat` says of a workdir file, less what is pinned elsewhere (size and executable bit:
/// the manifest; device: the workdir's) and what reading changes (atime). The mode is not
/// kept: a chmod sets the ctime. 32 bytes a file: a bundle may hold 200,000 files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    ino: u64,
    ctime_sec: i64,
    mtime_sec: i64,
    ctime_nsec: u32,
    mtime_nsec: u32,
}

impl Seen {
    fn of(m: &fs::Metadata) -> Seen {
        // `*_nsec` is within 0..1e9 (the kernel's timespec); anything else is never equal.
        let nsec = |n: i64| u32::try_from(n).unwrap_or(u32::MAX);
        Seen {
            ino: m.ino(),
            ctime_sec: m.ctime(),
            mtime_sec: m.mtime(),
            ctime_nsec: nsec(m.ctime_nsec()),
            mtime_nsec: nsec(m.mtime_nsec()),
        }
    }

    fn ctime(&self) -> (i64, u32) {
        (self.ctime_sec, self.ctime_nsec)
    }
}

/// Where a packed file's bytes are (its size is the manifest's), and what its workdir copy
/// looked like once unpacked.
struct Span {
    offset: u64,
    /// `None`: its ctime was not strictly before the stamp; always re-read.
    seen: Option<Seen>,
}

/// The pristine tree: the verified manifest and, for each of its files, where its bytes sit in
/// the pack.
pub struct Base {
    /// The manifest, checked against the unpacked tree.
    pub manifest: Manifest,
    pack: PathBuf,
    /// The pack span and unpacked stat of `manifest.files[i]`.
    spans: Vec<Span>,
    /// The device of the workdir.
    dev: u64,
}

/// What the bundle held besides its tree.
pub struct Bundle {
    /// The pristine tree.
    pub base: Base,
    /// `request.json`, parsed.
    pub request: Request,
    /// SHA-256 of `manifest.json` as unpacked.
    pub manifest_sha256: Sha256Digest,
    /// SHA-256 of `request.json` as unpacked.
    pub request_sha256: Sha256Digest,
}

/// Directories made by this process below one root, so that each is made once, level by
/// level, never through a link.
struct Dirs<'a> {
    root: &'a Path,
    made: HashSet<String>,
}

impl<'a> Dirs<'a> {
    fn new(root: &'a Path) -> Dirs<'a> {
        Dirs {
            root,
            made: HashSet::new(),
        }
    }

    /// Makes every parent of `rel` (0755, explicit: neither umask nor a setgid parent decides).
    fn parents_of(&mut self, rel: &str) -> io::Result<()> {
        for (i, _) in rel.match_indices('/') {
            self.make(&rel[..i])?;
        }
        Ok(())
    }

    fn make(&mut self, rel: &str) -> io::Result<()> {
        if self.made.contains(rel) {
            return Ok(());
        }
        let dir = self.root.join(rel);
        DirBuilder::new().mode(0o755).create(&dir)?;
        fs::set_permissions(&dir, Permissions::from_mode(0o755))?;
        self.made.insert(rel.to_owned());
        Ok(())
    }
}

fn mode_of(executable: bool) -> u32 {
    if executable {
        0o755
    } else {
        0o644
    }
}

/// Bytes of the one buffer each pass reuses (allocated once, not once per file).
const BUF_BYTES: usize = 64 * 1024;

/// Writes everything read from `src` to both `a` and `b`.
fn tee(
    src: &mut dyn Read,
    a: &mut dyn Write,
    b: &mut dyn Write,
    buf: &mut [u8],
) -> io::Result<u64> {
    let mut n: u64 = 0;
    loop {
        let k = match src.read(buf) {
            Ok(0) => return Ok(n),
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        a.write_all(&buf[..k])?;
        b.write_all(&buf[..k])?;
        n += k as u64;
    }
}

/// Reads a small JSON member whole, refusing it above `max` bytes before reading.
fn read_small(
    m: &airlock_core::tar::Member,
    body: &mut dyn Read,
    max: usize,
) -> Result<(Vec<u8>, Sha256Digest), TarError> {
    if m.size > max as u64 {
        return Err(TarError::member_rejected(
            &m.path,
            TarRule::EntryTooLarge,
            format!("{} bytes, at most {max} accepted", m.size),
        ));
    }
    let mut r = HashingReader::new(body);
    let mut buf = Vec::with_capacity(usize::try_from(m.size).unwrap_or(0));
    r.read_to_end(&mut buf)
        .map_err(|e| TarError::io(Some(&m.path), "read", e))?;
    let (_, digest, _) = r.finish();
    Ok((buf, digest))
}

/// Unpacks the bundle at `bundle` into `work` (created here) and `pack` (created here), and
/// checks the tree against the manifest. Workdir files are made to belong to `owner` when
/// given and allowed (a root worker's generator identity: handing files over before they are
/// looked at keeps their ctime from moving later). See the module doc.
pub fn unpack_bundle(
    bundle: &Path,
    work: &Path,
    pack: &Path,
    mut owner: Option<(u32, u32)>,
) -> Result<Bundle> {
    DirBuilder::new()
        .mode(0o755)
        .create(work)
        .with_context(|| format!("{}: cannot create the workdir", work.display()))?;
    fs::set_permissions(work, Permissions::from_mode(0o755))?;
    let pack_file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(pack)
        .with_context(|| format!("{}: cannot create", pack.display()))?;
    let mut pack_out = BufWriter::with_capacity(256 * 1024, pack_file);
    let mut offset: u64 = 0;
    let mut dirs = Dirs::new(work);
    let mut files: Vec<Unpacked> = Vec::new();
    let mut buf = vec![0u8; BUF_BYTES];
    let mut manifest: Option<(Vec<u8>, Sha256Digest)> = None;
    let mut request: Option<(Vec<u8>, Sha256Digest)> = None;

    let src = File::open(bundle).with_context(|| format!("{}: cannot open", bundle.display()))?;
    read_members(
        io::BufReader::with_capacity(64 * 1024, src),
        &TarLimits::bundle(),
        &AllowedNames::Bundle,
        |m, body| {
            match (m.path.as_str(), m.kind) {
                ("manifest.json", MemberKind::File) => {
                    manifest = Some(read_small(m, body, MAX_MANIFEST_BYTES)?);
                }
                ("request.json", MemberKind::File) => {
                    request = Some(read_small(m, body, MAX_REQUEST_BYTES)?);
                }
                ("files", MemberKind::Dir) => {}
                (p, kind) => {
                    // AllowedNames::Bundle admits nothing else at the top.
                    let Some(rel) = p.strip_prefix(FILES_PREFIX) else {
                        return Err(TarError::member_rejected(
                            p,
                            TarRule::UnlistedMember,
                            "not a bundle member",
                        ));
                    };
                    let io_err = |op: &str, e: io::Error| TarError::io(Some(p), op.to_owned(), e);
                    dirs.parents_of(rel)
                        .map_err(|e| io_err("create directory", e))?;
                    match kind {
                        MemberKind::Dir => {
                            dirs.make(rel).map_err(|e| io_err("create directory", e))?
                        }
                        MemberKind::File => {
                            let mode = mode_of(m.executable);
                            let mut f = OpenOptions::new()
                                .write(true)
                                .create_new(true)
                                .mode(mode)
                                .open(work.join(rel))
                                .map_err(|e| io_err("create", e))?;
                            let mut hashed = HashingReader::new(body);
                            let n = tee(&mut hashed, &mut f, &mut pack_out, &mut buf)
                                .map_err(|e| io_err("write", e))?;
                            if let Some((uid, gid)) = owner {
                                // Best effort: a file left to the sandbox's hand-over is only
                                // hashed again at diff time (its ctime moves).
                                if std::os::unix::fs::fchown(&f, Some(uid), Some(gid)).is_err() {
                                    owner = None;
                                }
                            }
                            f.set_permissions(Permissions::from_mode(mode))
                                .map_err(|e| io_err("chmod", e))?;
                            let seen = Seen::of(&f.metadata().map_err(|e| io_err("stat", e))?);
                            let (_, sha256, _) = hashed.finish();
                            files.push(Unpacked {
                                path: rel.to_owned(),
                                size: n,
                                executable: m.executable,
                                sha256,
                                offset,
                                seen,
                            });
                            offset += n;
                        }
                    }
                }
            }
            Ok(())
        },
    )
    .map_err(|e| e.with_label("bundle.tar.gz"))?;
    pack_out
        .into_inner()
        .map_err(|e| anyhow::anyhow!("{}: cannot write: {}", pack.display(), e.error()))?;
    // The end of the unpack, on the filesystem's clock: made after every workdir file.
    let stamp_path = pack.with_extension("stamp");
    let stamp = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&stamp_path)
        .and_then(|f| f.metadata())
        .with_context(|| format!("{}: cannot create", stamp_path.display()))?;
    let unpacked_at = Seen::of(&stamp).ctime();
    let dev = fs::symlink_metadata(work)
        .with_context(|| format!("{}: cannot stat", work.display()))?
        .dev();

    let Some((manifest_bytes, manifest_sha256)) = manifest else {
        bail!("bundle refused (bundle.manifest): bundle.tar.gz has no manifest.json");
    };
    let Some((request_bytes, request_sha256)) = request else {
        bail!("bundle refused (bundle.request): bundle.tar.gz has no request.json");
    };
    let manifest = Manifest::from_json(&manifest_bytes)?;
    drop(manifest_bytes);
    let request = Request::from_json(&request_bytes)?;
    let spans = check_against_manifest(files, &manifest, unpacked_at)?;
    Ok(Bundle {
        base: Base {
            manifest,
            pack: pack.to_owned(),
            spans,
            dev,
        },
        request,
        manifest_sha256,
        request_sha256,
    })
}

/// `bundle.manifest`: the unpacked files are exactly the manifest's, with its sizes, digests
/// and modes. Returns the spans in manifest order, keeping the stat of files whose ctime is
/// strictly before `unpacked_at`.
fn check_against_manifest(
    mut files: Vec<Unpacked>,
    manifest: &Manifest,
    unpacked_at: (i64, u32),
) -> Result<Vec<Span>> {
    files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    if files.len() != manifest.files.len() {
        bail!(
            "bundle refused (bundle.manifest): {} files unpacked, manifest lists {}",
            files.len(),
            manifest.files.len()
        );
    }
    let mut spans = Vec::with_capacity(files.len());
    for (got, want) in files.iter().zip(&manifest.files) {
        if got.path != want.path {
            bail!(
                "bundle refused (bundle.manifest): {} unpacked, manifest lists {} there",
                got.path,
                want.path
            );
        }
        if got.size != want.size || got.sha256 != want.sha256 || got.executable != want.executable()
        {
            bail!(
                "bundle refused (bundle.manifest): {} differs from the manifest (size, digest or mode)",
                got.path
            );
        }
        spans.push(Span {
            offset: got.offset,
            seen: (got.seen.ctime() < unpacked_at).then_some(got.seen),
        });
    }
    Ok(spans)
}

/// What a diff needs besides the workdir: a `before` tree and the top-level names both trees
/// skip because nothing below them changed.
#[derive(Debug, Default)]
pub struct BeforeTree {
    /// Top-level names of the manifest whose every file is untouched and below which the
    /// workdir holds nothing else: the diff skips them in both trees.
    pub unchanged_tops: Vec<String>,
    /// Files shared with the workdir (untouched, under a top-level name that changed).
    pub linked: u64,
    /// Files written from the pack (changed, deleted, replaced, re-moded).
    pub written: u64,
}

/// The top-level name of a relative path.
fn top_of(rel: &str) -> &str {
    rel.split('/').next().unwrap_or(rel)
}

/// Entries of the workdir looked at when searching it for paths the manifest does not list;
/// past it, every top-level name counts as changed (the diff then sees everything).
const MAX_EXTRA_SCAN: u64 = 500_000;

impl Base {
    /// Makes `before` (removed first if present) hold the pristine files under every top-level
    /// name the generator changed, and lists the names it left exactly as packed. See the
    /// module doc.
    pub fn build_before(&self, work: &Path, before: &Path) -> Result<BeforeTree> {
        if fs::symlink_metadata(before).is_ok() {
            crate::workspace::remove_all(before)
                .with_context(|| format!("{}: cannot remove", before.display()))?;
        }
        DirBuilder::new()
            .mode(0o700)
            .create(before)
            .with_context(|| format!("{}: cannot create", before.display()))?;

        // Which packed files are untouched, and which top-level names hold a change.
        let mut real_dirs: HashSet<String> = HashSet::new();
        let mut buf = vec![0u8; BUF_BYTES];
        let untouched: Vec<bool> = self
            .manifest
            .files
            .iter()
            .zip(&self.spans)
            .map(|(e, span)| {
                let unpacked = span.seen.map(|s| (self.dev, s));
                untouched(work, e, unpacked, &mut real_dirs, &mut buf)
            })
            .collect();
        let changed_tops: HashSet<&str> = self
            .manifest
            .files
            .iter()
            .zip(&untouched)
            .filter(|(_, u)| !**u)
            .map(|(e, _)| top_of(&e.path))
            .collect();
        let extra = self.extra_tops(work, &changed_tops);
        let all_changed = extra.is_none();
        let extra = extra.unwrap_or_default();
        let is_changed =
            |top: &str| all_changed || changed_tops.contains(top) || extra.contains(top);

        let pack = File::open(&self.pack)
            .with_context(|| format!("{}: cannot open", self.pack.display()))?;
        let mut dirs = Dirs::new(before);
        let mut tree = BeforeTree::default();
        let mut tops: Vec<&str> = Vec::new();
        for ((entry, span), &same) in self.manifest.files.iter().zip(&self.spans).zip(&untouched) {
            let rel = entry.path.as_str();
            let top = top_of(rel);
            if !is_changed(top) {
                if tops.last() != Some(&top) {
                    tops.push(top);
                }
                continue;
            }
            dirs.parents_of(rel)
                .with_context(|| format!("before/{rel}: cannot create parent"))?;
            let target = before.join(rel);
            if same && fs::hard_link(work.join(rel), &target).is_ok() {
                tree.linked += 1;
                continue;
            }
            let mode = mode_of(entry.executable());
            let mut out = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(&target)
                .with_context(|| format!("before/{rel}: cannot create"))?;
            copy_span(&pack, span.offset, entry.size, &mut out, &mut buf)
                .with_context(|| format!("before/{rel}: cannot write"))?;
            out.set_permissions(Permissions::from_mode(mode))?;
            tree.written += 1;
        }
        tops.dedup();
        tree.unchanged_tops = tops.into_iter().map(str::to_owned).collect();
        Ok(tree)
    }

    /// Top-level names below which the workdir holds something the manifest does not list (a
    /// new file or directory, a link, a FIFO, a directory where a file was), without looking
    /// below names already known to be changed. `None`: the scan ran past its budget.
    fn extra_tops(&self, work: &Path, known: &HashSet<&str>) -> Option<HashSet<String>> {
        let files: HashSet<&str> = self
            .manifest
            .files
            .iter()
            .map(|e| e.path.as_str())
            .collect();
        let mut dirs: HashSet<&str> = HashSet::new();
        for e in &self.manifest.files {
            for (i, _) in e.path.match_indices('/') {
                dirs.insert(&e.path[..i]);
            }
        }
        let mut extra: HashSet<String> = HashSet::new();
        let mut seen: u64 = 0;
        let mut stack: Vec<String> = vec![String::new()];
        while let Some(rel_dir) = stack.pop() {
            let Ok(rd) = fs::read_dir(work.join(&rel_dir)) else {
                // Unreadable: whatever is below it counts as changed.
                extra.insert(top_of(&rel_dir).to_owned());
                continue;
            };
            for e in rd {
                seen += 1;
                if seen > MAX_EXTRA_SCAN {
                    return None;
                }
                let Ok(e) = e else {
                    extra.insert(top_of(&rel_dir).to_owned());
                    continue;
                };
                let name = e.file_name();
                let Some(name) = name.to_str() else {
                    // A top-level name that is not UTF-8 is never skipped (the diff sees
                    // and refuses it); below the top, it marks its top as changed.
                    if !rel_dir.is_empty() {
                        extra.insert(top_of(&rel_dir).to_owned());
                    }
                    continue;
                };
                let rel = if rel_dir.is_empty() {
                    name.to_owned()
                } else {
                    format!("{rel_dir}/{name}")
                };
                let top = top_of(&rel);
                if known.contains(top) || extra.contains(top) {
                    continue;
                }
                // `DirEntry::file_type` does not follow links.
                let kind = e.file_type().ok();
                let listed = match kind {
                    Some(t) if t.is_dir() => dirs.contains(rel.as_str()),
                    Some(t) if t.is_file() => files.contains(rel.as_str()),
                    _ => false,
                };
                if !listed {
                    extra.insert(top.to_owned());
                } else if kind.is_some_and(|t| t.is_dir()) {
                    stack.push(rel);
                }
            }
        }
        Some(extra)
    }
}

impl Base {
    /// The packed bytes of every file whose name is `name` (`.gitignore`), with its path, at
    /// most `max_files` of them and `max_bytes` each (larger ones are skipped with a
    /// warning). Read from the pack, never from the workdir the generator controlled.
    pub fn packed_named(
        &self,
        name: &str,
        max_files: usize,
        max_bytes: u64,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        let pack = File::open(&self.pack)
            .with_context(|| format!("{}: cannot open", self.pack.display()))?;
        let mut out = Vec::new();
        for (entry, span) in self.manifest.files.iter().zip(&self.spans) {
            let base = entry.path.rsplit('/').next().unwrap_or(&entry.path);
            if base != name {
                continue;
            }
            if entry.size > max_bytes || out.len() >= max_files {
                tracing::warn!(path = %entry.path, "{name} left out of the ignore rules (over the size or count cap)");
                continue;
            }
            let mut bytes = vec![0u8; usize::try_from(entry.size).unwrap_or(0)];
            pack.read_exact_at(&mut bytes, span.offset)
                .with_context(|| format!("{}: pack is short", entry.path))?;
            out.push((entry.path.clone(), bytes));
        }
        Ok(out)
    }
}

fn copy_span(
    pack: &File,
    mut offset: u64,
    size: u64,
    out: &mut File,
    buf: &mut [u8],
) -> io::Result<()> {
    let end = offset + size;
    while offset < end {
        let want = usize::try_from((end - offset).min(buf.len() as u64)).unwrap_or(buf.len());
        let n = pack.read_at(&mut buf[..want], offset)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "pack is short",
            ));
        }
        out.write_all(&buf[..n])?;
        offset += n as u64;
    }
    Ok(())
}

/// Whether `work/<entry.path>` is still the packed file: a regular file reached through real
/// directories, with the packed size and executable bit, and either `unpacked` (the workdir's
/// device and the file's stat once unpacked; see the module doc) or, opened without following
/// a link or blocking and the same inode that was looked at, the packed digest.
fn untouched(
    work: &Path,
    entry: &airlock_core::format::FileEntry,
    unpacked: Option<(u64, Seen)>,
    real_dirs: &mut HashSet<String>,
    buf: &mut [u8],
) -> bool {
    let rel = entry.path.as_str();
    for (i, _) in rel.match_indices('/') {
        let d = &rel[..i];
        if real_dirs.contains(d) {
            continue;
        }
        match fs::symlink_metadata(work.join(d)) {
            Ok(m) if m.is_dir() => {
                real_dirs.insert(d.to_owned());
            }
            _ => return false,
        }
    }
    let path = work.join(rel);
    let Ok(seen) = fs::symlink_metadata(&path) else {
        return false;
    };
    let executable = seen.mode() & 0o100 != 0;
    if !seen.is_file() || seen.len() != entry.size || executable != entry.executable() {
        return false;
    }
    if unpacked.is_some_and(|(dev, u)| dev == seen.dev() && u == Seen::of(&seen)) {
        return true;
    }
    let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
    else {
        return false;
    };
    let Ok(opened) = file.metadata() else {
        return false;
    };
    if !opened.is_file()
        || opened.dev() != seen.dev()
        || opened.ino() != seen.ino()
        || opened.len() != entry.size
    {
        return false;
    }
    matches!(hash_file(&file, buf), Ok((d, n)) if d == entry.sha256 && n == entry.size)
}

/// SHA-256 of what `file` yields, through `buf`.
fn hash_file(mut file: &File, buf: &mut [u8]) -> io::Result<(Sha256Digest, u64)> {
    let mut h = HashingWriter::new(io::sink());
    loop {
        match file.read(buf) {
            Ok(0) => break,
            Ok(n) => h.write_all(&buf[..n])?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    let (_, d, n) = h.finish();
    Ok((d, n))
}

/// The first regular file below `roots` (links not followed) whose size is at least `bytes`,
/// looking at no more than `max_entries` entries.
pub fn file_at_least(roots: &[&Path], bytes: u64, max_entries: u64) -> Option<PathBuf> {
    let mut seen: u64 = 0;
    let mut stack: Vec<PathBuf> = roots.iter().map(|p| p.to_path_buf()).collect();
    while let Some(dir) = stack.pop() {
        let Ok(rd) = fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            seen += 1;
            if seen > max_entries {
                return None;
            }
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() && e.metadata().is_ok_and(|m| m.len() >= bytes) {
                return Some(e.path());
            }
        }
    }
    None
}
