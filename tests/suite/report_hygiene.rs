//! Issue 37, the remaining red-team failures, through the real binaries with artifacts signed
//! by the job key: `--json` output carries no raw DEL or C1 control; a secret's value is in no
//! report (`gate --md/--html`, `show` text/`--md`/`--html`, `compare`), only its finding and
//! fingerprint; a final artifact's packet is held to its closed sets at the gate
//! (`packet.exit-running`, unclean exits as `partial-result`, `packet.refused-reason`,
//! `… (unknown to airlock VERSION)`).
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use airlock_core::format::{self, ExitKind, RefusedPath};
use airlock_core::limits::TarLimits;
use airlock_core::tar::DeterministicTarWriter;

use super::hostile_worker::{artifact, expect_reject, packet, World};
use airlock_tests::*;

const ADD_DOC: &str = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n+/// Adds.\n pub fn add(a: i32, b: i32) -> i32 {\n     a + b\n }\n";

fn airlock(w: &World, args: &[&str]) -> Output {
    run(cmd(&bin("airlock")).arg("--home").arg(&w.home).args(args))
}

fn reasons(report: &serde_json::Value) -> Vec<(String, String, String, String)> {
    report["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or("").to_owned();
            (s("code"), s("verdict"), s("rule"), s("detail"))
        })
        .collect()
}

#[test]
fn json_output_escapes_del_and_c1_controls() {
    let w = World::new();
    let job = w.submit();
    let id = job.id();
    let hostile = "m\u{7f}\u{9b}2J\u{85}\u{80}x";
    let mut p = packet(&job, ADD_DOC.as_bytes());
    p.model_reported = hostile.into();
    p.worker_version = hostile.into();
    let (tgz, bytes) = artifact(&p, ADD_DOC.as_bytes());
    w.drop_signed(&job, &tgz, &bytes, None);
    let fetch = airlock(&w, &["fetch", &id, "--json"]);
    assert!(fetch.status.success(), "{}", show(&fetch));
    let gate = w.gate(&id, &[]);
    for (what, out) in [("fetch --json", &fetch), ("gate --json", &gate)] {
        let text = String::from_utf8(out.stdout.clone()).unwrap();
        let raw: Vec<char> = text
            .chars()
            .filter(|&c| ('\u{7f}'..='\u{9f}').contains(&c))
            .collect();
        assert!(raw.is_empty(), "{what}: raw {raw:?}");
        assert!(
            text.contains(r"m\u007f\u009b2J\u0085\u0080x"),
            "{what}: {text}"
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            v.to_string().contains(hostile) || text.contains(r"\u009b"),
            "{what}"
        );
    }
}

#[test]
fn a_secret_value_is_in_no_report_only_its_finding_and_fingerprint() {
    // Built from parts so no scanner of this repository flags the test itself.
    let aws = concat!("AKIA", "R2VQ6ZK4MX7NW3LT");
    let gh = concat!("ghp_", "R8mZq3Vt7Kx2Lp9Wn4Hc6Yb1Jd5Gf0Su8Ea3");
    let w = World::new();
    let job = w.submit();
    let id = job.id();
    let patch = format!(
        "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,5 @@\n+// account {aws}\n+const TOKEN: &str = \"{gh}\";\n pub fn add(a: i32, b: i32) -> i32 {{\n     a + b\n }}\n"
    );
    let mut p = packet(&job, patch.as_bytes());
    // A failed run, so the log's tail is shown too.
    p.exit.code = Some(1);
    let packet_bytes = format::to_json_bytes(&p);
    let log = format!("starting\nusing {aws}\nand {gh}\ndone\n");
    let mut t = DeterministicTarWriter::with_limits(Vec::new(), TarLimits::artifact());
    t.append_file("generator.log", false, log.len() as u64, log.as_bytes())
        .unwrap();
    t.append_file(
        "packet.json",
        false,
        packet_bytes.len() as u64,
        packet_bytes.as_slice(),
    )
    .unwrap();
    t.append_file("patch.diff", false, patch.len() as u64, patch.as_bytes())
        .unwrap();
    let tgz = t.finish().unwrap();
    w.drop_signed(&job, &tgz, &packet_bytes, None);

    let (gmd, ghtml) = (w.root.join("gate.md"), w.root.join("gate.html"));
    let out = run(cmd(&bin("airlock"))
        .arg("--home")
        .arg(&w.home)
        .args(["gate", &id, "--json", "--repo"])
        .arg(&w.repo)
        .arg("--md")
        .arg(&gmd)
        .arg("--html")
        .arg(&ghtml));
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rs = reasons(&report);
    for (line, rule) in [(1, "aws-access-key-id"), (2, "github-pat-classic")] {
        assert!(
            rs.iter().any(|(c, v, r, d)| c == "secret-in-added-line"
                && v == "reject"
                && r == rule
                && d == &format!("src/lib.rs:{line}: {rule}")),
            "{rs:?}"
        );
    }
    let (smd, shtml) = (w.root.join("show.md"), w.root.join("show.html"));
    let shown = run(cmd(&bin("airlock"))
        .arg("--home")
        .arg(&w.home)
        .args(["show", &id, "--md"])
        .arg(&smd)
        .arg("--html")
        .arg(&shtml));
    assert!(shown.status.success(), "{}", show(&shown));
    let text = airlock(&w, &["show", &id]);
    let compare = airlock(&w, &["compare", &id, &id]);
    let outputs = [
        (
            "gate --json",
            String::from_utf8(out.stdout.clone()).unwrap(),
        ),
        ("gate --md", std::fs::read_to_string(&gmd).unwrap()),
        ("gate --html", std::fs::read_to_string(&ghtml).unwrap()),
        ("show --md", std::fs::read_to_string(&smd).unwrap()),
        ("show --html", std::fs::read_to_string(&shtml).unwrap()),
        ("show", String::from_utf8(text.stdout.clone()).unwrap()),
        (
            "compare",
            String::from_utf8(compare.stdout.clone()).unwrap(),
        ),
    ];
    for (what, o) in &outputs {
        assert!(
            !o.contains(aws) && !o.contains(gh),
            "{what} publishes a value:\n{o}"
        );
        assert!(
            !o.contains(&aws[4..]) && !o.contains(&gh[4..]),
            "{what}: {o}"
        );
    }
    // The patch and the log tail show the finding in the value's place.
    for what in ["gate --md", "show --md", "gate --html"] {
        let o = &outputs.iter().find(|(w, _)| *w == what).unwrap().1;
        for rule in ["aws-access-key-id", "github-pat-classic"] {
            let mark = format!("[secret masked: {rule}, fingerprint ");
            assert!(
                o.matches(&mark).count() >= 2,
                "{what}: {mark} (patch and log):\n{o}"
            );
        }
    }
}

/// A final artifact whose generator still runs (`running`, a checkpoint's value) is refused;
/// killed, timed out or non-zero runs go to a person even with `partial: false`; a refusal
/// reason outside the closed set goes to a person; an unknown limit is named as unknown.
#[test]
fn a_final_packet_is_held_to_its_closed_sets_at_the_gate() {
    let w = World::new();
    let job = w.submit();
    let mut p = packet(&job, ADD_DOC.as_bytes());
    p.exit.kind = ExitKind::Running;
    p.exit.code = None;
    let (tgz, bytes) = artifact(&p, ADD_DOC.as_bytes());
    w.drop_signed(&job, &tgz, &bytes, None);
    expect_reject(
        &w,
        &job,
        "packet-mismatch",
        Some("packet.exit-running"),
        &[],
    );

    let human = |edit: &dyn Fn(&mut airlock_core::format::Packet), want: (&str, &str, &str)| {
        let job = w.submit();
        let mut p = packet(&job, ADD_DOC.as_bytes());
        edit(&mut p);
        let (tgz, bytes) = artifact(&p, ADD_DOC.as_bytes());
        w.drop_signed(&job, &tgz, &bytes, None);
        let out = w.gate(&job.id(), &[]);
        assert_eq!(out.status.code(), Some(3), "{}", show(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["decision"], "human", "{report:#}");
        let rs = reasons(&report);
        assert!(
            rs.iter().any(|(c, v, r, d)| c == want.0
                && v == "human"
                && r == want.1
                && d.contains(want.2)),
            "{want:?} not in {rs:?}"
        );
    };
    human(
        &|p| {
            p.exit.kind = ExitKind::Signaled;
            p.exit.code = Some(9);
        },
        (
            "partial-result",
            "",
            "from a generator that did not exit 0 (the generator was killed by signal 9)",
        ),
    );
    human(
        &|p| p.exit.code = Some(2),
        ("partial-result", "", "(the generator exited with status 2)"),
    );
    human(
        &|p| {
            p.refused = vec![RefusedPath {
                path: "notes.txt".into(),
                reason: "trust-me".into(),
            }]
        },
        (
            "worker-refused-paths",
            "packet.refused-reason",
            "does not list: notes.txt (trust-me)",
        ),
    );
    human(
        &|p| p.limits_hit = vec!["bogus-limit".into()],
        (
            "worker-limit-hit",
            "",
            "the worker hit limit(s): bogus-limit (unknown to airlock 0.7.0)",
        ),
    );
}
