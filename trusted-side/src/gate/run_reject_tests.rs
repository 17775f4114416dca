//! In-process pipeline tests of [`super::run_gate`] that must end in `reject`: an edit of an
//! unpacked path, a lying packet, another key, a secret, a hunk git would apply elsewhere, a
//! patch that does not apply, a hunk on a redacted line. Fixtures: `run_tests.rs`.

use airlock_core::digest::Sha256Digest;
use airlock_core::keys::SigningKey;

use super::tests::*;
use crate::gate::policy::Verdict;
use crate::gate::test_git::git;

#[test]
fn edit_of_an_unpacked_dotenv_is_rejected_and_recorded_with_no_branch() {
    let (f, claims) = fixture(&[], false);
    let patch = "diff --git a/.env b/.env\n--- a/.env\n+++ b/.env\n@@ -1 +1 @@\n-DATABASE_URL=x\n+DATABASE_URL=y\n";
    drop_artifact(&f, &claims, Drop::honest(patch));
    let r = gate(&f, &claims.job, true);
    assert_eq!(r.decision, Verdict::Reject);
    assert!(codes(&r).contains(&"path-not-packed"), "{:?}", codes(&r));
    assert!(r.review_branch.is_none());
    assert!(git(&f.repo, &["branch", "--list", "airlock/*"]).is_empty());
    let kinds = ledger_kinds(&f);
    assert!(
        kinds.contains(&"reject:gate:path-not-packed".to_owned()),
        "{kinds:?}"
    );
}

#[test]
fn packet_lying_about_the_diff_digest_is_rejected() {
    let (f, claims) = fixture(&[], false);
    let mut d = Drop::honest(SRC_EDIT);
    d.diff_sha256 = Some(Sha256Digest::of_bytes(b"something else"));
    drop_artifact(&f, &claims, d);
    let r = gate(&f, &claims.job, true);
    assert_eq!(codes(&r), vec!["diff-digest-mismatch"]);
    assert_eq!(r.decision, Verdict::Reject);
}

#[test]
fn artifact_signed_by_another_key_is_rejected_at_fetch() {
    let (f, claims) = fixture(&[], false);
    let mut d = Drop::honest(SRC_EDIT);
    d.signer = Some(SigningKey::generate());
    drop_artifact(&f, &claims, d);
    let r = gate(&f, &claims.job, true);
    assert_eq!(codes(&r), vec!["artifact-signature"]);
    assert_eq!(r.bom.revision.as_deref(), Some(f.rev.as_str()));
    let kinds = ledger_kinds(&f);
    assert!(
        kinds.contains(&"reject:fetch:artifact-signature".to_owned()),
        "{kinds:?}"
    );
}

#[test]
fn secret_in_an_added_line_is_rejected_by_path_line_and_rule() {
    let (f, claims) = fixture(&[], false);
    let key_id = format!("AKIA{}", "Q7RZ4MX2NV5WLT3K");
    let patch = format!("diff --git a/src/keys.py b/src/keys.py\nnew file mode 100644\n--- /dev/null\n+++ b/src/keys.py\n@@ -0,0 +1,2 @@\n+# config\n+aws_access_key_id = \"{key_id}\"\n");
    drop_artifact(&f, &claims, Drop::honest(&patch));
    let r = gate(&f, &claims.job, false);
    assert_eq!(r.decision, Verdict::Reject);
    let s = r
        .reasons
        .iter()
        .find(|x| x.code.code() == "secret-in-added-line")
        .expect("secret reason");
    assert!(s.detail.starts_with("src/keys.py:2: "), "{}", s.detail);
    let json = serde_json::to_string(&r).unwrap();
    assert!(
        !json.contains(&key_id),
        "the secret value leaked into the report"
    );
}

#[test]
fn hunk_git_would_apply_at_an_offset_is_rejected() {
    let (f, claims) = fixture(&[], false);
    // Says lines 4-6 but the context is l5..l7: git applies it one line later.
    let patch = "diff --git a/ten.txt b/ten.txt\n--- a/ten.txt\n+++ b/ten.txt\n@@ -4,3 +4,3 @@\n l5\n-l6\n+L6\n l7\n";
    drop_artifact(&f, &claims, Drop::honest(patch));
    let r = gate(&f, &claims.job, true);
    assert_eq!(
        r.decision,
        Verdict::Reject,
        "{}",
        crate::report::render_text(&r)
    );
    let a = r
        .reasons
        .iter()
        .find(|x| x.code.code() == "apply-failed")
        .expect("apply-failed");
    assert!(a.detail.contains("offset"), "{}", a.detail);
}

#[test]
fn patch_that_does_not_apply_is_rejected() {
    let (f, claims) = fixture(&[], false);
    let patch = "diff --git a/ten.txt b/ten.txt\n--- a/ten.txt\n+++ b/ten.txt\n@@ -4,3 +4,3 @@\n nope\n-l5\n+L5\n l6\n";
    drop_artifact(&f, &claims, Drop::honest(patch));
    let r = gate(&f, &claims.job, false);
    assert!(codes(&r).contains(&"apply-failed"), "{:?}", codes(&r));
}

#[test]
fn hunk_touching_a_redacted_line_is_rejected() {
    let secret = format!("ghp_{}", "x7Kp2Lq9Wm4Rt6Yz8Nb3Vc5Hd1Jf0Gs2Ae4U");
    let cfg = format!("a = 1\ntoken = \"{secret}\"\nb = 2\n");
    let (f, claims) = fixture(&[("src/cfg.py", cfg.as_str())], true);
    // The worker saw the marker on line 2 and rewrote it.
    let patch = "diff --git a/src/cfg.py b/src/cfg.py\n--- a/src/cfg.py\n+++ b/src/cfg.py\n@@ -1,3 +1,3 @@\n a = 1\n-token = \"[REDACTED:github-pat]\"\n+token = \"\"\n b = 2\n";
    drop_artifact(&f, &claims, Drop::honest(patch));
    let r = gate(&f, &claims.job, false);
    assert_eq!(r.decision, Verdict::Reject);
    assert!(
        codes(&r).contains(&"redacted-line-touched"),
        "{:?}",
        codes(&r)
    );
}

/// The apply check's detail for `patch`, which must be rejected as not applying.
fn apply_failure(patch: &str) -> String {
    let (f, claims) = fixture(&[], false);
    drop_artifact(&f, &claims, Drop::honest(patch));
    let r = gate(&f, &claims.job, true);
    assert_eq!(r.decision, Verdict::Reject, "{:?}", r.reasons);
    assert!(r.review_branch.is_none());
    assert!(git(&f.repo, &["branch", "--list", "airlock/*"]).is_empty());
    let reason = r
        .reasons
        .iter()
        .find(|x| x.code == crate::reasons::ReasonCode::ApplyFailed);
    reason
        .unwrap_or_else(|| panic!("{:?}", codes(&r)))
        .detail
        .clone()
}

#[test]
fn an_added_path_over_an_unpacked_file_does_not_apply() {
    // `.env` is a file at the revision that was never packed: the worker could not see it, and
    // an index refuses a path under a file.
    let patch = "diff --git a/.env/x.txt b/.env/x.txt\nnew file mode 100644\n--- /dev/null\n+++ b/.env/x.txt\n@@ -0,0 +1 @@\n+x\n";
    let detail = apply_failure(patch);
    assert!(detail.contains(".env: a file at the revision"), "{detail}");
}

#[test]
fn an_added_path_that_exists_unpacked_at_the_revision_does_not_apply() {
    let patch = "diff --git a/.env b/.env\nnew file mode 100644\n--- /dev/null\n+++ b/.env\n@@ -0,0 +1 @@\n+x\n";
    let detail = apply_failure(patch);
    assert!(detail.contains(".env: added, but it exists"), "{detail}");
}

#[test]
fn an_old_mode_other_than_the_packed_one_does_not_apply() {
    let patch = "diff --git a/src/lib.rs b/src/lib.rs\nold mode 100755\nnew mode 100644\n";
    let detail = apply_failure(patch);
    assert!(
        detail.contains("src/lib.rs: mode at the revision is 100644, the patch expects 100755"),
        "{detail}"
    );
}
