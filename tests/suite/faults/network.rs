//! The network between the worker and the store cut or slowed: a TCP proxy on loopback (see
//! `proxy.rs`) sits between the worker and the S3 server; the token's presigned URLs name the
//! proxy. Each run arms one fault at a random byte of the worker's traffic (measured by a
//! first, clean run): three in four on the way up (requests and uploads), one in four on the
//! way down (answers and the bundle); three in five cut the connection, the rest stall it
//! 0.2 to 3 s.
//!
//! Holds: the drop ends complete (the worker exits 0 and fetch, talking to the server
//! directly, accepts the artifact) or absent (the worker says why in one line, and fetch finds
//! no artifact), never torn (fetch refusing what is there, or a worker that says it dropped
//! an artifact fetch cannot find); a cut is retried with backoff, within the token's lifetime.

use super::lab::Lab;
use super::proxy::{Action, Direction, Proxy};
use super::{Rng, Tally};
use airlock_tests::*;

pub fn scenario(rng: &mut Rng, n: u32, tally: &mut Tally) {
    let lab = Lab::s3();
    let s3 = lab.s3.as_ref().unwrap();
    let proxy = Proxy::start(([127, 0, 0, 1], s3.port()).into());
    let via = proxy.endpoint();
    // A clean run through the proxy measures the traffic a run makes.
    let probe = lab.submit_via(Some(&via), &[]);
    proxy.disarm();
    let Some(out) = lab.work(&probe) else {
        tally.skipped = Some("the worker cannot sandbox here".into());
        return;
    };
    assert!(out.status.success(), "calibration run: {}", show(&out));
    let (up, down) = proxy.bytes();
    assert!(
        up > 0 && down > 0,
        "the worker's traffic did not cross the proxy"
    );
    for i in 0..n {
        let job = lab.submit_via(Some(&via), &[]);
        let direction = if rng.below(4) < 3 {
            Direction::Up
        } else {
            Direction::Down
        };
        let total = match direction {
            Direction::Up => up,
            Direction::Down => down,
        };
        let at = rng.below(total);
        let action = if rng.below(5) < 3 {
            Action::Cut
        } else {
            Action::Stall(rng.millis(200, 3000))
        };
        proxy.arm(direction, at, action);
        let out = run(&mut lab.worker(&job, &[&lab.gen("edit.sh")]));
        let fired = proxy.fired();
        proxy.disarm();
        let what = format!("{direction:?} byte {at}/{total} {action:?}");
        let fetched = lab.fetch(&job);
        let worker_ok = out.status.code() == Some(0);
        let kind = match action {
            Action::Cut => "cut",
            Action::Stall(_) => "stall",
        };
        let outcome = if fetched.status.success() {
            let retried = String::from_utf8_lossy(&out.stderr).contains("retry");
            tally.check(i, worker_ok || retried, || {
                format!(
                    "{what}: fetch accepts an artifact the worker says it did not drop: {}",
                    show(&out)
                )
            });
            match (fired, retried) {
                (false, _) => "complete-fault-not-reached".to_owned(),
                (true, true) => format!("complete-after-{kind}-retried"),
                (true, false) => format!("complete-through-{kind}"),
            }
        } else {
            let err = String::from_utf8_lossy(&fetched.stderr).into_owned();
            tally.check(
                i,
                fetched.status.code() == Some(1) && err.contains("no artifact yet"),
                || format!("{what}: torn drop: fetch says: {}", show(&fetched)),
            );
            tally.check(i, !worker_ok, || {
                format!(
                    "{what}: the worker exited 0 but fetch finds nothing: {}",
                    show(&out)
                )
            });
            let lines = String::from_utf8_lossy(&out.stderr)
                .lines()
                .filter(|l| l.starts_with("error"))
                .count();
            tally.check(i, lines == 1, || {
                format!(
                    "{what}: the worker failed without one error line: {}",
                    show(&out)
                )
            });
            format!("absent-after-{kind}")
        };
        tally.outcome(outcome);
    }
}
