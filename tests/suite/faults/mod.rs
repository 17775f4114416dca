//! The fault campaign (issue 28): every failure domain of the worker plane as a scenario
//! repeated with random timing, each run's outcome counted and its invariants checked. One
//! test runs every scenario and prints one table (scenario, runs, outcomes, violations); any
//! violation fails it, with the run, the seed and what broke.
//!
//! Runs per scenario: `AIRLOCK_FAULTS_N` (CI: 20; `bench/faults.sh`: 100). The seed is printed
//! first; `AIRLOCK_FAULTS_SEED` replays a campaign, `AIRLOCK_FAULTS_ONLY=a,b` runs only the
//! scenarios named. Everything is real: the built binaries, git, the sandbox, a `file://`
//! store and the in-process S3 server (SigV4); the faults are real signals, a real TCP proxy
//! on loopback, and the S3 server's fault injector.
// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod clock;
mod host_kill;
mod lab;
mod network;
mod proxy;
mod race;
mod store_errors;
mod worker_kill;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A small seeded generator (xorshift64*): every random choice of a campaign comes from it.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    /// Uniform in `[lo, hi)` milliseconds.
    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi.saturating_sub(lo).max(1)))
    }
    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
    /// A new generator for a sub-task, drawn from this one.
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }
}

/// One scenario's count: runs, outcomes by kind, and every violation in words.
#[derive(Default)]
pub struct Tally {
    pub scenario: &'static str,
    pub runs: u32,
    pub outcomes: BTreeMap<String, u32>,
    pub violations: Vec<String>,
    pub skipped: Option<String>,
    pub elapsed: Duration,
}

impl Tally {
    pub fn new(scenario: &'static str) -> Tally {
        Tally {
            scenario,
            ..Tally::default()
        }
    }
    /// Counts one run ending in `outcome`.
    pub fn outcome(&mut self, outcome: impl Into<String>) {
        self.runs += 1;
        *self.outcomes.entry(outcome.into()).or_insert(0) += 1;
    }
    /// Records a broken invariant of run `run`.
    pub fn violation(&mut self, run: u32, what: impl Into<String>) {
        let what = what.into();
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("VIOLATION {} run {run}: {what}\n", self.scenario).as_bytes(),
        );
        self.violations.push(format!("run {run}: {what}"));
    }
    /// Checks `cond`; a violation otherwise.
    pub fn check(&mut self, run: u32, cond: bool, what: impl FnOnce() -> String) {
        if !cond {
            self.violation(run, what());
        }
    }
}

/// The table: one row per scenario.
pub fn table(rows: &[Tally]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "| {:<22} | {:>4} | {:<70} | {:>10} | {:>6} |\n",
        "scenario", "runs", "outcomes", "violations", "secs"
    ));
    out.push_str(&format!(
        "|{:-<24}|{:->6}|{:-<72}|{:->12}|{:->8}|\n",
        "", "", "", "", ""
    ));
    for t in rows {
        let outcomes = match &t.skipped {
            Some(why) => format!("SKIPPED: {why}"),
            None => t
                .outcomes
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
        };
        out.push_str(&format!(
            "| {:<22} | {:>4} | {:<70} | {:>10} | {:>6.1} |\n",
            t.scenario,
            t.runs,
            outcomes,
            t.violations.len(),
            t.elapsed.as_secs_f64()
        ));
    }
    out
}

type Scenario = fn(&mut Rng, u32, &mut Tally);

/// Every scenario, in table order: name, runner.
const SCENARIOS: [(&str, Scenario); 6] = [
    ("worker-sigkill", worker_kill::scenario),
    ("network-cut-or-stall", network::scenario),
    ("store-errors-trusted", store_errors::scenario),
    ("trusted-host-sigkill", host_kill::scenario),
    ("two-workers-one-token", race::scenario),
    ("worker-clock-skew", clock::scenario),
];

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

#[test]
fn fault_campaign_every_scenario_holds_its_invariants() {
    let n = env_u64("AIRLOCK_FAULTS_N").unwrap_or(20) as u32;
    let seed = env_u64("AIRLOCK_FAULTS_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    let only: Option<Vec<String>> = std::env::var("AIRLOCK_FAULTS_ONLY")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("fault campaign: seed {seed} (AIRLOCK_FAULTS_SEED={seed} replays it), {n} runs per scenario\n").as_bytes(),
    );
    let mut master = Rng::new(seed);
    // Each scenario draws from its own generator, so a filtered campaign replays the same runs.
    let plan: Vec<(&'static str, Scenario, Rng)> = SCENARIOS
        .iter()
        .map(|(name, f)| (*name, *f, master.fork()))
        .filter(|(name, _, _)| only.as_ref().is_none_or(|o| o.iter().any(|x| x == name)))
        .collect();
    // Two scenarios at a time (the machine has two cores; runs mostly wait on processes).
    let queue = std::sync::Mutex::new(plan.into_iter().enumerate().collect::<Vec<_>>());
    let rows = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let Some((i, (name, f, mut rng))) = queue.lock().unwrap().pop() else {
                    return;
                };
                let mut tally = Tally::new(name);
                let t = Instant::now();
                f(&mut rng, n, &mut tally);
                tally.elapsed = t.elapsed();
                eprintln!(
                    "fault campaign: {name}: {} runs, {} violations, {:.1} s",
                    tally.runs,
                    tally.violations.len(),
                    tally.elapsed.as_secs_f64()
                );
                rows.lock().unwrap().push((i, tally));
            });
        }
    });
    let mut rows = rows.into_inner().unwrap();
    rows.sort_by_key(|(i, _)| *i);
    let rows: Vec<Tally> = rows.into_iter().map(|(_, t)| t).collect();
    let table = table(&rows);
    // Straight to stderr, past the test harness's capture: CI's log shows the table whether
    // the test passes or fails.
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("fault campaign (seed {seed}, N={n}):\n{table}\n").as_bytes(),
    );
    let violations: Vec<String> = rows
        .iter()
        .flat_map(|t| {
            t.violations
                .iter()
                .map(move |v| format!("{}: {v}", t.scenario))
        })
        .collect();
    assert!(
        violations.is_empty(),
        "seed {seed}: {} violation(s):\n{}",
        violations.len(),
        violations.join("\n")
    );
    for t in &rows {
        if let Some(why) = &t.skipped {
            airlock_tests::skip(&format!("{}: {why}", t.scenario));
        } else {
            assert_eq!(t.runs, n, "{}: every run counted once", t.scenario);
        }
    }
}
