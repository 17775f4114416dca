//! The trusted host killed: `SIGKILL` of `airlock gate` at a random moment, on the S3 server.
//! Half the runs kill it at a uniform moment of a gate's duration (measured by a first, clean
//! gate); the other half stall one of the gate's ledger writes (the fetch entry, the gate
//! entry, or the tail hint) for 600 ms and kill it inside that write.
//!
//! Holds: `airlock audit verify` passes after every kill; a re-run (`watch --once`, which gates
//! what the ledger holds no decision for) completes the job exactly once: one gate entry.

use std::process::Stdio;
use std::time::{Duration, Instant};

use airlock_tests::s3::FaultAction;
use airlock_tests::*;

use super::lab::Lab;
use super::{Rng, Tally};

/// How long a stalled ledger write hangs.
const STALL_MS: u64 = 600;

pub fn scenario(rng: &mut Rng, n: u32, tally: &mut Tally) {
    let lab = Lab::s3();
    let s3 = lab.s3.as_ref().unwrap();
    let probe = lab.submit(&[]);
    if lab.work(&probe).is_none() {
        tally.skipped = Some("the worker cannot sandbox here".into());
        return;
    }
    let t = Instant::now();
    let out = lab.gate(&probe);
    let gate_time = t.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    for i in 0..n {
        let job = lab.submit(&[]);
        let worked = lab.work(&job).unwrap();
        assert_eq!(worked.status.code(), Some(0), "{}", show(&worked));
        let stalled = rng.below(2) == 0;
        let kill_after = if stalled {
            // The gate appends fetch then gate, then rewrites the hint: stall one of them.
            let head = super::store_errors::next_entry_name(&lab);
            let seq: u64 = head[7..19].parse().unwrap();
            let target = match rng.below(3) {
                0 => head,
                1 => format!("ledger/{:012}.dsse.json", seq + 1),
                _ => "ledger.tail".to_owned(),
            };
            s3.inject("PUT", &target, FaultAction::Stall(STALL_MS), 1);
            None
        } else {
            Some(rng.millis(0, (gate_time.as_millis() as u64 * 6 / 5).max(50)))
        };
        let mut child = lab
            .airlock()
            .args(["gate", &job.id, "--json", "--repo"])
            .arg(&lab.repo)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        match kill_after {
            Some(d) => std::thread::sleep(d),
            None => {
                // Until the stalled write arrives (or the gate ends), then into the stall.
                let end = Instant::now() + Duration::from_secs(20);
                while !s3.pending_faults().is_empty()
                    && Instant::now() < end
                    && child.try_wait().unwrap().is_none()
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                std::thread::sleep(rng.millis(0, STALL_MS));
            }
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        let reached = s3.pending_faults().is_empty();
        s3.clear_faults();
        // Let a stalled write the dead gate sent land (or not) before judging.
        std::thread::sleep(Duration::from_millis(if stalled { STALL_MS } else { 0 }));
        let what = format!(
            "kill {}",
            if stalled {
                "in a stalled ledger write"
            } else {
                "at random"
            }
        );
        let verify = lab.audit_verify();
        tally.check(i, verify.status.success(), || {
            format!("{what}: audit verify after the kill: {}", show(&verify))
        });
        let before = lab.entries(&job);
        let again = lab.watch_once();
        tally.check(i, again.status.success(), || {
            format!("{what}: the re-run (watch --once): {}", show(&again))
        });
        let verify = lab.audit_verify();
        tally.check(i, verify.status.success(), || {
            format!("{what}: audit verify after the re-run: {}", show(&verify))
        });
        let entries = lab.entries(&job);
        tally.check(
            i,
            entries.is_some_and(|(f, g)| g == 1 && (1..=2).contains(&f)),
            || {
                format!(
                    "{what}: (fetch, gate) entries: {entries:?} (before the re-run: {before:?})"
                )
            },
        );
        let killed = status.code().is_none();
        let gated_before = before.is_some_and(|(_, g)| g == 1);
        tally.outcome(match (stalled, reached, killed, gated_before) {
            (_, _, false, _) => "gate-finished-first",
            (true, false, true, _) => "killed-before-the-stalled-write",
            (true, true, true, true) => "killed-in-write-gate-entry-landed",
            (true, true, true, false) => "killed-in-write-rerun-gated",
            (false, _, true, true) => "killed-gate-entry-landed",
            (false, _, true, false) => "killed-rerun-gated",
        });
    }
}
