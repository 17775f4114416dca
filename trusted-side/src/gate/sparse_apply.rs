//! Step 8 without a worktree: real `git apply --cached --check` against a temporary index that
//! holds only the files the patch touches, as they are at the packed revision. One or two git
//! processes whatever the repository's size (`git apply` checks; `git cat-file --batch` reads
//! the revision when the bundle cannot stand in for it), no file written but the index (and no
//! file created: the home's reused index slots, see `IndexFile`), where the index route
//! (`review.rs`) needs six and a `read-tree` of the whole revision.
//!
//! How: `git apply` starts early (before the patch is read); each patched file that exists at
//! the revision becomes one entry (mode, blob id, path) of a version-2 index (what
//! `git update-index --index-info` writes), written to one of the home's index slots,
//! `<home>/cache/index/index-<n>`, held with an exclusive lock and rewritten in place (else to
//! `<job>/.index-*`); `git apply --cached --check` reads the blobs from the repository's own
//! objects through it, so it checks each hunk's context and each old mode against the
//! revision's bytes, and writes nothing. The entries come from one of two places:
//! - the bundle, when the patch only changes, deletes or re-modes files it holds unredacted
//!   (their packed bytes are the revision's blobs: the packer streams raw blobs) and the
//!   revision's commit is stored in the repository (looked up on disk: a loose object or a
//!   pack index entry): each blob id is the hash of the packed bytes, each mode the
//!   manifest's. No tree is read and git runs once. If git refuses (a blob the repository
//!   does not have, a hunk that does not apply), the tree route decides, so a refusal or an
//!   error reads exactly as it would have;
//! - otherwise (added files, redacted or unpacked files, an unusual repository layout), the
//!   tree route: one `git cat-file --batch` in the repository answers, in order, the revision
//!   (must be a commit, else the gate stops: fetch it first), every ancestor directory of
//!   every patched path (trees: the entries' modes and ids; a blob where a directory must be
//!   is a conflict), and every patched path (its blob, or missing);
//! - git's own reading of the patch is cross-checked with ours: `--numstat -z` (each file's
//!   path and added/removed counts, in order) and `--summary` (created and deleted files with
//!   their modes, mode changes) must be exactly what the parsed patch says, and `-v` must not
//!   report a hunk applied away from where the patch puts it;
//! - the result of each file is the core's exact applier's (hunks at the stated lines only),
//!   worked out on the gate's thread while git checks (it does not depend on git's answer).
//!   The strict parser checks that each hunk's new-side start follows from the hunks before
//!   it, and git tries a hunk at its new-side start first, so when both accept, both put every
//!   hunk at the same lines: the results are the same bytes.
//!
//! Falls back to the index route ([`Sparse::NeedsIndex`]) when a patched path is not a plain
//! file at the revision (a symlink, a submodule): the index route judges those.
//! Guards against: the same as the index route (a patch git reads differently from the gate,
//! repository config changing how it applies: the same `-c` overrides and cleared
//! environment; replace refs are ignored), plus a patch that adds a file the revision already
//! has, or a file where the revision has a directory (or the reverse), which an index holding
//! only the patched paths would not show. Nothing is written outside the job directory but the
//! index slot in the home's `cache/index/` (opened without following links: a link planted
//! there sends the index to the job directory instead), and nothing in the repository.
//! Does not check: the patch's paths or content (`checks.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, Stdio};

use airlock_core::diff::{apply_file, FileKind, FileMode, ParsedPatch};
use anyhow::{bail, Context, Result};

use super::review::{self, AppliedFile, ApplyOutcome, MAX_BLOB_BYTES};

/// Largest tree object read (a directory listing at the revision).
const MAX_TREE_BYTES: u64 = 16 * 1024 * 1024;

/// What the sparse route concluded.
#[derive(Debug)]
pub enum Sparse {
    /// A verdict on the patch (applied exactly, or why not).
    Outcome(ApplyOutcome),
    /// A patched path is not a plain file at the revision: use the index route.
    NeedsIndex(String),
}

/// Work the caller does while git checks the patch, run once: as soon as `git apply` has the
/// whole patch (its input is closed), or, where no git ran, by the caller after the check.
/// On 2 cores, work started earlier (the secret scan, the ledger append) took the CPU that
/// the gate's own path to git's input needed; started here, it overlaps only git's run.
pub struct Meanwhile<'a>(Option<Box<dyn FnOnce() + 'a>>);

impl<'a> Meanwhile<'a> {
    /// `work`, to run once.
    pub fn new(work: impl FnOnce() + 'a) -> Meanwhile<'a> {
        Meanwhile(Some(Box::new(work)))
    }

    /// Nothing to do.
    #[cfg(test)]
    pub fn nothing() -> Meanwhile<'a> {
        Meanwhile(None)
    }

    /// Runs the work unless it ran already.
    pub fn run(&mut self) {
        if let Some(work) = self.0.take() {
            work();
        }
    }
}

/// What `git cat-file --batch` said about one request.
#[derive(Debug)]
pub(super) enum Object {
    Missing,
    Found { kind: String, body: Vec<u8> },
}

/// One entry of a tree object.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TreeEntry {
    mode: String,
    oid: Vec<u8>,
}

/// A patched file as it is at the revision: content, mode, blob id.
type OldFile = (Vec<u8>, FileMode, Vec<u8>);

/// Largest `git apply` report read (numstat and summary lines; `-v` progress on stderr).
const MAX_REPORT_BYTES: u64 = 64 * 1024 * 1024;

/// The bytes and mode of files as they were packed unredacted from the revision (so each is
/// the revision's blob), by path: what the gate kept of the bundle for the patched files.
pub type PackedFiles = BTreeMap<String, (Vec<u8>, FileMode)>;

/// `git apply --cached --check`, started before the job record is even read so that its
/// start-up overlaps the gate's other steps, waiting on its input in the repository. It reads
/// its whole patch before it reads the index, so the index can be written in between.
/// Dropping it stops the process and removes the index (nothing is created before `run`).
pub struct Prepared {
    repo: PathBuf,
    revision: String,
    /// The temporary index `git apply` reads: a fresh random name in the job directory,
    /// created by `run`.
    index: IndexFile,
    /// Where the thread starting `git apply` sends it (a spawn waits for git's exec, done off
    /// the gate's own path).
    spawning: Option<std::sync::mpsc::Receiver<std::io::Result<ChildGuard>>>,
}

/// Index slots per home: more than `airlock watch` runs gates at once.
const INDEX_SLOTS: usize = 64;

/// The index `git apply` reads: a path chosen up front. Either one of the home's reused slot
/// files (`<home>/cache/index/index-<n>`, held with an exclusive `flock` from
/// [`IndexFile::in_slot`] until drop, rewritten in place: no file is created or removed per
/// gate), or, where no slot can be had, a fresh file in the job directory, created new (never
/// an existing file) on the first write and removed on drop.
///
/// Why slots: on this machine's ext4 (no journal) each new inode costs a scan past every
/// recently deleted inode of its block group, and a benchmark or a CI host deletes many: in
/// `bench/gate.sh` 22% of a gate's CPU went to allocating its six new inodes, and the index
/// was one of them, created on the main thread's way to git's input and deleted after.
struct IndexFile {
    path: PathBuf,
    /// The slot's open file, locked while this gate holds it; `None`: a job-directory file.
    slot: Option<fs::File>,
    created: bool,
}

impl IndexFile {
    /// The first free slot in `dir` (created 0700 if missing; slots are 0600), locked (`flock`, exclusive, not
    /// waiting: a slot another gate holds is skipped). `None` when `dir` cannot be used or
    /// every slot is held: the caller falls back to [`IndexFile::new_in`]. A slot is opened
    /// without following a symbolic link, and its lock is released when the file is closed
    /// (drop, or the process's exit, whatever way it ends).
    fn in_slot(dir: &Path) -> Option<IndexFile> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = std::path::absolute(dir).ok()?;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .ok()?;
        for n in 0..INDEX_SLOTS {
            let path = dir.join(format!("index-{n}"));
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
                .ok()?;
            match file.try_lock() {
                Ok(()) => {
                    return Some(IndexFile {
                        path,
                        slot: Some(file),
                        created: false,
                    })
                }
                Err(fs::TryLockError::WouldBlock) => continue,
                Err(fs::TryLockError::Error(_)) => return None,
            }
        }
        None
    }

    /// A new random name `.index-<32 hex>` in `dir` (absolute: git runs in the repository and
    /// would read a relative index path from there). Nothing is created yet.
    fn new_in(dir: &Path) -> Result<IndexFile> {
        use rand_core::RngCore;
        let mut random = [0u8; 16];
        rand_core::OsRng
            .try_fill_bytes(&mut random)
            .map_err(|e| anyhow::anyhow!("no OS randomness: {e}"))?;
        let dir = std::path::absolute(dir)
            .with_context(|| format!("{}: cannot resolve", dir.display()))?;
        Ok(IndexFile {
            path: dir.join(format!(".index-{}", hex::encode(random))),
            slot: None,
            created: false,
        })
    }

    /// Writes `bytes` as the whole file: a slot is rewritten in place; a job-directory file is
    /// created new (mode 0600) the first time, rewritten after.
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(slot) = &self.slot {
            use std::os::unix::fs::FileExt;
            let rewrite = slot
                .write_all_at(bytes, 0)
                .and_then(|()| slot.set_len(u64::try_from(bytes.len()).unwrap_or(u64::MAX)));
            return rewrite.with_context(|| {
                format!("{}: cannot write the temporary index", self.path.display())
            });
        }
        if let Some(parent) = self.path.parent() {
            fs::create_dir_all(parent)?;
        }
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(!self.created)
            .truncate(self.created)
            .mode(0o600)
            .open(&self.path)
            .with_context(|| {
                format!("{}: cannot write the temporary index", self.path.display())
            })?;
        self.created = true;
        file.write_all(bytes)?;
        Ok(())
    }
}

impl Drop for IndexFile {
    fn drop(&mut self) {
        if self.created {
            let _ = fs::remove_file(&self.path);
        }
    }
}

impl Prepared {
    /// Starts `git apply` for checking a patch against a revision of `repo`, with the index in
    /// one of the slots of `slots` (the home's `cache/index`; see [`IndexFile`]), or, with
    /// `None` or no free slot, a temporary file in `job_dir` (which need not exist yet), on a
    /// thread of its own that ends once git is started. `Err`: no randomness for the index's
    /// name (a git that cannot run is reported by [`Prepared::run`]).
    ///
    /// The thread does nothing else: until 2026-11-30 it built the gate's scan tables once git
    /// was started, but on a scheduler that packs threads onto one vCPU (see below) it then
    /// took the CPU from the main thread's fetch, ahead of git's input (6 alternating pairs of
    /// 30 gates launched from a shell, all faster without: -0.32 ms on average).
    pub fn start(repo: &Path, job_dir: &Path, slots: Option<&Path>) -> Result<Prepared> {
        let index = match slots.and_then(IndexFile::in_slot) {
            Some(slot) => slot,
            None => IndexFile::new_in(job_dir)?,
        };
        let mut apply = apply_command(repo, &index.path);
        let (started, spawning) = std::sync::mpsc::sync_channel(1);
        std::thread::spawn(move || {
            // The receiver is gone only when the gate stopped: the guard then stops git.
            let _ = started.send(apply.spawn().map(ChildGuard));
        });
        // Let the new thread start git now. On the VMs measured (2 vCPUs, a scheduler that
        // packs new tasks onto the busy vCPU: a thread created beside a running one waited
        // 1.5-3 ms in a C test, until the other blocked) it otherwise waited 0.8-1.1 ms for
        // the main thread to block, so git started after the fetch instead of beside it. Once
        // the thread is in git's spawn (a `vfork`), the main thread runs again. Measured: 6
        // alternating pairs of 30 gates launched from a shell, all faster, -0.26 ms on
        // average (docs/STORES.md, "the gate's threads on a packing scheduler"). Spawning git
        // from the main thread instead blocked it for the `vfork` (about 1 ms whenever the
        // child was placed on the idle vCPU, which must be woken): +0.9 ms.
        std::thread::yield_now();
        Ok(Prepared {
            repo: repo.to_owned(),
            revision: String::new(),
            index,
            spawning: Some(spawning),
        })
    }

    /// Checks `patch_bytes` (parsed as `patch`). `packed`: what the bundle holds of the
    /// patched files. When every patched file is one of them (the patch only changes, deletes
    /// or re-modes packed, unredacted files), the index is built from those bytes (each blob
    /// id is the hash of its bytes) and no tree is read; if git refuses that, or otherwise,
    /// the revision's trees are read with `git cat-file` (see the module doc), which also
    /// gives the error for a revision missing from the repository. `meanwhile` runs as soon
    /// as a `git apply` has the whole patch (not at all when this stops before that).
    /// `Err`: the revision is not in the repository, or git or the disk failed.
    pub fn run(
        mut self,
        revision: &str,
        patch_bytes: &[u8],
        patch: &ParsedPatch,
        packed: &PackedFiles,
        meanwhile: &mut Meanwhile<'_>,
    ) -> Result<Sparse> {
        if !review::is_full_oid(revision) {
            bail!("job record revision {revision:?} is not a full commit id");
        }
        revision.clone_into(&mut self.revision);
        let Some(spawning) = self.spawning.take() else {
            bail!("the sparse apply check ran twice");
        };
        let apply = spawning
            .recv()
            .map_err(|_| anyhow::anyhow!("the thread starting git panicked"))?
            .context("cannot run git (is it installed?)")?;
        for fp in &patch.files {
            check_relative(&fp.path)?;
        }
        let oid_len = self.revision.len() / 2;
        let fast = from_packed(patch, packed, oid_len)
            .filter(|_| has_object_on_disk(&self.repo, &self.revision) == Some(true));
        if let Some(old) = fast {
            self.index.write(&index_bytes(&old, oid_len)?)?;
            let expected = expected_report(patch, &old);
            let (report, exact) = finish_apply(apply, patch_bytes, patch, meanwhile, || {
                apply_exactly(patch, old)
            })?;
            if let Ok(report) = report {
                if let outcome @ ApplyOutcome::Applied { .. } = compare(&expected, exact, &report) {
                    return Ok(Sparse::Outcome(outcome));
                }
            }
            // Refused: the tree route gives the verdict (or the missing-revision error).
            let apply = apply_command(&self.repo, &self.index.path)
                .spawn()
                .map(ChildGuard)
                .context("cannot run git (is it installed?)")?;
            return self.check_with_trees(apply, patch_bytes, patch, meanwhile);
        }
        self.check_with_trees(apply, patch_bytes, patch, meanwhile)
    }

    /// The tree route: `git cat-file` reads the revision's trees and the patched blobs.
    fn check_with_trees(
        mut self,
        apply: ChildGuard,
        patch_bytes: &[u8],
        patch: &ParsedPatch,
        meanwhile: &mut Meanwhile<'_>,
    ) -> Result<Sparse> {
        let mut lookup = Command::new("git");
        lookup.arg("-C").arg(&self.repo).arg("--no-replace-objects");
        review::sanitize(&mut lookup);
        lookup
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let lookup = ChildGuard(
            lookup
                .spawn()
                .context("cannot run git (is it installed?)")?,
        );
        let mut lookup = lookup;
        let repo = self.repo.clone();
        let revision = self.revision.clone();
        let revision = revision.as_str();
        let repo = repo.as_path();
        // Requests: the commit, the root tree, every ancestor directory, every patched path.
        let mut dirs: BTreeSet<String> = BTreeSet::new();
        for fp in &patch.files {
            let mut at = fp.path.as_str();
            while let Some((parent, _)) = at.rsplit_once('/') {
                dirs.insert(parent.to_owned());
                at = parent;
            }
        }
        let mut requests = vec![
            format!("{revision}^{{commit}}"),
            format!("{revision}^{{tree}}"),
        ];
        requests.extend(dirs.iter().map(|d| format!("{revision}:{d}")));
        requests.extend(
            patch
                .files
                .iter()
                .map(|fp| format!("{revision}:{}", fp.path)),
        );
        let mut answers = cat_file(repo, &mut lookup.0, &requests)?.into_iter();
        drop(lookup);
        match answers.next() {
        Some(Object::Found { kind, .. }) if kind == "commit" => {}
        _ => bail!(
            "{}: revision {revision} (the packed revision) is not in this repository: fetch the revision first (e.g. `git fetch origin {revision}`), or pass --repo",
            repo.display()
        ),
    }
        let oid_len = revision.len() / 2;
        let mut trees: BTreeMap<String, BTreeMap<Vec<u8>, TreeEntry>> = BTreeMap::new();
        match answers.next() {
            Some(Object::Found { kind, body }) if kind == "tree" => {
                trees.insert(String::new(), parse_tree(&body, oid_len)?);
            }
            _ => bail!("git cat-file: revision {revision} has no tree"),
        }
        for dir in &dirs {
            match answers.next() {
                Some(Object::Found { kind, body }) if kind == "tree" => {
                    trees.insert(dir.clone(), parse_tree(&body, oid_len)?);
                }
                Some(Object::Found { .. }) => {
                    return Ok(Sparse::Outcome(ApplyOutcome::Failed(format!(
                        "{}: not a directory at the revision, the patch puts files below it",
                        super::report::shown(dir)
                    ))));
                }
                Some(Object::Missing) => {}
                None => bail!("git cat-file: fewer answers than requests"),
            }
        }
        let mut old: BTreeMap<&str, OldFile> = BTreeMap::new();
        for fp in &patch.files {
            let answer = answers
                .next()
                .context("git cat-file: fewer answers than requests")?;
            let (parent, name) = fp.path.rsplit_once('/').unwrap_or(("", fp.path.as_str()));
            let entry = trees
                .get(parent)
                .and_then(|t| t.get(name.as_bytes()))
                .cloned();
            let shown = super::report::shown(&fp.path);
            match (answer, entry) {
                (Object::Missing, None) => {
                    if fp.kind != FileKind::Added {
                        return Ok(Sparse::Outcome(ApplyOutcome::Failed(format!(
                            "{shown}: does not exist at the revision"
                        ))));
                    }
                }
                (Object::Found { .. }, Some(_)) if fp.kind == FileKind::Added => {
                    return Ok(Sparse::Outcome(ApplyOutcome::Failed(format!(
                        "{shown}: already exists at the revision"
                    ))));
                }
                (Object::Found { kind, body }, Some(entry)) => {
                    let mode = match (kind.as_str(), entry.mode.as_str()) {
                        ("blob", "100644") => FileMode::Regular,
                        ("blob", "100755") => FileMode::Executable,
                        (kind, mode) => {
                            return Ok(Sparse::NeedsIndex(format!(
                                "{shown} is a {kind} with mode {mode} at the revision"
                            )))
                        }
                    };
                    if let Some(want) = fp.old_mode {
                        if want != mode {
                            return Ok(Sparse::Outcome(ApplyOutcome::Failed(format!(
                                "{shown}: mode at the revision is {}, the patch expects {}",
                                mode.as_str(),
                                want.as_str()
                            ))));
                        }
                    }
                    old.insert(fp.path.as_str(), (body, mode, entry.oid));
                }
                (_, _) => bail!("git cat-file: {shown}: the tree and the path disagree"),
            }
        }

        self.index.write(&index_bytes(&old, oid_len)?)?;
        let expected = expected_report(patch, &old);
        let (report, exact) = finish_apply(apply, patch_bytes, patch, meanwhile, || {
            apply_exactly(patch, old)
        })?;
        let report = match report {
            Ok(report) => report,
            Err(why) => {
                return Ok(Sparse::Outcome(ApplyOutcome::Failed(format!(
                    "git apply: {why}"
                ))))
            }
        };
        Ok(Sparse::Outcome(compare(&expected, exact, &report)))
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        // Never run: wait for the spawns, then the guards stop both processes.
        if let Some(spawning) = self.spawning.take() {
            drop(spawning.recv());
        }
    }
}

/// `git apply --cached --check` in `repo` against the index at `index` (absolute), with
/// the report the cross-check reads.
fn apply_command(repo: &Path, index: &Path) -> Command {
    let mut apply = Command::new("git");
    apply.arg("-C").arg(repo).arg("--no-replace-objects");
    review::sanitize(&mut apply);
    apply
        .env("GIT_INDEX_FILE", index)
        .args([
            "apply",
            "--cached",
            "--check",
            "-v",
            "--numstat",
            "--summary",
            "-z",
            "--whitespace=nowarn",
            "--no-recount",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    apply
}

/// The patched files at the revision from the bundle alone, when the patch adds no file and
/// every file it names was packed unredacted: content, mode and blob id (the hash of
/// `blob <size>\0<content>` in the repository's hash, SHA-1 for 20-byte ids).
fn from_packed<'a>(
    patch: &'a ParsedPatch,
    packed: &PackedFiles,
    oid_len: usize,
) -> Option<BTreeMap<&'a str, OldFile>> {
    let mut old = BTreeMap::new();
    for fp in &patch.files {
        if fp.kind == FileKind::Added {
            return None;
        }
        let (bytes, mode) = packed.get(&fp.path)?;
        if fp.old_mode.is_some_and(|m| m != *mode) {
            return None;
        }
        old.insert(
            fp.path.as_str(),
            (bytes.clone(), *mode, blob_id(bytes, oid_len)),
        );
    }
    Some(old)
}

/// Whether the repository at `repo` stores object `oid` (full hex id), looked up on disk
/// without running git: a loose object file, or an entry of a version-2 pack index (only the
/// fan-out slice for the id's first byte is read). `None` when the layout is not a plain
/// `.git` directory or bare repository (a `.git` file, a worktree): the caller asks git.
/// `Some(false)` does not prove absence (alternates, promisor remotes): it only means "ask
/// git".
fn has_object_on_disk(repo: &Path, oid: &str) -> Option<bool> {
    use std::io::{Seek, SeekFrom};
    let raw = hex::decode(oid).ok()?;
    let first = *raw.first()?;
    let dot_git = repo.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else if repo.join("objects").is_dir() && repo.join("HEAD").is_file() {
        repo.to_owned()
    } else {
        return None;
    };
    let objects = git_dir.join("objects");
    if objects.join(&oid[..2]).join(&oid[2..]).is_file() {
        return Some(true);
    }
    let packs = fs::read_dir(objects.join("pack")).ok()?;
    for entry in packs.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "idx") {
            continue;
        }
        let Ok(mut f) = fs::File::open(&path) else {
            continue;
        };
        // Header (magic, version 2) and the 256-entry fan-out table.
        let mut head = [0u8; 8 + 256 * 4];
        if f.read_exact(&mut head).is_err() || head[..8] != [0xff, b't', b'O', b'c', 0, 0, 0, 2] {
            continue;
        }
        let fan = |i: usize| -> u64 {
            let at = 8 + i * 4;
            u64::from(u32::from_be_bytes([
                head[at],
                head[at + 1],
                head[at + 2],
                head[at + 3],
            ]))
        };
        let start = if first == 0 {
            0
        } else {
            fan(usize::from(first) - 1)
        };
        let end = fan(usize::from(first));
        if end <= start || end - start > 1 << 24 {
            continue;
        }
        let len = raw.len() as u64;
        let mut ids = vec![0u8; usize::try_from((end - start) * len).ok()?];
        if f.seek(SeekFrom::Start(8 + 256 * 4 + start * len)).is_err()
            || f.read_exact(&mut ids).is_err()
        {
            continue;
        }
        if ids.chunks_exact(raw.len()).any(|id| id == raw.as_slice()) {
            return Some(true);
        }
    }
    Some(false)
}

/// Git's id of a blob holding `bytes`.
fn blob_id(bytes: &[u8], oid_len: usize) -> Vec<u8> {
    let header = format!("blob {}\0", bytes.len());
    if oid_len == 20 {
        use sha1::Digest as _;
        let mut h = sha1::Sha1::new();
        h.update(header.as_bytes());
        h.update(bytes);
        h.finalize().to_vec()
    } else {
        use sha2::Digest as _;
        let mut h = sha2::Sha256::new();
        h.update(header.as_bytes());
        h.update(bytes);
        h.finalize().to_vec()
    }
}

/// Kills and reaps a child process when dropped (a no-op once it has exited and been
/// waited for).
pub(super) struct ChildGuard(pub(super) Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// What `git apply --check` printed on success: numstat and summary (stdout), progress
/// (stderr).
struct GitReport {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Checks git's reading of the patch (`report`) against ours (`expected`, from
/// [`expected_report`]); when they agree, the result is the exact applier's (`exact`, from
/// [`apply_exactly`]).
fn compare(
    expected: &[u8],
    exact: Result<BTreeMap<String, AppliedFile>, String>,
    report: &GitReport,
) -> ApplyOutcome {
    let progress = String::from_utf8_lossy(&report.stderr);
    if let Some(line) = progress.lines().find(|l| l.contains(" succeeded at ")) {
        return ApplyOutcome::Failed(format!(
            "git applied a hunk away from where the patch puts it: {}",
            line.trim()
        ));
    }
    if report.stdout != expected {
        return ApplyOutcome::Failed(format!(
            "git reads the patch differently from the gate (files, line counts or modes): git says {:?}",
            String::from_utf8_lossy(&report.stdout)
                .chars()
                .take(300)
                .collect::<String>()
        ));
    }
    match exact {
        Ok(files) => ApplyOutcome::Applied { tree: None, files },
        Err(why) => ApplyOutcome::Failed(why),
    }
}

/// Each patched file as the exact applier makes it (hunks at the stated lines only) from its
/// content at the revision (`old`). It does not depend on git's answer, so it is worked out
/// while git checks. `Err`: why a file does not apply exactly, or is over the size limit.
fn apply_exactly(
    patch: &ParsedPatch,
    mut old: BTreeMap<&str, OldFile>,
) -> Result<BTreeMap<String, AppliedFile>, String> {
    let mut files = BTreeMap::new();
    for fp in &patch.files {
        let shown = super::report::shown(&fp.path);
        let old_bytes = old.remove(fp.path.as_str()).map(|(body, _, _)| body);
        let new_bytes = apply_file(old_bytes.as_deref(), fp).map_err(|e| {
            format!("{shown}: git applies it, but not exactly where the patch says (offset): {e}")
        })?;
        if new_bytes
            .as_ref()
            .is_some_and(|b| b.len() as u64 > MAX_BLOB_BYTES)
        {
            return Err(format!(
                "{shown}: over the {MAX_BLOB_BYTES}-byte limit after the patch"
            ));
        }
        files.insert(
            fp.path.clone(),
            AppliedFile {
                old: old_bytes,
                new: new_bytes,
            },
        );
    }
    Ok(files)
}

/// What `git apply --numstat --summary -z` prints for `patch` when it reads it as the parser
/// did: per file `<added>\t<removed>\t<path>\0`, then ` create mode <mode> <path>\n`,
/// ` delete mode <mode> <path>\n` and ` mode change <old> => <new> <path>\n` lines, in
/// patch order. `old` has the mode of each file at the revision.
fn expected_report(patch: &ParsedPatch, old: &BTreeMap<&str, OldFile>) -> Vec<u8> {
    let mut out = Vec::new();
    for fp in &patch.files {
        out.extend(format!("{}\t{}\t{}\0", fp.added, fp.removed, fp.path).bytes());
    }
    for fp in &patch.files {
        let at_revision = old.get(fp.path.as_str()).map(|(_, mode, _)| *mode);
        let line = match fp.kind {
            FileKind::Added => Some(format!(
                " create mode {} {}\n",
                fp.new_mode.unwrap_or(FileMode::Regular).as_str(),
                fp.path
            )),
            FileKind::Deleted => fp
                .old_mode
                .or(at_revision)
                .map(|m| format!(" delete mode {} {}\n", m.as_str(), fp.path)),
            FileKind::Modified | FileKind::ModeChange => match (at_revision, fp.new_mode) {
                (Some(before), Some(after)) if before != after => Some(format!(
                    " mode change {} => {} {}\n",
                    before.as_str(),
                    after.as_str(),
                    fp.path
                )),
                _ => None,
            },
        };
        out.extend(line.unwrap_or_default().bytes());
    }
    out
}

/// A version-2 git index of `files` (stage 0, no stat data, sorted by path bytes, no
/// extensions), with the trailing checksum in the repository's hash (`oid_len` 20: SHA-1,
/// 32: SHA-256): byte for byte what `git update-index --index-info` writes for the same
/// entries.
fn index_bytes(files: &BTreeMap<&str, OldFile>, oid_len: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    out.extend(b"DIRC");
    out.extend(2u32.to_be_bytes());
    out.extend(u32::try_from(files.len())?.to_be_bytes());
    // A BTreeMap of `&str` iterates in byte order: git's order for stage-0 entries.
    for (path, (_, mode, oid)) in files {
        if oid.len() != oid_len {
            bail!("git cat-file: {path}: a blob id of {} bytes", oid.len());
        }
        let start = out.len();
        out.extend([0u8; 24]); // ctime, mtime, dev, ino
        let mode: u32 = match mode {
            FileMode::Regular => 0o100_644,
            FileMode::Executable => 0o100_755,
        };
        out.extend(mode.to_be_bytes());
        // uid, gid, size: no stat data, as `update-index --index-info` writes.
        out.extend([0u8; 12]);
        out.extend(oid);
        let name_len = u16::try_from(path.len().min(0xfff))?;
        out.extend(name_len.to_be_bytes());
        out.extend(path.as_bytes());
        // 1 to 8 NULs, to a multiple of 8 bytes per entry.
        let pad = 8 - (out.len() - start) % 8;
        out.extend(std::iter::repeat_n(0u8, pad));
    }
    let checksum = if oid_len == 20 {
        use sha1::Digest as _;
        sha1::Sha1::digest(&out).to_vec()
    } else {
        use sha2::Digest as _;
        sha2::Sha256::digest(&out).to_vec()
    };
    out.extend(checksum);
    Ok(out)
}

/// Refuses anything but plain relative components (the parser did; this is the second lock
/// before creating files).
fn check_relative(path: &str) -> Result<()> {
    let ok = !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
        && !path.contains('\n');
    if !ok {
        bail!("patch path {path:?} is not a plain relative path");
    }
    Ok(())
}

/// Feeds the patch to the waiting `git apply` and collects its verdict and report, with what
/// `own` returns: the caller's own work, done on this thread while git runs (after
/// `meanwhile` is started). `Ok((Err(why), _))`: git refused the patch.
fn finish_apply<T>(
    mut apply: ChildGuard,
    patch_bytes: &[u8],
    patch: &ParsedPatch,
    meanwhile: &mut Meanwhile<'_>,
    own: impl FnOnce() -> T,
) -> Result<(Result<GitReport, String>, T)> {
    let mut stdin = apply.0.stdin.take().context("git apply: no stdin")?;
    let stdout = apply.0.stdout.take().context("git apply: no stdout")?;
    let stderr = apply.0.stderr.take().context("git apply: no stderr")?;
    // git reads its whole input before it writes anything, so the patch goes in first, from
    // here (a git that died early makes this fail with a broken pipe, never block).
    let _ = stdin.write_all(patch_bytes);
    drop(stdin);
    // git has its input: the caller's other work overlaps git's run from here.
    meanwhile.run();
    let own = own();
    // Then its progress and errors (stderr) come before its report (stdout). A pipe holds
    // 64 KiB: when stderr could hold more, it is drained on a thread while stdout is read.
    let hunks: usize = patch.files.iter().map(|f| f.hunks.len()).sum();
    let stderr_bound: usize = patch
        .files
        .iter()
        .map(|f| 4 * f.path.len() + 300)
        .sum::<usize>()
        + 100 * hunks;
    let (out, err) = if stderr_bound < 48 * 1024 {
        let mut out = Vec::new();
        stdout.take(MAX_REPORT_BYTES).read_to_end(&mut out)?;
        let mut err = Vec::new();
        stderr.take(MAX_REPORT_BYTES).read_to_end(&mut err)?;
        (out, err)
    } else {
        let progress = std::thread::spawn(move || -> std::io::Result<Vec<u8>> {
            let mut err = Vec::new();
            stderr.take(MAX_REPORT_BYTES).read_to_end(&mut err)?;
            Ok(err)
        });
        let mut out = Vec::new();
        stdout.take(MAX_REPORT_BYTES).read_to_end(&mut out)?;
        let err = progress
            .join()
            .map_err(|_| anyhow::anyhow!("git apply: the stderr reader panicked"))??;
        (out, err)
    };
    let status = apply.0.wait().context("git apply")?;
    if !status.success() {
        let text = String::from_utf8_lossy(&err);
        let errors: String = text
            .lines()
            .filter(|l| !l.starts_with("Checking patch "))
            .collect::<Vec<_>>()
            .join("\n");
        return Ok((Err(review::stderr_lines(errors.as_bytes())), own));
    }
    Ok((
        Ok(GitReport {
            stdout: out,
            stderr: err,
        }),
        own,
    ))
}

/// Sends `requests` to the waiting `git cat-file --batch` (from a thread, so neither pipe can
/// fill up) and reads one answer per request, each object at most [`MAX_BLOB_BYTES`] (trees
/// [`MAX_TREE_BYTES`]).
pub(super) fn cat_file(repo: &Path, child: &mut Child, requests: &[String]) -> Result<Vec<Object>> {
    let mut stdin = child.stdin.take().context("git cat-file: no stdin")?;
    let stdout = child.stdout.take().context("git cat-file: no stdout")?;
    let lines: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(lines.as_bytes());
    });
    let mut reader = BufReader::with_capacity(256 * 1024, stdout);
    let result = (|| -> Result<Vec<Object>> {
        let mut out = Vec::with_capacity(requests.len());
        for request in requests {
            let mut header = String::new();
            if reader.read_line(&mut header)? == 0 {
                bail!("git cat-file ended early");
            }
            let header = header.trim_end_matches('\n');
            if header.ends_with(" missing") || header.ends_with(" ambiguous") {
                out.push(Object::Missing);
                continue;
            }
            let f: Vec<&str> = header.split(' ').collect();
            let [_, kind, size] = f.as_slice() else {
                bail!("git cat-file: unexpected answer to {request:?}");
            };
            let size: u64 = size.parse().context("git cat-file: bad size")?;
            let cap = if *kind == "tree" {
                MAX_TREE_BYTES
            } else {
                MAX_BLOB_BYTES
            };
            if size > cap {
                bail!("{request}: {size} bytes, over the {cap}-byte limit");
            }
            let mut body = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            (&mut reader).take(size + 1).read_to_end(&mut body)?;
            if body.len() as u64 != size + 1 || body.pop() != Some(b'\n') {
                bail!("git cat-file: truncated answer to {request:?}");
            }
            out.push(Object::Found {
                kind: (*kind).to_owned(),
                body,
            });
        }
        Ok(out)
    })();
    // Close our end first: a git still writing answers gets EPIPE and stops reading requests,
    // so the writer cannot block forever.
    drop(reader);
    let _ = writer.join();
    if result.is_err() {
        let _ = child.kill();
        let _ = child.wait();
        let mut err = Vec::new();
        if let Some(e) = child.stderr.take() {
            let _ = e.take(64 * 1024).read_to_end(&mut err);
        }
        return result.with_context(|| {
            format!(
                "{}: not a git repository (--repo)? {}",
                repo.display(),
                review::stderr_lines(&err)
            )
        });
    }
    result
}

/// Parses a tree object: `<octal mode> <name>\0<raw oid>` entries.
fn parse_tree(body: &[u8], oid_len: usize) -> Result<BTreeMap<Vec<u8>, TreeEntry>> {
    let mut out = BTreeMap::new();
    let mut rest = body;
    while !rest.is_empty() {
        let sp = rest
            .iter()
            .position(|b| *b == b' ')
            .context("malformed tree object")?;
        let nul = rest
            .iter()
            .position(|b| *b == 0)
            .filter(|n| *n > sp)
            .context("malformed tree object")?;
        let mode = std::str::from_utf8(rest.get(..sp).unwrap_or_default())
            .context("malformed tree object")?;
        let name = rest.get(sp + 1..nul).unwrap_or_default().to_vec();
        let oid = rest
            .get(nul + 1..nul + 1 + oid_len)
            .context("malformed tree object")?
            .to_vec();
        rest = rest
            .get(nul + 1 + oid_len..)
            .context("malformed tree object")?;
        // Git writes `40000` for trees; the others are six digits.
        out.insert(
            name,
            TreeEntry {
                mode: format!("{mode:0>6}"),
                oid,
            },
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::test_git::git;
    use airlock_core::diff::{parse_patch, DiffLimits};
    use std::os::unix::fs::PermissionsExt;

    /// A repository with a regular file, an executable, a nested file and a symlink.
    fn repo() -> (tempfile::TempDir, String) {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        git(r, &["init", "-q", "-b", "main"]);
        let lines: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        fs::write(r.join("a.txt"), &lines).unwrap();
        fs::create_dir_all(r.join("bin")).unwrap();
        fs::write(r.join("bin/run.sh"), "#!/bin/sh\necho hi\n").unwrap();
        fs::set_permissions(r.join("bin/run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::create_dir_all(r.join("dir/sub")).unwrap();
        fs::write(r.join("dir/sub/x.txt"), "x\n").unwrap();
        std::os::unix::fs::symlink("a.txt", r.join("link")).unwrap();
        git(r, &["add", "-A"]);
        git(r, &["commit", "-q", "-m", "base"]);
        let rev = git(r, &["rev-parse", "HEAD"]);
        (d, rev)
    }

    const MODIFY: &str = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -2,3 +2,3 @@\n line 2\n-line 3\n+line three\n line 4\n";
    const BAD_CONTEXT: &str = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -2,3 +2,3 @@\n line 2\n-line 30\n+line three\n line 4\n";
    const OFFSET: &str = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -5,3 +5,3 @@\n line 7\n-line 8\n+line eight\n line 9\n";
    const ADD: &str = "diff --git a/new/file.txt b/new/file.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new/file.txt\n@@ -0,0 +1 @@\n+hello\n";
    const ADD_EXISTING: &str = "diff --git a/a.txt b/a.txt\nnew file mode 100644\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+hello\n";
    const ADD_BELOW_FILE: &str = "diff --git a/a.txt/inner b/a.txt/inner\nnew file mode 100644\n--- /dev/null\n+++ b/a.txt/inner\n@@ -0,0 +1 @@\n+hello\n";
    const ADD_OVER_DIR: &str = "diff --git a/dir b/dir\nnew file mode 100644\n--- /dev/null\n+++ b/dir\n@@ -0,0 +1 @@\n+hello\n";
    const DELETE: &str = "diff --git a/dir/sub/x.txt b/dir/sub/x.txt\ndeleted file mode 100644\n--- a/dir/sub/x.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n";
    const DELETE_MISSING: &str = "diff --git a/nope.txt b/nope.txt\ndeleted file mode 100644\n--- a/nope.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n";
    const MODE: &str = "diff --git a/bin/run.sh b/bin/run.sh\nold mode 100755\nnew mode 100644\n";
    const WRONG_OLD_MODE: &str = "diff --git a/a.txt b/a.txt\nold mode 100755\nnew mode 100644\n";
    const SYMLINK_EDIT: &str = "diff --git a/link b/link\n--- a/link\n+++ b/link\n@@ -1 +1 @@\n-a.txt\n\\ No newline at end of file\n+b.txt\n\\ No newline at end of file\n";

    fn parsed(text: &str) -> ParsedPatch {
        parse_patch(text.as_bytes(), &DiffLimits::default()).unwrap()
    }

    /// One sparse check of `text` against `rev`, with `packed` at hand.
    fn check(
        repo: &Path,
        job: &Path,
        rev: &str,
        text: &str,
        packed: &PackedFiles,
        meanwhile: &mut Meanwhile<'_>,
    ) -> Result<Sparse> {
        Prepared::start(repo, job, None)?.run(
            rev,
            text.as_bytes(),
            &parsed(text),
            packed,
            meanwhile,
        )
    }

    fn try_sparse(repo: &Path, job: &Path, rev: &str, text: &str) -> Result<Sparse> {
        let nothing = &mut Meanwhile::nothing();
        check(repo, job, rev, text, &PackedFiles::new(), nothing)
    }

    /// The tree route (nothing packed at hand).
    fn sparse(repo: &Path, job: &Path, rev: &str, text: &str) -> Sparse {
        try_sparse(repo, job, rev, text).unwrap()
    }

    /// The revision's plain files, as a bundle would have packed them.
    fn packed_files(repo: &Path, rev: &str) -> PackedFiles {
        let mut out = PackedFiles::new();
        for line in git(repo, &["ls-tree", "-r", "--full-tree", rev]).lines() {
            let (meta, path) = line.split_once('\t').unwrap();
            let f: Vec<&str> = meta.split(' ').collect();
            let mode = match f[0] {
                "100644" => FileMode::Regular,
                "100755" => FileMode::Executable,
                _ => continue,
            };
            let body = Command::new("git")
                .arg("-C")
                .arg(repo)
                .args(["cat-file", "blob", f[2]])
                .output()
                .unwrap()
                .stdout;
            out.insert(path.to_owned(), (body, mode));
        }
        out
    }

    /// The route from packed files (falling back to the tree route on a refusal).
    fn from_bundle(repo: &Path, job: &Path, rev: &str, text: &str, packed: &PackedFiles) -> Sparse {
        check(repo, job, rev, text, packed, &mut Meanwhile::nothing()).unwrap()
    }

    fn in_index(repo: &Path, job: &Path, rev: &str, text: &str) -> ApplyOutcome {
        let objects = review::check_revision(repo, rev).unwrap();
        review::apply_check_in_index(
            repo,
            &objects,
            job,
            rev,
            (text.as_bytes(), &parsed(text)),
            false,
        )
        .unwrap()
    }

    fn snapshot(dir: &Path) -> Vec<String> {
        fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
            for entry in fs::read_dir(dir).unwrap() {
                let entry = entry.unwrap();
                let name = entry.file_name().to_string_lossy().into_owned();
                let rel = if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                };
                if entry.file_type().unwrap().is_dir() {
                    walk(&entry.path(), &rel, out);
                } else {
                    out.push(rel);
                }
            }
        }
        let mut out = Vec::new();
        walk(dir, "", &mut out);
        out.sort();
        out
    }

    #[test]
    fn the_index_written_is_the_one_git_would_write() {
        let (d, rev) = repo();
        let tree = git(d.path(), &["ls-tree", "-r", "--full-tree", &rev]);
        let mut files: BTreeMap<&str, OldFile> = BTreeMap::new();
        for line in tree.lines() {
            let (meta, path) = line.split_once('\t').unwrap();
            let f: Vec<&str> = meta.split(' ').collect();
            let mode = match f[0] {
                "100644" => FileMode::Regular,
                "100755" => FileMode::Executable,
                _ => continue, // the symlink
            };
            let body = git(d.path(), &["cat-file", "blob", f[2]]).into_bytes();
            files.insert(path, (body, mode, hex::decode(f[2]).unwrap()));
        }
        assert_eq!(files.len(), 3);
        let job = tempfile::tempdir().unwrap();
        let index = job.path().join("index");
        fs::write(&index, index_bytes(&files, 20).unwrap()).unwrap();
        let listed = Command::new("git")
            .arg("-C")
            .arg(d.path())
            .args(["ls-files", "-s", "--debug"])
            .env("GIT_INDEX_FILE", &index)
            .output()
            .unwrap();
        assert!(listed.status.success(), "{listed:?}");
        let text = String::from_utf8(listed.stdout).unwrap();
        let staged: Vec<&str> = text.lines().filter(|l| !l.starts_with(' ')).collect();
        let from_tree: Vec<String> = tree
            .lines()
            .filter(|l| !l.starts_with("120000"))
            .map(|l| l.replacen(" blob ", " ", 1).replacen('\t', " 0\t", 1))
            .collect();
        assert_eq!(staged, from_tree);
        // Byte for byte what git itself writes for the same entries (so the checksum too).
        let reference = job.path().join("reference");
        let mut child = Command::new("git")
            .arg("-C")
            .arg(d.path())
            .args(["update-index", "--index-info"])
            .env("GIT_INDEX_FILE", &reference)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let info: String = tree
            .lines()
            .filter(|l| !l.starts_with("120000"))
            .map(|l| format!("{l}\n"))
            .collect();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(info.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
        assert_eq!(fs::read(&reference).unwrap(), fs::read(&index).unwrap());
    }

    #[test]
    fn a_sha256_repository_is_checked_with_a_sha256_index() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        git(r, &["init", "-q", "-b", "main", "--object-format=sha256"]);
        let lines: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        fs::write(r.join("a.txt"), &lines).unwrap();
        git(r, &["add", "-A"]);
        git(r, &["commit", "-q", "-m", "base"]);
        let rev = git(r, &["rev-parse", "HEAD"]);
        assert_eq!(rev.len(), 64);
        let job = tempfile::tempdir().unwrap();
        let Sparse::Outcome(ApplyOutcome::Applied { files, .. }) =
            sparse(r, job.path(), &rev, MODIFY)
        else {
            panic!("modify did not apply in a sha256 repository");
        };
        assert!(
            String::from_utf8_lossy(files["a.txt"].new.as_ref().unwrap()).contains("line three\n")
        );
        assert!(matches!(
            sparse(r, job.path(), &rev, BAD_CONTEXT),
            Sparse::Outcome(ApplyOutcome::Failed(_))
        ));
        assert_eq!(snapshot(job.path()), Vec::<String>::new());
    }

    #[test]
    fn packed_bytes_that_are_not_the_revision_fall_back_to_the_trees() {
        let (d, rev) = repo();
        let job = tempfile::tempdir().unwrap();
        let mut packed = packed_files(d.path(), &rev);
        // The blob ids come from the packed bytes: bytes that are not the revision's name a
        // blob the repository does not have, git refuses, and the tree route judges with the
        // revision's real bytes.
        let lines: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        packed.insert(
            "a.txt".into(),
            (format!("{lines}extra\n").into_bytes(), FileMode::Regular),
        );
        let Sparse::Outcome(ApplyOutcome::Applied { files, .. }) =
            from_bundle(d.path(), job.path(), &rev, MODIFY, &packed)
        else {
            panic!("modify did not apply");
        };
        assert!(!String::from_utf8_lossy(files["a.txt"].new.as_ref().unwrap()).contains("extra"));
        // A missing revision is still the error it was, whatever is packed.
        let missing = "1".repeat(40);
        let packed = packed_files(d.path(), &rev);
        let e = check(
            d.path(),
            job.path(),
            &missing,
            MODIFY,
            &packed,
            &mut Meanwhile::nothing(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("is not in this repository"), "{e}");
        assert_eq!(snapshot(job.path()), Vec::<String>::new());
    }

    #[test]
    fn objects_are_found_on_disk_loose_and_packed_as_git_finds_them() {
        let (d, rev) = repo();
        let blob = git(d.path(), &["rev-parse", &format!("{rev}:a.txt")]);
        let missing = "1".repeat(40);
        assert_eq!(has_object_on_disk(d.path(), &rev), Some(true));
        assert_eq!(has_object_on_disk(d.path(), &blob), Some(true));
        assert_eq!(has_object_on_disk(d.path(), &missing), Some(false));
        git(d.path(), &["gc", "-q", "--prune=now"]);
        assert!(
            !d.path().join(".git/objects").join(&rev[..2]).exists(),
            "still loose"
        );
        assert_eq!(has_object_on_disk(d.path(), &rev), Some(true));
        assert_eq!(has_object_on_disk(d.path(), &blob), Some(true));
        assert_eq!(has_object_on_disk(d.path(), &missing), Some(false));
        let plain = tempfile::tempdir().unwrap();
        assert_eq!(has_object_on_disk(plain.path(), &rev), None);
    }

    #[test]
    fn only_changes_to_packed_files_take_the_bundle_route() {
        let (d, rev) = repo();
        let packed = packed_files(d.path(), &rev);
        let modify = parsed(MODIFY);
        let old = from_packed(&modify, &packed, 20).expect("a packed file edited");
        assert_eq!(old["a.txt"].1, FileMode::Regular);
        assert!(from_packed(&parsed(DELETE), &packed, 20).is_some());
        assert!(from_packed(&parsed(MODE), &packed, 20).is_some());
        // an added file needs the trees (does the path exist at the revision?)
        assert!(from_packed(&parsed(ADD), &packed, 20).is_none());
        // a file the bundle does not hold (redacted, skipped, a symlink)
        let mut without = packed.clone();
        without.remove("a.txt");
        assert!(from_packed(&parsed(MODIFY), &without, 20).is_none());
        assert!(from_packed(&parsed(SYMLINK_EDIT), &packed, 20).is_none());
        // a patch that expects another mode than the packed one
        assert!(from_packed(&parsed(WRONG_OLD_MODE), &packed, 20).is_none());
    }

    /// The caller's work runs once per check, when the index git reads is already written
    /// (git gets the patch right after), on the bundle route and on the tree route; not at
    /// all when the check stops before git has the patch.
    #[test]
    fn the_callers_work_runs_once_when_git_has_the_patch() {
        let (d, rev) = repo();
        let packed = packed_files(d.path(), &rev);
        for at_hand in [packed, PackedFiles::new()] {
            let job = tempfile::tempdir().unwrap();
            let mut seen = Vec::new();
            let mut meanwhile = Meanwhile::new(|| seen.push(snapshot(job.path())));
            let out = check(d.path(), job.path(), &rev, MODIFY, &at_hand, &mut meanwhile).unwrap();
            assert!(
                matches!(out, Sparse::Outcome(ApplyOutcome::Applied { .. })),
                "{out:?}"
            );
            meanwhile.run(); // ran already: nothing happens
            drop(meanwhile);
            assert_eq!(
                seen.len(),
                1,
                "packed files at hand: {}",
                !at_hand.is_empty()
            );
            assert!(
                seen[0].iter().any(|p| p.starts_with(".index-")),
                "the index is not written yet: {seen:?}"
            );
        }
        let job = tempfile::tempdir().unwrap();
        let mut ran = 0;
        let mut meanwhile = Meanwhile::new(|| ran += 1);
        let missing = "1".repeat(40);
        let e = check(
            d.path(),
            job.path(),
            &missing,
            MODIFY,
            &PackedFiles::new(),
            &mut meanwhile,
        )
        .unwrap_err();
        drop(meanwhile);
        assert!(format!("{e:#}").contains(&missing), "{e:#}");
        assert_eq!(ran, 0, "ran before git had the patch");
    }

    #[test]
    fn a_patch_of_many_files_drains_both_pipes() {
        // Enough files that git's progress on stderr could fill a pipe while its report is
        // read: the stderr reader runs on a thread, and both routes still agree.
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        git(r, &["init", "-q", "-b", "main"]);
        let mut text = String::new();
        let mut bad = String::new();
        for i in 0..400 {
            let name = format!("dir/with/a/longer/name/file_{i:04}.txt");
            fs::create_dir_all(r.join("dir/with/a/longer/name")).unwrap();
            fs::write(r.join(&name), "one\ntwo\nthree\n").unwrap();
            let hunk = format!("diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n");
            bad.push_str(&hunk.replace(" three\n", " four\n"));
            text.push_str(&hunk);
        }
        git(r, &["add", "-A"]);
        git(r, &["commit", "-q", "-m", "base"]);
        let rev = git(r, &["rev-parse", "HEAD"]);
        let job = tempfile::tempdir().unwrap();
        let packed = packed_files(r, &rev);
        for out in [
            sparse(r, job.path(), &rev, &text),
            from_bundle(r, job.path(), &rev, &text, &packed),
        ] {
            let Sparse::Outcome(ApplyOutcome::Applied { files, .. }) = out else {
                panic!("400 edits did not apply");
            };
            assert_eq!(files.len(), 400);
        }
        assert!(matches!(
            from_bundle(r, job.path(), &rev, &bad, &packed),
            Sparse::Outcome(ApplyOutcome::Failed(_))
        ));
        assert_eq!(snapshot(job.path()), Vec::<String>::new());
    }

    #[test]
    fn blob_ids_are_gits() {
        let (d, rev) = repo();
        for (path, (bytes, _)) in packed_files(d.path(), &rev) {
            let want = git(d.path(), &["rev-parse", &format!("{rev}:{path}")]);
            assert_eq!(hex::encode(blob_id(&bytes, 20)), want, "{path}");
        }
    }

    #[test]
    fn gits_report_must_match_the_parse() {
        let (d, rev) = repo();
        let job = tempfile::tempdir().unwrap();
        // Modes and creations appear in the summary, counts in numstat: all agree.
        for text in [MODE, ADD, DELETE, MODIFY] {
            assert!(
                matches!(
                    sparse(d.path(), job.path(), &rev, text),
                    Sparse::Outcome(ApplyOutcome::Applied { .. })
                ),
                "{text}"
            );
        }
        // A report that differs from the parse in any way is a failure, never a pass.
        let patch = parsed(MODE);
        let mut old: BTreeMap<&str, OldFile> = BTreeMap::new();
        old.insert(
            "bin/run.sh",
            (b"x".to_vec(), FileMode::Executable, vec![1; 20]),
        );
        let good = expected_report(&patch, &old);
        assert_eq!(
            String::from_utf8(good.clone()).unwrap(),
            "0\t0\tbin/run.sh\0 mode change 100755 => 100644 bin/run.sh\n"
        );
        let lied = GitReport {
            stdout: b"0\t0\tbin/run.sh\0".to_vec(),
            stderr: Vec::new(),
        };
        let exact = || apply_exactly(&patch, old.clone());
        assert!(exact().is_ok());
        assert!(
            matches!(compare(&good, exact(), &lied), ApplyOutcome::Failed(why) if why.contains("differently"))
        );
        let moved = GitReport {
            stdout: good.clone(),
            stderr: b"Checking patch a.txt...\nHunk #1 succeeded at 7 (offset 2 lines).\n".to_vec(),
        };
        assert!(
            matches!(compare(&good, exact(), &moved), ApplyOutcome::Failed(why) if why.contains("away from"))
        );
        // git's report agrees: the exact applier's verdict stands, whichever it is.
        let agreed = GitReport {
            stdout: good.clone(),
            stderr: b"Checking patch bin/run.sh...\n".to_vec(),
        };
        assert!(matches!(
            compare(&good, exact(), &agreed),
            ApplyOutcome::Applied { .. }
        ));
        let refused = Err("bin/run.sh: not exactly where the patch says".to_owned());
        assert!(
            matches!(compare(&good, refused, &agreed), ApplyOutcome::Failed(why) if why.contains("not exactly"))
        );
    }

    #[test]
    fn agrees_with_the_index_route_and_touches_nothing_but_scratch() {
        let (d, rev) = repo();
        let job = tempfile::tempdir().unwrap();
        let before = snapshot(d.path());
        let cases = [
            ("modify", MODIFY, None),
            ("bad context", BAD_CONTEXT, Some("git apply")),
            ("offset", OFFSET, Some("offset")),
            ("add", ADD, None),
            ("add existing", ADD_EXISTING, Some("already exists")),
            ("add below a file", ADD_BELOW_FILE, Some("not a directory")),
            ("add over a directory", ADD_OVER_DIR, Some("already exists")),
            ("delete", DELETE, None),
            ("delete missing", DELETE_MISSING, Some("does not exist")),
            ("mode", MODE, None),
            (
                "wrong old mode",
                WRONG_OLD_MODE,
                Some("mode at the revision"),
            ),
        ];
        let packed = packed_files(d.path(), &rev);
        for (name, text, failure) in cases {
            let ours = match sparse(d.path(), job.path(), &rev, text) {
                Sparse::Outcome(o) => o,
                Sparse::NeedsIndex(why) => panic!("{name}: needs index: {why}"),
            };
            let bundled = match from_bundle(d.path(), job.path(), &rev, text, &packed) {
                Sparse::Outcome(o) => o,
                Sparse::NeedsIndex(why) => panic!("{name}: needs index: {why}"),
            };
            assert_eq!(
                format!("{ours:?}"),
                format!("{bundled:?}"),
                "{name}: the routes differ"
            );
            let reference = in_index(d.path(), job.path(), &rev, text);
            match (&ours, &reference, failure) {
                (
                    ApplyOutcome::Applied { files: a, .. },
                    ApplyOutcome::Applied { files: b, .. },
                    None,
                ) => assert_eq!(a, b, "{name}"),
                (ApplyOutcome::Failed(why), ApplyOutcome::Failed(_), Some(want)) => {
                    assert!(why.contains(want), "{name}: {why}")
                }
                _ => panic!("{name}: sparse {ours:?}, index {reference:?}"),
            }
        }
        // The modified file's both sides are as expected.
        let Sparse::Outcome(ApplyOutcome::Applied { files, .. }) =
            sparse(d.path(), job.path(), &rev, MODIFY)
        else {
            panic!("modify did not apply");
        };
        let a = &files["a.txt"];
        assert!(String::from_utf8_lossy(a.new.as_ref().unwrap()).contains("line three\n"));
        assert!(String::from_utf8_lossy(a.old.as_ref().unwrap()).contains("line 3\n"));
        // Nothing left in the job directory, nothing changed in the repository.
        assert_eq!(snapshot(job.path()), Vec::<String>::new());
        assert_eq!(snapshot(d.path()), before);
        assert_eq!(git(d.path(), &["status", "--porcelain"]), "");
    }

    #[test]
    fn a_job_directory_inside_another_repository_is_not_mistaken_for_it() {
        // The default home `.airlock/` is relative and often inside the user's checkout: git
        // apply in the scratch tree must not discover that repository by walking up. Here
        // the outer repository is a fresh one, and the job directory is given relative to
        // the current directory, as a default home gives it.
        let (d, rev) = repo();
        let outer = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        git(outer.path(), &["init", "-q", "-b", "main"]);
        let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
        let abs_job = outer
            .path()
            .canonicalize()
            .unwrap()
            .join(".airlock/jobs/j1");
        let job = abs_job.strip_prefix(&cwd).unwrap();
        assert!(job.is_relative());
        let Sparse::Outcome(ApplyOutcome::Applied { files, .. }) =
            sparse(d.path(), job, &rev, MODIFY)
        else {
            panic!("modify did not apply inside another repository");
        };
        assert!(
            String::from_utf8_lossy(files["a.txt"].new.as_ref().unwrap()).contains("line three\n")
        );
        assert_eq!(snapshot(&abs_job), Vec::<String>::new());
        assert_eq!(git(outer.path(), &["status", "--porcelain"]), "");
    }

    #[test]
    fn a_symlink_at_the_revision_goes_to_the_index_route() {
        let (d, rev) = repo();
        let job = tempfile::tempdir().unwrap();
        assert!(matches!(
            sparse(d.path(), job.path(), &rev, SYMLINK_EDIT),
            Sparse::NeedsIndex(why) if why.contains("120000")
        ));
        // Through the public entry point, the index route judges it (git refuses to apply
        // a text patch to a symlink without a mode change the parser would have refused).
        let prepared = Prepared::start(d.path(), job.path(), None).unwrap();
        let mut ran = 0;
        let mut meanwhile = Meanwhile::new(|| ran += 1);
        let outcome = review::apply_check(
            d.path(),
            job.path(),
            &rev,
            (SYMLINK_EDIT.as_bytes(), &parsed(SYMLINK_EDIT)),
            Some((prepared, &PackedFiles::new())),
            &mut meanwhile,
        )
        .unwrap();
        drop(meanwhile);
        assert!(matches!(outcome, ApplyOutcome::Failed(_)), "{outcome:?}");
        assert_eq!(ran, 1, "the caller's work runs once on the index route too");
    }

    #[test]
    fn an_unknown_revision_or_a_non_repository_is_an_error() {
        let (d, _) = repo();
        let job = tempfile::tempdir().unwrap();
        let missing = "1".repeat(40);
        let e = try_sparse(d.path(), job.path(), &missing, MODIFY)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not in this repository"), "{e}");
        let plain = tempfile::tempdir().unwrap();
        let e = try_sparse(plain.path(), job.path(), &missing, MODIFY).unwrap_err();
        assert!(format!("{e:#}").contains("not a git repository"), "{e:#}");
        let e = try_sparse(d.path(), job.path(), "HEAD", MODIFY)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a full commit id"), "{e}");
        // Started but never run (the gate stopped earlier): nothing is left behind, not
        // even the job directory when it did not exist.
        drop(Prepared::start(d.path(), job.path(), None).unwrap());
        assert_eq!(snapshot(job.path()), Vec::<String>::new());
        let unborn = job.path().join("jobs/j2");
        drop(Prepared::start(d.path(), &unborn, None).unwrap());
        assert!(!job.path().join("jobs").exists());
    }

    #[test]
    fn the_index_goes_to_a_free_slot_reused_across_gates_and_nothing_is_left_in_the_job() {
        let (d, rev) = repo();
        let home = tempfile::tempdir().unwrap();
        let slots = home.path().join("cache/index");
        let job = tempfile::tempdir().unwrap();
        let packed = packed_files(d.path(), &rev);
        // A check through a slot reads as one through a job-directory file.
        let through_slot = Prepared::start(d.path(), job.path(), Some(&slots))
            .unwrap()
            .run(
                &rev,
                MODIFY.as_bytes(),
                &parsed(MODIFY),
                &packed,
                &mut Meanwhile::nothing(),
            )
            .unwrap();
        let Sparse::Outcome(ApplyOutcome::Applied { files, .. }) = through_slot else {
            panic!("{through_slot:?}");
        };
        assert_eq!(files.len(), 1);
        let failed = Prepared::start(d.path(), job.path(), Some(&slots))
            .unwrap()
            .run(
                &rev,
                BAD_CONTEXT.as_bytes(),
                &parsed(BAD_CONTEXT),
                &packed,
                &mut Meanwhile::nothing(),
            )
            .unwrap();
        assert!(
            matches!(failed, Sparse::Outcome(ApplyOutcome::Failed(_))),
            "{failed:?}"
        );
        assert_eq!(
            snapshot(job.path()),
            Vec::<String>::new(),
            "no index file in the job"
        );
        // Gates at once hold different slots; a slot let go is taken again, never deleted.
        let first = Prepared::start(d.path(), job.path(), Some(&slots)).unwrap();
        let second = Prepared::start(d.path(), job.path(), Some(&slots)).unwrap();
        assert_eq!(first.index.path, slots.join("index-0"));
        assert_eq!(second.index.path, slots.join("index-1"));
        drop(first);
        let third = Prepared::start(d.path(), job.path(), Some(&slots)).unwrap();
        assert_eq!(third.index.path, slots.join("index-0"));
        drop((second, third));
        assert_eq!(snapshot(&slots), vec!["index-0", "index-1"]);
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&slots), 0o700);
        assert_eq!(mode(&slots.join("index-0")), 0o600);
    }

    #[test]
    fn a_link_planted_at_a_slot_is_not_followed() {
        use std::os::unix::fs::symlink;
        let (d, rev) = repo();
        let home = tempfile::tempdir().unwrap();
        let slots = home.path().join("cache/index");
        fs::create_dir_all(&slots).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("victim");
        fs::write(&target, "keep").unwrap();
        symlink(&target, slots.join("index-0")).unwrap();
        let job = tempfile::tempdir().unwrap();
        // No slot is used (the first cannot be opened without following the link): the index
        // goes to the job directory, and the link's target is untouched.
        let prepared = Prepared::start(d.path(), job.path(), Some(&slots)).unwrap();
        assert!(prepared.index.slot.is_none());
        assert!(prepared.index.path.starts_with(job.path()));
        let outcome = prepared
            .run(
                &rev,
                MODIFY.as_bytes(),
                &parsed(MODIFY),
                &packed_files(d.path(), &rev),
                &mut Meanwhile::nothing(),
            )
            .unwrap();
        assert!(
            matches!(outcome, Sparse::Outcome(ApplyOutcome::Applied { .. })),
            "{outcome:?}"
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(snapshot(outside.path()), vec!["victim"]);
        assert_eq!(snapshot(job.path()), Vec::<String>::new());
    }

    #[test]
    fn tree_objects_parse() {
        let mut body = b"100644 a.txt\0".to_vec();
        body.extend([7u8; 20]);
        body.extend(b"40000 dir\0");
        body.extend([9u8; 20]);
        let t = parse_tree(&body, 20).unwrap();
        assert_eq!(t[b"a.txt".as_slice()].mode, "100644");
        assert_eq!(t[b"a.txt".as_slice()].oid, [7u8; 20]);
        assert_eq!(t[b"dir".as_slice()].mode, "040000");
        assert!(parse_tree(b"100644 a.txt\0short", 20).is_err());
        assert!(parse_tree(b"no separator", 20).is_err());
    }
}
