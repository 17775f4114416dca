//! An honest worker's packet and artifact, for the unit tests that need one (the fetch's
//! reader, the gate's runs); each test then changes what it wants to lie about.

use airlock_core::digest::Sha256Digest;
use airlock_core::format::{self, ExitInfo, ExitKind, Packet, Timings, PACKET_FORMAT};
use airlock_core::jobid::JobId;
use airlock_core::limits::TarLimits;
use airlock_core::tar::DeterministicTarWriter;

/// The packet a worker would write for `patch` (its counts from the strict parser; zero if it
/// does not parse), for `job` and the bundle `bundle_sha256`.
pub fn packet(job: &JobId, bundle_sha256: Sha256Digest, patch: &[u8]) -> Packet {
    let (files, added, removed) = airlock_core::diff::parse_patch(patch, &Default::default())
        .map_or((0, 0, 0), |p| {
            (p.files_changed(), p.lines_added(), p.lines_removed())
        });
    Packet {
        format: PACKET_FORMAT.into(),
        job: job.clone(),
        run_id: "0123456789abcdef".into(),
        bundle_sha256,
        model_requested: "model-a".into(),
        model_reported: "model-a".into(),
        tokens_in: None,
        tokens_out: None,
        models: Vec::new(),
        diff_sha256: Sha256Digest::of_bytes(patch),
        files_changed: files,
        lines_added: added,
        lines_removed: removed,
        refused: Vec::new(),
        ignored: 0,
        limits_hit: Vec::new(),
        exit: ExitInfo {
            kind: ExitKind::Exited,
            code: Some(0),
        },
        timings: Timings {
            started_at_ms: 0,
            finished_at_ms: 0,
            generator_ms: 0,
        },
        worker_version: "test".into(),
        sandbox: "namespaces+landlock+seccomp".into(),
        egress: Vec::new(),
        partial: false,
        comments: 0,
        comments_refused: 0,
        review_edits: 0,
        resumed_from: None,
    }
}

/// `artifact.tar.gz` holding `packet` and `patch`, as the deterministic writer makes it, and
/// the packet's bytes in it.
pub fn artifact(packet: &Packet, patch: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let packet_bytes = format::to_json_bytes(packet);
    let mut tar = DeterministicTarWriter::with_limits(Vec::new(), TarLimits::artifact());
    tar.append_file(
        "packet.json",
        false,
        packet_bytes.len() as u64,
        packet_bytes.as_slice(),
    )
    .expect("packet.json fits the artifact limits");
    tar.append_file("patch.diff", false, patch.len() as u64, patch)
        .expect("patch.diff fits the artifact limits");
    (
        tar.finish().expect("the artifact is written to memory"),
        packet_bytes,
    )
}
