//! The workspace reclaimed mid-run: `SIGKILL` of the worker at a random point (a fifth of the
//! runs while it fetches and unpacks, the rest at a random moment of the generator's 3 s),
//! checkpoints every second, on a `file://` store.
//!
//! Holds: no artifact is accepted as final unless the run finished (a fetch that passes reads
//! `partial: false` and the finished edit); a checkpoint present always verifies (a kill
//! between a checkpoint's two renames tears only the slot being written), and one is
//! there once the first checkpoint interval (plus a second to write it) has passed; the
//! next start leaves no run directory but its own, and a last start leaves none.

use std::process::Stdio;
use std::time::{Duration, Instant};

use super::lab::{Job, Lab};
use super::{Rng, Tally};
use airlock_tests::*;

/// What the generator does: an edit, this long asleep, the final edit.
const GENERATOR_SECS: &str = "3";
/// The checkpoint interval asked for, and the time a checkpoint takes to land after it.
const CHECKPOINT: Duration = Duration::from_secs(1);
const CHECKPOINT_SLACK: Duration = Duration::from_secs(1);

/// Waits until a run directory's workdir holds `progress.txt` (the generator started).
fn wait_generator(lab: &Lab, child: &mut std::process::Child) -> Option<Instant> {
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        let started = Lab::run_dirs(&lab.work_root)
            .iter()
            .any(|d| d.join("work/progress.txt").exists());
        if started {
            return Some(Instant::now());
        }
        if child.try_wait().unwrap().is_some() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

pub fn scenario(rng: &mut Rng, n: u32, tally: &mut Tally) {
    let lab = Lab::local();
    // One plain run first: this machine must sandbox, or the scenario is skipped.
    let probe = lab.submit(&[]);
    if lab.work(&probe).is_none() {
        tally.skipped = Some("the worker cannot sandbox here".into());
        return;
    }
    for i in 0..n {
        let job = lab.submit(&["--checkpoint-secs", "1", "--wall-clock-secs", "60"]);
        let mut child = lab
            .worker(&job, &[&lab.gen("slow_edit.sh"), GENERATOR_SECS])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let early = rng.below(5) == 0;
        let mut since_generator = None;
        if early {
            std::thread::sleep(rng.millis(0, 400));
        } else {
            let Some(started) = wait_generator(&lab, &mut child) else {
                let out = child.wait_with_output().unwrap();
                tally.violation(i, format!("the generator never started: {}", show(&out)));
                tally.outcome("error");
                continue;
            };
            // This start removed the dead runs' directories: only its own is left.
            let dirs = Lab::run_dirs(&lab.work_root);
            tally.check(i, dirs.len() == 1, || {
                format!("a new start left other runs' directories: {dirs:?}")
            });
            let wait = rng.millis(0, 3500);
            std::thread::sleep(wait);
            since_generator = Some(started.elapsed());
        }
        let _ = child.kill(); // SIGKILL (or nothing, if it already exited)
        let status = child.wait().unwrap();
        let finished = status.code() == Some(0);
        judge(&lab, &job, i, finished, since_generator, tally);
    }
    // The last start: a job that changes nothing; the work root is left empty.
    let last = lab.submit(&[]);
    let out = run(&mut lab.worker(&last, &["/bin/true"]));
    tally.check(n, out.status.code() == Some(5), || {
        format!("the last start did not run: {}", show(&out))
    });
    let dirs = Lab::run_dirs(&lab.work_root);
    tally.check(n, dirs.is_empty(), || {
        format!("run directories left after the last start: {dirs:?}")
    });
}

/// Checks one killed (or finished) run and counts its outcome.
fn judge(
    lab: &Lab,
    job: &Job,
    i: u32,
    exited_ok: bool,
    since_generator: Option<Duration>,
    tally: &mut Tally,
) {
    let drop = lab.home.join("store/drop").join(&job.id);
    let fetched = lab.fetch(job);
    if fetched.status.success() {
        // Accepted as final: the run must have finished.
        let art =
            super::race::read_packet(&lab.home.join("jobs").join(&job.id).join("artifact.tar.gz"));
        let (partial, patch) = art;
        tally.check(i, !partial, || {
            "a partial artifact was accepted as final".into()
        });
        tally.check(i, patch.contains("world, edited"), || {
            format!("the accepted artifact lacks the finished edit: {patch}")
        });
        tally.outcome(if exited_ok {
            "finished"
        } else {
            "killed-after-drop"
        });
        return;
    }
    tally.check(i, fetched.status.code() == Some(1), || {
        format!(
            "fetch refused what a killed worker left (torn drop): {}",
            show(&fetched)
        )
    });
    tally.check(i, !exited_ok, || {
        format!(
            "the worker exited 0 but fetch finds no artifact: {}",
            show(&fetched)
        )
    });
    // Either checkpoint slot's envelope: a kill mid-checkpoint tears at most the slot being
    // written, and fetch takes the other, so any refusal here is a violation.
    let has_checkpoint = ["checkpoint.dsse.json", "checkpoint.1.dsse.json"]
        .iter()
        .any(|e| drop.join(e).exists());
    if has_checkpoint {
        let out = run(lab
            .airlock()
            .args(["fetch", &job.id, "--checkpoint", "--json"]));
        tally.check(i, out.status.success(), || {
            format!(
                "the checkpoint left by a killed worker does not verify: {}",
                show(&out)
            )
        });
    }
    let due = since_generator.is_some_and(|d| d >= CHECKPOINT + CHECKPOINT_SLACK);
    tally.check(i, has_checkpoint || !due, || {
        format!(
            "killed {:?} after the generator started, and no checkpoint",
            since_generator.unwrap_or_default()
        )
    });
    let partial_drop = drop.join("artifact.tar.gz").exists();
    tally.outcome(match (has_checkpoint, partial_drop, since_generator) {
        (_, true, _) => "killed-mid-drop",
        (true, false, _) => "killed-with-checkpoint",
        (false, false, None) => "killed-before-generator",
        (false, false, Some(_)) => "killed-before-checkpoint",
    });
}
