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
pub(crate) fn script(p: &Pipeline, name: &str, body: &str) -> PathBuf {
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
pub(crate) fn submit(p: &Pipeline, kind: &str) -> (String, PathBuf) {
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
pub(crate) fn work(p: &Pipeline, token: &Path, gen: &Path) -> Option<Output> {
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
pub(crate) fn review_job(
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

pub(crate) fn comment(path: &str, line: u64, severity: &str, body: &str) -> String {
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
    // `show` lists what the gate judged (kept in the job directory for this artifact).
    let job = v["job"].as_str().unwrap();
    let shown = run(p.airlock().args(["show", job]));
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("comments:"), "{}", show(&shown));
    assert!(text.contains("warning src/calc.py:2:"), "{text}");
    assert!(
        text.contains("note    tests/test_calc.py:4-5: Add a test for negatives."),
        "{text}"
    );
    let page = run(p.airlock().args(["show", job, "--json"]));
    let page: serde_json::Value = serde_json::from_slice(&page.stdout).unwrap();
    assert_eq!(page["comments"], v["comments"]);
}

// ---- the surfaces: text, Markdown, HTML in Chromium, SARIF against the schema ----

/// The official SARIF 2.1.0 schema (OASIS, errata 01; see tests/fixtures/README.md).
fn sarif_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/sarif-schema-2.1.0.json"
    ))
    .unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

fn assert_valid_sarif(log: &serde_json::Value) {
    let errors: Vec<String> = sarif_validator()
        .iter_errors(log)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "SARIF does not validate:\n{}",
        errors.join("\n")
    );
}

/// Hostile bodies: markup, script, a remote image and link, bidi and zero-width characters.
pub(crate) const HOSTILE_BODY: &str = "Looks fine <script>document.title='pwned'</script> \
    <img src=\"https://evil.example/track.png\" onerror=\"document.title='img'\"> \
    ![tracker](https://evil.example/pixel.png) [click](https://evil.example/login) \
    </pre></li></ul><b id=\"injected\">bold</b> \u{202e}evil\u{200b}";

#[test]
fn comments_show_in_text_markdown_html_in_chromium_and_sarif_that_validates() {
    let Some(chrome) = super::review::chromium() else {
        return;
    };
    let p = Pipeline::new();
    let jsonl = [
        comment("src/calc.py", 1, "error", HOSTILE_BODY),
        serde_json::json!({"path": "src/calc.py", "start_line": 1, "end_line": 2,
            "severity": "note", "body": "Range comment.",
            "suggestion": "def add(a, b):\n    \"\"\"Add.\"\"\"\n    return a + b"})
        .to_string(),
        comment("README.md", 1, "warning", "Say what it does."),
    ]
    .join("\n");
    let (html, md, sarif) = (
        p.root.join("r.html"),
        p.root.join("r.md"),
        p.root.join("r.sarif"),
    );
    let extra = [
        "--html",
        html.to_str().unwrap(),
        "--md",
        md.to_str().unwrap(),
        "--sarif",
        sarif.to_str().unwrap(),
    ];
    let Some((job, v, out)) = review_job(&p, &jsonl, &extra) else {
        return;
    };
    // An error comment in a review job: a person reads it.
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert_eq!(
        reason_codes(&v),
        vec!["review-comments", "review-error"],
        "{v:#}"
    );
    assert_eq!(v["comments"].as_array().unwrap().len(), 3);
    // The JSON keeps the body as data (JSON escapes it); the text report marks what hides.
    assert_eq!(v["comments"][0]["body"], HOSTILE_BODY);
    let text_out = run(p.airlock().args(["gate", &job, "--repo"]).arg(&p.repo));
    let text = String::from_utf8(text_out.stdout).unwrap();
    assert!(text.contains("comments:"), "{text}");
    assert!(text.contains("<U+202E>evil<U+200B>"), "{text}");
    assert!(
        !text.contains('\u{202e}') && !text.contains('\u{200b}'),
        "{text}"
    );

    // Markdown: no live image, link or HTML of the worker's.
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("### Review comments"), "{md}");
    for live in [
        "\n![",
        "\n<img",
        "\n<script",
        "](https://evil.example/pixel.png)\n",
    ] {
        assert!(!md.contains(live), "{live:?} live in\n{md}");
    }
    let fenced = md
        .find("![tracker](https://evil.example/pixel.png)")
        .unwrap();
    let before = &md[..fenced];
    assert!(
        before.rfind("```text").unwrap() > before.rfind("\n**`error`**").unwrap(),
        "{md}"
    );
    assert!(md.contains("<U+202E>evil<U+200B>"), "{md}");

    // HTML in headless Chromium: the comments are there, as text; nothing ran or loaded.
    let dom = super::review::render_in_chromium(
        &chrome,
        &html,
        &p.root.join("comments.png"),
        &p.root.join("chrome-profile"),
    );
    assert!(dom.contains("Review comments (3)"), "{dom}");
    assert!(dom.contains("Range comment."), "{dom}");
    assert!(dom.contains("Say what it does."), "{dom}");
    assert!(
        dom.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;"),
        "{dom}"
    );
    assert!(
        !dom.contains("pwned</title>") && !dom.contains("<title>img"),
        "{dom}"
    );
    assert!(!dom.contains("<b id=\"injected\">"), "{dom}");
    assert!(!dom.contains("<img"), "an image element in the page: {dom}");
    assert!(dom.contains("&lt;U+202E&gt;"), "bidi not marked: {dom}");

    // SARIF: valid against the official schema; one result per comment, at its lines.
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&sarif).unwrap()).unwrap();
    assert_valid_sarif(&log);
    let mut bad = log.clone();
    bad["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(
        !sarif_validator().is_valid(&bad),
        "the validator accepts anything"
    );
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["level"], "error");
    assert_eq!(results[0]["ruleId"], "review-error");
    let loc = &results[1]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "src/calc.py");
    assert_eq!(
        (
            loc["region"]["startLine"].as_u64(),
            loc["region"]["endLine"].as_u64()
        ),
        (Some(1), Some(2))
    );
    assert!(
        results[1]["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"]
            .as_str()
            .unwrap()
            .contains("\"\"\"Add.\"\"\"")
    );
    let msg = results[0]["message"]["text"].as_str().unwrap();
    assert!(
        msg.contains("<U+202E>evil<U+200B>") && !msg.contains('\u{202e}'),
        "{msg}"
    );
}

// ---- examples/github/post-review.sh ----

fn post_review(p: &Pipeline, job: &str, out_dir: &Path) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/github/post-review.sh");
    run(cmd(Path::new("bash"))
        .arg(script)
        .args([job, "7"])
        .current_dir(&p.repo)
        .env("AIRLOCK", bin("airlock"))
        .env("AIRLOCK_HOME", &p.home)
        .env("REPO", "octo/calc")
        .env("GH", "none")
        .env("OUT_DIR", out_dir))
}

#[test]
fn post_review_writes_line_comments_with_fenced_bodies_and_posts_nothing_for_a_reject() {
    let p = Pipeline::new();
    let jsonl = [
        comment("src/calc.py", 2, "warning", HOSTILE_BODY),
        serde_json::json!({"path": "src/calc.py", "start_line": 1, "end_line": 2,
            "severity": "note", "body": "Range."})
        .to_string(),
    ]
    .join("\n");
    let Some((job, _, _)) = review_job(&p, &jsonl, &[]) else {
        return;
    };
    let reports = p.root.join("reports");
    let out = post_review(&p, &job, &reports);
    assert!(out.status.success(), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("gh api --method POST repos/octo/calc/pulls/7/reviews"));
    let lines: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reports.join(format!("{job}.lines.json"))).unwrap())
            .unwrap();
    assert_eq!(lines["commit_id"], p.rev.as_str());
    assert_eq!(lines["event"], "COMMENT");
    assert!(
        lines.get("headings").is_none(),
        "airlock's own member reached GitHub's API"
    );
    let c = lines["comments"].as_array().unwrap();
    assert_eq!(
        (c[0]["path"].as_str(), c[0]["line"].as_u64()),
        (Some("src/calc.py"), Some(2))
    );
    assert_eq!(
        (c[1]["start_line"].as_u64(), c[1]["line"].as_u64()),
        (Some(1), Some(2))
    );
    let body = c[0]["body"].as_str().unwrap();
    // The worker's Markdown sits inside a fence: the image and the link are text there.
    let fence = body.find("```text\n").expect("fenced");
    let image = body
        .find("![tracker](https://evil.example/pixel.png)")
        .unwrap();
    assert!(fence < image && body[image..].contains("\n```"), "{body}");
    assert!(body.contains("<U+202E>"), "{body}");
    let folded: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reports.join(format!("{job}.folded.json"))).unwrap())
            .unwrap();
    assert!(folded["body"]
        .as_str()
        .unwrap()
        .contains("`src/calc.py`:1-2"));

    // A rejected review (a secret in a comment) is not posted.
    let key = planted::aws_key_id();
    let secret = comment(
        "src/calc.py",
        1,
        "note",
        &format!("aws_access_key_id = {key}"),
    );
    let Some((rejected, _, _)) = review_job(&p, &secret, &[]) else {
        return;
    };
    let out = post_review(&p, &rejected, &reports);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert!(!reports.join(format!("{rejected}.lines.json")).exists());
    assert!(!contains(&out.stdout, key.as_bytes()) && !contains(&out.stderr, key.as_bytes()));
}
