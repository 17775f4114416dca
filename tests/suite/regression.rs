//! One test per fixed defect, named `issue_<n>_<what>`: each failed before its fix.
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use airlock_tests::*;

use super::hostile_worker::{artifact, packet, World};

/// `airlock --home HOME ARGS...`.
fn airlock(home: &Path) -> Command {
    let mut c = cmd(&bin("airlock"));
    c.arg("--home").arg(home);
    c
}

/// Runs `c` with its stdout a pipe whose reader is already gone (`| head` that has exited).
fn run_into_closed_pipe(c: &mut Command) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    c.stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", show(out)))
}

/// A submitted job with its token in a file: (world, job id, token file).
fn submitted() -> (World, String, PathBuf) {
    let w = World::new();
    let prompt = w.root.join("prompt.txt");
    std::fs::write(&prompt, "Add a docstring.\n").unwrap();
    let token = w.root.join("token");
    let out = run(airlock(&w.home)
        .args(["submit", "--json", "--repo"])
        .arg(&w.repo)
        .arg("--prompt-file")
        .arg(&prompt)
        .arg("--token-out")
        .arg(&token));
    assert!(out.status.success(), "submit: {}", show(&out));
    let job = json(&out)["job"].as_str().unwrap().to_owned();
    (w, job, token)
}

/// Issue #27, 2.1: `airlock audit show JOB | head -1` panicked (`failed printing to stdout:
/// Broken pipe`, exit 134). A closed stdout now ends every command quietly, with the status
/// a shell gives a process killed by SIGPIPE.
#[test]
fn issue_27_a_closed_stdout_ends_the_command_quietly() {
    let (w, job, _) = submitted();
    for args in [
        vec!["audit", "show", job.as_str()],
        vec!["status"],
        vec!["status", "--json"],
        vec!["audit", "verify"],
    ] {
        let out = run_into_closed_pipe(airlock(&w.home).args(&args));
        assert_eq!(out.status.code(), Some(141), "{args:?}: {}", show(&out));
        assert!(
            out.stderr.is_empty(),
            "{args:?}: stderr should be empty: {}",
            show(&out)
        );
    }
}

/// Issue #27, 2.2: `submit --token-out EXISTING` exited 1 after the bundle, the record and
/// the ledger entry were written, and the token was lost. Outputs are now claimed first.
#[test]
fn issue_27_submit_with_an_existing_token_out_creates_nothing() {
    let w = World::new();
    let prompt = w.root.join("prompt.txt");
    std::fs::write(&prompt, "Add a docstring.\n").unwrap();
    let token = w.root.join("token");
    std::fs::write(&token, "an earlier job's token\n").unwrap();
    let store_before = snapshot(&w.store());
    let out = run(airlock(&w.home)
        .args(["submit", "--repo"])
        .arg(&w.repo)
        .arg("--prompt-file")
        .arg(&prompt)
        .arg("--token-out")
        .arg(&token));
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("refusing to overwrite"),
        "{}",
        show(&out)
    );
    assert_eq!(snapshot(&w.store()), store_before, "the store changed");
    assert_eq!(
        std::fs::read_to_string(&token).unwrap(),
        "an earlier job's token\n"
    );
    let status = run(airlock(&w.home).args(["status", "--json"]));
    assert!(status.status.success(), "{}", show(&status));
    assert_eq!(json(&status).as_array().map(Vec::len), Some(0), "{}", show(&status));
}

/// Issue #27, 2.3: `init --store file:///tmp/a/../x` was accepted (and created both
/// directories) while every later command refused the URL (`fileurl.dot`).
#[test]
fn issue_27_init_refuses_a_file_store_url_with_dot_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let home = root.join("home");
    let url = format!("file://{}/a/../x", root.display());
    let out = run(airlock(&home).args(["init", "--store", &url]));
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("fileurl.dot"),
        "{}",
        show(&out)
    );
    assert!(snapshot(&root).is_empty(), "init created {:?}", snapshot(&root));
}

/// Issue #27, 2.4: on a `file://` store the landed time was the file's mtime, which the worker
/// sets. Backdating both drop objects now changes nothing: the landed time is the ctime.
#[test]
fn issue_27_a_backdated_mtime_does_not_move_the_landed_time() {
    let w = World::new();
    let job = w.submit();
    let patch = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n+/// Adds.\n pub fn add(a: i32, b: i32) -> i32 {\n     a + b\n }\n";
    let (tgz, packet_bytes) = artifact(&packet(&job, patch.as_bytes()), patch.as_bytes());
    let before = now_unix();
    w.drop_signed(&job, &tgz, &packet_bytes, None);
    let after = now_unix();
    // A day before the job existed: with the mtime as the clock, `artifact-early`.
    let backdated = std::time::UNIX_EPOCH + std::time::Duration::from_secs(before - 86_400);
    for url in [&job.claims.drop.artifact, &job.claims.drop.artifact_envelope] {
        let p = airlock_core::fileurl::file_url_to_path(url).unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(backdated).unwrap();
    }
    // Before the fix: refused, `artifact-early`.
    let out = run(airlock(&w.home).args(["fetch", &job.id(), "--json"]));
    assert!(out.status.success(), "fetch: {}", show(&out));
    let out = run(airlock(&w.home).args(["status", &job.id(), "--json"]));
    assert!(out.status.success(), "status: {}", show(&out));
    let landed = json(&out)[0]["landed_at"].as_u64().unwrap();
    assert!(
        (before..=after + 1).contains(&landed),
        "landed_at {landed} is not the drop time [{before}, {after}]"
    );
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}
