//! Tests of the pack cache's listing of a new revision (`pack/listing.rs`, `git/changes.rs`):
//! the entry's listing patched with `git diff-tree` selects as a whole listing would, and a
//! cache-on pack gives the cache-off pack's bytes, also for trees git does not write.

use std::path::Path;

use super::tests::{commit, pack, read_back, workspace, Pack, Packed};
use crate::gate::test_git::git;

/// A new revision's listing is the entry's tree's with the changes applied (`git diff-tree`),
/// and the selection runs on it as on a tree listed whole: a new path whose name collides with
/// one packed before is left out, a moved file is packed at its new path, a new deny-listed file
/// is left out, and the bundle is the one a pack with the cache off makes.
#[test]
fn a_new_revision_listed_from_the_entry_selects_as_a_whole_listing() {
    let (_t, r, home, out) = workspace(24);
    let first = pack(&r, Some(&home), &out);
    std::fs::write(r.join("src/M003.rs"), "pub fn shadow() {}\n").unwrap(); // collides
    std::fs::create_dir_all(r.join("src/moved")).unwrap();
    std::fs::rename(r.join("src/m004.rs"), r.join("src/moved/m004.rs")).unwrap();
    std::fs::write(r.join("src/new.rs"), "pub fn new() {}\n").unwrap();
    std::fs::write(r.join("deploy.pem"), "-----BEGIN NOTHING-----\n").unwrap();
    std::fs::remove_file(r.join("src/m010.rs")).unwrap();
    commit(&r);
    let second = pack(&r, Some(&home), &out);
    let off = pack(&r, None, &out);
    assert_eq!(second.bytes, off.bytes);
    assert_eq!(second.summary.skipped, off.summary.skipped);
    assert_eq!(second.summary.skipped.get("pack.name-collision"), Some(&1));
    assert_eq!(second.summary.skipped.get("deny:*.pem"), Some(&1));
    let members = read_back(&second.bytes);
    // The first in listing order stays (`M` sorts before `m`), as with the cache off.
    assert!(members.contains_key("files/src/M003.rs"));
    assert!(!members.contains_key("files/src/m003.rs"));
    assert!(members.contains_key("files/src/moved/m004.rs"));
    assert!(!members.contains_key("files/src/m010.rs"));
    assert!(members.contains_key("files/src/new.rs"));
    // Two new files (`M003.rs`, `new.rs`; the moved one is still one), one deleted, one left
    // out by the collision.
    assert_eq!(second.summary.files, first.summary.files);
    // The next revision starts from this one's entry, which keeps the left-out entries too.
    std::fs::remove_file(r.join("deploy.pem")).unwrap();
    std::fs::write(r.join("src/new.rs"), "pub fn newer() {}\n").unwrap();
    commit(&r);
    let third = pack(&r, Some(&home), &out);
    assert_eq!(third.bytes, pack(&r, None, &out).bytes);
    assert_eq!(third.summary.skipped.get("deny:*.pem"), None);
    assert_eq!(third.summary.skipped.get("pack.name-collision"), Some(&1));
    assert_eq!(
        third.summary.cache.files_scanned, 1,
        "{:?}",
        third.summary.cache
    );
}

/// Commits on top of `HEAD` a root tree holding exactly `entries` (mode, name, blob or tree
/// id), in this order, as `git hash-object --literally` stores it: a tree git would never
/// write (out of order, or a name twice), as an attacker can push one.
fn commit_literal_tree(r: &Path, entries: &[(&str, &str, String)]) {
    let mut raw = Vec::new();
    for (mode, name, oid) in entries {
        raw.extend_from_slice(format!("{mode} {name}\0").as_bytes());
        raw.extend(
            (0..oid.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&oid[i..i + 2], 16).unwrap()),
        );
    }
    let file = r.join(".git/literal-tree");
    std::fs::write(&file, raw).unwrap();
    let path = file.to_str().unwrap();
    let tree = git(r, &["hash-object", "-t", "tree", "-w", "--literally", path]);
    let commit = git(r, &["commit-tree", &tree, "-p", "HEAD", "-m", "literal"]);
    git(r, &["update-ref", "HEAD", &commit]);
}

/// A blob of `text` in `r`'s object store.
fn blob(r: &Path, text: &str) -> String {
    let file = r.join(".git/literal-blob");
    std::fs::write(&file, text).unwrap();
    git(r, &["hash-object", "-w", file.to_str().unwrap()])
}

/// A tree that names a path twice: with the cache, both copies were known (the path was kept
/// before), so no collision check ran and the bundle carried the second copy, which a pack with
/// the cache off leaves out.
#[test]
fn a_path_named_twice_in_a_tree_is_packed_once_as_with_the_cache_off() {
    let (_t, r, home, out) = workspace(8);
    pack(&r, Some(&home), &out);
    let readme = git(&r, &["rev-parse", "HEAD:README.md"]);
    let src = git(&r, &["rev-parse", "HEAD:src"]);
    let second = blob(&r, "# the second copy\n");
    commit_literal_tree(
        &r,
        &[
            ("100644", "README.md", readme),
            ("100644", "README.md", second),
            ("40000", "src", src),
        ],
    );
    let off = Pack::new(None).run(&r, &out).unwrap();
    let on = Pack::new(Some(&home)).run(&r, &out).unwrap();
    assert_eq!(off.summary.skipped.get("pack.name-collision"), Some(&1));
    assert_eq!(on.summary.skipped, off.summary.skipped);
    assert_eq!(on.bytes, off.bytes);
}

/// A tree whose entries are out of order: `ls-tree` lists them as stored, the listing patched
/// from the entry in path order, so the two kept a different one of two colliding names.
#[test]
fn a_tree_out_of_order_keeps_the_same_colliding_name_as_with_the_cache_off() {
    let (_t, r, home, out) = workspace(8);
    pack(&r, Some(&home), &out);
    let readme = git(&r, &["rev-parse", "HEAD:README.md"]);
    let src = git(&r, &["rev-parse", "HEAD:src"]);
    let lower = blob(&r, "# lower case, listed first\n");
    commit_literal_tree(
        &r,
        &[
            ("100644", "readme.md", lower),
            ("100644", "README.md", readme),
            ("40000", "src", src),
        ],
    );
    let off = Pack::new(None).run(&r, &out).unwrap();
    let on = Pack::new(Some(&home)).run(&r, &out).unwrap();
    assert_eq!(off.summary.skipped.get("pack.name-collision"), Some(&1));
    assert_eq!(on.summary.skipped, off.summary.skipped);
    assert_eq!(
        read_back(&on.bytes).keys().collect::<Vec<_>>(),
        read_back(&off.bytes).keys().collect::<Vec<_>>()
    );
    assert_eq!(on.bytes, off.bytes);
    // The next revision, a tree git writes, listed from that tree's entry: diff-tree walks the
    // one out of order, so its changes do not fit the entry's listing, and the tree is listed
    // whole.
    let readme = git(&r, &["rev-parse", "HEAD~1:README.md"]);
    let src = git(&r, &["rev-parse", "HEAD~1:src"]);
    commit_literal_tree(
        &r,
        &[("100644", "README.md", readme), ("40000", "src", src)],
    );
    pack_as_with_the_cache_off(&r, &home, &out);
}

/// Packs `HEAD` with the cache, then with it off, and asserts the same bundle.
fn pack_as_with_the_cache_off(r: &Path, home: &Path, out: &Path) -> Packed {
    let on = pack(r, Some(home), out);
    let off = pack(r, None, out);
    assert_eq!(on.summary.skipped, off.summary.skipped);
    assert_eq!(on.bytes, off.bytes);
    on
}

/// Files packed before that become a link, a submodule, too large or executable, a name with a
/// newline and one not UTF-8, a secret added: listed from the entry (forwards, and backwards to
/// an older revision), each pack is the one the cache off makes.
#[test]
fn known_paths_that_change_kind_or_size_are_selected_as_with_the_cache_off_in_any_order() {
    use std::os::unix::ffi::OsStrExt;
    let (_t, r, home, out) = workspace(12);
    let non_utf8 = std::ffi::OsStr::from_bytes(b"src/caf\xe9.rs");
    std::fs::write(r.join(non_utf8), "x\n").unwrap();
    std::fs::write(r.join("src/odd\nname.rs"), "one\n").unwrap();
    commit(&r);
    let a = git(&r, &["rev-parse", "HEAD"]);

    std::fs::remove_file(r.join("src/m001.rs")).unwrap();
    std::os::unix::fs::symlink("m000.rs", r.join("src/m001.rs")).unwrap();
    std::fs::write(r.join("src/m003.rs"), "// large\n".repeat(200_000)).unwrap();
    let m004 = r.join("src/m004.rs");
    std::fs::set_permissions(&m004, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(r.join("src/odd\nname.rs"), "two\n").unwrap();
    std::fs::remove_file(r.join(non_utf8)).unwrap();
    std::fs::write(
        r.join("src/added.py"),
        "TOKEN = \"ghp_Zq4Lm8Tv2Rx6Wc0Yp3Jk7Hb1Nd5Gs9Fa2Qe4\"\n",
    )
    .unwrap();
    std::fs::remove_file(r.join("src/m002.rs")).unwrap();
    git(&r, &["add", "-A"]);
    let sub = "1111111111111111111111111111111111111111";
    git(
        &r,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{sub},src/m002.rs"),
        ],
    );
    git(&r, &["commit", "-q", "-m", "b"]);
    let b = git(&r, &["rev-parse", "HEAD"]);

    // Back: the link and the submodule are files again, the large file small.
    git(&r, &["rm", "-q", "--cached", "src/m001.rs", "src/m002.rs"]);
    std::fs::remove_file(r.join("src/m001.rs")).unwrap();
    let _ = std::fs::remove_dir(r.join("src/m002.rs"));
    std::fs::write(r.join("src/m001.rs"), "pub fn one() {}\n").unwrap();
    std::fs::write(r.join("src/m002.rs"), "pub fn two() {}\n").unwrap();
    std::fs::write(r.join("src/m003.rs"), "pub fn three() {}\n").unwrap();
    commit(&r);

    git(&r, &["checkout", "-q", "--detach", &a]);
    pack_as_with_the_cache_off(&r, &home, &out);
    git(&r, &["checkout", "-q", "--detach", "main"]);
    let c = pack_as_with_the_cache_off(&r, &home, &out);
    assert!(c.summary.cache.files_reused > 0, "{:?}", c.summary.cache);
    // An older revision after a newer one: listed from the newest entry, backwards.
    git(&r, &["checkout", "-q", "--detach", &b]);
    let b = pack_as_with_the_cache_off(&r, &home, &out);
    assert!(b.summary.cache.files_reused > 0, "{:?}", b.summary.cache);
    for rule in [
        "pack.symlink",
        "pack.submodule",
        "pack.too-large",
        "pack.bad-path",
    ] {
        assert_eq!(
            b.summary.skipped.get(rule),
            Some(&1),
            "{rule}: {:?}",
            b.summary.skipped
        );
    }
    let members = read_back(&b.bytes);
    let added = String::from_utf8_lossy(&members["files/src/added.py"]).into_owned();
    assert!(!added.contains("ghp_"), "{added}");
    assert!(!members.contains_key("files/src/m001.rs"));
}

/// A file entry naming a tree object (a tree git would not write): `ls-tree -l` gives that
/// object's size, so a pack with the cache off leaves a deny-listed one out and succeeds; the
/// cache's sizes, asked of `cat-file` for blobs only, refused the pack.
#[test]
fn a_file_entry_naming_a_tree_object_is_left_out_as_with_the_cache_off() {
    let (_t, r, home, out) = workspace(8);
    pack(&r, Some(&home), &out);
    let readme = git(&r, &["rev-parse", "HEAD:README.md"]);
    let src = git(&r, &["rev-parse", "HEAD:src"]);
    commit_literal_tree(
        &r,
        &[
            ("100644", ".env", src.clone()),
            ("100644", "README.md", readme),
            ("40000", "src", src),
        ],
    );
    let on = pack_as_with_the_cache_off(&r, &home, &out);
    assert_eq!(on.summary.skipped.get("deny:.env*"), Some(&1));
}
