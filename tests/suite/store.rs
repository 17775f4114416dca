//! The whole valve through a real S3 implementation over HTTP: `s3s` + `s3s-fs` in-process
//! (`airlock_tests::s3`), SigV4 enforced, path-style. The trusted `airlock` gets the S3
//! credentials in its environment; the worker gets its token and nothing else (its
//! environment is cleared), so every byte it moves goes through a presigned URL.
//!
//! Each scope test asserts the server's own answer (status and S3 error code) and that the
//! trusted side's view of the bucket did not change. Fault tests put a fault injector in front
//! of the server (503s, dropped connections, bodies cut short, a crash, a hard stop).
// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use airlock_core::token::{mint_token, verify_token, JobClaims};
use airlock_tests::s3::{
    key_of, raw_request, with_key, with_path, Answer, FaultAction, S3Server, BUCKET,
};
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
    server: Option<S3Server>,
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    repo: PathBuf,
}

impl S3Env {
    fn new() -> S3Env {
        let env = S3Env::bare(Some(S3Server::start()));
        let out = run(env
            .airlock()
            .args(["init", "--store", &env.s3().store_url(PREFIX)]));
        assert!(out.status.success(), "init: {}", show(&out));
        env
    }

    /// The same with the default `file://` store inside the home directory (no server).
    fn local() -> S3Env {
        let env = S3Env::bare(None);
        let out = run(env.airlock().arg("init"));
        assert!(out.status.success(), "init: {}", show(&out));
        env
    }

    fn s3(&self) -> &S3Server {
        self.server.as_ref().expect("an S3 environment")
    }

    fn bare(server: Option<S3Server>) -> S3Env {
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
        S3Env {
            server,
            _tmp: tmp,
            root,
            home,
            repo,
        }
    }

    /// `airlock --home HOME` with the S3 credentials and endpoint in its environment.
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

    /// Runs the worker and expects an artifact dropped (exit 0; 3 when the generator failed,
    /// 5 when it changed nothing); `false` when this machine cannot sandbox the generator
    /// ([`needs_sandbox_skip`]: a failure under CI).
    fn work(&self, job: &Job, gen: &str) -> bool {
        let out = self.worker(job, gen);
        if needs_sandbox_skip(&out) {
            return false;
        }
        assert!(
            matches!(out.status.code(), Some(0 | 3 | 5)),
            "worker failed: {}",
            show(&out)
        );
        true
    }

    /// The whole bucket as the trusted side sees it (S3 API, trusted credentials).
    fn bucket(&self) -> BTreeMap<String, u64> {
        self.s3().list("")
    }

    fn key(&self, rel: &str) -> String {
        format!("{PREFIX}/{rel}")
    }

    /// The token's claims, verified with the pinned trusted key (what the worker sees).
    fn claims(&self, job: &Job) -> JobClaims {
        let trusted = airlock_core::keys::load_public_key(&self.home.join("trusted.pub")).unwrap();
        let now = airlock_core::clock::now_unix();
        (*verify_token(&job.token(), &trusted, now).unwrap()).clone()
    }

    /// Re-signs `claims` with the trusted key into a new token file: a token whose URLs were
    /// doctored, as if an attacker could forge the signature; only the store stops it now.
    fn forged_token(&self, claims: &JobClaims, name: &str) -> Job {
        let key = airlock_core::keys::load_private_key(&self.home.join("trusted.key")).unwrap();
        let now = airlock_core::clock::now_unix();
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
        &claims.drop.checkpoint_1,
        &claims.drop.checkpoint_1_envelope,
        &claims.drop.artifact,
        &claims.drop.artifact_envelope,
    ] {
        assert!(
            url.starts_with(&format!("{}/{BUCKET}/{PREFIX}/", env.s3().endpoint())),
            "{url}"
        );
        assert!(url.contains("X-Amz-Signature="), "{url}");
        assert!(!url.contains(airlock_tests::s3::SECRET_KEY), "{url}");
    }

    let seen = env.s3().log().len();
    if !env.work(&job, "docstring.sh") {
        return;
    }
    // Every request the worker made was presigned, carried no Authorization header, and
    // touched only this job's inbox and drop objects.
    let worker_requests = &env.s3().log()[seen..];
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
            format!("/{BUCKET}/{PREFIX}/drop/{id}/checkpoint.1.tar.gz"),
            format!("/{BUCKET}/{PREFIX}/drop/{id}/checkpoint.1.dsse.json"),
        ];
        assert!(allowed.contains(&r.path), "{r:?}");
        // The one 404: the worker's look for a final artifact before it runs the generator.
        let finished_check = r.method == "GET" && r.path.ends_with("/artifact.dsse.json");
        assert!(
            matches!(r.status, Some(200)) || (finished_check && r.status == Some(404)),
            "{r:?}"
        );
    }
    assert!(
        worker_requests
            .iter()
            .any(|r| r.method == "GET" && r.path.ends_with("/artifact.dsse.json")),
        "the worker never looked for a finished artifact"
    );
    assert!(env
        .bucket()
        .contains_key(&env.key(&format!("drop/{id}/artifact.dsse.json"))));

    let out = run(env.airlock().args(["status", id, "--json"]));
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(json(&out)[0]["state"], "landed", "{}", show(&out));

    let seen = env.s3().log().len();
    let out = run(env.airlock().args(["fetch", id, "--json"]));
    assert!(out.status.success(), "fetch: {}", show(&out));
    assert_eq!(json(&out)["job"], id.as_str());
    // Fetch appends to the ledger from the tail hint submit left (no listing of `ledger/`,
    // which grows with every entry; the hint is a copy of the tail entry, so the only entry
    // read is the read-back of the one written) and takes the landed time from its GETs (no
    // HEAD).
    let fetch_requests = &env.s3().log()[seen..];
    let entry_reads: Vec<_> = fetch_requests
        .iter()
        .filter(|r| r.method == "GET" && r.path.contains(&format!("/{PREFIX}/ledger/")))
        .collect();
    assert_eq!(entry_reads.len(), 1, "{entry_reads:?}");
    for r in fetch_requests {
        assert!(
            !r.query.contains("list-type") && r.method != "HEAD",
            "{r:?}"
        );
    }
    assert!(
        fetch_requests
            .iter()
            .any(|r| r.method == "PUT" && r.path.ends_with("/ledger.tail")),
        "{fetch_requests:?}"
    );

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

// ---------------------------------------------------------------------------------------------
// Scope: what a token holder can do with the URLs it holds, asked of the real server

/// Asserts the server refused with 403 and one of the S3 codes for a refused signature.
#[track_caller]
fn assert_forbidden(what: &str, a: &Answer) {
    assert_eq!(a.status, 403, "{what}: the server did not refuse: {a:?}");
    assert!(
        ["AccessDenied", "SignatureDoesNotMatch"].contains(&a.code.as_str()),
        "{what}: unexpected S3 code: {a:?}"
    );
}

#[test]
fn sigv4_is_enforced_unsigned_and_badly_signed_requests_are_refused() {
    let env = S3Env::new();
    let job = env.submit("20m");
    let key = env.key(&format!("inbox/{}/bundle.tar.gz", job.id));
    let url = format!("{}/{BUCKET}/{key}", env.s3().endpoint());
    let a = raw_request("GET", &url, &[], &[]);
    assert_eq!((a.status, a.code.as_str()), (403, "AccessDenied"), "{a:?}");
    let a = raw_request("PUT", &url, &[], b"x");
    assert_eq!((a.status, a.code.as_str()), (403, "AccessDenied"), "{a:?}");
    let a = raw_request(
        "GET",
        &format!("{}/{BUCKET}?list-type=2", env.s3().endpoint()),
        &[],
        &[],
    );
    assert_eq!((a.status, a.code.as_str()), (403, "AccessDenied"), "{a:?}");
    // A client with the right key id but the wrong secret.
    airlock_tests::s3::install_tls_provider();
    let bad = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(env.s3().endpoint())
        .with_allow_http(true)
        .with_bucket_name(BUCKET)
        .with_region(airlock_tests::s3::REGION)
        .with_access_key_id(airlock_tests::s3::ACCESS_KEY)
        .with_secret_access_key("not-the-secret")
        .with_retry(object_store::RetryConfig {
            max_retries: 0,
            ..Default::default()
        })
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let err = rt
        .block_on(object_store::ObjectStoreExt::get(
            &bad,
            &object_store::path::Path::from(key.as_str()),
        ))
        .map(|_| ())
        .unwrap_err();
    assert!(
        err.to_string().contains("403") || err.to_string().contains("SignatureDoesNotMatch"),
        "{err}"
    );
}

#[test]
fn token_holder_cannot_list_read_other_jobs_or_write_outside_its_drop() {
    let env = S3Env::new();
    let a = env.submit("20m");
    let b = env.submit("20m");
    let ca = env.claims(&a);
    let cb = env.claims(&b);
    let (ida, idb) = (a.id.as_str(), b.id.as_str());
    let before = env.s3().contents();

    let get = ca.bundle.url.clone();
    let put = ca.drop.checkpoint.clone();
    let put_new = ca.drop.artifact.clone();
    let once = [("if-none-match", "*")];
    let cases: Vec<(&str, Answer)> = vec![
        // List: the bucket, the prefix, the job's own inbox "directory".
        (
            "list the bucket with the bundle URL's signature",
            raw_request("GET", &with_path(&get, &format!("/{BUCKET}")), &[], &[]),
        ),
        (
            "list-type=2 added to the bundle URL",
            raw_request(
                "GET",
                &format!("{}&list-type=2", with_path(&get, &format!("/{BUCKET}"))),
                &[],
                &[],
            ),
        ),
        (
            "list the job's own inbox prefix",
            raw_request(
                "GET",
                &with_key(&get, &env.key(&format!("inbox/{ida}/"))),
                &[],
                &[],
            ),
        ),
        // Read another job's objects.
        (
            "read job B's bundle with A's GET URL",
            raw_request(
                "GET",
                &with_key(&get, &env.key(&format!("inbox/{idb}/bundle.tar.gz"))),
                &[],
                &[],
            ),
        ),
        (
            "read job B's record",
            raw_request(
                "GET",
                &with_key(&get, &env.key(&format!("records/{idb}.dsse.json"))),
                &[],
                &[],
            ),
        ),
        (
            "read the ledger",
            raw_request(
                "GET",
                &with_key(&get, &env.key("ledger/000000000001.dsse.json")),
                &[],
                &[],
            ),
        ),
        // Write another job's keys.
        (
            "write job B's checkpoint with A's PUT URL",
            raw_request(
                "PUT",
                &with_key(&put, &key_of(&cb.drop.checkpoint)),
                &[],
                b"forged",
            ),
        ),
        (
            "write job B's artifact with A's write-once URL",
            raw_request(
                "PUT",
                &with_key(&put_new, &key_of(&cb.drop.artifact)),
                &once,
                b"forged",
            ),
        ),
        // Write keys of its own job that are not in its token.
        (
            "overwrite its own bundle",
            raw_request(
                "PUT",
                &with_key(&put, &env.key(&format!("inbox/{ida}/bundle.tar.gz"))),
                &[],
                b"forged",
            ),
        ),
        (
            "write its own job record",
            raw_request(
                "PUT",
                &with_key(&put, &env.key(&format!("records/{ida}.dsse.json"))),
                &[],
                b"forged",
            ),
        ),
        (
            "write a ledger entry",
            raw_request(
                "PUT",
                &with_key(&put, &env.key("ledger/000000000099.dsse.json")),
                &[],
                b"forged",
            ),
        ),
        (
            "write another name in its own drop",
            raw_request(
                "PUT",
                &with_key(&put, &env.key(&format!("drop/{ida}/extra.tar.gz"))),
                &[],
                b"forged",
            ),
        ),
        (
            "write outside the prefix",
            raw_request("PUT", &with_key(&put, "elsewhere/x"), &[], b"forged"),
        ),
        // Methods other than the one signed.
        (
            "PUT with the bundle's GET URL",
            raw_request("PUT", &get, &[], b"forged"),
        ),
        (
            "DELETE with the bundle's GET URL",
            raw_request("DELETE", &get, &[], &[]),
        ),
        (
            "GET with the checkpoint's PUT URL",
            raw_request("GET", &put, &[], &[]),
        ),
        (
            "DELETE with the checkpoint's PUT URL",
            raw_request("DELETE", &put, &[], &[]),
        ),
        (
            "HEAD with the checkpoint's PUT URL",
            raw_request("HEAD", &put, &[], &[]),
        ),
        // The signed parts edited.
        (
            "expiry stretched in the URL",
            raw_request(
                "GET",
                &edit_param(&get, "X-Amz-Expires", "604800"),
                &[],
                &[],
            ),
        ),
        (
            "signature edited",
            raw_request(
                "GET",
                &edit_param(&get, "X-Amz-Signature", &"0".repeat(64)),
                &[],
                &[],
            ),
        ),
        // The write-once condition is signed: dropping it voids the URL.
        (
            "the artifact URL without if-none-match",
            raw_request("PUT", &put_new, &[], b"forged"),
        ),
    ];
    for (what, answer) in &cases {
        if what.starts_with("HEAD") {
            // A HEAD answer has no body to carry the S3 code.
            assert_eq!(answer.status, 403, "{what}: {answer:?}");
        } else {
            assert_forbidden(what, answer);
        }
    }
    // Every one of them logged as a 403 from s3s itself (no fault injected).
    let refused = env
        .s3()
        .log()
        .iter()
        .filter(|l| l.status == Some(403) && l.injected.is_none())
        .count();
    assert_eq!(refused, cases.len());
    assert_eq!(
        env.s3().contents(),
        before,
        "the trusted side's view changed"
    );

    // What the token does allow still works, exactly once for the final artifact.
    let ok = raw_request("GET", &get, &[], &[]);
    assert_eq!(ok.status, 200, "{ok:?}");
    let first = raw_request("PUT", &put_new, &once, b"first");
    assert_eq!(first.status, 200, "{first:?}");
    let second = raw_request("PUT", &put_new, &once, b"second");
    assert_eq!(
        (second.status, second.code.as_str()),
        (412, "PreconditionFailed"),
        "{second:?}"
    );
    assert_eq!(
        env.s3().get(&key_of(&put_new)).as_deref(),
        Some(&b"first"[..])
    );
}

/// `url` with query parameter `name` set to `value`.
fn edit_param(url: &str, name: &str, value: &str) -> String {
    let (base, query) = url.split_once('?').unwrap();
    let q: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k == name => format!("{k}={value}"),
            _ => kv.to_owned(),
        })
        .collect();
    format!("{base}?{}", q.join("&"))
}

#[test]
fn worker_reports_the_stores_refusal_of_a_doctored_token_and_writes_nothing() {
    let env = S3Env::new();
    let a = env.submit("20m");
    let b = env.submit("20m");
    let ca = env.claims(&a);
    let cb = env.claims(&b);
    let before = env.s3().contents();

    // The bundle URL points at job B's bundle (A's signature): the GET is refused.
    let mut claims = ca.clone();
    claims.bundle.url = with_key(&ca.bundle.url, &key_of(&cb.bundle.url));
    let forged = env.forged_token(&claims, "forged-read");
    let out = env.worker(&forged, "docstring.sh");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HTTP 403") && err.contains("transfer.forbidden"),
        "{err}"
    );

    // The artifact URL points at job B's drop: the generator runs, the upload is refused.
    let mut claims = ca.clone();
    claims.drop.artifact = with_key(&ca.drop.artifact, &key_of(&cb.drop.artifact));
    let forged = env.forged_token(&claims, "forged-write");
    let out = env.worker(&forged, "docstring.sh");
    let err = String::from_utf8_lossy(&out.stderr);
    if !needs_sandbox_skip(&out) {
        assert_eq!(out.status.code(), Some(1), "{}", show(&out));
        assert!(
            err.contains("HTTP 403") && err.contains("transfer.forbidden"),
            "{err}"
        );
        let refused = env
            .s3()
            .log_for("PUT", &format!("drop/{}/artifact.tar.gz", b.id));
        assert!(
            !refused.is_empty() && refused.iter().all(|l| l.status == Some(403)),
            "{refused:?}"
        );
    }
    assert_eq!(
        env.s3().contents(),
        before,
        "the trusted side's view changed"
    );
    let out = run(env.airlock().args(["fetch", &b.id]));
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no artifact yet"),
        "{}",
        show(&out)
    );
}

#[test]
fn every_url_is_refused_after_the_token_expires() {
    let env = S3Env::new();
    let out = run(env
        .airlock()
        .args(["submit", "--json", "--ttl", "2s", "--repo"])
        .arg(&env.repo)
        .arg("--prompt-file")
        .arg({
            let p = env.root.join("p.txt");
            std::fs::write(&p, "x\n").unwrap();
            p
        })
        .arg("--token-out")
        .arg(env.root.join("short-token")));
    assert!(out.status.success(), "{}", show(&out));
    let v = json(&out);
    let job = Job {
        id: v["job"].as_str().unwrap().to_owned(),
        token_file: env.root.join("short-token"),
    };
    let expires_at = v["expires_at"].as_u64().unwrap();
    let claims = env.claims(&job);
    let once = [("if-none-match", "*")];
    // Before expiry the bundle URL works (so what follows is the clock, not a bad URL).
    assert_eq!(raw_request("GET", &claims.bundle.url, &[], &[]).status, 200);

    while airlock_core::clock::now_unix() <= expires_at + 1 {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let before = env.s3().contents();
    for (what, a) in [
        (
            "GET bundle",
            raw_request("GET", &claims.bundle.url, &[], &[]),
        ),
        (
            "GET bundle envelope",
            raw_request("GET", &claims.bundle_envelope_url, &[], &[]),
        ),
        (
            "PUT checkpoint",
            raw_request("PUT", &claims.drop.checkpoint, &[], b"late"),
        ),
        (
            "PUT checkpoint envelope",
            raw_request("PUT", &claims.drop.checkpoint_envelope, &[], b"late"),
        ),
        (
            "PUT artifact",
            raw_request("PUT", &claims.drop.artifact, &once, b"late"),
        ),
        (
            "PUT artifact envelope",
            raw_request("PUT", &claims.drop.artifact_envelope, &once, b"late"),
        ),
    ] {
        assert_eq!(
            (a.status, a.code.as_str()),
            (403, "AccessDenied"),
            "{what}: {a:?}"
        );
        assert!(a.body.contains("expired"), "{what}: {a:?}");
    }
    // The worker refuses the expired token itself, before any request.
    let seen = env.s3().log().len();
    let out = env.worker(&job, "docstring.sh");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("token.expired"),
        "{}",
        show(&out)
    );
    assert_eq!(
        env.s3().log().len(),
        seen,
        "the worker sent requests with an expired token"
    );
    // Re-signed with a fresh expiry, its URLs are still dead: the store's answer is reported.
    let forged = env.forged_token(&claims, "refreshed");
    let out = env.worker(&forged, "docstring.sh");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("HTTP 403") && err.contains("expired"), "{err}");
    assert_eq!(
        env.s3().contents(),
        before,
        "the trusted side's view changed"
    );
}

// ---------------------------------------------------------------------------------------------
// Faults: the server misbehaves while the worker moves bytes

fn statuses(env: &S3Env, method: &str, suffix: &str) -> Vec<(Option<u16>, Option<FaultAction>)> {
    env.s3()
        .log_for(method, suffix)
        .into_iter()
        .map(|l| (l.status, l.injected))
        .collect()
}

#[test]
fn worker_retries_through_503s_and_the_job_completes() {
    let env = S3Env::new();
    let job = env.submit("20m");
    let id = &job.id;
    env.s3().inject(
        "GET",
        &format!("inbox/{id}/bundle.tar.gz"),
        FaultAction::Status(503),
        2,
    );
    env.s3().inject(
        "PUT",
        &format!("drop/{id}/artifact.tar.gz"),
        FaultAction::Status(503),
        3,
    );
    if !env.work(&job, "docstring.sh") {
        return;
    }
    assert!(
        env.s3().pending_faults().is_empty(),
        "{:?}",
        env.s3().pending_faults()
    );
    let f = Some(FaultAction::Status(503));
    assert_eq!(
        statuses(&env, "GET", &format!("inbox/{id}/bundle.tar.gz")),
        vec![(Some(503), f), (Some(503), f), (Some(200), None)]
    );
    assert_eq!(
        statuses(&env, "PUT", &format!("drop/{id}/artifact.tar.gz")),
        vec![
            (Some(503), f),
            (Some(503), f),
            (Some(503), f),
            (Some(200), None)
        ]
    );
    let out = env.gate(id);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(json(&out)["decision"], "queue");
}

#[test]
fn worker_retries_after_uploads_cut_short_and_a_server_crash_and_the_job_completes() {
    let env = S3Env::new();
    let job = env.submit("20m");
    let id = &job.id;
    // The bundle download loses its connection once; the artifact upload is cut off
    // mid-body twice; the envelope upload crashes the server, which resets the next two
    // connections while it "restarts" (same data, same port).
    env.s3().inject(
        "GET",
        &format!("inbox/{id}/bundle.tar.gz"),
        FaultAction::Drop,
        1,
    );
    env.s3().inject(
        "PUT",
        &format!("drop/{id}/artifact.tar.gz"),
        FaultAction::Truncate(64),
        2,
    );
    env.s3().inject(
        "PUT",
        &format!("drop/{id}/artifact.dsse.json"),
        FaultAction::Outage { resets: 2 },
        1,
    );
    if !env.work(&job, "docstring.sh") {
        return;
    }
    assert!(
        env.s3().pending_faults().is_empty(),
        "{:?}",
        env.s3().pending_faults()
    );
    let cut = Some(FaultAction::Truncate(64));
    assert_eq!(
        statuses(&env, "PUT", &format!("drop/{id}/artifact.tar.gz")),
        vec![(None, cut), (None, cut), (Some(200), None)]
    );
    // The crash request plus the one that got through; the two reset connections never
    // reached HTTP.
    assert_eq!(
        statuses(&env, "PUT", &format!("drop/{id}/artifact.dsse.json")),
        vec![
            (None, Some(FaultAction::Outage { resets: 2 })),
            (Some(200), None)
        ]
    );
    // No partial object survived the cut uploads: fetch verifies the signed digest.
    let out = run(env.airlock().args(["fetch", id, "--json"]));
    assert!(out.status.success(), "{}", show(&out));
    let out = env.gate(id);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

#[test]
fn server_gone_mid_upload_fails_the_worker_clearly_and_fetch_accepts_nothing_partial() {
    let env = S3Env::new();
    let job = env.submit("20m");
    let id = &job.id;
    // The tarball lands; the server stops dead when the envelope is sent, and stays down
    // for longer than the worker retries.
    env.s3().inject(
        "PUT",
        &format!("drop/{id}/artifact.dsse.json"),
        FaultAction::Stop,
        1,
    );
    let out = env.worker(&job, "docstring.sh");
    if needs_sandbox_skip(&out) {
        return;
    }
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(err.contains("gave up after 5 attempts"), "{err}");
    assert!(env.s3().is_stopped());

    env.s3().restart();
    let bucket = env.bucket();
    assert!(bucket.contains_key(&env.key(&format!("drop/{id}/artifact.tar.gz"))));
    assert!(!bucket.contains_key(&env.key(&format!("drop/{id}/artifact.dsse.json"))));
    // Half a result is no result: fetch and gate find nothing to judge (an error, not a
    // verdict), status does not call it landed, and the ledger records no fetch.
    let out = run(env.airlock().args(["fetch", id]));
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no artifact yet"),
        "{}",
        show(&out)
    );
    let out = env.gate(id);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let out = run(env.airlock().args(["status", id, "--json"]));
    assert_eq!(json(&out)[0]["state"], "packed", "{}", show(&out));
    let out = run(env.airlock().args(["audit", "show", id, "--json"]));
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("\"fetch\""),
        "{}",
        show(&out)
    );
    assert!(!env
        .home
        .join("jobs")
        .join(id)
        .join("artifact.tar.gz")
        .exists());
}

// ---------------------------------------------------------------------------------------------
// gc

fn gc(env: &S3Env, args: &[&str]) -> (Vec<String>, Vec<String>) {
    let out = run(env.airlock().args(["gc", "--json"]).args(args));
    assert!(out.status.success(), "gc: {}", show(&out));
    let v = json(&out);
    let strings = |k: &str| -> Vec<String> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_owned())
            .collect()
    };
    (strings("removed"), strings("jobs"))
}

#[test]
fn gc_removes_exactly_the_objects_it_reports_and_never_a_job_in_flight() {
    let env = S3Env::new();
    // Two short-lived jobs that will expire: one never picked up, one that checkpointed.
    let expired = env.submit("2s");
    let expired_running = env.submit("2s");
    let c = env.claims(&expired_running);
    assert_eq!(
        raw_request("PUT", &c.drop.checkpoint, &[], b"cp").status,
        200
    );
    assert_eq!(
        raw_request("PUT", &c.drop.checkpoint_envelope, &[], b"cp").status,
        200
    );
    let expires_at = airlock_core::clock::now_unix() + 2;
    // A job in flight: unexpired, checkpointing.
    let running = env.submit("20m");
    let c = env.claims(&running);
    assert_eq!(
        raw_request("PUT", &c.drop.checkpoint, &[], b"cp").status,
        200
    );
    assert_eq!(
        raw_request("PUT", &c.drop.checkpoint_envelope, &[], b"cp").status,
        200
    );
    // One gated, one landed and waiting for its gate.
    let gated = env.submit("20m");
    let landed = env.submit("20m");
    if !env.work(&gated, "docstring.sh") || !env.work(&landed, "docstring.sh") {
        return;
    }
    assert_eq!(env.gate(&gated.id).status.code(), Some(0));
    while airlock_core::clock::now_unix() <= expires_at + 1 {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let out = run(env.airlock().args(["status", "--json"]));
    let states: BTreeMap<String, String> = json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["job"].as_str().unwrap().to_owned(),
                s["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for (job, state) in [
        (&expired, "expired"),
        (&expired_running, "expired"),
        (&running, "running"),
        (&gated, "gated"),
        (&landed, "landed"),
    ] {
        assert_eq!(states[&job.id], state, "{states:?}");
    }

    let before = env.s3().contents();
    let mut expect: Vec<String> = before
        .keys()
        .filter(|k| {
            [&expired, &expired_running, &gated].iter().any(|j| {
                k.starts_with(&env.key(&format!("inbox/{}/", j.id)))
                    || k.starts_with(&env.key(&format!("drop/{}/", j.id)))
            })
        })
        .map(|k| k.strip_prefix(&format!("{PREFIX}/")).unwrap().to_owned())
        // Payloads only: envelopes are evidence and stay.
        .filter(|k| k.ends_with(".tar.gz"))
        .collect();
    expect.sort();
    // inbox (1 each) for all three, drop (1) for the checkpointed one, drop (1+) for the gated.
    assert!(expect.len() >= 5, "{expect:?}");

    // Too young for --older-than 1d: nothing.
    let (removed, jobs) = gc(&env, &["--older-than", "1d"]);
    assert!(removed.is_empty() && jobs.is_empty(), "{removed:?}");
    assert_eq!(env.s3().contents(), before);
    // Dry run: the list, and nothing removed.
    let (removed, _) = gc(&env, &["--older-than", "0s", "--dry-run"]);
    assert_eq!(removed, expect);
    assert_eq!(env.s3().contents(), before);
    // For real: exactly what it says, down to the byte of everything else.
    let (removed, mut jobs) = gc(&env, &["--older-than", "0s"]);
    assert_eq!(removed, expect);
    jobs.sort();
    let mut want_jobs = vec![
        expired.id.clone(),
        expired_running.id.clone(),
        gated.id.clone(),
    ];
    want_jobs.sort();
    assert_eq!(jobs, want_jobs);
    let after = env.s3().contents();
    let mut gone: Vec<String> = before
        .keys()
        .filter(|k| !after.contains_key(*k))
        .map(|k| k.strip_prefix(&format!("{PREFIX}/")).unwrap().to_owned())
        .collect();
    gone.sort();
    assert_eq!(gone, removed, "gc removed other objects than it reported");
    for (k, v) in &after {
        assert_eq!(before.get(k), Some(v), "{k} appeared or changed");
    }
    // Records and ledger all stay; the job in flight and the landed one keep everything.
    for k in before.keys() {
        let rel = k.strip_prefix(&format!("{PREFIX}/")).unwrap();
        if rel.starts_with("records/")
            || rel.starts_with("ledger/")
            || rel.ends_with(".dsse.json")
            || rel.contains(&running.id)
            || rel.contains(&landed.id)
        {
            assert!(after.contains_key(k), "{rel} was removed");
        }
    }
    // Idempotent; the audit trail verifies; status still knows every job.
    let (removed, _) = gc(&env, &["--older-than", "0s"]);
    assert!(removed.is_empty(), "{removed:?}");
    let out = run(env.airlock().args(["audit", "verify"]));
    assert!(out.status.success(), "{}", show(&out));
    let out = run(env.airlock().args(["status", "--json"]));
    assert_eq!(json(&out).as_array().unwrap().len(), 5);
    // The landed job is still fetchable and gateable after gc.
    assert_eq!(env.gate(&landed.id).status.code(), Some(0));
}

// ---------------------------------------------------------------------------------------------
// watch

/// The reports a `watch --json` printed: job -> decision.
fn watched(stdout: &[u8]) -> BTreeMap<String, String> {
    serde_json::Deserializer::from_slice(stdout)
        .into_iter::<serde_json::Value>()
        .map(|v| {
            let v = v.unwrap();
            (
                v["job"].as_str().unwrap().to_owned(),
                v["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn decisions(env: &S3Env) -> BTreeMap<String, Option<String>> {
    let out = run(env.airlock().args(["status", "--json"]));
    assert!(out.status.success(), "{}", show(&out));
    json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["job"].as_str().unwrap().to_owned(),
                s["decision"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// Waits for `child` to exit; kills it (this test's own child, by its pid) and fails after
/// `limit`.
fn wait_exit(child: &mut std::process::Child, limit: std::time::Duration) -> Output {
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = run_child(child);
            panic!("watch did not finish within {limit:?}: {}", show(&out));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    run_child(child)
}

fn run_child(child: &mut std::process::Child) -> Output {
    use std::io::Read;
    let status = child.wait().unwrap();
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    if let Some(mut s) = child.stdout.take() {
        s.read_to_end(&mut stdout).unwrap();
    }
    if let Some(mut s) = child.stderr.take() {
        s.read_to_end(&mut stderr).unwrap();
    }
    Output {
        status,
        stdout,
        stderr,
    }
}

#[test]
fn watch_once_gates_what_landed_and_a_restarted_watch_gates_nothing_twice() {
    let env = S3Env::new();
    let jobs: Vec<Job> = (0..4).map(|_| env.submit("20m")).collect();
    for j in &jobs[..3] {
        if !env.work(j, "docstring.sh") {
            return;
        }
    }
    // Job 2 was gated by hand (another host, an earlier run): watch must leave it alone.
    assert_eq!(env.gate(&jobs[2].id).status.code(), Some(0));
    let ledger_before = env.s3().list(&format!("{PREFIX}/ledger/")).len();

    let watch = |extra: &[&str]| {
        run(env
            .airlock()
            .args(["watch", "--once", "--jobs", "2", "--json", "--repo"])
            .arg(&env.repo)
            .args(extra))
    };
    let out = watch(&[]);
    assert!(out.status.success(), "{}", show(&out));
    let got = watched(&out.stdout);
    let want: BTreeMap<String, String> = jobs[..2]
        .iter()
        .map(|j| (j.id.clone(), "queue".to_owned()))
        .collect();
    assert_eq!(got, want, "{}", show(&out));
    let d = decisions(&env);
    for j in &jobs[..3] {
        assert_eq!(d[&j.id].as_deref(), Some("queue"));
    }
    assert_eq!(d[&jobs[3].id], None, "a job that has not landed was gated");
    let ledger_after = env.s3().list(&format!("{PREFIX}/ledger/")).len();
    // fetch + gate for each of the two.
    assert_eq!(ledger_after, ledger_before + 4);
    // Having read the ledger at start, the watch lists only what follows the last entry it read: the
    // offset goes to the server (`start-after`), not every entry again.
    let after: Vec<String> = (env.s3().log().iter())
        .filter(|l| l.method == "GET" && l.query.contains("list-type=2"))
        .filter(|l| l.query.contains("start-after="))
        .map(|l| l.query.clone())
        .collect();
    assert!(
        after
            .iter()
            .any(|q| q.contains("ledger%2F") && q.contains(".dsse.json")),
        "no ledger listing started after an entry: {after:?}"
    );

    // A restart finds nothing to do and appends nothing.
    let out = watch(&[]);
    assert!(out.status.success(), "{}", show(&out));
    assert!(watched(&out.stdout).is_empty(), "{}", show(&out));
    assert_eq!(
        env.s3().list(&format!("{PREFIX}/ledger/")).len(),
        ledger_after
    );

    // The last job lands later; the next run gates exactly it.
    if !env.work(&jobs[3], "docstring.sh") {
        return;
    }
    let out = watch(&["--review-branch"]);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(
        watched(&out.stdout).into_keys().collect::<Vec<_>>(),
        vec![jobs[3].id.clone()]
    );
    git(
        &env.repo,
        &["rev-parse", &format!("refs/heads/airlock/{}", jobs[3].id)],
    );
}

#[test]
fn watch_on_s3_lists_with_backoff_and_gates_artifacts_as_they_land() {
    let env = S3Env::new();
    let mut child = env
        .airlock()
        .args([
            "watch",
            "--max-jobs",
            "2",
            "--jobs",
            "2",
            "--json",
            "--poll-max",
            "2s",
            "--repo",
        ])
        .arg(&env.repo)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let a = env.submit("20m");
    let b = env.submit("20m");
    let ok = env.work(&a, "docstring.sh") && env.work(&b, "ci-touch.sh");
    if !ok {
        let _ = child.kill();
        let _ = child.wait();
        return;
    }
    let out = wait_exit(&mut child, std::time::Duration::from_secs(60));
    assert!(out.status.success(), "{}", show(&out));
    let got = watched(&out.stdout);
    assert_eq!(got.get(&a.id).map(String::as_str), Some("queue"), "{got:?}");
    assert_eq!(got.get(&b.id).map(String::as_str), Some("human"), "{got:?}");
    // The watcher only listed and read: its requests were signed with the trusted
    // credentials, never presigned.
    assert!(env
        .s3()
        .log()
        .iter()
        .filter(|l| l.path.contains("/ledger/"))
        .all(|l| l.authorization));
}

#[test]
fn watch_on_a_file_store_wakes_on_filesystem_events() {
    let env = S3Env::local();
    // With a one-hour rescan, only a notification can wake it before the deadline.
    let mut child = env
        .airlock()
        .args([
            "watch",
            "--max-jobs",
            "1",
            "--json",
            "--poll-max",
            "1h",
            "--repo",
        ])
        .arg(&env.repo)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let job = env.submit("20m");
    let out = env.worker(&job, "docstring.sh");
    if !out.status.success() {
        let _ = child.kill();
        let _ = child.wait();
        if needs_sandbox_skip(&out) {
            return;
        }
        panic!("worker: {}", show(&out));
    }
    let out = wait_exit(&mut child, std::time::Duration::from_secs(60));
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(
        watched(&out.stdout),
        BTreeMap::from([(job.id.clone(), "queue".to_owned())])
    );
    assert_eq!(decisions(&env)[&job.id].as_deref(), Some("queue"));
}

// ---------------------------------------------------------------------------------------------
// Large bundles

/// `n` bytes that do not compress (xorshift), so the bundle stays large.
pub(crate) fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn large_bundle_goes_up_as_a_multipart_upload_and_the_worker_verifies_it() {
    let env = S3Env::new();
    let (a, b) = (noise(5 << 20, 7), noise(5 << 20, 11));
    write_files(&env.repo, &[("data/a.bin", &a), ("data/b.bin", &b)]);
    git(&env.repo, &["add", "-A"]);
    git(&env.repo, &["commit", "-q", "-m", "data"]);
    let job = env.submit("20m");
    let bundle = env.key(&format!("inbox/{}/bundle.tar.gz", job.id));
    let size = env.bucket()[&bundle];
    assert!(size > 8 << 20, "bundle is only {size} bytes");
    // CreateMultipartUpload, two parts, CompleteMultipartUpload: never one big PUT.
    let log = env.s3().log_for("POST", "/bundle.tar.gz");
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(log[0].query.starts_with("uploads"), "{log:?}");
    assert!(log[1].query.starts_with("uploadId="), "{log:?}");
    let parts = env.s3().log_for("PUT", "/bundle.tar.gz");
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert!(
        parts
            .iter()
            .all(|p| p.query.contains("partNumber=") && p.status == Some(200)),
        "{parts:?}"
    );
    // The worker downloads it through its presigned URL and checks the digest in its token.
    if !env.work(&job, "docstring.sh") {
        return;
    }
    let out = env.gate(&job.id);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

#[test]
fn large_upload_shows_a_progress_bar_on_a_terminal_and_nowhere_else() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        airlock_tests::skip("no `script` (util-linux) to give airlock a terminal");
        return;
    }
    let env = S3Env::new();
    write_files(
        &env.repo,
        &[
            ("data/a.bin", &noise(5 << 20, 3)),
            ("data/b.bin", &noise(5 << 20, 5)),
        ],
    );
    git(&env.repo, &["add", "-A"]);
    git(&env.repo, &["commit", "-q", "-m", "data"]);
    let prompt = env.root.join("prompt.txt");
    std::fs::write(&prompt, "x\n").unwrap();
    let submit = |tty: bool, quiet: bool| -> String {
        let mut args = vec![
            bin("airlock").display().to_string(),
            "--home".into(),
            env.home.display().to_string(),
        ];
        if quiet {
            args.push("-q".into());
        }
        args.extend(
            [
                "submit",
                "--repo",
                env.repo.to_str().unwrap(),
                "--prompt-file",
                prompt.to_str().unwrap(),
            ]
            .map(str::to_owned),
        );
        let mut c = env.airlock(); // for its environment; the program is replaced below
        let c = if tty {
            let line = args
                .iter()
                .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
                .collect::<Vec<_>>()
                .join(" ");
            let mut s = Command::new("script");
            s.env_clear()
                .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))));
            s.env("TERM", "xterm")
                .args(["-q", "-e", "-c", &line, "/dev/null"]);
            s
        } else {
            c.args(&args[3..]);
            c
        };
        let mut c = c;
        let out = run(&mut c);
        assert!(out.status.success(), "{}", show(&out));
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let on_tty = submit(true, false);
    assert!(
        on_tty.contains("upload") && on_tty.contains("MiB"),
        "{on_tty}"
    );
    let piped = submit(false, false);
    assert!(!piped.contains("upload ["), "{piped}");
    let quiet = submit(true, true);
    assert!(!quiet.contains("upload ["), "{quiet}");
}
