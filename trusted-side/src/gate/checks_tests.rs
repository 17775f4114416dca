//! Unit tests of `checks.rs`.
use super::*;
use airlock_core::diff::{parse_patch, DiffLimits};
use airlock_core::digest::Sha256Digest;
use airlock_core::format::{FileEntry, Packer, Redaction, Source};

fn manifest(files: &[(&str, &str)]) -> Listing {
    let mut files: Vec<FileEntry> = files
        .iter()
        .map(|(p, m)| FileEntry {
            path: (*p).into(),
            size: 1,
            mode: (*m).into(),
            sha256: Sha256Digest::of_bytes(b""),
        })
        .collect();
    files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    Listing::of_manifest(&airlock_core::format::Manifest {
        format: airlock_core::format::MANIFEST_FORMAT.into(),
        packer: Packer {
            name: "airlock".into(),
            version: "0".into(),
        },
        source: Source {
            repo: "r".into(),
            revision: "0".repeat(40),
            tree: "0".repeat(40),
        },
        request_sha256: Sha256Digest::of_bytes(b""),
        files,
        redactions: Vec::<Redaction>::new(),
        skipped: BTreeMap::new(),
        omitted: Vec::new(),
    })
}

fn patch(text: &str) -> ParsedPatch {
    parse_patch(text.as_bytes(), &DiffLimits::default()).unwrap()
}

fn modify(path: &str) -> String {
    format!("diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n")
}

fn add(path: &str, mode: &str) -> String {
    format!("diff --git a/{path} b/{path}\nnew file mode {mode}\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n")
}

fn codes(rs: &[Reason]) -> Vec<(ReasonCode, Verdict, Option<String>)> {
    rs.iter()
        .map(|r| (r.code, r.verdict, r.path.clone()))
        .collect()
}

fn deny() -> Selector {
    Selector::new(&[], &[]).unwrap()
}

#[test]
fn modifying_a_path_the_worker_never_saw_is_rejected_as_not_packed() {
    let m = manifest(&[("src/lib.rs", "0644")]);
    let p = patch(&(modify(".env") + &modify("src/lib.rs")));
    assert_eq!(
        codes(&check_paths(&p, &m, Some(&deny()))),
        vec![(
            ReasonCode::PathNotPacked,
            Verdict::Reject,
            Some(".env".into())
        )]
    );
}

#[test]
fn adding_a_deny_listed_file_is_rejected() {
    let m = manifest(&[("src/lib.rs", "0644")]);
    for path in [
        "src/.env.local",
        "src/server.pem",
        "src/secrets/x.txt",
        "src/ID_RSA",
    ] {
        let rs = check_paths(&patch(&add(path, "100644")), &m, Some(&deny()));
        assert!(
            rs.iter()
                .any(|r| r.code == ReasonCode::DeniedPathAdded && r.verdict == Verdict::Reject),
            "{path}: {rs:?}"
        );
    }
}

#[test]
fn adding_over_an_existing_or_case_colliding_path_is_a_collision() {
    let m = manifest(&[("src/lib.rs", "0644"), ("docs/Guide.md", "0644")]);
    for path in [
        "src/lib.rs",
        "SRC/lib.rs",
        "docs/guide.md",
        "src/lib.rs/x.rs",
        "src",
    ] {
        let rs = check_paths(&patch(&add(path, "100644")), &m, Some(&deny()));
        assert!(
            rs.iter().any(|r| r.code == ReasonCode::PathCollision),
            "{path}: {rs:?}"
        );
    }
}

#[test]
fn new_file_in_existing_directory_or_top_level_is_fine_new_tree_needs_a_human() {
    let m = manifest(&[("src/a/lib.rs", "0644")]);
    assert!(check_paths(&patch(&add("src/a/new.rs", "100644")), &m, Some(&deny())).is_empty());
    assert!(check_paths(&patch(&add("src/new.rs", "100644")), &m, Some(&deny())).is_empty());
    assert!(check_paths(&patch(&add("NOTES.md", "100644")), &m, Some(&deny())).is_empty());
    let rs = check_paths(
        &patch(&(add("tools/gen/a.py", "100644") + &add("tools/gen/b.py", "100644"))),
        &m,
        Some(&deny()),
    );
    assert_eq!(
        codes(&rs),
        vec![(
            ReasonCode::NewDirectory,
            Verdict::Human,
            Some("tools/gen/a.py".into())
        )],
        "one reason per new top directory"
    );
    assert!(rs[0].detail.contains("tools/"), "{}", rs[0].detail);
}

#[test]
fn making_a_file_executable_needs_a_human() {
    let m = manifest(&[("run.sh", "0644"), ("bin/tool", "0755")]);
    let chmod = "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n";
    assert_eq!(
        codes(&check_paths(&patch(chmod), &m, Some(&deny()))),
        vec![(
            ReasonCode::ModeChangeExecutable,
            Verdict::Human,
            Some("run.sh".into())
        )]
    );
    let rs = check_paths(&patch(&add("new.sh", "100755")), &m, Some(&deny()));
    assert_eq!(
        codes(&rs),
        vec![(
            ReasonCode::ModeChangeExecutable,
            Verdict::Human,
            Some("new.sh".into())
        )]
    );
    let unexec = "diff --git a/bin/tool b/bin/tool\nold mode 100755\nnew mode 100644\n";
    assert!(check_paths(&patch(unexec), &m, Some(&deny())).is_empty());
}

#[test]
fn without_the_deny_list_an_added_file_is_refused() {
    let m = manifest(&[("src/lib.rs", "0644")]);
    let rs = check_paths(&patch(&add("src/new.rs", "100644")), &m, None);
    assert!(
        rs.iter()
            .any(|r| r.code == ReasonCode::DeniedPathAdded && r.verdict == Verdict::Reject),
        "{rs:?}"
    );
}

#[test]
fn hunks_covering_redacted_lines_are_rejected_removed_or_context() {
    let text = "diff --git a/cfg.py b/cfg.py\n--- a/cfg.py\n+++ b/cfg.py\n@@ -3,3 +3,3 @@\n a\n-b\n+B\n c\n";
    let p = patch(text);
    let mut red = RedactedLines::new();
    red.insert("cfg.py".into(), BTreeSet::from([4]));
    let rs = check_redacted(&p, &red);
    assert_eq!(
        codes(&rs),
        vec![(
            ReasonCode::RedactedLineTouched,
            Verdict::Reject,
            Some("cfg.py".into())
        )]
    );
    assert!(
        rs[0].detail.contains("removes or replaces line 4"),
        "{}",
        rs[0].detail
    );
    red.insert("cfg.py".into(), BTreeSet::from([5]));
    let rs = check_redacted(&p, &red);
    assert!(
        rs[0].detail.contains("has as context line 5"),
        "{}",
        rs[0].detail
    );
    // Lines outside the hunk's old range, or another file: fine.
    red.insert("cfg.py".into(), BTreeSet::from([2, 6]));
    assert!(check_redacted(&p, &red).is_empty());
    let mut other = RedactedLines::new();
    other.insert("other.py".into(), BTreeSet::from([4]));
    assert!(check_redacted(&p, &other).is_empty());
}

#[test]
fn pure_insertion_next_to_a_redacted_line_is_not_touching_it() {
    let text = "diff --git a/cfg.py b/cfg.py\n--- a/cfg.py\n+++ b/cfg.py\n@@ -4,0 +5 @@\n+new\n";
    let mut red = RedactedLines::new();
    red.insert("cfg.py".into(), BTreeSet::from([4, 5]));
    assert!(check_redacted(&patch(text), &red).is_empty());
}

fn record() -> JobRecord {
    JobRecord {
        format: airlock_core::format::JOB_RECORD_FORMAT.into(),
        job: airlock_core::jobid::JobId::parse("20260101T000000Z-00112233445566778899").unwrap(),
        job_public_key: "ab".repeat(32),
        bundle_sha256: Sha256Digest::of_bytes(b"b"),
        request_sha256: Sha256Digest::of_bytes(b"r"),
        prompt_sha256: Sha256Digest::of_bytes(b"p"),
        model_requested: "model-a".into(),
        revision: "0".repeat(40),
        issued_at: 1,
        expires_at: 2,
        limits: airlock_core::limits::JobLimits::default(),
        kind: Default::default(),
        resumed_from: None,
    }
}

fn packet(p: &ParsedPatch) -> Packet {
    Packet {
        format: airlock_core::format::PACKET_FORMAT.into(),
        job: record().job,
        run_id: "0123456789abcdef".into(),
        bundle_sha256: Sha256Digest::of_bytes(b"b"),
        model_requested: "model-a".into(),
        model_reported: "model-a".into(),
        tokens_in: None,
        tokens_out: None,
        models: Vec::new(),
        diff_sha256: Sha256Digest::of_bytes(b""),
        files_changed: p.files_changed(),
        lines_added: p.lines_added(),
        lines_removed: p.lines_removed(),
        refused: Vec::new(),
        ignored: 0,
        limits_hit: Vec::new(),
        exit: airlock_core::format::ExitInfo {
            kind: airlock_core::format::ExitKind::Exited,
            code: Some(0),
        },
        timings: airlock_core::format::Timings {
            started_at_ms: 0,
            finished_at_ms: 0,
            generator_ms: 0,
        },
        worker_version: "0".into(),
        sandbox: "namespaces+landlock+seccomp".into(),
        egress: Vec::new(),
        partial: false,
        comments: 0,
        comments_refused: 0,
        review_edits: 0,
        resumed_from: None,
    }
}

#[test]
fn honest_finished_sandboxed_packet_adds_nothing() {
    let p = patch(&modify("a.txt"));
    assert!(check_packet(&packet(&p), &record(), &p).is_empty());
}

#[test]
fn packet_lying_about_counts_or_the_requested_model_is_rejected() {
    let p = patch(&modify("a.txt"));
    let mut k = packet(&p);
    k.lines_added = 0;
    assert_eq!(
        codes(&check_packet(&k, &record(), &p)),
        vec![(ReasonCode::PacketMismatch, Verdict::Reject, None)]
    );
    let mut k = packet(&p);
    k.model_requested = "cheap-model".into();
    assert_eq!(
        codes(&check_packet(&k, &record(), &p)),
        vec![(ReasonCode::PacketMismatch, Verdict::Reject, None)]
    );
}

#[test]
fn partial_unsandboxed_and_limit_hit_runs_need_a_human() {
    let p = patch(&modify("a.txt"));
    let mut k = packet(&p);
    k.partial = true;
    k.sandbox = "none".into();
    k.limits_hit = vec!["wall-clock".into()];
    k.exit = airlock_core::format::ExitInfo {
        kind: airlock_core::format::ExitKind::Exited,
        code: Some(7),
    };
    let rs = check_packet(&k, &record(), &p);
    assert!(
        rs[0].detail.contains("the generator exited with status 7")
            && !rs[0].detail.contains("Some(")
            && !rs[0].detail.contains("Exited"),
        "{}",
        rs[0].detail
    );
    let got = codes(&rs);
    assert_eq!(
        got,
        vec![
            (ReasonCode::PartialResult, Verdict::Human, None),
            (ReasonCode::Unsandboxed, Verdict::Human, None),
            (ReasonCode::WorkerLimitHit, Verdict::Human, None),
        ]
    );
}

#[test]
fn a_limit_this_version_does_not_list_is_a_hit_shown_as_unknown() {
    let p = patch(&modify("a.txt"));
    let mut k = packet(&p);
    k.limits_hit = vec!["inodes-of-the-future".into(), "wall-clock".into()];
    let got = check_packet(&k, &record(), &p);
    let hit = got
        .iter()
        .find(|r| r.code == ReasonCode::WorkerLimitHit)
        .expect("an unknown limit is still a limit hit");
    assert_eq!(hit.verdict, Verdict::Human);
    let text = &hit.detail;
    assert!(text.contains("inodes-of-the-future"), "{text}");
    assert_eq!(text.matches("(unknown to airlock").count(), 1, "{text}");
}

#[test]
fn another_model_family_goes_to_a_human_and_refused_paths_are_recorded() {
    let p = patch(&modify("a.txt"));
    let mut k = packet(&p);
    k.model_reported = "model-b\x1b[2J".into();
    k.refused = vec![airlock_core::format::RefusedPath {
        path: "link".into(),
        reason: "diff.symlink".into(),
    }];
    let rs = check_packet(&k, &record(), &p);
    assert_eq!(
        codes(&rs),
        vec![
            (ReasonCode::ModelMismatch, Verdict::Human, None),
            (ReasonCode::WorkerRefusedPaths, Verdict::Queue, None)
        ]
    );
    assert!(!rs[0].detail.contains('\x1b'), "{}", rs[0].detail);
    k.refused.clear();
    k.model_reported = MODEL_UNREPORTED.into();
    assert!(check_packet(&k, &record(), &p).is_empty());
    // A dated snapshot of the model asked for is no mismatch; a lookalike is.
    for (got, mismatch) in [
        ("model-a-20261203", false),
        ("model-a-2026-12-03", false),
        ("model-a@20261203", false),
        ("model-a-mini-20261203", true),
        ("model-ab", true),
    ] {
        k.model_reported = got.into();
        let rs = codes(&check_packet(&k, &record(), &p));
        assert_eq!(
            rs == vec![(ReasonCode::ModelMismatch, Verdict::Human, None)],
            mismatch,
            "{got}: {rs:?}"
        );
    }
}

#[test]
fn no_model_mismatch_when_nothing_specific_was_asked() {
    let p = patch(&modify("a.txt"));
    let mut rec = record();
    rec.model_requested = MODEL_UNSPECIFIED.into();
    let mut k = packet(&p);
    k.model_requested = MODEL_UNSPECIFIED.into();
    k.model_reported = "example-model-2026-02".into();
    assert!(check_packet(&k, &rec, &p).is_empty());
}

#[test]
fn an_empty_patch_is_a_no_change_reject_and_a_real_one_is_not() {
    let p = ParsedPatch::default();
    let r = check_no_change(&p).expect("a reason");
    assert_eq!((r.code, r.verdict), (ReasonCode::NoChange, Verdict::Reject));
    assert!(check_packet(&packet(&p), &record(), &p).is_empty());
    let one = parse_patch(
        b"diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n",
        &DiffLimits::default(),
    )
    .unwrap();
    assert!(check_no_change(&one).is_none());
}

#[test]
fn closed_sets_running_final_is_refused_unclean_exits_and_unknown_reasons_need_a_human() {
    use airlock_core::format::ExitKind;
    let p = patch(&modify("a.txt"));
    // `running` in a final artifact: a checkpoint passed off as the result.
    let mut k = packet(&p);
    k.exit.kind = ExitKind::Running;
    k.exit.code = None;
    let rs = check_packet(&k, &record(), &p);
    assert_eq!(
        codes(&rs),
        vec![(ReasonCode::PacketMismatch, Verdict::Reject, None)]
    );
    assert_eq!(rs[0].rule.as_deref(), Some(RULE_EXIT_RUNNING));
    // Killed, timed out, never started or a non-zero exit, even with `partial: false`.
    for (kind, code) in [
        (ExitKind::Signaled, Some(9)),
        (ExitKind::Timeout, None),
        (ExitKind::NotStarted, None),
        (ExitKind::Exited, Some(1)),
        (ExitKind::Exited, None),
    ] {
        let mut k = packet(&p);
        k.exit.kind = kind.clone();
        k.exit.code = code;
        let rs = check_packet(&k, &record(), &p);
        assert_eq!(
            codes(&rs),
            vec![(ReasonCode::PartialResult, Verdict::Human, None)],
            "{kind:?} {code:?}"
        );
        assert!(rs[0].detail.contains("did not exit 0"), "{}", rs[0].detail);
    }
    let mut k = packet(&p);
    k.exit.kind = ExitKind::Signaled;
    k.exit.code = Some(9);
    assert!(check_packet(&k, &record(), &p)[0]
        .detail
        .contains("(the generator was killed by signal 9)"));
    // A refusal reason outside the closed set.
    let mut k = packet(&p);
    k.refused = vec![airlock_core::format::RefusedPath {
        path: "x".into(),
        reason: "trust-me".into(),
    }];
    let rs = check_packet(&k, &record(), &p);
    assert_eq!(
        codes(&rs),
        vec![
            (ReasonCode::WorkerRefusedPaths, Verdict::Human, None),
            (ReasonCode::WorkerRefusedPaths, Verdict::Queue, None)
        ]
    );
    assert_eq!(rs[0].rule.as_deref(), Some(RULE_REFUSED_REASON));
    assert!(
        rs[0].detail.ends_with("does not list: x (trust-me)"),
        "{}",
        rs[0].detail
    );
    // An unknown limit is a limit hit, shown as unknown.
    let mut k = packet(&p);
    k.limits_hit = vec!["disk".into(), "bogus-limit".into()];
    let rs = check_packet(&k, &record(), &p);
    assert_eq!(
        codes(&rs),
        vec![(ReasonCode::WorkerLimitHit, Verdict::Human, None)]
    );
    assert!(
        rs[0]
            .detail
            .ends_with("the worker hit limit(s): disk, bogus-limit (unknown to airlock 0.7.0)"),
        "{}",
        rs[0].detail
    );
}
