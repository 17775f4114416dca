//! `airlock fetch JOB --checkpoint`: the latest checkpoint that verifies, from two slots.
//!
//! The worker writes each checkpoint (tarball, then envelope) into the slot that does not hold
//! its latest complete pair, so a kill mid-write tears at most the slot being written. Each
//! slot is verified on its own (steps 1-6 of [`super::verify_drop`], `partial` required); the
//! verified one of the latest run with the highest signed `seq` is kept, a torn slot beside it
//! is a warning.
//!
//! Guards against: a kill between the two uploads of a checkpoint leaving no checkpoint that
//! verifies, and a torn or forged slot being taken for the latest checkpoint.

use std::path::Path;

use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;
use airlock_core::store_layout as layout;

use super::{refuse, verify_drop, DropObject, FetchError, Fetched};
use crate::reasons::ReasonCode;
use crate::store::Store;

/// Fetches and verifies a job's last checkpoint, kept as `checkpoint.tar.gz` in the job
/// directory. Never a final result: no first-artifact record, no ledger entry, and the gate
/// never reads it. When no slot verifies, the error is the first slot's refusal (a torn slot
/// says more than an absent one), else "no checkpoint landed".
pub fn fetch_checkpoint(
    store: &Store,
    trusted_key: &SigningKey,
    home: &Path,
    job: &JobId,
) -> Result<Fetched, FetchError> {
    let mut best: Option<(Fetched, tempfile::TempPath, u8)> = None;
    let mut failed: Vec<(u8, FetchError)> = Vec::new();
    for slot in 0..layout::CHECKPOINT_SLOTS {
        let object = DropObject::Checkpoint(slot);
        // An absent slot (a single checkpoint so far, or an older drop) is no warning.
        if slot > 0
            && store
                .head(&layout::drop_checkpoint_envelope(job, slot))?
                .is_none()
        {
            continue;
        }
        match verify_slot(store, trusted_key, home, job, object) {
            Ok((f, staging)) => {
                let newer = best.as_ref().is_none_or(|(b, _, _)| order(&f) > order(b));
                if newer {
                    best = Some((f, staging, slot));
                }
            }
            Err(e) => failed.push((slot, e)),
        }
    }
    let Some((fetched, staging, slot)) = best else {
        let pick = failed
            .iter()
            .position(|(_, e)| matches!(e, FetchError::Refused(_)))
            .unwrap_or(0);
        return Err(failed.swap_remove(pick).1);
    };
    for (bad, e) in &failed {
        let (_, envelope) = layout::checkpoint_slot_names(*bad);
        tracing::warn!(
            "job {job}: checkpoint slot {envelope} ignored ({e}); kept {} (seq {})",
            layout::checkpoint_slot_names(slot).1,
            fetched.seq.unwrap_or(0)
        );
    }
    staging
        .persist(&fetched.artifact_path)
        .map_err(|e| FetchError::Failed(e.error.into()))?;
    Ok(fetched)
}

/// Steps 1-6 on one slot, which must say `partial`.
fn verify_slot(
    store: &Store,
    trusted_key: &SigningKey,
    home: &Path,
    job: &JobId,
    object: DropObject,
) -> Result<(Fetched, tempfile::TempPath), FetchError> {
    // The patch is kept: the fleet gates a checkpoint before resuming from it.
    let (fetched, staging, _) = verify_drop(store, trusted_key, home, job, true, object)?;
    if !fetched.packet.partial {
        return Err(refuse(
            ReasonCode::PacketBinding,
            format!(
                "{}: the checkpoint is not marked partial",
                object.envelope_name()
            ),
        ));
    }
    Ok((fetched, staging))
}

/// Which of two verified checkpoints is the later: the run that started later (a re-run of a
/// killed job numbers its checkpoints from 1 again, beside the killed run's), then the signed
/// sequence number (older checkpoints have none), then the store's landing time.
fn order(f: &Fetched) -> (u64, u64, u64) {
    (
        f.packet.timings.started_at_ms,
        f.seq.unwrap_or(0),
        f.landed_at,
    )
}

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
mod tests;
