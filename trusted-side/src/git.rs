//! The one way airlock starts git: [`Git`] builds every git process of pack, scan, gate and
//! review with the same hardening, and [`Repo`] reads a revision's tree with it (`ls-tree` for
//! the listing, `diff-tree` for what changed since a tree listed before, `cat-file --batch`
//! streaming blobs, so memory stays flat whatever the tree size).
//!
//! Guards against: the repository or the environment changing what git reads or does:
//! replace refs (`--no-replace-objects`), system and global config (`GIT_CONFIG_NOSYSTEM`,
//! `GIT_CONFIG_GLOBAL=/dev/null`), hooks (`core.hooksPath=/dev/null`), the fsmonitor, pagers
//! and prompts, variables that point git at another repository, index or object store (all
//! cleared), repository config that changes how a patch applies (overridden); option
//! injection through the revision (`--end-of-options`, revisions on stdin or full ids only).
//! Does not check: what the repository holds; callers read trees and blobs as data.

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

mod blobs;
mod changes;
mod objects;
mod worktree;
pub use blobs::{deal, BlobStream, BlobWant};
pub use changes::{apply_changes, is_sorted, TreeChange};
pub use objects::Object;

/// Environment variables that would point git at another repository, index or object store,
/// or change how it reads objects and config; removed from every git process.
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
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_SYSTEM",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
    "GIT_EXEC_PATH",
    "GIT_TRACE",
];

/// Config pinned on every command line: no hooks, no fsmonitor, no signing, and the apply
/// settings that would make git read a patch differently from the gate.
const GIT_CONFIG_PINNED: &[(&str, &str)] = &[
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.quotePath", "false"),
    ("commit.gpgSign", "false"),
    ("apply.whitespace", "nowarn"),
    ("apply.ignoreWhitespace", "no"),
];

/// Lines of git's stderr kept in an error.
const MAX_STDERR_LINES: usize = 6;

/// Where a git process runs and which index it uses. Every git process of
/// airlock is built by [`Git::command`].
#[derive(Clone, Debug)]
pub struct Git {
    repo: PathBuf,
    index: Option<PathBuf>,
    /// Further variables (a commit's identity and dates).
    env: Vec<(&'static str, String)>,
}

/// Why a git command gave no output.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// Git ran and refused: the first lines of its stderr, made printable.
    #[error("{0}")]
    Failed(String),
    /// Git could not be started or waited for.
    #[error("cannot run git {command} (is git installed?): {source}")]
    Run {
        /// The subcommand.
        command: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl Git {
    /// Git in the repository at `repo` (a work tree or a bare repository).
    pub fn new(repo: &Path) -> Git {
        Git {
            repo: repo.to_owned(),
            index: None,
            env: Vec::new(),
        }
    }

    /// Git in `dir`, a directory in no repository: `git apply` there patches plain files as
    /// `patch` would, reading no repository's config, attributes or filters. Repository
    /// discovery stops at `dir`'s parent (`GIT_CEILING_DIRECTORIES`).
    pub fn outside_repositories(dir: &Path) -> Git {
        let parent = dir.parent().unwrap_or(dir).display().to_string();
        Git::new(dir).with_env("GIT_CEILING_DIRECTORIES", parent)
    }

    /// The same, with `key=value` in the environment (after the hardening's own).
    pub fn with_env(mut self, key: &'static str, value: impl Into<String>) -> Git {
        self.env.push((key, value.into()));
        self
    }

    /// The same, with `GIT_INDEX_FILE` set to `index` instead of the repository's index.
    pub fn with_index(mut self, index: PathBuf) -> Git {
        self.index = Some(index);
        self
    }

    /// `git -C <repo>` with the hardening of the module doc, stdin closed; add the subcommand.
    pub fn command(&self) -> Command {
        let mut c = Command::new("git");
        c.arg("-C")
            .arg(&self.repo)
            .arg("--no-replace-objects")
            .arg("--no-pager");
        for (k, v) in GIT_CONFIG_PINNED {
            c.arg("-c").arg(format!("{k}={v}"));
        }
        for k in GIT_ENV_CLEARED {
            c.env_remove(k);
        }
        c.env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_PAGER", "cat")
            .env("GIT_LITERAL_PATHSPECS", "1")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("LC_ALL", "C")
            .env("LANGUAGE", "C");
        if let Some(index) = &self.index {
            c.env("GIT_INDEX_FILE", index);
        }
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.stdin(Stdio::null());
        c
    }

    /// Runs `git args`, feeding `stdin` when given, and returns stdout.
    pub fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>, GitError> {
        let mut c = self.command();
        c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        if stdin.is_some() {
            c.stdin(Stdio::piped());
        }
        let failed_to_run = |source| GitError::Run {
            command: args.first().copied().unwrap_or("").to_owned(),
            source,
        };
        let mut child = c.spawn().map_err(failed_to_run)?;
        let out = std::thread::scope(|s| {
            // git may write before it has read all its input: feed it from a thread.
            if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
                s.spawn(move || {
                    let _ = pipe.write_all(bytes);
                });
            }
            child.wait_with_output()
        })
        .map_err(failed_to_run)?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(GitError::Failed(stderr_lines(&out.stderr)))
        }
    }

    /// [`Git::run`], its output as one trimmed line.
    pub fn run_line(&self, args: &[&str]) -> Result<String, GitError> {
        let out = self.run(args, None)?;
        Ok(String::from_utf8_lossy(&out).trim().to_owned())
    }
}

/// The first lines of a git stderr, control characters escaped, joined with ` / `.
pub fn stderr_lines(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(MAX_STDERR_LINES)
        .map(airlock_core::text::line)
        .collect();
    if lines.is_empty() {
        "git failed without a message".to_owned()
    } else {
        lines.join(" / ")
    }
}

/// Whether `s` is a full object id (40 or 64 lowercase hex digits).
pub fn is_full_oid(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// One entry of a tree listing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeEntry {
    /// Git mode (`100644`, `100755`, `120000`, `160000`): [`well_known`] for these, so that
    /// a listing of a large tree does not allocate them once an entry.
    pub mode: Cow<'static, str>,
    /// Object type (`blob` or `commit`), as `mode`.
    pub kind: Cow<'static, str>,
    /// Object id.
    pub oid: String,
    /// Blob size (0 for non-blobs).
    pub size: u64,
    /// Path bytes as stored in the tree.
    pub path: Vec<u8>,
}

/// A repository, addressed by its directory.
pub struct Repo {
    git: Git,
    /// The working tree blobs are read from first, opened at the first read.
    worktree: std::sync::OnceLock<Option<std::sync::Arc<worktree::Worktree>>>,
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
            git: Git::new(dir),
            worktree: std::sync::OnceLock::new(),
        })
    }

    /// How many paths of the working tree differ from HEAD (changed, staged or untracked):
    /// `git status --porcelain`, with the file-system monitor off so no configured command
    /// runs. A bare repository has no working tree: 0.
    pub fn uncommitted_paths(&self) -> Result<usize> {
        let out = self
            .git
            .command()
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
                self.git.repo.display()
            )
        };
        if rev.is_empty() || rev.chars().any(char::is_control) {
            return Err(unknown());
        }
        let mut child = self
            .git
            .command()
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
                bail!("{}: not a git repository", self.git.repo.display());
            }
            return Err(unknown());
        }
        // `<id> commit <size>` then `<id> tree <size>`; `<input> missing` when unknown.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let fields: Vec<Vec<&str>> = stdout.lines().map(|l| l.split(' ').collect()).collect();
        match fields.as_slice() {
            [c, t] => match (c.as_slice(), t.as_slice()) {
                ([commit, "commit", _], [tree, "tree", _])
                    if is_full_oid(commit) && is_full_oid(tree) =>
                {
                    Ok(((*commit).to_owned(), (*tree).to_owned()))
                }
                _ => Err(unknown()),
            },
            _ => Err(unknown()),
        }
    }

    /// Lists every entry of the commit's tree, recursively, with blob sizes.
    pub fn list_tree(&self, commit: &str) -> Result<Vec<TreeEntry>> {
        self.ls_tree(commit, true)
    }

    /// [`Repo::list_tree`] without the sizes (every `size` is 0), which git lists in about a
    /// third of the time: fill them with [`Repo::fill_sizes`].
    pub fn list_tree_unsized(&self, commit: &str) -> Result<Vec<TreeEntry>> {
        self.ls_tree(commit, false)
    }

    /// Sets the size of every blob of `entries`: `known(entry)` where it answers (a packer's
    /// earlier result for the same path and blob), else git's (`cat-file --batch-check`).
    pub fn fill_sizes(
        &self,
        entries: &mut [TreeEntry],
        known: impl Fn(&TreeEntry) -> Option<u64>,
    ) -> Result<()> {
        let mut ask = String::new();
        for e in entries.iter_mut().filter(|e| e.kind == "blob") {
            match known(e) {
                Some(size) => e.size = size,
                None => {
                    ask.push_str(&e.oid);
                    ask.push('\n');
                }
            }
        }
        if ask.is_empty() {
            return Ok(());
        }
        let out = (self.git)
            .run(
                &[
                    "cat-file",
                    "--batch-check=%(objectname) %(objecttype) %(objectsize)",
                ],
                Some(ask.as_bytes()),
            )
            .map_err(|e| anyhow::anyhow!("git cat-file --batch-check: {e}"))?;
        let mut sizes = std::collections::HashMap::new();
        for line in String::from_utf8_lossy(&out).lines() {
            let mut parts = line.split(' ');
            // Whatever the object's type, as `ls-tree -l` gives it: a file entry that names a
            // tree (a tree git would not write) is sized, not an error, so that a pack lists
            // alike with and without the cache (its content is read as a blob only:
            // `blobs.rs` refuses any other type).
            if let (Some(oid), Some(_type), Some(size)) = (parts.next(), parts.next(), parts.next())
            {
                sizes.insert(
                    oid.to_owned(),
                    size.parse::<u64>().context("git cat-file: bad size")?,
                );
            }
        }
        for e in entries.iter_mut().filter(|e| e.kind == "blob") {
            if known(e).is_none() {
                e.size = *sizes
                    .get(&e.oid)
                    .with_context(|| format!("git cat-file: blob {} missing", e.oid))?;
            }
        }
        Ok(())
    }

    fn ls_tree(&self, commit: &str, sized: bool) -> Result<Vec<TreeEntry>> {
        let mut args = vec!["ls-tree", "-r", "-z", "--full-tree"];
        if sized {
            args.push("-l");
        }
        args.extend(["--end-of-options", commit]);
        let out = self
            .git
            .command()
            .args(args)
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
            .map(|r| parse_ls_tree_record(r, sized))
            .collect()
    }

    /// Streams the blobs `wants`, in this order: each from its file in the working tree when
    /// that file is the blob, else from `git cat-file --batch`.
    pub fn blobs(&self, wants: Vec<BlobWant>) -> Result<BlobStream> {
        let tree = self
            .worktree
            .get_or_init(|| worktree::Worktree::open(&self.git.repo).map(std::sync::Arc::new));
        BlobStream::start(&self.git, wants, tree.clone())
    }
}

/// `word` without an allocation when it is one of the modes and object types a tree lists.
pub fn well_known(word: &str) -> Cow<'static, str> {
    const WORDS: [&str; 8] = [
        "100644", "100755", "120000", "160000", "040000", "blob", "commit", "tree",
    ];
    match WORDS.iter().find(|w| **w == word) {
        Some(w) => Cow::Borrowed(w),
        None => Cow::Owned(word.to_owned()),
    }
}

fn parse_ls_tree_record(rec: &[u8], sized: bool) -> Result<TreeEntry> {
    // "<mode> SP <type> SP <object> SP+ <size> TAB <path>" (without `-l`: no size)
    let tab = rec
        .iter()
        .position(|b| *b == b'\t')
        .context("git ls-tree: malformed record")?;
    let (meta, path) = (&rec[..tab], &rec[tab + 1..]);
    let meta = std::str::from_utf8(meta).context("git ls-tree: malformed record")?;
    let mut parts = meta.split_whitespace();
    let (Some(mode), Some(kind), Some(oid)) = (parts.next(), parts.next(), parts.next()) else {
        bail!("git ls-tree: malformed record");
    };
    let size = match parts.next() {
        Some(size) => size,
        None if !sized => "0",
        None => bail!("git ls-tree: malformed record"),
    };
    Ok(TreeEntry {
        mode: well_known(mode),
        kind: well_known(kind),
        oid: oid.to_owned(),
        size: size.parse().unwrap_or(0),
        path: path.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsized_listing_filled_from_an_earlier_result_and_git_equals_the_sized_one() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("repo");
        std::fs::create_dir_all(dir.join("d")).unwrap();
        std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
        std::fs::write(dir.join("d/b.bin"), vec![0u8; 70_000]).unwrap();
        std::fs::write(dir.join("empty"), "").unwrap();
        git(&dir, &["init", "-q", "-b", "main"]);
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-q", "-m", "x"]);
        let repo = Repo::open(&dir).unwrap();
        let sized = repo.list_tree("HEAD").unwrap();
        let mut entries = repo.list_tree_unsized("HEAD").unwrap();
        assert!(entries.iter().all(|e| e.size == 0));
        // One size known from an earlier pack; git answers for the others.
        repo.fill_sizes(&mut entries, |e| (e.path == b"a.txt").then_some(6))
            .unwrap();
        let sizes = |l: &[TreeEntry]| -> Vec<(Vec<u8>, u64)> {
            l.iter().map(|e| (e.path.clone(), e.size)).collect()
        };
        assert_eq!(sizes(&entries), sizes(&sized));
        assert_eq!(
            sized.iter().find(|e| e.path == b"d/b.bin").unwrap().size,
            70_000
        );
    }

    use crate::gate::test_git::git;

    /// A repository whose config and hooks would change what git reads or does, and a
    /// replacement for its only commit.
    fn hostile_repo() -> (tempfile::TempDir, PathBuf, String) {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("repo");
        std::fs::create_dir(&dir).unwrap();
        git(&dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("a.txt"), "committed\n").unwrap();
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-q", "-m", "real"]);
        let real = git(&dir, &["rev-parse", "HEAD"]);
        std::fs::write(dir.join("a.txt"), "planted\n").unwrap();
        git(&dir, &["commit", "-q", "-a", "-m", "planted"]);
        let planted = git(&dir, &["rev-parse", "HEAD"]);
        git(&dir, &["reset", "-q", "--hard", &real]);
        git(&dir, &["replace", &real, &planted]);
        let hook = dir.join(".git/hooks/reference-transaction");
        std::fs::write(
            &hook,
            format!("#!/bin/sh\ntouch {}/hook-ran\n", t.path().display()),
        )
        .unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        (t, dir, real)
    }

    #[test]
    fn git_reads_the_committed_tree_and_runs_no_hook() {
        let (t, dir, real) = hostile_repo();
        let repo = Repo::open(&dir).unwrap();
        let (commit, tree) = repo.resolve(&real).unwrap();
        assert_eq!(commit, real);
        let listing = repo.list_tree(&commit).unwrap();
        let blob = listing[0].oid.clone();
        let content = Git::new(&dir).cat_file(&[&blob], 1 << 20).unwrap();
        assert_eq!(content[0].as_ref().unwrap().data, b"committed\n");
        // A path at the revision reads the committed blob, not the replacement's.
        let by_path = Git::new(&dir)
            .cat_file(&[&format!("{real}:a.txt")], 1 << 20)
            .unwrap();
        assert_eq!(by_path[0].as_ref().unwrap().data, b"committed\n");
        assert_eq!(
            tree,
            git(
                &dir,
                &[
                    "--no-replace-objects",
                    "rev-parse",
                    &format!("{real}^{{tree}}")
                ]
            )
        );
        // A ref update would run the repository's reference-transaction hook.
        Git::new(&dir)
            .run(&["update-ref", "refs/heads/x", &real], None)
            .unwrap();
        assert!(!t.path().join("hook-ran").exists(), "a repository hook ran");
    }

    #[test]
    fn a_refusal_carries_gits_message_and_no_control_characters() {
        let (_t, dir, _) = hostile_repo();
        let Err(GitError::Failed(why)) =
            Git::new(&dir).run(&["cat-file", "-e", "nosuch\x1b[2J"], None)
        else {
            panic!("git accepted an unknown object");
        };
        assert!(!why.contains('\x1b'), "{why}");
    }
}
