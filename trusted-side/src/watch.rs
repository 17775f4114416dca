//! `airlock watch`: fetch and gate artifacts as they land, with bounded concurrency.
//!
//! Loop: look in `drop/` for jobs whose `artifact.dsse.json` is present (the worker writes it
//! last; with a fleet, a full listing only every few seconds: `watch/landed.rs`), drop the
//! ones already gated, and hand the rest to `--jobs N` lanes that live as long as the watch,
//! each with its own store ([`crate::gate::run_gate`], the same path as `airlock gate`, so
//! every verdict lands in the ledger); print one line per job as it finishes (the report with
//! -v), keep the model history (`gate::drift::keep`) after a gate of a job asking for a model,
//! else at most every [`KEEP_HISTORY_EVERY`]. Without a fleet, the loop looks again once the
//! lanes are done: at once if anything was gated, else it waits: on a `file://` store for a
//! filesystem event under `drop/` (notify; a full rescan every `--poll-max` anyway, in case
//! an event was missed), on remote stores by listing again after a delay that starts at
//! [`POLL_MIN`] and doubles while nothing lands, up to `--poll-max`. With a fleet, the loop
//! ticks (dispatch, renewals, lost workers) on its own thread while the lanes gate, at most
//! every [`TICK_MIN`], and keeps at most [`FLEET_QUEUED_PER_LANE`] jobs per lane handed out,
//! so the mailboxes gated jobs freed are refilled while the rest are gated.
//!
//! Guards against: gating a job twice, also across restarts and hosts (a job with a gate
//! decision in the ledger, read at start and again whenever new artifacts show up, is
//! skipped; the ledger is verified in full at start, then each new entry as it is read, from
//! the last entry read, which must still hash the same: a broken or rewritten ledger stops
//! the watch); unbounded parallel work (`--jobs`); hammering a remote store (backoff); a job
//! that keeps failing (at most [`MAX_ATTEMPTS`] tries per process, one with `--once`, then it
//! is left for a human); a job handed to a lane being handed out again before it is reported.
//! Does not check: anything itself; fetch and gate verify every byte.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;
use anyhow::{bail, Context, Result};

use crate::config::GlobalOptions;
use crate::config::Home;
use crate::exit::Outcome;
use crate::gate::policy::Verdict;
use crate::gate::{GateOptions, GateReport};
use crate::ledger::{Event, LedgerEntry, LedgerHead};
use crate::store::Store;

mod landed;
pub use landed::{landed_jobs, Landed};

/// First delay between two listings of a remote store (and after anything landed).
pub const POLL_MIN: Duration = Duration::from_millis(500);
/// Tries per job and process before it is left alone (it stays `landed` in `status`).
pub const MAX_ATTEMPTS: u32 = 3;
/// With a fleet, jobs handed to each `--jobs` lane ahead of its gates (the fleet ticks while
/// they are gated).
pub const FLEET_QUEUED_PER_LANE: usize = 2;
/// With a fleet, least time between two fleet ticks while gates are in flight (each tick reads
/// every worker's heartbeat).
pub const TICK_MIN: Duration = Duration::from_millis(50);
/// Most concurrent gates accepted by `--jobs`.
pub const MAX_CONCURRENCY: usize = 64;
/// Longest time the kept model history may lag while no job gated asks for a model (after a
/// pass that gated one, it is kept at once).
pub const KEEP_HISTORY_EVERY: Duration = Duration::from_secs(10);

/// What one pass over the drop found and did.
#[derive(Debug, Default)]
pub struct Pass {
    /// Jobs gated in this pass, with their decision.
    pub gated: Vec<(JobId, Verdict)>,
    /// Jobs that could not be gated (the error is printed).
    pub failed: Vec<JobId>,
    /// Whether a job gated asked for a model (its gate may read the model history).
    pub asked_model: bool,
}

/// The watcher's memory: what is gated (ledger + this process) and what keeps failing.
pub struct Watcher {
    gated: BTreeSet<JobId>,
    attempts: BTreeMap<JobId, u32>,
    gave_up: BTreeSet<JobId>,
    /// The last ledger entry read: later reads verify and visit only the entries after it
    /// (it must still hash the same, else the ledger was rewritten and the watch stops).
    through: Option<LedgerHead>,
    /// Landed jobs not gated as of the last ledger read (and not failed since): the next read
    /// is due only when a job outside this set shows up.
    checked: BTreeSet<JobId>,
}

impl Watcher {
    /// Starts from the ledger's gate decisions (the whole ledger, verified).
    pub fn new(store: &Store, trusted: &airlock_core::keys::PublicKey) -> Result<Watcher> {
        let mut w = Watcher {
            gated: BTreeSet::new(),
            attempts: BTreeMap::new(),
            gave_up: BTreeSet::new(),
            through: None,
            checked: BTreeSet::new(),
        };
        w.read_ledger(store, trusted)?;
        Ok(w)
    }

    /// Adds the gate decisions of the entries appended since the last read, each verified
    /// (signature, chain from the last entry read); one GET per new entry, not per entry.
    fn read_ledger(
        &mut self,
        store: &Store,
        trusted: &airlock_core::keys::PublicKey,
    ) -> Result<()> {
        let gated = &mut self.gated;
        let mut visit = |_: u64, entry: &LedgerEntry| {
            if let Event::Gate { .. } = entry.event {
                gated.insert(entry.job.clone());
            }
        };
        let report = match &self.through {
            Some(head) => crate::ledger::visit_verified_after(store, trusted, head, &mut visit),
            None => crate::ledger::visit_verified(store, trusted, &mut visit),
        }
        .context("watch: cannot read the ledger's decisions")?;
        if report.head.is_some() {
            self.through = report.head;
        }
        Ok(())
    }

    /// Landed jobs (`landed`, from [`landed_jobs`]) still to gate. When some are new (not
    /// there at the last read, or failed since), the ledger's new entries are read first, so a
    /// job another host (or an earlier run) gated meanwhile is not gated twice.
    pub fn pending(
        &mut self,
        store: &Store,
        trusted: &airlock_core::keys::PublicKey,
        landed: &BTreeSet<JobId>,
    ) -> Result<Vec<JobId>> {
        let fresh = |w: &Watcher| -> Vec<JobId> {
            landed
                .iter()
                .filter(|j| !w.gated.contains(*j) && !w.gave_up.contains(*j))
                .cloned()
                .collect()
        };
        let before = fresh(self);
        if before.iter().all(|j| self.checked.contains(j)) {
            return Ok(before);
        }
        self.read_ledger(store, trusted)?;
        let after = fresh(self);
        self.checked = after.iter().cloned().collect();
        Ok(after)
    }

    fn record(&mut self, job: &JobId, ok: bool) {
        self.checked.remove(job);
        if ok {
            self.gated.insert(job.clone());
            self.attempts.remove(job);
            return;
        }
        let n = self.attempts.entry(job.clone()).or_insert(0);
        *n += 1;
        if *n >= MAX_ATTEMPTS {
            tracing::warn!(
                "job {job}: could not be gated after {MAX_ATTEMPTS} attempts; leaving it \
                 (run `airlock gate {job}` to see why)"
            );
            self.gave_up.insert(job.clone());
        }
    }
}

/// Everything one gate needs, shared by the worker threads.
struct Ctx<'a> {
    home: &'a Home,
    key: &'a SigningKey,
    opts: &'a GateOptions,
    /// The one store, when it cannot be opened again per thread (`memory://`).
    shared: Option<&'a Store>,
}

/// The watch's gate lanes: `--jobs` threads that live as long as the watch, each with its own
/// store (its own I/O runtime and connections, opened once, not on every pass), taking jobs
/// from one queue. Dropping it ends them.
struct Lanes {
    jobs: mpsc::Sender<JobId>,
    results: mpsc::Receiver<(JobId, Result<GateReport>)>,
    /// Jobs handed to the lanes and not yet reported.
    flight: BTreeSet<JobId>,
}

impl Lanes {
    /// Starts `concurrency` lanes in `scope`.
    fn start<'scope, 'env: 'scope>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        ctx: &'env Ctx<'env>,
        queue: &'env Mutex<mpsc::Receiver<JobId>>,
        jobs: mpsc::Sender<JobId>,
        concurrency: usize,
    ) -> Lanes {
        let (tx, results) = mpsc::channel::<(JobId, Result<GateReport>)>();
        for _ in 0..concurrency.clamp(1, MAX_CONCURRENCY) {
            let tx = tx.clone();
            scope.spawn(move || {
                // One store (and I/O runtime) per lane: no lock held across requests.
                let own = match ctx.shared {
                    Some(_) => None,
                    None => Some(ctx.home.open_store()),
                };
                loop {
                    let Ok(Ok(job)) = queue.lock().map(|q| q.recv()) else {
                        return;
                    };
                    let result = match (&own, ctx.shared) {
                        (_, Some(store)) => {
                            crate::gate::run_gate(ctx.home, store, ctx.key, &job, ctx.opts)
                        }
                        (Some(Ok(store)), None) => {
                            crate::gate::run_gate(ctx.home, store, ctx.key, &job, ctx.opts)
                        }
                        (Some(Err(e)), None) => {
                            Err(anyhow::anyhow!("cannot open the store: {e:#}"))
                        }
                        (None, None) => Err(anyhow::anyhow!("no store")),
                    };
                    if tx.send((job, result)).is_err() {
                        return;
                    }
                }
            });
        }
        Lanes {
            jobs,
            results,
            flight: BTreeSet::new(),
        }
    }

    /// Hands `job` to the next free lane (it is in flight until reported).
    fn send(&mut self, job: JobId) -> bool {
        let sent = self.jobs.send(job.clone()).is_ok();
        if sent {
            self.flight.insert(job);
        }
        sent
    }

    /// The next finished gate, waiting at most `wait` (`None`: until one finishes).
    fn next(&mut self, wait: Option<Duration>) -> Option<(JobId, Result<GateReport>)> {
        let got = match wait {
            None => self.results.recv().ok(),
            Some(w) => self.results.recv_timeout(w).ok(),
        }?;
        self.flight.remove(&got.0);
        Some(got)
    }
}

/// One line per gated job: id, decision, size of the change, reason codes. The whole report
/// (`detail`, from -v) is what `airlock gate JOB` prints.
fn one_line(report: &GateReport) -> String {
    let codes: Vec<String> = report.reasons.iter().map(|r| r.code.to_string()).collect();
    format!(
        "{}  {:<6}  {} file(s) +{} -{}  {}",
        report.job,
        report.decision.as_str(),
        report.stats.files_changed,
        report.stats.lines_added,
        report.stats.lines_removed,
        if codes.is_empty() {
            "-".to_owned()
        } else {
            codes.join(",")
        }
    )
}

/// Hands the lanes the landed jobs still to gate, at most `room` of them, none already in
/// flight, and with `retry` false none that failed already (`--once` tries
/// each job once); a superseded job is refused instead (fleet). Returns how many.
fn feed(
    ctx: &Ctx<'_>,
    lanes: &mut Lanes,
    store: &Store,
    watcher: &mut Watcher,
    landed: &BTreeSet<JobId>,
    room: usize,
    retry: bool,
) -> Result<usize> {
    if room == 0 {
        return Ok(0);
    }
    let mut jobs = watcher.pending(store, &ctx.key.public(), landed)?;
    jobs.retain(|j| !lanes.flight.contains(j) && (retry || !watcher.attempts.contains_key(j)));
    // Fleet: a job re-dispatched away from its worker is refused, never gated.
    for job in crate::fleet::superseded::take_superseded(ctx.home, store, ctx.key, &mut jobs)? {
        watcher.gated.insert(job);
    }
    jobs.truncate(room);
    let mut n = 0;
    for job in jobs {
        if lanes.send(job) {
            n += 1;
        }
    }
    if n > 0 {
        let f = lanes.flight.len();
        tracing::info!("watch: {n} job(s) to the gate lanes, {f} in flight");
    }
    Ok(n)
}

/// Records and prints one finished gate (one line, or with `detail` the report).
fn report(
    watcher: &mut Watcher,
    args: &WatchOptions,
    detail: bool,
    job: &JobId,
    result: Result<GateReport>,
    out: &mut Pass,
) -> Result<()> {
    match result {
        Ok(report) => {
            watcher.record(job, true);
            if args.json || detail {
                crate::gate::print(&report, args.json)?;
                if !args.json {
                    println!();
                }
            } else {
                println!("{}", one_line(&report));
            }
            out.asked_model |= report
                .bom
                .model_requested
                .as_deref()
                .is_some_and(|m| m != airlock_core::model::MODEL_UNSPECIFIED);
            out.gated.push((job.clone(), report.decision));
        }
        Err(e) => {
            watcher.record(job, false);
            eprintln!("error: job {job}: cannot gate: {e:#}");
            out.failed.push(job.clone());
        }
    }
    Ok(())
}

/// How the loop waits for the next artifact.
enum Wake {
    /// `file://`: filesystem events under `<root>/drop`.
    Notify {
        rx: mpsc::Receiver<()>,
        _watcher: notify::RecommendedWatcher,
    },
    /// Remote: list again after `delay` (doubling while idle).
    Poll { delay: Duration },
}

impl Wake {
    fn new(store: &Store) -> Result<Wake> {
        let Some(root) = store.local_root() else {
            return Ok(Wake::Poll { delay: POLL_MIN });
        };
        use notify::Watcher as _;
        let drop_dir: PathBuf = root.join("drop");
        std::fs::create_dir_all(&drop_dir)
            .with_context(|| format!("{}: cannot create", drop_dir.display()))?;
        let (tx, rx) = mpsc::channel();
        let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
            if ev.is_ok() {
                let _ = tx.send(());
            }
        })
        .context("watch: cannot start filesystem notifications")?;
        watcher
            .watch(&drop_dir, notify::RecursiveMode::Recursive)
            .with_context(|| format!("{}: cannot watch", drop_dir.display()))?;
        Ok(Wake::Notify {
            rx,
            _watcher: watcher,
        })
    }

    /// Waits for a reason to look again. `progressed` (the last loop gated or dispatched
    /// something): look again at once, as more is likely waiting; backing off is for idle
    /// loops only.
    fn wait(&mut self, progressed: bool, max: Duration) {
        match self {
            Wake::Notify { rx, .. } => {
                // An event, or the periodic rescan; then swallow the burst that came with it.
                if !progressed {
                    let _ = rx.recv_timeout(max);
                }
                while rx.try_recv().is_ok() {}
            }
            Wake::Poll { delay } => {
                // A fleet tick asks for less than POLL_MIN (fleet/dispatch.rs, TICK).
                let floor = POLL_MIN.min(max);
                if progressed {
                    *delay = floor;
                    return;
                }
                let now = (*delay).min(max.max(floor));
                std::thread::sleep(now);
                *delay = (now * 2).min(max.max(floor));
            }
        }
    }
}

/// What `airlock watch` is asked to do.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Gate at most this many jobs at once.
    pub jobs: usize,
    /// Process what has landed, then exit.
    pub once: bool,
    /// Exit after gating this many jobs.
    pub max_jobs: Option<u64>,
    /// Longest wait between two listings of a remote store (a duration: 30s, 2m).
    pub poll_max: String,
    /// The local repository holding the packed revisions.
    pub repo: std::path::PathBuf,
    /// Policy file; `None`: the built-in policy.
    pub policy: Option<std::path::PathBuf>,
    /// Commit each result on `refs/heads/airlock/<job>`.
    pub review_branch: bool,
    /// Print each report as JSON (one document per job).
    pub json: bool,
}

/// `airlock watch`.
pub fn run(global: &GlobalOptions, args: &WatchOptions) -> Result<Outcome> {
    if args.jobs == 0 || args.jobs > MAX_CONCURRENCY {
        bail!("--jobs must be between 1 and {MAX_CONCURRENCY}");
    }
    let poll_max = Duration::from_secs(crate::submit::parse_duration(&args.poll_max)?.max(1));
    let home = Home::load(&global.home)?;
    let key = home.signing_key()?;
    let trusted = key.public();
    let store = home.open_store()?;
    let repo = crate::config::absolute(&args.repo)?;
    let opts = GateOptions::new(repo, args.policy.as_deref(), args.review_branch)?;
    let shared = store.url().starts_with("memory:").then_some(&store);
    let ctx = Ctx {
        home: &home,
        key: &key,
        opts: &opts,
        shared,
    };
    let mut watcher = Watcher::new(&store, &trusted)?;
    let mut wake = if args.once {
        None
    } else {
        Some(Wake::new(&store)?)
    };
    let (mut gated, mut failed) = (0u64, 0u64);
    let mut landed = Landed::default();
    // What refresh asks about between full listings (with a fleet: nothing, the tick asks).
    let mut ticketed: Option<Vec<JobId>> = None;
    let mut memo = crate::fleet::dispatch::Memo::default();
    let mut kept_at: Option<std::time::Instant> = None;
    let (queue_tx, queue_rx) = mpsc::channel::<JobId>();
    let queue = Mutex::new(queue_rx);
    std::thread::scope(|scope| -> Result<()> {
        let mut lanes = Lanes::start(scope, &ctx, &queue, queue_tx, args.jobs);
        let mut ticked_at: Option<std::time::Instant> = None;
        let mut looked = false;
        loop {
            // Fleet: dispatch queued jobs, renew enrolments, mark lost workers
            // (fleet/dispatch.rs), on this thread while the lanes gate; at most every
            // TICK_MIN while gates are in flight. One look at the drop per tick, for the fleet
            // and the gates; without a fleet, a look when the lanes are done.
            let fleet = crate::fleet::dispatch::active(&home);
            let tick_due = ticked_at.is_none_or(|t| t.elapsed() >= TICK_MIN);
            let look = (lanes.flight.is_empty() || (fleet && tick_due)) && !(args.once && looked);
            let mut dispatched = false;
            if look {
                looked = true;
                landed.refresh(&store, ticketed.as_deref().filter(|_| fleet))?;
                let mut landed_now = Vec::new();
                if fleet {
                    ticked_at = Some(std::time::Instant::now());
                    match crate::fleet::dispatch::tick(
                        &home,
                        &store,
                        &key,
                        landed.jobs(),
                        Some(&opts),
                        &mut memo,
                    ) {
                        Ok(t) => {
                            dispatched = t.dispatched + t.redispatched > 0;
                            // The tick asked about the jobs that may have landed: between
                            // full listings, refresh asks about nothing more.
                            landed_now = t.landed_now;
                            ticketed = Some(Vec::new());
                        }
                        Err(e) => eprintln!(
                            "error: fleet: {}",
                            airlock_core::error::one_line(e.as_ref())
                        ),
                    }
                }
                landed.add(landed_now);
            }
            // Keep the lanes fed: with a fleet, a few jobs queued per lane (the next tick
            // refills the mailboxes the gated jobs freed, while the lanes gate the rest).
            let mut room = match fleet {
                true => args.jobs.saturating_mul(FLEET_QUEUED_PER_LANE),
                false => usize::MAX,
            }
            .saturating_sub(lanes.flight.len());
            if let Some(m) = args.max_jobs {
                let left = m.saturating_sub(gated + lanes.flight.len() as u64);
                room = room.min(usize::try_from(left).unwrap_or(usize::MAX));
            }
            feed(
                &ctx,
                &mut lanes,
                &store,
                &mut watcher,
                landed.jobs(),
                room,
                !args.once,
            )?;
            let mut p = Pass::default();
            if !lanes.flight.is_empty() {
                // Wait for a gate to finish, with a fleet no longer than the next tick.
                let wait = match fleet {
                    true => Some(
                        ticked_at
                            .map_or(Duration::ZERO, |t| TICK_MIN.saturating_sub(t.elapsed()))
                            .max(Duration::from_millis(1)),
                    ),
                    false => None,
                };
                let mut next = lanes.next(wait);
                while let Some((job, result)) = next {
                    report(&mut watcher, args, global.verbose > 0, &job, result, &mut p)?;
                    next = lanes.next(Some(Duration::ZERO));
                }
            }
            gated += p.gated.len() as u64;
            failed += p.failed.len() as u64;
            let keep_due =
                p.asked_model || kept_at.is_none_or(|t| t.elapsed() >= KEEP_HISTORY_EVERY);
            if !p.gated.is_empty() && keep_due {
                // The next gates read the model history on from here, not from the first
                // entry (a gate of a job that asked for no model reads none: then every
                // KEEP_HISTORY_EVERY is enough). Written aside and renamed: a gate in flight
                // reads the old history or the new one.
                if let Err(e) = crate::gate::drift::keep(&store, &trusted, &home.dir) {
                    tracing::warn!("watch: model history not kept: {e:#}");
                }
                kept_at = Some(std::time::Instant::now());
            }
            if !lanes.flight.is_empty() {
                continue;
            }
            let pending = watcher
                .pending(&store, &trusted, landed.jobs())?
                .iter()
                .any(|j| !args.once || !watcher.attempts.contains_key(j));
            let done = (args.once && !pending) || args.max_jobs.is_some_and(|m| gated >= m);
            if done {
                return Ok(());
            }
            if let Some(w) = wake.as_mut() {
                let max = match fleet {
                    true => poll_max.min(crate::fleet::dispatch::TICK),
                    false => poll_max,
                };
                w.wait(dispatched || !p.gated.is_empty() || pending, max);
            }
        }
    })?;
    tracing::info!("watch: gated {gated} job(s), {failed} could not be gated");
    if !args.json {
        eprintln!("watch: gated {gated} job(s); {failed} could not be gated");
    }
    if failed > 0 && args.once {
        bail!("watch: {failed} job(s) could not be gated (see the errors above)");
    }
    Ok(Outcome::Ok)
}
