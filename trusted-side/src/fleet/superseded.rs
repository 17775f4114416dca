//! A job re-dispatched away from its worker is superseded: whatever it drops later is
//! refused (`fleet-superseded`, a `fetch` reject in the ledger), never fetched or gated.
//!
//! Guards against: a lost (or lying) worker landing a second result for work another worker
//! now does, and the gate judging it as if it were current.

use std::collections::BTreeSet;

use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;
use anyhow::Result;

use super::state::State;
use crate::config::Home;
use crate::store::Store;

/// Takes the superseded jobs out of `jobs` (landed, about to be gated), recording each one's
/// refusal in the ledger once; returns them.
pub fn take_superseded(
    home: &Home,
    store: &Store,
    key: &SigningKey,
    jobs: &mut Vec<JobId>,
) -> Result<BTreeSet<JobId>> {
    if jobs.is_empty() {
        return Ok(BTreeSet::new()); // nothing to look up: the fleet's books are not read
    }
    let mut state = State::load(&home.dir)?;
    let hit: BTreeSet<JobId> = jobs
        .iter()
        .filter(|j| state.superseded.contains_key(*j))
        .cloned()
        .collect();
    if hit.is_empty() {
        return Ok(hit);
    }
    jobs.retain(|j| !hit.contains(j));
    for job in &hit {
        if state.refused_drops.contains(job) {
            continue;
        }
        let by = &state.superseded[job];
        let detail =
            format!("job {job} was re-dispatched as {by}: its drop is refused, never gated");
        crate::ledger::append(
            store,
            key,
            job,
            crate::ledger::Event::Reject {
                stage: crate::reasons::Stage::Fetch.as_str().to_owned(),
                reason_code: crate::reasons::ReasonCode::FleetSuperseded
                    .code()
                    .to_owned(),
                detail: detail.clone(),
            },
            airlock_core::clock::now_unix(),
        )?;
        eprintln!("{job}  refused (fleet-superseded): {detail}");
        state.refused_drops.push(job.clone());
    }
    state.save(&home.dir)?;
    Ok(hit)
}
