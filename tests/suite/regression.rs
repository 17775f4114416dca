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
    assert_eq!(
        json(&status).as_array().map(Vec::len),
        Some(0),
        "{}",
        show(&status)
    );
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
    assert!(
        snapshot(&root).is_empty(),
        "init created {:?}",
        snapshot(&root)
    );
}

/// Issue #27, 2.4: on a `file://` store the landed time was the file's mtime, which the worker
/// sets. Backdating both drop objects now changes nothing: the landed time is the ctime.
#[test]
fn issue_27_a_backdated_mtime_does_not_move_the_landed_time() {
    let w = World::new();
    let job = w.submit();
    let patch = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n+/// Adds.\n pub fn add(a: i32, b: i32) -> i32 {\n     a + b\n }\n";
    let (tgz, packet_bytes) = artifact(&packet(&job, patch.as_bytes()), patch.as_bytes());
    let before = airlock_core::clock::now_unix();
    w.drop_signed(&job, &tgz, &packet_bytes, None);
    let after = airlock_core::clock::now_unix();
    // A day before the job existed: with the mtime as the clock, `artifact-early`.
    let backdated = std::time::UNIX_EPOCH + std::time::Duration::from_secs(before - 86_400);
    for url in [
        &job.claims.drop.artifact,
        &job.claims.drop.artifact_envelope,
    ] {
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

/// Issue #27, 2.6: the policy TOML error was printed twice, and a missing file's
/// `No such file or directory (os error 2)` twice in a row.
#[test]
fn issue_27_each_cause_is_printed_once() {
    let (w, job, _) = submitted();
    let bad = w.root.join("policy.toml");
    std::fs::write(&bad, "version = 1\n[buckets\n").unwrap();
    let missing = w.root.join("no-such-policy.toml");
    for (policy, once) in [(&bad, "policy.parse"), (&missing, "os error 2")] {
        let out = run(airlock(&w.home)
            .args(["gate", &job, "--repo"])
            .arg(&w.repo)
            .arg("--policy")
            .arg(policy));
        assert_eq!(out.status.code(), Some(1), "{}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches(once).count(), 1, "{once} not once: {err}");
    }
}

/// Issue #27, 2.6: an empty (or blank) prompt was accepted.
#[test]
fn issue_27_an_empty_prompt_is_refused() {
    let w = World::new();
    for text in ["", " \n\n\t\n"] {
        let prompt = w.root.join("prompt.txt");
        std::fs::write(&prompt, text).unwrap();
        let out = w.root.join("out");
        let r = run(airlock(&w.home)
            .args(["pack", "--repo"])
            .arg(&w.repo)
            .arg("--prompt-file")
            .arg(&prompt)
            .arg("--out")
            .arg(&out));
        assert_eq!(r.status.code(), Some(1), "{text:?}: {}", show(&r));
        assert!(
            String::from_utf8_lossy(&r.stderr).contains("prompt is empty"),
            "{}",
            show(&r)
        );
        assert!(!out.exists(), "a refused pack left {}", out.display());
    }
}

/// Issue #27, 2.6: `submit` printed neither the packed revision nor a warning when the working
/// tree had changes that were not packed.
#[test]
fn issue_27_submit_names_the_revision_and_warns_about_a_dirty_tree() {
    let w = World::new();
    let head = git(&w.repo, &["rev-parse", "HEAD"]);
    let prompt = w.root.join("prompt.txt");
    std::fs::write(&prompt, "Add a docstring.\n").unwrap();
    let submit = || {
        run(airlock(&w.home)
            .args(["submit", "--repo"])
            .arg(&w.repo)
            .arg("--prompt-file")
            .arg(&prompt))
    };
    let clean = submit();
    assert!(clean.status.success(), "{}", show(&clean));
    assert!(
        String::from_utf8_lossy(&clean.stdout).contains(&format!("revision {head}")),
        "{}",
        show(&clean)
    );
    assert!(!String::from_utf8_lossy(&clean.stderr).contains("uncommitted"));

    std::fs::write(w.repo.join("README.md"), "# edited, not committed\n").unwrap();
    let dirty = submit();
    assert!(dirty.status.success(), "{}", show(&dirty));
    let err = String::from_utf8_lossy(&dirty.stderr);
    assert!(
        err.contains("warning:") && err.contains("1 uncommitted path") && err.contains(&head),
        "{}",
        show(&dirty)
    );
}

/// Issue #27, 2.6: a pack refused for a secret left an empty `--out` directory behind.
#[test]
fn issue_27_a_refused_pack_leaves_no_out_directory() {
    let w = World::new();
    write_files(
        &w.repo,
        &[("config/app.env.example", planted::aws_key_id().as_bytes())],
    );
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-q", "-m", "add a key"]);
    let prompt = w.root.join("prompt.txt");
    std::fs::write(&prompt, "Add a docstring.\n").unwrap();
    let out_dir = w.root.join("new-out");
    let out = run(airlock(&w.home)
        .args(["pack", "--repo"])
        .arg(&w.repo)
        .arg("--prompt-file")
        .arg(&prompt)
        .arg("--out")
        .arg(&out_dir));
    assert!(
        !out.status.success(),
        "the pack was not refused: {}",
        show(&out)
    );
    assert!(!out_dir.exists(), "{} was left behind", out_dir.display());
}

/// Issue #27, 2.6: the worker set the mode of a `--work-root` it did not create to 0711.
#[test]
fn issue_27_the_worker_keeps_the_mode_of_an_existing_work_root() {
    use std::os::unix::fs::PermissionsExt;
    let (w, _, token) = submitted();
    let work_root = w.root.join("work-root");
    std::fs::create_dir(&work_root).unwrap();
    std::fs::set_permissions(&work_root, std::fs::Permissions::from_mode(0o750)).unwrap();
    // Whether or not a sandbox can run here, the root is prepared before the generator.
    let out = run(cmd(&bin("airlock-worker"))
        .arg("run")
        .arg("--token-file")
        .arg(&token)
        .arg("--trusted-pub")
        .arg(w.home.join("trusted.pub"))
        .arg("--work-root")
        .arg(&work_root)
        .args(["--", "/bin/true"]));
    let mode = std::fs::metadata(&work_root).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o750, "mode changed to {mode:o}: {}", show(&out));
}

/// Issue #27, 2.6: a bare generator name missing from PATH did not say that the PATH searched
/// was the sandbox's, nor which.
#[test]
fn issue_27_a_generator_missing_from_path_names_the_sandbox_path() {
    let (w, _, token) = submitted();
    let work_root = w.root.join("work-root");
    let out = run(cmd(&bin("airlock-worker"))
        .arg("run")
        .arg("--token-file")
        .arg(&token)
        .arg("--trusted-pub")
        .arg(w.home.join("trusted.pub"))
        .arg("--work-root")
        .arg(&work_root)
        .args(["--", "no-such-generator-27"]));
    let err = String::from_utf8_lossy(&out.stderr);
    if airlock_tests::needs_sandbox_skip(&out) {
        return;
    }
    assert!(
        err.contains("no-such-generator-27") && err.contains("not found in the sandbox's PATH (/"),
        "{}",
        show(&out)
    );
}

/// Issue #27, 2.6: `airlock watch` printed the whole report (25 lines) per job; it prints one
/// line per job now, and the report with `-v`.
#[test]
fn issue_27_watch_prints_one_line_per_job() {
    let w = World::new();
    let patch = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n+/// Adds.\n pub fn add(a: i32, b: i32) -> i32 {\n     a + b\n }\n";
    let jobs: Vec<String> = (0..2)
        .map(|_| {
            let job = w.submit();
            let (tgz, packet_bytes) = artifact(&packet(&job, patch.as_bytes()), patch.as_bytes());
            w.drop_signed(&job, &tgz, &packet_bytes, None);
            job.id()
        })
        .collect();
    let out = run(airlock(&w.home)
        .args(["watch", "--once", "--repo"])
        .arg(&w.repo));
    assert!(out.status.success(), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", show(&out));
    for job in &jobs {
        let line = lines.iter().find(|l| l.starts_with(job.as_str()));
        let line = line.unwrap_or_else(|| panic!("no line for {job}: {stdout}"));
        assert!(line.contains("queue") && line.contains("+1 -0"), "{line}");
    }

    // -v: the full report of a job gated now.
    let job = w.submit();
    let (tgz, packet_bytes) = artifact(&packet(&job, patch.as_bytes()), patch.as_bytes());
    w.drop_signed(&job, &tgz, &packet_bytes, None);
    let out = run(airlock(&w.home)
        .args(["-v", "watch", "--once", "--repo"])
        .arg(&w.repo));
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).lines().count() > 5,
        "{}",
        show(&out)
    );
}
