//! `fetch --checkpoint` over two slots, torn the way a kill leaves them: a new tarball put
//! into a slot without its envelope. Fixture: a real `init` + `submit` on a `file://` store
//! (`gate/run_tests.rs`), checkpoints built and signed here with the token's job key.

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, Statement};
use airlock_core::format::{ArtifactPredicate, ExitKind, PREDICATE_ARTIFACT};
use airlock_core::store_layout as layout;
use airlock_core::token::JobClaims;

use super::fetch_checkpoint;
use crate::fetch::FetchError;
use crate::gate::run::tests::{fixture, Fixture};
use crate::reasons::ReasonCode;

/// Checkpoint number `seq` of a run (its patch names it): the tarball and its envelope.
fn checkpoint(claims: &JobClaims, seq: u64) -> (Vec<u8>, Vec<u8>) {
    checkpoint_of_run(claims, 0, seq)
}

/// Checkpoint `seq` of the run that started `started` ms after the fixture's start time.
fn checkpoint_of_run(claims: &JobClaims, started: u64, seq: u64) -> (Vec<u8>, Vec<u8>) {
    let patch = format!(
        "diff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+checkpoint {seq}\n"
    );
    let mut packet =
        crate::test_artifact::packet(&claims.job, claims.bundle.sha256, patch.as_bytes());
    packet.partial = true;
    packet.timings.started_at_ms += started;
    packet.exit.kind = ExitKind::Running;
    packet.exit.code = None;
    let (tgz, packet_bytes) = crate::test_artifact::artifact(&packet, patch.as_bytes());
    let predicate = ArtifactPredicate {
        job: claims.job.clone(),
        run_id: packet.run_id.clone(),
        bundle_sha256: claims.bundle.sha256,
        packet_sha256: Sha256Digest::of_bytes(&packet_bytes),
        partial: true,
        seq: Some(seq),
    };
    let statement = Statement::new(
        "checkpoint.tar.gz",
        Sha256Digest::of_bytes(&tgz),
        PREDICATE_ARTIFACT,
        serde_json::to_value(&predicate).unwrap(),
    );
    let key = claims.job_key.signing_key().unwrap();
    (tgz, dsse::sign_statement(&statement, &key).to_json_pretty())
}

/// The worker's whole write of checkpoint `seq` into `slot`: tarball, then envelope.
fn write(f: &Fixture, claims: &JobClaims, slot: u8, seq: u64) -> Vec<u8> {
    let (tgz, env) = checkpoint(claims, seq);
    let job = &claims.job;
    f.store
        .put_bytes(&layout::drop_checkpoint(job, slot), &tgz)
        .unwrap();
    f.store
        .put_bytes(&layout::drop_checkpoint_envelope(job, slot), &env)
        .unwrap();
    tgz
}

/// A kill between the two uploads: the tarball of checkpoint `seq` lands, its envelope not.
fn tear(f: &Fixture, claims: &JobClaims, slot: u8, seq: u64) {
    let (tgz, _) = checkpoint(claims, seq);
    f.store
        .put_bytes(&layout::drop_checkpoint(&claims.job, slot), &tgz)
        .unwrap();
}

fn fetch(f: &Fixture, claims: &JobClaims) -> Result<super::Fetched, FetchError> {
    fetch_checkpoint(&f.store, &f.key, &f.home.dir, &claims.job)
}

/// The fetch kept exactly `tgz` as the job's `checkpoint.tar.gz`, signed as number `seq`.
fn assert_kept(got: super::Fetched, tgz: &[u8], seq: u64) {
    assert_eq!(got.seq, Some(seq));
    assert_eq!(got.artifact_sha256, Sha256Digest::of_bytes(tgz));
    assert!(got.artifact_path.ends_with("checkpoint.tar.gz"));
    assert_eq!(std::fs::read(&got.artifact_path).unwrap(), tgz);
    assert!(got.packet.partial);
}

#[test]
fn the_highest_verified_slot_wins_and_a_torn_slot_is_passed_over() {
    let (f, claims) = fixture(&[], false);
    let first = write(&f, &claims, 0, 1);
    // One checkpoint so far: slot 1 is absent, slot 0 is taken.
    assert_kept(fetch(&f, &claims).unwrap(), &first, 1);
    let second = write(&f, &claims, 1, 2);
    assert_kept(fetch(&f, &claims).unwrap(), &second, 2);
    // Killed while writing checkpoint 3 into slot 0: its new tarball sits beside checkpoint
    // 1's envelope. Slot 1 still holds checkpoint 2, complete.
    tear(&f, &claims, 0, 3);
    assert_kept(fetch(&f, &claims).unwrap(), &second, 2);
    // Checkpoint 3 completes (the next start would rewrite it), then 4 is torn in slot 1.
    let third = write(&f, &claims, 0, 3);
    tear(&f, &claims, 1, 4);
    assert_kept(fetch(&f, &claims).unwrap(), &third, 3);
}

#[test]
fn a_rerun_s_first_checkpoint_beats_the_killed_run_s_later_one() {
    let (f, claims) = fixture(&[], false);
    write(&f, &claims, 0, 1);
    let second = write(&f, &claims, 1, 2);
    assert_kept(fetch(&f, &claims).unwrap(), &second, 2);
    // The run is killed; a re-run starts a minute later and numbers from 1 again, into slot 0.
    let (tgz, env) = checkpoint_of_run(&claims, 60_000, 1);
    let job = &claims.job;
    f.store
        .put_bytes(&layout::drop_checkpoint(job, 0), &tgz)
        .unwrap();
    f.store
        .put_bytes(&layout::drop_checkpoint_envelope(job, 0), &env)
        .unwrap();
    assert_kept(fetch(&f, &claims).unwrap(), &tgz, 1);
}

#[test]
fn a_torn_second_slot_without_any_envelope_leaves_the_first() {
    let (f, claims) = fixture(&[], false);
    let first = write(&f, &claims, 0, 1);
    // Killed after checkpoint 2's tarball reached slot 1, before its envelope.
    tear(&f, &claims, 1, 2);
    assert_kept(fetch(&f, &claims).unwrap(), &first, 1);
}

#[test]
fn both_slots_torn_is_refused_by_digest_and_none_is_no_checkpoint() {
    let (f, claims) = fixture(&[], false);
    let none = fetch(&f, &claims).unwrap_err();
    assert!(
        matches!(&none, FetchError::Failed(e) if format!("{e:#}").contains("no checkpoint landed")),
        "{none}"
    );
    write(&f, &claims, 0, 1);
    write(&f, &claims, 1, 2);
    tear(&f, &claims, 0, 3);
    tear(&f, &claims, 1, 4);
    match fetch(&f, &claims).unwrap_err() {
        FetchError::Refused(r) => {
            assert_eq!(r.code, ReasonCode::ArtifactDigest);
            assert!(r.detail.contains("checkpoint.tar.gz"), "{}", r.detail);
        }
        e => panic!("expected a refusal, got {e}"),
    }
    let kept = f.home.dir.join("jobs").join(claims.job.as_str());
    assert!(!kept.join("checkpoint.tar.gz").exists());
}
