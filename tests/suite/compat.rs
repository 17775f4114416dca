//! Mixed versions (docs/FORMATS.md, "Evolution"): the previous release's binaries, built from
//! its commit in `RELEASES` by `scripts/build-previous-release.sh` (`.ci/run` builds them before
//! the tests), against today's, both ways. A pair completes a job, or the worker refuses before
//! running anything with the version message; never a job that runs and is refused at fetch.
//!
//! Outside CI the tests skip with a printed reason when the previous release is not built;
//! under `CI` that is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_tests::*;
use serde_json::Value;

use super::worker::Env;

/// `target/previous-release/bin`, holding `airlock` and `airlock-worker` of the previous
/// release, or `None` (printed) when it is not built.
fn previous() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/previous-release/bin");
    if dir.join("airlock").is_file() && dir.join("airlock-worker").is_file() {
        return Some(dir);
    }
    let why = format!(
        "the previous release is not built in {} (run scripts/build-previous-release.sh)",
        dir.display()
    );
    airlock_tests::skip(&why);
    None
}

fn version(bin: &Path) -> String {
    let out = run(cmd(bin).arg("--version"));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn worker_cmd(bin: &Path, env: &Env, token: &Path, trusted_pub: &Path, gen: &[&str]) -> Command {
    let mut c = cmd(bin);
    c.arg("run")
        .arg("--token-file")
        .arg(token)
        .arg("--trusted-pub")
        .arg(trusted_pub)
        .arg("--work-root")
        .arg(&env.work_root)
        .arg("--")
        .args(gen);
    c
}

/// `airlock submit` of the previous release with trusted home `home`: the job id and the token
/// file.
fn submit_with(prev: &Path, home: &Path, env: &Env) -> (String, PathBuf) {
    let token = env.root.join("prev.token");
    let out = run(cmd(&prev.join("airlock"))
        .arg("--home")
        .arg(home)
        .args(["submit", "--json", "--repo"])
        .arg(&env.repo)
        .arg("--prompt-file")
        .arg(&env.prompt)
        .arg("--token-out")
        .arg(&token));
    assert!(out.status.success(), "previous submit: {}", show(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (v["job"].as_str().unwrap().to_owned(), token)
}

fn drop_objects(home: &Path, job: &str) -> Vec<String> {
    std::fs::read_dir(home.join("store/drop").join(job))
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Today's trusted side names its formats in the token; the previous release's worker, written
/// before the contract, refuses the token before running anything (its version message names
/// the unknown `formats` claim): no generator start, no drop object.
#[test]
fn previous_worker_against_todays_trusted_side_refuses_before_running() {
    let Some(prev) = previous() else { return };
    let env = Env::small();
    let job = env.submit(&[]);
    let markers = env.root.join("markers");
    std::fs::create_dir(&markers).unwrap();
    let gen = env.gen("marker.sh");
    let out = run(&mut worker_cmd(
        &prev.join("airlock-worker"),
        &env,
        &job.token_file,
        &env.home.join("trusted.pub"),
        &[&gen, markers.to_str().unwrap()],
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{}: {}", version(&prev.join("airlock-worker")), err.trim());
    assert!(!out.status.success(), "the previous worker ran the job");
    assert!(
        err.contains("refused before running anything") && err.contains("formats"),
        "{} did not refuse with the version message: {}",
        version(&prev.join("airlock-worker")),
        show(&out)
    );
    assert_eq!(
        std::fs::read_dir(&markers).unwrap().count(),
        0,
        "the generator ran"
    );
    assert!(drop_objects(&env.home, &job.id).is_empty());
}

/// The previous release's trusted side (submit, fetch, gate) with today's worker: the token has
/// no `formats` claim, so the worker writes what 0.6.0 reads; the previous fetch and gate take
/// the artifact (no `packet-format` refusal).
#[test]
fn todays_worker_against_the_previous_trusted_side_completes_the_job() {
    let Some(prev) = previous() else { return };
    let env = Env::small();
    let home = env.root.join("home-prev");
    let airlock = |args: &[&str]| {
        let mut c = cmd(&prev.join("airlock"));
        c.arg("--home").arg(&home).args(args);
        c
    };
    let out = run(&mut airlock(&["init"]));
    assert!(out.status.success(), "previous init: {}", show(&out));
    let (job, token) = submit_with(&prev, &home, &env);

    let gen = env.gen("edit_small.sh");
    let out = run(&mut worker_cmd(
        &bin("airlock-worker"),
        &env,
        &token,
        &home.join("trusted.pub"),
        &[&gen],
    ));
    if needs_sandbox_skip(&out) {
        return;
    }
    assert!(out.status.success(), "today's worker: {}", show(&out));
    assert!(drop_objects(&home, &job).contains(&"artifact.tar.gz".to_owned()));

    let out = run(&mut airlock(&["fetch", &job]));
    assert!(out.status.success(), "previous fetch: {}", show(&out));
    let out = run(airlock(&["gate", &job, "--json", "--repo"]).arg(&env.repo));
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("previous gate gave no JSON report ({e}): {}", show(&out)));
    let codes = reason_codes(&report);
    assert!(
        !codes
            .iter()
            .any(|c| c == "packet-format" || c.starts_with("artifact-")),
        "the previous gate refused today's artifact: {report:#}"
    );
    assert!(report["decision"].is_string(), "{report:#}");
}

/// The same mix the other way round for the documents at rest: today's trusted side fetches
/// and gates an artifact the previous worker wrote for a token of the previous trusted side
/// (a job in flight across an upgrade of the trusted side).
#[test]
fn an_artifact_of_the_previous_release_is_read_by_todays_trusted_side() {
    let Some(prev) = previous() else { return };
    let env = Env::small();
    let (job, token) = submit_with(&prev, &env.home, &env);
    let gen = env.gen("edit_small.sh");
    let out = run(&mut worker_cmd(
        &prev.join("airlock-worker"),
        &env,
        &token,
        &env.home.join("trusted.pub"),
        &[&gen],
    ));
    if needs_sandbox_skip(&out) {
        return;
    }
    assert!(out.status.success(), "previous worker: {}", show(&out));
    // The trusted side is upgraded while the job is in flight.
    let out = run(cmd(&bin("airlock"))
        .arg("--home")
        .arg(&env.home)
        .args(["gate", &job, "--json", "--repo"])
        .arg(&env.repo));
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("gate gave no JSON report ({e}): {}", show(&out)));
    let codes = reason_codes(&report);
    assert!(
        !codes
            .iter()
            .any(|c| c == "packet-format" || c.starts_with("artifact-")),
        "today's gate refused the previous release's artifact: {report:#}"
    );
}

/// Today's worker given a token (signed by the trusted key) whose `formats` claim names only
/// versions it cannot write refuses before running anything, naming both sides' versions
/// (`token.formats`): no generator start, no drop object.
#[test]
fn todays_worker_refuses_a_token_naming_only_formats_it_cannot_write() {
    let env = Env::small();
    let job = env.submit(&[]);
    let trusted = airlock_core::keys::load_private_key(&env.home.join("trusted.key")).unwrap();
    let now = airlock_core::clock::now_unix();
    let mut claims = airlock_core::token::verify_token(&job.token, &trusted.public(), now)
        .unwrap()
        .into_inner();
    claims.formats = Some(vec![
        "airlock.packet/v2".to_owned(),
        "urn:airlock:predicate:artifact:v1".to_owned(),
    ]);
    let token = airlock_core::token::mint_token(&trusted, &claims, now, 600).unwrap();
    let token_file = env.root.join("v2.token");
    std::fs::write(&token_file, token.expose()).unwrap();
    let markers = env.root.join("markers");
    std::fs::create_dir(&markers).unwrap();
    let gen = env.gen("marker.sh");
    let out = run(&mut worker_cmd(
        &bin("airlock-worker"),
        &env,
        &token_file,
        &env.home.join("trusted.pub"),
        &[&gen, markers.to_str().unwrap()],
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", show(&out));
    for needle in [
        "refused before running anything",
        "(token.formats)",
        "airlock.packet/v2",
        "writes [airlock.packet/v1",
        airlock_core::VERSION,
    ] {
        assert!(err.contains(needle), "no {needle:?} in: {err}");
    }
    assert_eq!(
        std::fs::read_dir(&markers).unwrap().count(),
        0,
        "the generator ran"
    );
    assert!(drop_objects(&env.home, &job.id).is_empty());
    assert!(!env.work_root.exists() || env.run_dirs().is_empty());
}
