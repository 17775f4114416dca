//! The worker's cleanup against a hostile tree (issue 38, finding 3): a generator builds a
//! chain of 5,000 directories in its private tmp; the worker, with its open-files limit at
//! 1,024 (a recursive removal needs one descriptor per level, a removal by path fails past
//! `PATH_MAX`), still removes the whole run directory, in both sandboxes.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use airlock_tests::*;

use super::worker::Env;

/// Runs the worker under `ulimit -n 1024` with the deep-tree generator, the sandbox forced
/// to `force` when given; asserts the job finished and no run directory is left.
fn deep_tree_leaves_no_run_directory(force: Option<&str>) {
    let env = Env::small();
    let job = env.submit(&["--wall-clock-secs", "300"]);
    let worker = env.worker(&job, &[], &[&env.gen("deep_tree.py")]);
    let mut limited = cmd(std::path::Path::new("sh"));
    limited
        .args(["-c", "ulimit -n 1024 && exec \"$@\"", "sh"])
        .arg(worker.get_program())
        .args(worker.get_args());
    if let Some(f) = force {
        limited.env("AIRLOCK_SANDBOX_FORCE", f);
    }
    let out = run(&mut limited);
    if needs_sandbox_skip(&out) {
        return;
    }
    assert!(out.status.success(), "worker: {}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("cannot remove run directory"), "{err}");
    assert!(env.run_dirs().is_empty(), "left: {:?}", env.run_dirs());
    let art = env.artifact(&job);
    assert!(
        art.patch().contains("+edited before the deep tree"),
        "{}",
        art.patch()
    );
    assert!(
        contains(art.log(), b"airlock-deep: built 5000 levels"),
        "{}",
        String::from_utf8_lossy(art.log())
    );
}

#[test]
fn a_5000_deep_tree_with_1024_open_files_leaves_no_run_directory() {
    deep_tree_leaves_no_run_directory(None);
}

#[test]
fn a_5000_deep_tree_with_1024_open_files_leaves_no_run_directory_in_the_fallback() {
    deep_tree_leaves_no_run_directory(Some("landlock+seccomp"));
}
