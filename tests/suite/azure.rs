//! `az://` against Azurite (`airlock_tests::azurite`, the emulator from npm): the trusted side
//! through object_store's Azure client (Shared Key), the worker through the SAS URLs of its
//! token or enrolment only (its environment is cleared). A whole job through the real worker;
//! a bundle uploaded in blocks; the fleet (enrol, serve, heartbeat, sealed ticket, gated); the
//! final artifact's write-once refusal (409) from the emulator itself; one worker's SAS URLs
//! refused on another's blobs.
//! Without Azurite each test skips (outside CI) or fails (under CI).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use airlock_core::token::{verify_token, JobClaims};
use airlock_tests::azurite::{Azurite, ACCOUNT, ACCOUNT_KEY, CONTAINER};
use airlock_tests::s3::{raw_request, Answer};
use airlock_tests::*;

use super::fleet::{wait_until, Fleet};

const PREFIX: &str = "team/airlock";

/// A trusted home whose store is `az://airlock/team/airlock` on Azurite, and a repository.
struct AzEnv {
    az: Azurite,
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    repo: PathBuf,
}

impl AzEnv {
    fn new() -> Option<AzEnv> {
        let az = Azurite::start()?;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let repo = root.join("repo");
        make_repo(
            &repo,
            &[
                (
                    "src/calc.py",
                    b"def add(a, b):\n    return a + b\n".as_slice(),
                ),
                (
                    "tests/test_calc.py",
                    b"from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
                ),
                ("README.md", b"# example\n"),
            ],
        );
        let env = AzEnv {
            az,
            _tmp: tmp,
            home: root.join("home"),
            repo,
            root,
        };
        let out = run(env
            .airlock()
            .args(["init", "--store", &env.az.store_url(PREFIX)]));
        assert!(out.status.success(), "init: {}", show(&out));
        Some(env)
    }

    fn airlock(&self) -> Command {
        let mut c = cmd(&bin("airlock"));
        c.arg("--home").arg(&self.home);
        for (k, v) in self.az.env() {
            c.env(k, v);
        }
        c
    }

    /// `submit --json`; returns the job id and its token file.
    fn submit(&self) -> (String, PathBuf) {
        let prompt = self.root.join("prompt.txt");
        std::fs::write(&prompt, "Add docstrings and a sub() function.\n").unwrap();
        let token_file = self.root.join("token");
        let out = run(self
            .airlock()
            .args(["submit", "--json", "--ttl", "20m", "--repo"])
            .arg(&self.repo)
            .arg("--prompt-file")
            .arg(&prompt)
            .arg("--token-out")
            .arg(&token_file));
        assert!(out.status.success(), "submit: {}", show(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (v["job"].as_str().unwrap().to_owned(), token_file)
    }

    fn claims(&self, token_file: &Path) -> JobClaims {
        let token = std::fs::read_to_string(token_file).unwrap();
        let trusted = airlock_core::keys::load_public_key(&self.home.join("trusted.pub")).unwrap();
        let now = airlock_core::clock::now_unix();
        (*verify_token(token.trim(), &trusted, now).unwrap()).clone()
    }

    /// `airlock-worker run` with the token only: no AZURE_* variable, an empty HOME.
    fn worker(&self, token_file: &Path) -> Output {
        let work_root = self.root.join("worker");
        let empty_home = self.root.join("worker-home");
        std::fs::create_dir_all(&work_root).unwrap();
        std::fs::create_dir_all(&empty_home).unwrap();
        let gen = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/generators/docstring.sh")
            .canonicalize()
            .unwrap();
        run(Command::new(bin("airlock-worker"))
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &empty_home)
            .arg("run")
            .arg("--token-file")
            .arg(token_file)
            .arg("--trusted-pub")
            .arg(self.home.join("trusted.pub"))
            .arg("--work-root")
            .arg(&work_root)
            .arg("--")
            .arg(gen))
    }

    fn key(&self, rel: &str) -> String {
        format!("{PREFIX}/{rel}")
    }
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", show(out)))
}

/// A Put Blob through a SAS URL, as the worker sends it (`x-ms-blob-type: BlockBlob`), with
/// `extra` headers.
fn put_blob(url: &str, extra: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut headers = vec![("x-ms-blob-type", "BlockBlob")];
    headers.extend_from_slice(extra);
    raw_request("PUT", url, &headers, body)
}

#[test]
fn azurite_submit_worker_fetch_gate_end_to_end_with_sas_urls_only() {
    let Some(env) = AzEnv::new() else { return };
    let (id, token_file) = env.submit();
    // The trusted side wrote the inbox and the record through the Blob API, under the prefix.
    let blobs = env.az.list("");
    for rel in [
        format!("inbox/{id}/bundle.tar.gz"),
        format!("inbox/{id}/bundle.dsse.json"),
        format!("records/{id}.dsse.json"),
    ] {
        assert!(blobs.contains_key(&env.key(&rel)), "{rel}: {blobs:?}");
    }
    assert!(
        blobs.keys().all(|k| k.starts_with(&format!("{PREFIX}/"))),
        "{blobs:?}"
    );
    // The token holds one SAS URL per blob (`sr=b`), never the account key.
    let token = std::fs::read_to_string(&token_file).unwrap();
    assert!(!token.contains(ACCOUNT_KEY));
    let c = env.claims(&token_file);
    for (url, perm) in [
        (&c.bundle.url, "r"),
        (&c.bundle_envelope_url, "r"),
        (&c.drop.checkpoint, "w"),
        (&c.drop.checkpoint_envelope, "w"),
        (&c.drop.artifact, "w"),
        (&c.drop.artifact_envelope, "w"),
    ] {
        let base = env.az.blob_url(PREFIX);
        assert!(url.starts_with(&format!("{base}/")), "{url}");
        assert!(url.contains("&sr=b&") || url.contains("?sr=b&"), "{url}");
        assert!(url.contains(&format!("sp={perm}&")), "{url}");
        assert!(url.contains("sig="), "{url}");
    }

    let out = env.worker(&token_file);
    if needs_sandbox_skip(&out) {
        return;
    }
    assert_eq!(out.status.code(), Some(0), "worker: {}", show(&out));
    let artifact = env
        .az
        .get(&env.key(&format!("drop/{id}/artifact.tar.gz")))
        .expect("the worker's artifact is in the container");
    let digest = airlock_core::digest::Sha256Digest::of_bytes(&artifact).to_string();

    let out = run(env.airlock().args(["status", &id, "--json"]));
    assert_eq!(json(&out)[0]["state"], "landed", "{}", show(&out));
    let out = run(env.airlock().args(["fetch", &id, "--json"]));
    assert!(out.status.success(), "fetch: {}", show(&out));
    let fetched = json(&out);
    let sha = fetched["artifact_sha256"].as_str().unwrap();
    assert!(
        digest.ends_with(sha.trim_start_matches("sha256:")),
        "fetched {sha}, the container holds {digest}"
    );
    let out = run(env
        .airlock()
        .args(["gate", &id, "--json", "--repo"])
        .arg(&env.repo));
    assert_eq!(out.status.code(), Some(0), "gate: {}", show(&out));
    assert_eq!(json(&out)["decision"], "queue", "{}", show(&out));
    let out = run(env.airlock().args(["status", "--json"]));
    let v = json(&out);
    assert_eq!(v[0]["state"], "gated", "{v:#}");
    let out = run(env.airlock().args(["audit", "verify"]));
    assert!(out.status.success(), "audit verify: {}", show(&out));
}

#[test]
fn azurite_refuses_a_second_write_of_the_final_artifact_and_the_worker_says_write_once() {
    let Some(env) = AzEnv::new() else { return };
    let (id, token_file) = env.submit();
    let put_new = env.claims(&token_file).drop.artifact;
    let key = env.key(&format!("drop/{id}/artifact.tar.gz"));
    let once = [("if-none-match", "*")];
    let first = put_blob(&put_new, &once, b"first");
    assert_eq!(first.status, 201, "{first:?}");
    let second = put_blob(&put_new, &once, b"second");
    assert_eq!(
        (second.status, second.code.as_str()),
        (409, "BlobAlreadyExists"),
        "{second:?}"
    );
    assert_eq!(env.az.get(&key).as_deref(), Some(&b"first"[..]));
    // The worker, finding its final artifact's slot taken, stops with the write-once refusal
    // (Azure's 409 read as the refusal) and does not overwrite it.
    let out = env.worker(&token_file);
    if needs_sandbox_skip(&out) {
        return;
    }
    assert_eq!(out.status.code(), Some(1), "worker: {}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("transfer.write-once"),
        "{}",
        show(&out)
    );
    assert_eq!(env.az.get(&key).as_deref(), Some(&b"first"[..]));
    // What a SAS cannot promise: it signs no header, so a PUT that leaves the condition out
    // overwrites (docs/STORES.md). The fetcher's first-artifact pin and digest binding are
    // the guard there.
    let bare = put_blob(&put_new, &[], b"third");
    assert_eq!(bare.status, 201, "{bare:?}");
}

/// The predicate of a worker's enrolment (its SAS URLs).
fn enrolment(f: &Fleet, name: &str) -> serde_json::Value {
    use base64::Engine as _;
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.enrolment(name)).unwrap()).unwrap();
    let payload = base64::engine::general_purpose::STANDARD
        .decode(env["payload"].as_str().unwrap())
        .unwrap();
    let statement: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    statement["predicate"].clone()
}

/// `url` with its blob path replaced by `key` (the SAS query kept).
fn with_blob(url: &str, key: &str) -> String {
    let (base, query) = url.split_once('?').unwrap();
    let at = base.find(&format!("/{ACCOUNT}/{CONTAINER}/")).unwrap();
    format!("{}/{ACCOUNT}/{CONTAINER}/{key}?{query}", &base[..at])
}

#[test]
fn azurite_enrolment_urls_reach_only_the_workers_own_blobs() {
    let Some(az) = Azurite::start() else { return };
    let f = Fleet::on_azurite(az);
    f.enroll("good");
    f.enroll("evil");
    let good = enrolment(&f, "good");
    let evil = enrolment(&f, "evil");
    let prefix = super::fleet::PREFIX;
    let good_hb = format!("{prefix}/fleet/good/heartbeat.json");
    // good's own heartbeat URL writes good's heartbeat (201).
    let a = put_blob(good["heartbeat"].as_str().unwrap(), &[], b"{}");
    assert_eq!(a.status, 201, "{a:?}");
    let az = f.azurite.as_ref().unwrap();
    assert_eq!(az.get(&good_hb).as_deref(), Some(&b"{}"[..]));
    let evil_get = evil["mailbox"][0].as_str().unwrap();
    let evil_put = evil["heartbeat"].as_str().unwrap();
    for (what, answer) in [
        (
            "read good's heartbeat with evil's mailbox URL",
            raw_request("GET", &with_blob(evil_get, &good_hb), &[], &[]),
        ),
        (
            "read good's mailbox with evil's mailbox URL",
            raw_request(
                "GET",
                &with_blob(evil_get, &format!("{prefix}/fleet/good/mailbox/0.age")),
                &[],
                &[],
            ),
        ),
        (
            "overwrite good's heartbeat with evil's heartbeat URL",
            put_blob(&with_blob(evil_put, &good_hb), &[], b"lies"),
        ),
        (
            "write into good's mailbox with evil's heartbeat URL",
            put_blob(
                &with_blob(evil_put, &format!("{prefix}/fleet/good/mailbox/0.age")),
                &[],
                b"x",
            ),
        ),
        (
            "write evil's own mailbox with its GET URL",
            put_blob(evil_get, &[], b"x"),
        ),
        (
            "read evil's heartbeat with its PUT URL",
            raw_request("GET", evil_put, &[], &[]),
        ),
        (
            "list the container with evil's mailbox URL's SAS",
            raw_request(
                "GET",
                &format!(
                    "{}/{ACCOUNT}/{CONTAINER}?restype=container&comp=list&{}",
                    az.endpoint(),
                    evil_get.split_once('?').unwrap().1
                ),
                &[],
                &[],
            ),
        ),
    ] {
        assert_eq!(answer.status, 403, "{what}: {answer:?}");
    }
    // Nothing changed: good's heartbeat is what good wrote, good's mailbox is empty.
    assert_eq!(az.get(&good_hb).as_deref(), Some(&b"{}"[..]));
    let blobs = az.list(&format!("{prefix}/fleet/"));
    assert!(blobs.keys().all(|k| !k.contains("/mailbox/")), "{blobs:?}");
}

#[test]
fn azurite_fleet_worker_heartbeats_takes_a_sealed_ticket_and_the_job_is_gated() {
    let Some(az) = Azurite::start() else { return };
    let mut f = Fleet::on_azurite(az);
    f.enroll("w1");
    f.serve("w1", &[]);
    let prefix = super::fleet::PREFIX;
    // The heartbeat lands in the container through the enrolment's SAS URL.
    wait_until("w1's heartbeat", Duration::from_secs(60), || {
        f.azurite
            .as_ref()
            .unwrap()
            .get(&format!("{prefix}/fleet/w1/heartbeat.json"))
            .is_some()
    });
    let jobs = f.submit(2, &[]);
    let end = Instant::now() + Duration::from_secs(120);
    loop {
        let out = f.tick();
        assert!(out.status.success(), "watch: {}", show(&out));
        if f.cannot_sandbox() {
            return;
        }
        let decisions = f.decisions();
        if jobs.iter().all(|j| decisions.contains_key(j)) {
            for j in &jobs {
                assert_eq!(decisions[j], "queue", "{decisions:?}");
            }
            break;
        }
        assert!(
            Instant::now() < end,
            "jobs not gated: {}\n{}",
            f.state(),
            f.log("w1")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let st = f.state();
    assert_ne!(st["workers"]["w1"]["lost"], true, "{st}");
    let fs = f.fleet_status();
    let w1 = fs["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "w1")
        .unwrap()
        .clone();
    assert_ne!(w1["mark"], "lost", "{fs}");
    assert_ne!(w1["mark"], "refused", "{fs}");
    // The tickets went through w1's mailbox as age files, and the artifacts through the drop.
    let blobs = f.azurite.as_ref().unwrap().list(prefix);
    for j in &jobs {
        assert!(
            blobs.contains_key(&format!("{prefix}/drop/{j}/artifact.dsse.json")),
            "{blobs:?}"
        );
    }
}

#[test]
fn azurite_large_bundle_goes_up_in_blocks_and_the_worker_verifies_it() {
    let Some(env) = AzEnv::new() else { return };
    let (a, b) = (
        super::store::noise(5 << 20, 7),
        super::store::noise(5 << 20, 11),
    );
    write_files(&env.repo, &[("data/a.bin", &a), ("data/b.bin", &b)]);
    git(&env.repo, &["add", "-A"]);
    git(&env.repo, &["commit", "-q", "-m", "data"]);
    let (id, token_file) = env.submit();
    // Above 8 MiB the trusted side uploads with Put Block + Put Block List (object_store's
    // multipart on Azure); the blob is whole.
    let size = env.az.list("")[&env.key(&format!("inbox/{id}/bundle.tar.gz"))];
    assert!(size > 8 << 20, "bundle is only {size} bytes");
    // The worker downloads it through its SAS URL and checks the digest in its token.
    let out = env.worker(&token_file);
    if needs_sandbox_skip(&out) {
        return;
    }
    assert_eq!(out.status.code(), Some(0), "worker: {}", show(&out));
    let out = run(env.airlock().args(["fetch", &id, "--json"]));
    assert!(out.status.success(), "fetch: {}", show(&out));
    let out = run(env
        .airlock()
        .args(["gate", &id, "--json", "--repo"])
        .arg(&env.repo));
    assert_eq!(out.status.code(), Some(0), "gate: {}", show(&out));
}
