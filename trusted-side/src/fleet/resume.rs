//! Resume: a job re-dispatched away from its worker starts from the old job's latest
//! verified checkpoint, if the gate would not reject it.
//!
//! Guards against: a poisoned checkpoint being resumed from (it is a hostile worker's output
//! like any other: verified by its job key, then judged by the gate's own steps,
//! [`crate::gate::run::judge_checkpoint`]; any reject other than what every checkpoint is,
//! partial and `running`, means a fresh start, `fleet-checkpoint-refused`), and the old worker
//! changing it after the fact (the patch is copied into the new job's own inbox and its
//! digest pinned in the new token; the old worker's slots are never read again).

use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;

use crate::config::Home;
use crate::gate::policy::Verdict;
use crate::gate::GateOptions;
use crate::reasons::ReasonCode;
use crate::store::Store;
use crate::submit::Resume;

/// The gated checkpoint patch of `old` to resume from, or `None` (none landed, it changes
/// nothing, or the gate would reject it: said on stderr with the rule).
pub fn prepare(
    home: &Home,
    store: &Store,
    key: &SigningKey,
    old: &JobId,
    opts: &GateOptions,
) -> Option<Resume> {
    let (report, patch) = match crate::gate::run::judge_checkpoint(home, store, key, old, opts) {
        Ok(r) => r,
        Err(e) => {
            tracing::info!("fleet: job {old}: no checkpoint to resume from: {e:#}");
            return None;
        }
    };
    let rejects: Vec<String> = report
        .reasons
        .iter()
        .filter(|r| r.verdict == Verdict::Reject)
        .filter(|r| r.rule.as_deref() != Some(crate::gate::checks::RULE_EXIT_RUNNING))
        .filter(|r| r.code != ReasonCode::NoChange)
        .map(|r| r.code.to_string())
        .collect();
    if !rejects.is_empty() {
        eprintln!(
            "fleet: job {old}: its checkpoint is not resumed from ({}): the gate rejects it ({}); the new job starts from the packed revision",
            ReasonCode::FleetCheckpointRefused,
            rejects.join(",")
        );
        return None;
    }
    if patch.is_empty() || report.stats.files_changed == 0 {
        return None;
    }
    Some(Resume {
        patch,
        from_job: old.clone(),
    })
}
