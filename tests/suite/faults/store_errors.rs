//! Store errors on the trusted side: the S3 server's fault injector answers one of the
//! requests `fetch`, `gate` or `watch --once` makes (the job record, the envelope, the
//! artifact, a listing, the ledger's entries and tail hint, the fetch record) with 5xx (a few
//! times, or more often than the client retries), a dropped connection, a stall past the
//! client's timeout, or the request applied and its answer lost (closed, or a 503 instead).
//!
//! Holds: the command either completes or stops with exit 1 and one `error:` line; `airlock
//! audit verify` passes afterwards, every time; a re-run (`watch --once`) completes the job
//! exactly once: one gate entry, and no fetch entry more than the commands run made. A lost
//! answer to a conditional write is the case that matters: retried, it meets its own object.
//! `AIRLOCK_FAULTS_VERBOSE=1` prints each run's fault and the command's answer.

use airlock_tests::s3::FaultAction;
use airlock_tests::*;

use super::lab::{error_lines, Lab};
use super::{Rng, Tally};

/// The command under fault.
#[derive(Clone, Copy, Debug)]
enum Op {
    Fetch,
    Gate,
    Watch,
}

/// The client's request timeout in this scenario (stalls go past it).
const TIMEOUT: &str = "1s";

pub fn scenario(rng: &mut Rng, n: u32, tally: &mut Tally) {
    let lab = Lab::s3();
    let s3 = lab.s3.as_ref().unwrap();
    let probe = lab.submit(&[]);
    if lab.work(&probe).is_none() {
        tally.skipped = Some("the worker cannot sandbox here".into());
        return;
    }
    let out = lab.watch_once();
    assert!(out.status.success(), "{}", show(&out));
    for i in 0..n {
        let job = lab.submit(&[]);
        let worked = lab.work(&job).unwrap();
        assert_eq!(worked.status.code(), Some(0), "{}", show(&worked));
        let op = *rng.pick(&[Op::Fetch, Op::Gate, Op::Watch]);
        let id = &job.id;
        let targets: [(&'static str, String); 8] = [
            ("GET", format!("records/{id}.dsse.json")),
            ("GET", format!("drop/{id}/artifact.dsse.json")),
            ("GET", format!("drop/{id}/artifact.tar.gz")),
            ("GET", "/airlock".to_owned()), // a listing (path-style: the bucket)
            ("PUT", ".dsse.json".to_owned()), // the first conditional write: fetch record or ledger entry
            ("PUT", "ledger.tail".to_owned()),
            ("GET", "ledger.tail".to_owned()),
            ("PUT", "/ledger/".to_owned()), // placeholder, replaced below
        ];
        let (method, mut suffix) = rng.pick(&targets).clone();
        if suffix == "/ledger/" {
            // A ledger entry: the next entry's name is one past the current head.
            suffix = next_entry_name(&lab);
        }
        let action = *rng.pick(&[
            FaultAction::Status(503),
            FaultAction::Status(500),
            FaultAction::Drop,
            FaultAction::Lost(None),
            FaultAction::Lost(Some(503)),
            FaultAction::Stall(1500),
        ]);
        // Within the client's retries, or past them (then the command must stop cleanly).
        let times = *rng.pick(&[1u32, 2, 3, 9, 9]);
        s3.inject(method, &suffix, action, times);
        let mut c = match op {
            Op::Fetch => {
                let mut c = lab.airlock();
                c.args(["fetch", id, "--json"]);
                c
            }
            Op::Gate => {
                let mut c = lab.airlock();
                c.args(["gate", id, "--json", "--repo"]).arg(&lab.repo);
                c
            }
            Op::Watch => {
                let mut c = lab.airlock();
                c.args(["watch", "--once", "--repo"]).arg(&lab.repo);
                c
            }
        };
        c.env("AWS_TIMEOUT", TIMEOUT);
        let out = run(&mut c);
        let reached = s3.pending_faults().is_empty() || s3.pending_faults()[0].times < times;
        s3.clear_faults();
        let what = format!("{op:?} with {method} *{suffix} {action:?} x{times}");
        let stopped = !matches!(out.status.code(), Some(0 | 3 | 4));
        if std::env::var_os("AIRLOCK_FAULTS_VERBOSE").is_some() {
            eprintln!(
                "run {i}: {what}: exit {:?}, reached {reached}: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or_default()
            );
        }
        if stopped {
            // One line saying why; `watch` adds its summary line (`N job(s) could not be
            // gated`) after the job's own.
            let most = if matches!(op, Op::Watch) { 2 } else { 1 };
            let lines = error_lines(&out);
            tally.check(
                i,
                out.status.code() == Some(1) && (1..=most).contains(&lines),
                || {
                    format!(
                        "{what}: stopped without exit 1 and one error line: {}",
                        show(&out)
                    )
                },
            );
        }
        let verify = lab.audit_verify();
        tally.check(i, verify.status.success(), || {
            format!("{what}: audit verify after the fault: {}", show(&verify))
        });
        let again = lab.watch_once();
        tally.check(i, again.status.success(), || {
            format!("{what}: the re-run (watch --once): {}", show(&again))
        });
        let entries = lab.entries(&job);
        // fetch, then the re-run's gate (with its fetch); a stopped gate's fetch may be
        // recorded before the re-run's.
        let max_fetches = if matches!(op, Op::Fetch) || stopped {
            2
        } else {
            1
        };
        tally.check(i, entries.is_some_and(|(f, g)| g == 1 && (1..=max_fetches).contains(&f)), || {
            format!("{what}: (fetch, gate) entries for the job: {entries:?}, at most {max_fetches} fetches: {}", show(&out))
        });
        let op_name = format!("{op:?}").to_lowercase();
        tally.outcome(match (reached, stopped) {
            (false, _) => format!("{op_name}-fault-not-reached"),
            (true, false) => format!("{op_name}-completed"),
            (true, true) => format!("{op_name}-stopped-1-line"),
        });
    }
}

/// The key suffix of the next ledger entry (`ledger/<seq+1>.dsse.json`), from `audit verify`.
pub(super) fn next_entry_name(lab: &Lab) -> String {
    let out = lab.audit_verify();
    let text = String::from_utf8_lossy(&out.stdout);
    let seq: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("head "))
        .and_then(|h| h.split(':').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    format!("ledger/{:012}.dsse.json", seq + 1)
}

/// The regression case of the lost answer (issue 28): a ledger entry's conditional create is
/// applied by the server, whose answer is lost (a 503 in its place); the client retries and
/// gets 412 for its own entry. Before the fix the append took that for a lost race and
/// appended the same event again: two gate entries for one gate.
#[test]
fn issue_28_a_lost_answer_to_a_ledger_create_is_not_appended_twice() {
    let lab = Lab::s3();
    let s3 = lab.s3.as_ref().unwrap();
    let job = lab.submit(&[]);
    let Some(out) = lab.work(&job) else { return };
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    for action in [FaultAction::Lost(Some(503)), FaultAction::Lost(None)] {
        // The gate appends fetch, then gate: lose the answer to the gate entry's create.
        let name = next_entry_name(&lab);
        let seq: u64 = name[7..19].parse().unwrap();
        let gate_entry = format!("ledger/{:012}.dsse.json", seq + 1);
        s3.inject("PUT", &gate_entry, action, 1);
        let out = lab.gate(&job);
        assert_eq!(out.status.code(), Some(0), "{action:?}: {}", show(&out));
        assert!(s3.pending_faults().is_empty(), "the fault was not reached");
        let out = lab.audit_verify();
        assert!(out.status.success(), "{}", show(&out));
        let log = s3.log_for("PUT", &gate_entry);
        assert_eq!(log[0].injected, Some(action), "{log:?}");
        assert_eq!(
            next_entry_name(&lab),
            format!("ledger/{:012}.dsse.json", seq + 2),
            "{action:?}: the gate entry was appended twice"
        );
    }
    let (_, gates) = lab.entries(&job).unwrap();
    assert_eq!(gates, 2, "one gate entry per gate run");
}
