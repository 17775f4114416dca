//! The committed revision of a local repository as the classifier's tree layers read it
//! ([`airlock_classify::tree::Tree`]): [`GitTree`], listed from the signed bundle's manifest
//! (the gate already holds it) or from `git ls-tree` (`airlock classify --repo`), contents from
//! one `git cat-file --batch` process per read (`git::Git::cat_file`),
//! `<commit>:<path>` requests on stdin; [`PackedTree`], the packed files as the gate kept them;
//! [`links_of`], the revision's symbolic links (never packed, but what loads a link's name
//! loads its target: `airlock_classify::tree::Link`).
//!
//! Guards against: reading the working tree instead of the committed revision, option injection
//! through the revision or a path (both go in on stdin, never as arguments), a path that names
//! something else than a file (a tree, a submodule: not read), and large blobs (each read is
//! capped at [`MAX_READ_BYTES`]; the size git announces is checked before anything is kept).
//! On failure to run git, reads give `None`: the tree layers then see less, and the name and
//! content layers still decide.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use airlock_classify::tree::{Link, Listing, Tree, TreeFile, TreeReach, MAX_READ_BYTES};

/// The longest link target read (Linux's `PATH_MAX`).
const MAX_LINK_BYTES: u64 = 4096;

/// A committed revision as the tree layers read it.
pub struct GitTree {
    repo: PathBuf,
    commit: String,
    files: Arc<Listing>,
    links: Vec<Link>,
}

/// The symbolic links of `commit` in `repo`: one `git ls-tree` of the revision and one
/// `git cat-file` of the links' targets. A link whose target leaves the repository is left out
/// ([`Link::new`]); so is one git cannot read (it names nothing the tree layers could read).
pub fn links_of(repo: &Path, commit: &str) -> anyhow::Result<Vec<Link>> {
    let entries = crate::git::Repo::open(repo)?.list_tree_unsized(commit)?;
    links_in(repo, &entries)
}

/// The links among `entries` (a listing of a revision of `repo`), their targets read.
fn links_in(repo: &Path, entries: &[crate::git::TreeEntry]) -> anyhow::Result<Vec<Link>> {
    let links: Vec<_> = entries
        .iter()
        .filter(|e| e.kind == "blob" && e.mode == "120000")
        .filter_map(|e| Some((std::str::from_utf8(&e.path).ok()?, e.oid.as_str())))
        .collect();
    if links.is_empty() {
        return Ok(Vec::new());
    }
    let oids: Vec<&str> = links.iter().map(|(_, oid)| *oid).collect();
    let targets = crate::git::Git::new(repo).cat_file(&oids, MAX_LINK_BYTES)?;
    Ok(links
        .iter()
        .zip(targets)
        .filter_map(|((path, _), t)| Link::new(path, &t.filter(|o| o.kind == "blob")?.data))
        .collect())
}

impl GitTree {
    /// A tree listed by `files` (shared with whoever else reads the listing), read from
    /// `commit` in `repo`.
    pub fn new(repo: &Path, commit: &str, files: impl Into<Arc<Listing>>) -> GitTree {
        GitTree {
            repo: repo.to_owned(),
            commit: commit.to_owned(),
            files: files.into(),
            links: Vec::new(),
        }
    }

    /// The same tree with the revision's symbolic links ([`links_of`]).
    pub fn with_links(self, links: Vec<Link>) -> GitTree {
        GitTree { links, ..self }
    }

    /// The tree of `rev` in `repo`, listed with `git ls-tree`.
    pub fn list(repo: &Path, rev: &str) -> anyhow::Result<GitTree> {
        let git = crate::git::Repo::open(repo)?;
        let (commit, _) = git.resolve(rev)?;
        let entries = git.list_tree_unsized(&commit)?;
        let links = links_in(repo, &entries)?;
        let files = entries
            .into_iter()
            .filter(|e| e.kind == "blob" && e.mode != "120000")
            .filter_map(|e| {
                Some(TreeFile {
                    path: String::from_utf8(e.path).ok()?,
                    executable: e.mode == "100755",
                })
            })
            .collect();
        Ok(GitTree::new(repo, &commit, Listing::new(files)).with_links(links))
    }
}

/// The packed revision as the gate holds it: the manifest's listing, the start of each packed
/// file kept while the bundle was read, and the repository at the revision for the files a large
/// tree left out of that (never for a path that was not packed).
pub struct PackedTree {
    kept: std::collections::HashMap<String, Vec<u8>>,
    kept_all: bool,
    rest: GitTree,
    reach: Option<TreeReach>,
}

impl PackedTree {
    /// `rest` lists the packed files; `kept` holds the start of some or (`kept_all`) all of them.
    pub fn new(
        rest: GitTree,
        kept: std::collections::HashMap<String, Vec<u8>>,
        kept_all: bool,
    ) -> PackedTree {
        PackedTree {
            kept,
            kept_all,
            rest,
            reach: None,
        }
    }

    /// The same tree, with what the tree layers found in it unchanged worked out beforehand.
    pub fn with_reach(self, reach: Option<TreeReach>) -> PackedTree {
        PackedTree { reach, ..self }
    }
}

impl Tree for PackedTree {
    fn files(&self) -> &Listing {
        self.rest.files()
    }

    fn reach(&self) -> Option<&TreeReach> {
        self.reach.as_ref()
    }

    fn links(&self) -> &[Link] {
        self.rest.links()
    }

    fn read(&self, paths: &[&str]) -> Vec<Option<Vec<u8>>> {
        let listed = |p: &str| self.rest.files().get(p).is_some();
        let missed: Vec<&str> = match self.kept_all {
            true => Vec::new(),
            false => paths
                .iter()
                .copied()
                .filter(|p| !self.kept.contains_key(*p) && listed(p))
                .collect(),
        };
        let mut from_git: BTreeMap<&str, Option<Vec<u8>>> = missed
            .iter()
            .copied()
            .zip(self.rest.read(&missed))
            .collect();
        paths
            .iter()
            .map(|p| match self.kept.get(*p) {
                Some(start) => Some(start.clone()),
                None => from_git.remove(p).flatten(),
            })
            .collect()
    }
}

impl Tree for GitTree {
    fn files(&self) -> &Listing {
        &self.files
    }

    fn links(&self) -> &[Link] {
        &self.links
    }

    fn read(&self, paths: &[&str]) -> Vec<Option<Vec<u8>>> {
        let requests: Vec<String> = paths
            .iter()
            .map(|p| format!("{}:{p}", self.commit))
            .collect();
        let requests: Vec<&str> = requests.iter().map(String::as_str).collect();
        match crate::git::Git::new(&self.repo).cat_file(&requests, MAX_READ_BYTES as u64) {
            Ok(answers) => answers
                .into_iter()
                .map(|a| a.filter(|o| o.kind == "blob").map(|o| o.data))
                .collect(),
            Err(_) => vec![None; paths.len()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::test_git::git;

    #[test]
    fn reads_the_committed_revision_not_the_work_tree() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q"]);
        std::fs::create_dir_all(d.join("scripts")).unwrap();
        std::fs::write(d.join("scripts/a.sh"), "committed\n").unwrap();
        std::fs::write(d.join("big.txt"), vec![b'x'; MAX_READ_BYTES + 10]).unwrap();
        std::os::unix::fs::symlink("scripts/a.sh", d.join("conftest.py")).unwrap();
        std::os::unix::fs::symlink("../../outside", d.join("scripts/out")).unwrap();
        git(d, &["add", "-A"]);
        git(d, &["commit", "-qm", "x"]);
        std::fs::write(d.join("scripts/a.sh"), "edited\n").unwrap();
        let tree = GitTree::list(d, "HEAD").unwrap();
        assert_eq!(
            tree.files().len(),
            2,
            "links are not files: {:?}",
            tree.files()
        );
        // A link leaving the repository names no file of it.
        assert_eq!(
            tree.links(),
            [Link::new("conftest.py", b"scripts/a.sh").unwrap()]
        );
        // A blob over the cap is cut, and the stream stays in step for the next one.
        let got = tree.read(&["big.txt", "scripts/a.sh"]);
        assert_eq!(got[0].as_ref().map(Vec::len), Some(MAX_READ_BYTES));
        assert_eq!(got[1].as_deref(), Some(&b"committed\n"[..]));
        let got = tree.read(&["scripts/a.sh", "missing.sh", "scripts", "--help"]);
        assert_eq!(got[0].as_deref(), Some(&b"committed\n"[..]));
        assert_eq!(got[1], None);
        assert_eq!(got[2], None, "a directory is not read");
        assert_eq!(got[3], None);
    }

    #[test]
    fn the_packed_tree_reads_kept_files_and_the_repository_only_for_packed_ones() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q"]);
        for (p, c) in [
            ("a.sh", "in repo\n"),
            ("b.sh", "b\n"),
            ("unpacked.sh", "u\n"),
        ] {
            std::fs::write(d.join(p), c).unwrap();
        }
        git(d, &["add", "-A"]);
        git(d, &["commit", "-qm", "x"]);
        let head = git(d, &["rev-parse", "HEAD"]);
        let listed = |names: &[&str]| {
            names
                .iter()
                .map(|p| TreeFile {
                    path: (*p).to_owned(),
                    executable: false,
                })
                .collect::<Vec<_>>()
        };
        let kept = std::collections::HashMap::from([("a.sh".to_owned(), b"as packed\n".to_vec())]);
        let paths = ["a.sh", "b.sh", "unpacked.sh"];
        let some_kept = PackedTree::new(
            GitTree::new(d, &head, Listing::new(listed(&["a.sh", "b.sh"]))),
            kept.clone(),
            false,
        );
        let got = some_kept.read(&paths);
        assert_eq!(
            got[0].as_deref(),
            Some(&b"as packed\n"[..]),
            "the packed copy"
        );
        assert_eq!(
            got[1].as_deref(),
            Some(&b"b\n"[..]),
            "not kept: from the repository"
        );
        assert_eq!(got[2], None, "never a file that was not packed");
        let all_kept = PackedTree::new(
            GitTree::new(d, &head, Listing::new(listed(&["a.sh"]))),
            kept,
            true,
        );
        assert_eq!(all_kept.read(&paths)[1], None);
    }
}
