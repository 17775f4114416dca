//! The worker out of disk: a generator that fills a tiny work root (a tmpfs of a few MiB in a
//! mount namespace of its own), and one that writes past the job's `--max-disk-bytes` on an
//! ordinary work root. Either way the worker stops it and drops a signed partial artifact with
//! `limits_hit: disk` and the log's tail; `airlock fetch` verifies it and the gate sends it to
//! a human saying the worker ran out of disk (exit 3). A generator that uses up the work root's
//! inodes (a tmpfs with few of them) is stopped the same way, its packet saying `inodes`.
// Test code: a failed unwrap is a failed test (helpers included, which clippy.toml's
// allow-unwrap-in-tests does not cover).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use airlock_tests::*;
use serde_json::Value;

use super::worker::{Env, Job};

/// Mounts a private tmpfs of `size` at the directory given as `$0`, runs the rest of the
/// command line, then says on stderr what the work root holds afterwards.
const IN_TMPFS: &str = r#"mount -t tmpfs -o "size=$AIRLOCK_TEST_TMPFS_SIZE,nr_inodes=${AIRLOCK_TEST_TMPFS_INODES:-0},mode=0711" airlock-disk-test "$0" || exit 97
"$@"; rc=$?
echo "airlock-test-left:[$(ls -A "$0/wr")]" >&2
exit $rc"#;

/// A command run with a private mount namespace (`unshare --mount`), or why there is none
/// here. Under CI a missing namespace is a failure, not a skip.
fn in_private_mounts(program: &str) -> Command {
    let mut c = cmd(Path::new("unshare"));
    c.args(["--mount", "--propagation", "private", "--", program]);
    c
}

fn tmpfs_skip(probe_dir: &Path) -> bool {
    let out = in_private_mounts("sh")
        .args(["-c", "mount -t tmpfs -o size=1m airlock-probe \"$0\""])
        .arg(probe_dir)
        .output();
    let why = match out {
        Ok(o) if o.status.success() => return false,
        Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
        Err(e) => format!("unshare: {e}"),
    };
    airlock_tests::skip(&format!(
        "no private tmpfs mount here (needs root and mount namespaces): {why}"
    ));
    true
}

/// `airlock gate JOB --repo REPO --json`, and the reason `worker-limit-hit`'s detail.
fn gate_disk_reason(env: &Env, job: &Job) -> String {
    let out = run(env
        .airlock()
        .args(["gate", &job.id, "--repo"])
        .arg(&env.repo)
        .arg("--json"));
    assert_eq!(out.status.code(), Some(3), "gate: {}", show(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        reason_codes(&report).contains(&"worker-limit-hit".to_owned()),
        "{report}"
    );
    let reason = report["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["code"] == "worker-limit-hit")
        .unwrap();
    assert_eq!(reason["verdict"], "human", "{reason}");
    reason["detail"].as_str().unwrap().to_owned()
}

/// The gate's text and Markdown say it too.
fn gate_text_and_md_say(env: &Env, job: &Job, words: &str) {
    let md = env.root.join(format!("{}.md", job.id));
    let out = run(env
        .airlock()
        .args(["gate", &job.id, "--repo"])
        .arg(&env.repo)
        .arg("--md")
        .arg(&md));
    assert_eq!(out.status.code(), Some(3), "gate: {}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(words), "{text}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains(words), "{md}");
}

/// The partial artifact's common account: `disk` hit, partial, the log's tail, a patch that
/// holds the generator's edit and nothing torn (it applies with git, checked by the gate).
fn assert_disk_artifact(env: &Env, job: &Job, out: &Output, log_line: &str, edit: &str) {
    // Exit 3: the generator did not end by itself; a partial artifact was dropped.
    assert_eq!(out.status.code(), Some(3), "worker: {}", show(out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("limits hit:") && err.contains("disk"), "{err}");
    assert!(err.contains(log_line), "the log's tail on stderr: {err}");
    let art = env.artifact(job);
    assert!(
        art.limits_hit().contains(&"disk".to_owned()),
        "{}",
        art.packet
    );
    assert!(
        !art.limits_hit().contains(&"wall-clock".to_owned()),
        "the worker, not the wall clock, must stop it: {}",
        art.packet
    );
    assert_eq!(art.packet["partial"], true, "{}", art.packet);
    assert!(
        contains(art.log(), log_line.as_bytes()),
        "generator.log: {}",
        String::from_utf8_lossy(art.log())
    );
    assert!(art.patch().contains(edit), "{}", art.patch());
    env.fetch_ok(job);
}

#[test]
fn a_generator_filling_a_tiny_work_root_is_stopped_and_its_partial_packet_says_disk() {
    let env = Env::small();
    let mnt = env.root.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    if tmpfs_skip(&mnt) {
        return;
    }
    // A small artifact cap keeps the worker's reserve (twice the cap, the log, 1 MiB) well
    // inside the 8 MiB the generator fills.
    let job = env.submit(&[
        "--wall-clock-secs",
        "120",
        "--max-artifact-bytes",
        "1048576",
        "--max-log-bytes",
        "65536",
    ]);
    let worker = bin("airlock-worker");
    let out = run(in_private_mounts("sh")
        .env("AIRLOCK_TEST_TMPFS_SIZE", "8m")
        .args(["-c", IN_TMPFS])
        .arg(&mnt)
        .arg(&worker)
        .arg("run")
        .arg("--token-file")
        .arg(&job.token_file)
        .arg("--trusted-pub")
        .arg(env.home.join("trusted.pub"))
        .arg("--work-root")
        .arg(mnt.join("wr"))
        .arg("--")
        .arg(env.gen("fill_disk.sh")));
    if needs_sandbox_skip(&out) {
        return;
    }
    assert_disk_artifact(
        &env,
        &job,
        &out,
        "airlock-fill: filling the disk",
        "+edited before the disk filled",
    );
    // Nothing of the run is left in the (full) work root once the worker is done.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("airlock-test-left:[]"), "{err}");
    let detail = gate_disk_reason(&env, &job);
    assert!(
        detail.contains("the worker ran out of disk (limit 4294967296 bytes, or a full disk)"),
        "{detail}"
    );
    gate_text_and_md_say(&env, &job, "the worker ran out of disk");
}

#[test]
fn a_generator_past_the_jobs_disk_limit_is_stopped_and_its_partial_packet_says_disk() {
    let env = Env::small();
    let job = env.submit(&["--wall-clock-secs", "120", "--max-disk-bytes", "2097152"]);
    let out = run(&mut env.worker(&job, &[], &[&env.gen("over_disk_limit.sh")]));
    if needs_sandbox_skip(&out) {
        return;
    }
    assert_disk_artifact(
        &env,
        &job,
        &out,
        "airlock-scratch: wrote 8 MiB of scratch",
        "+edited before the scratch",
    );
    assert!(env.run_dirs().is_empty(), "{:?}", env.run_dirs());
    let detail = gate_disk_reason(&env, &job);
    assert!(
        detail.contains("the worker ran out of disk (limit 2097152 bytes"),
        "{detail}"
    );
    gate_text_and_md_say(&env, &job, "limit 2097152 bytes");
}

/// The campaign's finding 4: a flood of empty files on a work root with few inodes. The
/// worker's watch stops it (not the wall clock), the packet says `inodes`, and the run still
/// drops a signed artifact and leaves nothing behind.
#[test]
fn a_generator_using_up_the_work_roots_inodes_is_stopped_and_its_packet_says_inodes() {
    let env = Env::small();
    let mnt = env.root.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    if tmpfs_skip(&mnt) {
        return;
    }
    let job = env.submit(&[
        "--wall-clock-secs",
        "120",
        "--max-artifact-bytes",
        "1048576",
        "--max-log-bytes",
        "65536",
    ]);
    let worker = bin("airlock-worker");
    let out = run(in_private_mounts("sh")
        .env("AIRLOCK_TEST_TMPFS_SIZE", "64m")
        .env("AIRLOCK_TEST_TMPFS_INODES", "4000")
        .args(["-c", IN_TMPFS])
        .arg(&mnt)
        .arg(&worker)
        .arg("run")
        .arg("--token-file")
        .arg(&job.token_file)
        .arg("--trusted-pub")
        .arg(env.home.join("trusted.pub"))
        .arg("--work-root")
        .arg(mnt.join("wr"))
        .arg("--")
        .arg(env.gen("fill_inodes.py")));
    if needs_sandbox_skip(&out) {
        return;
    }
    assert_eq!(out.status.code(), Some(3), "worker: {}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("limits hit:") && err.contains("inodes"),
        "{err}"
    );
    let art = env.artifact(&job);
    assert!(
        art.limits_hit().contains(&"inodes".to_owned()),
        "{}",
        art.packet
    );
    assert!(
        !art.limits_hit().contains(&"wall-clock".to_owned()),
        "the worker, not the wall clock, must stop it: {}",
        art.packet
    );
    assert_eq!(art.packet["partial"], true, "{}", art.packet);
    assert!(
        contains(art.log(), b"airlock-inodes: out of inodes after"),
        "generator.log: {}",
        String::from_utf8_lossy(art.log())
    );
    assert!(
        art.patch().contains("+edited before the inodes ran out"),
        "{}",
        art.patch()
    );
    env.fetch_ok(&job);
    assert!(err.contains("airlock-test-left:[]"), "{err}");
}

/// Issue 38: three processes of 96 MiB each against a job ceiling of 160 MiB for all of them.
/// The kernel kills one at the ceiling, the worker stops the rest (not the wall clock), the
/// packet says `memory`, and the run still drops a signed partial artifact with the edit.
#[test]
fn processes_past_the_jobs_memory_ceiling_are_stopped_and_the_packet_says_memory() {
    let env = Env::small();
    let job = env.submit(&[
        "--wall-clock-secs",
        "120",
        "--max-memory-bytes",
        &(160u64 << 20).to_string(),
    ]);
    let started = std::time::Instant::now();
    let out = run(&mut env.worker(&job, &[], &[&env.gen("hold_memory.py")]));
    if needs_sandbox_skip(&out) {
        return;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("no memory ceiling for the generator's processes together") {
        airlock_tests::skip(&format!("no memory cgroup on this host: {err}"));
        return;
    }
    assert_eq!(out.status.code(), Some(3), "worker: {}", show(&out));
    assert!(
        started.elapsed().as_secs() < 100,
        "the wall clock stopped it"
    );
    assert!(
        err.contains("limits hit:") && err.contains("memory"),
        "{err}"
    );
    let art = env.artifact(&job);
    assert!(
        art.limits_hit().contains(&"memory".to_owned()),
        "{}",
        art.packet
    );
    assert!(
        !art.limits_hit().contains(&"wall-clock".to_owned()),
        "{}",
        art.packet
    );
    assert_eq!(art.packet["partial"], true, "{}", art.packet);
    assert!(
        art.patch().contains("+edited before the memory ran out"),
        "{}",
        art.patch()
    );
    env.fetch_ok(&job);
    assert!(env.run_dirs().is_empty(), "{:?}", env.run_dirs());
}
