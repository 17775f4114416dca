//! Reads a git revision's tree with the real `git` binary: `ls-tree` for the listing and one
//! `cat-file --batch` process streaming blobs, so memory stays flat whatever the tree size.
//!
//! Guards against: option injection through the revision (`--end-of-options`), reading the
//! working tree instead of the committed tree, and hooks or config in the packed repository
//! altering what is read (no command run here executes repository hooks or filters).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{bail, Context, Result};

/// One entry of a tree listing.
#[derive(Debug, Clone)]
pub struct TreeEntry {
    /// Git mode (`100644`, `100755`, `120000`, `160000`).
    pub mode: String,
    /// Object type (`blob` or `commit`).
    pub kind: String,
    /// Object id.
    pub oid: String,
    /// Blob size (0 for non-blobs).
    pub size: u64,
    /// Path bytes as stored in the tree.
    pub path: Vec<u8>,
}

/// A repository, addressed by its directory.
pub struct Repo {
    dir: PathBuf,
}

fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir);
    // No pager, no prompts, no system/global config surprises for plumbing reads.
    c.env("GIT_TERMINAL_PROMPT", "0").env("GIT_PAGER", "cat");
    c
}

impl Repo {
    /// Opens `dir` as a git repository (work tree or bare). Only checks that the directory
    /// exists: whether it is a repository is known at [`Repo::resolve`], the first git call
    /// (one process fewer per pack).
    pub fn open(dir: &Path) -> Result<Repo> {
        if !dir.is_dir() {
            bail!("{}: no such directory", dir.display());
        }
        Ok(Repo {
            dir: dir.to_owned(),
        })
    }

    /// How many paths of the working tree differ from HEAD (changed, staged or untracked):
    /// `git status --porcelain`, with the file-system monitor off so no configured command
    /// runs. A bare repository has no working tree: 0.
    pub fn uncommitted_paths(&self) -> Result<usize> {
        let out = git(&self.dir)
            .args([
                "-c",
                "core.fsmonitor=false",
                "status",
                "--porcelain=v1",
                "-z",
            ])
            .args(["--untracked-files=normal", "--ignore-submodules=all"])
            .stderr(Stdio::piped())
            .output()
            .context("cannot run git status")?;
        if !out.status.success() {
            return Ok(0);
        }
        Ok(out
            .stdout
            .split(|&b| b == 0)
            .filter(|r| !r.is_empty())
            .count())
    }

    /// Resolves a commit-ish to (commit id, tree id), with one `git cat-file --batch-check`
    /// (the revision goes in on stdin, so it can never be read as an option).
    pub fn resolve(&self, rev: &str) -> Result<(String, String)> {
        let unknown = || {
            anyhow::anyhow!(
                "{}: unknown revision {rev:?} (not a commit in this repository)",
                self.dir.display()
            )
        };
        if rev.is_empty() || rev.chars().any(char::is_control) {
            return Err(unknown());
        }
        let mut child = git(&self.dir)
            .args(["cat-file", "--batch-check"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot run git (is it installed?)")?;
        if let Some(mut stdin) = child.stdin.take() {
            // Two short lines: they fit the pipe, no writer thread needed.
            let _ = stdin.write_all(format!("{rev}^{{commit}}\n{rev}^{{tree}}\n").as_bytes());
        }
        let out = child.wait_with_output().context("git cat-file")?;
        if !out.status.success() {
            if String::from_utf8_lossy(&out.stderr).contains("not a git repository") {
                bail!("{}: not a git repository", self.dir.display());
            }
            return Err(unknown());
        }
        // `<id> commit <size>` then `<id> tree <size>`; `<input> missing` when unknown.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let fields: Vec<Vec<&str>> = stdout.lines().map(|l| l.split(' ').collect()).collect();
        match fields.as_slice() {
            [c, t] => match (c.as_slice(), t.as_slice()) {
                ([commit, "commit", _], [tree, "tree", _])
                    if is_object_id(commit) && is_object_id(tree) =>
                {
                    Ok(((*commit).to_owned(), (*tree).to_owned()))
                }
                _ => Err(unknown()),
            },
            _ => Err(unknown()),
        }
    }

    /// Lists every entry of the commit's tree, recursively.
    pub fn list_tree(&self, commit: &str) -> Result<Vec<TreeEntry>> {
        let out = git(&self.dir)
            .args([
                "ls-tree",
                "-r",
                "-z",
                "--full-tree",
                "-l",
                "--end-of-options",
                commit,
            ])
            .output()
            .context("cannot run git ls-tree")?;
        if !out.status.success() {
            bail!(
                "git ls-tree failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        out.stdout
            .split(|b| *b == 0)
            .filter(|r| !r.is_empty())
            .map(parse_ls_tree_record)
            .collect()
    }

    /// Starts a blob reader (`git cat-file --batch`).
    pub fn blobs(&self) -> Result<BlobReader> {
        let mut child = git(&self.dir)
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot run git cat-file")?;
        let stdin = child.stdin.take().context("git cat-file: no stdin")?;
        let stdout = child.stdout.take().context("git cat-file: no stdout")?;
        Ok(BlobReader {
            child,
            stdin: Some(stdin),
            stdout: BufReader::with_capacity(256 * 1024, stdout),
        })
    }
}

/// A full SHA-1 or SHA-256 object id in lowercase hex.
/// Environment variables that make `git -C dir` use another repository, object store or ref
/// namespace than `dir/.git`: with any of them set, refs are left to git.
const REPOSITORY_ENV: [&str; 5] = [
    "GIT_DIR",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_NAMESPACE",
    "GIT_REPLACE_REF_BASE",
];

/// Largest `HEAD` or loose ref file read, and largest `packed-refs` read, without git.
const MAX_REF_FILE_BYTES: u64 = 4096;
const MAX_PACKED_REFS_BYTES: u64 = 4 << 20;

/// Whether `name` is a branch or other ref name of the plain form git writes: under `refs/`,
/// components of `[A-Za-z0-9._-]` not starting with `.`, no `..`, no `.lock` ending.
fn is_plain_ref_name(name: &str) -> bool {
    name.starts_with("refs/")
        && !name.ends_with(".lock")
        && name.split('/').all(|c| {
            !c.is_empty()
                && !c.starts_with('.')
                && !c.contains("..")
                && c.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        })
}

/// A regular file (not a symlink) of at most `max` bytes, as UTF-8.
fn read_plain_file(path: &Path, max: u64) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > max {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(max)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

impl Repo {
    /// The commit `HEAD` names, read from the ref files as git writes them (`.git/HEAD`, then
    /// the loose ref or `packed-refs`), without running git. `None` whenever the layout is not
    /// that plain one: `.git` not a directory (a worktree, a submodule, a bare repository), a
    /// symbolic ref chain, an unborn branch, a reftable, replace refs, a symlink, a
    /// repository-selecting `GIT_*` variable. Callers then ask git ([`Repo::resolve`]).
    ///
    /// Guards against: reading another repository than the one git would (the environment
    /// check), and a ref name leading outside `.git/refs` (plain names only).
    pub fn head_commit_from_files(&self) -> Option<String> {
        if REPOSITORY_ENV.iter().any(|v| std::env::var_os(v).is_some()) {
            return None;
        }
        let git_dir = self.dir.join(".git");
        if !std::fs::symlink_metadata(&git_dir).ok()?.is_dir()
            || std::fs::symlink_metadata(git_dir.join("refs/replace")).is_ok()
        {
            return None;
        }
        let packed_refs = git_dir.join("packed-refs");
        let packed = match std::fs::symlink_metadata(&packed_refs) {
            Ok(_) => Some(read_plain_file(&packed_refs, MAX_PACKED_REFS_BYTES)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(_) => return None,
        };
        if packed
            .as_deref()
            .is_some_and(|p| p.contains(" refs/replace/"))
        {
            return None;
        }
        let head = read_plain_file(&git_dir.join("HEAD"), MAX_REF_FILE_BYTES)?;
        let head = head.strip_suffix('\n')?;
        if is_object_id(head) {
            return Some(head.to_owned());
        }
        let name = head.strip_prefix("ref: ")?;
        if !is_plain_ref_name(name) {
            return None;
        }
        if let Some(loose) = read_plain_file(&git_dir.join(name), MAX_REF_FILE_BYTES) {
            let oid = loose.strip_suffix('\n')?;
            return is_object_id(oid).then(|| oid.to_owned());
        }
        packed?.lines().find_map(|line| {
            let (oid, r) = line.split_once(' ')?;
            (r == name && is_object_id(oid)).then(|| oid.to_owned())
        })
    }
}

fn is_object_id(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn parse_ls_tree_record(rec: &[u8]) -> Result<TreeEntry> {
    // "<mode> SP <type> SP <object> SP+ <size> TAB <path>"
    let tab = rec
        .iter()
        .position(|b| *b == b'\t')
        .context("git ls-tree: malformed record")?;
    let (meta, path) = (&rec[..tab], &rec[tab + 1..]);
    let meta = std::str::from_utf8(meta).context("git ls-tree: malformed record")?;
    let mut parts = meta.split_whitespace();
    let (Some(mode), Some(kind), Some(oid), Some(size)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        bail!("git ls-tree: malformed record");
    };
    Ok(TreeEntry {
        mode: mode.to_owned(),
        kind: kind.to_owned(),
        oid: oid.to_owned(),
        size: size.parse().unwrap_or(0),
        path: path.to_vec(),
    })
}

/// Streams blob contents from one `git cat-file --batch` process.
pub struct BlobReader {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl BlobReader {
    /// Splits into a request side (feed object ids, one per line, from another thread so
    /// neither pipe can fill up) and a response side.
    pub fn split(mut self) -> Result<(BlobRequests, BlobResponses)> {
        let stdin = self.stdin.take().context("git cat-file: stdin taken")?;
        Ok((BlobRequests { stdin }, BlobResponses { inner: self }))
    }
}

/// The request side of a [`BlobReader`].
pub struct BlobRequests {
    stdin: ChildStdin,
}

impl BlobRequests {
    /// Asks for one object.
    pub fn request(&mut self, oid: &str) -> Result<()> {
        writeln!(self.stdin, "{oid}").context("git cat-file: write")
    }
}

/// The response side of a [`BlobReader`].
pub struct BlobResponses {
    inner: BlobReader,
}

impl BlobResponses {
    /// Reads the next blob, which must be `oid` and at most `max` bytes (checked before reading).
    pub fn next_blob(&mut self, oid: &str, max: u64, buf: &mut Vec<u8>) -> Result<()> {
        let mut header = String::new();
        self.inner
            .stdout
            .read_line(&mut header)
            .context("git cat-file: read")?;
        let mut parts = header.split_whitespace();
        let (Some(got), Some(kind), Some(size)) = (parts.next(), parts.next(), parts.next()) else {
            bail!("git cat-file: object {oid} missing");
        };
        if got != oid || kind != "blob" {
            bail!("git cat-file: expected blob {oid}, got {kind} {got}");
        }
        let size: u64 = size.parse().context("git cat-file: bad size")?;
        if size > max {
            bail!("git cat-file: blob {oid} is {size} bytes, over the {max} limit");
        }
        buf.clear();
        let size = usize::try_from(size).context("blob too large")?;
        buf.reserve(size);
        (&mut self.inner.stdout)
            .take(size as u64 + 1)
            .read_to_end(buf)
            .context("git cat-file: read")?;
        // The record ends with a newline after the content.
        if buf.len() != size + 1 || buf.pop() != Some(b'\n') {
            bail!("git cat-file: truncated blob {oid}");
        }
        Ok(())
    }
}

impl Drop for BlobResponses {
    fn drop(&mut self) {
        drop(self.inner.stdin.take());
        let _ = self.inner.child.kill();
        let _ = self.inner.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::test_git::git;

    fn commit(dir: &Path, file: &str, text: &str) -> String {
        std::fs::write(dir.join(file), text).unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", file]);
        git(dir, &["rev-parse", "HEAD"])
    }

    #[test]
    fn head_from_the_ref_files_is_what_git_resolves_or_nothing() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("repo");
        std::fs::create_dir(&dir).unwrap();
        git(&dir, &["init", "-q", "-b", "main"]);
        let repo = Repo { dir: dir.clone() };
        // Unborn branch: only git can say.
        assert_eq!(repo.head_commit_from_files(), None);
        let first = commit(&dir, "a.txt", "a\n");
        // Loose ref.
        assert_eq!(
            repo.head_commit_from_files().as_deref(),
            Some(first.as_str())
        );
        // Packed ref, and a newer loose one over a stale packed one.
        git(&dir, &["pack-refs", "--all"]);
        assert!(!dir.join(".git/refs/heads/main").exists());
        assert_eq!(
            repo.head_commit_from_files().as_deref(),
            Some(first.as_str())
        );
        let second = commit(&dir, "b.txt", "b\n");
        assert_eq!(
            repo.head_commit_from_files().as_deref(),
            Some(second.as_str())
        );
        // Detached HEAD.
        git(&dir, &["checkout", "-q", "--detach", &first]);
        assert_eq!(
            repo.head_commit_from_files().as_deref(),
            Some(first.as_str())
        );
        git(&dir, &["checkout", "-q", "main"]);
        // A linked worktree has a `.git` file: left to git.
        let wt = t.path().join("wt");
        git(&dir, &["worktree", "add", "-q", wt.to_str().unwrap()]);
        assert_eq!(Repo { dir: wt }.head_commit_from_files(), None);
        // Replace refs change what git resolves: left to git, loose or packed.
        git(&dir, &["replace", &second, &first]);
        assert_eq!(repo.head_commit_from_files(), None);
        git(&dir, &["pack-refs", "--all"]);
        assert!(!dir.join(".git/refs/replace").join(&second).exists());
        std::fs::remove_dir_all(dir.join(".git/refs/replace")).unwrap();
        assert_eq!(repo.head_commit_from_files(), None);
    }

    #[test]
    fn only_plain_ref_names_are_read() {
        for good in ["refs/heads/main", "refs/heads/feature/x-1.2_b"] {
            assert!(is_plain_ref_name(good), "{good}");
        }
        for bad in [
            "refs/heads/../../config",
            "refs/heads/.invalid",
            "refs/heads/main.lock",
            "HEAD",
            "refs//x",
            "refs/heads/a b",
            "/etc/passwd",
            "refs/heads/x..y",
        ] {
            assert!(!is_plain_ref_name(bad), "{bad}");
        }
        // A HEAD naming a path out of `refs/` is not followed.
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().to_owned();
        git(&dir, &["init", "-q", "-b", "main"]);
        let first = commit(&dir, "a.txt", "a\n");
        std::fs::write(t.path().join("outside"), format!("{first}\n")).unwrap();
        std::fs::write(dir.join(".git/HEAD"), "ref: refs/../../outside\n").unwrap();
        assert_eq!(Repo { dir }.head_commit_from_files(), None);
    }
}
