//! Two workers racing on one token: both started together (the second after a random delay of
//! up to 300 ms) in one work root, on a `file://` store for half the runs and the S3 server
//! for the other half.
//!
//! Holds: exactly one artifact lands (one worker exits 0); the other refuses, either before
//! running (`worker.finished`, exit 4) or at the drop (write-once, exit 1); fetch accepts the
//! one artifact and the gate records one decision.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use super::lab::Lab;
use super::{Rng, Tally};
use airlock_tests::*;

/// `(partial, patch.diff)` of an artifact tarball.
pub fn read_packet(path: &Path) -> (bool, String) {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap());
    let mut ar = tar::Archive::new(gz);
    let (mut partial, mut patch) = (true, String::new());
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().to_string_lossy().into_owned();
        let mut buf = Vec::new();
        e.read_to_end(&mut buf).unwrap();
        match name.as_str() {
            "packet.json" => {
                let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
                partial = v["partial"].as_bool().unwrap();
            }
            "patch.diff" => patch = String::from_utf8_lossy(&buf).into_owned(),
            _ => {}
        }
    }
    (partial, patch)
}

pub fn scenario(rng: &mut Rng, n: u32, tally: &mut Tally) {
    let labs = [Lab::local(), Lab::s3()];
    let probe = labs[0].submit(&[]);
    if labs[0].work(&probe).is_none() {
        tally.skipped = Some("the worker cannot sandbox here".into());
        return;
    }
    for i in 0..n {
        let lab = &labs[(i % 2) as usize];
        let store = if lab.s3.is_some() { "s3" } else { "file" };
        let job = lab.submit(&[]);
        let spawn = || {
            lab.worker(&job, &[&lab.gen("edit.sh")])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let a = spawn();
        std::thread::sleep(rng.millis(0, 300));
        let b = spawn();
        let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
        let codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
        let landed = codes.iter().filter(|c| **c == Some(0)).count();
        tally.check(i, landed == 1, || {
            format!(
                "{store}: {landed} workers dropped an artifact: {}\n{}",
                show(&outs[0]),
                show(&outs[1])
            )
        });
        // The loser says why, with its rule.
        let loser = outs.iter().find(|o| o.status.code() != Some(0));
        let how = match loser {
            Some(o) if o.status.code() == Some(4) => "refused-finished",
            Some(o)
                if o.status.code() == Some(1)
                    && String::from_utf8_lossy(&o.stderr).contains("transfer.write-once") =>
            {
                "refused-write-once"
            }
            Some(o) => {
                tally.violation(
                    i,
                    format!("{store}: the second worker failed otherwise: {}", show(o)),
                );
                "other"
            }
            None => "none-refused",
        };
        let fetched = lab.fetch(&job);
        tally.check(i, fetched.status.success(), || {
            format!("{store}: fetch after the race: {}", show(&fetched))
        });
        let gate = lab.gate(&job);
        tally.check(i, gate.status.code() == Some(0), || {
            format!("{store}: gate after the race: {}", show(&gate))
        });
        let entries = lab.entries(&job);
        tally.check(i, entries.is_some_and(|(_, g)| g == 1), || {
            format!("{store}: gate entries for the job: {entries:?}")
        });
        tally.outcome(format!("{store}:{how}"));
    }
}
