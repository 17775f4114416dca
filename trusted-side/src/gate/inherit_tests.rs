//! `inherit.rs` on a real `file://` store: every refusal path names its rule and the object,
//! writes nothing anywhere, and a good patch lists the inherited files.

use std::collections::BTreeMap;
use std::path::Path;

use airlock_core::digest::Sha256Digest;
use airlock_core::format::ResumedFrom;
use airlock_core::jobid::JobId;
use airlock_core::store_layout as layout;

use super::*;
use crate::store::Store;

const PATCH: &[u8] = b"diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n+/// Adds two numbers.\n pub fn add(a: i32, b: i32) -> i32 {\n     a + b\n }\n";

fn new_job() -> JobId {
    JobId::parse("20260101T000000Z-00112233445566778899").unwrap()
}

fn old_job() -> JobId {
    JobId::parse("20260101T000000Z-99887766554433221100").unwrap()
}

fn pinned(patch: &[u8]) -> ResumedFrom {
    ResumedFrom::of_patch(&old_job(), patch)
}

/// Every file under `dir` with its bytes: what "nothing was written" is checked against.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A store holding `stored` (if any) as the new job's `resume.diff`; the read under `from`,
/// checked to write nothing in the store or the working directory's temp area.
fn read_with(stored: Option<&[u8]>, from: &ResumedFrom) -> Result<Inherited, InheritError> {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    std::fs::create_dir(&root).unwrap();
    let store = Store::open(&airlock_core::fileurl::path_to_file_url(&root).unwrap()).unwrap();
    if let Some(bytes) = stored {
        store
            .put_bytes(&layout::inbox_resume(&new_job()), bytes)
            .unwrap();
    }
    let before = snapshot(tmp.path());
    let got = read(&store, &new_job(), from);
    assert_eq!(snapshot(tmp.path()), before, "the read wrote something");
    got
}

fn refused(stored: Option<&[u8]>, from: &ResumedFrom, rule: &str) -> String {
    let e = read_with(stored, from).expect_err("refused");
    assert_eq!(e.rule(), rule, "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("({rule})")),
        "the message names the rule: {msg}"
    );
    assert!(
        msg.contains(&format!("inbox/{}/resume.diff", new_job())),
        "the message names the object: {msg}"
    );
    assert!(!msg.contains('\n'), "one line: {msg}");
    msg
}

#[test]
fn a_missing_inherited_patch_is_refused_as_missing() {
    let msg = refused(None, &pinned(PATCH), RULE_MISSING);
    assert!(msg.contains(old_job().as_str()), "names the old job: {msg}");
}

#[test]
fn an_inherited_patch_over_its_pinned_size_is_refused_before_it_is_read() {
    let mut bigger = PATCH.to_vec();
    bigger.extend_from_slice(b"+trailing\n");
    let msg = refused(Some(&bigger), &pinned(PATCH), RULE_TOO_LARGE);
    assert!(msg.contains(&format!("limit of {}", PATCH.len())), "{msg}");
    // A pinned size over the patch cap is held to the cap.
    let mut huge = pinned(PATCH);
    huge.patch_bytes = MAX_PATCH_BYTES + 10;
    let too_big = vec![b'x'; MAX_PATCH_BYTES as usize + 1];
    let msg = refused(Some(&too_big), &huge, RULE_TOO_LARGE);
    assert!(
        msg.contains(&format!("limit of {MAX_PATCH_BYTES}")),
        "{msg}"
    );
}

#[test]
fn an_inherited_patch_that_is_not_the_pinned_one_is_refused_on_its_digest() {
    let mut swapped = PATCH.to_vec();
    let at = swapped.len() - 3;
    swapped[at] = b'X';
    let msg = refused(Some(&swapped), &pinned(PATCH), RULE_DIGEST);
    assert!(
        msg.contains(&format!("sha256:{}", Sha256Digest::of_bytes(PATCH))),
        "names the pinned digest: {msg}"
    );
}

#[test]
fn an_inherited_patch_the_strict_parser_refuses_is_refused_with_its_rule() {
    let hostile = b"diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n";
    let msg = refused(Some(hostile), &pinned(hostile), RULE_PARSE);
    assert!(msg.contains("diff."), "carries the parser's rule: {msg}");
    refused(
        Some(b"not a diff\x1b[31m"),
        &pinned(b"not a diff\x1b[31m"),
        RULE_PARSE,
    );
}

#[test]
fn a_good_inherited_patch_lists_each_file_with_its_lines() {
    let i = read_with(Some(PATCH), &pinned(PATCH)).unwrap();
    assert_eq!(i.from_job, old_job());
    assert_eq!(i.patch_sha256, Sha256Digest::of_bytes(PATCH));
    assert_eq!(i.refused, None);
    assert_eq!(i.files.len(), 1);
    assert_eq!(i.files[0].path, "src/lib.rs");
    assert_eq!((i.files[0].lines_added, i.files[0].lines_removed), (1, 0));
}

#[test]
fn a_refused_patch_is_a_reject_with_the_rule_and_the_section_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(&airlock_core::fileurl::path_to_file_url(tmp.path()).unwrap()).unwrap();
    let (shown, reason) = section(&store, &new_job(), &pinned(PATCH));
    let reason = reason.expect("a reason");
    assert_eq!(reason.code, ReasonCode::ResumePatchRefused);
    assert_eq!(reason.verdict, Verdict::Reject);
    assert_eq!(reason.rule.as_deref(), Some(RULE_MISSING));
    assert_eq!(shown.from_job, old_job());
    assert!(shown.files.is_empty());
    assert!(shown.refused.unwrap().contains("(resume.missing)"));
}

#[test]
fn a_packet_claim_that_disagrees_with_the_record_goes_to_a_human() {
    let given = pinned(PATCH);
    assert_eq!(check_claim(None, None), None);
    assert_eq!(check_claim(Some(&given), Some(&given)), None);
    let mut other = given.clone();
    other.patch_sha256 = Sha256Digest::of_bytes(b"other");
    let another_job = ResumedFrom {
        job: new_job(),
        ..given.clone()
    };
    for (recorded, claimed) in [
        (Some(&given), Some(&other)),
        (Some(&given), Some(&another_job)),
        (Some(&given), None),
        (None, Some(&given)),
    ] {
        let r = check_claim(recorded, claimed).expect("a mismatch");
        assert_eq!(r.code, ReasonCode::ResumeClaimMismatch);
        assert_eq!(r.verdict, Verdict::Human);
        assert_eq!(r.rule.as_deref(), Some("packet.resumed-from"));
    }
}
