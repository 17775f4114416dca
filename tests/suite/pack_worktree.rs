use std::os::unix::fs::symlink;
use std::path::Path;

use airlock_tests::*;

/// `airlock pack --json` of `repo` with the cache off: its summary and its bundle's bytes.
fn pack(home: &Path, repo: &Path, out: &Path) -> (serde_json::Value, Vec<u8>) {
    let prompt = home.parent().unwrap().join("prompt.txt");
    std::fs::write(&prompt, "Add a docstring to every public function.\n").unwrap();
    let done = run(cmd(&bin("airlock"))
        .env("AIRLOCK_PACK_CACHE", "off")
        .arg("--home")
        .arg(home)
        .args(["pack", "--redact", "--json", "--repo"])
        .arg(repo)
        .arg("--prompt-file")
        .arg(&prompt)
        .arg("--out")
        .arg(out));
    assert!(done.status.success(), "{}", show(&done));
    let summary = serde_json::from_slice(&done.stdout).unwrap();
    (summary, std::fs::read(out.join("bundle.tar.gz")).unwrap())
}

/// A checked-out revision whose working tree a hostile or careless hand changed after the
/// commit: an edit of the same size, a file swapped for a link to an outside file holding a
/// secret, a directory swapped for a link, a FIFO, a deleted file. The pack reads what the
/// working tree holds only where it is the committed blob, so its bundle is byte for byte the
/// bundle of a bare clone (no working tree at all), with the committed content and nothing of
/// the edits or the links' targets.
#[test]
fn a_pack_of_a_dirty_working_tree_is_the_pack_of_the_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = tmp.path().join("repo");
    let outside = tmp.path().join("outside");
    make_repo(
        &repo,
        &[
            ("src/lib.rs", b"pub fn committed() {}\n" as &[u8]),
            ("src/same.rs", b"pub fn same() {}\n"),
            ("conf/app.toml", b"name = \"app\"\n"),
            ("conf/more.toml", b"more = 1\n"),
            ("notes.txt", b"committed notes\n"),
            ("pipe.txt", b"was a file\n"),
        ],
    );
    let key = "AKIAZ5KQ3WXN7YDR2FHT";
    write_files(
        &repo,
        &[("src/lib.rs", b"pub fn WORKTREE1() {}\n" as &[u8])], // the same size
    );
    write_files(
        &outside,
        &[
            ("notes.txt", format!("aws = \"{key}\"\n").as_bytes()),
            ("conf/app.toml", b"name = \"app\"\n"),
            ("conf/more.toml", b"more = 1\n"),
        ],
    );
    std::fs::remove_file(repo.join("notes.txt")).unwrap();
    symlink(outside.join("notes.txt"), repo.join("notes.txt")).unwrap();
    std::fs::remove_dir_all(repo.join("conf")).unwrap();
    symlink(outside.join("conf"), repo.join("conf")).unwrap();
    std::fs::remove_file(repo.join("pipe.txt")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(repo.join("pipe.txt"))
        .status()
        .unwrap();
    assert!(made.success());

    // Named as the repository is: the manifest records the directory's name.
    let bare = tmp.path().join("bare/repo");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--bare",
            repo.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let (summary, from_tree) = pack(&home, &repo, &tmp.path().join("a"));
    let (_, from_bare) = pack(&home, &bare, &tmp.path().join("b"));
    assert_eq!(summary["files"], 6, "{summary}");
    assert!(
        from_tree == from_bare,
        "the working tree changed the bundle"
    );
    let raw = gunzip(&tmp.path().join("a/bundle.tar.gz"));
    assert!(contains(&raw, b"pub fn committed() {}"));
    assert!(contains(&raw, b"committed notes"));
    assert!(!contains(&raw, b"WORKTREE1") && !contains(&raw, key.as_bytes()));
    // The working tree is as it was left.
    assert!(std::fs::symlink_metadata(repo.join("conf"))
        .unwrap()
        .is_symlink());
}

/// `scan --rev` reads through the same stream: it reports the secret the revision holds in a
/// file the working tree has since cleaned (an edit of the same size), and not the one only a
/// working-tree edit holds.
#[test]
fn scan_of_a_revision_reports_the_committed_secret_not_the_working_trees() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = tmp.path().join("repo");
    let secret = b"aws = \"AKIAZ5KQ3WXN7YDR2FHT\"\n" as &[u8];
    let clean = b"aws = \"nothing-here-at-all!\"\n" as &[u8];
    assert_eq!(secret.len(), clean.len());
    make_repo(
        &repo,
        &[
            ("committed.txt", secret),
            ("edited.txt", clean),
            ("same.txt", clean),
        ],
    );
    write_files(&repo, &[("committed.txt", clean), ("edited.txt", secret)]);
    let out = run(cmd(&bin("airlock"))
        .arg("--home")
        .arg(&home)
        .args(["scan", "--json", "--rev", "HEAD"])
        .arg(&repo));
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let paths: Vec<&str> = (report["findings"].as_array().unwrap().iter())
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec!["committed.txt"], "{report}");
    assert_eq!(report["files_scanned"], 3, "{report}");
}
