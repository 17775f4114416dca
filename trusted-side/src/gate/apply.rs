//! Step 8: applies the worker's patch with real git to the packed revision's files, in a
//! scratch directory, and cross-checks git's result with the core's exact applier. Nothing is
//! written into the repository or the user's checkout.
//!
//! How: one `git cat-file --batch` (through `git::Git`) checks that the revision is a
//! commit here (an absent revision is an error: fetch it first), reads the revision's side of
//! every path the patch changes, and looks up what each added path would land on. The files the
//! patch modifies or deletes are written to a scratch directory in the job directory with their
//! packed mode, and `git apply` runs there outside any repository, as `patch` would: the check
//! costs the size of the change, not of the tree. Each file is then applied again with
//! [`apply_file`] and git's result must be byte-identical, with the patch's mode: git may apply
//! a hunk at an offset, which would make the redacted-line check describe other lines than the
//! ones changed. The review branch (`review.rs`) repeats the apply in an index and checks git's
//! tree against these files.
//!
//! Guards against: a patch that git applies differently than the gate read it (offsets, fuzz;
//! whitespace options are pinned), git writing paths the patch does not name, an added path that
//! exists at the revision or lies under a file there (an index would refuse it), a patch whose
//! old modes are not the packed ones, option injection (the revision must be a full hex id;
//! paths go in on stdin). Outside a repository git reads no repository config, attributes or
//! filters.
//! Does not check: the patch's paths or content (`checks.rs` did); submodules at the revision (an
//! added path under one is not seen as a collision).

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::classify::tree::Listing;
use airlock_core::diff::{apply_file, FileKind, FileMode, FilePatch, ParsedPatch};
use anyhow::{Context, Result};

use crate::git::{is_full_oid, Git, GitError, Object};

/// Largest file read from the repository for the exact-apply check.
pub const MAX_BLOB_BYTES: u64 = 64 * 1024 * 1024;

/// One changed path as git applied it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedFile {
    /// Content at the revision (`None`: did not exist).
    pub old: Option<Vec<u8>>,
    /// Content after the patch (`None`: deleted).
    pub new: Option<Vec<u8>>,
    /// Mode after the patch (`None`: deleted).
    pub new_mode: Option<FileMode>,
}

/// The result of [`apply_check`].
#[derive(Debug)]
pub enum ApplyOutcome {
    /// Git applied the patch exactly as the gate reads it: both sides of every changed path.
    Applied(BTreeMap<String, AppliedFile>),
    /// Git refused, or applied it differently: one line for the reason.
    Failed(String),
}

/// Why the check stopped before `Applied`.
enum Stop {
    /// The patch does not apply: a verdict, one line for the reason.
    NotApplied(String),
    /// Git or the disk failed, or the revision is missing: no verdict (exit 1).
    Error(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for Stop {
    fn from(e: E) -> Stop {
        Stop::Error(e.into())
    }
}

/// Returns `Err(NotApplied(..))` with a formatted reason.
macro_rules! not_applied {
    ($($arg:tt)*) => {
        return Err(Stop::NotApplied(format!($($arg)*)))
    };
}

/// Returns `Err(Error(..))` with a formatted message.
macro_rules! no_verdict {
    ($($arg:tt)*) => {
        return Err(Stop::Error(anyhow::anyhow!($($arg)*)))
    };
}

/// Applies `patch` to the files of `revision` in `repo` (modes from the `packed` listing) with
/// real git in a scratch directory under `job_dir`, and cross-checks every changed file against
/// the exact applier. `Err`: the revision is not in the repository, or git or the disk failed.
pub fn apply_check(
    repo: &Path,
    job_dir: &Path,
    revision: &str,
    patch: (&[u8], &ParsedPatch),
    packed: &Listing,
) -> Result<ApplyOutcome> {
    match check(repo, job_dir, revision, patch, packed) {
        Ok(files) => Ok(ApplyOutcome::Applied(files)),
        Err(Stop::NotApplied(why)) => Ok(ApplyOutcome::Failed(why)),
        Err(Stop::Error(e)) => Err(e),
    }
}

fn check(
    repo: &Path,
    job_dir: &Path,
    revision: &str,
    (patch_bytes, patch): (&[u8], &ParsedPatch),
    packed: &Listing,
) -> Result<BTreeMap<String, AppliedFile>, Stop> {
    let olds = revision_side(repo, revision, patch)?;
    let dir = tempfile::Builder::new()
        .prefix(".apply-")
        .tempdir_in(job_dir)
        .with_context(|| format!("{}: cannot create a scratch directory", job_dir.display()))?;
    let work = dir.path().join("work");
    std::fs::create_dir(&work)?;
    let mut old_modes = BTreeMap::new();
    for (fp, old) in patch.files.iter().zip(&olds) {
        let Some(old) = old else { continue };
        let Some(entry) = packed.get(&fp.path) else {
            not_applied!("{}: not in the packed tree", fp.path);
        };
        let mode = match entry.executable {
            true => FileMode::Executable,
            false => FileMode::Regular,
        };
        write_file(&work, &fp.path, old, mode)?;
        old_modes.insert(fp.path.as_str(), mode);
    }
    if !patch.files.is_empty() {
        let args = ["apply", "--whitespace=nowarn", "--no-recount", "-"];
        match Git::outside_repositories(&work).run(&args, Some(patch_bytes)) {
            Ok(_) => {}
            Err(GitError::Failed(why)) => not_applied!("git apply: {why}"),
            Err(e) => return Err(e.into()),
        }
    }
    let mut files = BTreeMap::new();
    for (fp, old) in patch.files.iter().zip(olds) {
        let old_mode = old_modes.get(fp.path.as_str()).copied();
        let applied = compare(&work, fp, old, old_mode).map_err(|e| match e {
            Stop::NotApplied(why) => Stop::NotApplied(format!("{}: {why}", fp.path)),
            other => other,
        })?;
        files.insert(fp.path.clone(), applied);
    }
    if let Some(extra) = written_paths(&work)?
        .into_iter()
        .find(|p| patch.file(p).is_none())
    {
        not_applied!(
            "git wrote {}, which the patch as parsed does not name",
            airlock_core::text::line(&extra)
        );
    }
    Ok(files)
}

/// The revision's side of each file of the patch (`None` for an added file), read with one
/// `git cat-file --batch`.
fn revision_side(
    repo: &Path,
    revision: &str,
    patch: &ParsedPatch,
) -> Result<Vec<Option<Vec<u8>>>, Stop> {
    if !is_full_oid(revision) {
        no_verdict!("job record revision {revision:?} is not a full commit id");
    }
    if !repo.is_dir() {
        no_verdict!("{}: no such directory (--repo)", repo.display());
    }
    // What an added path would land on: itself, or a file in place of one of its directories.
    let added_over: BTreeSet<&str> = patch
        .files
        .iter()
        .filter(|fp| fp.kind == FileKind::Added)
        .flat_map(|fp| {
            let p = fp.path.as_str();
            p.match_indices('/').map(|(i, _)| &p[..i]).chain([p])
        })
        .collect();
    let mut requests = vec![format!("{revision}^{{commit}}")];
    requests.extend(
        patch
            .files
            .iter()
            .filter(|fp| fp.kind != FileKind::Added)
            .map(|fp| fp.path.as_str())
            .chain(added_over.iter().copied())
            .map(|p| format!("{revision}:{p}")),
    );
    let requests: Vec<&str> = requests.iter().map(String::as_str).collect();
    let mut answers = match Git::new(repo).cat_file(&requests, MAX_BLOB_BYTES) {
        Ok(a) => a.into_iter(),
        Err(GitError::Failed(why)) if why.contains("not a git repository") => {
            no_verdict!("{}: not a git repository (--repo)", repo.display())
        }
        Err(e) => return Err(e.into()),
    };
    if answers.next().flatten().is_none() {
        no_verdict!(
            "{}: revision {revision} (the packed revision) is not in this repository: fetch the revision first (e.g. `git fetch origin {revision}`), or pass --repo",
            repo.display()
        );
    }
    let mut olds = Vec::new();
    for fp in &patch.files {
        if fp.kind == FileKind::Added {
            olds.push(None);
            continue;
        }
        match answers.next().flatten() {
            Some(Object { kind, size, data }) if kind == "blob" && size == data.len() as u64 => {
                olds.push(Some(data))
            }
            Some(Object { kind, .. }) if kind == "blob" => {
                not_applied!(
                    "{}: over {MAX_BLOB_BYTES} bytes at the revision, too large to check",
                    fp.path
                )
            }
            Some(_) => not_applied!("{}: not a file at the revision", fp.path),
            None => not_applied!("{}: does not exist at the revision", fp.path),
        }
    }
    for (p, answer) in added_over.iter().zip(answers) {
        let kind = patch.file(p).map(|fp| fp.kind);
        match answer {
            Some(_) if kind == Some(FileKind::Added) => {
                not_applied!("{p}: added, but it exists at the revision")
            }
            // A file the patch deletes may become a directory.
            Some(o) if o.kind != "tree" && kind != Some(FileKind::Deleted) => {
                not_applied!("{p}: a file at the revision, where the patch adds a path under it")
            }
            _ => {}
        }
    }
    Ok(olds)
}

/// Writes `content` to `work/path` with `mode`. `path` passed the diff parser: relative, no
/// `..`, no empty or `.` component.
fn write_file(work: &Path, path: &str, content: &[u8], mode: FileMode) -> Result<()> {
    let full = work.join(path);
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&full, content).with_context(|| format!("{}", full.display()))?;
    let bits = match mode {
        FileMode::Executable => 0o755,
        FileMode::Regular => 0o644,
    };
    std::fs::set_permissions(&full, std::fs::Permissions::from_mode(bits))?;
    Ok(())
}

/// Git's result for `fp` must be the exact applier's, with the modes the patch states.
fn compare(
    work: &Path,
    fp: &FilePatch,
    old: Option<Vec<u8>>,
    old_mode: Option<FileMode>,
) -> Result<AppliedFile, Stop> {
    if let (Some(want), Some(have)) = (fp.old_mode, old_mode) {
        if want != have {
            not_applied!(
                "mode at the revision is {}, the patch expects {}",
                have.as_str(),
                want.as_str()
            );
        }
    }
    let full = work.join(&fp.path);
    let (new, new_mode) = match std::fs::symlink_metadata(&full) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, None),
        // A deleted file may have become a directory of added files.
        Ok(m) if m.is_dir() && fp.kind == FileKind::Deleted => (None, None),
        Err(e) => {
            return Err(anyhow::Error::new(e)
                .context(full.display().to_string())
                .into())
        }
        Ok(m) if !m.file_type().is_file() => not_applied!("git did not write a file"),
        Ok(m) => {
            let mode = match m.permissions().mode() & 0o100 {
                0 => FileMode::Regular,
                _ => FileMode::Executable,
            };
            (Some(std::fs::read(&full)?), Some(mode))
        }
    };
    let exact = match apply_file(old.as_deref(), fp) {
        Ok(x) => x,
        Err(e) => {
            not_applied!("git applied it, but not exactly where the patch says (offset): {e}")
        }
    };
    if exact != new {
        not_applied!("git's result differs from the exact application of the patch");
    }
    let want_mode = match fp.kind {
        FileKind::Deleted => None,
        _ => fp.new_mode.or(old_mode).or(Some(FileMode::Regular)),
    };
    if new_mode != want_mode {
        let name = |m: Option<FileMode>| m.map_or("none", FileMode::as_str);
        not_applied!(
            "git left mode {}, the patch says {}",
            name(new_mode),
            name(want_mode)
        );
    }
    Ok(AppliedFile { old, new, new_mode })
}

/// Every file and link under `work`, as `/`-separated relative paths.
fn written_paths(work: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut dirs = vec![work.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                dirs.push(entry.path());
            } else if let Ok(rel) = entry.path().strip_prefix(work) {
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    Ok(out)
}
