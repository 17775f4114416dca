//! The tree's entries a pack selects from: listed whole (`git ls-tree -r`), or, when the pack
//! cache holds an entry of an earlier tree with the same rules and options, that tree's
//! listing with the changes between the two trees applied (`git diff-tree -r`, which reads only
//! the subtrees that differ), or nothing to list when the cache holds this very tree.
//!
//! Guards against: a listing other than the tree's own (the changes are taken against the tree
//! the loaded entry holds, checked, and any mismatch lists the tree whole:
//! `git/changes.rs`), and a size taken from another blob (a changed entry's size is git's).

use anyhow::Result;

use super::cache::Base;
use crate::git::{apply_changes, Repo, TreeChange, TreeEntry};

/// What the listing thread found.
pub(super) enum Listing {
    /// The whole tree, listed with its blobs' sizes (no cache).
    Sized(Vec<TreeEntry>),
    /// The whole tree, listed without sizes (the cache knows most).
    Unsized(Vec<TreeEntry>),
    /// The changes from tree `from` (changed entries sized).
    Changes {
        from: String,
        changes: Vec<TreeChange>,
    },
    /// Nothing listed: the cache holds this tree.
    Same,
}

/// Lists the tree of `revision` (`tree`) for a pack; `cached`: a pack cache is on; `from`: the
/// tree of the cache entry the pack will most likely start from.
pub(super) fn start(
    repo: &Repo,
    (revision, tree): (&str, &str),
    cached: bool,
    from: Option<&str>,
) -> Result<Listing> {
    match from {
        _ if !cached => repo.list_tree(revision).map(Listing::Sized),
        Some(from) if from == tree => Ok(Listing::Same),
        Some(from) => match sized_changes(repo, from, tree) {
            Ok(changes) => Ok(Listing::Changes {
                from: from.to_owned(),
                changes,
            }),
            Err(e) => {
                tracing::debug!("pack: listing the tree whole: {e:#}");
                repo.list_tree_unsized(revision).map(Listing::Unsized)
            }
        },
        None => repo.list_tree_unsized(revision).map(Listing::Unsized),
    }
}

/// The changes from `from` to `tree`, each new blob's size from git.
fn sized_changes(repo: &Repo, from: &str, tree: &str) -> Result<Vec<TreeChange>> {
    let mut changes = repo.tree_changes(from, tree)?;
    let mut news: Vec<TreeEntry> = changes.iter_mut().filter_map(|c| c.new.take()).collect();
    repo.fill_sizes(&mut news, |_| None)?;
    // Back in the same order: every change but a deletion had its entry taken.
    let mut news = news.into_iter();
    for c in changes.iter_mut().filter(|c| !c.deleted) {
        c.new = news.next();
    }
    Ok(changes)
}

/// The tree's entries, every blob sized: from what the listing thread found and the cache's
/// `base`, else listed now.
pub(super) fn entries(
    repo: &Repo,
    revision: &str,
    listing: Listing,
    base: Option<&Base>,
) -> Result<Vec<TreeEntry>> {
    let mut entries = match (listing, base) {
        (Listing::Sized(entries), _) => return Ok(entries),
        (Listing::Unsized(entries), _) => entries,
        (Listing::Changes { from, changes }, Some(b)) if b.meta.tree == from => {
            let patched = b.listing().map(|old| apply_changes(old, changes));
            match patched {
                Some(Ok(entries)) => return Ok(entries),
                Some(Err(e)) => tracing::debug!("pack: listing the tree whole: {e:#}"),
                None => {
                    tracing::debug!("pack: listing the tree whole: the entry lists a path twice")
                }
            }
            repo.list_tree_unsized(revision)?
        }
        _ => repo.list_tree_unsized(revision)?,
    };
    repo.fill_sizes(&mut entries, |e| base.and_then(|b| b.size(&e.path, &e.oid)))?;
    Ok(entries)
}
