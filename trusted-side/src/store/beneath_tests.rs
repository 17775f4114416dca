//! Links, devices, FIFOs and directories planted where the store keeps files, through both
//! directory openers (`openat2` and the `O_NOFOLLOW` walk): refused with the rule id, nothing
//! outside the root read, listed or removed.

use std::io::Read;
use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;

/// A store root and a directory outside it holding one secret file and one tarball.
fn setup() -> (tempfile::TempDir, tempfile::TempDir) {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), b"only the trusted user").unwrap();
    std::fs::write(outside.path().join("keep.tar.gz"), b"not the store's").unwrap();
    std::fs::create_dir_all(root.path().join("drop")).unwrap();
    (root, outside)
}

fn roots(dir: &Path) -> [Root; 2] {
    [
        Root::open(dir).unwrap(),
        Root::open(dir).unwrap().without_openat2(),
    ]
}

fn rule(e: BeneathError) -> &'static str {
    match e {
        BeneathError::Refused(r) => r.rule,
        BeneathError::Io { key, op, source } => panic!("{key}: {op}: {source}"),
    }
}

fn outside_intact(outside: &Path) {
    assert_eq!(
        std::fs::read(outside.join("secret")).unwrap(),
        b"only the trusted user"
    );
    assert_eq!(
        std::fs::read(outside.join("keep.tar.gz")).unwrap(),
        b"not the store's"
    );
}

#[test]
fn a_symlinked_job_directory_is_refused_for_read_list_and_delete() {
    let (root, outside) = setup();
    symlink(outside.path(), root.path().join("drop/job")).unwrap();
    for r in roots(root.path()) {
        assert_eq!(
            rule(r.open_file("drop/job/keep.tar.gz").unwrap_err()),
            "store.link"
        );
        assert_eq!(
            rule(r.open_file("drop/job/secret").unwrap_err()),
            "store.link"
        );
        assert_eq!(
            rule(r.delete("drop/job/keep.tar.gz").unwrap_err()),
            "store.link"
        );
        assert_eq!(
            rule(r.stat_file("drop/job/secret").unwrap_err()),
            "store.link"
        );
        let listing = r.list("drop/").unwrap();
        assert!(listing.files.is_empty(), "{:?}", listing.files);
        assert_eq!(listing.refused.len(), 1);
        assert_eq!(listing.refused[0].rule, "store.link");
        assert_eq!(listing.refused[0].key, "drop/job");
        // the refusal says nothing about the target
        let shown = listing.refused[0].to_string();
        assert!(
            !shown.contains(&*outside.path().to_string_lossy()),
            "{shown}"
        );
        let listing = r.list("drop/job/").unwrap();
        assert!(listing.files.is_empty());
        assert_eq!(listing.refused[0].rule, "store.link");
    }
    outside_intact(outside.path());
}

#[test]
fn a_symlinked_directory_inside_a_job_directory_is_refused() {
    let (root, outside) = setup();
    std::fs::create_dir_all(root.path().join("drop/job")).unwrap();
    std::fs::write(root.path().join("drop/job/artifact.tar.gz"), b"mine").unwrap();
    symlink(outside.path(), root.path().join("drop/job/deep")).unwrap();
    for r in roots(root.path()) {
        let listing = r.list("drop/").unwrap();
        let keys: Vec<_> = listing.files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(keys, ["drop/job/artifact.tar.gz"]);
        assert_eq!(listing.refused.len(), 1);
        assert_eq!(listing.refused[0].key, "drop/job/deep");
        assert_eq!(
            rule(r.delete("drop/job/deep/keep.tar.gz").unwrap_err()),
            "store.link"
        );
    }
    outside_intact(outside.path());
}

#[test]
fn a_symlinked_object_is_refused_and_never_read() {
    let (root, outside) = setup();
    std::fs::create_dir_all(root.path().join("drop/job")).unwrap();
    symlink(
        outside.path().join("secret"),
        root.path().join("drop/job/artifact.tar.gz"),
    )
    .unwrap();
    for r in roots(root.path()) {
        assert_eq!(
            rule(r.open_file("drop/job/artifact.tar.gz").unwrap_err()),
            "store.link"
        );
        // deleting a link is refused too (gc removes regular files only)
        assert_eq!(
            rule(r.delete("drop/job/artifact.tar.gz").unwrap_err()),
            "store.link"
        );
        let listing = r.list("drop/job/").unwrap();
        assert!(listing.files.is_empty());
        assert_eq!(listing.refused[0].rule, "store.link");
    }
    assert!(
        std::fs::symlink_metadata(root.path().join("drop/job/artifact.tar.gz"))
            .unwrap()
            .is_symlink()
    );
    outside_intact(outside.path());
}

#[test]
fn fifos_devices_and_directories_are_not_files() {
    let (root, _outside) = setup();
    let job = root.path().join("drop/job");
    std::fs::create_dir_all(job.join("artifact.dsse.json")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(job.join("artifact.tar.gz"))
        .status()
        .unwrap();
    assert!(made.success());
    // A device: /dev/null linked in is a link; a bind of a device cannot be made unprivileged,
    // so the device case is the FIFO's code path (every non-regular type is `store.not-file`).
    for r in roots(root.path()) {
        // The FIFO is refused at once: no open waits for a writer.
        assert_eq!(
            rule(r.open_file("drop/job/artifact.tar.gz").unwrap_err()),
            "store.not-file"
        );
        assert_eq!(
            rule(r.open_file("drop/job/artifact.dsse.json").unwrap_err()),
            "store.not-file"
        );
        assert_eq!(
            rule(r.delete("drop/job/artifact.tar.gz").unwrap_err()),
            "store.not-file"
        );
        let listing = r.list("drop/").unwrap();
        assert!(listing.files.is_empty());
        let rules: Vec<_> = listing
            .refused
            .iter()
            .map(|x| (x.key.as_str(), x.rule))
            .collect();
        assert_eq!(rules, [("drop/job/artifact.tar.gz", "store.not-file")]);
    }
    // A file where a directory belongs.
    std::fs::write(root.path().join("drop/other"), b"x").unwrap();
    for r in roots(root.path()) {
        assert_eq!(
            rule(r.open_file("drop/other/artifact.tar.gz").unwrap_err()),
            "store.not-file"
        );
    }
}

#[test]
fn regular_files_are_read_listed_and_deleted_and_odd_names_refused() {
    let (root, _outside) = setup();
    let job = root.path().join("drop/job");
    std::fs::create_dir_all(&job).unwrap();
    std::fs::write(job.join("artifact.tar.gz"), b"payload").unwrap();
    std::fs::write(job.join("artifact.tar.gz#1"), b"staging").unwrap();
    std::fs::write(job.join("we ird"), b"x").unwrap();
    for r in roots(root.path()) {
        let (mut f, st) = r.open_file("drop/job/artifact.tar.gz").unwrap().unwrap();
        let mut got = Vec::new();
        f.read_to_end(&mut got).unwrap();
        assert_eq!((got.as_slice(), st.st_size), (&b"payload"[..], 7));
        assert!(r.open_file("drop/job/absent").unwrap().is_none());
        assert!(r.open_file("drop/nojob/absent").unwrap().is_none());
        assert_eq!(rule(r.open_file("drop/../x").unwrap_err()), "store.name");
        let listing = r.list("").unwrap();
        let keys: Vec<_> = listing.files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(keys, ["drop/job/artifact.tar.gz"]);
        let refused: Vec<_> = listing
            .refused
            .iter()
            .map(|x| (x.key.as_str(), x.rule))
            .collect();
        assert_eq!(refused, [("drop/job/we ird", "store.name")]);
    }
    let r = Root::open(root.path()).unwrap();
    r.delete("drop/job/artifact.tar.gz").unwrap();
    r.delete("drop/job/artifact.tar.gz").unwrap();
    assert!(!job.join("artifact.tar.gz").exists());
}
