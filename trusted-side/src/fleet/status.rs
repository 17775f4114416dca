//! `airlock fleet status [--json]`: each worker, what its heartbeat claims (version, labels,
//! state, current job: the worker's own words, shown through `airlock_core::text` and marked
//! as claims), when the store last saw it, its tickets, jobs done and failed; lost, skipped
//! and revoked workers marked.
//!
//! Guards against: a worker's text steering the terminal (every claimed string goes through
//! `text::line`; in JSON, serde escapes control characters) and a claim read as a fact (the
//! trusted counts, `done`/`failed`, come from what landed, not from the heartbeat).

use airlock_core::text;
use anyhow::Result;
use serde::Serialize;

use super::state::State;
use crate::config::{GlobalOptions, Home};
use crate::exit::Outcome;

/// One worker, as `fleet status` shows it.
#[derive(Debug, Serialize)]
pub struct WorkerStatus {
    /// The worker.
    pub name: String,
    /// `ready`, `busy`, `lost`, `skipped`, `revoked`, `refused` (last heartbeat refused) or
    /// `new` (no heartbeat yet).
    pub mark: &'static str,
    /// Claimed version (untrusted).
    pub version: Option<String>,
    /// Claimed labels (untrusted).
    pub labels: Vec<String>,
    /// Claimed state (untrusted).
    pub claimed_state: Option<String>,
    /// Claimed current job (untrusted).
    pub current_job: Option<String>,
    /// The store's time of its last accepted heartbeat (unix seconds).
    pub last_heartbeat: Option<u64>,
    /// Jobs ticketed to it now.
    pub tickets: Vec<String>,
    /// Its jobs that landed.
    pub done: u64,
    /// Its jobs taken back (lost, unrun, revoked).
    pub failed: u64,
    /// Enrolment serial and expiry.
    pub serial: u64,
    /// Unix seconds.
    pub expires_at: u64,
    /// Why its last heartbeat was refused.
    pub refused: Option<String>,
}

/// The fleet's workers as `fleet status` reports them.
pub fn collect(home: &Home) -> Result<Vec<WorkerStatus>> {
    let state = State::load(&home.dir)?;
    let mut out = Vec::new();
    for (rec, revoked) in super::workers(&home.dir)? {
        let ws = state
            .workers
            .get(rec.name.as_str())
            .cloned()
            .unwrap_or_default();
        let h = ws.claimed.as_ref();
        let mark = if revoked {
            "revoked"
        } else if ws.lost {
            "lost"
        } else if ws.skipped {
            "skipped"
        } else if ws.refused.is_some() {
            "refused"
        } else if h.is_none() {
            "new"
        } else if ws.tickets.is_empty() {
            "ready"
        } else {
            "busy"
        };
        out.push(WorkerStatus {
            name: rec.name.to_string(),
            mark,
            version: h.map(|h| h.version.clone()),
            labels: h.map(|h| h.labels.clone()).unwrap_or_default(),
            claimed_state: h.map(|h| h.state.clone()),
            current_job: h.and_then(|h| h.job.as_ref().map(|j| j.to_string())),
            last_heartbeat: ws.last_seen,
            tickets: ws.tickets.iter().map(|t| t.job.to_string()).collect(),
            done: ws.done,
            failed: ws.failed,
            serial: ws.serial,
            expires_at: ws.expires_at,
            refused: ws.refused.clone(),
        });
    }
    Ok(out)
}

/// `airlock fleet status`.
pub fn run(global: &GlobalOptions, json: bool) -> Result<Outcome> {
    let home = Home::load(&global.home)?;
    let workers = collect(&home)?;
    if json {
        crate::output::print_json(&serde_json::json!({ "workers": workers }))?;
        return Ok(Outcome::Ok);
    }
    if workers.is_empty() {
        println!("no workers enrolled: `airlock fleet enroll NAME --worker-pub FILE --out FILE`");
        return Ok(Outcome::Ok);
    }
    let now = airlock_core::clock::now_unix();
    println!(
        "{:<20} {:<8} {:>5} {:>5} {:>9}  claimed: version, state, job, labels",
        "worker", "mark", "done", "fail", "last beat"
    );
    for w in &workers {
        let ago = w.last_heartbeat.map_or_else(
            || "never".to_owned(),
            |t| format!("{}s ago", now.saturating_sub(t)),
        );
        println!(
            "{:<20} {:<8} {:>5} {:>5} {:>9}  {}, {}, {}, [{}]",
            w.name,
            w.mark,
            w.done,
            w.failed,
            ago,
            w.version
                .as_deref()
                .map_or_else(|| "-".to_owned(), text::line),
            w.claimed_state
                .as_deref()
                .map_or_else(|| "-".to_owned(), text::line),
            w.current_job.as_deref().unwrap_or("-"),
            text::line(&w.labels.join(","))
        );
        if let Some(r) = &w.refused {
            println!("{:<20} last heartbeat refused: {}", "", text::line(r));
        }
    }
    Ok(Outcome::Ok)
}
