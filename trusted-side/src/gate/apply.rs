//! Step 8: applies the worker's patch with real git to the packed revision, in a temporary
//! index and a temporary object directory, and cross-checks git's result with the core's
//! exact applier. Nothing is written into the repository or the user's checkout.
//!
//! How (all plumbing, through [`crate::git::Git`]): `git rev-parse` finds the object
//! directory and the revision (an absent revision is an error: fetch it first); `git
//! read-tree <revision>` into a temporary index in the job directory; `git apply --cached`
//! on it (atomic: on failure nothing is written), new objects going to a temporary object
//! directory with the repository's as an alternate; `git diff-index --cached` lists what git
//! changed, `git cat-file --batch` reads both sides; each file is then applied again with
//! [`apply_file`] and must give byte-identical content and the same mode: git may apply a
//! hunk at an offset, which would make the redacted-line check describe other lines than the
//! ones changed. With `want_tree`, `git write-tree` gives the resulting tree (the review
//! branch must reproduce it).
//!
//! Guards against: a patch that git applies differently than the gate read it (offsets, fuzz,
//! whitespace options from the repository's config are overridden), git changing paths the
//! patch does not name, option injection (the revision must be a full hex id; paths never
//! reach a command line).
//! Does not check: the patch's paths or content (`checks.rs` did).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use airlock_core::diff::{apply_file, FileKind, FileMode, FilePatch, ParsedPatch};
use anyhow::{bail, Context, Result};

use crate::git::{is_full_oid, Git, GitError};

/// Largest blob read from the repository for the exact-apply check.
pub const MAX_BLOB_BYTES: u64 = 64 * 1024 * 1024;

/// One changed path as git applied it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedFile {
    /// Content at the revision (`None`: did not exist).
    pub old: Option<Vec<u8>>,
    /// Content after the patch (`None`: deleted).
    pub new: Option<Vec<u8>>,
}

/// The result of [`apply_check`].
#[derive(Debug)]
pub enum ApplyOutcome {
    /// Git applied the patch exactly as the gate reads it.
    Applied {
        /// Tree id after the patch, when asked for (`want_tree`).
        tree: Option<String>,
        /// Both sides of every changed path.
        files: BTreeMap<String, AppliedFile>,
    },
    /// Git refused, or applied it differently: one line for the reason.
    Failed(String),
}

/// The repository's object directory, once `revision` is known to be a commit in it. An
/// absent revision is an error telling the user to fetch it (exit 1), not a verdict.
pub fn check_revision(repo: &Path, revision: &str) -> Result<PathBuf> {
    if !is_full_oid(revision) {
        bail!("job record revision {revision:?} is not a full commit id");
    }
    if !repo.is_dir() {
        bail!("{}: no such directory (--repo)", repo.display());
    }
    let spec = format!("{revision}^{{commit}}");
    let out = match Git::new(repo).run(&["rev-parse", "--git-path", "objects", &spec], None) {
        Ok(out) => out,
        Err(GitError::Failed(why)) if why.contains("not a git repository") => {
            bail!("{}: not a git repository (--repo)", repo.display())
        }
        Err(GitError::Failed(_)) => bail!(
            "{}: revision {revision} (the packed revision) is not in this repository: fetch the revision first (e.g. `git fetch origin {revision}`), or pass --repo",
            repo.display()
        ),
        Err(e) => return Err(e.into()),
    };
    let text = String::from_utf8_lossy(&out);
    let objects = PathBuf::from(text.lines().next().unwrap_or("").trim());
    let abs = if objects.is_absolute() {
        objects
    } else {
        repo.join(objects)
    };
    abs.canonicalize()
        .with_context(|| format!("{}: cannot find the object directory", abs.display()))
}

/// Applies `patch_bytes` (already parsed as `patch`) to `revision` with real git in a
/// scratch directory under `job_dir`, and cross-checks every changed file against the exact
/// applier. With `want_tree`, also returns the resulting tree id. `Err`: the revision is not
/// in the repository, or git or the disk failed.
pub fn apply_check(
    repo: &Path,
    job_dir: &Path,
    revision: &str,
    (patch_bytes, patch): (&[u8], &ParsedPatch),
    want_tree: bool,
) -> Result<ApplyOutcome> {
    let repo_objects = check_revision(repo, revision)?;
    let dir = tempfile::Builder::new()
        .prefix(".apply-")
        .tempdir_in(job_dir)
        .with_context(|| format!("{}: cannot create a scratch directory", job_dir.display()))?;
    let objects = dir.path().join("objects");
    std::fs::create_dir(&objects)?;
    let git = Git::new(repo)
        .with_index(dir.path().join("index"))
        .with_objects(objects, repo_objects);
    git.run(&["read-tree", revision], None)?;
    if !patch.files.is_empty() {
        let args = [
            "apply",
            "--cached",
            "--whitespace=nowarn",
            "--no-recount",
            "-",
        ];
        match git.run(&args, Some(patch_bytes)) {
            Ok(_) => {}
            Err(GitError::Failed(why)) => {
                return Ok(ApplyOutcome::Failed(format!("git apply: {why}")))
            }
            Err(e) => return Err(e.into()),
        }
    }
    let tree = match want_tree {
        true => Some(git.run_line(&["write-tree"])?),
        false => None,
    };
    let raw = git.run(
        &[
            "diff-index",
            "--cached",
            "-z",
            "--no-renames",
            "--no-abbrev",
            "--raw",
            revision,
        ],
        None,
    )?;
    let changed = parse_raw_diff(&raw).map_err(|e| anyhow::anyhow!("git diff-index: {e}"))?;
    Ok(compare(&git, patch, &changed, tree))
}

/// Git must have changed exactly the patch's paths, with the patch's modes, to the exact
/// applier's bytes; then the outcome is `Applied` with `tree`.
fn compare(
    git: &Git,
    patch: &ParsedPatch,
    changed: &BTreeMap<String, RawChange>,
    tree: Option<String>,
) -> ApplyOutcome {
    use ApplyOutcome::Failed;
    if let Some(path) = changed.keys().find(|p| patch.file(p).is_none()) {
        return Failed(format!(
            "git changed {}, which the patch as parsed does not name",
            crate::report::shown(path)
        ));
    }
    let oids: Vec<String> = changed
        .values()
        .flat_map(|c| [&c.old_oid, &c.new_oid])
        .filter(|oid| !is_null_oid(oid))
        .cloned()
        .collect();
    let blobs: BTreeMap<&String, Vec<u8>> = match git.read_blobs(&oids, MAX_BLOB_BYTES) {
        Ok(bodies) => oids.iter().zip(bodies).collect(),
        Err(e) => return Failed(format!("cannot read a changed file: {e:#}")),
    };
    let side =
        |oid: &String| (!is_null_oid(oid)).then(|| blobs.get(oid).cloned().unwrap_or_default());
    let mut files = BTreeMap::new();
    for fp in &patch.files {
        let Some(c) = changed.get(&fp.path) else {
            return Failed(format!("{}: git did not change it", fp.path));
        };
        if let Some(why) = check_modes(fp, c) {
            return Failed(format!("{}: {why}", fp.path));
        }
        let (old, new) = (side(&c.old_oid), side(&c.new_oid));
        let exact = match apply_file(old.as_deref(), fp) {
            Ok(x) => x,
            Err(e) => {
                return Failed(format!(
                    "git applied it, but not exactly where the patch says (offset): {e}"
                ))
            }
        };
        if exact != new {
            return Failed(format!(
                "{}: git's result differs from the exact application of the patch",
                fp.path
            ));
        }
        files.insert(fp.path.clone(), AppliedFile { old, new });
    }
    ApplyOutcome::Applied { tree, files }
}

fn is_null_oid(oid: &str) -> bool {
    oid.bytes().all(|b| b == b'0')
}

/// One record of `git diff-index --raw -z`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RawChange {
    old_mode: String,
    new_mode: String,
    old_oid: String,
    new_oid: String,
    status: String,
}

/// Parses `:<old mode> <new mode> <old oid> <new oid> <status>\0<path>\0` records.
fn parse_raw_diff(raw: &[u8]) -> std::result::Result<BTreeMap<String, RawChange>, String> {
    let mut out = BTreeMap::new();
    let mut parts = raw.split(|b| *b == 0);
    while let Some(meta) = parts.next() {
        if meta.is_empty() {
            continue;
        }
        let meta = std::str::from_utf8(meta).map_err(|_| "malformed record".to_owned())?;
        let meta = meta.strip_prefix(':').ok_or("malformed record")?;
        let f: Vec<&str> = meta.split(' ').collect();
        let [old_mode, new_mode, old_oid, new_oid, status] = f.as_slice() else {
            return Err("malformed record".to_owned());
        };
        let path = parts.next().ok_or("record without a path")?;
        let path = String::from_utf8(path.to_vec()).map_err(|_| "path is not UTF-8".to_owned())?;
        out.insert(
            path,
            RawChange {
                old_mode: (*old_mode).to_owned(),
                new_mode: (*new_mode).to_owned(),
                old_oid: (*old_oid).to_owned(),
                new_oid: (*new_oid).to_owned(),
                status: (*status).to_owned(),
            },
        );
    }
    Ok(out)
}

/// The modes git recorded must be the ones the patch states, and the old file a regular file.
fn check_modes(fp: &FilePatch, c: &RawChange) -> Option<String> {
    let want_old = match fp.kind {
        FileKind::Added => "000000",
        _ => match fp.old_mode {
            Some(m) => m.as_str(),
            None if c.old_mode == FileMode::Executable.as_str() => "100755",
            None => "100644",
        },
    };
    if c.old_mode != want_old {
        return Some(format!(
            "mode at the revision is {}, the patch expects {want_old}",
            c.old_mode
        ));
    }
    let want_new = match fp.kind {
        FileKind::Deleted => "000000".to_owned(),
        _ => fp
            .new_mode
            .map_or_else(|| want_old.to_owned(), |m| m.as_str().to_owned()),
    };
    if c.new_mode != want_new {
        return Some(format!(
            "git set mode {}, the patch says {want_new}",
            c.new_mode
        ));
    }
    let want_status = match fp.kind {
        FileKind::Added => "A",
        FileKind::Deleted => "D",
        FileKind::Modified | FileKind::ModeChange => "M",
    };
    if c.status != want_status {
        return Some(format!("git status {}, expected {want_status}", c.status));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_diff_records_parse() {
        let raw = b":100644 100755 aaaa bbbb M\0src/a b.rs\0:000000 100644 0000 cccc A\0new\0";
        let m = parse_raw_diff(raw).unwrap();
        assert_eq!(m["src/a b.rs"].new_mode, "100755");
        assert_eq!(m["new"].status, "A");
        assert!(parse_raw_diff(b":100644 x\0p\0").is_err());
    }

    #[test]
    fn full_oids_only() {
        assert!(is_full_oid(&"a".repeat(40)) && is_full_oid(&"0".repeat(64)));
        assert!(
            !is_full_oid("HEAD") && !is_full_oid("--output=x") && !is_full_oid(&"A".repeat(40))
        );
    }
}
