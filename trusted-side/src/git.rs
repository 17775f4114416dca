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
