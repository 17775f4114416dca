//! The tree the classification's tree layers read: the [`Tree`] trait, [`Listing`] (its files,
//! sorted for binary search), [`MemTree`] (in memory, for tests and callers that hold the
//! bytes), and the small types every tree layer shares: a [`Change`], what a layer [`Raised`],
//! the tree's `Paths` with a change overlaid, [`TreeReach`] (what the entry points reach,
//! worked out beforehand) and a symbolic [`Link`] of the tree (`links.rs` follows them). A tree
//! over a git revision lives with its caller (the trusted side's `classify::git_tree`).
//!
//! Guards against: reading more of a file than the layers need (each read is capped at
//! [`MAX_READ_BYTES`]) and lookups that cost the size of the tree (binary searches only).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::entry::entry_point;
use crate::Bucket;

/// A symbolic link of the tree: where it is, and the repository path it points at.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Link {
    /// The link's own path, `/`-separated.
    pub path: String,
    /// The path it points at, relative to the repository's root and normalised.
    pub target: String,
}

impl Link {
    /// The link at `path` whose content (what `readlink` gives) is `target`: `None` when the
    /// target is absolute, not UTF-8, or leaves the repository.
    pub fn new(path: &str, target: &[u8]) -> Option<Link> {
        let target = std::str::from_utf8(target).ok()?;
        if target.starts_with('/') || target.is_empty() || path.is_empty() {
            return None;
        }
        let mut parts: Vec<&str> = dir_of(path).split('/').filter(|p| !p.is_empty()).collect();
        for part in target.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop()?;
                }
                p => parts.push(p),
            }
        }
        (!parts.is_empty()).then(|| Link {
            path: path.to_owned(),
            target: parts.join("/"),
        })
    }
}

/// One file of a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeFile {
    /// Repository-relative path, `/`-separated.
    pub path: String,
    /// Whether the file is executable.
    pub executable: bool,
}

/// The files of a tree, sorted by path (bytewise) and without duplicates: a path is found, and
/// the files under a directory listed, by binary search.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing(Vec<TreeFile>);

impl Listing {
    /// `files` sorted, the first of each path kept.
    pub fn new(mut files: Vec<TreeFile>) -> Listing {
        files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        files.dedup_by(|b, a| a.path == b.path);
        Listing(files)
    }

    /// The files a bundle's manifest lists.
    pub fn of_manifest(manifest: &airlock_core::format::Manifest) -> Listing {
        let files = manifest.files.iter().map(|f| TreeFile {
            path: f.path.clone(),
            executable: f.executable(),
        });
        Listing::new(files.collect())
    }

    /// The file at `path`.
    pub fn get(&self, path: &str) -> Option<&TreeFile> {
        self.0
            .binary_search_by(|f| f.path.as_bytes().cmp(path.as_bytes()))
            .ok()
            .map(|i| &self.0[i])
    }

    /// The files whose path starts with `prefix`, in order.
    pub fn starting_with(&self, prefix: &str) -> &[TreeFile] {
        let from = self
            .0
            .partition_point(|f| f.path.as_bytes() < prefix.as_bytes());
        let len = self.0[from..].partition_point(|f| f.path.starts_with(prefix));
        &self.0[from..from + len]
    }
}

impl std::ops::Deref for Listing {
    type Target = [TreeFile];
    fn deref(&self) -> &[TreeFile] {
        &self.0
    }
}

/// A read-only view of the packed revision.
pub trait Tree {
    /// Every file of the tree.
    fn files(&self) -> &Listing;
    /// The first [`MAX_READ_BYTES`] of each of `paths` (`None`: missing or unreadable).
    fn read(&self, paths: &[&str]) -> Vec<Option<Vec<u8>>>;
    /// What the tree layers found in this tree unchanged, when it was worked out beforehand
    /// (the gate's per-bundle index, `gate/index.rs`).
    fn reach(&self) -> Option<&TreeReach> {
        None
    }
    /// The tree's symbolic links (never listed in [`Tree::files`]): what loads a link's name
    /// loads what it points at (`links.rs`).
    fn links(&self) -> &[Link] {
        &[]
    }
}

/// A tree held in memory: for tests and for callers that already have the bytes.
#[derive(Default, Debug)]
pub struct MemTree {
    files: Listing,
    content: BTreeMap<String, Vec<u8>>,
    links: Vec<Link>,
}

impl MemTree {
    /// An empty tree.
    pub fn new() -> MemTree {
        MemTree::default()
    }

    /// Adds a file with its content.
    pub fn add(&mut self, path: &str, executable: bool, content: &[u8]) -> &mut MemTree {
        let mut files = std::mem::take(&mut self.files).0;
        files.push(TreeFile {
            path: path.to_owned(),
            executable,
        });
        self.files = Listing::new(files);
        self.content.insert(path.to_owned(), content.to_vec());
        self
    }

    /// Adds a symbolic link at `path` pointing at `target` (as `readlink` gives it); one that
    /// leaves the repository is not kept ([`Link::new`]).
    pub fn add_link(&mut self, path: &str, target: &str) -> &mut MemTree {
        self.links.extend(Link::new(path, target.as_bytes()));
        self
    }
}

impl Tree for MemTree {
    fn files(&self) -> &Listing {
        &self.files
    }

    fn links(&self) -> &[Link] {
        &self.links
    }

    fn read(&self, paths: &[&str]) -> Vec<Option<Vec<u8>>> {
        paths
            .iter()
            .map(|p| {
                self.content
                    .get(*p)
                    .map(|c| c[..c.len().min(MAX_READ_BYTES)].to_vec())
            })
            .collect()
    }
}

/// Bytes of each entry point or named script that are read.
pub const MAX_READ_BYTES: usize = 256 * 1024;

/// What the tree says about one changed path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Raised {
    /// The bucket.
    pub bucket: Bucket,
    /// Rule id: `ci.reached`, `build.reached`, `agent.reached`, `iac.helm-template`, …
    pub rule: &'static str,
    /// The evidence: `run by .github/workflows/test.yml`.
    pub because: String,
    /// Placement only: applies to `src` and `other` like content, not to `tests` or `docs`.
    pub weak: bool,
    /// Reached only as a file under a directory an entry point names (`make -C examples/x`,
    /// `cd examples/x`): applies to example projects and generator templates only.
    pub by_dir: bool,
    /// Reached by directory, through a directory above the file's own that an entry point
    /// enters (`working-directory: tmpl` for `tmpl/compose/x/Dockerfile`), not one it renders.
    pub nested: bool,
}

impl Raised {
    /// What a placement rule found (`placement.rs`): where the file sits, not what reaches it.
    pub(crate) fn placed(
        bucket: Bucket,
        rule: &'static str,
        because: String,
        weak: bool,
    ) -> Raised {
        Raised {
            bucket,
            rule,
            because,
            weak,
            by_dir: false,
            nested: false,
        }
    }
}

/// A changed file: its path and new content (`None` when deleted or unknown).
#[derive(Clone, Copy, Debug)]
pub struct Change<'a> {
    /// Repository-relative path.
    pub path: &'a str,
    /// Content after the change.
    pub new: Option<&'a [u8]>,
    /// Executable after the change.
    pub executable: bool,
}

/// The directory of `path` (`""` at the root).
pub(crate) fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// The tree's paths with a change's added files and executable bits: what names resolve
/// against. Lookups are binary searches in the tree's listing, so nothing here costs the size
/// of the tree.
pub(crate) struct Paths<'a> {
    listing: &'a Listing,
    added: BTreeSet<&'a str>,
    made_executable: BTreeSet<&'a str>,
}

impl<'a> Paths<'a> {
    /// The paths of `tree` with `changes` applied (a deleted file stays: what ran it still names it).
    pub(crate) fn new(tree: &'a dyn Tree, changes: &[Change<'a>]) -> Paths<'a> {
        Paths {
            listing: tree.files(),
            added: changes
                .iter()
                .filter(|c| c.new.is_some())
                .map(|c| c.path)
                .collect(),
            made_executable: changes
                .iter()
                .filter(|c| c.executable)
                .map(|c| c.path)
                .collect(),
        }
    }

    pub(crate) fn contains(&self, path: &str) -> bool {
        self.listing.get(path).is_some() || self.added.contains(path)
    }

    /// The paths starting with `prefix`, sorted.
    /// Whether some path lies under the directory `dir`.
    pub(crate) fn has_under(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        !self.listing.starting_with(&prefix).is_empty()
            || self.added.iter().any(|p| p.starts_with(&prefix))
    }

    pub(crate) fn starting_with(&self, prefix: &str) -> Vec<&'a str> {
        let mut out: Vec<&'a str> = self
            .listing
            .starting_with(prefix)
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        let from = (
            std::ops::Bound::Included(prefix),
            std::ops::Bound::Unbounded,
        );
        out.extend(
            self.added
                .range::<str, _>(from)
                .take_while(|p| p.starts_with(prefix)),
        );
        out.sort_unstable();
        out.dedup();
        out
    }

    pub(crate) fn executable(&self, path: &str) -> bool {
        self.made_executable.contains(path) || self.listing.get(path).is_some_and(|f| f.executable)
    }

    /// Every path, sorted.
    pub(crate) fn all(&self) -> Vec<&'a str> {
        self.starting_with("")
    }
}

/// What the tree layers found in a tree: the files its entry points name and the files those
/// name, each with the entry point, and every path a read text named (found or not). A change
/// that touches none of those paths, and adds or edits no entry point, leaves all of it as it
/// is ([`TreeReach::holds_for`]): so it can be worked out once per packed revision, at submit,
/// and the gate costs the size of the change.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeReach {
    /// Files an entry point names: the bucket and the entry point.
    pub(crate) level1: BTreeMap<String, (Bucket, String)>,
    /// Files a level-1 file names: the bucket and why.
    pub(crate) level2: BTreeMap<String, (Bucket, String)>,
    /// Every path a read text named, found in the tree or not.
    pub(crate) watched: BTreeSet<String>,
    /// Directories a `uses:` line named (it runs every file under them).
    pub(crate) watched_dirs: BTreeSet<String>,
    /// Existing directories a reached text names or changes into: the bucket and the file.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) named_dirs: BTreeMap<String, (Bucket, String)>,
}

impl TreeReach {
    /// Whether `changes` leave this as it is: no change adds, edits or deletes an entry point,
    /// a path a read text named, or a file under a directory a `uses:` line named.
    pub fn holds_for(&self, changes: &[Change<'_>]) -> bool {
        // A pattern at the root (`*.sh`) or an Nx command: any change may alter what it names.
        if self.watched_dirs.contains("") && !changes.is_empty() {
            return false;
        }
        changes.iter().all(|c| {
            let mut dirs =
                std::iter::successors(Some(c.path), |p| p.rsplit_once('/').map(|(d, _)| d));
            entry_point(c.path).is_none()
                && !self.watched.contains(c.path)
                && !dirs.any(|d| self.watched_dirs.contains(d))
        })
    }
}
