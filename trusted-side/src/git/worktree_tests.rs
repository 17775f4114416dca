//! The working tree is read only where it provably holds the blob: a hostile or merely dirty
//! working tree (edits of the same size, links in place of files or directories, a FIFO, a
//! grown file) gives git's blob, never its own bytes, and nothing hangs.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, Instant};

use super::*;
use crate::gate::test_git::git;
use crate::git::{BlobWant, Repo};

fn hash_object(dir: &Path, content: &[u8]) -> String {
    let f = dir.join("..").join("hash-me");
    std::fs::write(&f, content).unwrap();
    git(dir, &["hash-object", f.to_str().unwrap()])
}

#[test]
fn blob_ids_are_gits_own_in_sha1_and_sha256_repositories() {
    let t = tempfile::tempdir().unwrap();
    for format in ["sha1", "sha256"] {
        let dir = t.path().join(format);
        std::fs::create_dir(&dir).unwrap();
        git(&dir, &["init", "-q", &format!("--object-format={format}")]);
        for content in [
            &b""[..],
            b"hello\n",
            &[0u8, 255, 10, 13][..],
            &vec![7u8; 100_000],
        ] {
            let oid = hash_object(&dir, content);
            assert!(blob_id_is(&oid, content), "{format} {oid}");
            assert!(!blob_id_is(&oid, b"other"), "{format} {oid}");
            if oid.chars().any(|c| c.is_ascii_alphabetic()) {
                assert!(
                    !blob_id_is(&oid.to_uppercase(), content),
                    "git writes lower case"
                );
            }
            assert!(!blob_id_is(&oid[1..], content));
        }
    }
}

/// A committed repository, then its working tree changed in every way that must not be read.
fn dirty_repo(root: &Path) -> std::path::PathBuf {
    let dir = root.join("repo");
    let outside = root.join("outside");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    let files: &[(&str, &[u8])] = &[
        ("same.txt", b"unchanged\n"),
        ("edited.txt", b"original\n"),
        ("grown.txt", b"short\n"),
        ("linked.txt", b"linked content\n"),
        ("fifo.txt", b"a fifo now\n"),
        ("gone.txt", b"deleted\n"),
        ("sub/inner.txt", b"inner\n"),
        ("sub/also.txt", b"also\n"),
    ];
    for (p, c) in files {
        std::fs::write(dir.join(p), c).unwrap();
    }
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "x"]);
    std::fs::write(dir.join("edited.txt"), b"tampered\n").unwrap(); // the same size
    std::fs::write(dir.join("grown.txt"), b"short\nand more\n").unwrap();
    // A link to a file outside holding exactly the blob's bytes.
    std::fs::write(outside.join("linked.txt"), b"linked content\n").unwrap();
    std::fs::remove_file(dir.join("linked.txt")).unwrap();
    symlink(outside.join("linked.txt"), dir.join("linked.txt")).unwrap();
    std::fs::remove_file(dir.join("fifo.txt")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("fifo.txt"))
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::remove_file(dir.join("gone.txt")).unwrap();
    // A directory swapped for a link to a copy of it outside.
    std::fs::write(outside.join("sub/inner.txt"), b"inner\n").unwrap();
    std::fs::write(outside.join("sub/also.txt"), b"also\n").unwrap();
    std::fs::rename(dir.join("sub"), root.join("sub-moved")).unwrap();
    symlink(outside.join("sub"), dir.join("sub")).unwrap();
    dir
}

fn listed(dir: &Path) -> Vec<(String, String, u64)> {
    git(dir, &["ls-tree", "-r", "-l", "HEAD"])
        .lines()
        .map(|l| {
            let (meta, path) = l.split_once('\t').unwrap();
            let f: Vec<&str> = meta.split_whitespace().collect();
            (path.to_owned(), f[2].to_owned(), f[3].parse().unwrap())
        })
        .collect()
}

#[test]
fn only_a_plain_file_that_is_the_blob_is_read_from_the_working_tree() {
    let t = tempfile::tempdir().unwrap();
    let dir = dirty_repo(t.path());
    let tree = Worktree::open(&dir).expect("a working tree with openat2");
    let mut dirs = DirCache::default();
    let started = Instant::now();
    let mut read_here = Vec::new();
    for (path, oid, size) in listed(&dir) {
        let mut buf = Vec::new();
        if tree.read(&mut dirs, &path, &oid, size, &mut buf) {
            read_here.push(path);
        }
    }
    assert_eq!(read_here, vec!["same.txt"]);
    assert!(started.elapsed() < Duration::from_secs(5), "a read waited");
}

#[test]
fn a_dirty_working_tree_streams_exactly_the_committed_blobs() {
    let t = tempfile::tempdir().unwrap();
    let dir = dirty_repo(t.path());
    let wants: Vec<BlobWant> = (listed(&dir).into_iter())
        .map(|(path, oid, size)| BlobWant { oid, path, size })
        .collect();
    let expected: Vec<Vec<u8>> = (wants.iter())
        .map(|w| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(&dir)
                .args(["cat-file", "blob", &w.oid])
                .output()
                .unwrap();
            out.stdout
        })
        .collect();
    let repo = Repo::open(&dir).unwrap();
    let oids: Vec<String> = wants.iter().map(|w| w.oid.clone()).collect();
    let mut stream = repo.blobs(wants).unwrap();
    for (oid, want) in oids.iter().zip(&expected) {
        let mut buf = Vec::new();
        stream.next_blob(oid, u64::MAX, &mut buf).unwrap();
        assert_eq!(&buf, want, "{oid}");
    }
    // Asked for more than was listed: an error, not a hang.
    let mut buf = Vec::new();
    assert!(stream.next_blob(&oids[0], u64::MAX, &mut buf).is_err());
    // Over the limit: refused before anything is kept.
    let repo = Repo::open(&dir).unwrap();
    let (path, oid, size) = listed(&dir)
        .into_iter()
        .find(|l| l.0 == "same.txt")
        .unwrap();
    let mut stream = repo
        .blobs(vec![BlobWant {
            oid: oid.clone(),
            path,
            size,
        }])
        .unwrap();
    let err = stream.next_blob(&oid, size - 1, &mut buf).unwrap_err();
    assert!(err.to_string().contains("limit"), "{err}");
}

#[test]
fn a_directory_without_git_or_a_bare_repository_has_no_working_tree() {
    let t = tempfile::tempdir().unwrap();
    let dir = dirty_repo(t.path());
    assert!(Worktree::open(&t.path().join("outside")).is_none());
    let bare = t.path().join("bare.git");
    git(
        t.path(),
        &[
            "clone",
            "-q",
            "--bare",
            dir.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    assert!(Worktree::open(&bare).is_none());
    assert!(Worktree::open(&dir).is_some());
}
