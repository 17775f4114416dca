//! The model history the gate's drift check reads: kept in the home by `audit verify`
//! (`drift::keep`), then read on from the kept entry by gates, which write nothing; the same
//! answers as a full read, and a ledger changed at the kept entry is read again in full.

use super::*;
use crate::gate::drift::{keep, ModelHistory, CACHE_FILE};
use crate::gate::policy::Verdict;

/// Job `n` submitted asking `example/model-1`, then fetched answering `reported`, then
/// approved by a person (only approved jobs feed the history).
fn job_answered(fx: &Fixture, n: u8, reported: &str, at: u64) {
    job_answered_unapproved(fx, n, reported, at);
    append(&fx.store, &fx.key, &job(n), approve(), at).unwrap();
}

fn job_answered_unapproved(fx: &Fixture, n: u8, reported: &str, at: u64) {
    append(&fx.store, &fx.key, &job(n), submit("p"), at).unwrap();
    append(&fx.store, &fx.key, &job(n), fetch_reporting(reported), at).unwrap();
}

fn approve() -> Event {
    Event::Approve {
        by: "alice".into(),
        note: String::new(),
        trusted_key_id: "k".into(),
        artifact_sha256: Sha256Digest::of_bytes(b"artifact"),
        gate_entry: 1,
    }
}

/// The drift reason for a job asking `example/model-1` and answered `reported`.
fn drift(h: &ModelHistory, reported: &str) -> Option<String> {
    h.check("example/model-1", reported, Verdict::Human)
        .filter(|r| r.code == crate::reasons::ReasonCode::ModelDrift)
        .map(|r| r.detail)
}

/// The code the check gives a job asking `example/model-1` and answered `reported`.
fn code(h: &ModelHistory, reported: &str) -> Option<crate::reasons::ReasonCode> {
    h.check("example/model-1", reported, Verdict::Human)
        .map(|r| r.code)
}

#[test]
fn only_approved_jobs_feed_the_history_and_a_decline_takes_one_back() {
    use crate::reasons::ReasonCode;
    let fx = Fixture::new();
    let home = tempfile::tempdir().unwrap();
    // A hostile worker answers first: queued or not, nobody approved it, so it is no baseline.
    job_answered_unapproved(&fx, 1, "model-1-poison", T0);
    let h = ModelHistory::read(&fx.store, &fx.trusted(), home.path(), &job(50)).unwrap();
    assert_eq!(code(&h, "model-1-a"), Some(ReasonCode::ModelUnseen));
    assert_eq!(code(&h, "model-1-poison"), Some(ReasonCode::ModelUnseen));
    // A person approves an honest run: its answer is the baseline.
    job_answered(&fx, 2, "model-1-a", T0 + 1);
    let h = ModelHistory::read(&fx.store, &fx.trusted(), home.path(), &job(50)).unwrap();
    assert_eq!(code(&h, "model-1-a"), None);
    assert_eq!(code(&h, "model-1-poison"), Some(ReasonCode::ModelDrift));
    // Declined after the approval: out again.
    let decline = Event::Decline {
        by: "bob".into(),
        note: "wrong model".into(),
        trusted_key_id: "k".into(),
        artifact_sha256: Sha256Digest::of_bytes(b"artifact"),
        gate_entry: 1,
    };
    append(&fx.store, &fx.key, &job(2), decline, T0 + 2).unwrap();
    let h = ModelHistory::read(&fx.store, &fx.trusted(), home.path(), &job(50)).unwrap();
    assert_eq!(code(&h, "model-1-a"), Some(ReasonCode::ModelUnseen));
}

#[test]
fn a_kept_history_reads_only_new_entries_and_answers_as_a_full_read() {
    let fx = Fixture::new();
    let home = tempfile::tempdir().unwrap();
    for n in 1..=3 {
        job_answered(&fx, n, "model-1-a", T0 + u64::from(n));
    }
    let first = ModelHistory::read(&fx.store, &fx.trusted(), home.path(), &job(50)).unwrap();
    assert!(drift(&first, "model-1-b").is_some());
    assert!(
        !home.path().join(CACHE_FILE).exists(),
        "a gate's read writes nothing"
    );
    keep(&fx.store, &fx.trusted(), home.path()).unwrap();
    assert!(home.path().join(CACHE_FILE).is_file());
    // Entry 1 is overwritten with bytes that would not even parse: a read that starts from
    // the kept entry (6) never looks at it. (`audit verify` reports it; this read does not.)
    let entry_one = fx.bytes(1);
    fx.put(1, b"not an entry");
    job_answered(&fx, 4, "model-1-b", T0 + 10);
    let kept = ModelHistory::read(&fx.store, &fx.trusted(), home.path(), &job(50)).unwrap();
    assert!(
        ModelHistory::read(
            &fx.store,
            &fx.trusted(),
            tempfile::tempdir().unwrap().path(),
            &job(50)
        )
        .is_err(),
        "a full read meets the broken entry"
    );
    fx.put(1, &entry_one);
    let full = ModelHistory::read(
        &fx.store,
        &fx.trusted(),
        tempfile::tempdir().unwrap().path(),
        &job(50),
    )
    .unwrap();
    for reported in ["model-1-a", "model-1-b", "model-1-c"] {
        assert_eq!(drift(&kept, reported), drift(&full, reported), "{reported}");
    }
    assert_eq!(
        drift(&kept, "model-1-b"),
        None,
        "job 4's answer was folded in"
    );
    assert!(drift(&kept, "model-1-c")
        .unwrap()
        .contains("(3), model-1-b (1)"));
    // The job being gated is left out, also when its answer is in the kept fold.
    let without_4 = ModelHistory::read(&fx.store, &fx.trusted(), home.path(), &job(4)).unwrap();
    assert!(drift(&without_4, "model-1-b").is_some());
}

/// Removes the ledger and its tail hint: the store starts another chain.
fn start_over(fx: &Fixture) {
    std::fs::remove_dir_all(fx.ledger_dir()).unwrap();
    let _ = std::fs::remove_file(fx.dir.path().join("ledger.tail"));
}

#[test]
fn a_ledger_changed_at_the_kept_entry_is_read_again_in_full() {
    let fx = Fixture::new();
    let home = tempfile::tempdir().unwrap();
    job_answered(&fx, 1, "model-1-a", T0);
    keep(&fx.store, &fx.trusted(), home.path()).unwrap();
    // Another ledger in the same store: entry 2 (the kept one) now answers `model-1-z`.
    start_over(&fx);
    job_answered(&fx, 1, "model-1-z", T0);
    let h = ModelHistory::read(&fx.store, &fx.trusted(), home.path(), &job(50)).unwrap();
    assert_eq!(drift(&h, "model-1-z"), None);
    assert!(
        drift(&h, "model-1-a").is_some(),
        "the old fold was set aside"
    );
    // A ledger now shorter than the kept entry is read again in full too: one submit, no answer.
    start_over(&fx);
    append(&fx.store, &fx.key, &job(2), submit("p"), T0).unwrap();
    let h = ModelHistory::read(&fx.store, &fx.trusted(), home.path(), &job(50)).unwrap();
    assert!(drift(&h, "model-1-z").is_none(), "no answers left");
    assert_eq!(
        code(&h, "model-1-z"),
        Some(crate::reasons::ReasonCode::ModelUnseen)
    );
}
