//! The fleet end to end (docs/FLEET.md): real `airlock-worker serve` processes enrolled with
//! `airlock fleet enroll`, jobs queued with `submit --fleet`, dispatched, gated and recovered
//! by `airlock watch`, on `file://` and on the in-process S3 server (SigV4, presigned URLs).
//! Then a hostile enrolled worker: each attempt refused with a rule id.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use airlock_tests::s3::{raw_request, with_key, S3Server};
use airlock_tests::*;

const PREFIX: &str = "team/fleet";

/// A trusted home (file:// or S3), a repository, and a generator any sandbox user can run.
struct Fleet {
    server: Option<S3Server>,
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    repo: PathBuf,
    workers: Vec<(String, Child)>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for (_, c) in &mut self.workers {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Fleet {
    fn new(s3: bool) -> Fleet {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        // The sandbox user runs the generator from here.
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let repo = root.join("repo");
        make_repo(&repo, &[("README.md", b"# fleet\n"), ("src/a.txt", b"a\n")]);
        let gen = root.join("gen.sh");
        std::fs::write(
            &gen,
            "#!/bin/sh\n# One step of work, then a line that names the job's run.\nsleep \"${FLEET_SLEEP:-0.2}\"\necho \"edit $$\" >> src/a.txt\n",
        )
        .unwrap();
        std::fs::set_permissions(&gen, std::fs::Permissions::from_mode(0o755)).unwrap();
        let f = Fleet {
            server: s3.then(S3Server::start),
            _tmp: tmp,
            home: root.join("home"),
            repo,
            root,
            workers: Vec::new(),
        };
        let mut init = f.airlock();
        init.arg("init");
        if let Some(s) = &f.server {
            init.args(["--store", &s.store_url(PREFIX)]);
        }
        let out = run(&mut init);
        assert!(out.status.success(), "init: {}", show(&out));
        f
    }

    fn airlock(&self) -> Command {
        let mut c = cmd(&bin("airlock"));
        c.arg("--home").arg(&self.home);
        if let Some(s3) = &self.server {
            for (k, v) in s3.aws_env() {
                c.env(k, v);
            }
        }
        c
    }

    fn key_dir(&self, name: &str) -> PathBuf {
        self.root.join("keys").join(name)
    }

    fn enrolment(&self, name: &str) -> PathBuf {
        self.root.join(format!("{name}.enrol"))
    }

    /// `keygen` then `fleet enroll NAME` with a 1 s heartbeat.
    fn enroll(&self, name: &str) {
        let out = run(cmd(&bin("airlock-worker"))
            .args(["keygen", "--out"])
            .arg(self.key_dir(name)));
        assert!(out.status.success(), "keygen: {}", show(&out));
        let out = run(self
            .airlock()
            .args(["fleet", "enroll", name, "--heartbeat", "1s", "--worker-pub"])
            .arg(self.key_dir(name).join("worker.pub"))
            .arg("--out")
            .arg(self.enrolment(name)));
        assert!(out.status.success(), "enroll: {}", show(&out));
    }

    /// Starts `airlock-worker serve` for NAME (its environment cleared: the enrolment, the key
    /// and the trusted public key are all it has); stderr goes to ROOT/NAME.log.
    fn serve(&mut self, name: &str, extra: &[&str]) {
        let slow = extra.contains(&"FLEET_SLEEP");
        let log = std::fs::File::create(self.root.join(format!("{name}.log"))).unwrap();
        let work = self.root.join("work").join(name);
        std::fs::create_dir_all(&work).unwrap();
        let child = Command::new(bin("airlock-worker"))
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &work)
            .env("FLEET_SLEEP", if slow { "60" } else { "0.2" })
            .env("WORKER_TAG", name)
            .arg("serve")
            .arg("--enrollment")
            .arg(self.enrolment(name))
            .arg("--key")
            .arg(self.key_dir(name))
            .arg("--trusted-pub")
            .arg(self.home.join("trusted.pub"))
            .arg("--work-root")
            .arg(&work)
            .args(extra)
            .arg("--")
            .arg(self.root.join("gen.sh"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.workers.push((name.to_owned(), child));
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.root.join(format!("{name}.log"))).unwrap_or_default()
    }

    /// Queues `n` jobs with `submit --fleet`; returns their ids.
    fn submit(&self, n: usize, extra: &[&str]) -> Vec<String> {
        let prompt = self.root.join("prompt.txt");
        std::fs::write(&prompt, "Append a line to src/a.txt.\n").unwrap();
        (0..n)
            .map(|_| {
                let out = run(self
                    .airlock()
                    .args(["submit", "--fleet", "--json", "--repo"])
                    .arg(&self.repo)
                    .arg("--prompt-file")
                    .arg(&prompt)
                    .args(extra));
                assert!(out.status.success(), "submit: {}", show(&out));
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                assert!(v.get("token").is_none(), "submit --fleet printed the token");
                v["job"].as_str().unwrap().to_owned()
            })
            .collect()
    }

    /// One `airlock watch --once` (a fleet tick, then gate what landed).
    fn tick(&self) -> std::process::Output {
        run(self
            .airlock()
            .args(["watch", "--once", "--repo"])
            .arg(&self.repo))
    }

    fn state(&self) -> serde_json::Value {
        let p = self.home.join("fleet/state.json");
        serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|_| b"{}".to_vec())).unwrap()
    }

    /// Job -> gate decision, from `airlock status --json` (the ledger).
    fn decisions(&self) -> BTreeMap<String, String> {
        let out = run(self.airlock().args(["status", "--json"]));
        assert!(out.status.success(), "status: {}", show(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .filter_map(|j| {
                Some((
                    j["job"].as_str()?.to_owned(),
                    j["decision"].as_str()?.to_owned(),
                ))
            })
            .collect()
    }

    fn fleet_status(&self) -> serde_json::Value {
        let out = run(self.airlock().args(["fleet", "status", "--json"]));
        assert!(out.status.success(), "fleet status: {}", show(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Skips (outside CI) when the workers cannot sandbox here.
    fn cannot_sandbox(&self) -> bool {
        let logs: String = self.workers.iter().map(|(n, _)| self.log(n)).collect();
        if !logs.contains("(sandbox.unavailable)") {
            return false;
        }
        assert!(
            std::env::var_os("CI").is_none(),
            "SKIPPED in CI (a skip is a failure here): the worker cannot sandbox: {logs}"
        );
        eprintln!("SKIPPED: the worker cannot sandbox here");
        true
    }
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Follows the superseded chain of each submitted job: exactly one job of each chain was
/// gated, and no superseded job was.
fn assert_one_gated_each(f: &Fleet, submitted: &[String]) {
    let decisions = f.decisions();
    let state = f.state();
    let superseded: BTreeMap<String, String> = state["superseded"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    for job in submitted {
        let mut chain = vec![job.clone()];
        while let Some(next) = superseded.get(chain.last().unwrap()) {
            chain.push(next.clone());
        }
        let gated: Vec<&String> = chain
            .iter()
            .filter(|j| decisions.contains_key(*j))
            .collect();
        assert_eq!(gated.len(), 1, "job {job}: chain {chain:?} gated {gated:?}");
        assert_eq!(
            gated[0],
            chain.last().unwrap(),
            "a superseded job was gated"
        );
    }
}

/// 3 workers, 30 jobs, one worker killed with SIGKILL mid-job: every job ends with exactly
/// one gated final artifact; the killed worker's job is re-dispatched.
fn three_workers_thirty_jobs(s3: bool) {
    let mut f = Fleet::new(s3);
    for w in ["w1", "w2", "w3"] {
        f.enroll(w);
    }
    f.serve("w1", &[]);
    // w2's generator takes 60 s: it is mid-job when killed.
    f.serve("w2", &["--pass-env", "FLEET_SLEEP"]);
    f.serve("w3", &[]);
    let jobs = f.submit(30, &[]);
    let mut killed = false;
    let end = Instant::now() + Duration::from_secs(240);
    loop {
        let out = f.tick();
        assert!(out.status.success(), "watch: {}", show(&out));
        if f.cannot_sandbox() {
            return;
        }
        // Kill w2 while it says it runs a job.
        let st = f.state();
        let w2 = &st["workers"]["w2"];
        if !killed && w2["claimed"]["state"] == "busy" {
            let child = &mut f.workers[1].1;
            child.kill().unwrap();
            child.wait().unwrap();
            killed = true;
        }
        if f.decisions().len() >= 30 && killed {
            break;
        }
        assert!(Instant::now() < end, "not all jobs gated: {}", f.state());
    }
    assert_one_gated_each(&f, &jobs);
    let st = f.state();
    assert_eq!(st["workers"]["w2"]["lost"], true, "{st}");
    assert!(
        !st["superseded"].as_object().unwrap().is_empty(),
        "the killed worker's job was not re-dispatched: {st}"
    );
    let fs = f.fleet_status();
    let marks: BTreeSet<&str> = fs["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["mark"].as_str().unwrap())
        .collect();
    assert!(marks.contains("lost"), "{fs}");
}

#[test]
fn file_store_three_workers_thirty_jobs_one_killed() {
    three_workers_thirty_jobs(false);
}

#[test]
fn s3_three_workers_thirty_jobs_one_killed() {
    three_workers_thirty_jobs(true);
}

/// A hostile enrolled worker on S3: its URLs reach only its own prefix, it cannot open
/// another worker's ticket, and its heartbeat's lies get it nothing.
#[test]
fn a_hostile_worker_gets_nothing_it_was_not_given() {
    let mut f = Fleet::new(true);
    f.enroll("good");
    f.enroll("evil");
    f.serve("good", &["--max-jobs", "1"]);
    // The good worker's heartbeat lands; then one job goes to it.
    wait_until("good's heartbeat", Duration::from_secs(30), || {
        f.tick();
        f.state()["workers"]["good"]["claimed"].is_object()
    });
    // Stop good before it can take the ticket: the ticket stays in its mailbox.
    let c = &mut f.workers[0].1;
    c.kill().unwrap();
    c.wait().unwrap();
    f.submit(1, &[]);
    f.tick();
    let s3 = f.server.as_ref().unwrap();
    let good_ticket = s3
        .get(&format!("{PREFIX}/fleet/good/mailbox/0.age"))
        .expect("a sealed ticket in good's mailbox");
    assert!(good_ticket.starts_with(b"age-encryption.org/v1\n"));
    // evil's key cannot open it (seal.recipient).
    let evil_key = std::fs::read_to_string(f.key_dir("evil").join("worker.key")).unwrap();
    let evil_id = airlock_core::seal::Identity::parse(&evil_key).unwrap();
    let e = airlock_core::seal::open(&evil_id, &good_ticket, 1 << 20).unwrap_err();
    assert!(e.to_string().contains("seal.recipient"), "{e}");
    // evil's presigned URLs, pointed at good's objects, are refused by the store itself.
    let env = std::fs::read(f.enrolment("evil")).unwrap();
    let env: serde_json::Value = serde_json::from_slice(&env).unwrap();
    use base64::Engine as _;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(env["payload"].as_str().unwrap())
        .unwrap();
    let statement: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    let pred = &statement["predicate"];
    let evil_get = pred["mailbox"][0].as_str().unwrap();
    let evil_put = pred["heartbeat"].as_str().unwrap();
    for (method, url) in [
        (
            "GET",
            with_key(evil_get, &format!("{PREFIX}/fleet/good/mailbox/0.age")),
        ),
        (
            "PUT",
            with_key(evil_put, &format!("{PREFIX}/fleet/good/heartbeat.json")),
        ),
        ("GET", with_key(evil_get, &format!("{PREFIX}/fleet/"))),
    ] {
        let a: airlock_tests::s3::Answer = raw_request(method, &url, &[], b"{}");
        assert_eq!(a.status, 403, "{method} {url}: {}", a.status);
    }
    // evil's heartbeat: escape-laden, then oversized, then lying about another worker.
    let hb = |body: &[u8]| {
        let a = raw_request("PUT", evil_put, &[], body);
        assert_eq!(a.status, 200);
        f.tick();
        f.fleet_status()["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == "evil")
            .unwrap()
            .clone()
    };
    let w = hb(br#"{"format":"airlock.heartbeat/v1","name":"evil","state":"idle","version":"0.7\u001b]0;pwned\u0007","writes":["airlock.packet/v1","urn:airlock:predicate:artifact:v1"]}"#);
    assert_eq!(w["mark"], "refused", "{w}");
    assert!(
        w["refused"]
            .as_str()
            .unwrap()
            .contains("fleet-heartbeat-refused"),
        "{w}"
    );
    let big = format!(
        r#"{{"format":"airlock.heartbeat/v1","name":"evil","state":"idle","version":"1","pad":"{}"}}"#,
        "x".repeat(10_000)
    );
    let w = hb(big.as_bytes());
    assert_eq!(w["mark"], "refused", "{w}");
    let w = hb(br#"{"format":"airlock.heartbeat/v1","name":"good","state":"idle","version":"1"}"#);
    assert_eq!(w["mark"], "refused", "{w}");
    // A well-formed lie: idle, an old version, every label, formats it does not write.
    let w = hb(br#"{"format":"airlock.heartbeat/v1","name":"evil","state":"idle","version":"0.1.0","labels":["gpu"],"writes":["airlock.packet/v0"]}"#);
    assert_eq!(w["mark"], "ready", "{w}");
    f.submit(1, &[]);
    f.tick();
    assert!(
        f.state()["workers"]["evil"]["tickets"]
            .as_array()
            .unwrap()
            .is_empty(),
        "a worker whose formats cannot carry the job got it (fleet-formats)"
    );
    // Claims it writes our formats and is idle: it gets at most the mailbox's two tickets,
    // however many jobs wait and however idle it says it is.
    hb(br#"{"format":"airlock.heartbeat/v1","name":"evil","state":"idle","version":"0.1.0","writes":["airlock.packet/v1","urn:airlock:predicate:artifact:v1"]}"#);
    f.submit(2, &[]);
    for _ in 0..3 {
        hb(br#"{"format":"airlock.heartbeat/v1","name":"evil","state":"idle","version":"0.1.0","writes":["airlock.packet/v1","urn:airlock:predicate:artifact:v1"]}"#);
    }
    let tickets = f.state()["workers"]["evil"]["tickets"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(tickets, 2, "{}", f.state());
    // It cannot acknowledge good's ticket: good's books do not move.
    let good_before = f.state()["workers"]["good"]["tickets"].clone();
    hb(br#"{"format":"airlock.heartbeat/v1","name":"evil","state":"busy","version":"1","taken":[1,2,3],"writes":["airlock.packet/v1","urn:airlock:predicate:artifact:v1"]}"#);
    let good_after = f.state()["workers"]["good"]["tickets"].clone();
    assert_eq!(good_before["0"], good_after["0"]);
    assert_eq!(
        good_before.as_array().map(Vec::len),
        good_after.as_array().map(Vec::len)
    );
}

/// A job re-dispatched away from a lost worker: what the lost worker drops later is refused
/// (`fleet-superseded` in the ledger), never gated; `fleet revoke` makes a worker exit.
#[test]
fn a_superseded_job_is_refused_and_a_revoked_worker_exits() {
    let mut f = Fleet::new(false);
    f.enroll("a");
    f.enroll("b");
    // a heartbeats once (written where its URL points: a file:// store), then vanishes.
    let hb = f.home.join("store/fleet/a/heartbeat.json");
    std::fs::create_dir_all(hb.parent().unwrap()).unwrap();
    std::fs::write(&hb, br#"{"format":"airlock.heartbeat/v1","name":"a","state":"idle","version":"0.7.0","writes":["airlock.packet/v1","urn:airlock:predicate:artifact:v1"]}"#).unwrap();
    let jobs = f.submit(1, &[]);
    f.tick();
    let st = f.state();
    assert_eq!(
        st["workers"]["a"]["tickets"][0]["job"],
        jobs[0].as_str(),
        "{st}"
    );
    // The ticket, opened with a's own key (what a would do), and its job run by hand later.
    let sealed = std::fs::read(f.home.join("store/fleet/a/mailbox/0.age")).unwrap();
    let a_key = std::fs::read_to_string(f.key_dir("a").join("worker.key")).unwrap();
    let id = airlock_core::seal::Identity::parse(&a_key).unwrap();
    let plain = airlock_core::seal::open(&id, &sealed, 1 << 20).unwrap();
    let ticket: serde_json::Value = serde_json::from_slice(&plain).unwrap();
    assert_eq!(ticket["job"], jobs[0].as_str());
    wait_until("a to be marked lost", Duration::from_secs(30), || {
        f.tick();
        f.state()["workers"]["a"]["lost"] == true
    });
    let st = f.state();
    let new_job = st["superseded"][&jobs[0]]
        .as_str()
        .expect("re-dispatched")
        .to_owned();
    // b serves and finishes the new job.
    f.serve("b", &[]);
    wait_until("the new job gated", Duration::from_secs(120), || {
        f.tick();
        f.decisions().contains_key(&new_job) || f.cannot_sandbox()
    });
    if f.cannot_sandbox() {
        return;
    }
    // a comes back and runs the old ticket's token: its drop lands but is refused.
    let token = f.root.join("old.token");
    std::fs::write(&token, ticket["token"].as_str().unwrap()).unwrap();
    let out = run(cmd(&bin("airlock-worker"))
        .arg("run")
        .arg("--token-file")
        .arg(&token)
        .arg("--trusted-pub")
        .arg(f.home.join("trusted.pub"))
        .arg("--work-root")
        .arg(f.root.join("work"))
        .arg("--")
        .arg(f.root.join("gen.sh")));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let out = f.tick();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("fleet-superseded"),
        "{}",
        show(&out)
    );
    assert!(
        !f.decisions().contains_key(&jobs[0]),
        "a superseded job was gated"
    );
    let audit = run(f.airlock().args(["audit", "show", &jobs[0], "--json"]));
    assert!(
        String::from_utf8_lossy(&audit.stdout).contains("fleet-superseded"),
        "{}",
        show(&audit)
    );
    // Revoke b: it reads the signed revocation and exits 0.
    let out = run(f.airlock().args(["fleet", "revoke", "b"]));
    assert!(out.status.success(), "{}", show(&out));
    let b = &mut f.workers[0].1;
    let end = Instant::now() + Duration::from_secs(30);
    let st = loop {
        if let Some(st) = b.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < end, "b did not exit after revoke");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(st.success(), "{}", f.log("b"));
    assert!(f.log("b").contains("revoked"), "{}", f.log("b"));
}

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
