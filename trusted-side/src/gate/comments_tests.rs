use std::collections::BTreeMap;

use airlock_core::digest::Sha256Digest;
use airlock_core::jobid::JobId;

use super::*;
use crate::classify::tree::TreeFile;

fn job() -> JobId {
    JobId::parse("20260101T000000Z-00112233445566778899").unwrap()
}

fn listing() -> Listing {
    Listing::new(
        ["src/a.py", "README.md"]
            .iter()
            .map(|p| TreeFile {
                path: (*p).to_owned(),
                executable: false,
            })
            .collect(),
    )
}

fn files(paths: &[&str]) -> Vec<Option<Vec<u8>>> {
    paths
        .iter()
        .map(|p| match *p {
            "src/a.py" => Some(b"one\ntwo\nthree\n".to_vec()),
            "README.md" => Some(b"# x".to_vec()),
            _ => None,
        })
        .collect()
}

fn gate(jsonl: &str, kind: JobKind, changed: Option<&BTreeMap<String, AppliedFile>>) -> GateReport {
    let packet = crate::test_artifact::packet(&job(), Sha256Digest::of_bytes(b"b"), b"");
    let listing = listing();
    let anchors = Anchors {
        listing: &listing,
        read: &files,
        changed,
    };
    let mut report = GateReport::new(&job());
    let scanner = crate::fetch::worker_text::scanner().unwrap();
    check(
        Some(jsonl.as_bytes()),
        &packet,
        how(kind, true, ReviewVerdicts::default()),
        Some(&anchors),
        scanner,
        &mut report,
    );
    report.conclude();
    report
}

fn c(path: &str, line: u64, severity: &str, body: &str) -> String {
    serde_json::json!({"path": path, "line": line, "severity": severity, "body": body}).to_string()
}

fn how(kind: JobKind, patch_empty: bool, verdicts: ReviewVerdicts) -> Judging {
    Judging {
        kind,
        patch_empty,
        verdicts,
    }
}

fn codes(r: &GateReport) -> Vec<&'static str> {
    r.reasons.iter().map(|r| r.code.code()).collect()
}

#[test]
fn anchored_comments_queue_and_an_error_comment_sends_a_review_to_a_person() {
    let r = gate(&c("src/a.py", 3, "note", "fine"), JobKind::Review, None);
    assert_eq!(r.decision, Verdict::Queue);
    assert_eq!(codes(&r), vec!["review-comments"]);
    assert_eq!(r.comments[0].anchored_to, "revision");
    let r = gate(&c("README.md", 1, "error", "wrong"), JobKind::Review, None);
    assert_eq!(r.decision, Verdict::Human);
    assert_eq!(codes(&r), vec!["review-comments", "review-error"]);
}

#[test]
fn unanchored_comments_are_refused_by_name_and_the_rest_survive() {
    let jsonl = [
        c("src/a.py", 4, "note", "past the end"),
        c("src/missing.py", 1, "note", "no such file"),
        c("../etc/passwd", 1, "note", "outside"),
        c("src/a.py", 1, "warning", "kept"),
    ]
    .join("\n");
    let r = gate(&jsonl, JobKind::Review, None);
    assert_eq!(r.decision, Verdict::Human);
    assert_eq!(r.comments.len(), 1);
    assert_eq!(r.comments[0].index, 4);
    let refused: Vec<(Option<&str>, &str)> = r
        .reasons
        .iter()
        .filter(|r| r.code == ReasonCode::CommentRefused)
        .map(|r| (r.path.as_deref(), r.rule.as_deref().unwrap()))
        .collect();
    assert_eq!(
        refused,
        vec![
            (None, "path.parent-dir"),
            (Some("src/a.py"), "comments.past-end"),
            (Some("src/missing.py"), "comments.unanchored"),
        ]
    );
    let details: String = r.reasons.iter().map(|r| r.detail.clone()).collect();
    assert!(details.contains("comments.jsonl:1:") && details.contains("comments.jsonl:3:"));
    assert!(!details.contains("past the end\"") && !details.contains("outside"));
}

#[test]
fn a_change_job_anchors_to_the_changed_file_after_the_patch() {
    let mut changed = BTreeMap::new();
    changed.insert(
        "src/a.py".to_owned(),
        AppliedFile {
            old: Some(b"one\n".to_vec()),
            new: Some(b"1\n2\n3\n4\n5\n".to_vec()),
            new_mode: None,
        },
    );
    let r = gate(
        &c("src/a.py", 5, "note", "new line"),
        JobKind::Change,
        Some(&changed),
    );
    assert_eq!(r.comments[0].anchored_to, "change");
    assert_eq!(codes(&r), vec!["review-comments"]);
}

#[test]
fn a_secret_in_a_body_rejects_and_the_body_is_withheld() {
    let key = format!("AKIA{}", "QWERTYUIOPASDFGH");
    let body = format!("the key is aws_access_key_id = {key}");
    let r = gate(&c("src/a.py", 1, "note", &body), JobKind::Review, None);
    assert_eq!(r.decision, Verdict::Reject);
    assert!(codes(&r).contains(&"secret-in-worker-text"));
    assert!(r.comments[0].withheld);
    assert_eq!(r.comments[0].body, WITHHELD_BODY);
    let all = serde_json::to_string(&r).unwrap();
    assert!(!all.contains(&key), "the value leaked: {all}");
}

#[test]
fn a_review_job_that_changed_files_is_rejected() {
    let mut packet = crate::test_artifact::packet(&job(), Sha256Digest::of_bytes(b"b"), b"");
    packet.review_edits = 2;
    let mut report = GateReport::new(&job());
    let scanner = crate::fetch::worker_text::scanner().unwrap();
    check(
        None,
        &packet,
        how(JobKind::Review, true, ReviewVerdicts::default()),
        None,
        scanner,
        &mut report,
    );
    report.conclude();
    assert_eq!(report.decision, Verdict::Reject);
    assert_eq!(codes(&report), vec!["review-edited-files"]);
}

#[test]
fn lines_are_counted_as_an_editor_numbers_them() {
    assert_eq!(count_lines(b""), 0);
    assert_eq!(count_lines(b"a"), 1);
    assert_eq!(count_lines(b"a\n"), 1);
    assert_eq!(count_lines(b"a\nb"), 2);
}

#[test]
fn a_review_job_with_a_diff_is_rejected_even_when_the_worker_says_nothing() {
    let packet = crate::test_artifact::packet(&job(), Sha256Digest::of_bytes(b"b"), b"");
    let mut report = GateReport::new(&job());
    report.stats.files_changed = 1;
    let scanner = crate::fetch::worker_text::scanner().unwrap();
    check(
        None,
        &packet,
        how(JobKind::Review, false, ReviewVerdicts::default()),
        None,
        scanner,
        &mut report,
    );
    report.conclude();
    assert_eq!(codes(&report), vec!["review-edited-files"]);
    // A change job may change files.
    let mut report = GateReport::new(&job());
    check(
        None,
        &packet,
        how(JobKind::Change, false, ReviewVerdicts::default()),
        None,
        scanner,
        &mut report,
    );
    assert!(report.reasons.is_empty());
}

#[test]
fn the_policy_sets_the_review_verdicts_and_its_default_keeps_the_digest() {
    use super::super::policy::Policy;
    let default = Policy::default();
    let written = Policy::from_toml("[review]\ncomments = \"queue\"\nerror = \"human\"\n").unwrap();
    assert_eq!(written.digest(), default.digest());
    let strict = Policy::from_toml("[review]\ncomments = \"human\"\nerror = \"reject\"\n").unwrap();
    assert_ne!(strict.digest(), default.digest());
    assert!(Policy::from_toml("[review]\nwarning = \"human\"\n").is_err());
    let packet = crate::test_artifact::packet(&job(), Sha256Digest::of_bytes(b"b"), b"");
    let listing = listing();
    let anchors = Anchors {
        listing: &listing,
        read: &files,
        changed: None,
    };
    let scanner = crate::fetch::worker_text::scanner().unwrap();
    let mut report = GateReport::new(&job());
    let jsonl = c("src/a.py", 1, "error", "wrong");
    let v = strict.review_verdicts();
    check(
        Some(jsonl.as_bytes()),
        &packet,
        how(JobKind::Review, true, v),
        Some(&anchors),
        scanner,
        &mut report,
    );
    report.conclude();
    assert_eq!(report.decision, Verdict::Reject);
    let verdicts: Vec<Verdict> = report.reasons.iter().map(|r| r.verdict).collect();
    assert_eq!(verdicts, vec![Verdict::Human, Verdict::Reject]);
}

#[test]
fn files_are_read_a_few_at_a_time_whatever_the_comments_name() {
    let paths: Vec<String> = (0..50).map(|i| format!("f{i:02}.txt")).collect();
    let listing = Listing::new(
        paths
            .iter()
            .map(|p| TreeFile {
                path: p.clone(),
                executable: false,
            })
            .collect(),
    );
    let most = std::cell::Cell::new(0usize);
    let read = |asked: &[&str]| -> Vec<Option<Vec<u8>>> {
        most.set(most.get().max(asked.len()));
        asked.iter().map(|_| Some(b"one\n".to_vec())).collect()
    };
    let anchors = Anchors {
        listing: &listing,
        read: &read,
        changed: None,
    };
    let jsonl: Vec<String> = paths.iter().map(|p| c(p, 1, "note", "n")).collect();
    let packet = crate::test_artifact::packet(&job(), Sha256Digest::of_bytes(b"b"), b"");
    let scanner = crate::fetch::worker_text::scanner().unwrap();
    let mut report = GateReport::new(&job());
    let judging = how(JobKind::Review, true, ReviewVerdicts::default());
    let member = jsonl.join("\n");
    check(
        Some(member.as_bytes()),
        &packet,
        judging,
        Some(&anchors),
        scanner,
        &mut report,
    );
    assert_eq!(report.comments.len(), 50);
    assert!(most.get() <= 8, "read {} files at once", most.get());
}
