//! What `airlock watch` does for the fleet on every tick: read each worker's heartbeat (a
//! capped, shape-checked claim), retire tickets whose job landed, empty acknowledged mailbox
//! slots, renew enrolments at half their lifetime, mark workers lost (heartbeat older than
//! [`WorkerRecord::lost_after`]) or skipped (tickets taken and dropped without a result), re-dispatch what
//! they held as new jobs, and seal queued jobs' tokens to idle, compatible workers.
//!
//! Guards against: a heartbeat widening what a worker gets (a worker holds at most
//! [`MAILBOX_SLOTS`] tickets whatever its state claims; labels and formats it claims only
//! select among workers, and a job's token always names the formats this side reads, so a
//! claimed old version never downgrades a job), a job sent to a worker whose formats cannot
//! carry it (`fleet-formats`), a refused heartbeat counting as alive (`fleet-heartbeat-refused`),
//! a worker taking tickets without running them (`fleet-ticket-unrun`: marked and skipped), and
//! a job bouncing forever ([`super::MAX_REDISPATCH`], then a human: `fleet-redispatch-limit`).

use std::collections::BTreeSet;

use airlock_core::format::fleet::{
    Heartbeat, Ticket, WorkerName, MAILBOX_SLOTS, MAX_HEARTBEAT_BYTES, TICKET_FORMAT, TOKEN_RESUME,
};
use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;
use airlock_core::seal::{self, Recipient};
use airlock_core::store_layout as layout;
use anyhow::Result;

use super::state::{State, Ticketed, WorkerState};
use super::{Queued, WorkerRecord};
use crate::config::Home;
use crate::store::Store;

/// Longest wait of `watch` between two fleet ticks.
pub const TICK: std::time::Duration = std::time::Duration::from_millis(100);

/// What one tick did.
#[derive(Debug, Default)]
pub struct Tick {
    /// Tickets sealed and written.
    pub dispatched: usize,
    /// Jobs dispatched again under a new job.
    pub redispatched: usize,
    /// The jobs this tick found landed (one HEAD each) among the tickets taken by a worker
    /// whose heartbeat has moved on from them (idle, or busy with another job): a worker's
    /// heartbeat says `busy` with a job before it runs it and moves on only after its final
    /// artifact is written. Their tickets are retired in this tick, so the slots they held
    /// are refilled at once. A heartbeat that lies only delays its own jobs until the next
    /// full listing of the drop (`watch/landed.rs`).
    pub landed_now: Vec<JobId>,
}

/// Whether a worker that writes `writes` can carry a job of this trusted side: for each
/// document the trusted side reads (packets, artifact statements), one version it reads is one
/// the worker writes (the format contract's negotiation, seen from the trusted side).
pub fn carries(writes: &[String]) -> bool {
    ["airlock.packet/", "urn:airlock:predicate:artifact:"]
        .iter()
        .all(|doc| {
            airlock_core::format::READS
                .iter()
                .filter(|r| r.starts_with(doc))
                .any(|r| writes.iter().any(|w| w == r))
        })
}

/// Whether the fleet has any enrolled worker (watch ticks only then).
pub fn active(home: &Home) -> bool {
    super::workers(&home.dir).is_ok_and(|w| !w.is_empty())
}

/// Reads `name`'s heartbeat into `ws` (claims kept, time from the store's clock).
fn read_heartbeat(store: &Store, rec: &WorkerRecord, ws: &mut WorkerState) {
    let key = layout::fleet_heartbeat(&rec.name);
    let refused = match store.get_bytes_info(&key, MAX_HEARTBEAT_BYTES as u64) {
        Ok(None) => return,
        Ok(Some((bytes, info))) => match Heartbeat::from_json(&bytes) {
            Ok(h) if h.name == rec.name => {
                ws.claimed = Some(h);
                ws.last_seen = Some(info.last_modified);
                ws.refused = None;
                return;
            }
            Ok(_) => "it names another worker".to_owned(),
            Err(e) => e.to_string(),
        },
        Err(e) => format!("{e:#}"),
    };
    let line = format!("fleet-heartbeat-refused: {refused}");
    if ws.refused.as_deref() != Some(line.as_str()) {
        eprintln!(
            "fleet: worker {}: heartbeat refused (fleet-heartbeat-refused): {}",
            rec.name,
            airlock_core::text::line(&refused)
        );
    }
    ws.refused = Some(line);
}

/// One tick; `landed` are the jobs whose final artifact is in the drop.
pub fn tick(
    home: &Home,
    store: &Store,
    key: &SigningKey,
    landed: &BTreeSet<JobId>,
    gate: Option<&crate::gate::GateOptions>,
    memo: &mut Memo,
) -> Result<Tick> {
    let now = airlock_core::clock::now_unix();
    let mut state = State::load(&home.dir)?;
    let mut out = Tick::default();
    let mut again: Vec<(JobId, &'static str)> = Vec::new();
    let workers = super::workers(&home.dir)?;
    for (rec, revoked) in &workers {
        let ws = state.workers.entry(rec.name.to_string()).or_default();
        if *revoked {
            for t in ws.tickets.drain(..) {
                ws.failed += 1;
                again.push((t.job, "revoked"));
            }
            continue;
        }
        read_heartbeat(store, rec, ws);
        let moved_on: Vec<JobId> = match &ws.claimed {
            Some(h) => (ws.tickets.iter())
                .filter(|t| h.taken.contains(&t.seq) && h.job.as_ref() != Some(&t.job))
                .filter(|t| !landed.contains(&t.job))
                .map(|t| t.job.clone())
                .collect(),
            None => Vec::new(),
        };
        for job in moved_on {
            if store.head(&layout::drop_artifact_envelope(&job))?.is_some() {
                out.landed_now.push(job);
            }
        }
        let landed_now: BTreeSet<JobId> = out.landed_now.iter().cloned().collect();
        let seen: BTreeSet<JobId> = landed.union(&landed_now).cloned().collect();
        retire(home, store, rec, ws, &seen)?;
        check_unrun(store, rec, ws, now, &mut again)?;
        let fresh = ws.last_seen.is_some_and(|t| now <= t + rec.lost_after());
        let was_lost = ws.lost;
        // A worker that says it is stopping (an eviction notice) holds nothing from now on.
        let stopping = ws.claimed.as_ref().is_some_and(|h| h.state == "stopping");
        ws.lost = (stopping && fresh)
            || (!fresh && (ws.last_seen.is_some() || rec.enrolled_at + rec.lost_after() < now));
        if ws.lost && !was_lost {
            eprintln!(
                "fleet: worker {}: lost (fleet-worker-lost): no heartbeat for over {} s",
                rec.name,
                rec.lost_after()
            );
        }
        if ws.lost {
            for t in ws.tickets.drain(..) {
                if let Some(s) = t.slot {
                    store.delete(&layout::fleet_mailbox(&rec.name, s))?;
                }
                ws.failed += 1;
                again.push((t.job, "lost"));
            }
        }
        if ws.expires_at > 0 && now + rec.ttl_secs / 2 >= ws.expires_at {
            let serial = ws.serial + 1;
            let (env, e) = super::enroll::mint(store, key, rec, serial, now, false)?;
            super::enroll::deliver_renewal(store, rec, &env)?;
            ws.serial = serial;
            ws.expires_at = e.expires_at;
            tracing::info!(
                "fleet: worker {}: enrolment renewed (serial {serial})",
                rec.name
            );
        }
    }
    for (job, why) in again {
        if redispatch(home, store, key, &mut state, &job, why, gate)? {
            out.redispatched += 1;
        }
    }
    let seen: BTreeSet<JobId> = landed.iter().chain(&out.landed_now).cloned().collect();
    out.dispatched = dispatch_queue(home, store, &mut state, &workers, &seen, now, memo)?;
    state.save(&home.dir)?;
    Ok(out)
}

/// Tickets whose job landed leave the books; acknowledged slots are emptied.
fn retire(
    home: &Home,
    store: &Store,
    rec: &WorkerRecord,
    ws: &mut WorkerState,
    landed: &BTreeSet<JobId>,
) -> Result<()> {
    let claimed = ws.claimed.clone();
    let mut keep = Vec::new();
    for mut t in std::mem::take(&mut ws.tickets) {
        let acked = claimed
            .as_ref()
            .is_some_and(|h| h.taken.contains(&t.seq) || h.job.as_ref() == Some(&t.job));
        if acked || landed.contains(&t.job) {
            if let Some(s) = t.slot.take() {
                store.delete(&layout::fleet_mailbox(&rec.name, s))?;
            }
            t.taken_at.get_or_insert(airlock_core::clock::now_unix());
        }
        if landed.contains(&t.job) {
            ws.done += 1;
            ws.unrun = 0;
            super::forget_queued(&home.dir, &t.job);
            continue;
        }
        keep.push(t);
    }
    ws.tickets = keep;
    Ok(())
}

/// A ticket taken, the worker since busy with something else or idle, and nothing landed:
/// the job failed there (`fleet-ticket-unrun`); twice in a row and the worker is skipped.
fn check_unrun(
    store: &Store,
    rec: &WorkerRecord,
    ws: &mut WorkerState,
    now: u64,
    again: &mut Vec<(JobId, &'static str)>,
) -> Result<()> {
    let Some(h) = ws.claimed.clone() else {
        return Ok(());
    };
    let seen = ws.last_seen.unwrap_or(0);
    let grace = 2 * rec.heartbeat_secs + 3;
    let mut keep = Vec::new();
    for t in std::mem::take(&mut ws.tickets) {
        let moved_on = t
            .taken_at
            .is_some_and(|at| seen > at + grace && now > at + grace)
            && h.job.as_ref() != Some(&t.job);
        if moved_on
            && store
                .head(&layout::drop_artifact_envelope(&t.job))?
                .is_none()
        {
            ws.failed += 1;
            ws.unrun += 1;
            if ws.unrun >= 2 && !ws.skipped {
                ws.skipped = true;
                eprintln!("fleet: worker {}: took tickets without a result twice in a row: skipped (fleet-ticket-unrun); `airlock fleet revoke {}` to remove it", rec.name, rec.name);
            }
            again.push((t.job, "unrun"));
            continue;
        }
        keep.push(t);
    }
    ws.tickets = keep;
    Ok(())
}

/// Dispatches `job` again under a new job (bounded), superseding it.
fn redispatch(
    home: &Home,
    store: &Store,
    key: &SigningKey,
    state: &mut State,
    job: &JobId,
    why: &str,
    gate: Option<&crate::gate::GateOptions>,
) -> Result<bool> {
    let qdir = super::dir(&home.dir).join("queue");
    let qpath = qdir.join(format!("{job}.json"));
    let Ok(q) = super::read_json::<Queued>(&qpath) else {
        return Ok(false);
    };
    let forget = |j: &JobId| super::forget_queued(&home.dir, j);
    if q.redispatches >= super::MAX_REDISPATCH {
        eprintln!("fleet: job {job}: its worker was {why} after {} re-dispatches: left for a human (fleet-redispatch-limit); `airlock resubmit {job}` to try again", q.redispatches);
        state.to_human.push(job.clone());
        forget(job);
        return Ok(false);
    }
    // Resume from the old job's latest checkpoint the gate would not reject (resume.rs).
    let resume = gate.and_then(|g| super::resume::prepare(home, store, key, job, g));
    let resumes = resume.as_ref().map(|r| r.from_job.clone());
    let new = crate::resubmit::redispatch(home, store, key, job, None, None, resume)?;
    let new_job = JobId::parse(&new.job)?;
    let mut chain = q.chain.clone();
    chain.push(job.clone());
    super::enqueue(
        &home.dir,
        &Queued {
            job: new_job.clone(),
            label: q.label.clone(),
            queued_at: q.queued_at,
            redispatches: q.redispatches + 1,
            chain,
            resumes: resumes.clone(),
        },
        &new.token,
    )?;
    forget(job);
    state.superseded.insert(job.clone(), new_job.clone());
    let from = match &resumes {
        Some(_) => "resuming from its gated checkpoint",
        None => "from the packed revision",
    };
    eprintln!("fleet: job {job}: worker {why}; re-dispatched as {new_job}, {from} (the old job is superseded: anything it drops is refused)");
    Ok(true)
}

/// What a long-running `watch` keeps between ticks: the queue's entries already read (an
/// entry is written once, under a new job id, and only ever removed), so a tick reads only the
/// new ones rather than the whole queue.
#[derive(Debug, Default)]
pub struct Memo {
    queued: std::collections::HashMap<JobId, Queued>,
}

/// The queued jobs not yet ticketed, oldest first.
fn waiting(home: &Home, state: &State, landed: &BTreeSet<JobId>, memo: &mut Memo) -> Vec<Queued> {
    let qdir = super::dir(&home.dir).join("queue");
    let Ok(rd) = std::fs::read_dir(&qdir) else {
        return Vec::new();
    };
    let out_now: BTreeSet<JobId> = state
        .workers
        .values()
        .flat_map(|w| w.tickets.iter().map(|t| t.job.clone()))
        .collect();
    let mut present = std::collections::HashSet::new();
    let mut v: Vec<Queued> = rd
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let job = JobId::parse(n.strip_suffix(".json")?).ok()?;
            if landed.contains(&job) {
                super::forget_queued(&home.dir, &job);
                return None;
            }
            present.insert(job.clone());
            if out_now.contains(&job) || state.superseded.contains_key(&job) {
                return None;
            }
            if let Some(q) = memo.queued.get(&job) {
                return Some(q.clone());
            }
            let q = super::read_json::<Queued>(&e.path()).ok()?;
            memo.queued.insert(job, q.clone());
            Some(q)
        })
        .collect();
    memo.queued.retain(|j, _| present.contains(j));
    v.sort_by(|a, b| (a.queued_at, &a.job).cmp(&(b.queued_at, &b.job)));
    v
}

/// Seals each waiting job's token to the least busy compatible worker with a free slot.
fn dispatch_queue(
    home: &Home,
    store: &Store,
    state: &mut State,
    workers: &[(WorkerRecord, bool)],
    landed: &BTreeSet<JobId>,
    now: u64,
    memo: &mut Memo,
) -> Result<usize> {
    let mut n = 0;
    for q in waiting(home, state, landed, memo) {
        let room = |ws: &WorkerState| ws.tickets.len() < MAILBOX_SLOTS && ws.free_slot().is_some();
        if !state.workers.values().any(room) {
            break; // every mailbox is full: the rest wait for the next tick
        }
        let pick = workers
            .iter()
            .filter(|(rec, revoked)| {
                let Some(ws) = state.workers.get(rec.name.as_str()) else {
                    return false;
                };
                !revoked && eligible(rec, ws, &q, now)
            })
            .min_by_key(|(rec, _)| {
                let ws = &state.workers[rec.name.as_str()];
                let busy = ws.claimed.as_ref().is_some_and(|h| h.state != "idle");
                (ws.tickets.len(), busy, rec.name.clone())
            });
        let Some((rec, _)) = pick else {
            continue;
        };
        let token_path = super::dir(&home.dir)
            .join("queue")
            .join(format!("{}.token", q.job));
        let Ok(token) = std::fs::read_to_string(&token_path) else {
            continue;
        };
        let ws = state
            .workers
            .get_mut(rec.name.as_str())
            .ok_or_else(|| anyhow::anyhow!("worker {} vanished", rec.name))?;
        let Some(slot) = ws.free_slot() else {
            continue;
        };
        let seq = ws.seq + 1;
        let ticket = Ticket {
            format: TICKET_FORMAT.to_owned(),
            worker: rec.name.clone(),
            seq,
            job: q.job.clone(),
            token: token.trim().to_owned(),
        };
        let sealed = seal::seal(
            &Recipient::parse(&rec.recipient)?,
            &zeroize::Zeroizing::new(serde_json::to_vec(&ticket)?),
        )?;
        drop(ticket);
        store.put_bytes(&layout::fleet_mailbox(&rec.name, slot), &sealed)?;
        ws.seq = seq;
        ws.tickets.push(Ticketed {
            job: q.job.clone(),
            seq,
            slot: Some(slot),
            sent_at: now,
            taken_at: None,
        });
        tracing::info!("fleet: job {} -> worker {} (slot {slot})", q.job, rec.name);
        n += 1;
    }
    Ok(n)
}

/// Whether `ws` may get `q` now: alive, not lost, skipped or refused, a free slot, fewer than
/// [`MAILBOX_SLOTS`] tickets, the label claimed, and formats that carry the job.
fn eligible(rec: &WorkerRecord, ws: &WorkerState, q: &Queued, now: u64) -> bool {
    let Some(h) = &ws.claimed else {
        return false;
    };
    let fresh = ws.last_seen.is_some_and(|t| now <= t + rec.lost_after());
    fresh
        && !ws.lost
        && !ws.skipped
        && ws.refused.is_none()
        && h.state != "stopping"
        && ws.tickets.len() < MAILBOX_SLOTS
        && ws.free_slot().is_some()
        && q.label.as_ref().is_none_or(|l| h.labels.contains(l))
        && carries(&h.writes)
        && (q.resumes.is_none() || h.reads.iter().any(|r| r == TOKEN_RESUME))
}

/// The name of a worker as a store segment (for callers holding a string).
pub fn worker_name(s: &str) -> Option<WorkerName> {
    WorkerName::parse(s).ok()
}
