//! In-process pipeline tests of [`super::run_gate`]: a real `airlock init` + `submit` on a
//! `file://` store, a real git repository, and artifacts built and signed here with the job key
//! taken from the token (what a worker holds). The CLI-level suites live in `tests/suite/`.

use std::path::{Path, PathBuf};

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, Statement};
use airlock_core::format::{ArtifactPredicate, PREDICATE_ARTIFACT};
use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;
use airlock_core::store_layout as layout;
use airlock_core::token::{verify_token, JobClaims};

use super::*;
use crate::config::GlobalOptions;
use crate::config::Home;
use crate::gate::policy::Verdict;
use crate::gate::test_git::git;
use crate::init::InitOptions;
use crate::pack::PackInputs;
use crate::submit::SubmitOptions;
use airlock_core::limits::JobLimits;

/// Also the fixture of `fetch/checkpoint_tests.rs`.
pub(crate) struct Fixture {
    pub(super) _tmp: tempfile::TempDir,
    pub(super) root: PathBuf,
    pub(super) repo: PathBuf,
    pub(crate) home: Home,
    pub(crate) key: SigningKey,
    pub(crate) store: Store,
    pub(super) rev: String,
}

pub(super) const LIB_RS: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";
pub(super) const CI_YML: &str = "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n";
pub(super) const TEN: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n";

/// A fixture file whose content starts with this is a symbolic link to the rest.
pub(crate) const SYMLINK_TO: &str = "symlink to ";

pub(crate) fn fixture(extra: &[(&str, &str)], redact: bool) -> (Fixture, JobClaims) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let mut files = vec![
        ("src/lib.rs", LIB_RS),
        ("README.md", "# sample\n"),
        (".github/workflows/ci.yml", CI_YML),
        (".env", "DATABASE_URL=postgres://u:hunter2@db/prod\n"),
        ("ten.txt", TEN),
    ];
    files.extend_from_slice(extra);
    for (p, c) in &files {
        let path = repo.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        match c.strip_prefix(SYMLINK_TO) {
            Some(target) => std::os::unix::fs::symlink(target, path).unwrap(),
            None => std::fs::write(path, c).unwrap(),
        }
    }
    git(&repo, &["add", "-A", "-f", "."]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    let rev = git(&repo, &["rev-parse", "HEAD"]);

    let home_dir = root.join("home");
    let global = GlobalOptions {
        home: home_dir.clone(),
        verbose: 0,
        quiet: true,
    };
    crate::init::run(
        &global,
        &InitOptions {
            store: None,
            json: true,
        },
    )
    .unwrap();
    let prompt = root.join("prompt.txt");
    std::fs::write(&prompt, "Add a docstring.\n").unwrap();
    let token_file = root.join("token");
    crate::submit::run(
        &global,
        &SubmitOptions {
            pack: PackInputs {
                repo: repo.clone(),
                rev: "HEAD".into(),
                prompt_file: prompt,
                model: "model-a".into(),
                repo_name: None,
                include: Vec::new(),
                exclude: Vec::new(),
                redact,
                max_file_bytes: 8 * 1024 * 1024,
                egress: Vec::new(),
                limits: JobLimits {
                    wall_clock_secs: 60,
                    checkpoint_every_secs: 30,
                    max_changed_files: 200,
                    max_changed_lines: 20_000,
                    max_artifact_bytes: 16 * 1024 * 1024,
                    max_log_bytes: 1024 * 1024,
                    max_tokens: 1_000_000,
                    allow_binary: false,
                    max_disk_bytes: airlock_core::limits::DEFAULT_MAX_DISK_BYTES,
                    max_memory_bytes: airlock_core::limits::DEFAULT_MAX_MEMORY_BYTES,
                },
            },
            ttl: "20m".into(),
            token_out: Some(token_file.clone()),
            print_token: false,
            json: true,
            kind: Default::default(),
            fleet: false,
            label: None,
        },
    )
    .unwrap();
    let home = Home::load(&home_dir).unwrap();
    let key = home.signing_key().unwrap();
    let store = Store::open(&home.config.store).unwrap();
    let token = std::fs::read_to_string(&token_file).unwrap();
    let claims = verify_token(
        token.trim_end(),
        &key.public(),
        airlock_core::clock::now_unix(),
    )
    .unwrap()
    .into_inner();
    (
        Fixture {
            _tmp: tmp,
            root,
            repo,
            home,
            key,
            store,
            rev,
        },
        claims,
    )
}

/// What a worker would produce, with knobs to lie.
pub(super) struct Drop<'a> {
    pub(super) patch: &'a str,
    pub(super) diff_sha256: Option<Sha256Digest>,
    pub(super) signer: Option<SigningKey>,
    pub(super) model_reported: &'a str,
}

impl<'a> Drop<'a> {
    pub(super) fn honest(patch: &'a str) -> Drop<'a> {
        Drop {
            patch,
            diff_sha256: None,
            signer: None,
            model_reported: "model-a",
        }
    }
}

pub(super) fn drop_artifact(f: &Fixture, claims: &JobClaims, d: Drop<'_>) {
    let patch = d.patch.as_bytes();
    let mut packet = crate::test_artifact::packet(&claims.job, claims.bundle.sha256, patch);
    packet.model_reported = d.model_reported.into();
    packet.tokens_in = Some(10);
    packet.tokens_out = Some(20);
    if let Some(lie) = d.diff_sha256 {
        packet.diff_sha256 = lie;
    }
    let (tgz, packet_bytes) = crate::test_artifact::artifact(&packet, patch);
    let predicate = ArtifactPredicate {
        job: claims.job.clone(),
        run_id: packet.run_id.clone(),
        bundle_sha256: claims.bundle.sha256,
        packet_sha256: Sha256Digest::of_bytes(&packet_bytes),
        partial: false,
        seq: None,
    };
    let statement = Statement::new(
        "artifact.tar.gz",
        Sha256Digest::of_bytes(&tgz),
        PREDICATE_ARTIFACT,
        serde_json::to_value(&predicate).unwrap(),
    );
    let signer = d
        .signer
        .unwrap_or_else(|| claims.job_key.signing_key().unwrap());
    let env = dsse::sign_statement(&statement, &signer).to_json_pretty();
    f.store
        .put_bytes(&layout::drop_artifact(&claims.job), &tgz)
        .unwrap();
    f.store
        .put_bytes(&layout::drop_artifact_envelope(&claims.job), &env)
        .unwrap();
}

pub(super) fn gate(f: &Fixture, job: &JobId, review_branch: bool) -> GateReport {
    let opts = GateOptions {
        repo: f.repo.clone(),
        policy: Policy::default(),
        review_branch,
    };
    run_gate(&f.home, &f.store, &f.key, job, &opts).unwrap()
}

pub(super) fn codes(r: &GateReport) -> Vec<&'static str> {
    r.reasons.iter().map(|r| r.code.code()).collect()
}

/// HEAD, index, working tree and refs of the user's checkout, to prove they are untouched.
pub(super) fn checkout_state(repo: &Path) -> (String, String, String, Vec<u8>) {
    (
        git(repo, &["symbolic-ref", "HEAD"]),
        git(repo, &["rev-parse", "HEAD"]),
        git(repo, &["status", "--porcelain", "--untracked-files=all"]),
        std::fs::read(repo.join(".git/index")).unwrap(),
    )
}

pub(super) fn ledger_kinds(f: &Fixture) -> Vec<String> {
    let mut kinds = Vec::new();
    for o in f.store.list("ledger/").unwrap() {
        let bytes = f.store.get_bytes(&o.key, 1 << 20).unwrap().unwrap();
        let env: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let payload = base64_decode(env["payload"].as_str().unwrap());
        let st: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        let ev = &st["predicate"]["event"];
        let mut k = ev["kind"].as_str().unwrap().to_owned();
        if let Some(code) = ev["reason_code"].as_str() {
            k = format!("{k}:{}:{code}", ev["stage"].as_str().unwrap());
        }
        if let Some(d) = ev["decision"].as_str() {
            k = format!("{k}:{d}");
        }
        kinds.push(k);
    }
    kinds
}

pub(super) fn base64_decode(s: &str) -> Vec<u8> {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut buf, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|c| *c != b'=') {
        let v = A.iter().position(|a| *a == c).unwrap() as u32;
        buf = (buf << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
        }
    }
    out
}

pub(super) const SRC_EDIT: &str = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n+/// Adds two numbers.\n pub fn add(a: i32, b: i32) -> i32 {\n     a + b\n }\n";
pub(super) const CI_EDIT: &str = "diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\n--- a/.github/workflows/ci.yml\n+++ b/.github/workflows/ci.yml\n@@ -1,4 +1,5 @@\n on: push\n+permissions: write-all\n jobs:\n   t:\n     runs-on: ubuntu-latest\n";

#[test]
fn source_edit_is_queued_and_review_branch_holds_it_without_touching_the_checkout() {
    let (f, claims) = fixture(&[], false);
    drop_artifact(&f, &claims, Drop::honest(SRC_EDIT));
    let before = checkout_state(&f.repo);
    let r = gate(&f, &claims.job, true);
    assert_eq!(
        r.decision,
        Verdict::Queue,
        "{}",
        crate::report::render_text(&r)
    );
    assert_eq!(codes(&r), vec!["src-path-changed"]);
    assert_eq!(
        checkout_state(&f.repo),
        before,
        "the user's checkout changed"
    );
    let b = r.review_branch.clone().expect("review branch");
    assert_eq!(b.name, format!("airlock/{}", claims.job));
    assert_eq!(
        git(&f.repo, &["rev-parse", &format!("{}^", b.commit)]),
        f.rev
    );
    let shown = git(&f.repo, &["show", &format!("{}:src/lib.rs", b.commit)]);
    assert_eq!(
        format!("{shown}\n"),
        format!("/// Adds two numbers.\n{LIB_RS}")
    );
    let msg = git(&f.repo, &["log", "-1", "--format=%B", &b.commit]);
    for t in [
        format!("Airlock-Job: {}", claims.job),
        format!("Airlock-Bundle: sha256:{}", claims.bundle.sha256),
        "Airlock-Model-Requested: model-a".into(),
        "Airlock-Model-Reported: model-a".into(),
        "Airlock-Decision: queue".into(),
        format!("Airlock-Gate-Version: {}", crate::report::GATE_VERSION),
    ] {
        assert!(msg.contains(&t), "missing {t:?} in\n{msg}");
    }
    assert!(msg.contains("Airlock-Artifact: sha256:"), "{msg}");
    // Gating again is idempotent (same commit: dates are the store's landing time).
    let again = gate(&f, &claims.job, true);
    assert_eq!(again.review_branch.unwrap().commit, b.commit);
    let kinds = ledger_kinds(&f);
    assert!(kinds.contains(&"gate:queue".to_owned()), "{kinds:?}");
    // Nothing left behind in the job directory but the artifact and its envelope (kept as
    // evidence that outlives gc).
    let mut left: Vec<_> = std::fs::read_dir(crate::fetch::job_dir(&f.home.dir, &claims.job))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        vec!["artifact.dsse.json", "artifact.tar.gz"],
        "{left:?}"
    );
}

/// A `refs/replace/` entry planted after the pack makes plain git read another file at the
/// packed revision: the gate's git still applies the patch to the committed tree, and the
/// review branch holds the committed file, patched.
#[test]
fn gate_reads_the_committed_tree_not_a_replacement() {
    let (f, claims) = fixture(&[], false);
    drop_artifact(&f, &claims, Drop::honest(SRC_EDIT));
    std::fs::write(f.repo.join("src/lib.rs"), "pub fn planted() {}\n").unwrap();
    git(&f.repo, &["commit", "-q", "-a", "-m", "planted"]);
    let planted = git(&f.repo, &["rev-parse", "HEAD"]);
    git(&f.repo, &["reset", "-q", "--hard", &f.rev]);
    git(&f.repo, &["replace", &f.rev, &planted]);
    let seen = git(&f.repo, &["show", &format!("{}:src/lib.rs", f.rev)]);
    assert_eq!(
        seen, "pub fn planted() {}",
        "the replacement is not in effect"
    );
    let r = gate(&f, &claims.job, true);
    assert_eq!(codes(&r), vec!["src-path-changed"], "{:?}", r.reasons);
    let b = r.review_branch.expect("review branch");
    let spec = format!("{}:src/lib.rs", b.commit);
    let shown = git(&f.repo, &["--no-replace-objects", "show", &spec]);
    assert_eq!(
        format!("{shown}\n"),
        format!("/// Adds two numbers.\n{LIB_RS}")
    );
}

#[test]
fn ci_edit_needs_a_human_and_gets_a_review_branch() {
    let (f, claims) = fixture(&[], false);
    drop_artifact(&f, &claims, Drop::honest(CI_EDIT));
    let r = gate(&f, &claims.job, true);
    assert_eq!(r.decision, Verdict::Human);
    assert_eq!(codes(&r), vec!["ci-path-changed"]);
    assert!(r.review_branch.is_some());
    assert_eq!(
        r.buckets.get(&crate::classify::Bucket::Ci).map(Vec::len),
        Some(1)
    );
}

#[test]
fn gate_without_review_branch_writes_nothing_into_the_repository() {
    let (f, claims) = fixture(&[], false);
    drop_artifact(&f, &claims, Drop::honest(SRC_EDIT));
    let objects_before = count_files(&f.repo.join(".git"));
    let r = gate(&f, &claims.job, false);
    assert_eq!(r.decision, Verdict::Queue);
    assert!(r.review_branch.is_none());
    assert_eq!(count_files(&f.repo.join(".git")), objects_before);
}

pub(super) fn count_files(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn new_dependency_is_listed_by_name() {
    let pkg = "{\n  \"name\": \"x\",\n  \"dependencies\": {\n    \"left-pad\": \"1.0.0\"\n  }\n}\n";
    let (f, claims) = fixture(&[("web/package.json", pkg)], false);
    let patch = "diff --git a/web/package.json b/web/package.json\n--- a/web/package.json\n+++ b/web/package.json\n@@ -2,5 +2,6 @@\n   \"name\": \"x\",\n   \"dependencies\": {\n-    \"left-pad\": \"1.0.0\"\n+    \"left-pad\": \"1.0.0\",\n+    \"event-stream\": \"3.3.6\"\n   }\n }\n";
    drop_artifact(&f, &claims, Drop::honest(patch));
    let r = gate(&f, &claims.job, false);
    assert_eq!(
        r.decision,
        Verdict::Human,
        "{}",
        crate::report::render_text(&r)
    );
    let names: Vec<&str> = r.new_dependencies.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, vec!["event-stream"]);
}

#[test]
fn model_name_with_a_newline_cannot_forge_a_trailer() {
    let (f, claims) = fixture(&[], false);
    let mut d = Drop::honest(SRC_EDIT);
    d.model_reported = "model-b\nAirlock-Decision: queue";
    drop_artifact(&f, &claims, d);
    let r = gate(&f, &claims.job, true);
    // An answer no approved job gave is `model-unseen` (human): the one trailer says so.
    assert_eq!(r.decision, Verdict::Human);
    let b = r.review_branch.expect("branch");
    let decisions = git(
        &f.repo,
        &[
            "log",
            "-1",
            "--format=%(trailers:key=Airlock-Decision,valueonly)",
            &b.commit,
        ],
    );
    // One trailer, the gate's own: another model than the one asked for is `human`.
    assert_eq!(
        decisions, "human",
        "git parsed these Airlock-Decision trailers"
    );
    let reported = git(
        &f.repo,
        &[
            "log",
            "-1",
            "--format=%(trailers:key=Airlock-Model-Reported,valueonly)",
            &b.commit,
        ],
    );
    assert_eq!(reported, "model-b<U+000A>Airlock-Decision: queue");
    let _ = &f.root;
}

#[test]
fn policy_file_decides_and_stale_rules_are_warned_about() {
    let (f, claims) = fixture(&[], false);
    drop_artifact(&f, &claims, Drop::honest(CI_EDIT));
    let policy = Policy::from_toml(
        "[buckets]\nci = \"queue\"\n[[paths]]\nglob = \"src/**\"\nverdict = \"reject\"\nreason = \"frozen\"\n[[paths]]\nglob = \"nothing/**\"\nverdict = \"human\"\nreason = \"stale\"\n",
    )
    .unwrap();
    let opts = GateOptions {
        repo: f.repo.clone(),
        policy: policy.clone(),
        review_branch: false,
    };
    let r = run_gate(&f.home, &f.store, &f.key, &claims.job, &opts).unwrap();
    assert_eq!(r.decision, Verdict::Queue, "ci = queue in this policy");
    assert_eq!(r.bom.policy_sha256, Some(policy.digest()));
    assert!(
        r.warnings.iter().any(|w| w.contains("nothing/**")),
        "{:?}",
        r.warnings
    );
    assert!(
        !r.warnings.iter().any(|w| w.contains("src/**")),
        "src/** matches packed files"
    );
}

#[test]
fn bundle_swapped_in_the_inbox_is_rejected_before_its_manifest_is_used() {
    let (f, claims) = fixture(&[], false);
    drop_artifact(&f, &claims, Drop::honest(SRC_EDIT));
    // Another valid bundle (of another job) in this job's inbox slot.
    let (other, other_claims) = fixture(&[("src/extra.rs", "pub fn x() {}\n")], false);
    let other_bundle = other
        .store
        .get_bytes(&layout::inbox_bundle(&other_claims.job), 1 << 30)
        .unwrap()
        .unwrap();
    f.store
        .put_bytes(&layout::inbox_bundle(&claims.job), &other_bundle)
        .unwrap();
    let r = gate(&f, &claims.job, false);
    assert_eq!(codes(&r), vec!["bundle-digest-mismatch"], "{:?}", r.reasons);
    assert_eq!(r.decision, Verdict::Reject);
    // Garbage (not even gzip) is the same verdict, not a tar error: the digest comes first.
    f.store
        .put_bytes(&layout::inbox_bundle(&claims.job), b"not a bundle")
        .unwrap();
    let r = gate(&f, &claims.job, false);
    assert_eq!(codes(&r), vec!["bundle-digest-mismatch"], "{:?}", r.reasons);
    // Nothing left behind in the job directory but the fetched artifact and its envelope.
    let job_dir = crate::fetch::job_dir(&f.home.dir, &claims.job);
    let mut left: Vec<String> = std::fs::read_dir(&job_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert!(left.iter().all(|n| !n.starts_with('.')), "{left:?}");
}

#[test]
fn bundle_gone_from_the_inbox_is_an_error_not_a_verdict() {
    let (f, claims) = fixture(&[], false);
    drop_artifact(&f, &claims, Drop::honest(SRC_EDIT));
    f.store.delete(&layout::inbox_bundle(&claims.job)).unwrap();
    let opts = GateOptions {
        repo: f.repo.clone(),
        policy: Policy::default(),
        review_branch: false,
    };
    let e = run_gate(&f.home, &f.store, &f.key, &claims.job, &opts).unwrap_err();
    assert!(
        e.to_string().contains("the bundle is gone from the inbox"),
        "{e}"
    );
}

/// Git applies this (an index would too); the checks refuse it as a path collision.
#[test]
fn a_file_the_patch_deletes_can_become_a_directory() {
    let (f, claims) = fixture(&[], false);
    let patch = "diff --git a/ten.txt b/ten.txt\ndeleted file mode 100644\n--- a/ten.txt\n+++ /dev/null\n@@ -1,10 +0,0 @@\n-l1\n-l2\n-l3\n-l4\n-l5\n-l6\n-l7\n-l8\n-l9\n-l10\ndiff --git a/ten.txt/x b/ten.txt/x\nnew file mode 100644\n--- /dev/null\n+++ b/ten.txt/x\n@@ -0,0 +1 @@\n+x\n";
    drop_artifact(&f, &claims, Drop::honest(patch));
    let r = gate(&f, &claims.job, true);
    assert!(!codes(&r).contains(&"apply-failed"), "{:?}", r.reasons);
    assert!(codes(&r).contains(&"path-collision"), "{:?}", r.reasons);
    assert!(r.review_branch.is_none());
}
