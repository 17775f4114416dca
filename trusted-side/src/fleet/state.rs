//! The fleet's books that `airlock watch` keeps (`<home>/fleet/state.json`, 0600): per worker
//! the tickets out, the enrolment serial and expiry, what its last heartbeat claimed (as
//! read, after its shape was checked) and the store's time of it, counts; per job the chain
//! of re-dispatches and the jobs superseded.
//!
//! Guards against: losing track across restarts (written atomically after every tick that
//! changed it) and a worker's claim becoming a fact (claims are kept apart, under `claimed`).

use std::collections::BTreeMap;
use std::path::Path;

use airlock_core::format::fleet::{Heartbeat, MAILBOX_SLOTS};
use airlock_core::jobid::JobId;
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// A ticket written into a worker's mailbox.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Ticketed {
    /// The job.
    pub job: JobId,
    /// Its sequence number for the worker.
    pub seq: u64,
    /// The mailbox slot, or `None` once the worker acknowledged it (the slot was emptied).
    pub slot: Option<usize>,
    /// Unix seconds.
    pub sent_at: u64,
    /// Unix seconds when its heartbeat first acknowledged it.
    pub taken_at: Option<u64>,
}

/// What watch knows of one worker.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WorkerState {
    /// The last ticket number used.
    pub seq: u64,
    /// The current enrolment's serial (0: none minted by watch yet, the enrol file's is 1).
    pub serial: u64,
    /// When the current enrolment expires (unix seconds).
    pub expires_at: u64,
    /// Tickets out (at most [`MAILBOX_SLOTS`] + the one running).
    pub tickets: Vec<Ticketed>,
    /// The store's time of the last heartbeat read (unix seconds).
    pub last_seen: Option<u64>,
    /// The last heartbeat that passed its shape check: the worker's claims, untrusted.
    pub claimed: Option<Heartbeat>,
    /// Why the last heartbeat was refused (a rule id and reason), if it was.
    pub refused: Option<String>,
    /// Marked lost (heartbeat older than the bound); cleared by a fresh heartbeat.
    pub lost: bool,
    /// Marked for taking tickets without running them: skipped by dispatch.
    pub skipped: bool,
    /// Jobs of this worker that landed.
    pub done: u64,
    /// Jobs taken from this worker (lost, unrun, revoked).
    pub failed: u64,
    /// Tickets in a row taken and dropped without a result.
    pub unrun: u32,
}

impl WorkerState {
    /// A mailbox slot no ticket occupies.
    pub fn free_slot(&self) -> Option<usize> {
        (0..MAILBOX_SLOTS).find(|s| !self.tickets.iter().any(|t| t.slot == Some(*s)))
    }
}

/// The whole book.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Per worker name.
    pub workers: BTreeMap<String, WorkerState>,
    /// Superseded job -> the job that replaced it.
    pub superseded: BTreeMap<JobId, JobId>,
    /// Superseded jobs whose later drop was already refused in the ledger.
    pub refused_drops: Vec<JobId>,
    /// Jobs that reached [`super::MAX_REDISPATCH`]: left for a human.
    pub to_human: Vec<JobId>,
}

impl State {
    /// Reads the book (empty if none).
    pub fn load(home: &Path) -> Result<State> {
        let p = super::dir(home).join("state.json");
        if !p.exists() {
            return Ok(State::default());
        }
        super::read_json(&p)
    }

    /// Writes it atomically.
    pub fn save(&self, home: &Path) -> Result<()> {
        super::write_private(
            &super::dir(home).join("state.json"),
            &serde_json::to_vec(self)?,
        )
    }

    /// The worker a job's ticket went to, if it is out.
    pub fn holder(&self, job: &JobId) -> Option<&str> {
        self.workers
            .iter()
            .find(|(_, w)| w.tickets.iter().any(|t| &t.job == job))
            .map(|(n, _)| n.as_str())
    }
}
