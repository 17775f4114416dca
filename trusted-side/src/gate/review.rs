//! Applies the worker's patch with real git against the packed revision, and writes the
//! optional review branch, without touching the user's checkout, HEAD, index or branches.
//!
//! The check without `--review-branch` runs against a sparse index (`sparse_apply.rs`).
//! With it, or when a patched path is not a plain file at the revision, it runs here.
//! How (all plumbing, `git -C <repo>`):
//! - a temporary index (`GIT_INDEX_FILE` in the job directory) loaded with `git read-tree
//!   <revision>`; `git apply --cached` on it (atomic: on failure nothing is written);
//! - for the check, new objects go to a temporary object directory in the job directory
//!   (`GIT_OBJECT_DIRECTORY`, with the repository's objects as an alternate), so gating
//!   without `--review-branch` writes nothing into the repository at all;
//! - `git diff-index --cached` lists what git changed, `git cat-file --batch` reads both sides;
//!   each file is then applied again with the core's exact applier ([`apply_file`]) and must
//!   give byte-identical content and the same mode: git may apply a hunk at an offset, which
//!   would make the redacted-line check describe other lines than the ones changed;
//! - the review branch repeats the apply into the repository's own object store, checks that
//!   `git write-tree` gives the same tree, then `git commit-tree` (fixed identity, dates = the
//!   store's landing time, no signing) and `git update-ref refs/heads/airlock/<job> <new>
//!   <expected old>`; it refuses when that branch is checked out in any worktree.
//!
//! Guards against: a patch that git applies differently than the gate read it (offsets, fuzz,
//! whitespace options from the repository's config are overridden), option injection
//! (the revision must be a full hex id; paths never reach a command line), commit trailers
//! forged through worker-controlled text ([`trailer_value`]), and moving a checked-out branch.
//! Does not check: the patch's paths or content (`checks.rs` did), hooks the user installed in
//! their own repository (`update-ref` may run `reference-transaction`: the user's choice).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use airlock_core::diff::{apply_file, FileKind, FileMode, ParsedPatch};
use anyhow::{bail, Context, Result};

use super::sparse_apply::{cat_file, ChildGuard, Meanwhile, Object, PackedFiles, Prepared, Sparse};

/// Largest blob read from the repository for the exact-apply check.
pub const MAX_BLOB_BYTES: u64 = 64 * 1024 * 1024;
/// Lines of git's stderr kept in an `apply-failed` reason.
const MAX_STDERR_LINES: usize = 6;

/// Environment variables that would redirect git elsewhere; removed from every command.
const GIT_ENV_CLEARED: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_QUARANTINE_PATH",
    "GIT_REPLACE_REF_BASE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
];

/// Pins the options and environment every git command of the gate runs with: repository
/// config that would change how a patch applies is overridden, variables that would redirect
/// git elsewhere are removed, messages are in English. Adds `-c` options: call it before the
/// subcommand's arguments.
pub(super) fn sanitize(c: &mut Command) {
    for (k, v) in [
        ("core.fsmonitor", "false"),
        ("apply.whitespace", "nowarn"),
        ("apply.ignoreWhitespace", "no"),
        ("core.quotePath", "false"),
        ("commit.gpgSign", "false"),
    ] {
        c.arg("-c").arg(format!("{k}={v}"));
    }
    for k in GIT_ENV_CLEARED {
        c.env_remove(k);
    }
    c.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_LITERAL_PATHSPECS", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .env("LANGUAGE", "C");
}

/// Where git commands run and which index and object directory they use.
#[derive(Clone, Debug)]
struct Git {
    repo: PathBuf,
    index: Option<PathBuf>,
    /// (temporary object dir, the repository's object dir as alternate)
    objects: Option<(PathBuf, PathBuf)>,
}

impl Git {
    fn cmd(&self) -> Command {
        let mut c = Command::new("git");
        c.arg("-C").arg(&self.repo);
        // Replacement objects would let refs/replace/ change what a revision id means.
        c.arg("--no-replace-objects");
        sanitize(&mut c);
        if let Some(i) = &self.index {
            c.env("GIT_INDEX_FILE", i);
        }
        if let Some((tmp, real)) = &self.objects {
            c.env("GIT_OBJECT_DIRECTORY", tmp)
                .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", real);
        }
        c.stdin(Stdio::null());
        c
    }

    /// Runs `git args` (stdin optional) and returns stdout; `Err` carries stderr's first lines.
    fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>, String> {
        let mut c = self.cmd();
        c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        if stdin.is_some() {
            c.stdin(Stdio::piped());
        }
        let mut child = c
            .spawn()
            .map_err(|e| format!("cannot run git (is it installed?): {e}"))?;
        let writer = match (stdin, child.stdin.take()) {
            (Some(bytes), Some(mut pipe)) => {
                let bytes = bytes.to_vec();
                Some(std::thread::spawn(move || {
                    let _ = pipe.write_all(&bytes);
                }))
            }
            _ => None,
        };
        let out = child
            .wait_with_output()
            .map_err(|e| format!("git {}: {e}", args.first().unwrap_or(&"")))?;
        if let Some(w) = writer {
            let _ = w.join();
        }
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(stderr_lines(&out.stderr))
        }
    }

    fn run_ok(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>> {
        self.run(args, stdin)
            .map_err(|e| anyhow::anyhow!("git {}: {e}", args.join(" ")))
    }
}

pub(super) fn stderr_lines(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(MAX_STDERR_LINES)
        .map(super::report::shown)
        .collect();
    if lines.is_empty() {
        "git failed without a message".to_owned()
    } else {
        lines.join(" / ")
    }
}

fn stdout_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_owned()
}

/// Whether `s` is a full object id (40 or 64 lowercase hex digits).
pub fn is_full_oid(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64)
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Checks that `repo` is a git repository holding commit `revision`, and returns its object
/// directory (for [`apply_check`]). An absent revision is an error telling the user to fetch
/// it (exit 1), not a verdict.
pub fn check_revision(repo: &Path, revision: &str) -> Result<PathBuf> {
    if !is_full_oid(revision) {
        bail!("job record revision {revision:?} is not a full commit id");
    }
    let objects = objects_dir(repo)
        .with_context(|| format!("{}: not a git repository (--repo)", repo.display()))?;
    let git = Git {
        repo: repo.to_owned(),
        index: None,
        objects: None,
    };
    let spec = format!("{revision}^{{commit}}");
    if git.run(&["cat-file", "-e", &spec], None).is_err() {
        bail!(
            "{}: revision {revision} (the packed revision) is not in this repository: fetch the revision first (e.g. `git fetch origin {revision}`), or pass --repo",
            repo.display()
        );
    }
    Ok(objects)
}

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

/// A scratch directory (temp index, temp objects) inside the job directory, removed on drop.
fn scratch(job_dir: &Path, prefix: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(job_dir)
        .with_context(|| format!("{}: cannot create a scratch directory", job_dir.display()))
}

fn objects_dir(repo: &Path) -> Result<PathBuf> {
    let git = Git {
        repo: repo.to_owned(),
        index: None,
        objects: None,
    };
    let out = git.run_ok(&["rev-parse", "--git-path", "objects"], None)?;
    let p = PathBuf::from(stdout_line(&out));
    let abs = if p.is_absolute() { p } else { repo.join(p) };
    abs.canonicalize()
        .with_context(|| format!("{}: cannot find the object directory", abs.display()))
}

/// Step 8: applies `patch_bytes` (already parsed as `patch`) to `revision` with real git and
/// cross-checks every changed file against the exact applier. With `sparse` (started early
/// by the caller), `git apply --cached --check` against an index of only the patched files
/// (`sparse_apply.rs`: two git processes, whatever the repository's size) unless a patched
/// path is not a plain file at the revision;
/// otherwise, and without `sparse`, in a temporary index, which also gives the resulting tree
/// id (the review branch compares trees). `meanwhile` runs once: as soon as `git apply` has
/// the whole patch on the sparse route, before the first git process of the index route (not
/// at all when this fails before either). `Err`: the revision is not in the repository, or
/// git or the disk failed.
pub fn apply_check(
    repo: &Path,
    job_dir: &Path,
    revision: &str,
    (patch_bytes, patch): (&[u8], &ParsedPatch),
    sparse: Option<(Prepared, &PackedFiles)>,
    meanwhile: &mut Meanwhile<'_>,
) -> Result<ApplyOutcome> {
    let want_tree = sparse.is_none();
    if let Some((prepared, packed)) = sparse {
        match prepared.run(revision, patch_bytes, patch, packed, meanwhile)? {
            Sparse::Outcome(outcome) => return Ok(outcome),
            Sparse::NeedsIndex(why) => tracing::debug!("apply check in an index: {why}"),
        }
    }
    // The index route runs several git processes: the caller's work overlaps all of them.
    meanwhile.run();
    let repo_objects = check_revision(repo, revision)?;
    apply_check_in_index(
        repo,
        &repo_objects,
        job_dir,
        revision,
        (patch_bytes, patch),
        want_tree,
    )
}

/// [`apply_check`] in a temporary index with temporary objects (`repo_objects`, from
/// [`check_revision`], is only read, as an alternate). With `want_tree`, also returns the
/// resulting tree id.
pub fn apply_check_in_index(
    repo: &Path,
    repo_objects: &Path,
    job_dir: &Path,
    revision: &str,
    (patch_bytes, patch): (&[u8], &ParsedPatch),
    want_tree: bool,
) -> Result<ApplyOutcome> {
    let dir = scratch(job_dir, ".apply-")?;
    let objects = dir.path().join("objects");
    std::fs::create_dir(&objects)?;
    let git = Git {
        repo: repo.to_owned(),
        index: Some(dir.path().join("index")),
        objects: Some((objects, repo_objects.to_owned())),
    };
    git.run_ok(&["read-tree", revision], None)?;
    if !patch.files.is_empty() {
        if let Err(e) = git.run(
            &[
                "apply",
                "--cached",
                "--whitespace=nowarn",
                "--no-recount",
                "-",
            ],
            Some(patch_bytes),
        ) {
            return Ok(ApplyOutcome::Failed(format!("git apply: {e}")));
        }
    }
    let tree = if want_tree {
        Some(stdout_line(&git.run_ok(&["write-tree"], None)?))
    } else {
        None
    };
    let raw = git.run_ok(
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
    let changed = match parse_raw_diff(&raw) {
        Ok(c) => c,
        Err(e) => bail!("git diff-index: {e}"),
    };
    if let Some(why) = compare_paths(patch, &changed) {
        return Ok(ApplyOutcome::Failed(why));
    }
    // Read both sides in one cat-file process.
    let mut oids: Vec<&str> = Vec::new();
    for c in changed.values() {
        for oid in [&c.old_oid, &c.new_oid] {
            if !is_null_oid(oid) {
                oids.push(oid);
            }
        }
    }
    let blobs = match read_blobs(&git, &oids) {
        Ok(b) => b,
        Err(e) => {
            return Ok(ApplyOutcome::Failed(format!(
                "cannot read a changed file: {e:#}"
            )))
        }
    };
    let mut files = BTreeMap::new();
    for fp in &patch.files {
        let Some(c) = changed.get(&fp.path) else {
            return Ok(ApplyOutcome::Failed(format!(
                "{}: git did not change it",
                fp.path
            )));
        };
        let old =
            (!is_null_oid(&c.old_oid)).then(|| blobs.get(&c.old_oid).cloned().unwrap_or_default());
        let new =
            (!is_null_oid(&c.new_oid)).then(|| blobs.get(&c.new_oid).cloned().unwrap_or_default());
        if let Some(why) = check_modes(fp, c) {
            return Ok(ApplyOutcome::Failed(format!("{}: {why}", fp.path)));
        }
        let exact = match apply_file(old.as_deref(), fp) {
            Ok(x) => x,
            Err(e) => {
                return Ok(ApplyOutcome::Failed(format!(
                    "git applied it, but not exactly where the patch says (offset): {e}"
                )))
            }
        };
        if exact != new {
            return Ok(ApplyOutcome::Failed(format!(
                "{}: git's result differs from the exact application of the patch",
                fp.path
            )));
        }
        files.insert(fp.path.clone(), AppliedFile { old, new });
    }
    Ok(ApplyOutcome::Applied { tree, files })
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
fn parse_raw_diff(raw: &[u8]) -> Result<BTreeMap<String, RawChange>, String> {
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

/// Git must have changed exactly the patch's paths.
fn compare_paths(patch: &ParsedPatch, changed: &BTreeMap<String, RawChange>) -> Option<String> {
    for path in changed.keys() {
        if patch.file(path).is_none() {
            return Some(format!(
                "git changed {}, which the patch as parsed does not name",
                super::report::shown(path)
            ));
        }
    }
    None
}

/// The modes git recorded must be the ones the patch states, and the old file a regular file.
fn check_modes(fp: &airlock_core::diff::FilePatch, c: &RawChange) -> Option<String> {
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

/// Reads blobs with one `git cat-file --batch` (the reader shared with the sparse route). Each
/// blob at most [`MAX_BLOB_BYTES`].
fn read_blobs(git: &Git, oids: &[&str]) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut out = BTreeMap::new();
    if oids.is_empty() {
        return Ok(out);
    }
    let child = git
        .cmd()
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run git cat-file")?;
    let mut child = ChildGuard(child);
    let requests: Vec<String> = oids.iter().map(|o| (*o).to_owned()).collect();
    let answers = cat_file(&git.repo, &mut child.0, &requests)?;
    for (oid, answer) in oids.iter().zip(answers) {
        match answer {
            Object::Found { kind, body } if kind == "blob" => {
                out.insert((*oid).to_owned(), body);
            }
            Object::Found { kind, .. } => bail!("expected blob {oid}, got a {kind}"),
            Object::Missing => bail!("object {oid} missing"),
        }
    }
    Ok(out)
}

/// Makes worker-controlled text safe as a commit trailer value: one line, printable ASCII
/// (anything else becomes `?`), at most 200 characters. A model name holding a newline cannot
/// add a trailer of its own.
pub fn trailer_value(s: &str) -> String {
    let v: String = s
        .chars()
        .take(200)
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect();
    let v = v.trim().to_owned();
    if v.is_empty() {
        "-".to_owned()
    } else {
        v
    }
}

/// What goes into the review commit.
#[derive(Debug, Clone)]
pub struct ReviewCommit<'a> {
    /// The job id (branch `airlock/<job>`).
    pub job: &'a str,
    /// Parent: the packed revision.
    pub revision: &'a str,
    /// The tree the check produced; the review apply must give the same.
    pub expected_tree: &'a str,
    /// The patch.
    pub patch_bytes: &'a [u8],
    /// Commit message subject and body (without trailers).
    pub message: String,
    /// Trailers, in order.
    pub trailers: Vec<(&'static str, String)>,
    /// Author and committer date, unix seconds.
    pub date_unix: u64,
}

/// Step 13: commits the patched tree on `refs/heads/airlock/<job>` with the revision as parent.
/// Returns (branch name, commit id). Never moves HEAD, never touches the working tree or the
/// real index; refuses if the branch is checked out in any worktree.
pub fn write_review_branch(
    repo: &Path,
    job_dir: &Path,
    c: &ReviewCommit<'_>,
) -> Result<(String, String)> {
    let branch = format!("airlock/{}", c.job);
    let full_ref = format!("refs/heads/{branch}");
    let plain = Git {
        repo: repo.to_owned(),
        index: None,
        objects: None,
    };
    let worktrees = plain.run_ok(&["worktree", "list", "--porcelain", "-z"], None)?;
    let checked_out = worktrees
        .split(|b| *b == 0)
        .any(|rec| rec == format!("branch {full_ref}").as_bytes());
    if checked_out {
        bail!("{branch} is checked out in a worktree: switch away from it before gating with --review-branch");
    }
    let dir = scratch(job_dir, ".review-")?;
    let git = Git {
        repo: repo.to_owned(),
        index: Some(dir.path().join("index")),
        objects: None,
    };
    git.run_ok(&["read-tree", c.revision], None)?;
    if !c.patch_bytes.is_empty() {
        git.run_ok(
            &[
                "apply",
                "--cached",
                "--whitespace=nowarn",
                "--no-recount",
                "-",
            ],
            Some(c.patch_bytes),
        )?;
    }
    let tree = stdout_line(&git.run_ok(&["write-tree"], None)?);
    if tree != c.expected_tree {
        bail!(
            "review apply gave tree {tree}, the check gave {}: refusing to commit",
            c.expected_tree
        );
    }
    let mut message = c.message.trim_end().to_owned();
    message.push_str("\n\n");
    for (k, v) in &c.trailers {
        message.push_str(&format!("{k}: {}\n", trailer_value(v)));
    }
    let date = format!("@{} +0000", c.date_unix);
    let mut commit_cmd = git.cmd();
    commit_cmd
        .args([
            "commit-tree",
            "--no-gpg-sign",
            &tree,
            "-p",
            c.revision,
            "-F",
            "-",
        ])
        .env("GIT_AUTHOR_NAME", "airlock")
        .env("GIT_AUTHOR_EMAIL", "airlock@localhost")
        .env("GIT_COMMITTER_NAME", "airlock")
        .env("GIT_COMMITTER_EMAIL", "airlock@localhost")
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = commit_cmd.spawn().context("cannot run git commit-tree")?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(message.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("git commit-tree: {}", stderr_lines(&out.stderr));
    }
    let commit = stdout_line(&out.stdout);
    if !is_full_oid(&commit) {
        bail!("git commit-tree printed no commit id");
    }
    let old = match plain.run(&["rev-parse", "--verify", "-q", &full_ref], None) {
        Ok(o) => stdout_line(&o),
        Err(_) => "0".repeat(commit.len()),
    };
    plain.run_ok(
        &[
            "update-ref",
            "-m",
            &format!("airlock gate {}", c.job),
            &full_ref,
            &commit,
            &old,
        ],
        None,
    )?;
    Ok((branch, commit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailer_values_cannot_carry_newlines_or_controls() {
        assert_eq!(
            trailer_value("gpt-x\nAirlock-Decision: queue"),
            "gpt-x?Airlock-Decision: queue"
        );
        assert_eq!(trailer_value("\u{202e}m\x1b"), "?m?");
        assert_eq!(trailer_value("  "), "-");
        assert_eq!(trailer_value(&"a".repeat(300)).len(), 200);
    }

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
