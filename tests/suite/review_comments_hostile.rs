//! Hostile review comments (issue 41), each refused or neutralised: through the real worker
//! (paths outside the tree, lines past the end, 10,000 comments, a 10 MiB body, a secret, links
//! as comment files, a review job that edits) and from a hostile worker that signs its own
//! `comments.jsonl` (checked again at the gate). Helpers: `review_comments.rs`.
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use airlock_tests::*;

use super::gate::Pipeline;
use super::review_comments::{comment, review_job, script, submit, work};

// ---- hostile comments, each refused or neutralised ----

/// The reasons of one code in a gate report.
pub(crate) fn reasons_of<'a>(v: &'a serde_json::Value, code: &str) -> Vec<&'a serde_json::Value> {
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
