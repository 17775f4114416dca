//! Which jobs have landed: their final `artifact.dsse.json` is in the drop (the worker writes
//! it last).
//!
//! A full listing of `drop/` costs requests and server work in proportion to everything in the
//! drop, which only grows until `airlock gc`; a watch feeding a busy fleet loops many times a
//! second. So with a fleet the drop is listed in full at most every [`FULL_EVERY`], and in
//! between only the jobs that may have landed are asked about, one HEAD of the final envelope
//! each, by the fleet tick itself: tickets taken by a worker whose heartbeat has moved on from
//! them (`fleet::dispatch::Tick`). Without a fleet every loop lists in full (the loop itself
//! backs off while idle).
//!
//! Guards against: a landed job going unseen (a full listing at least every [`FULL_EVERY`]
//! sees every job, ticketed or not, a late drop of a superseded job included, which the watch
//! then refuses); a name `submit` never makes counting as a job (only a job id directly under
//! `drop/` whose final envelope is there counts). A HEAD only adds a job; a full listing
//! replaces the set, so what `gc` removed leaves it.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use airlock_core::jobid::JobId;
use airlock_core::store_layout as layout;
use anyhow::Result;

use crate::store::Store;

/// Longest time between two full listings of the drop while a fleet is fed.
pub const FULL_EVERY: Duration = Duration::from_secs(2);

/// Jobs whose final artifact envelope is in the drop (`drop/<job>/artifact.dsse.json`), by a
/// full listing.
pub fn landed_jobs(store: &Store) -> Result<BTreeSet<JobId>> {
    let mut out = BTreeSet::new();
    for o in store.list("drop/")? {
        let Some(rest) = o.key.strip_prefix("drop/") else {
            continue;
        };
        let Some((job, name)) = rest.split_once('/') else {
            continue;
        };
        if name != "artifact.dsse.json" {
            continue;
        }
        // Names that are not job ids were not made by `submit`: not ours to gate.
        if let Ok(job) = JobId::parse(job) {
            out.insert(job);
        }
    }
    Ok(out)
}

/// The landed jobs as the watch loop last saw them.
#[derive(Debug, Default)]
pub struct Landed {
    jobs: BTreeSet<JobId>,
    listed_at: Option<Instant>,
}

impl Landed {
    /// Looks again: a full listing when `ticketed` is `None` (no fleet, or its books unread)
    /// or the last one is `FULL_EVERY` old, else a HEAD per ticketed job not seen yet.
    pub fn refresh(&mut self, store: &Store, ticketed: Option<&[JobId]>) -> Result<()> {
        let due = self.listed_at.is_none_or(|t| t.elapsed() >= FULL_EVERY);
        match ticketed {
            Some(jobs) if !due => {
                for job in jobs {
                    if !self.jobs.contains(job)
                        && store.head(&layout::drop_artifact_envelope(job))?.is_some()
                    {
                        self.jobs.insert(job.clone());
                    }
                }
            }
            _ => {
                self.jobs = landed_jobs(store)?;
                self.listed_at = Some(Instant::now());
            }
        }
        Ok(())
    }

    /// Adds jobs seen landed otherwise (a fleet tick's HEADs).
    pub fn add(&mut self, jobs: impl IntoIterator<Item = JobId>) {
        self.jobs.extend(jobs);
    }

    /// The jobs seen landed.
    pub fn jobs(&self) -> &BTreeSet<JobId> {
        &self.jobs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_jobs_whose_final_envelope_landed_count_as_landed() {
        let store = Store::open("memory://").unwrap();
        let a = "20260101T000000Z-00112233445566778899";
        let b = "20260101T000001Z-00112233445566778899";
        let c = "20260101T000002Z-00112233445566778899";
        store
            .put_bytes(&format!("drop/{a}/artifact.tar.gz"), b"x")
            .unwrap();
        store
            .put_bytes(&format!("drop/{a}/artifact.dsse.json"), b"x")
            .unwrap();
        // The tarball without its envelope: still uploading (or died halfway).
        store
            .put_bytes(&format!("drop/{b}/artifact.tar.gz"), b"x")
            .unwrap();
        // Checkpoints are not results.
        store
            .put_bytes(&format!("drop/{c}/checkpoint.dsse.json"), b"x")
            .unwrap();
        // Names `submit` never makes.
        store
            .put_bytes("drop/not-a-job/artifact.dsse.json", b"x")
            .unwrap();
        store
            .put_bytes(&format!("drop/{c}/nested/artifact.dsse.json"), b"x")
            .unwrap();
        let landed: Vec<String> = landed_jobs(&store)
            .unwrap()
            .into_iter()
            .map(|j| j.to_string())
            .collect();
        assert_eq!(landed, vec![a.to_owned()]);
    }

    #[test]
    fn between_full_listings_only_ticketed_jobs_are_asked_about_and_a_listing_sees_the_rest() {
        let store = Store::open("memory://").unwrap();
        let job = |s: &str| JobId::parse(s).unwrap();
        let a = job("20260101T000000Z-00112233445566778899");
        let b = job("20260101T000001Z-00112233445566778899");
        let land = |j: &JobId| {
            store
                .put_bytes(&layout::drop_artifact_envelope(j), b"x")
                .unwrap()
        };
        let mut landed = Landed::default();
        landed
            .refresh(&store, Some(std::slice::from_ref(&a)))
            .unwrap(); // the first look lists in full
        assert!(landed.jobs().is_empty());
        land(&a);
        land(&b);
        landed
            .refresh(&store, Some(std::slice::from_ref(&a)))
            .unwrap();
        assert_eq!(landed.jobs().iter().collect::<Vec<_>>(), vec![&a]);
        // Not ticketed (a plain submit beside the fleet): seen by the next full listing.
        landed.listed_at = Some(Instant::now() - FULL_EVERY);
        landed.refresh(&store, Some(&[])).unwrap();
        assert_eq!(landed.jobs().iter().collect::<Vec<_>>(), vec![&a, &b]);
        // Without a fleet, every look is a full listing: what gc removed leaves the set.
        store.delete(&layout::drop_artifact_envelope(&a)).unwrap();
        landed.refresh(&store, None).unwrap();
        assert_eq!(landed.jobs().iter().collect::<Vec<_>>(), vec![&b]);
    }
}
