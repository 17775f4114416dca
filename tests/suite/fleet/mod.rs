//! The fleet end to end (docs/FLEET.md): real `airlock-worker serve` processes enrolled with
//! `airlock fleet enroll`, jobs queued with `submit --fleet`, dispatched, gated and recovered
//! by `airlock watch`, on `file://` and on the in-process S3 server (SigV4, presigned URLs);
//! `Fleet::on_azurite` puts the same fleet on Azurite for `suite/azure.rs`.
//! Then a hostile enrolled worker (`hostile.rs`: each attempt refused with a rule id) and
//! eviction, resume and renewal (`eviction.rs`).

mod eviction;
mod hostile;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use airlock_tests::azurite::Azurite;
use airlock_tests::s3::S3Server;
use airlock_tests::*;

pub(super) const PREFIX: &str = "team/fleet";

/// A trusted home (file://, S3 or Azurite), a repository, and a generator any sandbox user can
/// run.
pub(super) struct Fleet {
    pub(super) server: Option<S3Server>,
    pub(super) azurite: Option<Azurite>,
    _tmp: tempfile::TempDir,
    pub(super) root: PathBuf,
    pub(super) home: PathBuf,
    pub(super) repo: PathBuf,
    pub(super) workers: Vec<(String, Child)>,
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
    pub(super) fn new(s3: bool) -> Fleet {
        Fleet::build(s3.then(S3Server::start), None)
    }

    /// The same with its store on Azurite (`az://`; suite/azure.rs).
    pub(super) fn on_azurite(azurite: Azurite) -> Fleet {
        Fleet::build(None, Some(azurite))
    }

    fn build(server: Option<S3Server>, azurite: Option<Azurite>) -> Fleet {
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
            server,
            azurite,
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
        if let Some(az) = &f.azurite {
            init.args(["--store", &az.store_url(PREFIX)]);
        }
        let out = run(&mut init);
        assert!(out.status.success(), "init: {}", show(&out));
        f
    }

    pub(super) fn airlock(&self) -> Command {
        let mut c = cmd(&bin("airlock"));
        c.arg("--home").arg(&self.home);
        if let Some(s3) = &self.server {
            for (k, v) in s3.aws_env() {
                c.env(k, v);
            }
        }
        if let Some(az) = &self.azurite {
            for (k, v) in az.env() {
                c.env(k, v);
            }
        }
        c
    }

    pub(super) fn key_dir(&self, name: &str) -> PathBuf {
        self.root.join("keys").join(name)
    }

    pub(super) fn enrolment(&self, name: &str) -> PathBuf {
        self.root.join(format!("{name}.enrol"))
    }

    /// `keygen` then `fleet enroll NAME` with a 1 s heartbeat.
    pub(super) fn enroll(&self, name: &str) {
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
    pub(super) fn serve(&mut self, name: &str, extra: &[&str]) {
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

    pub(super) fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.root.join(format!("{name}.log"))).unwrap_or_default()
    }

    /// Queues `n` jobs with `submit --fleet`; returns their ids.
    pub(super) fn submit(&self, n: usize, extra: &[&str]) -> Vec<String> {
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
    pub(super) fn tick(&self) -> std::process::Output {
        run(self
            .airlock()
            .args(["watch", "--once", "--repo"])
            .arg(&self.repo))
    }

    pub(super) fn state(&self) -> serde_json::Value {
        let p = self.home.join("fleet/state.json");
        serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|_| b"{}".to_vec())).unwrap()
    }

    /// Job -> gate decision, from `airlock status --json` (the ledger).
    pub(super) fn decisions(&self) -> BTreeMap<String, String> {
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

    pub(super) fn fleet_status(&self) -> serde_json::Value {
        let out = run(self.airlock().args(["fleet", "status", "--json"]));
        assert!(out.status.success(), "fleet status: {}", show(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Skips (outside CI) when the workers cannot sandbox here.
    pub(super) fn cannot_sandbox(&self) -> bool {
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

pub(super) fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
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
