//! The whole valve through a real S3 implementation over HTTP: `s3s` + `s3s-fs` in-process
//! (`airlock_tests::s3`), SigV4 enforced, path-style. The trusted `airlock` gets the S3
//! credentials in its environment; the worker gets its token and nothing else (its
//! environment is cleared), so every byte it moves goes through a presigned URL.
//!
//! Each scope test asserts the server's own answer (status and S3 error code) and that the
//! trusted side's view of the bucket did not change. Fault tests put a fault injector in front
//! of the server (503s, dropped connections, bodies cut short, a crash, a hard stop).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use airlock_core::token::{mint_token, verify_token, JobClaims};
use airlock_tests::s3::{FaultAction, S3Server, BUCKET};
use airlock_tests::*;

const CALC_PY: &str = "def add(a, b):\n    return a + b\n";
const TEST_CALC_PY: &str = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n";
const PREFIX: &str = "team/airlock";

fn generator(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/generators")
        .join(name)
        .canonicalize()
        .unwrap()
}

/// A submitted job: its id and the file holding its token.
struct Job {
    id: String,
    token_file: PathBuf,
}

impl Job {
    fn token(&self) -> String {
        std::fs::read_to_string(&self.token_file)
            .unwrap()
            .trim()
            .to_owned()
    }
}

/// A trusted home whose store is `s3://airlock/team/airlock` on an in-process server, and a
/// small git repository to pack.
struct S3Env {
    s3: S3Server,
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    repo: PathBuf,
}

impl S3Env {
    fn new() -> S3Env {
        let s3 = S3Server::start();
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let home = root.join("home");
        let repo = root.join("repo");
        make_repo(
            &repo,
            &[
                ("src/calc.py", CALC_PY.as_bytes()),
                ("tests/test_calc.py", TEST_CALC_PY.as_bytes()),
                ("README.md", b"# example\n"),
            ],
        );
        let env = S3Env {
            s3,
            _tmp: tmp,
            root,
            home,
            repo,
        };
        let out = run(env
            .airlock()
            .args(["init", "--store", &env.s3.store_url(PREFIX)]));
        assert!(out.status.success(), "init: {}", show(&out));
        env
    }

    /// `airlock --home HOME` with the S3 credentials and endpoint in its environment.
    fn airlock(&self) -> Command {
        let mut c = cmd(&bin("airlock"));
        c.arg("--home").arg(&self.home);
        for (k, v) in self.s3.aws_env() {
            c.env(k, v);
        }
        c
    }

    fn submit(&self, ttl: &str) -> Job {
        self.submit_with(ttl, &[])
    }

    fn submit_with(&self, ttl: &str, extra: &[&str]) -> Job {
        let prompt = self.root.join("prompt.txt");
        std::fs::write(&prompt, "Add docstrings and a sub() function.\n").unwrap();
        let tokens = self.root.join("tokens");
        std::fs::create_dir_all(&tokens).unwrap();
        let n = std::fs::read_dir(&tokens).unwrap().count();
        let token_file = tokens.join(format!("token-{n}"));
        let out = run(self
            .airlock()
            .args(["submit", "--json", "--ttl", ttl, "--repo"])
            .arg(&self.repo)
            .arg("--prompt-file")
            .arg(&prompt)
            .arg("--token-out")
            .arg(&token_file)
            .args(extra));
        assert!(out.status.success(), "submit: {}", show(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        Job {
            id: v["job"].as_str().unwrap().to_owned(),
            token_file,
        }
    }

    /// `airlock-worker run` with ONLY the token: the environment is cleared (no AWS_*, no
    /// credentials of any kind), HOME is an empty directory.
    fn worker(&self, job: &Job, gen: &str) -> Output {
        let work_root = self.root.join("worker");
        let empty_home = self.root.join("worker-home");
        std::fs::create_dir_all(&work_root).unwrap();
        std::fs::create_dir_all(&empty_home).unwrap();
        let mut c = Command::new(bin("airlock-worker"));
        c.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &empty_home)
            .arg("run")
            .arg("--token-file")
            .arg(&job.token_file)
            .arg("--trusted-pub")
            .arg(self.home.join("trusted.pub"))
            .arg("--work-root")
            .arg(&work_root)
            .arg("--")
            .arg(generator(gen));
        run(&mut c)
    }

    /// Runs the worker and expects success; `false` (with a printed reason) when this machine
    /// cannot sandbox the generator.
    fn work(&self, job: &Job, gen: &str) -> bool {
        let out = self.worker(job, gen);
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("sandbox") && err.contains("unavailable") {
                eprintln!("SKIP: the worker cannot sandbox here: {err}");
                return false;
            }
            panic!("worker failed: {}", show(&out));
        }
        true
    }

    /// The whole bucket as the trusted side sees it (S3 API, trusted credentials).
    fn bucket(&self) -> BTreeMap<String, u64> {
        self.s3.list("")
    }

    fn key(&self, rel: &str) -> String {
        format!("{PREFIX}/{rel}")
    }

    /// The token's claims, verified with the pinned trusted key (what the worker sees).
    fn claims(&self, job: &Job) -> JobClaims {
        let trusted = airlock_core::keys::load_public_key(&self.home.join("trusted.pub")).unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        (*verify_token(&job.token(), &trusted, now).unwrap()).clone()
    }

    /// Re-signs `claims` with the trusted key into a new token file: a token whose URLs were
    /// doctored, as if an attacker could forge the signature; only the store stops it now.
    fn forged_token(&self, claims: &JobClaims, name: &str) -> Job {
        let key = airlock_core::keys::load_private_key(&self.home.join("trusted.key")).unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let token = mint_token(&key, claims, now, 600).unwrap();
        let token_file = self.root.join(name);
        std::fs::write(&token_file, token.expose()).unwrap();
        Job {
            id: claims.job.to_string(),
            token_file,
        }
    }

    fn gate(&self, job: &str) -> Output {
        run(self
            .airlock()
            .args(["gate", job, "--json", "--repo"])
            .arg(&self.repo))
    }
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", show(out)))
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

// ---------------------------------------------------------------------------------------------
// The flow

#[test]
fn s3_submit_worker_fetch_gate_end_to_end_with_a_credential_free_worker() {
    let env = S3Env::new();
    let job = env.submit("20m");
    let id = &job.id;

    // The trusted side wrote the inbox, the record and the ledger through the S3 API.
    let bucket = env.bucket();
    for rel in [
        format!("inbox/{id}/bundle.tar.gz"),
        format!("inbox/{id}/bundle.dsse.json"),
        format!("records/{id}.dsse.json"),
    ] {
        assert!(
            bucket.contains_key(&env.key(&rel)),
            "{rel} missing: {bucket:?}"
        );
    }
    assert!(
        bucket.keys().all(|k| k.starts_with(&format!("{PREFIX}/"))),
        "everything lives under the prefix: {bucket:?}"
    );
    // Its token holds presigned URLs for the server, never a credential.
    let token = job.token();
    assert!(!token.contains(airlock_tests::s3::SECRET_KEY));
    let claims = env.claims(&job);
    for url in [
        &claims.bundle.url,
        &claims.bundle_envelope_url,
        &claims.drop.checkpoint,
        &claims.drop.checkpoint_envelope,
        &claims.drop.artifact,
        &claims.drop.artifact_envelope,
    ] {
        assert!(
            url.starts_with(&format!("{}/{BUCKET}/{PREFIX}/", env.s3.endpoint())),
            "{url}"
        );
        assert!(url.contains("X-Amz-Signature="), "{url}");
        assert!(!url.contains(airlock_tests::s3::SECRET_KEY), "{url}");
    }

    let seen = env.s3.log().len();
    if !env.work(&job, "docstring.sh") {
        return;
    }
    // Every request the worker made was presigned, carried no Authorization header, and
    // touched only this job's inbox and drop objects.
    let worker_requests = &env.s3.log()[seen..];
    assert!(!worker_requests.is_empty());
    for r in worker_requests {
        assert!(r.presigned && !r.authorization, "{r:?}");
        let allowed = [
            format!("/{BUCKET}/{PREFIX}/inbox/{id}/bundle.tar.gz"),
            format!("/{BUCKET}/{PREFIX}/inbox/{id}/bundle.dsse.json"),
            format!("/{BUCKET}/{PREFIX}/drop/{id}/artifact.tar.gz"),
            format!("/{BUCKET}/{PREFIX}/drop/{id}/artifact.dsse.json"),
            format!("/{BUCKET}/{PREFIX}/drop/{id}/checkpoint.tar.gz"),
            format!("/{BUCKET}/{PREFIX}/drop/{id}/checkpoint.dsse.json"),
        ];
        assert!(allowed.contains(&r.path), "{r:?}");
        assert!(matches!(r.status, Some(200)), "{r:?}");
    }
    assert!(env
        .bucket()
        .contains_key(&env.key(&format!("drop/{id}/artifact.dsse.json"))));

    let out = run(env.airlock().args(["status", id, "--json"]));
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(json(&out)[0]["state"], "landed", "{}", show(&out));

    let out = run(env.airlock().args(["fetch", id, "--json"]));
    assert!(out.status.success(), "fetch: {}", show(&out));
    assert_eq!(json(&out)["job"], id.as_str());

    let out = env.gate(id);
    assert_eq!(out.status.code(), Some(0), "gate: {}", show(&out));
    assert_eq!(json(&out)["decision"], "queue");

    let out = run(env.airlock().args(["status", "--json"]));
    let v = json(&out);
    assert_eq!(v[0]["state"], "gated", "{v:#}");
    assert_eq!(v[0]["decision"], "queue", "{v:#}");
    let out = run(env.airlock().args(["audit", "verify"]));
    assert!(out.status.success(), "{}", show(&out));
}
