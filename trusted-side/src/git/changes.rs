//! A tree's listing from an earlier tree's listing and the changes between the two trees
//! (`git diff-tree -r`), so that packing a new revision of a large tree does not list the whole
//! tree again: `diff-tree` reads only the subtrees that differ.
//!
//! Guards against: a listing that differs from what `git ls-tree -r` gives for the new tree
//! (every change `diff-tree` reports, additions, deletions, modifications and type changes of
//! files, links and submodules, is applied, a submodule's too when `.gitmodules` says to ignore
//! it; a change to a path the earlier listing lacks, or an addition of one it has, is an error
//! and the caller lists the tree whole; the result is in `ls-tree`'s order, bytewise by path:
//! `tests::the_patched_listing_equals_ls_tree`), and a record git could not have written (an
//! error, never a guess).

use anyhow::{bail, Result};

use super::{is_full_oid, well_known, Repo, TreeEntry};

/// One path that differs between two trees: its entry in the new tree, `None` if deleted.
#[derive(Debug, Clone)]
pub struct TreeChange {
    /// Path bytes as stored in the tree.
    pub path: Vec<u8>,
    /// The new entry (size 0: fill it with [`Repo::fill_sizes`]).
    pub new: Option<TreeEntry>,
    /// Whether the path is new in the new tree.
    pub added: bool,
    /// Whether the path is gone from the new tree.
    pub deleted: bool,
}

impl Repo {
    /// The paths that differ between the trees `old` and `new` (full ids), in `ls-tree -r`
    /// order.
    pub fn tree_changes(&self, old: &str, new: &str) -> Result<Vec<TreeChange>> {
        if !is_full_oid(old) || !is_full_oid(new) {
            bail!("git diff-tree: not a full object id");
        }
        let out = (self.git)
            .run(
                &[
                    "diff-tree",
                    "-r",
                    "-z",
                    "--raw",
                    "--no-renames",
                    "--no-abbrev",
                    // Else a `.gitmodules` entry with `ignore = all` hides its gitlink's
                    // addition, deletion or move from the changes.
                    "--ignore-submodules=none",
                    "--end-of-options",
                    old,
                    new,
                ],
                None,
            )
            .map_err(|e| anyhow::anyhow!("git diff-tree: {e}"))?;
        parse(&out)
    }
}

/// Parses `diff-tree -r -z --raw` output: `:<old mode> <new mode> <old id> <new id> <status>`
/// NUL `<path>` NUL, per path.
fn parse(out: &[u8]) -> Result<Vec<TreeChange>> {
    let malformed = || anyhow::anyhow!("git diff-tree: malformed record");
    let mut fields = out.split(|b| *b == 0);
    let mut changes = Vec::new();
    while let Some(meta) = fields.next() {
        if meta.is_empty() {
            continue;
        }
        let path = fields
            .next()
            .filter(|p| !p.is_empty())
            .ok_or_else(malformed)?;
        let meta = std::str::from_utf8(meta).map_err(|_| malformed())?;
        let meta = meta.strip_prefix(':').ok_or_else(malformed)?;
        let parts: Vec<&str> = meta.split(' ').collect();
        let [_, mode, _, oid, status] = parts.as_slice() else {
            return Err(malformed());
        };
        let new = match *status {
            "D" => None,
            "A" | "M" | "T" => {
                if !is_full_oid(oid) {
                    return Err(malformed());
                }
                let kind = match *mode {
                    "160000" => "commit",
                    "040000" => "tree",
                    _ => "blob",
                };
                Some(TreeEntry {
                    mode: well_known(mode),
                    kind: well_known(kind),
                    oid: (*oid).to_owned(),
                    size: 0,
                    path: path.to_vec(),
                })
            }
            other => bail!("git diff-tree: unexpected status {other:?}"),
        };
        changes.push(TreeChange {
            path: path.to_vec(),
            new,
            added: *status == "A",
            deleted: *status == "D",
        });
    }
    Ok(changes)
}

/// The listing of the new tree: `old` (the earlier tree's whole listing, in `ls-tree` order)
/// with `changes` applied. An error if a change does not fit `old` (a path changed or deleted
/// that it lacks, or added that it has): the caller then lists the new tree whole.
pub fn apply_changes(old: Vec<TreeEntry>, mut changes: Vec<TreeChange>) -> Result<Vec<TreeEntry>> {
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    let mut out = Vec::with_capacity(old.len() + changes.len());
    let mut old = old.into_iter().peekable();
    for c in changes {
        while let Some(e) = old.next_if(|e| e.path < c.path) {
            out.push(e);
        }
        let here = old.next_if(|e| e.path == c.path);
        match (here, c.new) {
            (Some(_), Some(new)) if !c.added && !c.deleted => out.push(new),
            (Some(_), None) if c.deleted => {}
            (None, Some(new)) if c.added && (new.kind == "blob" || new.kind == "commit") => {
                out.push(new)
            }
            _ => bail!(
                "{}: the earlier listing does not match the changes",
                String::from_utf8_lossy(&c.path)
            ),
        }
    }
    out.extend(old);
    if out.windows(2).any(|w| w[0].path >= w[1].path) {
        bail!("the patched listing is out of order");
    }
    Ok(out)
}

/// The listing's paths are strictly ascending (`ls-tree -r` order); checked by the caller that
/// stores one for [`apply_changes`].
pub fn is_sorted(listing: &[TreeEntry]) -> bool {
    listing.windows(2).all(|w| w[0].path < w[1].path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    fn key(l: &[TreeEntry]) -> Vec<(Vec<u8>, String, String, String)> {
        l.iter()
            .map(|e| {
                (
                    e.path.clone(),
                    e.mode.to_string(),
                    e.kind.to_string(),
                    e.oid.clone(),
                )
            })
            .collect()
    }

    fn write(dir: &Path, path: &str, text: &str) {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn the_patched_listing_equals_ls_tree() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        git(d, &["init", "-q", "-b", "main"]);
        for p in [
            "a.txt", "a/b.txt", "a-b", "a0/c", "dir/x", "dir/y/z", "gone/1", "f",
        ] {
            write(d, p, p);
        }
        // The repository asks git to ignore its submodules' changes: the listing must not.
        write(
            d,
            ".gitmodules",
            "[submodule \"m\"]\n\tpath = mod\n\turl = ./m\n\tignore = all\n\
             [submodule \"s\"]\n\tpath = sub/mod\n\turl = ./s\n\tignore = all\n",
        );
        std::os::unix::fs::symlink("a.txt", d.join("link")).unwrap();
        git(d, &["add", "-A"]);
        // A submodule entry (a gitlink), as a tree holds one.
        let sub = "1111111111111111111111111111111111111111";
        git(
            d,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{sub},mod"),
            ],
        );
        git(d, &["commit", "-q", "-m", "one"]);
        let old_tree = git(d, &["rev-parse", "HEAD^{tree}"]);

        // Modified, added (beside and inside directories), deleted (a whole directory), a
        // file that becomes a directory and a directory that becomes a file, a file that
        // becomes a link, an executable bit, a submodule moved.
        write(d, "a/b.txt", "changed");
        write(d, "a.b", "new");
        write(d, "a/new/deep.txt", "new");
        std::fs::remove_dir_all(d.join("gone")).unwrap();
        std::fs::remove_file(d.join("f")).unwrap();
        write(d, "f/inside", "now a directory");
        std::fs::remove_dir_all(d.join("dir/y")).unwrap();
        write(d, "dir/y", "now a file");
        std::fs::remove_file(d.join("a-b")).unwrap();
        std::os::unix::fs::symlink("a.b", d.join("a-b")).unwrap();
        let x = d.join("dir/x");
        std::fs::set_permissions(&x, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        // (`add -A` drops the gitlink `mod`: no directory holds it.)
        git(d, &["add", "-A"]);
        git(
            d,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{sub},sub/mod"),
            ],
        );
        git(d, &["commit", "-q", "-m", "two"]);
        let new_tree = git(d, &["rev-parse", "HEAD^{tree}"]);

        let repo = Repo::open(d).unwrap();
        let old = repo.list_tree_unsized("HEAD~1").unwrap();
        let want = repo.list_tree_unsized("HEAD").unwrap();
        assert!(is_sorted(&old) && is_sorted(&want));
        let changes = repo.tree_changes(&old_tree, &new_tree).unwrap();
        assert!(changes.len() >= 10, "{changes:?}");
        let got = apply_changes(old.clone(), changes.clone()).unwrap();
        assert_eq!(key(&got), key(&want));

        // Changes that do not fit the listing are refused, not guessed: a deletion of a path
        // it lacks, an addition of one it has.
        let mut short = old.clone();
        short.retain(|e| e.path != b"gone/1");
        assert!(apply_changes(short, changes.clone()).is_err());
        let backwards = repo.tree_changes(&new_tree, &old_tree).unwrap();
        assert!(apply_changes(old.clone(), backwards.clone()).is_err());
        // Applied to the right listing, the reverse changes give the old tree back.
        assert_eq!(key(&apply_changes(want, backwards).unwrap()), key(&old));
    }

    #[test]
    fn a_malformed_record_is_an_error() {
        for out in [
            &b":100644 100644 abc def M\0p\0"[..],
            b":100644 100644 1111111111111111111111111111111111111111 2222222222222222222222222222222222222222 X\0p\0",
            b":100644 100644 1111111111111111111111111111111111111111 2222222222222222222222222222222222222222 M\0",
            b"100644 100644 1111111111111111111111111111111111111111 2222222222222222222222222222222222222222 M\0p\0",
        ] {
            assert!(parse(out).is_err(), "{}", String::from_utf8_lossy(out));
        }
        let ok = parse(b":000000 100755 0000000000000000000000000000000000000000 2222222222222222222222222222222222222222 A\0x/y\0").unwrap();
        assert_eq!(ok.len(), 1);
        assert_eq!(ok[0].new.as_ref().unwrap().mode, "100755");
    }
}
