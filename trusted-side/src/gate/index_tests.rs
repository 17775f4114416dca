//! The gate with and without `submit`'s index of the bundle (`index.rs`): the same report.
use super::tests::*;
use crate::gate::index;
use crate::gate::policy::Verdict;
use crate::report::GateReport;
use airlock_core::store_layout as layout;
use airlock_core::token::JobClaims;

/// A workflow runs `scripts/release.sh`, which sources `scripts/lib.sh`, and a script that is
/// not there yet.
const TREE: &[(&str, &str)] = &[
    (
        ".github/workflows/release.yml",
        "on: push\njobs:\n  r:\n    steps:\n      - run: ./scripts/release.sh\n      - run: ./later.sh\n",
    ),
    ("scripts/release.sh", "#!/bin/sh\n. ./scripts/lib.sh\necho release\n"),
    ("scripts/lib.sh", "v=1\n"),
    ("tools/unused.sh", "#!/bin/sh\necho x\n"),
];

const LIB_EDIT: &str = "diff --git a/scripts/lib.sh b/scripts/lib.sh\n--- a/scripts/lib.sh\n+++ b/scripts/lib.sh\n@@ -1 +1 @@\n-v=1\n+v=2\n";
/// The workflow made to run `tools/unused.sh`, which the same change edits.
const WORKFLOW_EDIT: &str = "diff --git a/.github/workflows/release.yml b/.github/workflows/release.yml\n--- a/.github/workflows/release.yml\n+++ b/.github/workflows/release.yml\n@@ -5,2 +5,3 @@\n       - run: ./scripts/release.sh\n+      - run: ./tools/unused.sh\n       - run: ./later.sh\ndiff --git a/tools/unused.sh b/tools/unused.sh\n--- a/tools/unused.sh\n+++ b/tools/unused.sh\n@@ -2 +2 @@\n-echo x\n+echo y\n";
/// The script the workflow runs, added.
const NAMED_ADDED: &str = "diff --git a/later.sh b/later.sh\nnew file mode 100644\n--- /dev/null\n+++ b/later.sh\n@@ -0,0 +1 @@\n+echo later\n";
const NEW_TOOL: &str = "diff --git a/tools/new.sh b/tools/new.sh\nnew file mode 100644\n--- /dev/null\n+++ b/tools/new.sh\n@@ -0,0 +1 @@\n+echo new\n";

fn json(r: &GateReport) -> serde_json::Value {
    serde_json::to_value(r).unwrap()
}

/// Writes the index of the job's bundle as `submit` does for a large tree (these trees are
/// small, so `submit` wrote none), and returns where it is.
fn write_index(f: &Fixture, claims: &JobClaims) -> std::path::PathBuf {
    let at = index::path(&f.home.dir, &claims.bundle.sha256);
    assert!(!at.exists(), "submit wrote an index of a small tree");
    let bundle = f
        .store
        .get_bytes(&layout::inbox_bundle(&claims.job), 1 << 30)
        .unwrap()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bundle.tar.gz");
    std::fs::write(&path, bundle).unwrap();
    let head = crate::gate::test_git::git(&f.repo, &["rev-parse", "HEAD"]);
    index::write(&f.home.dir, &f.repo, &path, &claims.bundle.sha256, &head).unwrap();
    at
}

#[test]
fn submit_writes_an_index_for_a_large_tree_only() {
    let many: Vec<(String, String)> = (0..index::MIN_FILES)
        .map(|i| (format!("pkg/f{i}.py"), format!("x = {i}\n")))
        .collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    let (f, claims) = fixture(&many, false);
    assert!(index::path(&f.home.dir, &claims.bundle.sha256).is_file());
    let (f, claims) = fixture(TREE, false);
    assert!(!index::path(&f.home.dir, &claims.bundle.sha256).exists());
}

#[test]
fn the_index_gives_the_report_reading_the_bundle_gives() {
    for patch in [SRC_EDIT, LIB_EDIT, WORKFLOW_EDIT, NEW_TOOL, NAMED_ADDED] {
        let (f, claims) = fixture(TREE, false);
        drop_artifact(&f, &claims, Drop::honest(patch));
        let at = write_index(&f, &claims);
        let with = gate(&f, &claims.job, false);
        assert!(with.warnings.is_empty(), "{:?}", with.warnings);
        std::fs::remove_file(&at).unwrap();
        let without = gate(&f, &claims.job, false);
        assert_eq!(json(&with), json(&without), "{patch}");
        if patch == LIB_EDIT {
            let file = &with.files[0];
            assert_eq!(file.bucket.as_str(), "ci", "{:?}", with.files);
            assert!(
                with.reasons.iter().any(|r| r.detail.contains(
                    "run by scripts/release.sh, which .github/workflows/release.yml runs"
                )),
                "{:?}",
                with.reasons
            );
        }
        let bucket = |path: &str| {
            let f = with.files.iter().find(|f| f.path == path).unwrap();
            (f.bucket.as_str(), f.class_rule)
        };
        if patch == WORKFLOW_EDIT {
            assert_eq!(with.decision, Verdict::Human, "{:?}", with.reasons);
            assert_eq!(bucket("tools/unused.sh"), ("ci", "ci.reached"));
        }
        if patch == NAMED_ADDED {
            assert_eq!(bucket("later.sh"), ("ci", "ci.reached"));
        }
    }
}

/// The revision's links are in the index (listed at submit), and the gate classes an edit
/// through one the same with the index as without: the root `conftest.py` links to a file
/// under `pyconf/`.
#[test]
fn the_index_keeps_the_revisions_links() {
    const CONF: &str = "def pytest_configure(config):\n    pass\n";
    const EDIT: &str = "diff --git a/pyconf/settings.py b/pyconf/settings.py\n--- a/pyconf/settings.py\n+++ b/pyconf/settings.py\n@@ -2 +2,2 @@\n     pass\n+import os\n";
    let linked = format!("{SYMLINK_TO}pyconf/settings.py");
    let (f, claims) = fixture(
        &[("pyconf/settings.py", CONF), ("conftest.py", &linked)],
        false,
    );
    drop_artifact(&f, &claims, Drop::honest(EDIT));
    let at = write_index(&f, &claims);
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(&at).unwrap()).unwrap();
    assert_eq!(
        written["links"],
        serde_json::json!([{"path": "conftest.py", "target": "pyconf/settings.py"}])
    );
    let with = gate(&f, &claims.job, false);
    assert!(with.warnings.is_empty(), "{:?}", with.warnings);
    std::fs::remove_file(&at).unwrap();
    let without = gate(&f, &claims.job, false);
    assert_eq!(json(&with), json(&without));
    let file = &with.files[0];
    assert_eq!(
        (file.bucket.as_str(), file.class_rule),
        ("build", "build.python")
    );
    assert_eq!(with.decision, Verdict::Human, "{:?}", with.reasons);
}

#[test]
fn an_index_that_does_not_parse_or_is_of_another_bundle_is_not_used() {
    let (f, claims) = fixture(TREE, false);
    drop_artifact(&f, &claims, Drop::honest(LIB_EDIT));
    let at = write_index(&f, &claims);
    let good = gate(&f, &claims.job, false);
    // Damaged: the gate reads the bundle, says so, and decides the same.
    std::fs::write(&at, b"{\"format\": \"airlock-gate-index/v1\", \"files\": [").unwrap();
    let damaged = gate(&f, &claims.job, false);
    assert_eq!(damaged.decision, good.decision);
    assert_eq!(codes(&damaged), codes(&good));
    assert!(
        damaged.warnings.iter().any(|w| w.contains("not an index")),
        "{:?}",
        damaged.warnings
    );
    // Another tree's index under this bundle's name: it names another bundle, and is not used.
    let (other, other_claims) = fixture(&[("src/extra.rs", "pub fn x() {}\n")], false);
    let other_at = write_index(&other, &other_claims);
    std::fs::copy(other_at, &at).unwrap();
    let foreign = gate(&f, &claims.job, false);
    assert_eq!(json(&foreign)["files"], json(&good)["files"]);
    assert!(
        foreign
            .warnings
            .iter()
            .any(|w| w.contains("another bundle")),
        "{:?}",
        foreign.warnings
    );
}
