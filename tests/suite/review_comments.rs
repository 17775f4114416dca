//! Review jobs end to end with the real worker (issue 41): `submit --kind review`, a generator
//! that writes `$AIRLOCK_COMMENTS` (and `.airlock/comments.jsonl` in its workdir), the gate's
//! anchors, limits and secret scan, and every surface the comments reach: `gate --json`,
//! the text report, `--md`, `--html` in headless Chromium, and SARIF 2.1.0 validated against
//! the official schema. Each hostile comment is refused or neutralised.
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;

use airlock_tests::*;

use super::gate::Pipeline;

/// A generator script in the test's directory running `body` (sh) in the workdir.
fn script(p: &Pipeline, name: &str, body: &str) -> PathBuf {
    let path = p.root.join(name);
    std::fs::write(
        &path,
        format!("#!/bin/sh\nset -eu\ncd \"$AIRLOCK_WORKDIR\"\n{body}\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A generator that writes `jsonl` to `$AIRLOCK_COMMENTS` and does nothing else.
fn commenter(p: &Pipeline, name: &str, jsonl: &str) -> PathBuf {
    script(
        p,
        name,
        &format!("cat > \"$AIRLOCK_COMMENTS\" <<'AIRLOCK_EOF'\n{jsonl}\nAIRLOCK_EOF"),
    )
}

/// Submits a job of `kind`; returns (job, token file).
fn submit(p: &Pipeline, kind: &str) -> (String, PathBuf) {
    let prompt = p.root.join("prompt.txt");
    std::fs::write(&prompt, "Review src/calc.py: where could it fail?\n").unwrap();
    let token = p.root.join(format!("token-{kind}-{}", next()));
    let out = run(p
        .airlock()
        .args(["submit", "--json", "--kind", kind, "--repo"])
        .arg(&p.repo)
        .arg("--prompt-file")
        .arg(&prompt)
        .arg("--token-out")
        .arg(&token));
    assert!(out.status.success(), "submit: {}", show(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (v["job"].as_str().unwrap().to_owned(), token)
}

fn next() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Runs the real worker with `gen`; `None` (printed) when this machine cannot sandbox.
fn work(p: &Pipeline, token: &Path, gen: &Path) -> Option<Output> {
    let work_root = p.root.join("worker");
    std::fs::create_dir_all(&work_root).unwrap();
    let out = run(cmd(&bin("airlock-worker"))
        .arg("run")
        .arg("--token-file")
        .arg(token)
        .arg("--trusted-pub")
        .arg(p.home.join("trusted.pub"))
        .arg("--work-root")
        .arg(&work_root)
        .arg("--")
        .arg(gen));
    if needs_sandbox_skip(&out) {
        return None;
    }
    assert!(out.status.success(), "worker failed: {}", show(&out));
    Some(out)
}

/// submit (review) -> worker with `jsonl` -> gate --json; the report and the gate's output.
fn review_job(
    p: &Pipeline,
    jsonl: &str,
    extra: &[&str],
) -> Option<(String, serde_json::Value, Output)> {
    let (job, token) = submit(p, "review");
    let gen = commenter(p, &format!("gen-{}", next()), jsonl);
    work(p, &token, &gen)?;
    let out = p.gate(&job, extra);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("gate --json: {e}: {}", show(&out)));
    Some((job, v, out))
}

fn comment(path: &str, line: u64, severity: &str, body: &str) -> String {
    serde_json::json!({"path": path, "line": line, "severity": severity, "body": body}).to_string()
}

#[test]
fn a_review_job_returns_comments_through_the_real_worker_and_queues() {
    let p = Pipeline::new();
    let jsonl = [
        comment(
            "src/calc.py",
            2,
            "warning",
            "`a + b` overflows nothing in Python, but check the types.",
        ),
        serde_json::json!({"path": "tests/test_calc.py", "start_line": 4, "end_line": 5,
            "severity": "note", "body": "Add a test for negatives.",
            "suggestion": "def test_add():\n    assert add(-1, 2) == 1\n"})
        .to_string(),
    ]
    .join("\n");
    let Some((_, v, out)) = review_job(&p, &jsonl, &[]) else {
        return;
    };
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(v["decision"], "queue", "{v:#}");
    assert_eq!(reason_codes(&v), vec!["review-comments"], "{v:#}");
    let c = v["comments"].as_array().unwrap();
    assert_eq!(c.len(), 2, "{v:#}");
    assert_eq!(c[0]["path"], "src/calc.py");
    assert_eq!(
        (c[0]["start_line"].as_u64(), c[0]["end_line"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(c[0]["severity"], "warning");
    assert_eq!(c[0]["anchored_to"], "revision");
    assert_eq!(c[1]["start_line"], 4);
    assert_eq!(c[1]["end_line"], 5);
    assert!(c[1]["suggestion"].as_str().unwrap().contains("add(-1, 2)"));
    assert_eq!(v["stats"]["files_changed"], 0);
}
