//! Unit tests of the artifact read-back (one pass over the tarball, re-hashed).

use super::*;

const PATCH: &[u8] = b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n";

/// An honest artifact for `PATCH`, written to a file; with its digest.
fn artifact_file(dir: &Path) -> (PathBuf, Sha256Digest) {
    let job = JobId::parse("20260101T000000Z-00112233445566778899").unwrap();
    let packet = crate::test_artifact::packet(&job, Sha256Digest::of_bytes(b"b"), PATCH);
    let (bytes, _) = crate::test_artifact::artifact(&packet, PATCH);
    let path = dir.join("artifact.tar.gz");
    std::fs::write(&path, &bytes).unwrap();
    (path, Sha256Digest::of_bytes(&bytes))
}

#[test]
fn one_pass_reads_the_packet_and_keeps_the_patch_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (path, digest) = artifact_file(dir.path());
    let (packet, _, patch, _, _, _) = read_packet(&path, digest, true, None).unwrap();
    assert_eq!(packet.diff_sha256, Sha256Digest::of_bytes(PATCH));
    assert_eq!(patch.as_deref(), Some(PATCH));
    let (_, _, patch, _, _, _) = read_packet(&path, digest, false, None).unwrap();
    assert_eq!(patch, None);
}

#[test]
fn a_copy_that_changed_on_disk_is_refused_before_its_members_are_used() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = artifact_file(dir.path());
    let verified = Sha256Digest::of_bytes(b"the artifact the signature covered");
    let Err(FetchError::Refused(refused)) = read_packet(&path, verified, true, None) else {
        panic!("not a refusal");
    };
    assert_eq!(refused.code, ReasonCode::ArtifactChangedLocally);
    assert!(refused.detail.contains("artifact.tar.gz"), "{refused}");
    assert!(refused.detail.contains(&verified.to_string()), "{refused}");
}

#[test]
fn a_secret_in_the_log_is_found_and_the_tail_withheld_without_the_value() {
    use airlock_core::limits::TarLimits;
    use airlock_core::tar::DeterministicTarWriter;
    let dir = tempfile::tempdir().unwrap();
    let job = JobId::parse("20260101T000000Z-00112233445566778899").unwrap();
    let packet = crate::test_artifact::packet(&job, Sha256Digest::of_bytes(b"b"), PATCH);
    let packet_bytes = airlock_core::format::to_json_bytes(&packet);
    let key = ["AKIA", "Q7RZ", "4MX2", "NV5W", "LT3K"].concat();
    let log = format!("working\nexport AWS_ACCESS_KEY_ID={key}\ndone\n");
    let mut tar = DeterministicTarWriter::with_limits(Vec::new(), TarLimits::artifact());
    for (name, bytes) in [
        ("generator.log", log.as_bytes()),
        ("packet.json", packet_bytes.as_slice()),
        ("patch.diff", PATCH),
    ] {
        tar.append_file(name, false, bytes.len() as u64, bytes)
            .unwrap();
    }
    let bytes = tar.finish().unwrap();
    let path = dir.path().join("artifact.tar.gz");
    std::fs::write(&path, &bytes).unwrap();
    let (_, _, _, tail, found, _) =
        read_packet(&path, Sha256Digest::of_bytes(&bytes), true, None).unwrap();
    assert!(!found.is_empty(), "no finding");
    assert!(found
        .iter()
        .all(|f| f.member == "generator.log" && f.line == 2 && !f.rule.contains(&key)));
    let tail = tail.unwrap();
    assert_eq!(tail, worker_text::WITHHELD_TAIL);
    let reasons = crate::gate::scan::worker_text_reasons(&found);
    assert!(reasons
        .iter()
        .all(|r| r.code == ReasonCode::SecretInWorkerText && !r.detail.contains(&key)));
}
