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
const HOSTILE_BODY: &str = "Looks fine <script>document.title='pwned'</script> \
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

// ---- hostile comments, each refused or neutralised ----

/// The reasons of one code in a gate report.
fn reasons_of<'a>(v: &'a serde_json::Value, code: &str) -> Vec<&'a serde_json::Value> {
    v["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["code"] == code)
        .collect()
}

/// Every file under `dir` (recursively), as bytes: what a secret must never reach.
fn all_bytes_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    snapshot(dir)
        .into_iter()
        .map(|p| dir.join(p))
        .filter(|p| p.is_file())
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect()
}

#[test]
fn paths_outside_the_tree_and_lines_past_the_end_are_refused_by_name_and_the_rest_survive() {
    let p = Pipeline::new();
    let jsonl = [
        comment("../outside.txt", 1, "note", "parent dir"),
        comment("/etc/passwd", 1, "note", "absolute"),
        comment("src/../../x", 1, "note", "dotdot inside"),
        comment(".git/config", 1, "note", "git dir"),
        comment(
            "src/calc.py",
            3,
            "warning",
            "past the end: calc.py has 2 lines",
        ),
        comment("src/nope.py", 1, "warning", "not packed"),
        comment("src/calc.py", 2, "note", "this one stands"),
    ]
    .join("\n");
    let Some((_, v, out)) = review_job(&p, &jsonl, &[]) else {
        return;
    };
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let c = v["comments"].as_array().unwrap();
    assert_eq!(c.len(), 1, "{v:#}");
    assert_eq!(c[0]["body"], "this one stands");
    let refused = reasons_of(&v, "comment-refused");
    let rules: Vec<&str> = refused
        .iter()
        .map(|r| r["rule"].as_str().unwrap())
        .collect();
    // The worker refused the four bad paths (counted); the gate the two that do not anchor.
    assert_eq!(
        rules,
        vec![
            "comments.worker-refused",
            "comments.past-end",
            "comments.unanchored"
        ],
        "{v:#}"
    );
    assert!(refused[0]["detail"]
        .as_str()
        .unwrap()
        .contains("refused 4 comment(s)"));
    assert_eq!(refused[1]["path"], "src/calc.py");
    assert!(refused[1]["detail"]
        .as_str()
        .unwrap()
        .contains("comments.jsonl:1: lines 3..3"));
    assert!(refused[1]["detail"]
        .as_str()
        .unwrap()
        .contains("(2 line(s))"));
    assert_eq!(refused[2]["path"], "src/nope.py");
    // Nothing of the comments' bodies is in a reason.
    for r in &refused {
        assert!(!r["detail"]
            .as_str()
            .unwrap()
            .contains("past the end: calc.py"));
    }
    assert!(!p.root.join("outside.txt").exists() && !p.repo.join("outside.txt").exists());
}

#[test]
fn ten_thousand_comments_keep_the_first_thousand_and_count_the_rest() {
    let p = Pipeline::new();
    let one = comment("src/calc.py", 1, "note", "n");
    let jsonl = vec![one.as_str(); 10_000].join("\n");
    let Some((_, v, out)) = review_job(&p, &jsonl, &[]) else {
        return;
    };
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert_eq!(v["comments"].as_array().unwrap().len(), 1000);
    let refused = reasons_of(&v, "comment-refused");
    assert_eq!(refused.len(), 1, "{:#}", v["reasons"]);
    assert!(refused[0]["detail"]
        .as_str()
        .unwrap()
        .contains("refused 9000 comment(s)"));
}

#[test]
fn a_ten_mib_body_is_refused_unread_and_the_other_file_survives() {
    let p = Pipeline::new();
    let (job, token) = submit(&p, "review");
    // The 10 MiB comment in the workdir file, a good one in $AIRLOCK_COMMENTS.
    let gen = script(
        &p,
        "big.sh",
        &format!(
            "mkdir .airlock\n\
             {{ printf '{{\"path\":\"src/calc.py\",\"line\":1,\"severity\":\"note\",\"body\":\"'; \
             head -c 10485760 /dev/zero | tr '\\\\0' 'A'; printf '\"}}\\n'; }} > .airlock/comments.jsonl\n\
             printf '%s\\n' '{}' > \"$AIRLOCK_COMMENTS\"",
            comment("src/calc.py", 2, "note", "small and fine")
        ),
    );
    if work(&p, &token, &gen).is_none() {
        return;
    }
    let out = p.gate(&job, &[]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let c = v["comments"].as_array().unwrap();
    assert_eq!(c.len(), 1, "{v:#}");
    assert_eq!(c[0]["body"], "small and fine");
    let refused = reasons_of(&v, "comment-refused");
    assert!(refused[0]["detail"]
        .as_str()
        .unwrap()
        .contains("refused 1 comment(s)"));
    // Neither the diff nor the artifact carries the workdir's comments file.
    assert_eq!(v["stats"]["files_changed"], 0, "{v:#}");
    let artifact = p.home.join("jobs").join(&job).join("artifact.tar.gz");
    let size = std::fs::metadata(&artifact).map(|m| m.len()).unwrap_or(0);
    assert!(
        size < 64 * 1024,
        "artifact of {size} bytes carries the big body"
    );
}

#[test]
fn a_secret_in_a_body_rejects_and_its_value_reaches_no_output() {
    let p = Pipeline::new();
    let key = planted::aws_key_id();
    let jsonl = [
        comment(
            "src/calc.py",
            1,
            "warning",
            &format!("Use this: aws_access_key_id = {key}"),
        ),
        comment("src/calc.py", 2, "note", "fine"),
    ]
    .join("\n");
    let (html, md, sarif) = (
        p.root.join("s.html"),
        p.root.join("s.md"),
        p.root.join("s.sarif"),
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
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let secret = reasons_of(&v, "secret-in-worker-text");
    assert_eq!(secret.len(), 1, "{v:#}");
    assert!(secret[0]["detail"]
        .as_str()
        .unwrap()
        .starts_with("comments.jsonl:1:"));
    assert_eq!(v["comments"][0]["withheld"], true);
    let text_out = run(p.airlock().args(["gate", &job, "--repo"]).arg(&p.repo));
    let show_out = run(p.airlock().args(["show", &job]));
    for (what, bytes) in [
        ("gate --json", out.stdout.clone()),
        ("gate stderr", out.stderr.clone()),
        ("gate text", text_out.stdout),
        ("show", show_out.stdout),
        ("html", std::fs::read(&html).unwrap()),
        ("md", std::fs::read(&md).unwrap()),
        ("sarif", std::fs::read(&sarif).unwrap()),
    ] {
        assert!(!contains(&bytes, key.as_bytes()), "the key is in {what}");
    }
    // Nor in the ledger.
    let ledger = all_bytes_under(&p.home.join("store").join("ledger"));
    assert!(ledger.len() >= 3, "no ledger entries under the store");
    for (path, bytes) in ledger {
        assert!(
            !contains(&bytes, key.as_bytes()),
            "the key is in {}",
            path.display()
        );
    }
}

#[test]
fn a_comment_file_that_is_a_link_is_refused_unread() {
    let p = Pipeline::new();
    let (job, token) = submit(&p, "review");
    // Both places: $AIRLOCK_COMMENTS a link to a file holding comments, `.airlock` a link to
    // a directory holding comments.jsonl.
    let gen = script(
        &p,
        "links.sh",
        &format!(
            "mkdir -p elsewhere\n\
             printf '%s\\n' '{c}' > elsewhere/comments.jsonl\n\
             ln -s \"$PWD/elsewhere/comments.jsonl\" \"$AIRLOCK_COMMENTS\"\n\
             ln -s elsewhere .airlock\n",
            c = comment("src/calc.py", 1, "note", "via a link")
        ),
    );
    if work(&p, &token, &gen).is_none() {
        return;
    }
    let out = p.gate(&job, &[]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["comments"].as_array().unwrap().is_empty(), "{v:#}");
    let refused = reasons_of(&v, "comment-refused");
    assert!(
        refused[0]["detail"]
            .as_str()
            .unwrap()
            .contains("refused 2 comment(s)"),
        "{v:#}"
    );
    // The files the generator left (`elsewhere/`, the `.airlock` link) are edits of a review
    // job: refused, and the job rejected.
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert_eq!(reasons_of(&v, "review-edited-files").len(), 1, "{v:#}");
}

#[test]
fn a_review_job_whose_generator_edits_a_file_is_rejected_and_carries_no_diff() {
    let p = Pipeline::new();
    let (job, token) = submit(&p, "review");
    let gen = script(
        &p,
        "edits.sh",
        &format!(
            "printf 'x = 1\\n' >> src/calc.py\nprintf '%s\\n' '{}' > \"$AIRLOCK_COMMENTS\"",
            comment("src/calc.py", 1, "note", "also edited it")
        ),
    );
    let Some(worker) = work(&p, &token, &gen) else {
        return;
    };
    assert!(
        String::from_utf8_lossy(&worker.stderr).contains("review-edited-files"),
        "{}",
        show(&worker)
    );
    let out = p.gate(&job, &[]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let edited = reasons_of(&v, "review-edited-files");
    assert_eq!(edited.len(), 1, "{v:#}");
    assert!(edited[0]["detail"]
        .as_str()
        .unwrap()
        .contains("changed 1 file(s)"));
    assert_eq!(
        v["stats"]["files_changed"], 0,
        "the edit reached the artifact: {v:#}"
    );
    assert_eq!(v["comments"].as_array().unwrap().len(), 1);
}

#[test]
fn a_change_job_may_comment_on_the_lines_it_wrote() {
    let p = Pipeline::new();
    let (job, token) = submit(&p, "change");
    let gen = script(
        &p,
        "change.sh",
        &format!(
            "printf 'def sub(a, b):\\n    return a - b\\n' >> src/calc.py\n\
             mkdir -p .airlock\nprintf '%s\\n' '{}' > .airlock/comments.jsonl",
            comment("src/calc.py", 4, "note", "sub() is new; no test yet")
        ),
    );
    if work(&p, &token, &gen).is_none() {
        return;
    }
    let out = p.gate(&job, &[]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["stats"]["files_changed"], 1,
        "the comments file is in the diff: {v:#}"
    );
    let c = v["comments"].as_array().unwrap();
    assert_eq!(c.len(), 1, "{v:#}");
    assert_eq!(c[0]["anchored_to"], "change");
    assert!(reasons_of(&v, "comment-refused").is_empty(), "{v:#}");
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

// ---- a hostile worker: the member is checked again at the gate ----

/// A worker holding the job key skips every worker-side check and signs its own member.
fn drop_with_comments(
    w: &super::hostile_worker::World,
    job: &super::hostile_worker::Job,
    member: &[u8],
) {
    use airlock_core::limits::TarLimits;
    use airlock_core::tar::DeterministicTarWriter;
    let mut packet = super::hostile_worker::packet(job, b"");
    packet.comments = 1; // a claim: the gate counts for itself
    let packet_bytes = airlock_core::format::to_json_bytes(&packet);
    let mut t = DeterministicTarWriter::with_limits(Vec::new(), TarLimits::artifact());
    t.append_file("comments.jsonl", false, member.len() as u64, member)
        .unwrap();
    t.append_file(
        "packet.json",
        false,
        packet_bytes.len() as u64,
        packet_bytes.as_slice(),
    )
    .unwrap();
    t.append_file("patch.diff", false, 0, &b""[..]).unwrap();
    w.drop_signed(job, &t.finish().unwrap(), &packet_bytes, None);
}

#[test]
fn a_hostile_workers_comments_are_checked_again_at_the_gate_and_nothing_is_written_outside() {
    let w = super::hostile_worker::World::new();
    let job = w.submit();
    let member = [
        comment("../../etc/passwd", 1, "note", "traversal"),
        comment("/etc/shadow", 1, "note", "absolute"),
        comment(".git/config", 1, "note", "git"),
        comment("src/lib.rs", 99, "note", "past the end"),
        comment("src/lib.rs", 2, "warning", "anchored"),
        r#"{"path":"src/lib.rs","line":1,"severity":"note","body":"<b>x</b>","onclick":"x"}"#
            .to_owned(),
    ]
    .join("\n");
    drop_with_comments(&w, &job, member.as_bytes());
    let before = w.outside(&job.id());
    let out = w.gate(&job.id(), &[]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rules: Vec<&str> = reasons_of(&v, "comment-refused")
        .iter()
        .map(|r| r["rule"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        vec![
            "path.parent-dir",
            "path.absolute",
            "path.git-dir",
            "format.unknown-member",
            "comments.past-end"
        ],
        "{v:#}"
    );
    let c = v["comments"].as_array().unwrap();
    assert_eq!(c.len(), 1, "{v:#}");
    assert_eq!(c[0]["body"], "anchored");
    assert_eq!(
        w.outside(&job.id()),
        before,
        "the gate wrote outside the job directory"
    );

    // A member over its cap is refused whole, unread past the cap.
    let job = w.submit();
    // Words that do not compress 200:1 (the tar reader's bomb guard would refuse first).
    let mut x: u64 = 7;
    let mut noise = || {
        (0..16_000)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                char::from(b'a' + ((x >> 33) % 26) as u8)
            })
            .collect::<String>()
    };
    let big = (0..300)
        .map(|_| comment("src/lib.rs", 1, "note", &noise()))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(big.len() as u64 > airlock_core::format::MAX_COMMENTS_BYTES);
    drop_with_comments(&w, &job, big.as_bytes());
    let out = w.gate(&job.id(), &[]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let refused = reasons_of(&v, "comment-refused");
    assert_eq!(refused.len(), 1, "{v:#}");
    assert_eq!(refused[0]["rule"], "comments.too-large");
    assert!(v["comments"].as_array().unwrap().is_empty());
}
