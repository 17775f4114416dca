use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use airlock_sandbox::Mode;

use crate::support::*;

crate::in_both_modes!(
    blocks_write_to_host_tmp,
    blocks_write_to_home,
    blocks_write_to_token_file,
    blocks_read_of_token_file,
    blocks_write_to_worker_binary,
    blocks_write_through_symlink_planted_in_workdir,
    blocks_move_out_of_workdir,
    allows_write_in_workdir_and_private_tmp,
);

/// A file anyone could write by permissions alone (0666), so only the sandbox stands in
/// the way.
fn victim(path: &Path, content: &str) {
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).unwrap();
}

/// A directory anyone could write by permissions alone (0777).
fn open_dir(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
}

/// Probe: try to append to an existing file and to create a new one in `dir`.
fn write_probe(existing: &Path, dir: &Path, new_name: &str) -> String {
    format!(
        "echo pwned >> '{}' && echo APPENDED; echo pwned > '{}/{new_name}' && echo CREATED; \
         [ -e '{}/{new_name}' ] && exit 0; grep -q pwned '{}' && exit 0; exit 3",
        existing.display(),
        dir.display(),
        dir.display(),
        existing.display()
    )
}

fn assert_untouched(existing: &Path, content: &str, created: &Path) {
    assert_eq!(
        std::fs::read_to_string(existing).unwrap(),
        content,
        "{} changed",
        existing.display()
    );
    assert!(!created.exists(), "{} was created", created.display());
}

fn blocks_write_to_host_tmp(mode: Mode) {
    let f = Fixture::new();
    let n = nonce();
    // The real host /tmp (mode 1777: the sandbox identity could create files there).
    let existing = PathBuf::from(format!("/tmp/airlock-sandbox-victim-{n}"));
    victim(&existing, "original\n");
    let new_name = format!("airlock-sandbox-probe-{n}");
    let log = f.expect_blocked(
        &f.sh(mode, &write_probe(&existing, Path::new("/tmp"), &new_name)),
        "write to host /tmp",
    );
    let created = PathBuf::from(format!("/tmp/{new_name}"));
    let untouched =
        std::panic::catch_unwind(|| assert_untouched(&existing, "original\n", &created));
    let _ = std::fs::remove_file(&existing);
    let _ = std::fs::remove_file(&created);
    assert!(untouched.is_ok(), "{log}");
}

fn blocks_write_to_home(mode: Mode) {
    let f = Fixture::new();
    // The worker's real $HOME, and a stand-in home anyone could write to.
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()));
    let n = nonce();
    let existing = home.join(format!(".airlock-sandbox-victim-{n}"));
    victim(&existing, "original\n");
    let new_name = format!(".airlock-sandbox-probe-{n}");
    f.expect_blocked(
        &f.sh(mode, &write_probe(&existing, &home, &new_name)),
        "write to $HOME",
    );
    let created = home.join(&new_name);
    let untouched =
        std::panic::catch_unwind(|| assert_untouched(&existing, "original\n", &created));
    let _ = std::fs::remove_file(&existing);
    let _ = std::fs::remove_file(&created);
    assert!(untouched.is_ok());

    let open_home = f.path("home");
    open_dir(&open_home);
    let bashrc = open_home.join(".bashrc");
    victim(&bashrc, "# original\n");
    f.expect_blocked(
        &f.sh(mode, &write_probe(&bashrc, &open_home, ".profile")),
        "write to a world-writable home",
    );
    assert_untouched(&bashrc, "# original\n", &open_home.join(".profile"));
}

fn token_fixture(f: &Fixture) -> PathBuf {
    let token = f.path("job.token");
    victim(&token, "v4.public.secret-job-token");
    token
}

fn blocks_write_to_token_file(mode: Mode) {
    let f = Fixture::new();
    let token = token_fixture(&f);
    let mut spec = f.sh(
        mode,
        &format!("echo forged > '{}' || exit 3; exit 0", token.display()),
    );
    spec.secret_paths = vec![token.clone()];
    f.expect_blocked(&spec, "write to the token file");
    assert_eq!(
        std::fs::read_to_string(&token).unwrap(),
        "v4.public.secret-job-token"
    );
}

fn blocks_read_of_token_file(mode: Mode) {
    let f = Fixture::new();
    let token = token_fixture(&f);
    let mut spec = f.sh(
        mode,
        &format!(
            "cat '{}' > stolen.txt || exit 3; ls -la '{}'; exit 0",
            token.display(),
            f.dir.path().display()
        ),
    );
    spec.secret_paths = vec![token];
    let log = f.expect_blocked(&spec, "read of the token file");
    assert!(!log.contains("secret-job-token"), "{log}");
    let stolen = std::fs::read_to_string(f.work.join("stolen.txt")).unwrap_or_default();
    assert!(!stolen.contains("secret-job-token"), "{stolen}");
}

fn blocks_write_to_worker_binary(mode: Mode) {
    let f = Fixture::new();
    // A copy of the host binary standing for the worker's own, writable by anyone.
    let bin = f.path("airlock-worker");
    std::fs::copy(host(), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o777)).unwrap();
    let before = std::fs::read(&bin).unwrap();
    let script = format!(
        "printf '#!/bin/sh\\necho owned\\n' > '{0}' && exit 0; printf x >> '{0}' && exit 0; \
         cp /bin/true '{0}' && exit 0; exit 3",
        bin.display()
    );
    let mut spec = f.sh(mode, &script);
    spec.secret_paths = vec![bin.clone()];
    f.expect_blocked(&spec, "write to the worker binary");
    assert!(
        std::fs::read(&bin).unwrap() == before,
        "the worker binary changed"
    );
}

/// The generator plants a symlink in its workdir pointing outside, then writes through it.
fn blocks_write_through_symlink_planted_in_workdir(mode: Mode) {
    let f = Fixture::new();
    let target = f.path("outside.txt");
    victim(&target, "original\n");
    let script = format!(
        "ln -s '{}' link && echo pwned > link && exit 0; exit 3",
        target.display()
    );
    f.expect_blocked(&f.sh(mode, &script), "write through a planted symlink");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "original\n");
}

/// Renaming a workdir file into a directory outside (a write there) is refused.
fn blocks_move_out_of_workdir(mode: Mode) {
    let f = Fixture::new();
    let outside = f.path("drop");
    open_dir(&outside);
    let script = format!(
        "echo data > f && mv f '{}/f' && exit 0; exit 3",
        outside.display()
    );
    f.expect_blocked(&f.sh(mode, &script), "move out of the workdir");
    assert!(!outside.join("f").exists());
}

fn allows_write_in_workdir_and_private_tmp(mode: Mode) {
    let f = Fixture::new();
    let script =
        "set -e; mkdir -p sub/dir; echo hello > sub/dir/out.txt; echo tmp > \"$TMPDIR/t\"; \
                  mv sub/dir/out.txt moved.txt; rm -r sub; cat \"$TMPDIR/t\"";
    let (o, log) = f.run(&f.sh(mode, script)).unwrap();
    assert!(o.status.success(), "{log}");
    assert_eq!(log, "tmp\n");
    assert_eq!(
        std::fs::read_to_string(f.work.join("moved.txt")).unwrap(),
        "hello\n"
    );
    assert!(!f.work.join("sub").exists());
}
