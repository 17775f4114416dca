//! Builds, signs and drops the worker's output: `artifact.tar.gz` (or a checkpoint) holding
//! exactly `comments.jsonl` (when there are comments), `generator.log`, `packet.json`,
//! `patch.diff`, signed with the per-job key (the statement binds the whole tarball).
//!
//! Guards against: a reader seeing an envelope without its artifact (the tarball is written
//! first, the envelope last), a kill mid-checkpoint tearing the only checkpoint (two slots,
//! written in turn: see `run.rs`), an artifact over the job's byte limit (replaced by one with an
//! empty patch that says so), and non-deterministic output (the core's deterministic writer).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use airlock_core::digest::{HashingWriter, Sha256Digest};
use airlock_core::dsse::{self, Statement};
use airlock_core::format::{self, ArtifactPredicate, Packet, PREDICATE_ARTIFACT};
use airlock_core::keys::SigningKey;
use airlock_core::limits::TarLimits;
use airlock_core::store_layout as layout;
use airlock_core::tar::DeterministicTarWriter;
use airlock_core::token::JobClaims;
use anyhow::{Context, Result};

use crate::transfer::{self, Overwrite};

/// Which drop object pair to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropKind {
    /// Checkpoint number `seq` of the run into slot `slot` (`drop/<job>/checkpoint[.1].*`),
    /// overwritten in turn while the generator runs.
    Checkpoint {
        /// The checkpoint slot (0 or 1).
        slot: u8,
        /// Its sequence number in the run, signed in the statement.
        seq: u64,
    },
    /// `drop/<job>/artifact.*`, written once at the end.
    Final,
}

impl DropKind {
    /// The subject name in the statement: the same for both checkpoint slots.
    pub fn subject(self) -> &'static str {
        match self {
            DropKind::Checkpoint { .. } => "checkpoint.tar.gz",
            DropKind::Final => "artifact.tar.gz",
        }
    }

    /// The tarball's object name.
    pub fn object(self) -> &'static str {
        match self {
            DropKind::Checkpoint { slot, .. } => layout::checkpoint_slot_names(slot).0,
            DropKind::Final => "artifact.tar.gz",
        }
    }

    /// The envelope's object name.
    pub fn envelope(self) -> &'static str {
        match self {
            DropKind::Checkpoint { slot, .. } => layout::checkpoint_slot_names(slot).1,
            DropKind::Final => "artifact.dsse.json",
        }
    }
}

/// A built artifact on local disk.
pub struct Built {
    /// Where it is.
    pub path: PathBuf,
    /// Its digest.
    pub sha256: Sha256Digest,
    /// Its size.
    pub bytes: u64,
    /// Digest of its packet.json.
    pub packet_sha256: Sha256Digest,
}

/// Writes the artifact tarball to `path` (created new): `generator.log` (if any) and
/// `patch.diff` (if any; else empty) are streamed from their files; `packet.json` is written
/// for `reader` ([`Packet::to_json_for`]); `comments.jsonl` (if any) from its file.
pub fn build(
    path: &Path,
    packet: &Packet,
    reader: format::Reader,
    patch: Option<&Path>,
    log: Option<&Path>,
    comments: Option<&Path>,
) -> Result<Built> {
    // What the trusted side reads (the token's `formats` claim): a trusted side of 0.6.0
    // refuses packet members it does not know.
    let packet_bytes = packet.to_json_for(reader);
    let packet_sha256 = Sha256Digest::of_bytes(&packet_bytes);
    let file = File::options()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("{}: cannot create", path.display()))?;
    let hashing = HashingWriter::new(BufWriter::new(file));
    let mut tar = DeterministicTarWriter::with_limits(hashing, TarLimits::artifact());
    // Members in bytewise order: comments.jsonl, generator.log, packet.json, patch.diff.
    if let Some(c) = comments {
        let f = File::open(c).with_context(|| format!("{}: cannot read", c.display()))?;
        let len = f.metadata()?.len();
        tar.append_file(format::COMMENTS_MEMBER, false, len, f)?;
    }
    if let Some(log) = log {
        let f = File::open(log).with_context(|| format!("{}: cannot read log", log.display()))?;
        let len = f.metadata()?.len();
        tar.append_file("generator.log", false, len, f)?;
    }
    tar.append_file(
        "packet.json",
        false,
        packet_bytes.len() as u64,
        packet_bytes.as_slice(),
    )?;
    match patch {
        Some(p) => {
            let f = File::open(p).with_context(|| format!("{}: cannot read patch", p.display()))?;
            let len = f.metadata()?.len();
            tar.append_file("patch.diff", false, len, f)?;
        }
        None => tar.append_file("patch.diff", false, 0, &[][..])?,
    }
    let (buf, sha256, bytes) = tar.finish()?.finish();
    // Not synced: this is a local build; the drop syncs the copy it puts in the store.
    buf.into_inner()
        .map_err(|e| anyhow::anyhow!("cannot write artifact: {}", e.error()))?;
    Ok(Built {
        path: path.to_owned(),
        sha256,
        bytes,
        packet_sha256,
    })
}

/// Signs `built` with the job key and drops it: tarball first, envelope last.
pub fn sign_and_drop(
    claims: &JobClaims,
    job_key: &SigningKey,
    kind: DropKind,
    built: &Built,
    packet: &Packet,
) -> Result<()> {
    let predicate = ArtifactPredicate {
        job: claims.job.clone(),
        run_id: packet.run_id.clone(),
        bundle_sha256: claims.bundle.sha256,
        packet_sha256: built.packet_sha256,
        partial: packet.partial,
        seq: match kind {
            DropKind::Checkpoint { seq, .. } => Some(seq),
            DropKind::Final => None,
        },
    };
    let statement = Statement::new(
        kind.subject(),
        built.sha256,
        PREDICATE_ARTIFACT,
        serde_json::to_value(&predicate)?,
    );
    let envelope = dsse::sign_statement(&statement, job_key).to_json_pretty();
    let (obj_url, env_url, mode) = match kind {
        DropKind::Checkpoint { slot: 0, .. } => (
            &claims.drop.checkpoint,
            &claims.drop.checkpoint_envelope,
            Overwrite::Replace,
        ),
        DropKind::Checkpoint { .. } => (
            &claims.drop.checkpoint_1,
            &claims.drop.checkpoint_1_envelope,
            Overwrite::Replace,
        ),
        DropKind::Final => (
            &claims.drop.artifact,
            &claims.drop.artifact_envelope,
            Overwrite::Never,
        ),
    };
    transfer::drop_pair(
        (obj_url, kind.object(), &built.path),
        (env_url, kind.envelope(), &envelope),
        mode,
    )
}
