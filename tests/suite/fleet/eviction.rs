//! Eviction and resume (SIGTERM, SIGKILL, a poisoned checkpoint) and renewal.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use airlock_tests::*;

use super::{wait_until, Fleet};

/// A multi-step generator: it goes on from the steps already in `src/steps.txt` (a resumed
/// run finds the evicted worker's), one step a second, each naming its worker.
const STEPS_SH: &str = "#!/bin/sh\nn=$(grep -c . src/steps.txt 2>/dev/null || true)\nn=${n:-0}\nwhile [ \"$n\" -lt 6 ]; do\n  n=$((n+1))\n  echo \"step $n by $WORKER_TAG\" >> src/steps.txt\n  sleep 1\ndone\n";

/// Eviction: the worker running a multi-step generator is sent `sig` mid-run; the job is
/// re-dispatched resuming from its checkpoint (the final one on SIGTERM, the last periodic one
/// on SIGKILL), and the final diff holds both workers' steps.
fn eviction(sig: &str) {
    let mut f = Fleet::new(false);
    let steps = f.root.join("steps.sh");
    std::fs::write(&steps, STEPS_SH).unwrap();
    std::fs::set_permissions(&steps, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::copy(&steps, f.root.join("gen.sh")).unwrap();
    f.enroll("one");
    f.enroll("two");
    f.serve("one", &["--pass-env", "WORKER_TAG"]);
    let jobs = f.submit(1, &["--checkpoint-secs", "1", "--wall-clock-secs", "120"]);
    let job = &jobs[0];
    let envelope = f
        .home
        .join(format!("store/drop/{job}/checkpoint.1.dsse.json"));
    wait_until(
        "two checkpoints of the first run",
        Duration::from_secs(60),
        || {
            f.tick();
            envelope.exists() || f.cannot_sandbox()
        },
    );
    if f.cannot_sandbox() {
        return;
    }
    let pid = f.workers[0].1.id();
    let st = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(st.success());
    let status = f.workers[0].1.wait().unwrap();
    if sig == "TERM" {
        assert!(status.success(), "{}", f.log("one"));
        assert!(
            f.log("one").contains("final checkpoint"),
            "{}",
            f.log("one")
        );
    }
    f.serve("two", &["--pass-env", "WORKER_TAG"]);
    let mut new_job = String::new();
    wait_until("the resumed job gated", Duration::from_secs(120), || {
        f.tick();
        if let Some(n) = f.state()["superseded"][job.as_str()].as_str() {
            new_job = n.to_owned();
        }
        !new_job.is_empty() && f.decisions().contains_key(&new_job)
    });
    let artifact = f.home.join(format!("store/drop/{new_job}/artifact.tar.gz"));
    let tar = gunzip(&artifact);
    assert!(
        contains(&tar, b"+step 1 by one"),
        "the first worker's steps are missing"
    );
    assert!(
        contains(&tar, b"by two"),
        "the second worker's steps are missing"
    );
    assert!(contains(&tar, b"+step 6 by two"), "the run did not finish");
    assert!(
        !f.decisions().contains_key(job),
        "the evicted job was gated"
    );
    inherited_chain_is_shown_and_recorded(&f, job, &new_job);
}

/// The resumed job's review shows what its worker inherited and from which job (issue #40):
/// the gate report (`--json`), `airlock show --json`, and the ledger's `submit` entry
/// (`airlock audit show --json`) all name the old job and the inherited patch.
fn inherited_chain_is_shown_and_recorded(f: &Fleet, old_job: &str, new_job: &str) {
    let out = run(f
        .airlock()
        .args(["gate", new_job, "--json", "--repo"])
        .arg(&f.repo));
    assert!(
        matches!(out.status.code(), Some(0 | 3 | 4)),
        "gate: {}",
        show(&out)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let inherited = &report["inherited"];
    assert_eq!(inherited["from_job"], old_job, "{report}");
    assert!(inherited["refused"].is_null(), "{inherited}");
    let files = inherited["files"].as_array().unwrap();
    let steps = files
        .iter()
        .find(|x| x["path"] == "src/steps.txt")
        .unwrap_or_else(|| panic!("src/steps.txt is not listed as inherited: {inherited}"));
    assert!(steps["lines_added"].as_u64().unwrap() >= 1, "{steps}");
    let codes: Vec<&str> = report["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["code"].as_str())
        .collect();
    assert!(
        !codes.iter().any(|c| c.starts_with("resume-")),
        "the honest worker's resume was refused: {codes:?}"
    );
    let text = run(f.airlock().args(["gate", new_job, "--repo"]).arg(&f.repo));
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.contains(&format!("inherited from job {old_job}")),
        "{text}"
    );
    let out = run(f.airlock().args(["show", new_job, "--json"]));
    assert!(out.status.success(), "show: {}", show(&out));
    let page: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(page["inherited"]["from_job"], old_job, "{page}");
    let out = run(f.airlock().args(["audit", "show", new_job, "--json"]));
    assert!(out.status.success(), "audit show: {}", show(&out));
    let bom: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let chain = &bom["submit"];
    assert_eq!(chain["redispatch_of"], old_job, "{bom}");
    assert_eq!(chain["resumed_from"]["job"], old_job, "{bom}");
    assert_eq!(
        chain["resumed_from"]["patch_sha256"], inherited["patch_sha256"],
        "{bom}"
    );
    // gc deletes the inherited copy with the payloads: a later show says so, by its rule.
    let out = run(f.airlock().args(["gc", "--older-than", "0s"]));
    assert!(out.status.success(), "gc: {}", show(&out));
    let out = run(f.airlock().args(["show", new_job, "--json"]));
    assert!(out.status.success(), "show after gc: {}", show(&out));
    let page: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(page["inherited"]["from_job"], old_job, "{page}");
    let why = page["inherited"]["refused"].as_str().unwrap_or_default();
    assert!(why.contains("(resume.missing)"), "{page}");
}

#[test]
fn sigterm_mid_run_resumes_on_another_worker_with_both_workers_edits() {
    eviction("TERM");
}

#[test]
fn sigkill_mid_run_resumes_from_the_last_periodic_checkpoint() {
    eviction("KILL");
}

/// A poisoned checkpoint (a secret in an added line: the gate rejects it) is not resumed
/// from: the re-dispatched job starts from the packed revision (`fleet-checkpoint-refused`).
#[test]
fn a_poisoned_checkpoint_is_not_resumed_from() {
    let f = Fleet::new(false);
    let poison = f.root.join("poison.sh");
    std::fs::write(
        &poison,
        format!(
            "#!/bin/sh\necho 'key = \"{}\"' >> src/a.txt\nsleep 60\n",
            airlock_tests::planted::aws_key_id()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&poison, std::fs::Permissions::from_mode(0o755)).unwrap();
    f.enroll("a");
    // a heartbeats once by hand and takes the ticket.
    let hb = f.home.join("store/fleet/a/heartbeat.json");
    std::fs::create_dir_all(hb.parent().unwrap()).unwrap();
    std::fs::write(&hb, br#"{"format":"airlock.heartbeat/v1","name":"a","state":"idle","version":"0.7.0","reads":["airlock.token.resume/v1"],"writes":["airlock.packet/v1","urn:airlock:predicate:artifact:v1"]}"#).unwrap();
    let jobs = f.submit(1, &["--checkpoint-secs", "1"]);
    f.tick();
    let sealed = std::fs::read(f.home.join("store/fleet/a/mailbox/0.age")).unwrap();
    let a_key = std::fs::read_to_string(f.key_dir("a").join("worker.key")).unwrap();
    let id = airlock_core::seal::Identity::parse(&a_key).unwrap();
    let ticket: serde_json::Value =
        serde_json::from_slice(&airlock_core::seal::open(&id, &sealed, 1 << 20).unwrap()).unwrap();
    let token = f.root.join("a.token");
    std::fs::write(&token, ticket["token"].as_str().unwrap()).unwrap();
    // The hostile run: its checkpoint carries the secret; then it dies.
    let mut child = cmd(&bin("airlock-worker"))
        .arg("run")
        .arg("--token-file")
        .arg(&token)
        .arg("--trusted-pub")
        .arg(f.home.join("trusted.pub"))
        .arg("--work-root")
        .arg(f.root.join("work"))
        .arg("--")
        .arg(&poison)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let envelope = f
        .home
        .join(format!("store/drop/{}/checkpoint.dsse.json", jobs[0]));
    wait_until("the poisoned checkpoint", Duration::from_secs(60), || {
        if let Ok(Some(st)) = child.try_wait() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            assert!(
                !err.contains("(sandbox.unavailable)") || std::env::var_os("CI").is_none(),
                "{err}"
            );
            panic!("the worker ended early ({st}): {err}");
        }
        envelope.exists()
    });
    child.kill().unwrap();
    child.wait().unwrap();
    // a is lost (no heartbeat since); its job is re-dispatched without the checkpoint.
    let mut refused = String::new();
    wait_until("the re-dispatch", Duration::from_secs(30), || {
        let out = f.tick();
        refused.push_str(&String::from_utf8_lossy(&out.stderr));
        f.state()["superseded"][jobs[0].as_str()].is_string()
    });
    assert!(refused.contains("fleet-checkpoint-refused"), "{refused}");
    assert!(refused.contains("secret-in-added-line"), "{refused}");
    let new_job = f.state()["superseded"][jobs[0].as_str()]
        .as_str()
        .unwrap()
        .to_owned();
    let q: serde_json::Value = serde_json::from_slice(
        &std::fs::read(f.home.join(format!("fleet/queue/{new_job}.json"))).unwrap(),
    )
    .unwrap();
    assert!(q["resumes"].is_null(), "{q}");
    assert!(!f
        .home
        .join(format!("store/inbox/{new_job}/resume.diff"))
        .exists());
}

/// Renewal: before the URLs expire, watch seals a newer enrolment to the worker's key; the
/// running worker takes it (its heartbeat says the new serial) and keeps it beside its key.
/// Without the key (a stolen enrolment file), the renewal does not open.
#[test]
fn an_enrolment_is_renewed_sealed_to_the_worker() {
    let mut f = Fleet::new(false);
    f.enroll("r");
    f.serve("r", &[]);
    wait_until("r's heartbeat", Duration::from_secs(30), || {
        f.tick();
        f.state()["workers"]["r"]["claimed"].is_object()
    });
    // The enrolment is due: its expiry moved within half its lifetime.
    let path = f.home.join("fleet/state.json");
    let mut st = f.state();
    let soon = st["workers"]["r"]["expires_at"].as_u64().unwrap() - 3000;
    st["workers"]["r"]["expires_at"] = soon.into();
    std::fs::write(&path, serde_json::to_vec(&st).unwrap()).unwrap();
    f.tick();
    assert_eq!(f.state()["workers"]["r"]["serial"], 2, "{}", f.state());
    let sealed = std::fs::read(f.home.join("store/fleet/r/mailbox/renewal.age")).unwrap();
    let thief = airlock_core::seal::Identity::generate().unwrap();
    let e = airlock_core::seal::open(&thief, &sealed, 1 << 20).unwrap_err();
    assert!(e.to_string().contains("seal.recipient"), "{e}");
    wait_until(
        "the worker to take the renewal",
        Duration::from_secs(30),
        || {
            f.tick();
            f.state()["workers"]["r"]["claimed"]["serial"] == 2
        },
    );
    assert!(f.key_dir("r").join("enrolment.dsse.json").exists());
}
