//! Clock skew between the worker and the trusted host: the worker runs with its clock moved by
//! a random offset within ±10 minutes (a third of the runs at exactly -10 min or +10 min),
//! through libfaketime (`LD_PRELOAD`, Debian's `libfaketime`; `scripts/ci-install-faketime.sh`):
//! the worker binary reads the system clock as it always does, with no test hook in it.
//! Tokens live 5 or 20 minutes.
//!
//! Holds (docs/FORMATS.md, "Limits" and the fetch steps): a worker whose clock is behind by
//! more than the 60 s allowed refuses the token (`token.not-yet-valid`), one whose clock is at
//! or past the token's expiry refuses it (`token.expired`); otherwise it runs, and fetch
//! accepts the artifact (landed by the store's clock, within the token's window). Runs within
//! 5 s of a boundary count as `boundary`, either answer being right.

use std::path::PathBuf;

use super::lab::Lab;
use super::{Rng, Tally};
use airlock_tests::*;

/// The skew a worker may have behind the trusted host (`CLOCK_SKEW_SECS`).
const SKEW_ALLOWED: i64 = 60;
/// Runs this close to a boundary accept either answer (submit and start take time).
const MARGIN: i64 = 5;

/// libfaketime's preload library, where Debian installs it.
fn libfaketime() -> Option<PathBuf> {
    [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

fn now() -> i64 {
    i64::try_from(airlock_core::clock::now_unix()).unwrap()
}

pub fn scenario(rng: &mut Rng, n: u32, tally: &mut Tally) {
    let Some(lib) = libfaketime() else {
        tally.skipped = Some(
            "libfaketime is not installed (apt-get install libfaketime; \
             scripts/ci-install-faketime.sh)"
                .into(),
        );
        return;
    };
    let lab = Lab::local();
    let probe = lab.submit(&[]);
    if lab.work(&probe).is_none() {
        tally.skipped = Some("the worker cannot sandbox here".into());
        return;
    }
    for i in 0..n {
        let ttl: i64 = *rng.pick(&[300, 1200]);
        let offset: i64 = match rng.below(3) {
            0 => *rng.pick(&[-600, 600]),
            _ => rng.below(1201) as i64 - 600,
        };
        let issued = now();
        let job = lab.submit(&["--ttl", &format!("{ttl}s")]);
        let mut c = lab.worker(&job, &[&lab.gen("edit.sh")]);
        c.env("LD_PRELOAD", &lib)
            .env("FAKETIME", format!("{offset:+}"))
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        let out = run(&mut c);
        let started = now();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        // The worker's clock when it checked the token, and the token's window.
        let worker_now = started + offset;
        let to_expiry = issued + ttl - worker_now; // <= 0: expired
        let ahead = issued - worker_now - SKEW_ALLOWED; // > 0: not yet valid
        let what = format!("offset {offset:+} s, ttl {ttl} s");
        let outcome = if to_expiry.abs() <= MARGIN || ahead.abs() <= MARGIN {
            "boundary"
        } else if to_expiry <= 0 {
            tally.check(
                i,
                out.status.code() == Some(1) && err.contains("token.expired"),
                || format!("{what}: expected token.expired: {}", show(&out)),
            );
            "refused-expired"
        } else if ahead > 0 {
            tally.check(
                i,
                out.status.code() == Some(1) && err.contains("token.not-yet-valid"),
                || format!("{what}: expected token.not-yet-valid: {}", show(&out)),
            );
            "refused-not-yet-valid"
        } else {
            tally.check(i, out.status.code() == Some(0), || {
                format!("{what}: expected the run to be accepted: {}", show(&out))
            });
            let fetched = lab.fetch(&job);
            tally.check(i, fetched.status.success(), || {
                format!(
                    "{what}: fetch of a skewed worker's artifact: {}",
                    show(&fetched)
                )
            });
            "accepted"
        };
        if outcome.starts_with("refused") {
            // Refused before anything ran: no drop object.
            let drop = lab.home.join("store/drop").join(&job.id);
            let left = std::fs::read_dir(&drop).map(|d| d.count()).unwrap_or(0);
            tally.check(i, left == 0, || {
                format!("{what}: a refused worker dropped {left} objects")
            });
        }
        tally.outcome(outcome);
    }
}
