//! End to end: `airlock submit` -> `airlock-worker run` (the example generators) -> `airlock
//! gate`, on a local `file://` store with real git: the decision, the review branch's content
//! (equal to what the generator produced), and the user's checkout, HEAD and branch untouched.
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use airlock_tests::*;

pub(crate) struct Pipeline {
    _tmp: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) repo: PathBuf,
    pub(crate) rev: String,
}

const CALC_PY: &str = "def add(a, b):\n    return a + b\n";
const TEST_CALC_PY: &str = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n";
const CI_YML: &str = "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n";
pub(crate) const MODEL: &str = "example-model-2026-01";

pub(crate) fn generator(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/generators")
        .join(name)
        .canonicalize()
        .unwrap()
}

impl Pipeline {
    pub(crate) fn new() -> Pipeline {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let home = init_home(&root);
        let repo = root.join("repo");
        let rev = make_repo(
            &repo,
            &[
                ("src/calc.py", CALC_PY.as_bytes()),
                ("tests/test_calc.py", TEST_CALC_PY.as_bytes()),
                (".github/workflows/ci.yml", CI_YML.as_bytes()),
                ("README.md", b"# example\n"),
            ],
        );
        Pipeline {
            _tmp: tmp,
            root,
            home,
            repo,
            rev,
        }
    }

    pub(crate) fn airlock(&self) -> std::process::Command {
        let mut c = cmd(&bin("airlock"));
        c.arg("--home").arg(&self.home);
        c
    }

    /// Submits a job and returns (job id, token file).
    pub(crate) fn submit(&self) -> (String, PathBuf) {
        let prompt = self.root.join("prompt.txt");
        std::fs::write(
            &prompt,
            "Add docstrings and a sub() function with a test.\n",
        )
        .unwrap();
        let token = self.root.join(format!("token-{}", std::process::id()));
        let _ = std::fs::remove_file(&token);
        let out = run(self
            .airlock()
            .args(["submit", "--json", "--model", MODEL, "--repo"])
            .arg(&self.repo)
            .arg("--prompt-file")
            .arg(&prompt)
            .arg("--token-out")
            .arg(&token));
        assert!(out.status.success(), "submit: {}", show(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (v["job"].as_str().unwrap().to_owned(), token)
    }

    /// Runs the worker with an example generator. `None` when this machine cannot give the
    /// worker a sandbox ([`needs_sandbox_skip`]: a failure under CI).
    pub(crate) fn work(&self, token: &Path, gen: &str) -> Option<()> {
        let work_root = self.root.join("worker");
        std::fs::create_dir_all(&work_root).unwrap();
        let out = run(cmd(&bin("airlock-worker"))
            .arg("run")
            .arg("--token-file")
            .arg(token)
            .arg("--trusted-pub")
            .arg(self.home.join("trusted.pub"))
            .arg("--work-root")
            .arg(&work_root)
            .arg("--")
            .arg(generator(gen)));
        if needs_sandbox_skip(&out) {
            return None;
        }
        assert!(out.status.success(), "worker failed: {}", show(&out));
        Some(())
    }

    pub(crate) fn gate(&self, job: &str, extra: &[&str]) -> Output {
        run(self
            .airlock()
            .args(["gate", job, "--json", "--repo"])
            .arg(&self.repo)
            .args(extra))
    }

    /// What the generator produces when run by hand on a clean export of the revision: every
    /// file's content by path.
    fn expected_tree(&self, gen: &str) -> BTreeMap<String, Vec<u8>> {
        let dir = self.root.join("expected");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for path in git(&self.repo, &["ls-tree", "-r", "--name-only", &self.rev]).lines() {
            let content = std::process::Command::new("git")
                .arg("-C")
                .arg(&self.repo)
                .args(["cat-file", "blob", &format!("{}:{path}", self.rev)])
                .output()
                .unwrap()
                .stdout;
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        let prompt = self.root.join("prompt-by-hand.txt");
        std::fs::write(&prompt, "x\n").unwrap();
        let report = self.root.join("report-by-hand.json");
        let out = run(cmd(&generator(gen))
            .current_dir(&dir)
            .env("AIRLOCK_WORKDIR", &dir)
            .env("AIRLOCK_PROMPT_FILE", &prompt)
            .env("AIRLOCK_REPORT", &report));
        assert!(out.status.success(), "generator by hand: {}", show(&out));
        let mut files = BTreeMap::new();
        for rel in snapshot(&dir) {
            let p = dir.join(&rel);
            if p.is_file() {
                files.insert(rel.to_str().unwrap().to_owned(), std::fs::read(p).unwrap());
            }
        }
        files
    }

    /// Every file of `commit`'s tree.
    fn tree_of(&self, commit: &str) -> BTreeMap<String, Vec<u8>> {
        let mut files = BTreeMap::new();
        for path in git(&self.repo, &["ls-tree", "-r", "--name-only", commit]).lines() {
            let content = std::process::Command::new("git")
                .arg("-C")
                .arg(&self.repo)
                .args(["cat-file", "blob", &format!("{commit}:{path}")])
                .output()
                .unwrap()
                .stdout;
            files.insert(path.to_owned(), content);
        }
        files
    }

    /// HEAD (symbolic and resolved), every branch, the index bytes, and every working-tree
    /// file with its content.
    fn checkout_state(&self) -> (String, String, String, Vec<u8>, BTreeMap<PathBuf, Vec<u8>>) {
        let mut files = BTreeMap::new();
        for rel in snapshot(&self.repo) {
            if rel.starts_with(".git") {
                continue;
            }
            let p = self.repo.join(&rel);
            files.insert(
                rel,
                if p.is_file() {
                    std::fs::read(p).unwrap()
                } else {
                    Vec::new()
                },
            );
        }
        (
            git(&self.repo, &["symbolic-ref", "HEAD"]),
            git(&self.repo, &["rev-parse", "HEAD"]),
            git(
                &self.repo,
                &[
                    "for-each-ref",
                    "--format=%(refname) %(objectname)",
                    "refs/heads/main",
                ],
            ),
            std::fs::read(self.repo.join(".git/index")).unwrap(),
            files,
        )
    }
}

pub(crate) fn report(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not the JSON report ({e}): {}", show(out)))
}

#[test]
fn source_edit_is_queued_and_review_branch_equals_the_generators_result() {
    let p = Pipeline::new();
    let (job, token) = p.submit();
    if p.work(&token, "docstring.sh").is_none() {
        return;
    }
    let before = p.checkout_state();
    let md = p.root.join("pr.md");
    let out = p.gate(&job, &["--review-branch", "--md", md.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let r = report(&out);
    assert_eq!(r["decision"], "queue", "{r:#}");
    assert_eq!(r["bom"]["model_reported"], MODEL);
    assert_eq!(r["bom"]["revision"], p.rev.as_str());
    assert_eq!(
        p.checkout_state(),
        before,
        "the user's checkout, HEAD or branch changed"
    );

    let branch = r["review_branch"]["name"].as_str().unwrap();
    let commit = r["review_branch"]["commit"].as_str().unwrap();
    assert_eq!(branch, format!("airlock/{job}"));
    assert_eq!(
        git(&p.repo, &["rev-parse", &format!("refs/heads/{branch}")]),
        commit
    );
    assert_eq!(git(&p.repo, &["rev-parse", &format!("{commit}^")]), p.rev);
    assert_eq!(p.tree_of(commit), p.expected_tree("docstring.sh"));
    for (key, want) in [
        ("Airlock-Job", job.clone()),
        ("Airlock-Decision", "queue".to_owned()),
        ("Airlock-Model-Requested", MODEL.to_owned()),
        ("Airlock-Model-Reported", MODEL.to_owned()),
    ] {
        let got = git(
            &p.repo,
            &[
                "log",
                "-1",
                &format!("--format=%(trailers:key={key},valueonly)"),
                commit,
            ],
        );
        assert_eq!(got, want, "trailer {key}");
    }
    for key in ["Airlock-Bundle", "Airlock-Artifact", "Airlock-Gate-Version"] {
        let got = git(
            &p.repo,
            &[
                "log",
                "-1",
                &format!("--format=%(trailers:key={key},valueonly)"),
                commit,
            ],
        );
        assert!(!got.is_empty(), "trailer {key} missing");
    }
    let body = std::fs::read_to_string(&md).unwrap();
    for want in ["Bill of materials", "Blast radius", "Reasons", &job] {
        assert!(body.contains(want), "PR body lacks {want:?}:\n{body}");
    }
}

#[test]
fn ci_edit_needs_a_human() {
    let p = Pipeline::new();
    let (job, token) = p.submit();
    if p.work(&token, "ci-touch.sh").is_none() {
        return;
    }
    let out = p.gate(&job, &["--review-branch"]);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let r = report(&out);
    assert_eq!(r["decision"], "human");
    assert!(
        reason_codes(&r).contains(&"ci-path-changed".to_owned()),
        "{r:#}"
    );
    let commit = r["review_branch"]["commit"].as_str().unwrap();
    assert_eq!(p.tree_of(commit), p.expected_tree("ci-touch.sh"));
}

#[test]
fn artifact_tampered_on_the_way_back_is_rejected() {
    let p = Pipeline::new();
    let (job, token) = p.submit();
    if p.work(&token, "docstring.sh").is_none() {
        return;
    }
    let artifact = p.home.join("store/drop").join(&job).join("artifact.tar.gz");
    let mut bytes = std::fs::read(&artifact).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x01;
    std::fs::write(&artifact, bytes).unwrap();
    let out = p.gate(&job, &["--review-branch"]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let r = report(&out);
    assert_eq!(
        reason_codes(&r),
        vec!["artifact-digest".to_owned()],
        "{r:#}"
    );
    assert!(git(&p.repo, &["branch", "--list", "airlock/*"]).is_empty());
}

#[test]
fn human_text_output_names_decision_reasons_and_bill_of_materials() {
    let p = Pipeline::new();
    let (job, token) = p.submit();
    if p.work(&token, "ci-touch.sh").is_none() {
        return;
    }
    let out = run(p.airlock().args(["gate", &job, "--repo"]).arg(&p.repo));
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "HUMAN",
        "ci-path-changed",
        "bill of materials",
        "blast radius",
        MODEL,
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

#[test]
fn revision_missing_from_the_local_repository_is_an_error_not_a_verdict() {
    let p = Pipeline::new();
    let (job, token) = p.submit();
    if p.work(&token, "docstring.sh").is_none() {
        return;
    }
    let other = p.root.join("other");
    make_repo(&other, &[("x.txt", b"x\n")]);
    let out = run(p
        .airlock()
        .args(["gate", &job, "--json", "--repo"])
        .arg(&other));
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("fetch the revision"),
        "{}",
        show(&out)
    );
}

#[test]
fn gate_before_the_worker_dropped_anything_is_an_error() {
    let p = Pipeline::new();
    let (job, _token) = p.submit();
    let out = p.gate(&job, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
}
